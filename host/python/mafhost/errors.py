"""The exceptions of mafhost.

Every exception the package raises on its own account is a MafhostError. A run that does not
end with its program (a timeout, a lost run, a launch failure, a backend failure) raises the
subclass that says which, with the library's sentence as its message and the run's result
(output, calls, the exit record) in `.result`, so that nothing the run produced is lost.
Where the standard library has the kind, the exception is of it too: RunTimeout is a
TimeoutError, BackendError an OSError (errno the failure's), ConfigError a ValueError.
"""
from __future__ import annotations

import errno

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ._run import RunResult


class MafhostError(Exception):
    """An error of mafhost or libmafhost. `code` is the library's negative errno value (0 when
    there is none); str() is one sentence."""

    code: int
    result: Optional["RunResult"]

    def __init__(self, message: str, code: int = 0,
                 result: Optional["RunResult"] = None) -> None:
        super().__init__(message)
        self.code = code
        self.result = result

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _WithErrno(MafhostError):
    """A MafhostError that is also an OSError: errno is -code, strerror the sentence."""

    def __init__(self, message: str, code: int = 0,
                 result: Optional["RunResult"] = None) -> None:
        super().__init__(message, code, result)
        self.errno: Any = -code if code < 0 else None
        self.strerror: Any = message


class LibraryError(MafhostError):
    """libmafhost cannot be found or loaded, is of another version, or is still in use."""


class ConfigError(MafhostError, ValueError):
    """A bad argument: a tool, a parameter, a limit or a run option the library refused."""


class RunError(MafhostError):
    """A run ended otherwise than by its program exiting or being signalled: see the
    subclasses. `.result` is the run's RunResult."""


class RunTimeout(_WithErrno, RunError, TimeoutError):
    """The run's deadline passed; the program was stopped (SIGTERM, then SIGKILL after the
    grace). A TimeoutError (errno ETIMEDOUT)."""

    def __init__(self, message: str, code: int = 0,
                 result: Optional["RunResult"] = None) -> None:
        super().__init__(message, code or -errno.ETIMEDOUT, result)


class RunLost(RunError):
    """The run's supervisor ended without its exit record (killed from outside the run)."""


class LaunchFailed(RunError):
    """maf-launch could not start the program (not found, not executable, bad options)."""


class BackendError(_WithErrno, RunError, OSError):
    """An operation of the sandbox backend failed and ended the run, or a backend of this
    package failed on its own (then `.result` is None). An OSError: errno is the failure's
    (ENOENT: no such container, ECONNREFUSED: the engine refused the connection, ...)."""


class Refusal(Exception):
    """Raised by a tool to refuse a call: the program's HostToolError carries exactly this
    message. Any other exception a tool raises is a refusal too, naming the tool."""


class FileTooLarge(MafhostError):
    """read_file of this package's backends: the file is larger than max_bytes (nothing is
    returned; files are never truncated). `size` is the size seen."""

    def __init__(self, message: str, size: int = -1) -> None:
        super().__init__(message)
        self.size = size
