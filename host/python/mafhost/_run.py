"""The asyncio driver of libmafhost's sans-I/O core: the core says what it needs (an exec, a
read, a write, a wait, a tool call, a stream's bytes), this driver does it over a sandbox
object (sandbox.py) and hands back the result, until the run is over."""
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
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _abi
from ._tools import Limits, as_tools, build_registry
from .errors import (BackendError, ConfigError, FileTooLarge, LaunchFailed, RunLost, RunTimeout)

log = logging.getLogger("mafhost")

# A foreign exec may not keep to its own timeout; past it by this much, the driver stops
# waiting and reports the exec timed out.
EXEC_GRACE_S = 2.0
# A stream's close (stdin closed, a moment, killed) is not waited for longer.
STREAM_CLOSE_S = 3.0


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
    def ok(self):
        return self.status == "exited" and self.exit_code == 0

    @property
    def backend_operation_count(self):
        return sum(self.backend_operations.values())


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _now_ms():
    return time.monotonic_ns() // 1_000_000


def _argv(ptr):
    out, i = [], 0
    while ptr[i] is not None:
        out.append(os.fsdecode(ptr[i]))
        i += 1
    return out


def _cstrings(items):
    """A NULL-terminated char *[] of items (the array holds on to its strings)."""
    enc = [os.fsencode(x) for x in items]
    arr = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)
    return arr


def _rel(path):
    """The core's absolute path as the surface takes it: relative to working_directory
    "/"."""
    return path.lstrip("/") or "."


def _errno_of(exc, default=errno.EIO):
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    code = getattr(exc, "code", 0)
    if isinstance(code, int) and code < 0:
        return -code
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return errno.ETIMEDOUT
    return default


def _sentence(what, exc):
    text = str(exc) or type(exc).__name__
    return f"{what}: {text}"


class _Sandbox:
    """The calls on the sandbox object, counted, each turned into an op's result."""

    def __init__(self, sandbox):
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
        self.counts = {}
        # What the sandbox object raised, first to last (a caller serving maf-sandbox's
        # contract re-raises the first, as maf-sandbox's supervisor would).
        self.exceptions = []

    def failed(self, res, exc, what):
        self.exceptions.append(exc)
        return _fail(res, exc, what)

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    @property
    def caps(self):
        caps = _abi.CAPS_REQUIRED | _abi.CAP_BLOCKING_EXEC
        caps |= _abi.CAP_STREAM if self.has_stream else 0
        return caps | (_abi.CAP_EXEC_STDIN if self.has_exec_input else 0)

    async def exec(self, op, res):
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

    async def stat(self, path):
        self.count("stat_file")
        return await self.sb.stat_file(_rel(path), working_directory="/")

    async def stat_op(self, op, res):
        path = op.path.decode()
        try:
            st = await self.stat(path)
        except Exception as e:
            return self.failed(res, e, f"the backend's stat of {path} failed")
        if st is not None:
            res.stat.exists, res.stat.size = 1, int(st.size_bytes)
            res.stat.type = {"file": _abi.FILE_REGULAR, "directory": _abi.FILE_DIR,
                             "symlink": _abi.FILE_SYMLINK}.get(st.kind, _abi.FILE_OTHER)
        return ()

    async def read(self, op, res):
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
            if st.size_bytes > op.cap:
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

    async def write(self, op, res):
        path = op.path.decode()
        data = ctypes.string_at(op.data, op.len) if op.len else b""
        self.count("write_file")
        try:
            await self.sb.write_file(_rel(path), data, working_directory="/")
        except Exception as e:
            return self.failed(res, e, f"the backend's write of {path} failed")
        return ()


def _takes(fn, name):
    """Whether the callable fn takes the keyword argument name."""
    if not callable(fn):
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params  # not through **kwargs, which may be passed on to anything


def _fail(res, exc, what):
    res.error = -_errno_of(exc)
    res.detail.code = res.error
    res.detail.message = _sentence(what, exc).encode("utf-8", "replace")[:255]
    log.debug("%s", res.detail.message.decode("utf-8", "replace"), exc_info=exc)
    return ()


class _Stream:
    """The run's one stream, and the read it may have pending: a read is never cancelled,
    only waited on again."""

    def __init__(self, stream):
        self.stream = stream
        self.reading = None

    async def read(self, op, res, now_ms):
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

    async def write(self, op, res):
        data = ctypes.string_at(op.data, op.len)
        timeout = op.timeout_ms / 1000 if op.timeout_ms > 0 else None
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

    async def close(self):
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
    def __init__(self, lib, sandbox, tools, on_event, run_dir, answerer=None):
        self.lib = lib
        self.sb = sandbox
        self.tools = {t.name: t for t in tools}
        # A pass-through run: every request's bytes go to answerer(flags, data), which
        # returns (how, response bytes or None): see _upstream.Answerer.
        self.answerer = answerer
        self.on_event = on_event
        self.run_dir = run_dir
        self.stream = None
        self.keep = None
        self.handle = ctypes.c_void_p()
        self.event_fn = _abi.EVENT_FN(self._event)
        self.tasks = set()

    def _event(self, evp, _ud):
        try:
            self._emit(evp.contents)
        except Exception:  # an exception cannot cross the library; it is logged
            log.exception("mafhost: the event callback failed")

    def _emit(self, e):
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
        _log_event(ev)
        if self.on_event is not None:
            r = self.on_event(ev)
            if asyncio.iscoroutine(r):
                t = asyncio.ensure_future(r)
                self.tasks.add(t)
                t.add_done_callback(self.tasks.discard)

    async def raw_call(self, c, res):
        data = ctypes.string_at(c.arguments, c.arguments_len) if c.arguments_len else b""
        how, response = await self.answerer(c.flags, data, c.request_size)
        res.raw_answer = how
        if response is None:
            return ()
        res.value = ctypes.cast(ctypes.c_char_p(response), ctypes.c_void_p)
        res.value_len = len(response)
        return (response,)

    async def call(self, op, res):
        c = op.call.contents
        if c.flags & _abi.CALL_RAW:
            return await self.raw_call(c, res)
        t = self.tools.get(_s(c.tool))
        if t is None:  # the core refuses unknown tools first; this is a safety net
            res.refusal = f"there is no host tool named '{_s(c.tool)}'".encode()
            return (res.refusal,)
        args = json.loads(ctypes.string_at(c.arguments, c.arguments_len))
        value, refusal, note = await t.invoke(args)
        keep = []
        if value is not None:
            v = value.encode("utf-8", "surrogatepass")
            res.value, res.value_len = ctypes.cast(ctypes.c_char_p(v), ctypes.c_void_p), len(v)
            keep.append(v)
        else:
            res.refusal = refusal.encode("utf-8", "replace")
            keep.append(res.refusal)
        if note:
            n = note.encode("utf-8", "replace")
            res.note, res.note_len = ctypes.cast(ctypes.c_char_p(n), ctypes.c_void_p), len(n)
            keep.append(n)
        return keep

    async def perform(self, op, res):
        """Does op, fills res; returns what must stay alive until res is handed over."""
        k = op.kind
        if k == _abi.OP_WAIT_UNTIL:
            left = op.until_ms - _now_ms()
            if left > 0:
                await asyncio.sleep(left / 1000)
            return ()
        if k == _abi.OP_STREAM_READ:
            return await self.stream.read(op, res, _now_ms())
        if k == _abi.OP_STREAM_WRITE:
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

    async def drive(self):
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


def _log_event(ev):
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


def _result(lib, handle, sandbox, run_dir):
    r = lib.run_result(handle).contents
    rec = r.record
    record = ExitRecord(_s(rec.status), rec.exit_code, rec.signal, rec.wall_ms, rec.cpu_ms,
                        rec.peak_rss_kb, rec.output_bytes, bool(rec.output_truncated),
                        rec.calls, rec.undelivered, _s(rec.seccomp), _s(rec.landlock),
                        _s(rec.error)) if rec.have_record else None
    out = ctypes.string_at(r.output, r.output_len) if r.output else b""
    errors = _s(r.errors) or ""
    return RunResult(
        status=_abi.RUN_STATUSES[r.status], exit_code=r.exit_code,
        output=out.decode("utf-8", "replace"), output_bytes=out,
        output_truncated=bool(r.output_truncated), calls=r.calls, refusals=r.refusals,
        undelivered=r.undelivered,
        ops={k: getattr(r.ops, k) for k, _ in _abi.OpCounts._fields_},
        backend_operations=dict(sandbox.counts), wall_ms=r.wall_ms,
        transport=_abi.TRANSPORTS[r.transport], run_dir=run_dir, pid=r.pid,
        supervisor_pid=r.supervisor_pid, identity=_s(r.identity), uid=r.uid, gid=r.gid,
        landlock=_s(r.landlock), verified=bool(r.verified), record=record,
        error=_s(r.error.message), error_code=r.error.code,
        errors=[e for e in errors.splitlines() if e])


_RAISES = {"timeout": RunTimeout, "lost": RunLost, "launch_failed": LaunchFailed,
           "error": BackendError}


async def run(backend, program: Optional[str] = None, *, tools=(), timeout: float = 60.0,
              argv: Optional[Sequence[str]] = None, limits: Optional[Limits] = None,
              run_dir: Optional[str] = None, launcher: Optional[str] = None,
              transport: str = "auto", on_event: Optional[Callable[[Event], Any]] = None,
              check: bool = True, egress: Optional[str] = None,
              seccomp: Optional[str] = None, landlock: Optional[str] = None,
              user: Optional[str] = None, max_procs: Optional[int] = None,
              max_memory: Optional[int] = None, writable: Sequence[str] = (),
              keep_run_dir: bool = False, library=None, **_private) -> RunResult:
    """Runs a program in backend through maf-launch, serving its host-tool calls with
    tools, and returns its RunResult once it is over.

    program: Python source, written into the run directory with the guest module
    maf_host_tools beside it and run with python3; or None with argv, a program already in
    the sandbox. See the package's documentation for the rest; with check (the default) a
    run that timed out, was lost, failed to launch or failed in the backend raises
    RunTimeout, RunLost, LaunchFailed or BackendError (its result in .result). Cancelling
    the task stops the program and reclaims the run directory before the cancellation goes
    on."""
    if program is None and not argv:
        raise ConfigError("give a program (Python source) or argv (a program in the "
                          "sandbox)")
    if timeout is None or not timeout > 0:
        raise ConfigError(f"the timeout must be a positive number of seconds, not {timeout!r}")
    from . import _upstream
    served = _upstream.served_registry(tools)
    if served is not None:
        # A maf-sandbox HostToolRegistry (or HostToolRun): served as maf-sandbox serves it,
        # through its own dispatch, with a shim that is maf-sandbox's to the program.
        if limits is not None:
            raise ConfigError("limits do not apply to a HostToolRegistry, whose own "
                              "response_limits and max_dispatches_per_run bound the run")
        _private = dict(_private, answerer=_upstream.Answerer(served),
                        write_shim=program is not None)
        limits, tools = _upstream.limits_for(served), ()
    lib = library if library is not None else _abi.load()
    lib.acquire()
    try:
        return await _run(lib, backend, program, tools, timeout, argv, limits, run_dir,
                          launcher, transport, on_event, check, egress, seccomp, landlock,
                          user, max_procs, max_memory, writable, keep_run_dir, **_private)
    finally:
        lib.release()


async def _run(lib, backend, program, tools, timeout, argv, limits, run_dir, launcher,
               transport, on_event, check, egress, seccomp, landlock, user, max_procs,
               max_memory, writable, keep_run_dir, answerer=None, reclaim_keep=None,
               write_shim=None, poll_max_ms=None, sandbox=None):
    """The run. Private: answerer (a pass-through registry whose requests it answers),
    reclaim_keep (an entry of the run directory the reclaim leaves), write_shim (for an
    answerer: write the shim compatible with maf-sandbox's beside the program),
    poll_max_ms (the slowest files poll) and sandbox (a _Sandbox already made)."""
    sandbox = sandbox or _Sandbox(backend)
    tools = as_tools(tools)
    reg = build_registry(lib, tools, limits or Limits(), pass_through=answerer is not None)
    try:
        r = _Run(lib, sandbox, tools, on_event, run_dir or "/mafhost-check", answerer)
        opts = _abi.RunOptions()
        lib.run_options_init(ctypes.byref(opts))
        keep = _options(lib, opts, r, r.run_dir, program, argv, launcher, timeout, transport,
                        egress, seccomp, landlock, user, max_procs, max_memory, writable,
                        keep_run_dir, backend)
        if answerer is not None:
            opts.write_shim = 0
            if reclaim_keep is not None:
                opts.reclaim_keep = os.fsencode(reclaim_keep)
                keep.append(opts.reclaim_keep)
            if poll_max_ms is not None:
                opts.poll_max_ms = max(int(poll_max_ms), opts.poll_min_ms)
        if run_dir is None:
            # The options are checked by the library (with a placeholder directory) before
            # a run directory is made, so that a bad one leaves nothing behind.
            lib.run_free(_new_run(lib, reg, sandbox, opts))
            run_dir = r.run_dir = await _make_run_dir(sandbox, program is None)
            opts.run_dir = os.fsencode(run_dir)
            keep.append(opts.run_dir)
        if answerer is not None and write_shim:
            await answerer.write_shim(sandbox, run_dir)
        r.handle = _new_run(lib, reg, sandbox, opts)
        try:
            cancelled = await r.drive()
            result = _result(lib, r.handle, sandbox, run_dir)
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


def _new_run(lib, reg, sandbox, opts):
    """The library's run over opts, or ConfigError with its sentence."""
    handle, err = ctypes.c_void_p(), _abi.Error()
    rc = lib.run_new_sansio(reg, sandbox.caps, ctypes.byref(opts), ctypes.byref(handle),
                            ctypes.byref(err))
    if rc < 0:
        why = err.message.decode() or lib.strerror_text(rc)
        if rc == -errno.ENOTSUP and not sandbox.has_stream and "STREAM" in why:
            why += f" ({type(sandbox.sb).__name__} has no open_stream())"
        raise ConfigError(why, rc)
    return handle


async def _make_run_dir(sandbox, must_exist):
    """A fresh run directory: the backend's mkdtemp where it has one; else a name no one
    can guess under /tmp, made (when no program is written to make it) by writing a file
    in it that the reclaim removes with the rest."""
    mk = getattr(sandbox.sb, "mkdtemp", None)
    if callable(mk):
        sandbox.count("mkdtemp")
        return await mk()
    path = f"/tmp/mafhost-{secrets.token_hex(8)}"
    if must_exist:
        sandbox.count("write_file")
        await sandbox.sb.write_file(_rel(path + "/.run"), b"", working_directory="/")
    return path


def _options(lib, o, r, run_dir, program, argv, launcher, timeout, transport, egress,
             seccomp, landlock, user, max_procs, max_memory, writable, keep_run_dir, backend):
    keep = []

    def cs(v):
        if v is None:
            return None
        b = os.fsencode(v) if isinstance(v, str) else v
        keep.append(b)
        return b

    o.run_dir = cs(run_dir)
    if program is not None:
        p = program.encode() if isinstance(program, str) else bytes(program)
        keep.append(p)
        o.program, o.program_len = p, len(p)
    if argv:
        arr = _cstrings(argv)
        keep.append(arr)
        o.argv = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
    o.launcher = cs(launcher or getattr(backend, "launcher_path", None))
    o.timeout_ms = int(timeout * 1000)
    t = ctypes.c_int()
    if lib.transport_from_name(str(transport).encode(), ctypes.byref(t)) < 0:
        raise ConfigError(f"unknown transport {transport!r} (one of "
                          f"{', '.join(_abi.TRANSPORTS)})")
    o.transport = t.value
    o.egress, o.seccomp, o.landlock, o.user = cs(egress), cs(seccomp), cs(landlock), cs(user)
    if max_procs is not None:
        o.max_procs = int(max_procs)
    if max_memory is not None:
        o.max_memory = int(max_memory)
    if writable:
        arr = _cstrings(writable)
        keep.append(arr)
        o.writable = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
    o.keep_run_dir = int(bool(keep_run_dir))
    o.on_event = r.event_fn
    keep.append(r.event_fn)
    return keep
