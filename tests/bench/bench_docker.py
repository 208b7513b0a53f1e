#!/usr/bin/env python3
"""make bench-docker: host-tool calls over the Docker engine, libmafhost's Docker backend
against the way maf-sandbox does it, measured in the same run on the same engine.

1. The engine's operations, through libmafhost's Docker backend (tests/docker/docker_ops,
   timed here around each request, the requests of each kind interleaved), in a
   python-noshell container: exec of `maf-launch --version` (the trivial command of the
   target) and of `maf-launch wait` for a request already there (the exec the wait
   transport makes for a call), archive write of a small file (a new one each time),
   archive read of a small file that exists and of one that does not, and stat (the
   archive's HEAD) of each. Median and p90 of --engine-ops of each, and the engine requests
   each one is.
2. Ours: `maf-host run --backend docker:C --json --transport files`, then `wait`, `relay`
   and `stream`, in a python-noshell container, the `echo` tool served by a tools server
   (bench_tools_server.py). The program (bench_docker_program.py) makes --calls
   sequential calls through the generated shim, over the launcher's channel, and times each.
3. The baseline: the same program and shim in a container of python-noshell with a shell
   added (Debian's busybox-static, linked as sh, mkdir, mv, printf, setsid, kill and rm, and
   coreutils' nohup: what upstream's launcher and its host need), launched with upstream's
   shell launcher (tests/integration/reference/run_program.sh), the shim then on upstream's
   files (its response polled every 0.05 s), served by a replica of maf-sandbox's
   supervisor over `docker cp` and `docker exec` (bench_docker_upstream.py) polling every
   0.2 s (its default) and every 10 ms: each tick stats the exit marker and the next
   request (and up to 3 more while they keep coming), then serves those found in id order
   (read, dispatch, write). --eager serves it with a variant instead (see there).
4. Over each engine (--engines): the engines tests/engines/engines.py starts on this
   machine's loopback, one after the other: a dockerd of its own over TCP with TLS, this
   machine's dockerd through `ssh HOST docker system dial-stdio`, and Podman's
   Docker-compatible service as root and rootless. Into each engine with storage of its
   own (TLS, Podman) python-noshell is copied (`docker save | docker load`), and the
   baseline's image built there. Over each: 1. again, ours with each transport and the baseline at
   --engine-polls (default 10 ms), all through that engine alone (the docker CLI, maf-host
   and docker_ops all given its DOCKER_HOST). The same target for each: ours' p50 against
   that engine's own median exec and write.
Per-call p50 and p90 are the program's own timings. Backend operations per call, for each
way: (the operations of the run of --calls calls - those of a run of the same program that
makes none) / --calls, both runs made here; the same for the engine requests of ours (the
docker commands of the baseline make requests that are not counted: each is one backend
operation). Ours count exec, read, write and stat (`ops_total`); the baseline counts each
`docker cp` and `docker exec`.

Figures only: the targets (ours: per-call p50 <= the median exec + the median write + 5 ms,
and at most half the backend operations per call of the 10 ms baseline) are printed beside
them, marked met or not met, and nothing fails on them. It exits non-zero only when the
bench could not run, with the reason. Every container, and the baseline's image, is made
here with a name of this run and removed at the end, on failure and Ctrl-C too. The images
are MAF_IMAGE_PREFIX's (default maf-launch), as `make images` built them; the bench checks
that python-noshell holds this build's launcher."""
import argparse
import contextlib
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench_docker_upstream import BaselineError, DockerCli, UpstreamRun
from host_run import run_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "upstream"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
import engines  # noqa: E402  (tests/engines: the engines the tests start)
import shell_image  # noqa: E402  (tests/upstream: the image upstream's launcher runs in)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAM = HERE / "bench_docker_program.py"
TOOLS_SERVER = HERE / "bench_tools_server.py"
REFERENCE = ROOT / "tests" / "integration" / "reference" / "run_program.sh"
IN_IMAGE_LAUNCHER = "/usr/local/bin/maf-launch"
NAME = f"maf-bench-docker-{uuid.uuid4().hex[:10]}"
TARGET_SLACK_MS = 5.0
TARGET_OPS_FACTOR = 2.0


class Failed(Exception):
    """The bench could not run; str() says why."""


def docker(*args, check=True, timeout=300, **kw):
    try:
        proc = subprocess.run(["docker", *map(str, args)], capture_output=True,
                              timeout=timeout, **kw)
    except FileNotFoundError:
        raise Failed("there is no docker client on this machine (make setup installs it)") \
            from None
    except subprocess.TimeoutExpired:
        raise Failed(f"docker {' '.join(map(str, args))} did not return within {timeout} s") \
            from None
    if check and proc.returncode != 0:
        raise Failed(f"docker {' '.join(map(str, args))} exited {proc.returncode}: "
                     f"{proc.stderr.decode(errors='replace').strip()}")
    return proc


class Made:
    """What this run made in the engine, removed by remove_all() whatever happened."""

    def __init__(self):
        self.containers = []
        self.images = []

    def container(self, image, role):
        name = f"{NAME}-{role}"
        self.containers.append(name)
        docker("run", "-d", "--name", name, "--network", "none", image)
        return name

    def remove_all(self):
        for name in self.containers:
            docker("rm", "-f", name, check=False, timeout=120)
        for tag in self.images:
            docker("rmi", "-f", tag, check=False, timeout=120)
        self.containers, self.images = [], []


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


# ---- 1. the engine's operations through libmafhost's Docker backend -------------------------
class Ops:
    """docker_ops (tests/docker/docker_ops.c): one operation a line, timed here."""

    def __init__(self, path):
        self.proc = subprocess.Popen([str(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)

    def __call__(self, op, **kw):
        line = (json.dumps({"op": op, **kw}) + "\n").encode()
        t = time.perf_counter_ns()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 300)
        if not ready:
            raise Failed(f"docker_ops did not answer {op} within 300 s")
        answer = self.proc.stdout.readline()
        ns = time.perf_counter_ns() - t
        if not answer:
            raise Failed(f"docker_ops ended at {op} (exit {self.proc.wait()})")
        r = json.loads(answer)
        if r["rc"] != 0:
            raise Failed(f"the Docker backend's {op} failed: {r['message']}")
        return r, ns

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


ENGINE_OPS = ("exec", "exec wait", "write", "read", "read absent", "stat", "stat absent")


def engine_medians(a, made, image):
    c = made.container(image, "engine")
    ops = Ops(Path(a.build) / "docker" / "docker_ops")
    try:
        ops("new", container=c)
        d = "/tmp/maf-bench-engine"
        body = json.dumps({"value": {"i": 1}}).encode().hex()
        request = json.dumps({"id": "0001", "name": "echo", "arguments": {"i": 0}}).encode()
        # The exec the wait transport makes for each call, when the request is already there.
        ops("write", path=f"{d}/run/host_tools/host_tool_calls/0001.request.json",
            hex=request.hex())
        wait = [IN_IMAGE_LAUNCHER, "wait", "--run-dir", f"{d}/run", "--next", "1",
                "--timeout-ms", "10000"]
        do = {
            "exec": lambda i: ops("exec", argv=[IN_IMAGE_LAUNCHER, "--version"],
                                  timeout_ms=60000, out_cap=4096),
            "exec wait": lambda i: ops("exec", argv=wait, timeout_ms=60000, out_cap=65536),
            "write": lambda i: ops("write", path=f"{d}/w-{i + 2}.json", hex=body),
            "read": lambda i: ops("read", path=f"{d}/w-0.json", cap=65536),
            "read absent": lambda i: ops("read", path=f"{d}/absent.json", cap=65536),
            "stat": lambda i: ops("stat", path=f"{d}/w-0.json"),
            "stat absent": lambda i: ops("stat", path=f"{d}/absent.json"),
        }
        expect = {
            "exec": lambda r: r["exit_code"] == 0 and
            bytes.fromhex(r["out"]).startswith(b"maf-launch "),
            "exec wait": lambda r: r["exit_code"] == 0 and
            bytes.fromhex(r["out"]).endswith(b"\n" + request),
            "write": lambda r: True,
            "read": lambda r: r["status"] == "ok" and bytes.fromhex(r["hex"]) ==
            bytes.fromhex(body),
            "read absent": lambda r: r["status"] == "absent",
            "stat": lambda r: r["exists"] and r["type"] == "regular",
            "stat absent": lambda r: not r["exists"],
        }
        ops("write", path=f"{d}/w-0.json", hex=body)  # what the reads and stats find
        samples = {k: [] for k in ENGINE_OPS}
        requests = {k: set() for k in ENGINE_OPS}
        for i in range(-1, a.engine_ops):  # -1: once each first, not timed
            for k in ENGINE_OPS:
                before = ops("requests")[0]["requests"]
                r, ns = do[k](i)
                after = ops("requests")[0]["requests"]
                if not expect[k](r):
                    raise Failed(f"the Docker backend's {k} gave {r}")
                if i >= 0:
                    samples[k].append(ns / 1e6)
                    requests[k].add(after - before)
    finally:
        ops.close()
    return {k: {"n": len(v), "median_ms": pct(v, 0.5), "p90_ms": pct(v, 0.9),
                "requests": sorted(requests[k])} for k, v in samples.items()}


# ---- 2. ours: maf-host run over the Docker backend ------------------------------------------
def ours(a, container, transport, calls):
    python = "/usr/bin/python3"
    argv = [str(Path(a.build) / "maf-host"), "run", "--json", "--backend",
            f"docker:{container}", "--transport", transport, "--max-calls",
            str(max(calls, 1)), "--timeout", "600", "--tools-server",
            f"{python} {TOOLS_SERVER}", "--tool", "echo", str(PROGRAM), "--", str(calls)]
    rep, inner = run_host(argv, 900)
    if not inner["channel"]:
        raise Failed(f"the program under maf-host ({transport}) did not take the channel")
    if rep["calls"] != calls:
        raise Failed(f"maf-host ({transport}) served {rep['calls']} calls of {calls}")
    ops = {k: rep["ops"][k] for k in ("exec", "read", "write", "stat")}
    return {"ops": ops, "ops_total": rep["ops_total"], "requests": rep["engine_requests"],
            "samples_ms": [ns / 1e6 for ns in inner["samples_ns"]], "wall_ms": rep["wall_ms"]}


# ---- 3. the baseline: maf-sandbox's way -----------------------------------------------------
def baseline_image(a, made, base):
    """FROM python-noshell, with busybox-static's applets and coreutils' nohup added
    (tests/upstream/shell_image.py)."""
    tag = f"{NAME}-baseline:latest"
    made.images.append(tag)
    try:
        return shell_image.build(tag, base)
    except shell_image.Failed as e:
        raise Failed(str(e)) from None


def baseline(a, container, poll, calls, shim):
    b = DockerCli(container)
    r = f"/tmp/maf-sandbox-{uuid.uuid4().hex[:12]}"
    run = UpstreamRun(b, r, poll, max(calls, 1), 600, eager=a.eager)
    try:
        # Upstream's launcher runs the program with no arguments: the count goes in its text.
        program = f"import sys; sys.argv[1:] = [{str(calls)!r}]\n".encode() + \
            PROGRAM.read_bytes()
        code, output = run.run(program, shim, REFERENCE.read_bytes())
    except BaselineError as e:
        raise Failed(f"the baseline (poll {poll} s): {e}") from None
    if code != 0:
        raise Failed(f"the baseline's program (poll {poll} s) exited {code}:\n"
                     f"{output[-3000:]}")
    inner = json.loads(output.strip().splitlines()[-1])
    if inner["channel"]:
        raise Failed("the program under the shell launcher took a channel")
    return {"ops": dict(b.ops), "ops_total": sum(b.ops.values()), "requests": None,
            "samples_ms": [ns / 1e6 for ns in inner["samples_ns"]], "ticks": run.ticks}


# ---- the whole ------------------------------------------------------------------------------
def check_image(a, tag):
    if docker("image", "inspect", tag, check=False).returncode != 0:
        raise Failed(f"the image {tag} is not built (make images builds it)")
    try:
        baked = engines.image_file(tag, IN_IMAGE_LAUNCHER)
    except RuntimeError as why:
        raise Failed(str(why)) from None
    built = (Path(a.build) / "maf-launch").read_bytes()
    if hashlib.sha256(baked).digest() != hashlib.sha256(built).digest():
        raise Failed(f"{tag} holds another launcher than {a.build}/maf-launch (make images)")


def per_call(zero, full, calls, key):
    if full[key] is None:
        return None
    return (full[key] - zero[key]) / calls


def measure(a, made, polls):
    prefix = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch")
    noshell = f"{prefix}/python-noshell"
    check_image(a, noshell)
    for p in ("maf-host", "maf-launch", "docker/docker_ops"):
        if not (Path(a.build) / p).exists():
            raise Failed(f"{a.build}/{p} is not built (make bench-docker builds it)")
    shim = subprocess.run([str(Path(a.build) / "maf-host"), "shim", "--tool", "echo"],
                          capture_output=True, timeout=60)
    if shim.returncode != 0:
        raise Failed(f"maf-host shim failed: {shim.stderr.decode(errors='replace').strip()}")
    server = docker("version", "-f", "{{.Server.Version}}").stdout.decode().strip()
    fig = {"machine": {"cpus": os.cpu_count(), "load_start": load(), "engine": server},
           "calls": a.calls, "rounds": a.rounds}
    fig["engine"] = engine_medians(a, made, noshell)
    base_tag = baseline_image(a, made, noshell)
    ours_c = made.container(noshell, "ours")
    base_c = made.container(base_tag, "baseline")
    ways = [("ours files", lambda n: ours(a, ours_c, "files", n)),
            ("ours wait", lambda n: ours(a, ours_c, "wait", n)),
            ("ours relay", lambda n: ours(a, ours_c, "relay", n)),
            ("ours stream", lambda n: ours(a, ours_c, "stream", n))]
    for poll in polls:
        label = f"baseline {poll * 1000:g} ms" if poll < 0.1 else f"baseline {poll:g} s"
        ways.append((label + (" eager" if a.eager else ""),
                     lambda n, poll=poll: baseline(a, base_c, poll, n, shim.stdout)))
    fig["ways"] = {}
    for _ in range(a.rounds):
        for name, how in ways:
            zero, full = how(0), how(a.calls)
            w = fig["ways"].setdefault(name, {"samples_ms": [], "ops": 0.0, "requests": 0.0,
                                              "by_kind": {}, "ticks": 0.0})
            w["samples_ms"] += full["samples_ms"]
            w["ops"] += per_call(zero, full, a.calls, "ops_total") / a.rounds
            rq = per_call(zero, full, a.calls, "requests")
            w["requests"] = None if rq is None else w["requests"] + rq / a.rounds
            for k in full["ops"]:
                w["by_kind"][k] = w["by_kind"].get(k, 0.0) + \
                    (full["ops"][k] - zero["ops"][k]) / a.calls / a.rounds
            if "ticks" in full:
                w["ticks"] += (full["ticks"] - zero["ticks"]) / a.calls / a.rounds
            else:
                w.pop("ticks", None)
    for w in fig["ways"].values():
        w["p50_ms"] = pct(w["samples_ms"], 0.5)
        w["p90_ms"] = pct(w["samples_ms"], 0.9)
    fig["machine"]["load_end"] = load()
    return fig


# ---- 4. over each engine --------------------------------------------------------------------
ENGINE_NAMES = {"here": "this machine's engine (as DOCKER_HOST)",
                "tls": "tcp:// with TLS (a dockerd of its own)",
                "ssh": "ssh:// dial-stdio (this dockerd)",
                "podman": "Podman as root (its compat API)",
                "podman-rootless": "Podman rootless (its compat API)"}


@contextlib.contextmanager
def environment(env):
    """os.environ is env inside: every docker command, maf-host and docker_ops started
    there reach its engine."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def over_engine(a, kind):
    """The figures over the engine of kind, started here and stopped after: the dict
    measure() gives, with "where" (its DOCKER_HOST), or {"skipped": why}."""
    why = engines.missing(kind)
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            raise Failed(f"REQUIRE_DOCKER=1, but the {kind} engine cannot be started: {why}")
        return {"skipped": why}
    print(f"  starting the {kind} engine ...", flush=True)
    prefix = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch")
    try:
        with engines.ENGINES[kind]() as e:
            if kind != "ssh":  # ssh reaches this machine's own engine
                try:
                    engines.copy_image(f"{prefix}/python-noshell", None, e["env"])
                except RuntimeError as why:
                    raise Failed(f"copying the image into the {kind} engine failed: "
                                 f"{why}") from None
            made = Made()
            with environment(e["env"]):
                try:
                    fig = measure(a, made, a.engine_polls)
                finally:
                    made.remove_all()
            fig["where"] = e["env"]["DOCKER_HOST"]
            return fig
    except RuntimeError as e:  # engines.py: the engine did not come up
        raise Failed(f"the {kind} engine did not start: {e}") from None


def report_engines(figs, a):
    print(f"per call over each engine: {a.calls} sequential calls of echo (p50 / p90 ms, "
          f"backend operations a call), each engine alone, one after the other; "
          f"exec and write: the engine's own medians through libmafhost's Docker backend")
    ways = []
    for f in figs.values():
        for w in f.get("ways", {}):
            if w not in ways:
                ways.append(w)
    print(f"  {'engine':<40} {'server':>15} {'exec':>6} {'write':>6}   " +
          "   ".join(f"{w:>17}" for w in ways))
    for kind, f in figs.items():
        label = ENGINE_NAMES.get(kind, kind)
        if "skipped" in f:
            print(f"  {label:<40} skipped: {f['skipped']}")
            continue
        e = f["engine"]
        cells = []
        for w in ways:
            x = f["ways"].get(w)
            cells.append(f"{'-':>17}" if x is None else
                         f"{x['p50_ms']:>6.1f}/{x['p90_ms']:>5.1f} {x['ops']:>4.2f}")
        print(f"  {label:<40} {f['machine']['engine']:>15} {e['exec']['median_ms']:>6.1f} "
              f"{e['write']['median_ms']:>6.1f}   " + "   ".join(cells))
    for kind, f in figs.items():
        if "skipped" in f:
            continue
        limit = f["engine"]["exec"]["median_ms"] + f["engine"]["write"]["median_ms"] + \
            TARGET_SLACK_MS
        got = [(n, w["p50_ms"]) for n, w in f["ways"].items() if n.startswith("ours")]
        print(f"  target over {kind}: p50 <= {limit:.1f} ms (its exec + write + "
              f"{TARGET_SLACK_MS:g}): " + ", ".join(
                  f"{n[5:]} {v:.1f} ({'met' if v <= limit else 'not met'})" for n, v in got))


def report(fig, a):
    m = fig["machine"]
    print(f"== host-tool calls over the Docker engine ({m['engine']}): libmafhost's Docker "
          f"backend against maf-sandbox's way, {m['cpus']} CPUs, load {m['load_start']} at "
          f"the start")
    print(f"engine operations through libmafhost's Docker backend, {a.engine_ops} of each, "
          f"interleaved (ms, timed around the request):")
    print(f"  {'operation':<38} {'median':>8} {'p90':>8} {'engine requests':>16}")
    what = {"exec": "exec (maf-launch --version)",
            "exec wait": "exec (maf-launch wait, request there)",
            "write": "archive write (PUT, a new small file)",
            "read": "archive read (GET, a small file)",
            "read absent": "archive read of an absent file",
            "stat": "stat (HEAD) of a file",
            "stat absent": "stat (HEAD) of an absent file"}
    for k, e in fig["engine"].items():
        print(f"  {what[k]:<38} {e['median_ms']:>8.1f} {e['p90_ms']:>8.1f} "
              f"{'/'.join(map(str, e['requests'])):>16}")
    print(f"{fig['calls']} sequential calls of echo through the shim, timed in the program, "
          f"{fig['rounds']} round(s); per call: (a run of {fig['calls']} calls - a run of 0) "
          f"/ {fig['calls']}, both in this run")
    print(f"  {'way':<20} {'p50 ms':>8} {'p90 ms':>8} {'ops/call':>9} {'requests/call':>14}"
          f"   ops/call by kind")
    for name, w in fig["ways"].items():
        kinds = " ".join(f"{k} {v:.2f}" for k, v in w["by_kind"].items() if v)
        if "ticks" in w:
            kinds += f"; {w['ticks']:.2f} ticks"
        rq = "-" if w["requests"] is None else f"{w['requests']:.2f}"
        print(f"  {name:<20} {w['p50_ms']:>8.1f} {w['p90_ms']:>8.1f} {w['ops']:>9.2f} "
              f"{rq:>14}   {kinds}")
    print("  ours: maf-host run --backend docker:C --transport files|wait|relay|stream, a "
          "tools server; "
          "baseline: sh run_program.sh, the shim's files (polled every 0.05 s), a replica of "
          "maf-sandbox's supervisor over docker cp and docker exec, each one operation")
    ex, wr = fig["engine"]["exec"]["median_ms"], fig["engine"]["write"]["median_ms"]
    limit = ex + wr + TARGET_SLACK_MS
    ours_ways = [n for n in fig["ways"] if n.startswith("ours")]

    def met(ok):
        return "met" if ok else "not met"

    print(f"target: p50 <= median exec {ex:.1f} + median write {wr:.1f} + "
          f"{TARGET_SLACK_MS:g} ms = {limit:.1f} ms: " +
          ", ".join(f"{n} {fig['ways'][n]['p50_ms']:.1f} ms "
                    f"({met(fig['ways'][n]['p50_ms'] <= limit)})" for n in ours_ways))
    ten = next((n for n in fig["ways"] if n.startswith("baseline 10 ms")), None)
    if ten:
        b = fig["ways"][ten]["ops"]
        print(f"target: ops per call at least {TARGET_OPS_FACTOR:g}x fewer than the {ten}'s "
              f"{b:.2f} (<= {b / TARGET_OPS_FACTOR:.2f}): " +
              ", ".join(f"{n} {fig['ways'][n]['ops']:.2f} "
                        f"({met(fig['ways'][n]['ops'] * TARGET_OPS_FACTOR <= b)})"
                        for n in ours_ways))
    else:
        print("target: ops per call against the 10 ms baseline: not measured (--polls has no "
              "0.01)")
    w = fig["ways"]
    if "ours stream" in w:
        s = w["ours stream"]
        print(f"target: stream p50 <= 2 ms and no backend operation a call: "
              f"{s['p50_ms']:.1f} ms, {s['ops']:.2f} operations a call "
              f"({met(s['p50_ms'] <= 2 and s['ops'] <= 0)})")
    if "ours relay" in w:
        r = w["ours relay"]
        print(f"target: relay at most 1.1 operations a call: {r['ops']:.2f} "
              f"({met(r['ops'] <= 1.1)})")
    print(f"load {m['load_end']} at the end")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("MAF_BUILD", str(ROOT / "build")))
    ap.add_argument("--calls", type=int, default=40, help="calls per run (default 40)")
    ap.add_argument("--engine-ops", type=int, default=30,
                    help="engine operations of each kind (default 30)")
    ap.add_argument("--polls", default="0.2,0.01",
                    help="the baseline's poll intervals in seconds (default 0.2,0.01)")
    ap.add_argument("--engines", default="tls,ssh,podman,podman-rootless",
                    help="the engines to measure over after this machine's, started here "
                         "one after the other: tls, ssh, podman, podman-rootless, separated "
                         "by commas, or none (default all four)")
    ap.add_argument("--engine-polls", default="0.01",
                    help="the baseline's poll intervals over each of --engines (default "
                         "0.01)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="times to measure every way, one after the other (default 1)")
    ap.add_argument("--eager", action="store_true",
                    help="serve the baseline with the eager variant of its poll (each request "
                         "stat'ed once the one before it is answered, in the same tick; not "
                         "upstream's order: see bench_docker_upstream.py)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    a = ap.parse_args()
    if a.calls < 1 or a.engine_ops < 1 or a.rounds < 1:
        ap.error("--calls, --engine-ops and --rounds take a number above 0")
    try:
        a.polls = [float(p) for p in a.polls.split(",")]
        a.engine_polls = [float(p) for p in a.engine_polls.split(",") if p]
    except ValueError:
        ap.error(f"--polls and --engine-polls take seconds separated by commas, not "
                 f"{a.polls!r} and {a.engine_polls!r}")
    a.engines = [] if a.engines in ("", "none") else a.engines.split(",")
    for k in a.engines:
        if k not in engines.ENGINES:
            ap.error(f"--engines takes tls, ssh, podman and podman-rootless, not {k!r}")
    # SIGTERM and SIGHUP end the run as Ctrl-C does: through the removal of what it made.
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda sig, _f: sys.exit(128 + sig))
    if not a.json:
        print("host-tool call round trip over the Docker engine, the echo tool")
    made = Made()
    try:
        fig = measure(a, made, a.polls)
        made.remove_all()
        if not a.json and a.engines:
            report(fig, a)
            print(f"then over each of {', '.join(a.engines)}:", flush=True)
        fig["engines"] = {k: over_engine(a, k) for k in a.engines}
    except Failed as e:
        sys.exit(f"bench-docker: {e}")
    except KeyboardInterrupt:
        print("bench-docker: interrupted; removing what it made", file=sys.stderr)
        sys.exit(130)
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        made.remove_all()
    if a.json:
        print(json.dumps(fig))
    elif a.engines:
        report_engines({"here": fig, **fig["engines"]}, a)
    else:
        report(fig, a)


if __name__ == "__main__":
    main()
