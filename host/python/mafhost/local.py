"""LocalSandbox: the sandbox surface on this machine, with asyncio subprocesses and files.
maf-launch then is the only boundary around the program (run the host as root, so that the
program gets an identity of its own)."""
import asyncio
import errno
import os
import posixpath
import shutil
import signal
import stat as st_
import tempfile
from typing import Optional, Sequence, Union

from .errors import ConfigError, FileTooLarge
from .sandbox import DIRECTORY, FILE, OTHER, SYMLINK, ExecResult, FileEntry

STDERR_KEEP = 4096


def _path(path, working_directory):
    p = posixpath.normpath(posixpath.join(working_directory or "/", os.fsdecode(path)))
    if not p.startswith("/"):
        raise ConfigError(f"{path!r} relative to {working_directory!r} is not an absolute "
                          "path")
    return p


def _open_parent(path, create):
    """(a descriptor of path's directory, the last name), walking from / without following
    a symlink in any component (ELOOP or ENOTDIR), creating missing directories (0755) when
    create: every name under a run directory may have been planted by the program."""
    parts = [c for c in path.split("/") if c]
    if not parts or parts[-1] in (".", ".."):
        raise IsADirectoryError(errno.EISDIR, "not a file name", path)
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for comp in parts[:-1]:
            if comp == "..":
                raise PermissionError(errno.EINVAL, "'..' in a path", path)
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                nfd = os.open(comp, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(comp, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(comp, flags, dir_fd=fd)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _kind(mode):
    if st_.S_ISREG(mode):
        return FILE
    if st_.S_ISDIR(mode):
        return DIRECTORY
    if st_.S_ISLNK(mode):
        return SYMLINK
    return OTHER


def _exit_code(rc):
    return 128 - rc if rc < 0 else rc


class LocalStream:
    """A local command with its stdin and stdout on pipes (sandbox.Stream)."""

    def __init__(self, proc):
        self.proc = proc
        self._err = bytearray()
        self._drain_err = asyncio.ensure_future(self._collect_stderr())

    async def _collect_stderr(self):
        while True:
            chunk = await self.proc.stderr.read(65536)
            if not chunk:
                return
            self._err += chunk[:max(0, STDERR_KEEP - len(self._err))]

    @property
    def stderr_text(self):
        return self._err.decode("utf-8", "replace")

    async def write(self, data: bytes):
        if self.proc.stdin.is_closing():
            raise BrokenPipeError(errno.EPIPE, "the command's stdin is closed")
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read(self, max_bytes: int) -> bytes:
        return await self.proc.stdout.read(max_bytes)

    async def close(self):
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        try:
            await asyncio.wait_for(self.proc.wait(), 1.0)
        except asyncio.TimeoutError:
            _kill_group(self.proc.pid)
            await self.proc.wait()
        try:
            await asyncio.wait_for(self._drain_err, 1.0)
        except BaseException:
            self._drain_err.cancel()


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class LocalSandbox:
    """The sandbox surface on this machine.

    exec runs an argv (a str goes through /bin/sh -c) in its own process group, killed whole
    at the timeout (exit_code -1); a command that cannot be started gives 127 (not found) or
    126 (not executable) with the reason on stderr, as a shell would. exec_input is the
    same with bytes on the command's stdin (exec gives it /dev/null). Files are written
    through a temporary name and a rename, read only when regular (O_NOFOLLOW, O_NONBLOCK),
    and every path is walked without following a symlink (OSError ELOOP or ENOTDIR).
    read_file raises FileNotFoundError when absent, IsADirectoryError for a directory,
    OSError(ELOOP) for a symlink, OSError(EINVAL) for another non-regular file, FileTooLarge
    past max_bytes.

    launcher_path: maf-launch here; default $MAFHOST_LAUNCHER, else maf-launch on PATH.
    tmpdir: where mkdtemp makes run directories (default $TMPDIR or /tmp, made absolute)."""

    def __init__(self, *, launcher_path: Optional[str] = None, tmpdir: Optional[str] = None):
        self.launcher_path = launcher_path or os.environ.get("MAFHOST_LAUNCHER") or \
            shutil.which("maf-launch") or "maf-launch"
        self.tmpdir = tmpdir

    async def exec(self, command: Union[str, Sequence[str]], *, working_directory: str = "/",
                   timeout: Optional[float] = None) -> ExecResult:
        return await self._exec(command, None, working_directory, timeout)

    async def exec_input(self, command: Union[str, Sequence[str]], data: bytes, *,
                         working_directory: str = "/",
                         timeout: Optional[float] = None) -> ExecResult:
        """exec, with data written to the command's stdin, which is then closed (a command
        that exits without reading it all is no error)."""
        return await self._exec(command, bytes(data), working_directory, timeout)

    async def _exec(self, command, data, working_directory, timeout):
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=working_directory,
                stdin=asyncio.subprocess.DEVNULL if data is None else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True)
        except FileNotFoundError as e:
            return ExecResult("", f"{argv[0]}: {e.strerror}\n", 127)
        except PermissionError as e:
            return ExecResult("", f"{argv[0]}: {e.strerror}\n", 126)
        # communicate feeds stdin while it reads the output, and takes a stdin the command
        # closed early (BrokenPipeError) as the end of the input.
        comm = asyncio.ensure_future(proc.communicate(data))
        done, _ = await asyncio.wait({comm}, timeout=timeout)
        if done:
            out, err = comm.result()
            code = _exit_code(proc.returncode)
        else:
            _kill_group(proc.pid)
            out, err = await comm
            code = -1
        return ExecResult(out.decode("utf-8", "surrogateescape"),
                          err.decode("utf-8", "replace"), code)

    async def write_file(self, path, content, *, working_directory: str = "/") -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        p = _path(path, working_directory)
        dfd, name = _open_parent(p, True)
        try:
            tmp = f".{name[:200]}.{os.urandom(6).hex()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                         os.O_CLOEXEC, 0o644, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb", closefd=True) as f:
                    f.write(data)
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
        finally:
            os.close(dfd)

    async def read_file(self, path, *, working_directory: str = "/",
                        max_bytes: int = 64 << 20) -> bytes:
        p = _path(path, working_directory)
        dfd, name = _open_parent(p, False)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb", closefd=True) as f:
            s = os.fstat(fd)
            if st_.S_ISDIR(s.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", p)
            if not st_.S_ISREG(s.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", p)
            if s.st_size > max_bytes:
                raise FileTooLarge(f"{p} is {s.st_size} bytes, more than {max_bytes}",
                                   s.st_size)
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FileTooLarge(f"{p} grew past {max_bytes} bytes while read", len(data))
        return data

    async def stat_file(self, path, *, working_directory: str = "/") -> Optional[FileEntry]:
        p = _path(path, working_directory)
        try:
            dfd, name = _open_parent(p, False)
        except FileNotFoundError:
            return None
        try:
            s = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(dfd)
        return FileEntry(_kind(s.st_mode), s.st_size)

    async def open_stream(self, argv: Sequence[str]) -> LocalStream:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        return LocalStream(proc)

    async def mkdtemp(self) -> str:
        base = os.path.realpath(self.tmpdir or tempfile.gettempdir())
        return tempfile.mkdtemp(prefix="mafhost-", dir=base)
