"""One host, many engines: one asyncio event loop in this process supervises
RUNS runs at once on each of three engines, this machine's dockerd over its unix socket, the
dockerd behind TLS of engines.py (tcp://127.0.0.1, a client certificate) and Podman's
Docker-compatible service, all gathered together; every run ends with its exit code 0,
every call is answered with its own answer, and the process's threads do not grow with the
runs (the package drives the library's Docker backend from the loop: no thread per waiting
run).

The runs are spread over CONTAINERS containers of maf-launch/python-noshell per engine
(several runs at once in one container, each in a run directory of its own), not one
container per run: this machine has 2 CPUs, and 300 containers started and stopped on three
engines would measure the engines' container start-up, not one loop serving many runs. The
image comes from `make images` on the local dockerd and is loaded into the other two with
`docker save | docker load`; every container the test runs and every image it loads is
removed at the end, on failure too.

Wall time and the threads at their peak are printed, not asserted; what is asserted of the
threads is a bound that does not grow with the runs: the loop's default executor's workers,
which carry the Docker backend's blocking calls (making it, which asks the engine about its
container, and mkdtemp, each run's run directory), and no other thread, the library's
included. MAF_MANY_RUNS sets the runs per engine (default 100). Skipped where an engine
cannot be reached or started, unless REQUIRE_DOCKER=1: then it fails."""
import asyncio
import hashlib
import os
import resource
import shutil
import subprocess
import threading
import time
import uuid

import pytest

import engines as engines_py  # engines.py (the name engines is the fixture's own below)
import mafhost
from conftest import BUILD, REQUIRE

RUNS = int(os.environ.get("MAF_MANY_RUNS", "100"))
CONTAINERS = 5
CALLS = 3
IMAGE = f"{os.environ.get('MAF_IMAGE_PREFIX', 'maf-launch')}/python-noshell"
IN_IMAGE_LAUNCHER = "/usr/local/bin/maf-launch"
LOCAL = "unix:///var/run/docker.sock"
PREFIX = "maf-many-test-"
RUN_TIMEOUT = 600       # seconds a run may take: its deadline, never a pass condition
# Seconds one `maf-launch run`, stop or reclaim exec may take. The library's 30 s is short
# for 3 x RUNS execs started at once on this machine's 2 CPUs (each a runc exec in its
# container): one launch past 30 s under that load would fail a run whose deadline is
# RUN_TIMEOUT. A bound, never a pass condition.
EXEC_TIMEOUT = 300
# Seconds the ending (stop, the record, the output, the reclaim) may take in all: the
# library's 15 gives stop 11 s, and under this load a stop of a run that had ended was seen
# past that, its output lost. Raised with EXEC_TIMEOUT, as its documentation says to; a
# bound, never a pass condition.
ENDING_TIMEOUT = 300
SAFETY = 1200           # the whole loop's safety net

# Each run prints the answers it got, one a line; each answer names its engine, its run
# and its call, so that an answer handed to another run or call is seen.
PROGRAM = '''
from maf_host_tools import call
for k in range({calls}):
    print(call("stamp", engine={engine!r}, run={run}, k=k))
'''


def answer(engine, run, k):
    return f"{engine} run {run} call {k}: {run * CALLS + k}"


def cli_env(**more):
    """This process's environment without the docker CLI's own settings, and more."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}
    env.update(more)
    return env


def docker(env, *args, check=True, timeout=300, **kw):
    proc = subprocess.run(["docker", *args], env=env, capture_output=True, timeout=timeout,
                          **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} (DOCKER_HOST {env.get('DOCKER_HOST')}) "
                             f"exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace').strip()}")
    return proc


def threads():
    """The process's threads: threading's count and the kernel's."""
    with open("/proc/self/status") as f:
        kernel = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return threading.active_count(), kernel


@pytest.fixture(scope="module")
def local():
    """This machine's dockerd with the image of this build's launcher: the docker CLI's
    environment for it."""
    env = cli_env(DOCKER_HOST=LOCAL)
    why = None
    if shutil.which("docker") is None:
        why = "no docker CLI (make setup installs it)"
    elif docker(env, "version", check=False, timeout=60).returncode != 0:
        why = f"the Docker engine at {LOCAL} is not reachable (make setup starts dockerd)"
    if why:
        if REQUIRE:
            pytest.fail(f"REQUIRE_DOCKER=1, but {why}", pytrace=False)
        pytest.skip(why)
    if docker(env, "image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail(f"the image {IMAGE} is not built (run make images)", pytrace=False)
    baked = engines_py.image_file(IMAGE, IN_IMAGE_LAUNCHER, env)
    if hashlib.sha256(baked).digest() != hashlib.sha256((BUILD / "maf-launch").read_bytes()) \
            .digest():
        pytest.fail(f"{IMAGE} holds another launcher than {BUILD}/maf-launch (run make images)",
                    pytrace=False)
    return env


@pytest.fixture
def fleet(local, tls, podman, monkeypatch):
    """CONTAINERS running containers on each engine: {engine: (its host for DockerSandbox,
    [container names])}. The TLS engine is reached by the library through this process's
    environment (DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, which only a tcp:// host takes),
    the others by unix:// hosts of their own; set-up goes through each engine's unix
    socket."""
    tls_host = tls["env"]["DOCKER_HOST"]
    engines = {"local": (LOCAL, local),
               "tls": (tls_host, cli_env(DOCKER_HOST=f"unix://{tls['sock']}")),
               "podman": (podman["env"]["DOCKER_HOST"],
                          cli_env(DOCKER_HOST=podman["env"]["DOCKER_HOST"],
                                  CONTAINERS_CONF=podman["env"]["CONTAINERS_CONF"]))}
    tag = uuid.uuid4().hex[:8]
    made = {name: [] for name in engines}
    loaded = []
    try:
        for name in ("tls", "podman"):
            engines_py.copy_image(IMAGE, local, engines[name][1])
            loaded.append(name)
        for name, (_, env) in engines.items():
            for i in range(CONTAINERS):
                c = f"{PREFIX}{tag}-{name}-{i}"
                made[name].append(c)
                docker(env, "run", "-d", "--name", c, "--network", "none", IMAGE)
        monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
        monkeypatch.setenv("DOCKER_CERT_PATH", tls["env"]["DOCKER_CERT_PATH"])
        monkeypatch.delenv("DOCKER_TLS", raising=False)
        yield {name: (host, made[name]) for name, (host, _) in engines.items()}
    finally:
        for name, (_, env) in engines.items():
            if made[name]:
                docker(env, "rm", "-f", *made[name], check=False)
        for name in loaded:
            docker(engines[name][1], "rmi", IMAGE, check=False)


def test_one_loop_supervises_runs_on_three_engines_at_once(fleet, capsys):
    mafhost.load(str(BUILD / f"libmafhost.so.{mafhost.__version__}"))
    # Each run's stream is a connection of its own to its engine, and a few more come and
    # go under it: room for all of them at once.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fds = 16 * 3 * RUNS
    if hard != resource.RLIM_INFINITY and hard < fds:
        pytest.skip(f"RLIMIT_NOFILE's hard limit ({hard}) is below {fds}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, fds), hard))
    served = []

    async def stamp(engine: str, run: int, k: int) -> str:
        # On the loop (a coroutine): a plain function would take a worker thread a call.
        served.append((engine, run, k))
        await asyncio.sleep(0)
        return answer(engine, run, k)

    peak = {"py": 0, "kernel": 0}

    async def sample():
        while True:
            py, kernel = threads()
            peak["py"], peak["kernel"] = max(peak["py"], py), max(peak["kernel"], kernel)
            await asyncio.sleep(0.05)

    async def main():
        before = threads()
        watch = asyncio.ensure_future(sample())
        sandboxes = {name: [mafhost.DockerSandbox(c, host=host) for c in names]
                     for name, (host, names) in fleet.items()}
        everyone = [sb for sbs in sandboxes.values() for sb in sbs]
        try:
            # Each engine asked about each container first: what fails here is the set-up.
            await asyncio.gather(*(sb.check() for sb in everyone))
            start = time.monotonic()
            runs = [(name, i) for name in sandboxes for i in range(RUNS)]
            try:
                results = await asyncio.gather(*(
                    mafhost.run(sandboxes[name][i % CONTAINERS],
                                PROGRAM.format(calls=CALLS, engine=name, run=i),
                                tools=[stamp], timeout=RUN_TIMEOUT,
                                exec_timeout=EXEC_TIMEOUT, ending_timeout=ENDING_TIMEOUT,
                                check=False)
                    for name, i in runs), return_exceptions=True)
            finally:
                wall = time.monotonic() - start
            requests = {name: sum(sb.requests for sb in sbs)
                        for name, sbs in sandboxes.items()}
            return runs, results, before, wall, requests
        finally:
            watch.cancel()
            await asyncio.gather(*(sb.close() for sb in everyone), return_exceptions=True)

    try:
        runs, results, before, wall, requests = asyncio.run(asyncio.wait_for(main(), SAFETY))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    bad = []
    for (name, i), r in zip(runs, results):
        want_out = "".join(answer(name, i, k) + "\n" for k in range(CALLS))
        if isinstance(r, BaseException):
            bad.append(f"{name} run {i}: {type(r).__name__}: {r}")
        elif (r.status, r.exit_code, r.calls, r.refusals, r.output) != \
                ("exited", 0, CALLS, 0, want_out):
            bad.append(f"{name} run {i}: {r.status} (exit {r.exit_code}), {r.calls} calls, "
                       f"{r.refusals} refused: {r.error}; on the way: {r.errors} (transport "
                       f"{r.transport}) output {r.output!r}")
    answered = sum(r.calls for r in results if not isinstance(r, BaseException))
    with capsys.disabled():
        print(f"\n[many engines] {RUNS} runs on each of {', '.join(fleet)} "
              f"({CONTAINERS} containers each), {CALLS} calls a run: {answered} of "
              f"{3 * RUNS * CALLS} calls answered, {len(bad)} runs failed, in {wall:.1f} s; "
              f"threads {before[0]} (kernel {before[1]}) before, at most {peak['py']} "
              f"(kernel {peak['kernel']}) while the sandboxes were made and the runs went "
              f"on; engine requests {requests}")
    assert not bad, f"{len(bad)} of {len(runs)} runs failed:\n" + "\n".join(bad[:20])
    assert all(r.transport == "stream" and r.verified for r in results)
    # Each call reached its tool once, with its own arguments, and nothing else did.
    assert sorted(served) == sorted((name, i, k) for name, i in runs for k in range(CALLS))
    # asyncio's default executor: at most min(32, CPUs + 4) workers, whatever the runs.
    workers = min(32, (os.cpu_count() or 1) + 4)
    assert peak["py"] <= before[0] + workers, (before, peak)
    assert peak["kernel"] <= before[1] + workers, (before, peak)
