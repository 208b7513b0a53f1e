"""maf-launch for maf-sandbox hosts, on whichever line of maf-sandbox is installed beside it.

Each line has its own way in, and its own module:

==================  ===========================================  ==========================
maf-sandbox         how maf-launch plugs in                      module
==================  ===========================================  ==========================
0.21.x              dispatch_over_exec, a drop-in for            legacy.py
                    maf-sandbox's function of that name
0.51.x              a program channel (MafLaunchChannel),        channel.py, backend.py
                    declared on a backend by with_maf_launch
==================  ===========================================  ==========================

Both serve a program the guest API maf-sandbox's shim gives it (guest_api.py) and answer
its requests through maf-sandbox's own door (answerer.py), and share how the engine and the
launcher are found and how a run's result is told (serving.py). The line is read from what
maf-sandbox exports: a release with program channels (ProgramChannel, HostToolPolicy) is the
current line; one with dispatch_over_exec is the 0.21 line; any other is refused here with
the releases that are supported (the README's table, each row tested)."""
from __future__ import annotations

import maf_sandbox as _maf_sandbox

from .serving import DEFAULT_LAUNCHER

#: The installed maf-sandbox's line: "current" (program channels) or "0.21".
if hasattr(_maf_sandbox, "ProgramChannel") and hasattr(_maf_sandbox, "HostToolPolicy"):
    LINE = "current"
elif hasattr(_maf_sandbox, "dispatch_over_exec"):
    LINE = "0.21"
else:  # pragma: no cover -- a release between the lines
    raise ImportError(
        "mafhost.maf_sandbox serves maf-sandbox 0.21.x (dispatch_over_exec) and 0.51.x "
        "(program channels); the maf-sandbox installed here has neither way in")

if LINE == "current":
    from .backend import MafLaunchBackend, with_maf_launch
    from .channel import MafLaunchChannel

    __all__ = ["LINE", "DEFAULT_LAUNCHER", "MafLaunchChannel", "MafLaunchBackend",
               "with_maf_launch"]
else:
    from .legacy import dispatch_over_exec

    __all__ = ["LINE", "DEFAULT_LAUNCHER", "dispatch_over_exec"]
