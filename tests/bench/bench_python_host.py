#!/usr/bin/env python3
"""One host process of make bench-python (tests/bench/bench_python.py): one version of the
package, measured alone. It imports mafhost from PYTHONPATH (the one version's package,
checked against --package), loads the library named (mafhost.load), serves runs of
bench_python_program.py on the local backend with the launcher named, and prints one JSON
line of figures.

--per-call N: a warm-up run of 10 calls, then a run of N calls with `echo` a plain tool (a
worker thread a call), then one with it inline (inline=True); the samples as the program
timed them.
--scale RUNS: a warm-up run, then --rounds rounds (more with --until) of RUNS runs of --calls
calls each at once on one event loop: each run's status, the calls answered, this process's
own CPU time (user + system of all its threads, not its children's), its peak RSS before and
after, and its threads and descriptors at their peak (sampled every 0.1 s on the loop; the
sampling's own CPU is left out of the CPU figure). --started, --start-after and --until let
two hosts be measured over the same span, one beside the other.

Every run is `python3 -S -E R/host_tools/program.py N` (the program and its shim written by
the library into a run directory made here under $TMPDIR): only the standard library, which
is all the program and the shim import."""
import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path


def echo(**arguments):
    return arguments


class Peak:
    """The process's threads (threading's count and the kernel's) and open descriptors at
    their highest, sampled from the loop; cpu_s is the sampling's own CPU time."""

    def __init__(self):
        self.py_threads = self.threads = self.fds = 0
        self.cpu_s = 0.0

    def sample(self):
        c0 = time.process_time()
        self.py_threads = max(self.py_threads, threading.active_count())
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    self.threads = max(self.threads, int(line.split()[1]))
                    break
        self.fds = max(self.fds, len(os.listdir("/proc/self/fd")))
        self.cpu_s += time.process_time() - c0

    async def watch(self, interval):
        while True:
            self.sample()
            await asyncio.sleep(interval)


def vm_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Host:
    def __init__(self, a, mafhost):
        self.a, self.m = a, mafhost
        self.sb = mafhost.LocalSandbox(launcher_path=a.launcher, tmpdir=a.base)
        self.source = Path(a.program).read_text()

    async def one(self, calls, tool, timeout):
        run_dir = tempfile.mkdtemp(prefix="run-", dir=self.a.base)
        argv = ["python3", "-S", "-E", f"{run_dir}/host_tools/program.py", str(calls)]
        return await self.m.run(self.sb, self.source, argv=argv, run_dir=run_dir,
                                tools=[tool], limits=self.m.Limits(max_calls=calls),
                                timeout=timeout, check=False)


def samples_of(r):
    try:
        return json.loads(r.output.strip().splitlines()[-1])["samples_ns"]
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def why(r):
    """A sentence for a run that did not end well (or an exception)."""
    if isinstance(r, BaseException):
        return f"{type(r).__name__}: {r}"[:300]
    text = f"{r.status} (exit {r.exit_code}), {r.calls} calls"
    if r.error:
        text += f": {r.error}"
    elif r.output.strip():
        # What the program said last: a traceback's last line names what went wrong.
        text += ": " + r.output.strip().splitlines()[-1]
    return text[:300]


def good(r, calls):
    return not isinstance(r, BaseException) and r.ok and r.calls == calls


def per_call(a, h):
    out = {}
    warm = asyncio.run(h.one(10, h.m.Tool(echo), a.timeout))
    if not good(warm, 10):
        out["failed"] = "warm-up run: " + why(warm) + " " + warm.output[-1000:]
        return out
    out["transport"] = warm.transport
    for name, inline in (("thread", False), ("inline", True)):
        r = asyncio.run(h.one(a.per_call, h.m.Tool(echo, inline=inline), a.timeout))
        s = samples_of(r) if good(r, a.per_call) else None
        if s is None:
            out["failed"] = f"{name}: {why(r)} {r.output[-1000:]}"
            return out
        out[name] = s
    return out


def scale(a, h):
    runs, calls = a.scale, a.calls
    tool = h.m.Tool(echo)
    warm = asyncio.run(h.one(calls, tool, a.timeout))
    peak = Peak()

    async def rounds():
        """The rounds, on one loop (as a host's runs are), in results and walls."""
        watcher = asyncio.create_task(peak.watch(0.1))
        try:
            while len(walls) < a.rounds or (a.until and not os.path.exists(a.until)):
                w0 = time.monotonic()
                results.extend(await asyncio.gather(
                    *(h.one(calls, tool, a.timeout) for _ in range(runs)),
                    return_exceptions=True))
                walls.append(time.monotonic() - w0)
        finally:
            watcher.cancel()
            peak.sample()

    rss0, vm0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vm_rss_kb()
    peak.sample()
    before = {"threads": peak.threads, "py_threads": peak.py_threads, "fds": peak.fds}
    peak = Peak()
    if a.start_after:
        # Beside another host: its warm-up done, this one starts with the other's runs.
        while not os.path.exists(a.start_after):
            time.sleep(0.01)
    if a.started:
        Path(a.started).touch()
    cpu0, t0 = time.process_time(), time.monotonic()
    results, walls = [], []
    asyncio.run(rounds())
    cpu = time.process_time() - cpu0 - peak.cpu_s
    total_wall = time.monotonic() - t0
    samples, statuses, answered, failures = [], {}, 0, {}
    for r in results:
        if isinstance(r, BaseException):
            key = "exception"
        else:
            key = r.status if r.ok or r.status != "exited" else f"exited {r.exit_code}"
            answered += r.calls
        statuses[key] = statuses.get(key, 0) + 1
        if good(r, calls):
            samples += samples_of(r) or []
        else:
            w = why(r)
            failures[w] = failures.get(w, 0) + 1
    return {"runs": runs, "rounds": len(walls), "calls": calls, "statuses": statuses,
            "complete": sum(1 for r in results if good(r, calls)),
            "answered": answered, "wall_s": sum(walls) / len(walls), "total_wall_s": total_wall,
            "cpu_s": cpu, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "rss_before_kb": rss0, "vm_rss_before_kb": vm0, "before": before,
            "threads": peak.threads, "py_threads": peak.py_threads, "fds": peak.fds,
            "samples_ns": samples,
            "warm_up": None if good(warm, calls) else why(warm),
            "failures": sorted(failures.items(), key=lambda kv: -kv[1])[:5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", required=True, help="the directory mafhost must come from")
    ap.add_argument("--library", required=True)
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--base", required=True, help="where run directories are made")
    ap.add_argument("--timeout", type=float, default=600, help="a run's timeout, s")
    ap.add_argument("--per-call", type=int)
    ap.add_argument("--scale", type=int)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="rounds at least, with --scale")
    ap.add_argument("--started", help="with --scale: a file made as the measured rounds start")
    ap.add_argument("--start-after", help="with --scale: the measured rounds start once this "
                    "file exists (after the warm-up)")
    ap.add_argument("--until", help="with --scale: rounds go on, past --rounds, until this file "
                    "exists (looked at between rounds)")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    import mafhost
    pkg = os.path.realpath(os.path.dirname(mafhost.__file__))
    if os.path.dirname(pkg) != os.path.realpath(a.package):
        sys.exit(f"mafhost came from {pkg}, not from {a.package}")
    lib = mafhost.load(a.library)
    if os.path.realpath(lib.path) != os.path.realpath(a.library):
        sys.exit(f"libmafhost was loaded from {lib.path}, not {a.library}")
    h = Host(a, mafhost)
    try:
        out = per_call(a, h) if a.per_call else scale(a, h)
    except BaseException:
        out = {"failed": traceback.format_exc()[-3000:]}
    out["nofile"] = hard
    print(json.dumps(out))


if __name__ == "__main__":
    main()
