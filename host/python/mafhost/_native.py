"""libmafhost's own backends, driven from asyncio: what an op or a run waits on (struct
mafh_want: descriptors and a time) is watched by the running event loop, with no thread per
waiting op or run. Every byte the backend exchanges with the sandbox, and every bound and
sentence, is the library's; this module only watches and copies results out."""
from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import time
import weakref
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import _abi
from .errors import BackendError, ConfigError, FileTooLarge, LibraryError


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def wait_for_want(want: _abi.Want) -> None:
    """Waits until one of want's descriptors is ready as asked, or its time has come. The
    descriptors are watched only for this wait: the library may close or change them once
    it is called again."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not fut.done():
            fut.set_result(None)

    readers: List[int] = []
    writers: List[int] = []
    for i in range(min(want.nfds, _abi.WANT_FDS)):
        fd, events = want.fds[i].fd, want.fds[i].events
        if events & _abi.POLLIN and fd not in readers:
            loop.add_reader(fd, wake)
            readers.append(fd)
        if events & _abi.POLLOUT and fd not in writers:
            loop.add_writer(fd, wake)
            writers.append(fd)
    timer: Optional[asyncio.Handle] = None
    if want.until_ms != _abi.INT64_MAX:
        timer = loop.call_later(max(0, want.until_ms - now_ms()) / 1000, wake)
    elif not readers and not writers:
        timer = loop.call_soon(wake)    # nothing to wait on: look again at once
    try:
        await fut
    finally:
        for fd in readers:
            loop.remove_reader(fd)
        for fd in writers:
            loop.remove_writer(fd)
        if timer is not None:
            timer.cancel()


class RunWaiter:
    """Waits for what a run waits on. The run's own descriptor (want.stable) is watched once,
    from its first wait until close(); each wait then only arms its time. Any other want is
    watched for that wait alone."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._fd = -1
        self._fut: Optional[asyncio.Future[None]] = None

    def _wake(self) -> None:
        if self._fut is not None and not self._fut.done():
            self._fut.set_result(None)

    async def wait(self, want: _abi.Want) -> None:
        if not (want.stable and want.nfds == 1):
            self.close()
            await wait_for_want(want)
            return
        loop = asyncio.get_running_loop()
        fd = want.fds[0].fd
        if fd != self._fd or loop is not self._loop:
            self.close()
            loop.add_reader(fd, self._wake)
            self._loop, self._fd = loop, fd
        self._fut = loop.create_future()
        timer = None
        if want.until_ms != _abi.INT64_MAX:
            timer = loop.call_later(max(0, want.until_ms - now_ms()) / 1000, self._wake)
        try:
            await self._fut
        finally:
            self._fut = None
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        """Stops watching the run's descriptor (before the run is freed, which closes it)."""
        if self._fd >= 0 and self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._fd, self._loop = -1, None


def error_from(code: int, message: str) -> Exception:
    """The exception for a failure the library reported: ConfigError for a bad argument
    (MAFH_EINVAL), BackendError (an OSError, errno the code's) for the rest."""
    if code == -errno.EINVAL:
        return ConfigError(message, code)
    return BackendError(message, code)


@dataclass
class OpOutcome:
    """An op's result, copied out of the library."""
    error: int
    message: str
    exit_code: int = -1
    timed_out: bool = False
    out: bytes = b""
    err: bytes = b""
    read_status: int = _abi.READ_ABSENT
    data: bytes = b""
    size: int = -1
    exists: bool = False
    file_size: int = 0
    file_type: int = _abi.FILE_NONE
    stream_data: bytes = b""
    stream_ended: bool = False
    woke: bool = False

    def raise_for_error(self) -> None:
        if self.error:
            raise error_from(self.error, self.message or os.strerror(-self.error))


def _outcome(r: _abi.OpResult) -> OpOutcome:
    def take(p: Optional[int], n: int) -> bytes:
        return ctypes.string_at(p, n) if p and n else b""

    return OpOutcome(
        error=r.error, message=r.detail.message.decode("utf-8", "replace"),
        exit_code=r.exec.exit_code, timed_out=bool(r.exec.timed_out),
        out=take(r.exec.out, r.exec.out_len), err=take(r.exec.err, r.exec.err_len),
        read_status=r.read.status, data=take(r.read.data, r.read.len), size=r.read.size,
        exists=bool(r.stat.exists), file_size=r.stat.size, file_type=r.stat.type,
        stream_data=take(r.stream_data, r.stream_len), stream_ended=bool(r.stream_ended),
        woke=bool(r.woke))


class OpArgs:
    """A struct mafh_op and everything it points to, alive as long as this object."""

    def __init__(self, kind: int, *, argv: Optional[Sequence[str]] = None,
                 timeout_ms: int = 0, out_cap: int = 0, path: Optional[str] = None,
                 cap: int = 0, data: Optional[bytes] = None, until_ms: int = 0,
                 cwd: Optional[str] = None) -> None:
        self.op = _abi.Op()
        self.op.size = ctypes.sizeof(_abi.Op)
        self.op.kind = kind
        self._keep: List[object] = []
        if argv is not None:
            enc = [os.fsencode(a) for a in argv]
            arr = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)
            self._keep.append(arr)
            # Assigned, not ctypes.cast: a cast array and its pointer hold each other (a
            # cycle, left for a full collection).
            self.op.argv = arr
        self.op.timeout_ms = int(timeout_ms)
        self.op.out_cap = int(out_cap)
        if path is not None:
            self.op.path = self._cs(path)
        self.op.cap = int(cap)
        if data is not None:
            buf = ctypes.create_string_buffer(bytes(data), len(data) + 1)
            self._keep.append(buf)
            self.op.data = ctypes.addressof(buf)
            self.op.len = len(data)
        self.op.until_ms = int(until_ms)
        if cwd is not None:
            self.op.cwd = self._cs(cwd)

    def _cs(self, s: str) -> bytes:
        b = os.fsencode(s)
        self._keep.append(b)
        return b


class Slot:
    """A state slot of mafh_task_new: what the backend keeps from one op to the next (a
    stream, watches). Freed with the backend's state_free."""

    def __init__(self) -> None:
        self.ptr = ctypes.c_void_p()


class NativeBackend:
    """One of libmafhost's backends, made for each Library that uses it (make(lib) returns
    its handle, blocking at most briefly), freed when the Library is closed or this object
    is."""

    def __init__(self, make: Callable[[_abi.Library], ctypes.c_void_p], *,
                 make_blocks: bool = False) -> None:
        self._make = make
        self._make_blocks = make_blocks
        self._handles: Dict[int, Tuple[_abi.Library, ctypes.c_void_p]] = {}
        self._finalizer = weakref.finalize(self, NativeBackend._free_all, self._handles)

    @staticmethod
    def _free_all(handles: Dict[int, Tuple[_abi.Library, ctypes.c_void_p]]) -> None:
        for lib, h in list(handles.values()):
            if lib.loaded:
                lib.backend_free(h)
        handles.clear()

    def _held(self, lib: _abi.Library) -> Optional[ctypes.c_void_p]:
        got = self._handles.get(id(lib))
        return got[1] if got is not None and got[0] is lib else None

    def _adopt(self, lib: _abi.Library, h: ctypes.c_void_p) -> ctypes.c_void_p:
        self._handles[id(lib)] = (lib, h)
        me = weakref.ref(self)

        def forget() -> None:
            still = me()
            if still is not None:
                still.forget(lib)
        lib.on_close(forget)
        return h

    def handle(self, lib: _abi.Library) -> ctypes.c_void_p:
        """The backend's handle in lib, made now if it is not yet."""
        held = self._held(lib)
        return held if held is not None else self._adopt(lib, self._make(lib))

    async def ahandle(self, lib: _abi.Library) -> ctypes.c_void_p:
        """handle(lib), made in a worker thread where making it blocks (a request to an
        engine)."""
        held = self._held(lib)
        if held is not None:
            return held
        if not self._make_blocks:
            return self.handle(lib)
        h = await asyncio.get_running_loop().run_in_executor(None, self._make, lib)
        held = self._held(lib)
        if held is not None:            # made meanwhile for another coroutine
            lib.backend_free(h)
            return held
        return self._adopt(lib, h)

    def forget(self, lib: _abi.Library) -> None:
        """Frees the handle made for lib (its library is about to be unloaded)."""
        got = self._handles.pop(id(lib), None)
        if got is not None and lib.loaded:
            lib.backend_free(got[1])

    def close(self) -> None:
        """Frees every handle made (a later op makes its own again)."""
        NativeBackend._free_all(self._handles)

    async def perform(self, lib: _abi.Library, args: OpArgs,
                      slot: Optional[Slot] = None) -> OpOutcome:
        """Performs one op to its end, waiting on the event loop. Cancelled, the op is
        abandoned (a command killed, a transfer dropped)."""
        b = await self.ahandle(lib)
        own = slot is None
        slot = slot or Slot()
        task, err = ctypes.c_void_p(), _abi.Error()
        lib.acquire()
        try:
            rc = lib.task_new(b, ctypes.byref(slot.ptr), ctypes.byref(args.op), now_ms(),
                              ctypes.byref(task), ctypes.byref(err))
            if rc < 0:
                raise error_from(rc, err.message.decode("utf-8", "replace") or
                                 lib.strerror_text(rc))
            try:
                want, res = _abi.Want(), ctypes.POINTER(_abi.OpResult)()
                while lib.task_advance(task, now_ms(), ctypes.byref(want),
                                       ctypes.byref(res)) == 1:
                    await wait_for_want(want)
                return _outcome(res.contents)
            finally:
                lib.task_free(task)
        finally:
            if own and slot.ptr:
                lib.backend_state_free(b, slot.ptr)
            lib.release()

    def free_slot(self, lib: _abi.Library, slot: Slot) -> None:
        if slot.ptr and lib.loaded:
            lib.backend_state_free(self.handle(lib), slot.ptr)
        slot.ptr = ctypes.c_void_p()


class NativeStream:
    """A command with its stdin and stdout attached (the Stream of mafhost.sandbox), over a
    stream of one of the library's backends."""

    READ_MAX = 1 << 20
    WRITE_TIMEOUT_MS = 30000

    def __init__(self, backend: NativeBackend, lib: _abi.Library, slot: Slot) -> None:
        self._b, self._lib, self._slot = backend, lib, slot
        self._ended = False
        self._closed = False
        self._last_error = ""
        lib.acquire()

    @property
    def stderr_text(self) -> str:
        """The sentence of the stream's end, with what its command wrote to stderr (the
        first 4 KiB, as the library keeps them): "" while it goes on."""
        return self._last_error

    @property
    def closed(self) -> bool:
        return self._closed

    async def write(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError(errno.EPIPE, "the stream is closed")
        o = await self._b.perform(self._lib, OpArgs(_abi.OP_STREAM_WRITE, data=bytes(data),
                                                    timeout_ms=self.WRITE_TIMEOUT_MS),
                                  self._slot)
        if o.error == -errno.EPIPE:
            raise BrokenPipeError(errno.EPIPE, o.message or "the stream's command is gone")
        if o.error == -errno.ETIMEDOUT:
            raise TimeoutError(errno.ETIMEDOUT, o.message or "the stream did not take the "
                               "bytes in time")
        o.raise_for_error()

    async def read(self, max_bytes: int) -> bytes:
        """1..max_bytes bytes of its stdout, or b"" once it has ended."""
        if self._closed or self._ended:
            return b""
        cap = max(1, min(int(max_bytes), self.READ_MAX))
        while True:
            o = await self._b.perform(self._lib, OpArgs(
                _abi.OP_STREAM_READ, cap=cap, until_ms=now_ms() + 60000), self._slot)
            if o.stream_data:
                return o.stream_data
            if o.stream_ended:
                self._ended = True
                self._last_error = o.message
                return b""
            o.raise_for_error()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._b.perform(self._lib, OpArgs(_abi.OP_STREAM_CLOSE), self._slot)
        except Exception:  # noqa: BLE001 -- closing never fails
            pass
        finally:
            self._b.free_slot(self._lib, self._slot)
            self._lib.release()


def load_default(library: Optional[_abi.Library]) -> _abi.Library:
    lib = library if library is not None else _abi.load()
    if not lib.loaded:
        raise LibraryError("libmafhost was unloaded; load it again (mafhost.load)")
    return lib
