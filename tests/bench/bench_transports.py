#!/usr/bin/env python3
"""make bench-transports, part 2: the transports over a remote backend simulated by
libmafhost's latency wrapper (`maf-host run --simulate-latency-ms MS`: the local backend with
MS milliseconds before every operation, and before every frame written on a stream), against
maf-sandbox's way of serving the same program over the same latency, measured in the same
run. (Part 1, over the Docker engine, is make bench-docker's.)

Ours: `maf-host run --json --simulate-latency-ms MS --transport T` for T in files, relay and
stream, the program bench_docker_program.py making --calls sequential calls of `echo`
through the generated shim (a tools server answers), each timed in the program. The
baseline: the same program and shim launched by upstream's shell launcher
(tests/integration/reference/run_program.sh) on this machine, served by the replica of
maf-sandbox's supervisor (bench_docker_upstream.UpstreamRun) over a backend that sleeps MS
before each of its operations (a write, read, stat or exec on this machine, each one
operation), polling every 0.2 s and every 10 ms. Backend operations per call: (the
operations of a run of --calls calls - those of a run of none) / --calls.

Figures only: the target (relay at most 60 ms a call at 50 ms) is printed beside them,
marked met or not, with the baseline's time against relay's. It exits non-zero only when the
bench could not run."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench_docker_upstream import BaselineError, UpstreamRun
from host_run import run_host

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAM = HERE / "bench_docker_program.py"
TOOLS_SERVER = HERE / "bench_tools_server.py"
REFERENCE = ROOT / "tests" / "integration" / "reference" / "run_program.sh"


class LocalLatency:
    """maf-sandbox's backend interface on this machine, ms before each operation."""

    def __init__(self, ms):
        self.s = ms / 1000.0
        self.ops = {"exec": 0, "read": 0, "write": 0, "stat": 0}

    def _op(self, kind):
        self.ops[kind] += 1
        time.sleep(self.s)

    def write_file(self, path, data):
        self._op("write")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, path)

    def read_file(self, path):
        self._op("read")
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def stat_file(self, path):
        self._op("stat")
        return os.path.lexists(path)

    def exec(self, argv, timeout=300):
        self._op("exec")
        p = subprocess.run(argv, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def ours(a, transport, calls):
    argv = [str(Path(a.build) / "maf-host"), "run", "--json", "--simulate-latency-ms",
            str(a.latency_ms), "--transport", transport, "--max-calls", str(max(calls, 1)),
            "--timeout", "600", "--tools-server", f"{sys.executable} {TOOLS_SERVER}",
            "--tool", "echo", str(PROGRAM), "--", str(calls)]
    rep, inner = run_host(argv, 900)
    if rep["calls"] != calls or rep["transport"] != transport:
        sys.exit(f"bench-transports: maf-host ({transport}) served {rep['calls']} calls of "
                 f"{calls} over {rep['transport']}")
    total = sum(rep["ops"][k] for k in ("exec", "read", "write", "stat"))
    return {"ops": total, "samples_ms": [ns / 1e6 for ns in inner["samples_ns"]]}


def baseline(a, poll, calls, shim):
    b = LocalLatency(a.latency_ms)
    parent = tempfile.mkdtemp(prefix="maf-bench-transports-")
    try:
        run = UpstreamRun(b, parent, poll, max(calls, 1), 600)
        program = f"import sys; sys.argv[1:] = [{str(calls)!r}]\n".encode() + \
            PROGRAM.read_bytes()
        try:
            code, output = run.run(program, shim, REFERENCE.read_bytes())
        except BaselineError as e:
            sys.exit(f"bench-transports: the baseline (poll {poll} s): {e}")
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    if code != 0:
        sys.exit(f"bench-transports: the baseline's program exited {code}:\n{output[-3000:]}")
    inner = json.loads(output.strip().splitlines()[-1])
    return {"ops": sum(b.ops.values()), "samples_ms": [ns / 1e6 for ns in inner["samples_ns"]]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("MAF_BUILD", str(ROOT / "build")))
    ap.add_argument("--calls", type=int, default=20, help="calls per run (default 20)")
    ap.add_argument("--latency-ms", type=int, default=50,
                    help="milliseconds before each backend operation (default 50)")
    a = ap.parse_args()
    if a.calls < 1 or a.latency_ms < 0:
        ap.error("--calls takes a number above 0, --latency-ms one of 0 or more")
    shim = subprocess.run([str(Path(a.build) / "maf-host"), "shim", "--tool", "echo"],
                          capture_output=True, timeout=60, check=True).stdout
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"== the transports over the latency wrapper at {a.latency_ms} ms an operation, "
          f"{a.calls} sequential calls of echo, {os.cpu_count()} CPUs, load {load}")
    ways = [(f"ours {t}", lambda n, t=t: ours(a, t, n)) for t in ("files", "relay", "stream")]
    ways += [("maf-sandbox's way, 10 ms poll", lambda n: baseline(a, 0.01, n, shim)),
             ("maf-sandbox's way, 0.2 s poll", lambda n: baseline(a, 0.2, n, shim))]
    fig = {}
    print(f"  {'way':<32} {'p50 ms':>8} {'p90 ms':>8} {'ops/call':>9}")
    for name, how in ways:
        zero, full = how(0), how(a.calls)
        fig[name] = {"p50": pct(full["samples_ms"], 0.5), "p90": pct(full["samples_ms"], 0.9),
                     "ops": (full["ops"] - zero["ops"]) / a.calls}
        f = fig[name]
        print(f"  {name:<32} {f['p50']:>8.1f} {f['p90']:>8.1f} {f['ops']:>9.2f}")
    relay, base = fig["ours relay"]["p50"], fig["maf-sandbox's way, 10 ms poll"]["p50"]
    at = "" if a.latency_ms == 50 else f"; measured at {a.latency_ms} ms"
    print(f"target at 50 ms: relay p50 <= 60 ms: {relay:.1f} ms "
          f"({'met' if relay <= 60 else 'not met'}{at}); maf-sandbox's way at its fastest "
          f"poll {base:.1f} ms, {base / relay:.1f}x relay's")
    print("load " + " ".join(open("/proc/loadavg").read().split()[:3]) + " at the end")


if __name__ == "__main__":
    main()
