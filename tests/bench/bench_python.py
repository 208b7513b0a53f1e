#!/usr/bin/env python3
"""make bench-python: the Python package (mafhost) as a host, on the local backend.

1. Per call: the same program (bench_python_program.py: N calls of `echo`, each timed by the
   program) served by `maf-host run` with a tools server (bench_tools_server.py) and by
   mafhost.run with `echo` as a Python function, alternately, ROUNDS times each, in this one
   run: p50 and p99 of the calls, and mafhost's p50 over maf-host's (target: at most 2).
   mafhost's tool runs in a worker thread, as a plain tool does by default; `mafhost inline`
   is the same with inline=True.
2. Scale: 1, 10, 100 and 500 runs of a 10-call program supervised at once on one event
   loop, each level in a fresh process (so that its peak memory is its own), as many rounds
   of N runs at once as make at least 100 runs (1: 100 rounds, 10: 10; a level of 10 runs
   alone has too few calls for its CPU figure to hold still: 13-17 ms a run, from one try
   to the next): every run's status and calls, the host process's own CPU time (user +
   system, not its children's) per run and per call, its peak RSS above what it held
   before the runs, per run at once, and the calls' p50 and p99 as the programs timed them
   (target: 500 runs complete with every call answered, and the host's own CPU per call no
   higher at 500 than at 10).
Figures only; the targets are printed beside them, nothing fails but a run that does not
complete."""
import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
sys.path.insert(0, str(ROOT / "host" / "python"))
sys.path.insert(0, str(HERE))

import mafhost  # noqa: E402
from host_run import run_host  # noqa: E402

PROGRAM = (HERE / "bench_python_program.py").read_text()


def echo(**arguments):
    return arguments


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def run_dir_base():
    base = tempfile.mkdtemp(prefix="mafhost-bench-", dir=os.environ.get("TMPDIR", "/tmp"))
    os.chmod(base, 0o711)
    return base


def settle(most=1.0, wait_s=90):
    """Waits (at most wait_s) for the machine's 1-minute load to fall below most: an earlier
    bench's processes (or this one's 500 runs) would weigh on the next figures."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and os.getloadavg()[0] >= most:
        time.sleep(2)


def per_call(a, base):
    python = os.environ.get("PYTHON", sys.executable)
    settle()
    samples = {"maf-host": [], "mafhost": [], "mafhost inline": []}
    prog = Path(base) / "bench_python_program.py"
    prog.write_text(PROGRAM)
    for rnd in range(a.rounds):
        argv = [str(BUILD / "maf-host"), "run", "--json", "--max-calls", str(a.calls),
                "--timeout", "600", "--tools-server", f"{python} {HERE / 'bench_tools_server.py'}",
                "--tool", "echo", str(prog), "--", str(a.calls)]
        rep, inner = run_host(argv, 900, env=dict(os.environ, TMPDIR=base))
        samples["maf-host"] += inner["samples_ns"]
        for name, inline in (("mafhost", False), ("mafhost inline", True)):
            r = asyncio.run(python_host(a.calls, base, inline))
            if not r.ok or r.calls != a.calls:
                sys.exit(f"bench-python: a mafhost run ended {r.status} ({r.exit_code}), "
                         f"{r.calls} calls: {r.errors} {r.output[-2000:]}")
            samples[name] += json.loads(r.output.strip().splitlines()[-1])["samples_ns"]
    base_p50 = pct(samples["maf-host"], 0.5)
    print(f"per call, {a.rounds} rounds of {a.calls} calls each, alternately "
          f"(transport: stream; load {' '.join(open('/proc/loadavg').read().split()[:3])}):")
    print(f"  {'host':<16} {'calls':>6} {'p50 us':>8} {'p99 us':>8} {'p50 / maf-host':>15}")
    out = {}
    for name, s in samples.items():
        p50, p99 = pct(s, 0.5) / 1000, pct(s, 0.99) / 1000
        ratio = pct(s, 0.5) / base_p50
        out[name] = {"calls": len(s), "p50_us": p50, "p99_us": p99, "ratio": ratio}
        mark = "" if name == "maf-host" else ("  (target <= 2: met)" if ratio <= 2 else
                                               "  (target <= 2: NOT met)")
        print(f"  {name:<16} {len(s):>6} {p50:>8.1f} {p99:>8.1f} {ratio:>15.2f}{mark}")
    return out


async def python_host(calls, base, inline):
    sb = mafhost.LocalSandbox(launcher_path=str(BUILD / "maf-launch"), tmpdir=base)
    return await mafhost.run(sb, program(calls), tools=[mafhost.Tool(echo, inline=inline)],
                             limits=mafhost.Limits(max_calls=calls), timeout=600)


def program(calls):
    """The program with its number of calls written in (maf-host passes it in argv)."""
    return PROGRAM.replace("int(sys.argv[1])", str(calls))


def scale_child(runs, calls, base, rounds):
    """One level of the scale part, in a process of its own: prints one JSON line."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    mafhost.load(str(BUILD / "libmafhost.so.0.2.0"))
    sb = mafhost.LocalSandbox(launcher_path=str(BUILD / "maf-launch"), tmpdir=base)
    tool = mafhost.Tool(echo)

    async def one(i):
        return await mafhost.run(sb, program(calls),
                                 tools=[tool], limits=mafhost.Limits(max_calls=calls),
                                 timeout=900, check=False)

    async def main():
        return await asyncio.gather(*(one(i) for i in range(runs)))

    # Warm up the interpreter's and the library's paths once, outside the figures.
    asyncio.run(one(0))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = time.process_time()
    t0 = time.monotonic()
    results = []
    for _ in range(rounds):
        results += asyncio.run(main())
    wall = (time.monotonic() - t0) / rounds
    cpu = time.process_time() - cpu0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    samples, statuses, answered = [], {}, 0
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
        answered += r.calls
        if r.ok:
            samples += json.loads(r.output.strip().splitlines()[-1])["samples_ns"]
    print(json.dumps({"runs": runs, "rounds": rounds, "calls": calls, "statuses": statuses,
                      "answered": answered, "wall_s": wall, "cpu_s": cpu,
                      "peak_rss_kb": ru.ru_maxrss, "rss_before_kb": rss0,
                      "p50_us": pct(samples, 0.5) / 1000 if samples else None,
                      "p99_us": pct(samples, 0.99) / 1000 if samples else None}))


def scale(a, base):
    print(f"\nscale: runs of {a.scale_calls} calls at once on one event loop, each level in a "
          f"fresh process, in rounds of that many to {a.min_runs} runs at least (wall: of "
          "one round)")
    print(f"  {'runs':>5} {'rounds':>6} {'complete':>9} {'answered':>10} {'wall s':>7} "
          f"{'CPU ms/run':>11} "
          f"{'CPU us/call':>12} {'peak RSS KiB/run':>17} {'p50 us':>8} {'p99 us':>9}")
    rows = {}
    for n in a.levels:
        settle()
        rounds = max(1, -(-a.min_runs // n))
        p = subprocess.run([sys.executable, __file__, "--scale-child", str(n),
                            "--rounds-of", str(rounds),
                            "--scale-calls", str(a.scale_calls)], capture_output=True,
                           text=True, timeout=3600, env=dict(os.environ, TMPDIR=base))
        if p.returncode != 0:
            sys.exit(f"bench-python: the level of {n} runs failed: {p.stderr[-3000:]}")
        f = json.loads(p.stdout.strip().splitlines()[-1])
        rows[n] = f
        complete = f["statuses"].get("exited", 0)
        per_call = f["cpu_s"] * 1e6 / max(1, f["answered"])
        rss = (f["peak_rss_kb"] - f["rss_before_kb"]) / n
        print(f"  {n:>5} {f['rounds']:>6} {complete:>9} {f['answered']:>10} "
              f"{f['wall_s']:>7.1f} {f['cpu_s'] * 1000 / (n * f['rounds']):>11.1f} "
              f"{per_call:>12.0f} {rss:>17.0f} "
              f"{f['p50_us'] or 0:>8.0f} {f['p99_us'] or 0:>9.0f}")
    top, ten = rows.get(500), rows.get(10)
    if top:
        done = top["statuses"].get("exited", 0) == 500 and top["answered"] == 500 * a.scale_calls
        print(f"  target: 500 runs complete with every call answered: "
              f"{'met' if done else 'NOT met'} ({top['statuses']}, {top['answered']} calls)")
    if top and ten:
        c500 = top["cpu_s"] / max(1, top["answered"])
        c10 = ten["cpu_s"] / max(1, ten["answered"])
        print(f"  target: the host's CPU per call no higher at 500 than at 10: "
              f"{'met' if c500 <= c10 else 'NOT met'} ({c500 * 1e6:.0f} us against "
              f"{c10 * 1e6:.0f} us)")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per run, per-call part")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each host, alternately")
    ap.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")],
                    default=[1, 10, 100, 500], help="runs at once, scale part")
    ap.add_argument("--scale-calls", type=int, default=10, help="calls per run, scale part")
    ap.add_argument("--min-runs", type=int, default=100,
                    help="runs per level at least, scale part (in rounds of N at once)")
    ap.add_argument("--scale-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rounds-of", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args()
    base = os.environ.get("TMPDIR") if a.scale_child else run_dir_base()
    if a.scale_child:
        return scale_child(a.scale_child, a.scale_calls, base, a.rounds_of)
    for f in ("maf-launch", "maf-host", "libmafhost.so.0.2.0"):
        if not (BUILD / f).exists():
            sys.exit(f"bench-python: {BUILD / f} is not built (run make)")
    mafhost.load(str(BUILD / "libmafhost.so.0.2.0"))
    try:
        per_call(a, base)
        scale(a, base)
    finally:
        left = os.listdir(base)
        for name in left:
            subprocess.run(["rm", "-rf", os.path.join(base, name)])
        os.rmdir(base)


if __name__ == "__main__":
    main()
