"""maf-sandbox 0.21's dispatch_over_exec, served by maf-launch: the one import a maf-sandbox
0.21 host changes (the current line has no such function: see channel.py).

    from mafhost.maf_sandbox import dispatch_over_exec   # was: from maf_sandbox import ...

It takes what maf-sandbox's takes (the sandbox, a HostToolRun of the host's own
HostToolRegistry, a GuestRunLayout from guest_run_layout, timeout, poll_interval,
interpreter) and returns what it returns: maf-sandbox's ExecResult (the program's merged
output as stdout, its exit code), SandboxProgramTimeout when the run's own bound expires
(with the output so far, and what the stop reached), and what the backend raised when the
backend fails. Every request the program makes goes to HostToolRun.dispatch, so the
registry's cap, identities, response limits, observers and sentences apply, and the program
reads byte for byte what maf-sandbox's supervisor would have written (see mafhost.maf_sandbox.answerer).
layout.work is left to the caller; the transport's own files (R/host_tools, and the
launcher's R/tmp) are removed by `maf-launch reclaim`, with no shell.

What differs is how the calls travel. The program runs under `maf-launch run` (its own
identity, no capabilities, seccomp, Landlock), the shim the caller wrote (maf-sandbox's
generated one) is replaced by one that is the same module to the program but hands each call
to the launcher's channel, and the host reads the requests:
- over a stream through the Docker engine (DockerSandbox: libmafhost's Docker backend) where
  the sandbox is maf-sandbox-docker's (it has container_name), one message a call;
- else relay over the sandbox's own exec, one exec a call;
falling back within a run from stream to relay to files, with no call lost or made twice.
Where the sandbox has no maf-launch (none at the launcher path through the engine, or no
answer to `maf-launch --version` over the sandbox's exec), or the layout is not
guest_run_layout's, the run is maf-sandbox's own dispatch_over_exec, unchanged, with the whole
timeout, and the log says why (a warning)."""
from __future__ import annotations

import asyncio
import logging
import math
import posixpath
import time
from typing import TYPE_CHECKING, Optional

from maf_sandbox import ExecResult, guest_run_layout, host_tool_shim
from maf_sandbox import dispatch_over_exec as _maf_sandbox_dispatch_over_exec

from .._run import _Sandbox, _serve, _Spec
from . import answerer, guest_api
from .serving import DEFAULT_LAUNCHER, LOOK_MAX_S, engine_backend, has_launcher, outcome

if TYPE_CHECKING:
    # maf-sandbox's (each an Any where maf-sandbox is not installed).
    from maf_sandbox import GuestRunLayout, HostToolRun
    from maf_sandbox import Sandbox as MafSandbox

    from .._abi import Library
    from ..sandbox import Sandbox

__all__ = ["dispatch_over_exec", "DEFAULT_LAUNCHER"]

log = logging.getLogger("mafhost")

_SHIM_READ_MAX = 4 << 20


def _is_standard(layout: GuestRunLayout) -> bool:
    try:
        same: bool = layout == guest_run_layout(layout.directory,
                                                program=posixpath.basename(layout.program))
        return same
    except (ValueError, TypeError, AttributeError):
        return False


async def _replace_shim(backend: Sandbox, layout: GuestRunLayout) -> bool:
    """Puts the channel shim in place of maf-sandbox's generated one. A shim the caller
    wrote itself (anything host_tool_shim would not have written) is left as it is."""
    try:
        data = await backend.read_file(layout.shim.lstrip("/"), working_directory="/",
                                       max_bytes=_SHIM_READ_MAX)
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else str(data)
    except Exception as e:  # noqa: BLE001 -- a shim not read is a shim served as written
        log.info("host tools: the shim at %s was not read (%s): it is served as written",
                 layout.shim, e)
        return False
    ours = guest_api.compatible(text, host_tool_shim)
    if ours is None:
        log.info("host tools: %s is not maf-sandbox's generated shim: served as written",
                 layout.shim)
        return False
    await backend.write_file(layout.shim.lstrip("/"), ours.encode(), working_directory="/")
    return True


async def dispatch_over_exec(sandbox: MafSandbox, run: HostToolRun, layout: GuestRunLayout, *,
                             timeout: float, poll_interval: float = 0.2,
                             interpreter: str = "python3", launcher: Optional[str] = None,
                             library: Optional[Library] = None) -> ExecResult:
    """Runs the program detached under maf-launch and serves its host-tool calls until it
    exits, as maf-sandbox's dispatch_over_exec does (see the module's documentation).

    launcher: maf-launch in the sandbox (default: the sandbox's launcher_path, else
    DEFAULT_LAUNCHER). library: a mafhost.Library to use."""
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite positive number of seconds, not {timeout}")
    if not math.isfinite(poll_interval) or poll_interval <= 0:
        raise ValueError(
            f"poll_interval must be a finite positive number of seconds, not {poll_interval}"
        )
    deadline = time.monotonic() + timeout

    async def theirs(why: str) -> ExecResult:
        # With the whole bound, as the caller gave it: its sentences quote it.
        log.warning("host tools: %s: served by maf-sandbox's own transport", why)
        return await _maf_sandbox_dispatch_over_exec(sandbox, run, layout, timeout=timeout,
                                                     poll_interval=poll_interval,
                                                     interpreter=interpreter)

    if not _is_standard(layout):
        return await theirs(f"{layout.directory} is not guest_run_layout's layout")
    launcher = launcher or getattr(sandbox, "launcher_path", None) or DEFAULT_LAUNCHER
    try:
        async with asyncio.timeout(min(timeout, LOOK_MAX_S)):
            backend = await engine_backend(sandbox, launcher) or sandbox
            there = await has_launcher(backend, launcher, min(timeout, LOOK_MAX_S))
    except Exception as e:  # noqa: BLE001 -- maf-sandbox's transport, as before
        return await theirs(f"looking for {launcher} in the sandbox failed ({e!r})")
    if not there:
        return await theirs(f"there is no maf-launch at {launcher} in this sandbox")
    await _replace_shim(backend, layout)
    counted = _Sandbox(backend)
    # run() (no tools, check=False), with the private parts of its spec: the registry's
    # answerer, the entry the reclaim leaves (layout.work) and the slowest poll.
    argv, left = [interpreter, layout.program], max(deadline - time.monotonic(), 0.001)
    door = answerer.DispatchDoor(run)
    limits = answerer.limits_for(door)
    spec = _Spec(None, argv, left, run_dir=layout.directory, launcher=launcher,
                 answerer=answerer.Answerer(door),
                 reclaim_keep=posixpath.basename(layout.work),
                 poll_max_ms=poll_interval * 1000)
    result = await _serve(backend, spec, (), limits, None, False, library, counted)
    return outcome(result, counted, timeout)


