"""LocalSandbox: the sandbox surface on this machine, as libmafhost's local backend, driven
from the running event loop (no thread per command or wait). maf-launch then is the only
boundary around the program (run the host as root, so that the program gets an identity of
its own)."""
from __future__ import annotations

import asyncio
import ctypes
import errno
import weakref
import os
import posixpath
import shutil
import tempfile
from typing import Optional, Sequence, Union

from . import _abi
from ._native import (NativeBackend, NativeStream, OpArgs, OpOutcome, Slot, error_from,
                      load_default)
from .errors import ConfigError, FileTooLarge
from .sandbox import DIRECTORY, FILE, OTHER, SYMLINK, ExecResult, FileEntry

EXEC_OUTPUT_MAX = 64 << 20      # an exec's stdout kept unless max_output says otherwise
READ_MAX = 64 << 20             # read_file's default max_bytes

_KINDS = {_abi.FILE_REGULAR: FILE, _abi.FILE_DIR: DIRECTORY, _abi.FILE_SYMLINK: SYMLINK}


def argv_of(command: Union[str, Sequence[str]]) -> list[str]:
    """An argv as it is; a str through /bin/sh -c."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    argv = [os.fsdecode(a) for a in command]
    if not argv or not argv[0]:
        raise ConfigError("a command needs a non-empty argv", -errno.EINVAL)
    return argv


def path_of(path: Union[str, bytes], working_directory: Optional[str]) -> str:
    """path from working_directory, as an absolute path (a ".." is left for the library to
    refuse)."""
    p = posixpath.join(working_directory or "/", os.fsdecode(path))
    if not p.startswith("/"):
        raise ConfigError(f"{path!r} relative to {working_directory!r} is not an absolute "
                          "path", -errno.EINVAL)
    return p


def timeout_ms(timeout: Optional[float]) -> int:
    if timeout is None:
        return 0
    if not timeout > 0:
        raise ConfigError(f"a timeout is a positive number of seconds, not {timeout!r}",
                          -errno.EINVAL)
    return max(1, int(timeout * 1000))


def exec_result(o: OpOutcome) -> ExecResult:
    o.raise_for_error()
    return ExecResult(o.out.decode("utf-8", "replace"), o.err.decode("utf-8", "replace"),
                      -1 if o.timed_out else o.exit_code)


class NativeSandbox:
    """The sandbox surface (mafhost.sandbox) over one of libmafhost's backends: each method
    is one op of the backend's, performed by the library and waited for on the running event
    loop; mafhost.run drives a whole run over it the same way. Sentences and bounds are the
    library's. Failures: a bad argument is ConfigError; a failure of the backend is
    BackendError, an OSError whose errno says what failed (ELOOP: a symlink on the way)."""

    launcher_path: str

    def __init__(self, backend: NativeBackend, library: Optional[_abi.Library]) -> None:
        self._native = backend
        self._library = library
        self._streams: weakref.WeakSet[NativeStream] = weakref.WeakSet()

    def _lib(self) -> _abi.Library:
        return load_default(self._library)

    async def _op(self, args: OpArgs) -> OpOutcome:
        return await self._native.perform(self._lib(), args)

    async def exec(self, command: Union[str, Sequence[str]], *, working_directory: str = "/",
                   timeout: Optional[float] = None,
                   max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        """Runs command (an argv; a str through /bin/sh -c) in working_directory. stdout is
        kept up to max_output bytes, stderr up to 64 KiB: the rest is read and dropped. At
        timeout seconds (None: none) what came so far, with exit_code -1."""
        return exec_result(await self._op(OpArgs(
            _abi.OP_EXEC, argv=argv_of(command), timeout_ms=timeout_ms(timeout),
            out_cap=max(0, int(max_output)), cwd=working_directory)))

    async def exec_input(self, command: Union[str, Sequence[str]], data: bytes, *,
                         working_directory: str = "/", timeout: Optional[float] = None,
                         max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        """exec, with data on the command's stdin, which then ends (a command that exits
        without reading it all is no error)."""
        return exec_result(await self._op(OpArgs(
            _abi.OP_EXEC, argv=argv_of(command), timeout_ms=timeout_ms(timeout),
            out_cap=max(0, int(max_output)), data=bytes(data), cwd=working_directory)))

    async def write_file(self, path: Union[str, bytes], content: Union[str, bytes], *,
                         working_directory: str = "/") -> None:
        """Writes content (a str as UTF-8) at path, making missing parent directories."""
        data = content.encode() if isinstance(content, str) else bytes(content)
        (await self._op(OpArgs(_abi.OP_WRITE, path=path_of(path, working_directory),
                               data=data))).raise_for_error()

    async def read_file(self, path: Union[str, bytes], *, working_directory: str = "/",
                        max_bytes: int = READ_MAX) -> bytes:
        """The bytes of the regular file at path (never following a symlink):
        FileNotFoundError when absent, IsADirectoryError for a directory, OSError(ELOOP)
        for a symlink, OSError(EINVAL) for another file that is not regular, FileTooLarge
        (its size in .size) past max_bytes."""
        full = path_of(path, working_directory)
        o = await self._op(OpArgs(_abi.OP_READ, path=full, cap=max(0, int(max_bytes))))
        o.raise_for_error()
        if o.read_status == _abi.READ_OK:
            return o.data
        if o.read_status == _abi.READ_ABSENT:
            raise FileNotFoundError(errno.ENOENT, "No such file", full)
        if o.read_status == _abi.READ_TOO_BIG:
            raise FileTooLarge(f"{full} is {o.size} bytes, more than {max_bytes}", o.size)
        entry = await self.stat_file(full)
        if entry is not None and entry.kind == DIRECTORY:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", full)
        if entry is not None and entry.kind == SYMLINK:
            raise OSError(errno.ELOOP, "A symlink, not followed", full)
        raise OSError(errno.EINVAL, "Not a regular file", full)

    async def stat_file(self, path: Union[str, bytes], *,
                        working_directory: str = "/") -> Optional[FileEntry]:
        """What is at path (a last symlink not followed), or None when nothing is."""
        o = await self._op(OpArgs(_abi.OP_STAT, path=path_of(path, working_directory)))
        o.raise_for_error()
        if not o.exists:
            return None
        return FileEntry(_KINDS.get(o.file_type, OTHER), max(0, o.file_size))

    async def open_stream(self, argv: Sequence[str]) -> NativeStream:
        """argv started with its stdin and stdout attached (a mafhost.sandbox.Stream)."""
        lib, slot = self._lib(), Slot()
        o = await self._native.perform(lib, OpArgs(_abi.OP_STREAM_OPEN, argv=argv_of(argv)),
                                       slot)
        if o.error:
            self._native.free_slot(lib, slot)
            o.raise_for_error()
        stream = NativeStream(self._native, lib, slot)
        self._streams.add(stream)
        return stream

    async def aclose(self) -> None:
        """Closes the streams it opened that are still open, and frees the backend's
        handles (a later op makes them again)."""
        await asyncio.gather(*(s.close() for s in list(self._streams)))
        self._native.close()


class LocalSandbox(NativeSandbox):
    """The sandbox surface on this machine: libmafhost's local backend.

    exec runs an argv (a str through /bin/sh -c) in its own process group, killed whole at
    the timeout (exit_code -1; what holds its pipes then is not waited for). Its stdout is
    kept up to max_output bytes (64 MiB by default), its stderr up to 64 KiB: the rest is
    read and dropped, so no command can make this process hold more. A command that cannot
    be started gives 127 (not found) or 126 (not executable) with the reason on stderr, as
    a shell would. Files are written through a temporary name and a rename, read only when
    regular, and every path is walked without following a symlink.

    launcher_path: maf-launch here; default $MAFHOST_LAUNCHER, else maf-launch on PATH.
    tmpdir: where mkdtemp makes run directories (default $TMPDIR or /tmp, made absolute).
    library: the mafhost.Library to use (default: mafhost.load()'s)."""

    def __init__(self, *, launcher_path: Optional[str] = None, tmpdir: Optional[str] = None,
                 library: Optional[_abi.Library] = None) -> None:
        self.launcher_path = launcher_path or os.environ.get("MAFHOST_LAUNCHER") or \
            shutil.which("maf-launch") or "maf-launch"
        self.tmpdir = tmpdir
        launcher = self.launcher_path

        def make(lib: _abi.Library) -> ctypes.c_void_p:
            h = ctypes.c_void_p()
            rc = lib.backend_local_new(os.fsencode(launcher), ctypes.byref(h))
            if rc < 0:
                raise MemoryError("libmafhost could not make its local backend")
            return h
        super().__init__(NativeBackend(make), library)

    async def mkdtemp(self) -> str:
        """A fresh directory for a run (0700), below tmpdir."""
        base = os.path.realpath(self.tmpdir or tempfile.gettempdir())
        return tempfile.mkdtemp(prefix="mafhost-", dir=base)


class EnteredSandbox(NativeSandbox):
    """The sandbox surface inside the sandbox another process of this machine is in, as an
    engine's exec enters a container: libmafhost's local backend entered into process pid
    (mafh_backend_local_enter_new). Every command joins pid's cgroup v2 group and
    namespaces and runs there with no capability and no_new_privs; every path is reached
    below pid's root, never leaving it. For a sandbox whose own exec cannot hold a run
    (bubblewrap's serves one command at a time and kills what it leaves behind).

    launcher_path: maf-launch in that sandbox (a path below its root).
    library: the mafhost.Library to use (default: mafhost.load()'s).
    Making it (at the first op) needs root here; where pid cannot be entered, the first op
    raises why: ConfigError (no such process, its cgroup v2 group not reachable from
    here), BackendError (the rest). Once pid has ended, a command exits 125 with the reason
    on its stderr, and a file op raises BackendError (errno ESRCH)."""

    def __init__(self, pid: int, *, launcher_path: str,
                 library: Optional[_abi.Library] = None) -> None:
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ConfigError(f"no process {pid!r} to enter")
        self.pid = pid
        self.launcher_path = launcher_path
        launcher = os.fsencode(launcher_path)

        def make(lib: _abi.Library) -> ctypes.c_void_p:
            h, err = ctypes.c_void_p(), _abi.Error()
            rc = lib.backend_local_enter_new(launcher, pid, ctypes.byref(h), ctypes.byref(err))
            if rc < 0:
                raise error_from(rc, err.message.decode("utf-8", "replace") or
                                 lib.strerror_text(rc))
            return h
        super().__init__(NativeBackend(make), library)
