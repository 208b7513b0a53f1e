"""The asyncio driver of libmafhost's sans-I/O core: the core says what it needs (an exec, a
read, a write, a wait, a tool call, a stream's bytes), this driver does it over a sandbox
object (sandbox.py) and hands back the result, until the run is over."""
from __future__ import annotations

import asyncio
import ctypes
import errno
import inspect
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Literal, Optional, Sequence, Set,
                    Tuple, Union)

from . import _abi
from ._tools import Limits, Tool, ToolsArg, as_tools, build_registry
from ._native import RunWaiter
from .sandbox import Stream

if TYPE_CHECKING:
    # maf-sandbox's, served through its own door (an Any where it is not installed).
    from maf_sandbox import HostToolRegistry, HostToolRun

    from .maf_sandbox.answerer import Answerer
from .errors import (BackendError, ConfigError, FileTooLarge, LaunchFailed, RunLost, RunTimeout)

log = logging.getLogger("mafhost")

Transport = Literal["auto", "files", "wait", "relay", "stream"]
Egress = Literal["closed", "open"]
Seccomp = Literal["default", "off"]
Landlock = Literal["auto", "off"]
# What an op's result points to, kept alive until the run has taken it.
Keep = Optional[Sequence[object]]

# A foreign exec may not keep to its own timeout; past it by this much, the driver stops
# waiting and reports the exec timed out.
EXEC_GRACE_S = 2.0
# A stream's close (stdin closed, a moment, killed) is not waited for longer.
STREAM_CLOSE_S = 3.0
# A stream write whose op gives no timeout (the library's backends take the same).
STREAM_WRITE_S = 30.0


@dataclass(frozen=True)
class ExitRecord:
    """program_exit.json as the run's supervisor wrote it."""
    status: str
    exit_code: int
    signal: int
    wall_ms: int
    cpu_ms: int
    peak_rss_kb: int
    output_bytes: int
    output_truncated: bool
    calls: int
    undelivered: int
    seccomp: str
    landlock: str
    error: str


@dataclass(frozen=True)
class Event:
    """What happened in a run, as it happened. kind: "run_started", "call_served",
    "call_refused", "call_undelivered", "error", "run_ended". Fields a kind does not use
    are None."""
    kind: str
    run_dir: str
    time_ms: int
    call_id: Optional[int] = None
    tool: Optional[str] = None
    duration_ms: Optional[int] = None
    code: Optional[int] = None
    message: Optional[str] = None
    detail: Optional[str] = None
    pid: Optional[int] = None
    supervisor_pid: Optional[int] = None
    status: Optional[str] = None
    exit_code: Optional[int] = None


# Called with each Event as it happens; what it returns, when awaitable, is awaited (in a task
# of its own, before run() returns).
EventCallback = Callable[[Event], Any]


@dataclass
class RunResult:
    """How a run ended. status: "exited", "signaled", "timeout", "stopped",
    "launch_failed", "error" or "lost"; exit_code the program's (128+N for signal N, 124 at
    the deadline, -1 unknown). calls counts the answers the program received, refusals
    included. ops: the core's operations by kind; backend_operations: the calls made on the
    sandbox object, by method. record: the supervisor's exit record (None if not read)."""
    status: str
    exit_code: int
    output: str
    output_bytes: bytes
    output_truncated: bool
    calls: int
    refusals: int
    undelivered: int
    ops: Dict[str, int]
    backend_operations: Dict[str, int]
    wall_ms: int
    transport: str
    run_dir: str
    pid: int
    supervisor_pid: int
    identity: str
    uid: int
    gid: int
    landlock: str
    verified: bool
    record: Optional[ExitRecord]
    error: str
    error_code: int
    errors: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.exit_code == 0

    @property
    def backend_operation_count(self) -> int:
        return sum(self.backend_operations.values())


def _s(b: Optional[bytes]) -> Optional[str]:
    return b.decode("utf-8", "replace") if b is not None else None


def _t(b: bytes) -> str:
    """A text field of the library's (a char array, never NULL)."""
    return b.decode("utf-8", "replace")


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _argv(ptr: Any) -> List[str]:
    out, i = [], 0
    while ptr[i] is not None:
        out.append(os.fsdecode(ptr[i]))
        i += 1
    return out


def _cstrings(items: Sequence[str]) -> Any:
    """A NULL-terminated char *[] of items (the array holds on to its strings)."""
    enc = [os.fsencode(x) for x in items]
    arr = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)
    return arr


def _rel(path: str) -> str:
    """The core's absolute path as the surface takes it: relative to working_directory
    "/"."""
    return path.lstrip("/") or "."


def _errno_of(exc: BaseException, default: int = errno.EIO) -> int:
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    code = getattr(exc, "code", 0)
    if isinstance(code, int) and code < 0:
        return -code
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return errno.ETIMEDOUT
    return default


def _sentence(what: str, exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{what}: {text}"


class _Sandbox:
    """The calls on the sandbox object, counted, each turned into an op's result."""

    def __init__(self, sandbox: Any) -> None:
        for m in ("exec", "write_file", "read_file", "stat_file"):
            if not callable(getattr(sandbox, m, None)):
                raise ConfigError(f"the backend {type(sandbox).__name__} has no {m}() (a "
                                  "sandbox needs exec, write_file, read_file and stat_file)")
        self.sb = sandbox
        self.has_stream = callable(getattr(sandbox, "open_stream", None))
        # An exec given bytes on its stdin: how relay takes each answer in one operation.
        # Without it the answer is written first, never put in an argv (anyone's to read).
        self.has_exec_input = callable(getattr(sandbox, "exec_input", None))
        # An exec that takes max_output (this package's backends) holds no more of the
        # command's stdout than the op's cap; any other holds what it holds, and is cut
        # after.
        self.bounded = {m: _takes(getattr(sandbox, m, None), "max_output")
                        for m in ("exec", "exec_input")}
        self.counts: Dict[str, int] = {}
        # What the sandbox object raised, first to last (a caller serving maf-sandbox's
        # contract re-raises the first, as maf-sandbox's supervisor would).
        self.exceptions: List[BaseException] = []

    def failed(self, res: _abi.OpResult, exc: BaseException, what: str) -> Keep:
        self.exceptions.append(exc)
        return _fail(res, exc, what)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    @property
    def caps(self) -> int:
        caps = _abi.CAPS_REQUIRED | _abi.CAP_BLOCKING_EXEC
        caps |= _abi.CAP_STREAM if self.has_stream else 0
        return caps | (_abi.CAP_EXEC_STDIN | _abi.CAP_LAUNCH_STDIN if self.has_exec_input
                       else 0)

    async def exec(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        """An EXEC op: the object's exec, or with the op's data (its stdin) exec_input."""
        argv = _argv(op.argv)
        timeout = op.timeout_ms / 1000 if op.timeout_ms > 0 else None
        try:
            method = "exec" if op.data is None else "exec_input"
            self.count(method)
            kw = {"max_output": op.out_cap} if self.bounded[method] else {}
            if op.data is not None:
                coro = self.sb.exec_input(argv, ctypes.string_at(op.data, op.len),
                                          working_directory="/", timeout=timeout, **kw)
            else:
                coro = self.sb.exec(argv, working_directory="/", timeout=timeout, **kw)
            r = await (asyncio.wait_for(coro, timeout + EXEC_GRACE_S) if timeout else coro)
        except asyncio.TimeoutError:
            res.exec.exit_code, res.exec.timed_out = -1, 1
            return ()
        except Exception as e:
            return self.failed(res, e, f"the backend's exec of {argv[0]} failed")
        out = (r.stdout or "").encode("utf-8", "surrogateescape")[:op.out_cap]
        err = (r.stderr or "").encode("utf-8", "surrogateescape")[:65536]
        # None: a surface whose exec could not tell (killed at its timeout, say).
        code = -1 if r.exit_code is None else int(r.exit_code)
        res.exec.exit_code = code
        res.exec.timed_out = int(code == -1 and timeout is not None)
        res.exec.out, res.exec.out_len = ctypes.cast(ctypes.c_char_p(out), ctypes.c_void_p), \
            len(out)
        res.exec.err, res.exec.err_len = ctypes.cast(ctypes.c_char_p(err), ctypes.c_void_p), \
            len(err)
        return (out, err)

    async def stat(self, path: str) -> Any:
        self.count("stat_file")
        return await self.sb.stat_file(_rel(path), working_directory="/")

    async def stat_op(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        path = op.path.decode()
        try:
            st = await self.stat(path)
        except Exception as e:
            return self.failed(res, e, f"the backend's stat of {path} failed")
        if st is not None:
            # A surface may not know a size (maf-sandbox's, for a link): 0 then.
            res.stat.exists, res.stat.size = 1, int(st.size_bytes or 0)
            res.stat.type = {"file": _abi.FILE_REGULAR, "directory": _abi.FILE_DIR,
                             "symlink": _abi.FILE_SYMLINK}.get(st.kind, _abi.FILE_OTHER)
        return ()

    async def read(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        """Read-if-present over the surface: a stat (absent, not a regular file, past the
        cap: no read), then the read."""
        path = op.path.decode()
        try:
            st = await self.stat(path)
            if st is None:
                res.read.status = _abi.READ_ABSENT
                return ()
            if st.kind != "file":
                res.read.status = _abi.READ_NOT_REGULAR
                return ()
            if st.size_bytes is not None and st.size_bytes > op.cap:
                res.read.status, res.read.size = _abi.READ_TOO_BIG, int(st.size_bytes)
                return ()
            self.count("read_file")
            data = await self.sb.read_file(_rel(path), working_directory="/",
                                           max_bytes=op.cap)
            if isinstance(data, str):
                data = data.encode()
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"read_file returned {type(data).__name__}, not bytes")
        except FileNotFoundError:
            res.read.status = _abi.READ_ABSENT
            return ()
        except FileTooLarge as e:
            res.read.status, res.read.size = _abi.READ_TOO_BIG, e.size
            return ()
        except Exception as e:
            return self.failed(res, e, f"the backend's read of {path} failed")
        if len(data) > op.cap:  # a surface that does not keep to max_bytes
            res.read.status, res.read.size = _abi.READ_TOO_BIG, len(data)
            return ()
        data = bytes(data)
        res.read.status, res.read.len = _abi.READ_OK, len(data)
        res.read.data = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p)
        return (data,)

    async def write(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        path = op.path.decode()
        data = ctypes.string_at(op.data, op.len) if op.len else b""
        self.count("write_file")
        try:
            await self.sb.write_file(_rel(path), data, working_directory="/")
        except Exception as e:
            return self.failed(res, e, f"the backend's write of {path} failed")
        return ()


def _takes(fn: Any, name: str) -> bool:
    """Whether the callable fn takes the keyword argument name."""
    if not callable(fn):
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params  # not through **kwargs, which may be passed on to anything


def _fail(res: _abi.OpResult, exc: BaseException, what: str) -> Keep:
    res.error = -_errno_of(exc)
    res.detail.code = res.error
    res.detail.message = _sentence(what, exc).encode("utf-8", "replace")[:255]
    log.debug("%s", res.detail.message.decode("utf-8", "replace"), exc_info=exc)
    return ()


class _Stream:
    """The run's one stream, and the read it may have pending: a read is never cancelled,
    only waited on again."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.reading: Optional[asyncio.Future[bytes]] = None

    async def read(self, op: _abi.Op, res: _abi.OpResult, now_ms: int) -> Keep:
        if self.reading is None:
            self.reading = asyncio.ensure_future(self.stream.read(op.cap))
        left = max(0, op.until_ms - now_ms) / 1000
        done, _ = await asyncio.wait({self.reading}, timeout=left)
        if not done:
            return ()
        task, self.reading = self.reading, None
        try:
            data = task.result()
        except Exception as e:
            res.stream_ended = 1
            return _fail(res, e, "the stream broke")
        if not data:
            res.stream_ended = 1
            err = getattr(self.stream, "stderr_text", "") or ""
            if err.strip():
                res.detail.message = f"the stream ended: {err.strip()}".encode(
                    "utf-8", "replace")[:255]
            return ()
        data = bytes(data[:op.cap])
        res.stream_data = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p)
        res.stream_len = len(data)
        return (data,)

    async def write(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        data = ctypes.string_at(op.data, op.len)
        timeout = op.timeout_ms / 1000 if op.timeout_ms > 0 else STREAM_WRITE_S
        try:
            await asyncio.wait_for(self.stream.write(data), timeout)
        except asyncio.TimeoutError:
            res.error = -errno.ETIMEDOUT
        except (BrokenPipeError, ConnectionError, EOFError) as e:
            res.error = -errno.EPIPE
            res.detail.message = _sentence("the stream's command is gone", e).encode()[:255]
        except Exception as e:
            _fail(res, e, "a write to the stream failed")
        return ()

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.stream.close(), STREAM_CLOSE_S)
        except asyncio.TimeoutError:
            log.debug("closing the stream: it took more than %s s", STREAM_CLOSE_S)
        except Exception as e:  # closing never fails the run
            log.debug("closing the stream: %s", e)
        if self.reading is not None:
            try:
                await asyncio.wait_for(self.reading, 1.0)
            except BaseException:
                self.reading.cancel()
            self.reading = None


class _Run:
    def __init__(self, lib: _abi.Library, sandbox: _Sandbox, tools: Sequence[Tool],
                 on_event: Optional[EventCallback], run_dir: str,
                 answerer: Optional[Answerer] = None) -> None:
        self.lib = lib
        self.sb = sandbox
        self.tools = {t.name: t for t in tools}
        # A pass-through run: every request's bytes go to answerer(flags, data, size, id),
        # which returns (how, response bytes or None): see maf_sandbox.answerer.
        self.answerer = answerer
        self.on_event = on_event
        self.run_dir = run_dir
        self.stream: Optional[_Stream] = None
        self.keep: Keep = None
        self.handle = ctypes.c_void_p()
        self.tasks: Set[asyncio.Future[Any]] = set()

    def _event(self, evp: Any, _ud: Any) -> None:
        try:
            self._emit(evp.contents)
        except Exception:  # an exception cannot cross the library; it is logged
            log.exception("mafhost: the event callback failed")

    def _emit(self, e: _abi.Event) -> None:
        kind = _abi.EVENT_KINDS[e.kind]
        if kind in ("call_served", "call_refused", "call_undelivered"):
            fields = dict(call_id=e.call_id, tool=_s(e.tool), duration_ms=e.duration_ms,
                          message=_s(e.message),
                          detail=(ctypes.string_at(e.detail, e.detail_len).decode(
                              "utf-8", "replace") if e.detail else None))
        elif kind == "error":
            fields = dict(code=e.code, message=_s(e.message))
        elif kind == "run_started":
            fields = dict(pid=e.pid, supervisor_pid=e.supervisor_pid)
        else:  # run_ended
            fields = dict(status=_abi.RUN_STATUSES[e.status], exit_code=e.exit_code)
        ev = Event(kind=kind, run_dir=self.run_dir, time_ms=e.time_ms, **fields)
        if self.answerer is not None and kind in ("call_served", "call_refused"):
            # The transport accepted the call's response: a policy's publish returns now.
            self.answerer.accepted(e.call_id)
        _log_event(ev)
        if self.on_event is not None:
            r = self.on_event(ev)
            if asyncio.iscoroutine(r):
                t = asyncio.ensure_future(r)
                self.tasks.add(t)
                t.add_done_callback(self.tasks.discard)

    async def raw_call(self, c: _abi.Call, res: _abi.OpResult) -> Keep:
        data = ctypes.string_at(c.arguments, c.arguments_len) if c.arguments_len else b""
        assert self.answerer is not None  # only a pass-through run has raw calls
        how, response = await self.answerer(c.flags, data, c.request_size, c.id)
        res.raw_answer = how
        if response is None:
            return ()
        res.value = ctypes.cast(ctypes.c_char_p(response), ctypes.c_void_p)
        res.value_len = len(response)
        return (response,)

    async def call(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        c = op.call.contents
        if c.flags & _abi.CALL_RAW:
            return await self.raw_call(c, res)
        t = self.tools.get(_t(c.tool or b""))
        if t is None:  # the core refuses unknown tools first; this is a safety net
            res.refusal = f"there is no host tool named '{_s(c.tool)}'".encode()
            return (res.refusal,)
        args = json.loads(ctypes.string_at(c.arguments, c.arguments_len))
        value, refusal, note = await t.invoke(args)
        keep: List[object] = []
        if value is not None:
            v = value.encode("utf-8", "surrogatepass")
            res.value, res.value_len = ctypes.cast(ctypes.c_char_p(v), ctypes.c_void_p), len(v)
            keep.append(v)
        else:
            res.refusal = (refusal or "").encode("utf-8", "replace")
            keep.append(res.refusal)
        if note:
            n = note.encode("utf-8", "replace")
            res.note, res.note_len = ctypes.cast(ctypes.c_char_p(n), ctypes.c_void_p), len(n)
            keep.append(n)
        return keep

    async def perform(self, op: _abi.Op, res: _abi.OpResult) -> Keep:
        """Does op, fills res; returns what must stay alive until res is handed over."""
        k = op.kind
        if k == _abi.OP_WAIT_UNTIL:
            left = op.until_ms - _now_ms()
            if left > 0:
                await asyncio.sleep(left / 1000)
            return ()
        if k in (_abi.OP_STREAM_READ, _abi.OP_STREAM_WRITE):
            # The core asks for these only while a stream it opened is open.
            if self.stream is None:
                raise AssertionError("libmafhost asked for a stream op with no stream open")
            if k == _abi.OP_STREAM_READ:
                return await self.stream.read(op, res, _now_ms())
            return await self.stream.write(op, res)
        if k == _abi.OP_CALL:
            return await self.call(op, res)
        if k == _abi.OP_EXEC:
            return await self.sb.exec(op, res)
        if k == _abi.OP_READ:
            return await self.sb.read(op, res)
        if k == _abi.OP_WRITE:
            return await self.sb.write(op, res)
        if k == _abi.OP_STAT:
            return await self.sb.stat_op(op, res)
        if k == _abi.OP_STREAM_OPEN:
            argv = _argv(op.argv)
            self.sb.count("open_stream")
            try:
                self.stream = _Stream(await self.sb.sb.open_stream(argv))
            except Exception as e:
                return _fail(res, e, f"the backend could not start {argv[0]} on a stream")
            return ()
        if k == _abi.OP_STREAM_CLOSE:
            if self.stream is not None:
                await self.stream.close()
                self.stream = None
            return ()
        raise AssertionError(f"libmafhost asked for an op of kind {k}")

    async def drive_native(self) -> Optional[BaseException]:
        """Drives the run over one of the library's backends: the library performs every
        op but the tool calls, and says what it waits on; the event loop watches that."""
        want, callp, err = _abi.Want(), ctypes.POINTER(_abi.Op)(), _abi.Error()
        waiter = RunWaiter()
        try:
            return await self._drive_native(waiter, want, callp, err)
        finally:
            waiter.close()

    async def _drive_native(self, waiter: RunWaiter, want: _abi.Want, callp: Any,
                            err: _abi.Error) -> Optional[BaseException]:
        from ._native import now_ms as now
        lib, handle = self.lib, self.handle
        cancelled: Optional[BaseException] = None
        while True:
            rc = lib.run_advance(handle, now(), ctypes.byref(want), ctypes.byref(callp),
                                 ctypes.byref(err))
            if rc < 0:
                raise BackendError(err.message.decode("utf-8", "replace") or
                                   lib.strerror_text(rc), rc)
            if rc == _abi.PROGRESS_DONE:
                return cancelled
            try:
                if rc == _abi.PROGRESS_WAIT:
                    await waiter.wait(want)
                    continue
                res = _abi.OpResult()
                lib.op_result_init(ctypes.byref(res), _abi.OP_CALL)
                try:
                    self.keep = await self.call(callp.contents, res)
                except asyncio.CancelledError:
                    res = _abi.OpResult()
                    lib.op_result_init(ctypes.byref(res), _abi.OP_CALL)
                    res.error = -errno.ECANCELED
                    raise
                except Exception as e:
                    log.exception("mafhost: a tool call failed in mafhost")
                    res = _abi.OpResult()
                    lib.op_result_init(ctypes.byref(res), _abi.OP_CALL)
                    _fail(res, e, "the call failed in mafhost")
                finally:
                    lib.run_op_result(handle, now(), ctypes.byref(res))
                    self.keep = None
            except asyncio.CancelledError as e:
                # The caller gave up on the run: the core stops the program and reclaims
                # the run directory, then the cancellation goes on.
                cancelled = cancelled or e
                lib.run_stop(handle)

    async def drive(self) -> Optional[BaseException]:
        lib, handle = self.lib, self.handle
        opp = ctypes.POINTER(_abi.Op)()
        cancelled = None
        while True:
            lib.run_next_op(handle, _now_ms(), ctypes.byref(opp))
            op = opp.contents
            if op.kind == _abi.OP_DONE:
                break
            res = _abi.OpResult()
            lib.op_result_init(ctypes.byref(res), op.kind)
            try:
                # What res points to stays alive until the run has taken the result.
                self.keep = await self.perform(op, res)
            except Exception as e:
                # A fault of this driver or of a backend object outside its surface (a
                # result of the wrong type, say): the op failed, and the run decides, so that
                # the program is still stopped and its run directory reclaimed.
                log.exception("mafhost: the %s op failed", _abi.OP_NAMES[op.kind])
                res = _abi.OpResult()
                lib.op_result_init(ctypes.byref(res), op.kind)
                _fail(res, e, f"the {_abi.OP_NAMES[op.kind]} op failed in mafhost")
                if op.kind == _abi.OP_STREAM_READ:
                    res.stream_ended = 1
            except asyncio.CancelledError as e:
                # The caller gave up on the run: the core stops the program and reclaims
                # the run directory, then the cancellation goes on.
                cancelled = cancelled or e
                lib.run_stop(handle)
                res = _abi.OpResult()
                lib.op_result_init(ctypes.byref(res), op.kind)
                res.error = -errno.ECANCELED
                if op.kind == _abi.OP_STREAM_READ:
                    res.stream_ended = 1
            lib.run_op_result(handle, _now_ms(), ctypes.byref(res))
            self.keep = None
        if self.stream is not None:
            await self.stream.close()
        return cancelled


def _log_event(ev: Event) -> None:
    if ev.kind == "run_started":
        log.info("run %s: started, pid %s", ev.run_dir, ev.pid)
    elif ev.kind == "call_served":
        log.debug("run %s: call %s %s served in %s ms", ev.run_dir, ev.call_id, ev.tool,
                  ev.duration_ms)
    elif ev.kind == "call_refused":
        log.info("run %s: call %s %s refused in %s ms: %s", ev.run_dir, ev.call_id, ev.tool,
                 ev.duration_ms, ev.message)
        if ev.detail:
            log.debug("run %s: call %s: %s", ev.run_dir, ev.call_id, ev.detail)
    elif ev.kind == "call_undelivered":
        log.info("run %s: the answer to call %s was never received", ev.run_dir, ev.call_id)
    elif ev.kind == "error":
        log.warning("run %s: %s", ev.run_dir, ev.message)
    elif ev.kind == "run_ended":
        log.info("run %s: ended, %s, exit code %s", ev.run_dir, ev.status, ev.exit_code)


def _native_counts(r: _abi.RunResult) -> Dict[str, int]:
    """The library backend's operations of a run, by the sandbox surface's method names."""
    o = r.ops
    counts = {"exec": o.exec - r.exec_inputs - r.streams_opened,
              "exec_input": r.exec_inputs, "open_stream": r.streams_opened,
              "write_file": o.write, "read_file": o.read, "stat_file": o.stat}
    return {k: v for k, v in counts.items() if v}


def _result(lib: _abi.Library, handle: ctypes.c_void_p, sandbox: _Sandbox, run_dir: str,
            native: bool = False) -> RunResult:
    r = lib.run_result(handle).contents
    rec = r.record
    record = ExitRecord(_t(rec.status), rec.exit_code, rec.signal, rec.wall_ms, rec.cpu_ms,
                        rec.peak_rss_kb, rec.output_bytes, bool(rec.output_truncated),
                        rec.calls, rec.undelivered, _t(rec.seccomp), _t(rec.landlock),
                        _t(rec.error)) if rec.have_record else None
    out = ctypes.string_at(r.output, r.output_len) if r.output else b""
    errors = _s(r.errors) or ""
    return RunResult(
        status=_abi.RUN_STATUSES[r.status], exit_code=r.exit_code,
        output=out.decode("utf-8", "replace"), output_bytes=out,
        output_truncated=bool(r.output_truncated), calls=r.calls, refusals=r.refusals,
        undelivered=r.undelivered,
        ops={k: getattr(r.ops, k) for k, _ in _abi.OpCounts._fields_},
        backend_operations=_merged(sandbox.counts, _native_counts(r) if native else {}),
        wall_ms=r.wall_ms,
        transport=_abi.TRANSPORTS[r.transport], run_dir=run_dir, pid=r.pid,
        supervisor_pid=r.supervisor_pid, identity=_t(r.identity), uid=r.uid, gid=r.gid,
        landlock=_t(r.landlock), verified=bool(r.verified), record=record,
        error=_t(r.error.message), error_code=r.error.code,
        errors=[e for e in errors.splitlines() if e])


def _merged(a: Dict[str, int], b: Dict[str, int]) -> Dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


_RAISES = {"timeout": RunTimeout, "lost": RunLost, "launch_failed": LaunchFailed,
           "error": BackendError}


@dataclass
class _Spec:
    """What a run was asked to be: run()'s arguments, checked, and its private ones."""
    program: Optional[Union[str, bytes]]
    argv: Optional[Sequence[str]]
    timeout: float
    run_dir: Optional[str] = None
    launcher: Optional[str] = None
    transport: str = "auto"
    egress: Optional[str] = None
    seccomp: Optional[str] = None
    landlock: Optional[str] = None
    user: Optional[str] = None
    max_procs: Optional[int] = None
    max_memory: Optional[int] = None
    writable: Sequence[str] = ()
    keep_run_dir: bool = False
    # Seconds one of the launcher's short commands (run, stop, reclaim) may take.
    exec_timeout: Optional[float] = None
    # Seconds the ending (stop, the record, the output, the reclaim) may take in all.
    ending_timeout: Optional[float] = None
    # A pass-through run: every request goes to the answerer (maf_sandbox.answerer).
    answerer: Optional[Answerer] = None
    # An entry of the run directory the reclaim leaves.
    reclaim_keep: Optional[str] = None
    # With an answerer: write the shim compatible with maf-sandbox's beside the program.
    write_shim: bool = False
    # The slowest poll of the files transport.
    poll_max_ms: Optional[float] = None

    def check_timeouts(self) -> None:
        """Raises ConfigError for an exec_timeout or ending_timeout the library would
        refuse."""
        if self.exec_timeout is not None and not self.exec_timeout > 0:
            raise ConfigError("exec_timeout must be a positive number of seconds, not "
                              f"{self.exec_timeout!r}")
        if self.ending_timeout is not None and not 6 <= self.ending_timeout <= 3600:
            raise ConfigError("ending_timeout must be 6 to 3600 seconds, not "
                              f"{self.ending_timeout!r}")


async def run(backend: Any, program: Optional[str] = None, *,
              tools: Union[ToolsArg, HostToolRegistry, HostToolRun] = (),
              timeout: float = 60.0, argv: Optional[Sequence[str]] = None,
              limits: Optional[Limits] = None, run_dir: Optional[str] = None,
              launcher: Optional[str] = None, transport: Transport = "auto",
              on_event: Optional[EventCallback] = None, check: bool = True,
              egress: Optional[Egress] = None, seccomp: Optional[Seccomp] = None,
              landlock: Optional[Landlock] = None, user: Optional[str] = None,
              max_procs: Optional[int] = None, max_memory: Optional[int] = None,
              writable: Sequence[str] = (), keep_run_dir: bool = False,
              exec_timeout: Optional[float] = None,
              ending_timeout: Optional[float] = None,
              library: Optional[_abi.Library] = None) -> RunResult:
    """Runs a program in backend through maf-launch, serving its host-tool calls with
    tools, and returns its RunResult once it is over.

    backend: LocalSandbox or DockerSandbox (libmafhost's own backends, driven from this
    event loop), or any object with maf-sandbox's sandbox surface (mafhost.sandbox).
    program: Python source, written into the run directory with the guest module
    maf_host_tools beside it and run with python3; or None with argv, a program already in
    the sandbox. tools: functions, Tools, a mapping of names to them, or a maf-sandbox
    HostToolRegistry (or HostToolRun), served through its own dispatch. See the package's
    documentation for the rest; with check (the default) a run that timed out, was lost,
    failed to launch or failed in the backend raises RunTimeout, RunLost, LaunchFailed or
    BackendError (its result in .result). exec_timeout: the seconds one of the launcher's
    short commands (run, stop, reclaim) may take, and a stream's opening, and a wait's or
    relay's exec past its slice (default: the library's, 30; never past the run's deadline
    by more than 5 s; stop and reclaim within their share of ending_timeout), for an engine
    slow to start execs under load. ending_timeout: the seconds after the program's end (or
    the deadline, if that comes first) by which the run is over whatever the launcher does,
    shared by stop, the record, the output and the reclaim, stop all but 4/15 of it (6 to
    3600, default: the library's, 15); raise it with exec_timeout under such load, since a
    stop cut short loses the output. Cancelling the task stops the program and reclaims the
    run directory before the cancellation goes on."""
    spec = _Spec(program, argv, timeout, run_dir, launcher, transport, egress, seccomp,
                 landlock, user, max_procs, max_memory, writable, keep_run_dir, exec_timeout,
                 ending_timeout)
    return await _serve(backend, spec, tools, limits, on_event, check, library)


async def _serve(backend: Any, spec: _Spec, tools: Any, limits: Optional[Limits],
                 on_event: Optional[EventCallback], check: bool,
                 library: Optional[_abi.Library], sandbox: Optional[_Sandbox] = None
                 ) -> RunResult:
    """run(), with the private parts of spec, and sandbox (a _Sandbox already made)."""
    if spec.program is None and not spec.argv:
        raise ConfigError("give a program (Python source) or argv (a program in the "
                          "sandbox)")
    if spec.timeout is None or not spec.timeout > 0:
        raise ConfigError("the timeout must be a positive number of seconds, not "
                          f"{spec.timeout!r}")
    spec.check_timeouts()
    served = None
    if spec.answerer is None and _of_maf_sandbox(tools):
        from .maf_sandbox import answerer as _answerer
        served = _answerer.served_registry(tools)
    if served is not None:
        # A maf-sandbox HostToolRegistry (or HostToolRun): served as maf-sandbox serves it,
        # through its own door, with a shim that is maf-sandbox's to the program.
        if limits is not None:
            raise ConfigError("limits do not apply to a HostToolRegistry, whose own "
                              "response_limits and call cap bound the run")
        spec.answerer = _answerer.Answerer(_answerer.door_for(served))
        spec.write_shim = spec.program is not None
        limits, tools = _answerer.limits_for(spec.answerer.door), ()
    lib = library if library is not None else _abi.load()
    lib.acquire()
    try:
        return await _run(lib, backend, spec, as_tools(tools), limits, on_event, check,
                          sandbox)
    finally:
        lib.release()
        if spec.answerer is not None:
            # A response the transport did not accept by now never will be.
            await spec.answerer.door.settle(BackendError(
                "the run ended before the guest's launcher took the response"))


def _of_maf_sandbox(obj: object) -> bool:
    """Whether obj is an object of maf-sandbox's (looked at by its classes' modules, so that
    nothing of maf-sandbox is imported for anything else)."""
    return any(t.__module__.split(".")[0] == "maf_sandbox" for t in type(obj).__mro__)


async def _run(lib: _abi.Library, backend: Any, spec: _Spec, tools: List[Tool],
               limits: Optional[Limits], on_event: Optional[EventCallback], check: bool,
               sandbox: Optional[_Sandbox]) -> RunResult:
    sandbox = sandbox or _Sandbox(backend)
    from .local import NativeSandbox
    native = backend if isinstance(backend, NativeSandbox) else None
    answerer = spec.answerer
    reg = build_registry(lib, tools, limits or Limits(), pass_through=answerer is not None)
    try:
        r = _Run(lib, sandbox, tools, on_event, spec.run_dir or "/mafhost-check", answerer)
        opts = _abi.RunOptions()
        lib.run_options_init(ctypes.byref(opts))
        keep = _options(lib, opts, r, spec, backend)
        if answerer is not None:
            # maf-sandbox's guest API, not the registry's shim: given to the run, which puts
            # it beside the program (on the launch's stdin where the exec takes one).
            opts.write_shim = int(spec.write_shim)
            if spec.write_shim:
                shim = answerer.shim()
                opts.shim, opts.shim_len = shim, len(shim)
                keep.append(shim)
            if spec.reclaim_keep is not None:
                opts.reclaim_keep = os.fsencode(spec.reclaim_keep)
                keep.append(opts.reclaim_keep)
            if spec.poll_max_ms is not None:
                opts.poll_max_ms = max(int(spec.poll_max_ms), opts.poll_min_ms)
        bh = await native._native.ahandle(lib) if native is not None else None
        run_dir = spec.run_dir
        if run_dir is None:
            # The options are checked by the library (with a placeholder directory) before
            # a run directory is made, so that a bad one leaves nothing behind.
            lib.run_free(_new_run(lib, reg, sandbox, opts, bh))
            run_dir = r.run_dir = await _make_run_dir(sandbox, spec.program is None)
            opts.run_dir = os.fsencode(run_dir)
            keep.append(opts.run_dir)
        r.handle = _new_run(lib, reg, sandbox, opts, bh)
        try:
            cancelled = await (r.drive_native() if bh is not None else r.drive())
            result = _result(lib, r.handle, sandbox, run_dir, bh is not None)
        finally:
            lib.run_free(r.handle)
            del keep
        if r.tasks:
            await asyncio.gather(*r.tasks, return_exceptions=True)
        if cancelled is not None:
            raise cancelled
    finally:
        lib.registry_free(reg)
    if check and result.status in _RAISES:
        raise _RAISES[result.status](result.error or result.status, result.error_code, result)
    return result


def _new_run(lib: _abi.Library, reg: ctypes.c_void_p, sandbox: _Sandbox,
             opts: _abi.RunOptions, backend: Optional[ctypes.c_void_p] = None) -> ctypes.c_void_p:
    """The library's run over opts (over backend, one of the library's, when given), or
    ConfigError with its sentence."""
    handle, err = ctypes.c_void_p(), _abi.Error()
    if backend is not None:
        rc = lib.run_new(reg, backend, ctypes.byref(opts), ctypes.byref(handle),
                         ctypes.byref(err))
    else:
        rc = lib.run_new_sansio(reg, sandbox.caps, ctypes.byref(opts), ctypes.byref(handle),
                                ctypes.byref(err))
    if rc < 0:
        why = err.message.decode() or lib.strerror_text(rc)
        if rc == -errno.ENOTSUP and not sandbox.has_stream and "STREAM" in why:
            why += f" ({type(sandbox.sb).__name__} has no open_stream())"
        raise ConfigError(why, rc)
    return handle


async def _make_run_dir(sandbox: _Sandbox, must_exist: bool) -> str:
    """A fresh run directory: the backend's mkdtemp where it has one; else a name no one
    can guess under /tmp, made (when no program is written to make it) by writing a file
    in it that the reclaim removes with the rest."""
    mk = getattr(sandbox.sb, "mkdtemp", None)
    if callable(mk):
        sandbox.count("mkdtemp")
        made: str = await mk()
        return made
    path = f"/tmp/mafhost-{secrets.token_hex(8)}"
    if must_exist:
        sandbox.count("write_file")
        await sandbox.sb.write_file(_rel(path + "/.run"), b"", working_directory="/")
    return path


def _options(lib: _abi.Library, o: _abi.RunOptions, r: _Run, spec: _Spec,
             backend: Any) -> List[object]:
    """Fills o from spec; returns what o points to, which must outlive it."""
    keep: List[object] = []

    def cs(v: Optional[Union[str, bytes]]) -> Optional[bytes]:
        if v is None:
            return None
        b = os.fsencode(v)
        keep.append(b)
        return b

    program, argv, transport = spec.program, spec.argv, spec.transport
    o.run_dir = cs(r.run_dir)
    if program is not None:
        p = program.encode() if isinstance(program, str) else bytes(program)
        keep.append(p)
        o.program, o.program_len = p, len(p)
    if argv:
        arr = _cstrings(argv)
        keep.append(arr)
        # Assigned, not ctypes.cast: a cast array and its pointer hold each other (a cycle).
        o.argv = arr
    o.launcher = cs(spec.launcher or getattr(backend, "launcher_path", None))
    o.timeout_ms = int(spec.timeout * 1000)
    if spec.exec_timeout is not None:
        o.exec_timeout_ms = max(1, int(spec.exec_timeout * 1000))
    if spec.ending_timeout is not None:
        o.ending_ms = int(spec.ending_timeout * 1000)
    t = ctypes.c_int()
    if lib.transport_from_name(str(transport).encode(), ctypes.byref(t)) < 0:
        raise ConfigError(f"unknown transport {transport!r} (one of "
                          f"{', '.join(_abi.TRANSPORTS)})")
    o.transport = t.value
    o.egress, o.seccomp = cs(spec.egress), cs(spec.seccomp)
    o.landlock, o.user = cs(spec.landlock), cs(spec.user)
    if spec.max_procs is not None:
        o.max_procs = int(spec.max_procs)
    if spec.max_memory is not None:
        o.max_memory = int(spec.max_memory)
    if spec.writable:
        arr = _cstrings(spec.writable)
        keep.append(arr)
        o.writable = arr
    o.keep_run_dir = int(bool(spec.keep_run_dir))
    # The callback is held by keep alone, not by r: r holding the callback that holds r would
    # be a cycle, and every run would wait as garbage for a full collection.
    event_fn = _abi.EVENT_FN(r._event)
    o.on_event = event_fn
    keep.append(event_fn)
    return keep
