#!/usr/bin/env python3
"""Host-tool calls through maf-host over the local backend, at several simulated backend
latencies: backend operations per call and milliseconds per call (figures only, no
assertion). Usage: bench_calls_host.py [--calls N] [--latencies 0,5,20,50]
[--transports auto,files] [--build DIR]"""
import argparse
import json
import os
import sys
from pathlib import Path

from host_run import run_host

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "integration" / "programs" / "many_calls.py"


def run(build, calls, latency, transport):
    argv = [str(build / "maf-host"), "run", "--json", "--simulate-latency-ms", str(latency),
            "--transport", transport, "--max-calls", str(calls), "--timeout", "900",
            "--tool", "echo=cat", str(PROGRAM), "--", str(calls)]
    rep, inner = run_host(argv, 1200)
    ops = rep["ops"]
    total = ops["exec"] + ops["read"] + ops["write"] + ops["stat"]
    return {"latency_ms": latency, "transport": transport, "calls": rep["calls"],
            "ops": ops, "ops_per_call": total / rep["calls"],
            "ms_per_call_in_program": inner["ms_per_call"],
            "wall_ms": rep["wall_ms"], "wall_ms_per_call": rep["wall_ms"] / rep["calls"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--latencies", default="0,5,20,50")
    ap.add_argument("--transports", default="auto,files")
    ap.add_argument("--build", default=os.environ.get("MAF_BUILD", str(ROOT / "build")))
    ap.add_argument("--json", action="store_true", help="one JSON line per measurement")
    a = ap.parse_args()
    build = Path(a.build)
    if not a.json:
        print(f"{a.calls} sequential calls of a `cat` tool, local backend, latency wrapper")
        print(f"{'latency':>8} {'transport':>9} {'exec':>5} {'read':>5} {'write':>5} "
              f"{'stat':>5} {'ops/call':>8} {'ms/call':>8} {'wall ms':>8}")
    for transport in a.transports.split(","):
        for lat in (int(x) for x in a.latencies.split(",")):
            r = run(build, a.calls, lat, transport)
            if a.json:
                print(json.dumps(r))
                continue
            o = r["ops"]
            print(f"{lat:>6}ms {transport:>9} {o['exec']:>5} {o['read']:>5} {o['write']:>5} "
                  f"{o['stat']:>5} {r['ops_per_call']:>8.2f} "
                  f"{r['ms_per_call_in_program']:>8.1f} {r['wall_ms']:>8}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
