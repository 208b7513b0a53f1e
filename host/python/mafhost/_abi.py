"""libmafhost through ctypes: the structs of mafhost.h, the functions' prototypes, and the
loaded library (Library), which can be unloaded and loaded again.

The structs mirror mafhost.h field for field; tests/python/test_abi.py compiles a C program
against the header and checks every size and offset here against the compiler's."""
import ctypes
import ctypes.util
import importlib
import os
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_int64, c_short,
                    c_size_t, c_uint, c_uint64, c_void_p)

from .errors import LibraryError

def _package_version() -> str:
    """The project's version, whose one place is MAFH_VERSION in host/include/mafhost.h:
    mafhost/_version.py where the package was built or installed (setup.py, make install
    write it), else the header beside the package in a source tree."""
    try:
        made = importlib.import_module("._version", __package__)
        return str(made.VERSION)
    except ImportError:
        pass
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                          "include", "mafhost.h")
    try:
        with open(header, encoding="utf-8") as f:
            found = re.search(r'^#define MAFH_VERSION "(.*)"$', f.read(), re.M)
    except OSError:
        found = None
    if found is None:
        raise ImportError("mafhost cannot tell its version: it has no _version.py (written "
                          "when it is built or installed) and no host/include/mafhost.h "
                          "beside it")
    return found.group(1)


VERSION = _package_version()
SONAME = "libmafhost.so." + ".".join(VERSION.split(".")[:2])

# enum mafh_op_kind
OP_EXEC, OP_READ, OP_WRITE, OP_STAT, OP_WAIT_UNTIL, OP_CALL, OP_DONE, OP_STREAM_OPEN, \
    OP_STREAM_WRITE, OP_STREAM_READ, OP_STREAM_CLOSE = range(11)
OP_NAMES = ("exec", "read", "write", "stat", "wait_until", "call", "done", "stream_open",
            "stream_write", "stream_read", "stream_close")
# enum mafh_read_status
READ_OK, READ_ABSENT, READ_TOO_BIG, READ_NOT_REGULAR = range(4)
# enum mafh_file_type
FILE_NONE, FILE_REGULAR, FILE_DIR, FILE_SYMLINK, FILE_OTHER = range(5)
# enum mafh_run_status
RUN_STATUSES = ("running", "exited", "signaled", "timeout", "stopped", "launch_failed",
                "error", "lost")
TRANSPORTS = ("auto", "files", "wait", "relay", "stream")
EVENT_KINDS = ("run_started", "call_served", "call_refused", "call_undelivered", "error",
               "run_ended")
# struct mafh_call's flags, and enum mafh_raw_answer (pass-through registries)
CALL_RAW, CALL_OVERSIZED, CALL_UNREADABLE = 1, 2, 4
RAW_RESPOND, RAW_STEP_OVER, RAW_LOOK_AGAIN, RAW_HOLD = range(4)
JSON_TYPES = ("any", "string", "number", "integer", "boolean", "object", "array", "null")

CAP_EXEC, CAP_FILES_IN, CAP_FILES_OUT, CAP_DETACHED_EXEC, CAP_BLOCKING_EXEC, \
    CAP_WAIT_CHANGE, CAP_STREAM, CAP_EXEC_STDIN, CAP_EXEC_EXACT, CAP_LAUNCH_STDIN = \
    (1 << i for i in range(10))
CAPS_REQUIRED = CAP_EXEC | CAP_FILES_IN | CAP_FILES_OUT | CAP_DETACHED_EXEC


class Error(Structure):
    _fields_ = [("code", c_int), ("message", c_char * 256)]


class ExecResult(Structure):
    _fields_ = [("exit_code", c_int), ("timed_out", c_int), ("out", c_void_p),
                ("out_len", c_size_t), ("err", c_void_p), ("err_len", c_size_t)]


class ReadResult(Structure):
    _fields_ = [("status", c_int), ("data", c_void_p), ("len", c_size_t), ("size", c_int64)]


class Stat(Structure):
    _fields_ = [("exists", c_int), ("size", c_int64), ("type", c_int)]


class Call(Structure):
    _fields_ = [("size", c_size_t), ("id", c_int64), ("tool", c_char_p),
                ("arguments", c_char_p), ("arguments_len", c_size_t), ("flags", c_uint),
                ("request_size", c_uint64)]


TOOL_FN = CFUNCTYPE(c_int, POINTER(Call), c_void_p, c_void_p)


class Op(Structure):
    _fields_ = [("size", c_size_t), ("kind", c_int), ("argv", POINTER(c_char_p)),
                ("timeout_ms", c_int64), ("out_cap", c_size_t), ("path", c_char_p),
                ("cap", c_size_t), ("data", c_void_p), ("len", c_size_t),
                ("replaces", c_char_p), ("until_ms", c_int64), ("wait_dir", c_char_p),
                ("wait_names", POINTER(c_char_p)), ("call", POINTER(Call)), ("fn", c_void_p),
                ("ud", c_void_p), ("cwd", c_char_p)]


class OpResult(Structure):
    _fields_ = [("size", c_size_t), ("kind", c_int), ("error", c_int), ("detail", Error),
                ("exec", ExecResult), ("read", ReadResult), ("stat", Stat),
                ("value", c_void_p), ("value_len", c_size_t), ("refusal", c_char_p),
                ("note", c_void_p), ("note_len", c_size_t), ("stream_data", c_void_p),
                ("stream_len", c_size_t), ("stream_ended", c_int), ("raw_answer", c_int),
                ("woke", c_int)]


class Event(Structure):
    _fields_ = [("size", c_size_t), ("kind", c_int), ("time_ms", c_int64),
                ("call_id", c_int64), ("tool", c_char_p), ("duration_ms", c_int64),
                ("code", c_int), ("message", c_char_p), ("detail", c_void_p),
                ("detail_len", c_size_t), ("pid", c_int64), ("supervisor_pid", c_int64),
                ("status", c_int), ("exit_code", c_int)]


EVENT_FN = CFUNCTYPE(None, POINTER(Event), c_void_p)


class RunOptions(Structure):
    _fields_ = [("size", c_size_t), ("run_dir", c_char_p), ("program", c_char_p),
                ("program_len", c_size_t), ("argv", POINTER(c_char_p)), ("launcher", c_char_p),
                ("timeout_ms", c_int64), ("egress", c_char_p), ("seccomp", c_char_p),
                ("landlock", c_char_p), ("transport", c_int), ("keep_run_dir", c_int),
                ("write_shim", c_int), ("poll_min_ms", c_int64), ("poll_max_ms", c_int64),
                ("wait_slice_ms", c_int64), ("exec_timeout_ms", c_int64),
                ("on_event", EVENT_FN), ("event_ud", c_void_p), ("user", c_char_p),
                ("max_procs", c_int64), ("max_memory", c_int64),
                ("writable", POINTER(c_char_p)), ("liveness_ms", c_int64),
                ("reclaim_keep", c_char_p), ("shim", c_char_p), ("shim_len", c_size_t),
                ("ending_ms", c_int64)]


class OpCounts(Structure):
    _fields_ = [("exec", c_int64), ("read", c_int64), ("write", c_int64), ("stat", c_int64),
                ("wait", c_int64)]


class ExitRecord(Structure):
    _fields_ = [("have_record", c_int), ("status", c_char * 32), ("exit_code", c_int),
                ("signal", c_int), ("wall_ms", c_int64), ("cpu_ms", c_int64),
                ("peak_rss_kb", c_int64), ("output_bytes", c_int64),
                ("output_truncated", c_int), ("calls", c_int64), ("undelivered", c_int64),
                ("seccomp", c_char * 32), ("landlock", c_char * 32), ("error", c_char * 256)]


class RunResult(Structure):
    _fields_ = [("status", c_int), ("exit_code", c_int), ("record", ExitRecord),
                ("output", c_void_p), ("output_len", c_size_t), ("output_truncated", c_int),
                ("calls", c_int64), ("refusals", c_int64), ("undelivered", c_int64),
                ("ops", OpCounts), ("wall_ms", c_int64), ("pid", c_int64),
                ("supervisor_pid", c_int64), ("session", c_int), ("identity", c_char * 16),
                ("uid", c_int64), ("gid", c_int64), ("landlock", c_char * 32),
                ("verified", c_int), ("error", Error), ("errors", c_char_p),
                ("transport", c_int), ("exec_inputs", c_int64), ("streams_opened", c_int64)]


class Param(Structure):
    _fields_ = [("name", c_char_p), ("type", c_int), ("required", c_int)]


class Tool(Structure):
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("description", c_char_p),
                ("params", POINTER(Param)), ("n_params", c_size_t), ("fn", TOOL_FN),
                ("ud", c_void_p)]


class Limits(Structure):
    _fields_ = [("size", c_size_t), ("max_calls", c_int64), ("max_response_bytes", c_uint64),
                ("max_total_response_bytes", c_uint64), ("max_request_bytes", c_uint64),
                ("max_output_bytes", c_uint64)]


class PollFd(Structure):
    _fields_ = [("fd", c_int), ("events", c_short)]


WANT_FDS = 8
INT64_MAX = (1 << 63) - 1
POLLIN, POLLOUT = 0x001, 0x004
# enum mafh_progress
PROGRESS_DONE, PROGRESS_WAIT, PROGRESS_CALL = range(3)


class Want(Structure):
    _fields_ = [("nfds", c_int), ("fds", PollFd * WANT_FDS), ("until_ms", c_int64),
                ("stable", c_int)]


class DockerOptions(Structure):
    _fields_ = [("size", c_size_t), ("socket_path", c_char_p),
                ("request_timeout_ms", c_int64), ("host", c_char_p), ("context", c_char_p)]


STRUCTS = {"mafh_error": Error, "mafh_exec_result": ExecResult, "mafh_read_result": ReadResult,
           "mafh_stat": Stat, "mafh_call": Call, "mafh_op": Op, "mafh_op_result": OpResult,
           "mafh_event": Event, "mafh_run_options": RunOptions, "mafh_op_counts": OpCounts,
           "mafh_exit_record": ExitRecord, "mafh_run_result": RunResult, "mafh_param": Param,
           "mafh_tool": Tool, "mafh_limits": Limits, "mafh_pollfd": PollFd,
           "mafh_want": Want, "mafh_docker_options": DockerOptions}

_P = c_void_p
# name: (restype, argtypes)
PROTOTYPES = {
    "mafh_version": (c_char_p, []),
    "mafh_strerror": (c_char_p, [c_int]),
    "mafh_registry_new": (c_int, [POINTER(_P)]),
    "mafh_registry_free": (None, [_P]),
    "mafh_registry_add": (c_int, [_P, POINTER(Tool), POINTER(Error)]),
    "mafh_registry_set_limits": (c_int, [_P, POINTER(Limits), POINTER(Error)]),
    "mafh_registry_get_limits": (None, [_P, POINTER(Limits)]),
    "mafh_registry_set_pass_through": (c_int, [_P, _P, _P, POINTER(Error)]),
    "mafh_limits_init": (None, [POINTER(Limits)]),
    "mafh_registry_check_args": (c_int, [_P, c_char_p, c_char_p, c_size_t, POINTER(Error)]),
    "mafh_run_options_init": (None, [POINTER(RunOptions)]),
    "mafh_run_new_sansio": (c_int, [_P, c_uint, POINTER(RunOptions), POINTER(_P),
                                    POINTER(Error)]),
    "mafh_run_next_op": (c_int, [_P, c_int64, POINTER(POINTER(Op))]),
    "mafh_run_op_result": (c_int, [_P, c_int64, POINTER(OpResult)]),
    "mafh_op_result_init": (None, [POINTER(OpResult), c_int]),
    "mafh_run_result": (POINTER(RunResult), [_P]),
    "mafh_run_stop": (None, [_P]),
    "mafh_run_free": (None, [_P]),
    "mafh_transport_from_name": (c_int, [c_char_p, POINTER(c_int)]),
    "mafh_json_type_from_name": (c_int, [c_char_p, POINTER(c_int)]),
    "mafh_run_new": (c_int, [_P, _P, POINTER(RunOptions), POINTER(_P), POINTER(Error)]),
    "mafh_run_advance": (c_int, [_P, c_int64, POINTER(Want), POINTER(POINTER(Op)),
                                 POINTER(Error)]),
    "mafh_task_new": (c_int, [_P, POINTER(_P), POINTER(Op), c_int64, POINTER(_P),
                              POINTER(Error)]),
    "mafh_task_advance": (c_int, [_P, c_int64, POINTER(Want), POINTER(POINTER(OpResult))]),
    "mafh_task_free": (None, [_P]),
    "mafh_backend_state_free": (None, [_P, _P]),
    "mafh_backend_local_new": (c_int, [c_char_p, POINTER(_P)]),
    "mafh_backend_local_enter_new": (c_int, [c_char_p, c_int, POINTER(_P), POINTER(Error)]),
    "mafh_docker_options_init": (None, [POINTER(DockerOptions)]),
    "mafh_backend_docker_new": (c_int, [c_char_p, c_char_p, POINTER(DockerOptions),
                                        POINTER(_P), POINTER(Error)]),
    "mafh_backend_docker_requests": (c_int64, [_P]),
    "mafh_backend_docker_mkdtemp": (c_int, [_P, c_char_p, POINTER(Error)]),
    "mafh_backend_free": (None, [_P]),
    "mafh_backend_caps": (c_uint, [_P]),
}


def _candidates() -> List[str]:
    """Where libmafhost is looked for, in order: $MAFHOST_LIBRARY, the copy installed in
    this package, the source tree's build (an editable install: host/python/mafhost beside
    build/), then the dynamic loader's search (make install puts it there)."""
    env = os.environ.get("MAFHOST_LIBRARY")
    if env:
        return [env]
    pkg = os.path.dirname(os.path.abspath(__file__))
    here = [os.path.join(pkg, "_lib", SONAME),
            os.path.join(pkg, os.pardir, os.pardir, os.pardir, "build", SONAME)]
    found = [os.path.normpath(p) for p in here if os.path.exists(p)]
    return found + [SONAME, ctypes.util.find_library("mafhost") or "libmafhost.so"]


class Library:
    """libmafhost, loaded. Every function of PROTOTYPES is an attribute, without its mafh_
    prefix (lib.run_advance is mafh_run_advance). close() unloads it (dlclose) once no run
    uses it; a Library closed is not used again."""

    path: str
    library_version: str

    def __init__(self, path: Optional[str] = None) -> None:
        tried = []
        dll: Optional[ctypes.CDLL] = None
        cand = ""
        for cand in ([path] if path else _candidates()):
            try:
                dll = ctypes.CDLL(cand)
                break
            except OSError as e:
                tried.append(f"{cand} ({e})")
        if dll is None:
            raise LibraryError("cannot load libmafhost: tried " + "; ".join(tried) +
                               " (build it with make, install it with make install, or name "
                               "it with MAFHOST_LIBRARY)")
        self._dll: Optional[ctypes.CDLL] = dll
        self.path = path or cand
        self._users = 0
        self._lock = threading.Lock()
        self._on_close: List[Callable[[], None]] = []
        self._fns: Dict[str, Any] = {}
        for name, (res, args) in PROTOTYPES.items():
            try:
                fn = getattr(dll, name)
            except AttributeError:
                self._unload()
                raise LibraryError(f"{self.path} is not libmafhost: it has no {name}") \
                    from None
            fn.restype, fn.argtypes = res, args
            self._fns[name[5:]] = fn
        self.library_version = self.version().decode()
        if self.library_version.split(".")[:2] != VERSION.split(".")[:2]:
            v = self.library_version
            self._unload()
            raise LibraryError(f"{self.path} is libmafhost {v}; this package needs "
                               f"{VERSION.rsplit('.', 1)[0]}.x")

    def __getattr__(self, name: str) -> Any:
        # The C functions: ctypes gives them no types of their own, so they are Any here;
        # PROTOTYPES says what each takes and returns.
        fns = self.__dict__.get("_fns")
        if fns is not None and name in fns:
            return fns[name]
        raise AttributeError(name)

    def strerror_text(self, code: int) -> str:
        text: bytes = self.strerror(code)
        return text.decode()

    def acquire(self) -> None:
        with self._lock:
            if self._dll is None:
                raise LibraryError("libmafhost was unloaded; load it again (mafhost.load)")
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1

    @property
    def loaded(self) -> bool:
        return self._dll is not None

    def on_close(self, fn: Callable[[], None]) -> None:
        """fn() is called once, when the library is closed, before it is unloaded (what was
        made with it, such as a backend's handle, is freed then)."""
        with self._lock:
            self._on_close.append(fn)

    def close(self) -> None:
        """Unloads the library: LibraryError while a run still uses it."""
        with self._lock:
            if self._dll is None:
                return
            if self._users:
                raise LibraryError(f"libmafhost is in use by {self._users} run(s); unload "
                                   "it once they have ended")
            hooks, self._on_close = self._on_close, []
        for fn in hooks:
            fn()
        with self._lock:
            if self._dll is not None:
                self._unload()

    def _unload(self) -> None:
        if self._dll is None:
            return
        handle = self._dll._handle
        self._fns = {}
        self._dll = None
        import _ctypes
        _ctypes.dlclose(handle)  # type: ignore[attr-defined]  # Linux's, not in typeshed


_default: Optional[Library] = None
_default_lock = threading.Lock()


def load(path: Optional[str] = None) -> Library:
    """The library runs use by default: loaded now (from path, or as _candidates says) if it
    is not yet. Returns it."""
    global _default
    with _default_lock:
        if _default is None or not _default.loaded:
            _default = Library(path)
        elif path and os.path.realpath(path) != os.path.realpath(_default.path):
            raise LibraryError(f"libmafhost is already loaded from {_default.path}; unload it "
                               "first")
        return _default


def unload() -> None:
    """Unloads the default library (LibraryError while a run uses it). A later run, or
    load(), loads it again."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None
