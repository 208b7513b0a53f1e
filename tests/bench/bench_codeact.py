"""make bench-codeact: what maf-sandbox-codeact's execute_code costs a host over
maf-sandbox-docker, maf-sandbox's own exec channel against maf-launch's, in one run.

The ways (ways(); each a backend as a host builds it and the image its programs run in, with
one SandboxRouter of its own, the router's defaults but for the isolation floor, the
backend's own, as tests/upstream-current/parity.py builds them):
- upstream: DockerSandboxBackend(DockerSandboxConfig()) and the exec channel it declares
  (ExecProgramChannel: maf-sandbox's shim and supervisor over `docker exec` and `docker cp`),
  in python-noshell with busybox's shell added (MAF_SHELL_IMAGE, tests/upstream/shell_image.py);
- maf-launch: with_maf_launch(DockerSandboxBackend(DockerSandboxConfig())), in
  maf-launch/python-noshell, which has no shell; the calls over the engine's stream.

The cases: one execute_code (make_codeact_tools over a registry of the four tools of
tests/demo's lookup, invoked as the agent framework invokes a tool: FunctionTool.invoke) whose
program makes 4 host-tool calls (the demo's four stages, for Nevada: state name -> state id ->
its one store -> that store's sales rows -> the one product's name), and one whose program
makes none (the same tool, the registry wired). Each call is on a conversation of its own, so
under the router's default cleanup (Cleanup.DISPOSE) every execute_code has its container
made, the channel's prepare, the program's run, and the container removed: what a host
running codeact gets by default. Then (--reuse-iterations) the same with the host's floor at
Cleanup.RECLAIM and one conversation a way: its container made once (by a call not counted)
and each call's directory reclaimed after it.

Each iteration runs each case each way, the ways' order alternated from one iteration to the
next so that drift hits both. Per execute_code:
- its wall time, FunctionTool.invoke's;
- sandbox operations: the calls made on the sandbox object the way's backend hands the router
  from acquire (for maf-launch, with_maf_launch's wrapper of maf-sandbox-docker's), to its
  methods of maf-sandbox's Sandbox protocol (SANDBOX_METHODS), by the channel and the router;
  counted by wrapping those methods on that object (its type, identity and behaviour are
  otherwise the same). Not counted: what the backend does inside acquire and dispose, and
  mafhost's engine operations behind maf-launch's channel; both show as engine requests;
- engine requests: every HTTP request that reaches the Docker engine, counted by a proxy
  this bench starts (a process of its own) on a unix socket in front of the engine's:
  DOCKER_HOST names it before either backend is made, and maf-sandbox-docker's docker CLI
  and libmafhost's Docker backend both take the engine from there. A `docker` command is
  several requests (its HEAD /_ping, then the command's: an exec is a create, a start and an
  inspect; `docker inspect NAME` tries each kind of object). The `docker` processes
  maf-sandbox-docker started are counted too. The proxy is in both ways' path alike; what it
  adds to a request is measured and printed;
- where the time goes: the backend's acquire (maf-sandbox-docker: the container made,
  started and checked), the channel's prepare and run, the router's reclaim, the backend's
  dispose, and the rest (the router's own work and codeact's), each timed around the call,
  with the engine requests made in each (by the proxy's clock, CLOCK_MONOTONIC, the same as
  this process's). For maf-launch's 4-call case, its prepare and run step by step.

Figures only: a verdict line a case at the end, upstream's p50 over maf-launch's with the
target beside it (4 host-tool calls: at least 20x; none: at least 1.0x), met or not met; a
target missed is no failure. The router's default cleanup first, then (with reuse) one
container reclaimed. An execute_code whose result is not the expected one fails the
bench (one of upstream's channel that says it could not run the program, which under load
happens when `docker pause` is refused, is run once more, and counted). Every container of
the run's scope is removed at the end. Runs in the Debian 13 root's /opt/maf-current
(tests/upstream/enter); make bench-codeact sets that up, and makes and removes the image with
a shell."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import functools
import importlib.metadata
import inspect
import json
import os
import posixpath
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

CASES = (0, 4)                          # host-tool calls an execute_code makes
# upstream's p50 / maf-launch's, at least, as the verdict writes it
TARGETS = {0: (1.0, "1.0x"), 4: (20.0, "20x")}
SANDBOX_METHODS = ("exec", "exec_bounded", "write_file", "read_file", "stat_file", "remove",
                   "reclaim", "reset", "list_dir", "run_code")
PHASES = ("acquire", "prepare", "run", "reclaim", "dispose", "rest")
MARK, PROBE = "maf-bench-mark", "maf-bench-probe"
ENGINE = "/var/run/docker.sock"


# ---- the engine's requests, counted ----------------------------------------------------------
class _Requests:
    """The requests in one client connection's bytes, as they pass: each reported once its
    head is in (an exec's create once its body is, with the command it names); a body stepped
    over by its Content-Length or its chunks; after a request that upgrades the connection (an
    exec's start, an attach) the rest is the stream's, not HTTP."""

    _CAPTURE = 64 * 1024

    def __init__(self, report: Callable[[str, str, str], None]) -> None:
        self.report = report
        self.buf = b""
        self.state = "head"
        self.left = 0
        self.upgrade = False
        self.pending: Optional[tuple[str, str]] = None    # an exec create, until its body is in
        self.body = b""

    def _done(self) -> None:
        if self.pending is not None:
            try:
                argv = json.loads(self.body).get("Cmd") or []
            except ValueError:
                argv = []
            self.report(*self.pending, command(argv))
            self.pending, self.body = None, b""
        self.state = "raw" if self.upgrade else "head"

    def feed(self, data: bytes) -> None:
        if self.state == "raw":
            return
        self.buf += data
        while self.buf or self.state == "head":
            if self.state == "head":
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4:]
                line, *lines = head.split("\r\n")
                method, path = (line.split(" ") + ["", ""])[:2]
                headers = {}
                for h in lines:
                    name, _, value = h.partition(":")
                    headers[name.strip().lower()] = value.strip().lower()
                self.upgrade = "upgrade" in headers and "upgrade" in headers.get("connection", "")
                length = int(headers.get("content-length", "0") or 0)
                if method == "POST" and path.split("?")[0].endswith("/exec") and \
                        0 < length <= self._CAPTURE:
                    self.pending = (method, path)
                else:
                    self.report(method, path, "")
                if "chunked" in headers.get("transfer-encoding", ""):
                    self.state = "size"
                elif length > 0:
                    self.state, self.left = "body", length
                else:
                    self._done()
            elif self.state in ("body", "chunk"):
                n = min(self.left, len(self.buf))
                if self.pending is not None:
                    self.body += self.buf[:n]
                self.buf, self.left = self.buf[n:], self.left - n
                if self.left:
                    return
                if self.state == "chunk":
                    self.state = "size"
                else:
                    self._done()
            elif self.state == "size":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(self.buf[:end].split(b";")[0], 16)
                self.buf = self.buf[end + 2:]
                self.state, self.left = ("trailer", 0) if size == 0 else ("chunk", size + 2)
            elif self.state == "trailer":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return
                line, self.buf = self.buf[:end], self.buf[end + 2:]
                if not line:
                    self._done()
            else:
                self.buf = b""
                return


def command(argv: list) -> str:
    """An exec's command, as the step lists name it: the program and its subcommand or
    first option (`maf-launch run`, `python3 -c`, `sh`)."""
    if not argv or not isinstance(argv[0], str):
        return "?"
    words = [posixpath.basename(argv[0])]
    if len(argv) > 1 and isinstance(argv[1], str) and len(argv[1]) <= 12 and \
            not argv[1].startswith("/"):
        words.append(argv[1])
    return " ".join(words)


def serve_proxy(listen: str, engine: str) -> None:
    """The engine's proxy (a process of its own): relays each connection made to listen to a
    connection of its own to engine, and prints a line a request: `req NS METHOD PATH
    [COMMAND]`, NS its CLOCK_MONOTONIC time; `mark N` for this bench's marks; nothing for
    its probes."""
    import socket

    lock = threading.Lock()

    def report(method: str, path: str, what: str) -> None:
        if PROBE in path:
            return
        found = re.search(MARK + r"=(\d+)", path)
        line = f"mark {found.group(1)}" if found else \
            f"req {time.monotonic_ns()} {method} {path.split('?')[0]} {what}".rstrip()
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def pump(src: Any, dst: Any, parse: Optional[_Requests]) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if parse is not None and parse.state != "raw":
                    try:
                        parse.feed(data)     # reported before the engine has the request
                    except ValueError:       # not HTTP as this reads it: relayed, not counted
                        parse.state = "raw"
                        parse.report("?", "/unreadable", "")
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def connection(client: Any) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(engine)
        except OSError:
            client.close()
            return
        back = threading.Thread(target=pump, args=(upstream, client, None), daemon=True)
        back.start()
        pump(client, upstream, _Requests(report))
        back.join()
        client.close()
        upstream.close()

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(listen)
    server.listen(256)
    print("ready", flush=True)
    while True:
        client, _ = server.accept()
        threading.Thread(target=connection, args=(client,), daemon=True).start()


@dataclass(frozen=True)
class Request:
    ns: int
    method: str
    path: str
    command: str = ""


class EngineProxy:
    """The proxy's process, and the requests it saw, between this bench's marks."""

    def __init__(self, engine: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="maf-bench-codeact-")
        self.socket = os.path.join(self.dir, "engine.sock")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--engine-proxy", self.socket, engine],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise SystemExit("bench-codeact: the engine's proxy did not start")
        self.seen: list[Request] = []
        self.marks: dict[int, list[Request]] = {}
        self.cond = threading.Condition()
        self.marked = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, _, rest = line.rstrip("\n").partition(" ")
            with self.cond:
                if kind == "mark":
                    self.marks[int(rest)] = self.seen
                    self.seen = []
                    self.cond.notify_all()
                elif kind == "req":
                    ns, method, path, *what = rest.split(" ", 3)
                    self.seen.append(Request(int(ns), method, path, " ".join(what)))

    async def mark(self) -> list[Request]:
        """The requests the engine was sent since the mark before."""
        self.marked += 1
        n = self.marked
        await ping(self.socket, f"{MARK}={n}")
        with self.cond:
            if not self.cond.wait_for(lambda: n in self.marks, timeout=30):
                raise RuntimeError("the engine's proxy lost a mark")
            return self.marks.pop(n)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


async def ping(socket_path: str, query: str) -> float:
    """One GET /_ping on a connection of its own: its seconds."""
    t0 = time.monotonic()
    reader, writer = await asyncio.open_unix_connection(socket_path)
    writer.write(f"GET /_ping?{query} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n"
                 .encode())
    await writer.drain()
    answer = await reader.read()
    writer.close()
    if not answer.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the engine at {socket_path} did not answer /_ping")
    return time.monotonic() - t0


async def proxy_cost(proxy: EngineProxy, engine: str, n: int = 40) -> tuple[float, float]:
    """The median /_ping straight to the engine and through the proxy, alternately."""
    direct, proxied = [], []
    for _ in range(n):
        direct.append(await ping(engine, PROBE))
        proxied.append(await ping(proxy.socket, PROBE))
    return statistics.median(direct), statistics.median(proxied)


def step(r: Request) -> Optional[str]:
    """What a request is, as a step of a phase: None for those that belong to the step before
    or after it (a CLI's /_ping, an exec's start and its inspect)."""
    path = re.sub(r"^/v1\.\d+", "", r.path)
    if path == "/_ping" or path.startswith("/exec/"):
        return None
    kind = re.sub(r"^/containers/[^/]+", "", path)
    named = {("POST", "/exec"): f"exec {r.command}", ("PUT", "/archive"): "write",
             ("GET", "/archive"): "read", ("HEAD", "/archive"): "stat",
             ("GET", "/json"): "inspect", ("DELETE", ""): "remove"}
    return named.get((r.method, kind), f"{r.method} {path}")


# ---- what one execute_code did ----------------------------------------------------------------
@dataclass
class Record:
    """One execute_code: its wall time and what it did, on the monotonic clock (ns)."""
    way: str
    calls: int
    seconds: float = 0.0
    ops: dict = field(default_factory=dict)                 # sandbox method -> count
    phases: list = field(default_factory=list)              # (phase, ns0, ns1)
    clis: list = field(default_factory=list)                # the docker commands, by kind
    requests: list = field(default_factory=list)            # Request
    start: int = 0
    end: int = 0
    text: str = ""
    retried: int = 0

    def phase_of(self, ns: int) -> str:
        for name, t0, t1 in self.phases:
            if t0 <= ns <= t1:
                return name
        return "rest"

    def spent(self) -> dict:
        """Seconds by phase, the rest being the wall time the phases leave."""
        spent = {p: 0.0 for p in PHASES}
        for name, t0, t1 in self.phases:
            spent[name] += (t1 - t0) / 1e9
        spent["rest"] = self.seconds - sum(spent[p] for p in PHASES if p != "rest")
        return spent

    def times(self) -> dict:
        """How many times each phase was entered."""
        return {p: sum(1 for name, _, _ in self.phases if name == p) for p in PHASES}

    def phase_requests(self) -> dict:
        counts = {p: 0 for p in PHASES}
        for r in self.requests:
            counts[self.phase_of(r.ns)] += 1
        return counts

    def steps(self, phase: str) -> list[tuple[str, float]]:
        """The steps of a phase (each entry of it), each with the ms until the next step or
        the phase's end."""
        out = []
        for name, t0, t1 in self.phases:
            if name != phase:
                continue
            marks = [(r.ns, step(r)) for r in self.requests if t0 <= r.ns <= t1]
            marks = [(ns, what) for ns, what in marks if what is not None]
            for i, (ns, what) in enumerate(marks):
                until = marks[i + 1][0] if i + 1 < len(marks) else t1
                out.append((what, (until - ns) / 1e6))
        return out


current: contextvars.ContextVar[Optional[Record]] = contextvars.ContextVar(
    "current", default=None)
inside: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("inside", default=None)


async def _in_phase(phase: str, call: Callable[[], Any]) -> Any:
    """call() timed as phase of the current record (not within another phase)."""
    rec = current.get()
    if rec is None or inside.get() is not None:
        return await call()
    token = inside.set(phase)
    t0 = time.monotonic_ns()
    try:
        return await call()
    finally:
        rec.phases.append((phase, t0, time.monotonic_ns()))
        inside.reset(token)


def _counted(name: str, method: Callable) -> Callable:
    """method, its calls counted; as a coroutine function of the same signature (a caller
    may look at either)."""
    @functools.wraps(method)
    async def counted(*a: Any, **kw: Any) -> Any:
        rec = current.get()
        if rec is not None:
            rec.ops[name] = rec.ops.get(name, 0) + 1
        if name == "reclaim":
            return await _in_phase("reclaim", lambda: method(*a, **kw))
        return await method(*a, **kw)
    return counted


def counted_sandbox(sandbox: Any) -> Any:
    """sandbox with its protocol's methods counted, set on the object itself (its type,
    identity and behaviour stay); the router's reclaim, outside every other phase, timed."""
    if getattr(sandbox, "_bench_counted", False):
        return sandbox
    for name in SANDBOX_METHODS:
        method = getattr(sandbox, name, None)
        if inspect.iscoroutinefunction(method):
            setattr(sandbox, name, _counted(name, method))
    sandbox._bench_counted = True
    return sandbox


def instrument_backend(backend: Any) -> Any:
    """backend with its acquire and dispose timed, and what acquire hands out counted (set on
    the object itself)."""
    acquire = backend.acquire

    @functools.wraps(acquire)
    async def acquired(*a: Any, **kw: Any) -> Any:
        return counted_sandbox(await _in_phase("acquire", lambda: acquire(*a, **kw)))
    backend.acquire = acquired
    for name in ("dispose", "dispose_scope"):
        method = getattr(backend, name, None)
        if inspect.iscoroutinefunction(method):
            setattr(backend, name, _timed("dispose", method))
    return backend


def _timed(phase: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    async def timed(*a: Any, **kw: Any) -> Any:
        return await _in_phase(phase, lambda: fn(*a, **kw))
    return timed


def instrument_channels(classes: list) -> None:
    """Each program channel class's prepare and run, timed."""
    for cls in classes:
        for name in ("prepare", "run"):
            setattr(cls, name, _timed(name, getattr(cls, name)))


def count_docker_commands() -> None:
    """Every `docker` process started through asyncio (maf-sandbox-docker's one seam), by its
    command."""
    real = asyncio.create_subprocess_exec

    async def counting(program: Any, *args: Any, **kw: Any) -> Any:
        rec = current.get()
        if rec is not None and Path(str(program)).name == "docker":
            words = [str(a) for a in args]
            while len(words) > 1 and words[0] == "--context":
                words = words[2:]
            kind = " ".join(words[:2]) if words and words[0] in ("container", "image") \
                else (words[0] if words else "?")
            rec.clis.append(kind)
        return await real(program, *args, **kw)
    asyncio.create_subprocess_exec = counting


# ---- the ways and the cases -------------------------------------------------------------------
@dataclass
class Way:
    """One way of serving execute_code: its name, the image its programs run in (None: the
    backend's own root), the backend a host builds for it (made once DOCKER_HOST names the
    proxy), and whether its sandboxes can be kept and reclaimed (else disposal only)."""
    name: str
    image: Optional[str]
    backend: Callable[[], Any]
    reclaims: bool = True


# maf-sandbox-bubblewrap's runtime root and records, where bwrap can run here (main).
BUBBLEWRAP: dict = {}


def ways() -> list[Way]:
    """The ways compared: the reference first, then maf-launch's, then maf-launch's on
    maf-sandbox-bubblewrap where it runs here (bubblewrap: the backend less its cgroup group
    where this machine cannot give one, as tests/upstream-current/bubblewrap.py says; it
    reclaims nothing, so it is measured under disposal only). The verdicts stay upstream's
    p50 over maf-launch's on maf-sandbox-docker."""
    from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

    from mafhost.maf_sandbox import with_maf_launch

    found = [
        Way("upstream", parity.IMAGES[parity.UPSTREAM],
            lambda: DockerSandboxBackend(DockerSandboxConfig())),
        Way("maf-launch", parity.IMAGES[parity.OURS],
            lambda: with_maf_launch(DockerSandboxBackend(DockerSandboxConfig()))),
    ]
    if BUBBLEWRAP:
        import bubblewrap

        found.append(Way("bubblewrap", None, lambda: with_maf_launch(bubblewrap.make(
            BUBBLEWRAP["root"], BUBBLEWRAP["state"] / uuid.uuid4().hex)), reclaims=False))
    return found


def lookup_registry() -> Any:
    """The four tools of tests/demo's lookup, over its data, as maf-sandbox host tools: the
    registry test_agent.py's conversation uses (agent.lookup; its log, a few tuples a call,
    is not read here)."""
    import agent

    return agent.lookup([], None)


PROGRAMS = {
    # tests/demo/program.py's four stages, for the state with one store and one product.
    4: ("from maf_host_tools import call\n"
        "state_id = call('state_id', state='Nevada')\n"
        "stores = call('stores_in_state', state_id=state_id)\n"
        "rows = [row for store in stores for row in call('sales_for_store', store_id=store)]\n"
        "names = [call('product_name', product_id=row['product_id']) for row in rows]\n"
        "print('Nevada', state_id, stores, names, sum(row['cents'] for row in rows))\n"),
    0: "print('Nevada', 32, [3201], ['?'], sum(range(10)))\n",
}
EXPECTED = {4: "Nevada 32 [3201] ['two-person tent'] 12999", 0: "Nevada 32 [3201] ['?'] 45"}


class Bench:
    """The ways' routers; each call on a conversation of its own under one scope, or with
    reuse one conversation a way."""

    def __init__(self, proxy: EngineProxy, reuse: bool) -> None:
        from maf_sandbox import Cleanup, Isolation, SandboxRouter

        self.proxy = proxy
        self.reuse = reuse
        self.scope = f"maf-bench-codeact-{uuid.uuid4().hex[:8]}"
        self.ways = [way for way in ways() if way.reclaims or not reuse]
        self.routers = {}
        for way in self.ways:
            floor = {"min_cleanup": Cleanup.RECLAIM} if reuse else {}
            self.routers[way.name] = SandboxRouter([instrument_backend(way.backend())],
                                                   min_isolation=Isolation.CONTAINER, **floor)
        self.registry = lookup_registry()
        self.threads: list[tuple[str, str]] = []
        self.outside = 0        # engine requests made between the calls

    async def execute(self, way: Way, calls: int) -> Record:
        from maf_sandbox import CallerContext
        from maf_sandbox_codeact import make_codeact_tools

        thread = f"{way.name}-{'reuse' if self.reuse else len(self.threads)}"
        if (way.name, thread) not in self.threads:
            self.threads.append((way.name, thread))
        context = CallerContext(current_scope=lambda: self.scope,
                                current_thread_id=lambda: thread, list_files=parity._no_files)
        (tool,) = make_codeact_tools(self.routers[way.name], "bench", context,
                                     host_tools=self.registry, image=way.image)
        rec = Record(way.name, calls)
        self.outside += len(await self.proxy.mark())
        token = current.set(rec)
        try:
            rec.start = time.monotonic_ns()
            items = await tool.invoke(arguments={"code": PROGRAMS[calls]})
            rec.end = time.monotonic_ns()
        finally:
            current.reset(token)
        rec.seconds = (rec.end - rec.start) / 1e9
        rec.requests = await self.proxy.mark()
        rec.text = "\n".join(c.text or "" for c in items)
        return rec

    async def one(self, way: Way, calls: int) -> Record:
        """One execute_code, checked; once more where upstream's channel could not run it."""
        rec = await self.execute(way, calls)
        if way.name == "upstream" and parity.COULD_NOT_RUN in rec.text:
            rec = await self.execute(way, calls)
            rec.retried = 1
        if "Result: ok" not in rec.text or EXPECTED[calls] not in rec.text:
            raise SystemExit(f"bench-codeact: {way.name}, {calls} host-tool calls: "
                             "execute_code did not give the expected result:\n"
                             f"{rec.text[-3000:]}")
        return rec

    async def close(self) -> None:
        """Disposes of every conversation's sandbox, then removes whatever of the scope is
        still there."""
        for way, thread in self.threads:
            with contextlib.suppress(Exception):
                await self.routers[way].dispose_scope(self.scope, thread)
        left = docker("ps", "-aq", "--filter", f"label=maf-sandbox.scope={self.scope}").split()
        if left:
            docker("rm", "-f", *left)
        with contextlib.suppress(Exception):
            await self.proxy.mark()     # the disposals' requests: not between two calls


def docker(*argv: str) -> str:
    """A docker command of this bench's own, straight to the engine (not counted)."""
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    return subprocess.run(["docker", *argv], capture_output=True, text=True, env=env,
                          timeout=120).stdout.strip()


# ---- the run ----------------------------------------------------------------------------------
def pct(values: list, q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


async def measure(bench: Bench, iterations: int, label: str) -> dict:
    """{(calls, way): [Record]}, each way's order alternated from one iteration to the next."""
    records: dict = {(calls, way.name): [] for calls in CASES for way in bench.ways}
    # One call a way first, not counted: the first of a process imports and binds what later
    # ones find ready (and, with reuse, makes the way's container).
    for way in bench.ways:
        await bench.one(way, 0)
    for i in range(iterations):
        order = bench.ways if i % 2 == 0 else bench.ways[::-1]
        for calls in CASES:
            for way in order:
                records[calls, way.name].append(await bench.one(way, calls))
        print(f"bench-codeact: {label}: iteration {i + 1} of {iterations}", file=sys.stderr,
              flush=True)
    return records


def table(records: dict, ws: list[Way]) -> list[str]:
    out = [f"  {'host-tool calls':<17}{'way':<12}{'p50 s':>8}{'p90 s':>8}{'sandbox ops':>13}"
           f"{'engine reqs':>13}{'docker cmds':>13}"]
    for calls in CASES:
        for way in ws:
            rs = records[calls, way.name]
            secs = [r.seconds for r in rs]
            out.append(f"  {calls:<17}{way.name:<12}{statistics.median(secs):>8.2f}"
                       f"{pct(secs, 0.9):>8.2f}"
                       f"{statistics.mean(sum(r.ops.values()) for r in rs):>13.1f}"
                       f"{statistics.mean(len(r.requests) for r in rs):>13.1f}"
                       f"{statistics.mean(len(r.clis) for r in rs):>13.1f}")
    return out


def by_kind(counts: list[dict], rs: list) -> str:
    names = sorted({k for c in counts for k in c}, key=lambda k: -sum(c.get(k, 0)
                                                                     for c in counts))
    return ", ".join(f"{k} {sum(c.get(k, 0) for c in counts) / len(rs):.1f}"
                     for k in names) or "none"


def detail(records: dict, ws: list[Way]) -> list[str]:
    out = ["  sandbox operations a call, by method (mean):"]
    for calls in CASES:
        for way in ws:
            rs = records[calls, way.name]
            out.append(f"    {calls} calls, {way.name}: {by_kind([r.ops for r in rs], rs)}")
    out.append("  where the time goes, a call: each phase's median s (times entered; engine "
               "requests, mean)")
    for calls in CASES:
        for way in ws:
            rs = records[calls, way.name]
            spent = [r.spent() for r in rs]
            times = [r.times() for r in rs]
            reqs = [r.phase_requests() for r in rs]
            cells = []
            for p in PHASES:
                n = statistics.mean(t[p] for t in times)
                if p != "rest" and n == 0:
                    continue
                entered = "" if p == "rest" else f"x{n:g}; "
                cells.append(f"{p} {statistics.median(s[p] for s in spent):.3f} "
                             f"({entered}{statistics.mean(q[p] for q in reqs):.1f})")
            out.append(f"    {calls} calls, {way.name}: " + ", ".join(cells))
    return out


def engine_detail(records: dict, ws: list[Way]) -> list[str]:
    out = []
    for way in ws:
        rs = records[4, way.name]
        clis = [{k: r.clis.count(k) for k in set(r.clis)} for r in rs]
        out.append(f"  docker commands a call, 4 calls, {way.name}: {by_kind(clis, rs)}")
    return out


def own_part(records: dict, ws: list[Way]) -> list[str]:
    """maf-launch's prepare and run, step by step, in its 4-call execute_code nearest the
    median: each step with the ms until the next (an exec: its create, start and inspect)."""
    rs = records[4, ws[1].name]
    median = statistics.median(r.seconds for r in rs)
    rec = min(rs, key=lambda r: abs(r.seconds - median))
    spent = rec.spent()
    out = [f"  {ws[1].name}'s prepare and run, step by step (4 calls, the call nearest the "
           f"median, {rec.seconds:.2f} s; ms until the next step):"]
    for phase in ("prepare", "run"):
        steps = rec.steps(phase)
        out.append(f"    {phase} {spent[phase] * 1000:.0f} ms, {len(steps)} steps: " +
                   ", ".join(f"{what} {ms:.0f}" for what, ms in steps))
    return out


def verdicts(records: dict, ws: list[Way], cleanup: str = "") -> list[str]:
    """A verdict line a case; cleanup names the cleanup where it is not the router's
    default."""
    ref, ours = ws[0].name, ws[1].name
    out = []
    for calls in CASES:
        up = statistics.median(r.seconds for r in records[calls, ref])
        mine = statistics.median(r.seconds for r in records[calls, ours])
        ratio = up / mine
        target, written = TARGETS[calls]
        how = "faster" if ratio >= 1 else "(maf-launch slower)"
        out.append(f"verdict{cleanup}: {calls} host-tool calls: {ratio:.1f}x {how} (target >= "
                   f"{written}): {'met' if ratio >= target else 'not met'}")
    return out


def where(way: Way) -> str:
    """Where a way with no image runs its programs."""
    return (f"maf-sandbox-bubblewrap {importlib.metadata.version('maf-sandbox-bubblewrap')}'s "
            f"sandbox over this Debian 13 root's /usr ({BUBBLEWRAP.get('how', '')})")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


async def main(a: argparse.Namespace) -> None:
    for way, image in parity.IMAGES.items():
        if not parity._image_there(image):
            raise SystemExit(f"bench-codeact: the image {image} ({way}) is not built")
    proxy = EngineProxy(a.engine)
    os.environ["DOCKER_HOST"] = f"unix://{proxy.socket}"
    count_docker_commands()
    from maf_sandbox._program import ExecProgramChannel

    from mafhost.maf_sandbox.channel import MafLaunchChannel
    instrument_channels([ExecProgramChannel, MafLaunchChannel])
    started, load = time.monotonic(), loadavg()
    results: dict = {}
    measured: dict = {}
    bench: Optional[Bench] = None
    outside = 0
    try:
        direct, proxied = await proxy_cost(proxy, a.engine)
        bench = Bench(proxy, reuse=False)
        measured["dispose"] = bench.ways
        results["dispose"] = await measure(bench, a.iterations, "a container a call")
        if a.reuse_iterations:
            outside += bench.outside
            await bench.close()
            bench = Bench(proxy, reuse=True)
            measured["reuse"] = bench.ways
            results["reuse"] = await measure(bench, a.reuse_iterations,
                                             "one container a way")
        outside += bench.outside
    finally:
        if bench is not None:
            await bench.close()
        proxy.close()
    ws = measured["dispose"]
    version = importlib.metadata.version
    engine = docker("version", "-f", "{{.Server.Version}}")
    print(f"bench-codeact: maf-sandbox-codeact {version('maf-sandbox-codeact')}'s "
          f"execute_code over maf-sandbox-docker {version('maf-sandbox-docker')} (maf-sandbox "
          f"{version('maf-sandbox')}, Docker Engine {engine}"
          f"); {', '.join(f'{w.name} in {w.image or where(w)}' for w in ws)}; the ways' order "
          f"alternated "
          f"each iteration; {time.monotonic() - started:.0f} s, load {load} at the start, "
          f"{loadavg()} at the end")
    print(f"the engine's proxy (in every way's path): a /_ping {direct * 1000:.2f} ms straight "
          f"to the engine, {proxied * 1000:.2f} ms through it (medians of 40)")
    print(f"\na container a call (the router's default cleanup, Cleanup.DISPOSE; a conversation "
          f"a call), {a.iterations} calls a case and way:")
    lines = table(results["dispose"], ws) + detail(results["dispose"], ws)
    lines += engine_detail(results["dispose"], ws) + own_part(results["dispose"], ws)
    if "reuse" in results:
        lines += ["", f"one container a way, each call's directory reclaimed (Cleanup.RECLAIM; "
                  f"the container made by a call not counted), {a.reuse_iterations} calls a "
                  f"case and way:"]
        lines += table(results["reuse"], measured["reuse"])
        lines += detail(results["reuse"], measured["reuse"])
        lines += [f"  ({w.name}: not measured so: its backend reclaims nothing, disposal only)"
                  for w in ws if w.name not in {v.name for v in measured["reuse"]}]
    retried = sum(r.retried for rs in results.values() for v in rs.values() for r in v)
    if retried:
        lines.append(f"upstream's channel could not run the program {retried} time(s) (`docker "
                     "pause` refused under load); each such call was made once more")
    if outside:
        lines.append(f"engine requests between the calls (none of the figures): {outside}")
    print("\n".join(lines))
    print("\n".join(verdicts(results["dispose"], ws)))
    if "reuse" in results:
        print("\n".join(verdicts(results["reuse"], measured["reuse"],
                                 ", one container reclaimed")))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--engine-proxy":
        serve_proxy(sys.argv[2], sys.argv[3])
    warnings.simplefilter("ignore")     # maf-sandbox's packages say they are experimental
    sys.path.insert(0, str(ROOT / "tests" / "upstream-current"))
    import conftest  # noqa: E402,F401  (mafhost and this build's library on the path)
    import parity  # noqa: E402

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=6,
                   help="execute_code calls a case and way, a container each (default 6)")
    p.add_argument("--reuse-iterations", type=int, default=3,
                   help="the same with one container a way, reclaimed (default 3; 0: not run)")
    p.add_argument("--engine", default=ENGINE, help="the engine's socket (default %(default)s)")
    args = p.parse_args()
    if args.iterations < 1 or args.reuse_iterations < 0:
        p.error("--iterations takes 1 or more, --reuse-iterations 0 or more")
    import bubblewrap  # noqa: E402
    why = bubblewrap.why_not_here()
    if why:
        print(f"bench-codeact: maf-launch on maf-sandbox-bubblewrap not measured: {why}",
              file=sys.stderr)
        asyncio.run(main(args))
    else:
        # The channel puts this build's launcher in the sandbox: its runtime has none.
        os.environ.setdefault("MAFHOST_LAUNCHER", str(conftest.BUILD / "maf-launch"))
        with bubblewrap.runtime() as root, tempfile.TemporaryDirectory() as state:
            BUBBLEWRAP.update(root=root, state=Path(state), how=(
                "the backend less its cgroup group: none can be given here"
                if not os.environ.get("MAF_BWRAP_CGROUP_ROOT") else "its cgroup group "
                "delegated"))
            asyncio.run(main(args))
