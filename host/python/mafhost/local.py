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
import subprocess
import tempfile
from typing import Optional, Sequence, Union

from .errors import ConfigError, FileTooLarge
from .sandbox import DIRECTORY, FILE, OTHER, SYMLINK, ExecResult, FileEntry

STDERR_KEEP = 4096              # a stream's stderr kept, for a sentence
EXEC_STDERR_KEEP = 64 << 10     # an exec's stderr kept
EXEC_OUTPUT_MAX = 64 << 20      # an exec's stdout kept unless max_output says otherwise
STREAM_HIGH_WATER = 1 << 20     # a stream's unread stdout held before its pipe is left full
# A killed command (SIGKILL to its group) has this long to be reaped before its pipes are
# closed under it; its output is not waited for past its exit: whatever holds the pipes.
KILL_REAP_S = 1.0


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


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class _Command(asyncio.SubprocessProtocol):
    """A command's pipes, read as they come and held within bounds: stdout up to out_cap
    (past it read and dropped), stderr up to err_cap. A stream's stdout (paused=True) is
    instead held up to STREAM_HIGH_WATER unread, then left in the pipe until taken."""

    def __init__(self, out_cap, err_cap, stream=False):
        self.transport = None
        self.out, self.err = bytearray(), bytearray()
        self.out_cap, self.err_cap, self.stream = out_cap, err_cap, stream
        self.exited = asyncio.Event()
        self.output_done = asyncio.Event()        # stdout and stderr both at their end
        self.stdin_lost = False
        self.changed = asyncio.Event()            # stdout came or ended, stdin went
        self._open = {1, 2}
        self._paused = False
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport):
        self.transport = transport

    def pipe_data_received(self, fd, data):
        if fd == 1:
            if self.stream:
                self.out += data
                if len(self.out) >= STREAM_HIGH_WATER and not self._paused:
                    self._paused = True
                    self.transport.get_pipe_transport(1).pause_reading()
            else:
                self.out += data[:max(0, self.out_cap - len(self.out))]
            self.changed.set()
        else:
            self.err += data[:max(0, self.err_cap - len(self.err))]

    def pipe_connection_lost(self, fd, exc):
        if fd == 0:
            self.stdin_lost = True
            self._writable.set()
        else:
            self._open.discard(fd)
            if not self._open:
                self.output_done.set()
        self.changed.set()

    def process_exited(self):
        self.exited.set()

    # Flow control of stdin (the pipe's transport asks its process's protocol).
    def pause_writing(self):
        self._writable.clear()

    def resume_writing(self):
        self._writable.set()

    async def drain(self):
        await self._writable.wait()

    def take(self, max_bytes):
        data = bytes(self.out[:max_bytes])
        del self.out[:max_bytes]
        if self._paused and len(self.out) < STREAM_HIGH_WATER // 2:
            self._paused = False
            pipe = self.transport.get_pipe_transport(1)
            if pipe is not None:
                pipe.resume_reading()
        return data

    @property
    def stdout_ended(self):
        return 1 not in self._open

    async def end(self, pid):
        """Kills the command's group, gives it KILL_REAP_S to be reaped, and closes what is
        left of the pipes (the transport kills the command if it is still there)."""
        _kill_group(pid)
        await _within(self.exited.wait(), KILL_REAP_S)
        self.transport.close()

    async def finished(self):
        await self.exited.wait()
        await self.output_done.wait()


async def _within(coro, timeout):
    """Whether coro was over within timeout seconds (None: no bound)."""
    try:
        await asyncio.wait_for(coro, timeout)
        return True
    except asyncio.TimeoutError:
        return False


async def _start(argv, cwd, with_stdin, proto):
    loop = asyncio.get_running_loop()
    transport, _ = await loop.subprocess_exec(
        lambda: proto, *argv, cwd=cwd,
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    return transport


class LocalStream:
    """A local command with its stdin and stdout on pipes (sandbox.Stream). Up to
    STREAM_HIGH_WATER bytes of unread stdout are held; past that the command waits on a
    full pipe until they are read. close() never waits on the pipes: a command that floods
    or never ends is killed, its group with it, and the pipes closed."""

    def __init__(self, transport, proto):
        self.transport, self.proto = transport, proto
        self.pid = transport.get_pid()

    @property
    def stderr_text(self):
        return self.proto.err.decode("utf-8", "replace")

    async def write(self, data: bytes):
        pipe = self.transport.get_pipe_transport(0)
        if self.proto.stdin_lost or pipe is None or pipe.is_closing():
            raise BrokenPipeError(errno.EPIPE, "the command's stdin is closed")
        pipe.write(data)
        await self.proto.drain()
        if self.proto.stdin_lost:
            raise BrokenPipeError(errno.EPIPE, "the command's stdin is closed")

    async def read(self, max_bytes: int) -> bytes:
        while not self.proto.out and not self.proto.stdout_ended:
            self.proto.changed.clear()
            await self.proto.changed.wait()
        return self.proto.take(max_bytes)

    async def close(self):
        pipe = self.transport.get_pipe_transport(0)
        if pipe is not None:
            pipe.close()
        if not await _within(self.proto.exited.wait(), 1.0):
            await self.proto.end(self.pid)
        else:
            _kill_group(self.pid)  # what it left in its group
            self.transport.close()
        self.proto.changed.set()


class LocalSandbox:
    """The sandbox surface on this machine.

    exec runs an argv (a str goes through /bin/sh -c) in its own process group, killed whole
    at the timeout (exit_code -1; what holds its pipes then is not waited for). Its stdout is
    kept up to max_output bytes (64 MiB by default), its stderr up to 64 KiB: the rest is
    read and dropped, so no command can make this process hold more. A command that cannot be started gives 127 (not found) or
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
                   timeout: Optional[float] = None,
                   max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        return await self._exec(command, None, working_directory, timeout, max_output)

    async def exec_input(self, command: Union[str, Sequence[str]], data: bytes, *,
                         working_directory: str = "/", timeout: Optional[float] = None,
                         max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        """exec, with data written to the command's stdin, which is then closed (a command
        that exits without reading it all is no error)."""
        return await self._exec(command, bytes(data), working_directory, timeout,
                                max_output)

    async def _exec(self, command, data, working_directory, timeout, max_output):
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        proto = _Command(max(0, int(max_output)), EXEC_STDERR_KEEP)
        try:
            transport = await _start(argv, working_directory, data is not None, proto)
        except FileNotFoundError as e:
            return ExecResult("", f"{argv[0]}: {e.strerror}\n", 127)
        except PermissionError as e:
            return ExecResult("", f"{argv[0]}: {e.strerror}\n", 126)
        if data is not None:
            # The pipe's transport feeds stdin while the output is read; a command that
            # closes its stdin early ends the input (no error).
            pipe = transport.get_pipe_transport(0)
            pipe.write(data)
            pipe.close()
        if await _within(proto.finished(), timeout):
            code = _exit_code(transport.get_returncode())
            transport.close()
        else:
            await proto.end(transport.get_pid())
            code = -1
        return ExecResult(bytes(proto.out).decode("utf-8", "surrogateescape"),
                          proto.err.decode("utf-8", "replace"), code)

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
        proto = _Command(0, STDERR_KEEP, stream=True)
        transport = await _start(list(argv), None, True, proto)
        return LocalStream(transport, proto)

    async def mkdtemp(self) -> str:
        base = os.path.realpath(self.tmpdir or tempfile.gettempdir())
        return tempfile.mkdtemp(prefix="mafhost-", dir=base)
