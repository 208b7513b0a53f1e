"""DockerSandbox: the sandbox surface in a running container, as libmafhost's Docker backend
(the Docker Engine API, HTTP through libcurl and tar through libarchive, all in the library),
driven from the running event loop with no thread per waiting op. Two steps are one blocking
call each in the library and run on the loop's default executor: making the backend (which
asks the engine about the container) and mkdtemp (a run's directory, made before the run).

What each operation asks of the engine, its bounds and its sentences are the library's
(mafhost.h, mafh_backend_docker_new): engine errors are BackendError (an OSError) with one
sentence holding the engine's own message and a code from its HTTP status (404 -ENOENT, 400
-EINVAL, 401 and 403 -EACCES, others -EIO); a request with no answer in time is
-ETIMEDOUT, an answer that cannot be read -EPROTO. A bad argument (a path, a container name,
DOCKER_HOST) is ConfigError."""
from __future__ import annotations

import ctypes
import errno
import os
from typing import Optional

from . import _abi
from ._native import NativeBackend, error_from
from .errors import ConfigError
from .local import NativeSandbox

DEFAULT_SOCKET = "/var/run/docker.sock"
DEFAULT_LAUNCHER = "/usr/local/bin/maf-launch"
REQUEST_TIMEOUT = 120.0     # seconds a request to the engine may take, by default


class DockerSandbox(NativeSandbox):
    """The sandbox surface (mafhost.sandbox) in a running container: libmafhost's Docker
    backend.

    container: a name or id. socket_path: the engine's unix socket. host: where the engine
    is, as DOCKER_HOST says it (unix:///PATH, tcp://HOST:PORT with TLS as DOCKER_TLS_VERIFY,
    DOCKER_TLS and DOCKER_CERT_PATH say, ssh://[USER@]HOST[:PORT]). context: a docker
    context's name. All None: the library's choice, as the docker CLI's (DOCKER_HOST, else
    DOCKER_CONTEXT or the CLI's current context, else /var/run/docker.sock), made when the
    engine is first asked.
    launcher_path: maf-launch in the container. request_timeout: the seconds one request to
    the engine may take (an exec's output and a stream excepted; default REQUEST_TIMEOUT).
    library: the mafhost.Library to use.
    requests: the HTTP requests made to the engine so far, failed ones included (an exec is
    three or more, a file operation one, a stat of an absent path two). check() asks the
    engine about the container (as `async with` does, and the first operation): the engine
    unreachable, no such container or one not running is BackendError.

    exec runs an argv as the exec's Cmd (argv[0] looked up through the container's PATH,
    never a shell; a str goes through /bin/sh -c), in working_directory; a command the
    engine cannot start is BackendError (-EIO) with the engine's reason; at the timeout what
    came so far with exit_code -1 (the engine cannot end an exec: the command may still run).
    write_file makes missing parents and refuses to replace a directory; it is not atomic.
    read_file and stat_file never follow a last symlink."""

    def __init__(self, container: str, *, socket_path: Optional[str] = None,
                 host: Optional[str] = None, context: Optional[str] = None,
                 launcher_path: str = DEFAULT_LAUNCHER,
                 request_timeout: Optional[float] = None,
                 library: Optional[_abi.Library] = None) -> None:
        if not isinstance(container, str) or not container or \
                len(container.encode()) > 256 or "\0" in container:
            raise ConfigError("the Docker backend needs a container's name or id (at most "
                              "256 bytes)", -errno.EINVAL)
        self.container = container
        self.socket_path = socket_path
        self.host = host
        self.context = context
        self.launcher_path = launcher_path
        self._failed_requests = 0
        self._closed_requests = 0
        name, launcher = container.encode(), launcher_path.encode()
        sock = os.fsencode(socket_path) if socket_path else None
        where = host.encode() if host else None
        ctx = context.encode() if context else None

        def make(lib: _abi.Library) -> ctypes.c_void_p:
            opts, h, err = _abi.DockerOptions(), ctypes.c_void_p(), _abi.Error()
            lib.docker_options_init(ctypes.byref(opts))
            opts.socket_path = sock
            opts.host = where
            opts.context = ctx
            limit = REQUEST_TIMEOUT if request_timeout is None else request_timeout
            opts.request_timeout_ms = max(1, int(limit * 1000))
            rc = lib.backend_docker_new(name, launcher, ctypes.byref(opts), ctypes.byref(h),
                                        ctypes.byref(err))
            if rc < 0:
                # Making the backend asks the engine about the container: one request.
                self._failed_requests += 1
                raise error_from(rc, err.message.decode("utf-8", "replace") or
                                 lib.strerror_text(rc))
            return h
        super().__init__(NativeBackend(make, make_blocks=True), library)

    async def __aenter__(self) -> "DockerSandbox":
        await self.check()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def check(self) -> None:
        """Asks the engine about the container, once: BackendError when the engine cannot
        be reached ("cannot reach the Docker engine at SOCKET: ...", the connect's -errno),
        there is no such container (-ENOENT) or it is not running (-EIO)."""
        await self._native.ahandle(self._lib())

    async def close(self) -> None:
        """Frees the backend (its connections); streams still open keep theirs until
        closed. A later operation asks the engine about the container again."""
        await self.aclose()

    @property
    def requests(self) -> int:
        lib = self._library if self._library is not None else _abi.load()
        h = self._native._held(lib) if lib.loaded else None
        made = int(lib.backend_docker_requests(h)) if h is not None else 0
        return made + self._failed_requests + self._closed_requests

    async def aclose(self) -> None:
        lib = self._library if self._library is not None else _abi.load()
        h = self._native._held(lib) if lib.loaded else None
        if h is not None:
            self._closed_requests += lib.backend_docker_requests(h)
        await super().aclose()

    async def mkdtemp(self, prefix: str = "/tmp/mafhost-") -> str:
        """A fresh directory, prefix and six random letters or digits, made by the engine
        (mode 0700, owner 0:0; missing parents 0755): its path. BackendError (-EEXIST) when
        16 names were all taken. The library's call blocks (a stat or more, and a write):
        it runs on the loop's default executor."""
        import asyncio
        lib = self._lib()
        h = await self._native.ahandle(lib)
        tmpl = ctypes.create_string_buffer(os.fsencode(prefix + "XXXXXX"))
        err = _abi.Error()
        lib.acquire()
        try:
            rc = await asyncio.get_running_loop().run_in_executor(
                None, lib.backend_docker_mkdtemp, h, tmpl, ctypes.byref(err))
        finally:
            lib.release()
        if rc < 0:
            raise error_from(rc, err.message.decode("utf-8", "replace") or
                             lib.strerror_text(rc))
        return os.fsdecode(tmpl.value)

