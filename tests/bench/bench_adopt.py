"""make bench-adopt: what a maf-sandbox host gets from the one-line switch, measured in one run
over maf-sandbox-docker's own sandbox class (containers made by its
DockerSandboxBackend.acquire(), as a host makes them):

- upstream: maf-sandbox's dispatch_over_exec with its shell launcher, at its default poll
  (0.2 s), in python-noshell with busybox's shell added (tests/upstream/shell_image.py);
- drop-in, stream: mafhost.maf_sandbox.dispatch_over_exec, in python-noshell (no shell), as a
  host calls it: the sandbox has container_name, so calls go over a stream through the engine;
- drop-in, relay: the same with the sandbox's container_name hidden, so that calls go by
  relay over the sandbox's own exec (what any other sandbox object gets).

Each way runs a program that makes --calls sequential calls through the shim the caller
wrote (host_tool_shim, as maf-sandbox-codeact writes it) and times each call itself (p50 and
p90 below are those), and the same program making none. Per call, from the difference of the
two runs divided by --calls: the operations on the maf-sandbox sandbox object (exec,
write_file, read_file, stat_file), and the engine commands: the `docker` commands
maf-sandbox-docker ran (each one a client process, several engine requests), and for the
stream the HTTP requests mafhost's engine client made. Figures only, no pass/fail; the
target (drop-in, stream: p50 <= 5 ms) is printed beside them. Runs in the Debian 13 root
(tests/upstream/enter), which make bench-adopt sets up."""
import argparse
import asyncio
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "upstream"))
import conftest  # noqa: E402,F401  (maf-sandbox's packages and mafhost on the path)

warnings.simplefilter("ignore")

import mafhost.maf_sandbox.serving as serving  # noqa: E402
from maf_sandbox import HostToolRegistry  # noqa: E402

from adopt import Ways, engine_missing  # noqa: E402

PROGRAM = """\
import json, time
from maf_host_tools import call
samples = []
for i in range({calls}):
    t = time.perf_counter_ns()
    call("echo", i=i, text="hello")
    samples.append(time.perf_counter_ns() - t)
print(json.dumps(samples))
"""
TARGET_P50_MS = 5.0


class Counted:
    """maf-sandbox's sandbox object, its operations counted; hide_container: without
    container_name, as any other sandbox object is."""

    def __init__(self, sandbox, hide_container=False):
        self._sandbox = sandbox
        self._hide = hide_container
        self.ops = {"exec": 0, "write_file": 0, "read_file": 0, "stat_file": 0}

    def __getattr__(self, name):
        if name == "container_name" and self._hide:
            raise AttributeError(name)
        attr = getattr(self._sandbox, name)
        if name in self.ops:
            async def counted(*a, **kw):
                self.ops[name] += 1
                return await attr(*a, **kw)
            return counted
        return attr


class Engine:
    """The docker commands run, and mafhost's engine clients made, while counting."""

    def __init__(self):
        self.docker = 0
        self.clients = []
        real_exec = asyncio.create_subprocess_exec
        real_client = serving.DockerSandbox

        async def counting_exec(program, *args, **kw):
            if Path(str(program)).name == "docker":
                self.docker += 1
            return await real_exec(program, *args, **kw)

        class CountingClient(real_client):
            def __init__(inner, *a, **kw):
                super().__init__(*a, **kw)
                self.clients.append(inner)

        asyncio.create_subprocess_exec = counting_exec
        serving.DockerSandbox = CountingClient

    def requests(self):
        return sum(c.requests for c in self.clients)


def registry(calls):
    def echo(**kw):
        return kw

    r = HostToolRegistry(max_dispatches_per_run=max(calls, 1) + 1)
    r.register(echo)
    return r


async def one_run(ways, way, calls, engine, hide):
    reg = registry(calls)
    sandbox, layout = await ways.prepare("upstream" if way == "upstream" else "drop-in",
                                         PROGRAM.format(calls=calls), reg)
    counted = Counted(sandbox, hide_container=hide)
    docker0, req0 = engine.docker, engine.requests()
    t0 = time.monotonic()
    result = await ways.dispatch("upstream" if way == "upstream" else "drop-in", counted,
                                 reg, layout, timeout=900)
    wall = time.monotonic() - t0
    if result.exit_code != 0:
        raise SystemExit(f"bench-adopt: {way}: the program exited {result.exit_code}:\n"
                         f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    samples = json.loads(result.stdout.strip().splitlines()[-1])
    return {"samples_ms": [s / 1e6 for s in samples], "ops": dict(counted.ops),
            "docker": engine.docker - docker0, "requests": engine.requests() - req0,
            "wall_s": wall}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def main(a):
    why = engine_missing()
    if why:
        raise SystemExit(f"bench-adopt: {why}")
    engine = Engine()
    ways = await Ways().open()
    rows = []
    try:
        for way, hide in (("upstream", False), ("drop-in, stream", False),
                          ("drop-in, relay", True)):
            full = await one_run(ways, way, a.calls, engine, hide)
            none = await one_run(ways, way, 0, engine, hide)
            per = {k: (full["ops"][k] - none["ops"][k]) / a.calls for k in full["ops"]}
            rows.append({
                "way": way, "p50_ms": statistics.median(full["samples_ms"]),
                "p90_ms": pct(full["samples_ms"], 0.9),
                "ops_per_call": sum(per.values()), "ops_by_kind": per,
                "docker_per_call": (full["docker"] - none["docker"]) / a.calls,
                "requests_per_call": (full["requests"] - none["requests"]) / a.calls,
                "run_s": full["wall_s"], "empty_run_s": none["wall_s"],
                "empty_run": {"ops": sum(none["ops"].values()), "docker": none["docker"],
                              "requests": none["requests"]}})
    finally:
        await ways.close()
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"bench-adopt: {a.calls} sequential calls a run, over maf-sandbox-docker's own "
          "sandbox (DockerSandboxBackend.acquire), measured in one run; per call: the "
          "program's own timing, and (the run's count - that of a run making no call) / calls")
    print(f"  {'way':<18}{'p50 ms':>10}{'p90 ms':>10}{'sandbox ops':>13}{'docker cmds':>13}"
          f"{'engine reqs':>13}{'run s':>8}")
    for r in rows:
        print(f"  {r['way']:<18}{r['p50_ms']:>10.1f}{r['p90_ms']:>10.1f}"
              f"{r['ops_per_call']:>13.2f}{r['docker_per_call']:>13.2f}"
              f"{r['requests_per_call']:>13.2f}{r['run_s']:>8.1f}")
    print("  a run that makes no call (the fixed cost of a run): " + "; ".join(
        f"{r['way']}: {r['empty_run_s']:.2f} s, {r['empty_run']['ops']} sandbox ops, "
        f"{r['empty_run']['docker']} docker cmds, {r['empty_run']['requests']} engine reqs"
        for r in rows))
    up, stream = rows[0], rows[1]
    print("  sandbox ops by kind, per call: " + "; ".join(
        f"{r['way']}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["ops_by_kind"].items() if v)
        for r in rows))
    print(f"  drop-in, stream against upstream: {up['p50_ms'] / stream['p50_ms']:.0f}x faster "
          f"at p50; target p50 <= {TARGET_P50_MS:g} ms: "
          f"{'met' if stream['p50_ms'] <= TARGET_P50_MS else 'not met'}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.calls < 1:
        p.error("--calls takes 1 or more")
    asyncio.run(main(args))
