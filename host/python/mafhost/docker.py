"""DockerSandbox: the sandbox surface in a running container, through the Docker Engine API
on its unix socket, with HTTP/1.1 written here (the standard library only).

Each operation is engine requests, as the C Docker backend (host/backends/docker.c) makes
them, with its sentences:
    exec        POST /containers/{id}/exec, POST /exec/{eid}/start (the multiplexed
                stream), GET /exec/{eid}/json until the exec has ended (its ExitCode)
    write_file  PUT /containers/{id}/archive?path=/ with a tar of the one file
    read_file   GET /containers/{id}/archive?path=FILE, stopped at its path-stat header
    stat_file   HEAD of the same (a 404 tells an absent path from an absent container
                with GET /containers/{id}/json)
    open_stream an exec started on a connection the engine hands over (HTTP upgrade)
    exec_input  the same exec, its stdin written and ended, its output read to the end,
                then GET /exec/{eid}/json (the C backend has no exec_input: its relay
                writes each answer first)
Every request has a connection of its own ("Connection: close"): nothing to go stale
between requests, and many coroutines at once need no more than a bound on connections.

Engine errors are BackendError with one sentence holding the engine's own message, and a
code from its HTTP status (404 -ENOENT, 400 -EINVAL, 401 and 403 -EACCES, others -EIO); a
request with no answer within 120 s is -ETIMEDOUT, an answer that cannot be read -EPROTO.
A bad argument (a path, a container name, DOCKER_HOST) is ConfigError."""
import asyncio
import base64
import contextlib
import errno
import io
import json
import os
import posixpath
import re
import secrets
import tarfile
import time
import weakref
from typing import Optional, Sequence, Union
from urllib.parse import quote

from .errors import BackendError, ConfigError, FileTooLarge
from .sandbox import DIRECTORY, FILE, OTHER, SYMLINK, ExecResult, FileEntry

DEFAULT_SOCKET = "/var/run/docker.sock"
DEFAULT_LAUNCHER = "/usr/local/bin/maf-launch"
API = "/v1.41"                    # Docker 20.10 and later answer it
REQUEST_TIMEOUT = 120.0           # a request with no answer by then met a stuck engine
MAX_CONNECTIONS = 16              # short requests at once; exec streams are apart
SYSERR_KEEP = 4096                # the engine's own error, in the exec's stream
ERROR_BODY_MAX = 4096             # what an error's body is read for: its message
REPLY_MAX = 1 << 20               # a JSON reply (inspections); longer is not one
TAR_SLACK = (64 << 10) + 1024     # a read's tar around its file: headers, padding, end
PATH_MAX = 4096
PATH_STAT_MAX = 16384             # base64 of a name and a link target, 4 KiB each
STDERR_KEEP = 4096
EXEC_STDERR_KEEP = 64 << 10       # an exec's stderr kept
EXEC_OUTPUT_MAX = 64 << 20        # an exec's stdout kept unless max_output says otherwise
STREAM_HIGH_WATER = 1 << 20       # stdout a stream holds unread before it stops reading
INSPECT_FIRST, INSPECT_MAX = 0.001, 0.05
MKDTEMP_TRIES = 16
_START = b'{"Detach":false,"Tty":false}'
_JSON, _TAR = "application/json", "application/x-tar"

# Go's os.FileMode type bits, as the path-stat header carries them.
_GO_DIR, _GO_SYMLINK = 1 << 31, 1 << 27
_GO_OTHER = (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)


class _Garbled(Exception):
    """Bytes from the engine that are not what the protocol says."""


def _printable(text: str) -> str:
    """text as part of one sentence: up to its first line end, control characters as '?'."""
    line = re.split(r"[\r\n]", text, maxsplit=1)[0]
    return re.sub(r"[\x00-\x1f\x7f]", "?", line)


def _message(body: bytes) -> str:
    """The "message" of an engine's error reply, printable, without the engine's own end of
    sentence; "" when body is no such reply."""
    try:
        reply = json.loads(body)
    except ValueError:
        return ""
    msg = reply.get("message") if isinstance(reply, dict) else None
    if not isinstance(msg, str):
        return ""
    return re.sub(r"[\x00-\x1f\x7f]", "?", msg).rstrip("? .")


def _container_path(path: str, working_directory: str) -> str:
    """path against working_directory: an absolute path to a file, never "/" or one ending in
    "/", and with no "..", which the engine would resolve where the caller did not look."""
    full = posixpath.join(working_directory or "/", path)
    if not full.startswith("/") or full.endswith("/") or len(full) >= PATH_MAX:
        raise ConfigError(f"the container path '{full}' is not an absolute path to a file",
                          -errno.EINVAL)
    if ".." in full.split("/"):
        raise ConfigError(f"the container path '{full}' holds a '..'", -errno.EINVAL)
    return full


def _argv(command: Union[str, Sequence[str]]) -> list:
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise ConfigError(f"a command is a str or a non-empty argv of str, not {command!r}",
                          -errno.EINVAL)
    return argv


def _tar_of(name: str, data: Optional[bytes], mode: int) -> bytes:
    """A tar of one entry owned by 0:0: a file of data, or a directory when data is None.
    ustar where the name fits, a pax header where it does not."""
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = mode, int(time.time())
    if data is None:
        info.type = tarfile.DIRTYPE
    else:
        info.size = len(data)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, None if data is None else io.BytesIO(data))
    return buf.getvalue()


def _written_then_gone(message: str, path: str) -> bool:
    """The engine sets a file's owner, mode and times after writing it: a process in the
    container that renames the file as soon as it is closed makes that fail ("lchown
    [ROOT]PATH: no such file or directory"), once the data is in."""
    return re.search(r"(?:^| )(?:lchown|chmod|chtimes) (?:/[^ :]*)?" + re.escape(path) +
                     ": no such file or directory", message) is not None


class _Demux:
    """The exec stream without a tty: frames of an 8-byte header (stream 0..3, three zero
    bytes, the payload's length as a big-endian uint32) and the payload, split anywhere by
    the reads. Stream 0 is taken as stdout, as the engine's own client does; 3 is the
    engine's own error."""

    def __init__(self):
        self._head = bytearray()
        self._stream = 1
        self._left = 0

    def feed(self, data: bytes) -> list:
        """[(stream, payload piece), ...] of data; _Garbled for a header that is not one."""
        pieces, view = [], memoryview(data)
        while view:
            if self._left == 0:
                take = 8 - len(self._head)
                self._head += view[:take]
                view = view[take:]
                if len(self._head) < 8:
                    break
                if self._head[0] > 3 or any(self._head[1:4]):
                    raise _Garbled()
                self._stream = self._head[0] or 1
                self._left = int.from_bytes(self._head[4:], "big")
                self._head.clear()
                continue
            n = min(len(view), self._left)
            pieces.append((self._stream, bytes(view[:n])))
            view = view[n:]
            self._left -= n
        return pieces

    @property
    def whole(self) -> bool:
        """The stream ended between frames."""
        return self._left == 0 and not self._head


class _Answer:
    """An answer's status and headers, and its body as it comes off the connection: by its
    Content-Length, in chunks, or up to the connection's end (an exec's stream)."""

    def __init__(self, reader, socket_path, method, status, headers):
        self._reader, self._socket = reader, socket_path
        self.status, self.headers = status, headers
        self._chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        length = headers.get("content-length")
        self._left = 0 if self._chunked else int(length) if length is not None else None
        if self._left is not None and self._left < 0:
            raise _Garbled()
        self._done = method == "HEAD" or status in (204, 304) or \
            (not self._chunked and self._left == 0)

    @classmethod
    async def receive(cls, reader, socket_path, method) -> "_Answer":
        """Reads an answer's head; what follows it stays in reader."""
        async with _connection_errors(socket_path):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            m = re.match(r"HTTP/1\.[01] (\d{3})[ \r]", head)
            if not m:
                raise _Garbled()
            headers = {}
            for line in head.split("\r\n")[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            return cls(reader, socket_path, method, int(m.group(1)), headers)

    async def next(self) -> bytes:
        """The next piece of the body; b"" at its end."""
        async with _connection_errors(self._socket):
            if self._chunked and self._left == 0 and not self._done:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size < 0:
                    raise _Garbled()
                if size == 0:
                    while await self._reader.readuntil(b"\r\n") != b"\r\n":
                        pass  # trailers
                    self._done = True
                self._left = size
            if self._done:
                return b""
            data = await self._reader.read(65536 if self._left is None
                                           else min(self._left, 65536))
            if not data:
                if self._left is not None:
                    raise asyncio.IncompleteReadError(b"", self._left)
                self._done = True
            elif self._left is not None:
                self._left -= len(data)
                if self._left == 0 and self._chunked:
                    if await self._reader.readexactly(2) != b"\r\n":
                        raise _Garbled()
                elif self._left == 0:
                    self._done = True
            return data

    async def read(self, limit: int) -> bytes:
        """The body up to its end, or once past limit bytes (the rest is not read)."""
        parts, n = [], 0
        while n <= limit:
            data = await self.next()
            if not data:
                break
            parts.append(data)
            n += len(data)
        return b"".join(parts)


@contextlib.asynccontextmanager
async def _connection_errors(socket_path):
    """A connection that fails or brings what is not HTTP, as one sentence."""
    try:
        yield
    except asyncio.IncompleteReadError:
        raise BackendError(f"the connection to the Docker engine at {socket_path} failed: "
                           "it ended inside an answer", -errno.EIO) from None
    except (_Garbled, ValueError, asyncio.LimitOverrunError):
        raise BackendError(f"the Docker engine at {socket_path} answered with something "
                           "else than HTTP", -errno.EPROTO) from None
    except OSError as e:
        raise BackendError(f"the connection to the Docker engine at {socket_path} failed: "
                           f"{e.strerror or e}", -errno.EIO) from None


class DockerStream:
    """An exec's stdio on a connection the engine handed over (sandbox.Stream): writes
    reach its stdin, its stdout is read, the first 4 KiB of its stderr kept. A task reads
    the connection into a buffer kept here (up to 1 MiB of unread stdout), so a cancelled
    read loses nothing and close() may come while a read waits."""

    def __init__(self, reader, writer, name):
        self._reader, self._writer, self.name = reader, writer, name
        self._demux = _Demux()
        self._out, self._err = bytearray(), bytearray()
        self._error = None
        self._eof = self._closing = False
        self._arrived, self._taken = asyncio.Event(), asyncio.Event()
        self._pump = asyncio.ensure_future(self._pump_stream())

    @property
    def stderr_text(self) -> str:
        return self._err.decode("utf-8", "replace")

    async def _pump_stream(self):
        try:
            while True:
                while len(self._out) >= STREAM_HIGH_WATER and not self._closing:
                    self._taken.clear()
                    await self._taken.wait()
                data = await self._reader.read(65536)
                if not data:
                    return
                for stream, piece in self._demux.feed(data):
                    if stream != 1:
                        self._err += piece[:max(0, STDERR_KEEP - len(self._err))]
                    elif not self._closing:  # once closed, stdout is no one's
                        self._out += piece
                self._arrived.set()
        except ConnectionError:
            pass  # the engine dropped the connection: the end of the stream
        except _Garbled:
            self._error = BackendError(f"the stream of {self.name} is not framed as an "
                                       "exec's output", -errno.EPROTO)
        except OSError as e:
            self._error = BackendError(f"cannot read the stream of {self.name}: "
                                       f"{e.strerror or e}", -errno.EIO)
        finally:
            self._eof = True
            self._arrived.set()

    async def read(self, max_bytes: int) -> bytes:
        """1..max_bytes bytes of stdout, or b"" once it has ended (BackendError when what
        came was not an exec's stream)."""
        while not self._out and not self._eof:
            self._arrived.clear()
            await self._arrived.wait()
        if not self._out and self._error:
            raise self._error
        data = bytes(self._out[:max_bytes])
        del self._out[:max_bytes]
        self._taken.set()
        return data

    async def write(self, data: bytes) -> None:
        """All of data to its stdin; BrokenPipeError once the command or connection is
        gone (the engine ends the connection when the command's output ends)."""
        if self._eof or self._writer.is_closing():
            raise BrokenPipeError(errno.EPIPE, f"the stream of {self.name} has ended")
        try:
            self._writer.write(data)
            await self._writer.drain()
        except OSError as e:
            raise BrokenPipeError(errno.EPIPE, f"the stream of {self.name} has ended") from e

    def close_stdin(self) -> None:
        """Ends the command's stdin (a half-close: its output still comes)."""
        try:
            if not self._writer.is_closing():
                self._writer.write_eof()
        except OSError:
            pass

    async def close(self) -> None:
        """Closes its stdin, waits up to 1 s for its output to end, then closes the
        connection. The engine cannot kill an exec: a command that goes on without its
        stdin goes on in the container. Never raises."""
        self._closing = True
        self._taken.set()
        try:
            if not self._writer.is_closing():
                self._writer.write_eof()
            await asyncio.wait({self._pump}, timeout=1.0)
        except OSError:
            pass
        finally:
            self._pump.cancel()
            self._writer.close()


class DockerSandbox:
    """The sandbox surface (mafhost.sandbox) in a running container, through the Docker
    Engine API on its unix socket.

    container: a name or id. socket_path: the engine's socket; None: DOCKER_HOST when set
    (unix:///PATH only; anything else is a ConfigError), else /var/run/docker.sock.
    launcher_path: maf-launch in the container. requests: the HTTP requests made to the
    engine so far, failed ones included (an exec is three or more, a file operation one, a
    stat of an absent path two). check() asks the engine about the container (as `async
    with` does); until then requests name the container as given, after it its full id.

    Failures: a bad argument is ConfigError; the engine unreachable, refusing or not
    answering is BackendError (see the module); read_file and stat_file raise as their own
    docstrings say."""

    def __init__(self, container: str, *, socket_path: Optional[str] = None,
                 launcher_path: str = DEFAULT_LAUNCHER):
        if not isinstance(container, str) or not container or \
                len(container.encode()) > 256:
            raise ConfigError("the Docker backend needs a container's name or id (at most "
                              "256 bytes)", -errno.EINVAL)
        self.container = container
        self.socket_path = socket_path or _socket_from_env()
        if not self.socket_path.startswith("/"):
            raise ConfigError(f"the Docker engine's socket '{self.socket_path}' is not an "
                              "absolute path", -errno.EINVAL)
        self.launcher_path = launcher_path
        self.requests = 0
        self._id = None
        self._streams = weakref.WeakSet()
        self._slots_loop = self._slots_sem = None

    async def __aenter__(self):
        await self.check()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self) -> None:
        """Closes the streams it opened that are still open (each request's connection is
        closed with its answer)."""
        await asyncio.gather(*(s.close() for s in list(self._streams)))

    # ---- requests ------------------------------------------------------------------------

    @property
    def _ref(self) -> str:
        return self._id or quote(self.container, safe="")

    def _archive(self, path: str, extra: str = "") -> str:
        return f"/containers/{self._ref}/archive?path={quote(path, safe='')}{extra}"

    def _slots(self) -> asyncio.Semaphore:
        # A semaphore belongs to the event loop it first waited in: one per loop.
        loop = asyncio.get_running_loop()
        if self._slots_loop is not loop:
            self._slots_loop, self._slots_sem = loop, asyncio.Semaphore(MAX_CONNECTIONS)
        return self._slots_sem

    async def _connect(self):
        self.requests += 1
        try:
            return await asyncio.open_unix_connection(self.socket_path)
        except OSError as e:
            raise BackendError(f"cannot reach the Docker engine at {self.socket_path}: "
                               f"{e.strerror or e}", -(e.errno or errno.EIO)) from None

    async def _send(self, writer, method, target, body=b"", content_type=None,
                    upgrade=False):
        head = [f"{method} {API}{target} HTTP/1.1", "Host: docker"]
        head += ["Connection: Upgrade", "Upgrade: tcp"] if upgrade else ["Connection: close"]
        if method in ("POST", "PUT"):
            head.append(f"Content-Length: {len(body)}")
        if content_type:
            head.append(f"Content-Type: {content_type}")
        async with _connection_errors(self.socket_path):
            writer.write("\r\n".join(head).encode() + b"\r\n\r\n" + body)
            await writer.drain()

    @contextlib.asynccontextmanager
    async def _exchange(self, method, target, what, body=b"", content_type=None, *,
                        stream=False):
        """One request on a connection of its own: yields its _Answer, whose body is read
        off the connection; the connection is closed on leaving. A stream (an exec's
        output) lasts as long as its command: it has no safety timeout, and is not bound
        with the short requests, which it would otherwise starve."""
        bound = contextlib.nullcontext() if stream else self._slots()
        try:
            async with bound, asyncio.timeout(None if stream else REQUEST_TIMEOUT):
                reader, writer = await self._connect()
                try:
                    await self._send(writer, method, target, body, content_type)
                    yield await _Answer.receive(reader, self.socket_path, method)
                finally:
                    writer.close()
        except TimeoutError:
            raise self._timed_out(what) from None

    async def _fetch(self, method, target, what, body=b"", content_type=None):
        """(status, body) of a short request; an error's body is read for its message."""
        async with self._exchange(method, target, what, body, content_type) as a:
            ok = 200 <= a.status < 300
            return a.status, await a.read(REPLY_MAX if ok else ERROR_BODY_MAX)

    async def _json(self, method, target, what, body=None, expect=200) -> dict:
        """The JSON object of a request's answer of status expect; else the engine's
        error."""
        data = json.dumps(body).encode() if body is not None else b""
        status, reply = await self._fetch(method, target, what, data,
                                          _JSON if body is not None else None)
        if status != expect:
            raise self._refused(what, status, reply)
        try:
            value = json.loads(reply) if len(reply) <= REPLY_MAX else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise self._garbled(what, "answer is not a JSON object")
        return value

    def _no_container(self) -> BackendError:
        return BackendError(f"there is no container '{self.container}' on the Docker engine "
                            f"at {self.socket_path}", -errno.ENOENT)

    def _refused(self, what, status, body) -> BackendError:
        """The error of an answer that is not the one asked for: the engine's message, or
        its status. "No such container" is said as such, whatever was being done."""
        msg = _message(body)
        if status == 404 and msg.startswith("No such container"):
            return self._no_container()
        code = {400: -errno.EINVAL, 401: -errno.EACCES, 403: -errno.EACCES,
                404: -errno.ENOENT}.get(status, -errno.EIO)
        return BackendError(f"{what} failed: "
                            f"{msg or f'the Docker engine answered HTTP {status}'}", code)

    def _timed_out(self, what) -> BackendError:
        return BackendError(f"{what} failed: the Docker engine at {self.socket_path} did not "
                            f"answer within {int(REQUEST_TIMEOUT * 1000)} ms",
                            -errno.ETIMEDOUT)

    @staticmethod
    def _garbled(what, why) -> BackendError:
        return BackendError(f"{what} failed: the Docker engine's {why}", -errno.EPROTO)

    # ---- the container -------------------------------------------------------------------

    async def check(self) -> None:
        """Asks the engine about the container once: BackendError when the engine cannot
        be reached ("cannot reach the Docker engine at SOCKET: ...", the connect's -errno),
        there is no such container (-ENOENT) or it is not running (-EIO)."""
        what = f"looking up the container '{self.container}'"
        info = await self._json("GET", f"/containers/{quote(self.container, safe='')}/json",
                                what)
        cid, state = info.get("Id"), info.get("State")
        running = state.get("Running") if isinstance(state, dict) else None
        if not _is_id(cid) or not isinstance(running, bool):
            raise self._garbled(what, "account of it cannot be read")
        if not running:
            word = state.get("Status")
            word = word if isinstance(word, str) and re.fullmatch(r"[a-z]{1,31}", word) \
                else "its state is not said"
            raise BackendError(f"the container '{self.container}' is not running ({word})",
                               -errno.EIO)
        self._id = cid

    # ---- exec ----------------------------------------------------------------------------

    async def exec(self, command: Union[str, Sequence[str]], *, working_directory: str = "/",
                   timeout: Optional[float] = None,
                   max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        """Runs command in the container: an argv as the exec's Cmd (argv[0] looked up
        through the container's PATH, never a shell), a str through /bin/sh -c. stdout and
        stderr are attached without a tty; the exit code is the exec's once it has ended.

        A command the engine cannot start (not found, not executable, no such
        working_directory) is BackendError (-EIO) with the engine's reason. At timeout
        seconds (None: none) it returns what came so far with exit_code -1; the engine
        cannot end an exec, so the command may still be running in the container.
        stdout is kept up to max_output bytes, stderr up to 64 KiB: the rest is read and
        dropped."""
        argv = _argv(command)
        out, err = bytearray(), bytearray()
        try:
            async with asyncio.timeout(timeout):
                code = await self._run(argv, working_directory, out, err,
                                       max(0, int(max_output)))
        except TimeoutError:
            code = -1
        return ExecResult(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                          code)

    async def _run(self, argv, working_directory, out, err, max_output) -> int:
        what = f"running {argv[0]} in the container '{self.container}'"
        eid = await self._exec_create(argv, what, stdin=False, cwd=working_directory)
        demux, syserr = _Demux(), bytearray()
        sinks = {1: (out, max_output), 2: (err, EXEC_STDERR_KEEP), 3: (syserr, SYSERR_KEEP)}
        async with self._exchange("POST", f"/exec/{eid}/start", what, _START, _JSON,
                                  stream=True) as a:
            if a.status != 200:
                raise self._refused(what, a.status, await a.read(ERROR_BODY_MAX))
            try:
                while data := await a.next():
                    for stream, piece in demux.feed(data):
                        sink, cap = sinks[stream]
                        sink += piece[:max(0, cap - len(sink))]
            except _Garbled:
                raise self._garbled(what, "stream is not framed as an exec's output") \
                    from None
        if not demux.whole:
            raise self._garbled(what, "stream ended inside a frame")
        state = await self._exec_wait(eid, what)
        if syserr:
            raise BackendError(f"{what} failed: "
                               f"{_printable(syserr.decode('utf-8', 'replace'))}", -errno.EIO)
        # A command the engine could not start never had a process; the engine's reason is
        # the one line it wrote into the stream.
        if state.get("Pid") == 0 and state["ExitCode"] in (126, 127):
            why = _printable(out.decode("utf-8", "replace")) or "it gave no reason"
            raise BackendError(f"the Docker engine could not start {argv[0]} in the "
                               f"container '{self.container}': {why}", -errno.EIO)
        return state["ExitCode"]

    async def _exec_create(self, argv, what, *, stdin, cwd=None) -> str:
        body = {"Cmd": argv, "AttachStdin": stdin, "AttachStdout": True,
                "AttachStderr": True, "Tty": False}
        if cwd is not None:
            body["WorkingDir"] = cwd
        eid = (await self._json("POST", f"/containers/{self._ref}/exec", what, body,
                                expect=201)).get("Id")
        if not _is_id(eid):
            raise self._garbled(what, "answer holds no exec id")
        return eid

    async def _exec_wait(self, eid, what) -> dict:
        """The exec's inspection once it has ended. The stream ends with the process's
        output; its exit comes to the engine apart, and may come a moment later."""
        pause = INSPECT_FIRST
        while True:
            state = await self._json("GET", f"/exec/{eid}/json", what)
            running, code = state.get("Running"), state.get("ExitCode")
            if not isinstance(running, bool) or \
                    not (code is None or (type(code) is int and 0 <= code <= 255)):
                raise self._garbled(what, "account of the exec cannot be read")
            if not running and code is not None:
                return state
            await asyncio.sleep(pause)
            pause = min(pause * 2, INSPECT_MAX)

    async def exec_input(self, command: Union[str, Sequence[str]], data: bytes, *,
                         working_directory: str = "/", timeout: Optional[float] = None,
                         max_output: int = EXEC_OUTPUT_MAX) -> ExecResult:
        """exec, with data written to the command's stdin, which is then closed: the exec is
        started with its stdin attached, as open_stream's is, and its output read to the
        end. stderr keeps its first 4 KiB. A command that exits without reading all of
        data is no error. Failures and the timeout as exec's."""
        argv = _argv(command)
        what = f"running {argv[0]} in the container '{self.container}'"
        out, stream = bytearray(), None
        try:
            async with asyncio.timeout(timeout):
                eid, stream = await self._attach(argv, what, working_directory)
                try:
                    try:
                        await stream.write(bytes(data))
                    except BrokenPipeError:
                        pass  # it ended, or closed its stdin, before it read it all
                    stream.close_stdin()
                    while chunk := await stream.read(65536):
                        out += chunk[:max(0, max_output - len(out))]
                finally:
                    await stream.close()
                state = await self._exec_wait(eid, what)
        except TimeoutError:
            return ExecResult(out.decode("utf-8", "replace"),
                              stream.stderr_text if stream else "", -1)
        if state.get("Pid") == 0 and state["ExitCode"] in (126, 127):
            why = _printable(out.decode("utf-8", "replace")) or "it gave no reason"
            raise BackendError(f"the Docker engine could not start {argv[0]} in the "
                               f"container '{self.container}': {why}", -errno.EIO)
        return ExecResult(out.decode("utf-8", "replace"), stream.stderr_text,
                          state["ExitCode"])

    async def open_stream(self, argv: Sequence[str]) -> DockerStream:
        """An exec of argv with its stdin attached, started on a connection of its own that
        the engine hands over to the exec's stdio (an HTTP upgrade): a DockerStream."""
        argv = _argv(argv)
        what = f"starting {argv[0]} in the container '{self.container}'"
        return (await self._attach(argv, what))[1]

    async def _attach(self, argv, what, cwd=None):
        """(the exec's id, a DockerStream on its stdio): see open_stream."""
        eid = await self._exec_create(argv, what, stdin=True, cwd=cwd)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                reader, writer = await self._connect()
                try:
                    await self._send(writer, "POST", f"/exec/{eid}/start", _START, _JSON,
                                     upgrade=True)
                    a = await _Answer.receive(reader, self.socket_path, "POST")
                    # 101 from an engine that upgrades; older ones answer 200 and go on.
                    if a.status not in (101, 200):
                        msg = _message(await a.read(ERROR_BODY_MAX))
                        raise BackendError(
                            f"the Docker engine did not start {argv[0]} on a stream (status "
                            f"{a.status}){': ' + msg if msg else ''}",
                            -errno.ENOENT if a.status == 404 else -errno.EIO)
                except BaseException:
                    writer.close()
                    raise
        except TimeoutError:
            raise self._timed_out(what) from None
        stream = DockerStream(reader, writer, argv[0])
        self._streams.add(stream)
        return eid, stream

    # ---- files ---------------------------------------------------------------------------

    async def write_file(self, path: str, content: Union[str, bytes], *,
                         working_directory: str = "/") -> None:
        """Writes content (a str as UTF-8) at path: a tar of the one file (mode 0644, owner
        0:0) extracted at / by the engine, which makes missing parents (0755, 0:0),
        replaces a file or symlink at path without following it, and refuses to replace a
        directory (BackendError). Not atomic: a reader may see the file while it is
        written."""
        full = _container_path(path, working_directory)
        data = content.encode() if isinstance(content, str) else bytes(content)
        what = f"writing {full} into the container '{self.container}'"
        status, body = await self._fetch("PUT", self._archive("/", "&noOverwriteDirNonDir=true"),
                                         what, _tar_of(full[1:], data, 0o644), _TAR)
        if status != 200 and not _written_then_gone(_message(body), full):
            raise self._refused(what, status, body)

    async def read_file(self, path: str, *, working_directory: str = "/",
                        max_bytes: int = 64 << 20) -> bytes:
        """The bytes of the regular file at path (never following a last symlink), from
        the first entry of the engine's archive of it. As LocalSandbox: FileNotFoundError
        when absent, IsADirectoryError for a directory, OSError(ELOOP) for a symlink,
        OSError(EINVAL) for another file that is not regular, FileTooLarge (its size in
        .size) past max_bytes. The engine's path-stat header tells all but absence before
        the archive comes: nothing else is fetched then."""
        full = _container_path(path, working_directory)
        what = f"reading {full} in the container '{self.container}'"
        async with self._exchange("GET", self._archive(full), what) as a:
            if a.status != 200:
                body = await a.read(ERROR_BODY_MAX)
                if a.status == 404 and not _message(body).startswith("No such container"):
                    raise FileNotFoundError(errno.ENOENT, "No such file in the container "
                                            f"'{self.container}'", full)
                raise self._refused(what, a.status, body)
            # The tar is the file as the engine read it a moment later, and has the last
            # word; what is surely no regular file, or too big, is not fetched.
            entry = self._path_stat(a, what, required=False)
            if entry is not None:
                self._check_readable(full, entry.kind, entry.size_bytes, max_bytes)
            tar = await a.read(max_bytes + TAR_SLACK)
        return self._first_file(tar, full, max_bytes, what)

    def _check_readable(self, full, kind, size, max_bytes):
        where = f"in the container '{self.container}'"
        if kind == DIRECTORY:
            raise IsADirectoryError(errno.EISDIR, f"Is a directory {where}", full)
        if kind == SYMLINK:
            raise OSError(errno.ELOOP, f"A symlink, not followed, {where}", full)
        if kind != FILE:
            raise OSError(errno.EINVAL, f"Not a regular file {where}", full)
        if size > max_bytes:
            raise FileTooLarge(f"{full} {where} is {size} bytes, more than {max_bytes}", size)

    def _first_file(self, tar_bytes, full, max_bytes, what) -> bytes:
        try:
            tar = tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:")
            member = tar.next()
        except tarfile.TarError as e:
            raise self._garbled(what, f"archive cannot be read: {e}") from None
        if member is None:
            raise self._garbled(what, "archive holds no entry")
        # A hard link entry is not the file's data: only a plain regular file is read.
        kind = FILE if member.isreg() else DIRECTORY if member.isdir() \
            else SYMLINK if member.issym() else OTHER
        self._check_readable(full, kind, member.size, max_bytes)
        try:
            data = tar.extractfile(member).read()
        except tarfile.TarError:
            data = b""
        if len(data) != member.size:
            cut = len(tar_bytes) > max_bytes + TAR_SLACK
            raise self._garbled(what, f"archive {'was cut off' if cut else 'ends'} before "
                                f"the end of a file of {member.size} bytes")
        return data

    def _path_stat(self, answer, what, required=True) -> Optional[FileEntry]:
        """The X-Docker-Container-Path-Stat header: the engine's lstat of the path, base64
        of JSON with its size and Go's os.FileMode."""
        value = answer.headers.get("x-docker-container-path-stat")
        if value is None and not required:
            return None
        try:
            if value is None or len(value) > PATH_STAT_MAX:
                raise ValueError()
            st = json.loads(base64.b64decode(value, validate=True))
            size, mode = st["size"], st["mode"]
            if type(size) is not int or type(mode) is not int or size < 0 or \
                    not 0 <= mode < 1 << 32:
                raise ValueError()
        except (ValueError, TypeError, KeyError):
            raise self._garbled(what, "path-stat header is missing or cannot be read") \
                from None
        kind = DIRECTORY if mode & _GO_DIR else SYMLINK if mode & _GO_SYMLINK \
            else OTHER if mode & _GO_OTHER else FILE
        return FileEntry(kind, size)

    async def stat_file(self, path: str, *, working_directory: str = "/") -> Optional[FileEntry]:
        """The engine's lstat of path (the last component is never followed), or None when
        nothing is there. An absent container is BackendError (-ENOENT), not None."""
        full = _container_path(path, working_directory)
        what = f"looking at {full} in the container '{self.container}'"
        async with self._exchange("HEAD", self._archive(full), what) as a:
            status = a.status
            if status == 200:
                return self._path_stat(a, what)
        # A HEAD answer has no body, so no message: an absent path and an absent container
        # are both 404. The container's inspection tells them apart, and a GET of the path
        # gives the message of any other error.
        if status == 404:
            inspected, body = await self._fetch("GET", f"/containers/{self._ref}/json", what)
            if inspected == 200:
                return None
            raise self._refused(what, inspected, body)
        async with self._exchange("GET", self._archive(full), what) as a:
            if 200 <= a.status < 300:
                raise BackendError(f"{what} failed: the Docker engine answered HTTP "
                                   f"{status}", -errno.EIO)
            raise self._refused(what, a.status, await a.read(ERROR_BODY_MAX))

    async def mkdtemp(self, prefix: str = "/tmp/mafhost-") -> str:
        """A fresh directory, prefix and 12 random hex digits, made by the engine from a tar
        of its entry (mode 0700, owner 0:0; missing parents 0755): its path. BackendError
        (-EEXIST) when 16 names were all taken."""
        for _ in range(MKDTEMP_TRIES):
            path = _container_path(prefix + secrets.token_hex(6), "/")
            # A directory entry over an existing directory would take it over (its mode and
            # owner set anew): only a name nobody has is used.
            if await self.stat_file(path) is not None:
                continue
            what = f"making the directory {path} in the container '{self.container}'"
            status, body = await self._fetch(
                "PUT", self._archive("/", "&noOverwriteDirNonDir=true"), what,
                _tar_of(path[1:], None, 0o700), _TAR)
            if status != 200:
                raise self._refused(what, status, body)
            return path
        raise BackendError(f"no free name for {prefix}XXXXXXXXXXXX after {MKDTEMP_TRIES} "
                           "tries", -errno.EEXIST)


def _is_id(value) -> bool:
    """A container or exec id as the engine gives it: it goes into request paths as is."""
    return isinstance(value, str) and re.fullmatch(r"[0-9A-Za-z]{1,128}", value) is not None


def _socket_from_env() -> str:
    host = os.environ.get("DOCKER_HOST")
    if not host:
        return DEFAULT_SOCKET
    if not host.startswith("unix:///"):
        raise ConfigError(f"DOCKER_HOST is '{host}': the Docker backend reaches the engine "
                          "through a unix socket only (unix:///PATH)", -errno.EINVAL)
    return host[len("unix://"):]
