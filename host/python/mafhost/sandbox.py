"""The sandbox surface mafhost drives, and the values it exchanges.

A backend is any object with maf-sandbox's sandbox surface (nothing to inherit, nothing to
register):

    async exec(command: str | Sequence[str], *, working_directory: str, timeout: float)
        -> an object with stdout: str, stderr: str, exit_code: int
    async write_file(path, content: str | bytes, *, working_directory)  # parents created
    async read_file(path, *, working_directory, max_bytes) -> bytes     # refuses past it
    async stat_file(path, *, working_directory) -> None | an object with kind ("file",
        "directory", "symlink", "other") and size_bytes

Paths are POSIX and relative to working_directory; mafhost always passes "/" and the path
from the root. It passes exec a list (an argv, never a shell command line).

Optional, looked up by name:
    launcher_path: str                       # maf-launch in the sandbox (default: PATH's)
    async open_stream(argv: Sequence[str]) -> Stream
        # an exec whose stdin and stdout stay open: enables the stream transport, no
        # backend operation a call
    async exec_input(argv: Sequence[str], data: bytes, *, working_directory: str,
                     timeout: float) -> as exec's
        # exec with data written to the command's stdin, which is then closed (a
        # command that exits without reading it all is no error): the relay transport
        # then takes each answer on the relay's stdin, one exec a call
    max_output: a keyword of exec and exec_input, where the object takes it
        # the most of the command's stdout to hold (the rest read and dropped): mafhost
        # passes the bound of what it will take, so a flooding command cannot make the
        # host hold more. An object without it holds what it holds; mafhost cuts it after.
The backends of this package (LocalSandbox, DockerSandbox) have all four.

How an answer crosses: on a stream, or on exec_input's stdin, or, over the surface alone,
as a file write_file puts in the run directory before the relay's exec (two operations a
call). Never in an argv or the environment, which other processes of the sandbox's machine
may read (/proc/PID/cmdline).
"""
from dataclasses import dataclass
from typing import Optional, Protocol, Sequence, Union, runtime_checkable

FILE = "file"
DIRECTORY = "directory"
SYMLINK = "symlink"
OTHER = "other"
KINDS = (FILE, DIRECTORY, SYMLINK, OTHER)


@dataclass(frozen=True)
class ExecResult:
    """What exec returns: the command's output, decoded as UTF-8 with replacement, and its
    exit code (0..255, 128+N for signal N; -1 when it could not be waited for)."""
    stdout: str
    stderr: str
    exit_code: int


@dataclass(frozen=True)
class FileEntry:
    """What stat_file returns for a path that exists (never following a last symlink)."""
    kind: str
    size_bytes: int


@runtime_checkable
class Stream(Protocol):
    """A command started with its stdin and stdout attached (open_stream)."""

    async def write(self, data: bytes) -> None:
        """Writes all of data to its stdin; BrokenPipeError (or ConnectionError) once it is
        gone."""

    async def read(self, max_bytes: int) -> bytes:
        """Waits for bytes of its stdout: 1..max_bytes of them, or b"" once stdout has
        ended. mafhost never cancels a read it started: it waits on it again."""

    async def close(self) -> None:
        """Ends it: stdin closed, a moment to end, then killed. Never raises."""

    @property
    def stderr_text(self) -> str:
        """What the command wrote to stderr so far (the first 4 KiB), for a sentence."""


@runtime_checkable
class ExecOutcome(Protocol):
    """What a backend's exec (and exec_input) returns: ExecResult here, any object with
    these three elsewhere. exit_code None: the backend could not tell (mafhost reads -1)."""

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...

    @property
    def exit_code(self) -> Optional[int]: ...


@runtime_checkable
class StatOutcome(Protocol):
    """What a backend's stat_file returns for a path that exists: FileEntry here, any
    object with these two elsewhere (maf-sandbox's SandboxEntry, whose size_bytes is None
    where it could not be told)."""

    @property
    def kind(self) -> str: ...

    @property
    def size_bytes(self) -> Optional[int]: ...


@runtime_checkable
class Sandbox(Protocol):
    """The surface every backend has; open_stream, exec_input and launcher_path are
    optional (see the module)."""

    async def exec(self, command: Union[str, Sequence[str]], *, working_directory: str,
                   timeout: float) -> ExecOutcome: ...

    async def write_file(self, path: str, content: Union[str, bytes], *,
                         working_directory: str) -> None: ...

    async def read_file(self, path: str, *, working_directory: str,
                        max_bytes: int) -> bytes: ...

    async def stat_file(self, path: str, *,
                        working_directory: str) -> Optional[StatOutcome]: ...
