#!/usr/bin/env python3
"""make bench-calls: the round trip of one host-tool call on the local backend, through the
launcher's channel against the legacy file path, measured in the same run.

Two hosts, each on libmafhost's local backend (which wakes on inotify), serve the `echo` tool:
  maf-host  `maf-host run --json` with a tools server (tests/bench/bench_tools_server.py):
            a call crosses four processes (program, supervisor, maf-host, tools server)
  inproc    tests/bench/bench_calls_inproc.c, libmafhost with echo as a C callback: three
The program (tests/bench/bench_calls_program.py) times each call and alternates the paths:
  channel-shim    the generated shim, MAF_HOST_TOOLS_FD set (one connection per thread)
  channel-client  the Python CLIENT of tests/integration/test_channel.py (a connection per call)
  legacy-files    the generated shim with MAF_HOST_TOOLS_FD unset: upstream's file protocol,
                  polling the response every 0.05 s (its claim also scans the numbers from 1,
                  as upstream's does, so it costs more the more calls the run has made)
  channel-shim-after-idle
                  the shim's calls in the 0.3 s after each legacy block, which leaves the
                  machine all but idle for a second or more: on a VM the calls after an idle
                  spell are slower until it is busy again, so these are timed apart, and
                  the blocks above start once they are done
Figures only: p50, p99 and mean round trip per path, calls per second one call at a time
(1 / mean), how often the calling thread slept per call (one is the least a wait can cost),
and calls per second with several threads calling at once. Before each host, the
machine's floor (tests/bench/bench_wake.c): the round trip between two processes over a
socketpair, which a call pays twice (three times through maf-host and its tools server); on
a VM it moves with the load of the machine beneath.
The targets: p50 <= 200 us and >= 5,000 calls/s; each figure is marked against them,
nothing fails.

The run directory's file system matters: on ext4 without a journal, making a new file costs
more the more inodes were freed there in the last minute or so (the kernel steps over them
rather than reuse them), 0.1-0.4 ms after a large deletion. A channel call served by
libmafhost makes no new file (the launcher's claims are hard links to one file, each
request is written into the file of a response already relayed, each response into the
request it answers), but the legacy path makes two a call. The bench runs once per
--run-dirs parent, by default $TMPDIR (or /tmp), as maf-host would, and /dev/shm (tmpfs)
where it exists; before each host it times the making of a new file there, and it keeps
every run directory it makes until its last figure is taken (the legacy calls' files would
otherwise slow the next host's), and removes them then. MAF_LAUNCH, if set, is the
launcher maf-host runs (to measure a launcher built elsewhere against this host)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from host_run import run_host

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TARGET_P50_US = 200.0
TARGET_RATE = 5000.0


def pct(sorted_ns, q):
    i = min(len(sorted_ns) - 1, max(0, int(round(q * (len(sorted_ns) - 1)))))
    return sorted_ns[i] / 1000.0


def main():
    print("host-tool call round trip, local backend (inotify), the echo tool")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("MAF_BUILD", str(ROOT / "build")))
    ap.add_argument("--calls", type=int, default=2000, help="channel calls per path")
    ap.add_argument("--legacy-calls", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=4, help="alternating blocks of each path")
    ap.add_argument("--run-dirs", default=None,
                    help="comma-separated parents of the run directory (default: $TMPDIR or "
                         "/tmp, then /dev/shm)")
    ap.add_argument("--hosts", default="maf-host,inproc",
                    help="comma-separated hosts to measure (maf-host, inproc)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    a = ap.parse_args()
    if a.run_dirs:
        parents = a.run_dirs.split(",")
    else:
        parents = [os.environ.get("TMPDIR") or "/tmp"]
        if os.path.isdir("/dev/shm") and "/dev/shm" not in parents:
            parents.append("/dev/shm")
    hosts = a.hosts.split(",")
    for h in hosts:
        if h not in ("maf-host", "inproc"):
            sys.exit(f"bench-calls: unknown host {h!r} (maf-host, inproc)")
    kept = []
    try:
        for parent in parents:
            for host in hosts:
                kept.append(tempfile.mkdtemp(prefix="maf-bench-calls-", dir=parent))
                # The run's own identity passes through it to its run directory.
                os.chmod(kept[-1], 0o711)
                bench(a, parent, kept[-1], host)
    finally:
        for d in kept:
            shutil.rmtree(d, ignore_errors=True)


def create_floor(where, n=200):
    """The p50 of making one new (empty) file in where, in microseconds."""
    d = os.path.join(where, "create-floor")
    os.mkdir(d)
    samples = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        fd = os.open(os.path.join(d, str(i)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        samples.append(time.perf_counter_ns() - t0)
        os.close(fd)
    return pct(sorted(samples), 0.50)


def fs_type(path):
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, typ = line.split()[:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def wake_floor(build):
    """The machine's floor now (tests/bench/bench_wake.c): one process round trip."""
    p = subprocess.run([str(build / "bench_wake"), "5000"], capture_output=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"bench_wake failed ({p.returncode}): {p.stderr.decode().strip()}")
    return json.loads(p.stdout)


def bench(a, parent, private, host):
    """One host's figures, with its run directory made in private (under parent), kept."""
    build = Path(a.build)
    python = os.environ.get("PYTHON", sys.executable)
    # The settling calls after each legacy block (bench_calls_program.py) are bounded by
    # time, not number: room for 10,000 a block.
    total = 2 * a.warmup + 2 * a.calls + a.legacy_calls + a.calls + 100 + 10000 * a.rounds
    prog_args = [str(a.calls), str(a.legacy_calls), str(a.warmup), str(a.threads),
                 str(a.rounds)]
    if host == "maf-host":
        argv = [str(build / "maf-host"), "run", "--json", "--keep-run-dir",
                "--max-calls", str(total), "--timeout", "600", "--tools-server",
                f"{python} {HERE / 'bench_tools_server.py'}",
                "--tool", "echo", str(HERE / "bench_calls_program.py"), "--", *prog_args]
    else:
        launcher = os.environ.get("MAF_LAUNCH", str(build / "maf-launch"))
        argv = [str(build / "bench_calls_inproc"), "--keep-run-dir", launcher,
                str(HERE / "bench_calls_program.py"), str(total), "600", *prog_args]
    floor = wake_floor(build)
    floor["create_p50_us"] = create_floor(private)
    rep, inner = run_host(argv, 900, env=dict(os.environ, TMPDIR=private))
    figures = {"host": host, "run_dir_parent": parent, "fs": fs_type(parent), "paths": {},
               "machine": {"cpus": os.cpu_count(),
                           "loadavg": open("/proc/loadavg").read().split()[:3]}}
    for name, samples in inner["samples_ns"].items():
        s = sorted(samples)
        mean_us = sum(s) / len(s) / 1000.0
        figures["paths"][name] = {
            "calls": len(s), "p50_us": pct(s, 0.50), "p99_us": pct(s, 0.99),
            "mean_us": mean_us, "calls_per_s": 1e6 / mean_us,
            "sleeps_per_call": inner["sleeps"][name] / len(s),
        }
    par = inner["parallel"]
    figures["parallel"] = {"threads": par["threads"], "calls": par["calls"],
                           "calls_per_s": par["calls"] / (par["wall_ns"] / 1e9),
                           "errors": par["errors"]}
    figures["floor"] = floor
    figures["served"] = {"calls": rep["calls"], "ops": rep["ops"], "wall_ms": rep["wall_ms"],
                         "transport": f"auto ({rep.get('transport', 'files')})"}
    if a.json:
        print(json.dumps(figures))
        return
    m = figures["machine"]
    what = ("maf-host + tools server" if host == "maf-host"
            else "libmafhost, tool in-process (bench_calls_inproc)")
    print(f"== {what}; run directory under {parent} ({figures['fs']}); {m['cpus']} CPUs, load "
          f"{' '.join(m['loadavg'])}")
    print(f"{'path':<23} {'calls':>6} {'p50 us':>9} {'p99 us':>9} {'mean us':>9} "
          f"{'calls/s':>9} {'sleeps/call':>12}")
    for name, f in figures["paths"].items():
        print(f"{name:<23} {f['calls']:>6} {f['p50_us']:>9.0f} {f['p99_us']:>9.0f} "
              f"{f['mean_us']:>9.0f} {f['calls_per_s']:>9.0f} {f['sleeps_per_call']:>12.2f}")
    pf = figures["parallel"]
    print(f"channel-shim, {pf['threads']} threads at once: {pf['calls']} calls, "
          f"{pf['calls_per_s']:.0f} calls/s" + (f"  ERRORS: {pf['errors']}" if pf["errors"]
                                                 else ""))
    ch = figures["paths"]["channel-shim"]
    lg = figures["paths"]["legacy-files"]
    best_rate = max(ch["calls_per_s"], pf["calls_per_s"])
    print(f"against the targets: p50 {ch['p50_us']:.0f} us (target <= {TARGET_P50_US:.0f}: "
          f"{'met' if ch['p50_us'] <= TARGET_P50_US else 'MISSED'}), "
          f"{best_rate:.0f} calls/s (target >= {TARGET_RATE:.0f}: "
          f"{'met' if best_rate >= TARGET_RATE else 'MISSED'}); "
          f"legacy files p50 {lg['p50_us'] / 1000:.1f} ms, "
          f"{lg['p50_us'] / ch['p50_us']:.0f}x the channel's")
    # program -> launcher -> host (-> tools server -> host) -> launcher -> program
    trips = 3 if host == "maf-host" else 2
    print(f"floor, measured just before: a round trip between two processes over a socketpair "
          f"p50 {floor['p50_us']:.0f} us (a call passes the turn {2 * trips} times: {trips} "
          f"round trips, {trips * floor['p50_us']:.0f} us); making a new file under {parent} p50 "
          f"{floor['create_p50_us']:.0f} us (a legacy call makes two, a channel call none)")
    ops = rep["ops"]
    print(f"host side: {rep['calls']} calls served, backend ops {ops}, wall {rep['wall_ms']} ms")
    print()


if __name__ == "__main__":
    main()
