#!/usr/bin/env python3
"""The time for the exec of `maf-launch run` to return, against upstream's shell launcher
(`sh R/host_tools/run_program.sh`), for the same trivial program (`python3 program.py` doing
nothing). Both are run the way a backend's exec runs them: argv, stdout and stderr read to
EOF. They alternate within one run (which goes first alternates too), each in a fresh run
directory, and each run is waited for (untimed) before the next starts, so they see the same
machine. Prints figures only."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = "pass\n"


def fresh_run_dir(base, i, kind, reference):
    r = Path(base) / f"{kind}-{i:04d}"
    ht = r / "host_tools"
    ht.mkdir(parents=True)
    (ht / "program.py").write_text(PROGRAM)
    (ht / "run_program.sh").write_bytes(reference)
    return r


def wait_exit(r, timeout=60.0):
    marker = r / "host_tools" / "program_exit_code"
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if time.monotonic() > deadline:
            sys.exit(f"bench-launch: no exit marker in {r} after {timeout}s")
        time.sleep(0.002)
    code = marker.read_text()
    if code != "0":
        sys.exit(f"bench-launch: the program in {r} exited {code}")


def timed(argv):
    """Wall time, in ns, from the exec to EOF on both pipes and the exit status."""
    t0 = time.perf_counter_ns()
    proc = subprocess.run(argv, capture_output=True)
    t1 = time.perf_counter_ns()
    if proc.returncode != 0 or b"maf-host-tools: session" not in proc.stdout:
        sys.exit(f"bench-launch: {argv[0]} exited {proc.returncode}: {proc.stderr!r}")
    return t1 - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    reference = Path(args.reference).read_bytes()
    launcher = os.path.abspath(args.launcher)
    for tool in ("sh", "python3", "setsid", "nohup"):
        if shutil.which(tool) is None:
            sys.exit(f"bench-launch: the reference needs {tool}")

    def ours(r):
        return timed([launcher, "run", "--run-dir", str(r), "--", "python3",
                      str(r / "host_tools" / "program.py")])

    def ref(r):
        return timed(["sh", str(r / "host_tools" / "run_program.sh")])

    kinds = [("maf-launch run", ours), ("sh run_program.sh", ref)]
    times = {name: [] for name, _ in kinds}
    with tempfile.TemporaryDirectory(prefix="maf-bench-launch-") as base:
        for i in range(-args.warmup, args.iterations):
            order = kinds if i % 2 == 0 else kinds[::-1]
            for name, fn in order:
                r = fresh_run_dir(base, i + args.warmup, name.split()[0], reference)
                t = fn(r)
                wait_exit(r)
                shutil.rmtree(r)
                if i >= 0:
                    times[name].append(t)

    med = {name: statistics.median(ts) / 1e6 for name, ts in times.items()}
    print(f"bench-launch: {args.iterations} launches each, alternating, trivial python3 "
          f"program, exec to return (stdout and stderr read to EOF)")
    for name, ts in times.items():
        q = statistics.quantiles([t / 1e6 for t in ts], n=10)
        print(f"  {name:<20} median {med[name]:8.3f} ms   p10 {q[0]:8.3f} ms   "
              f"p90 {q[-1]:8.3f} ms")
    print(f"  ratio (sh run_program.sh / maf-launch run): "
          f"{med['sh run_program.sh'] / med['maf-launch run']:.2f}x")
    print(f"  maf-launch binary: {os.path.getsize(launcher)} bytes")


if __name__ == "__main__":
    main()
