#!/usr/bin/env python3
"""make bench-python: the Python package (mafhost) as a host on the local backend, the
current one (this tree's host/python with this tree's build) against the previous release
(the package and library of git revision --baseline, ad4847e by default), in one run.

The previous release is built from git history without touching the working tree: `git
archive REV | tar -x` into a temporary directory, then `make TP=<this tree's third-party
build> all` there (--baseline-dir names a tree already built instead). Every measurement of
either version is a fresh process (bench_python_host.py) whose PYTHONPATH is that version's
host/python alone, which loads that version's libmafhost explicitly (mafhost.load) and runs
that version's maf-launch; it checks where mafhost and the library came from.

1. Per call: the same program (bench_python_program.py: N calls of `echo`, each timed by
   the program) served by each version, alternately (the first of each pair alternating
   too), ROUNDS host processes of each (12 by default): p50 and p99 of the calls with
   `echo` a plain tool (a worker thread a call) and inline (inline=True), and each
   process's own p50, in three placements. On every CPU, as a host runs: a call's processes
   (the host, `maf-launch serve`, the supervisor, the program) share a CPU in one host
   process and not in the next, and a wake-up across CPUs costs more than the work, so
   that the processes' p50s fall in modes whichever version runs, and a ratio of few
   processes is decided by the modes each version drew; its figure, the mean of the
   processes' p50s, is printed, not judged. Then with each host process and all it starts
   on one CPU, and with the host on one CPU and the launcher and all it starts on the other
   (the launcher run through `taskset -c CPU`): each process placed alike for both
   versions. The target, current over previous no worse than 1.0 within a tolerance
   printed beside it (5% by default), is judged in each of these two placements on the
   median of the processes' p50s. maf-host (the C command line, with a tools server) on
   the same program is a reference line on every CPU.
2. Scale: for each version, 1, 10, 100 and 1000 runs of a 10-call program at once on one
   event loop, each level and version in a fresh process (so that its peak memory is its
   own), in as many rounds as make --min-runs runs at least (1: 100 rounds, 10: 10): every
   run's status, the calls answered, the host process's own CPU time (user + system of all
   its threads, not its children's) per call, its peak RSS above its peak before the runs,
   per run at once, the calls' p50 and p99 as the programs timed them, the wall time of a
   round, and the threads (threading.active_count() and the kernel's Threads:) and open
   descriptors the process had at their peak (sampled every 0.1 s). Each run is
   `python3 -S -E` with the program and its shim (standard library only) under one
   supervisor of the launcher; the host raises RLIMIT_NOFILE to its hard limit. Target: at
   the top level (1000) every run of the current version completes with every call
   answered. A version that cannot complete a level is reported with what happened. All of
   a process's rounds run on one event loop, as a host's runs do.
3. Beside: the current version's top level again, and over the same span a second host
   process of the current version serving rounds of 10 runs at once (from the first one's
   measured start until it ends). Target: the host CPU per call at 1000 runs no more than
   at 10 under the same load (within the tolerance). Part 2's levels each have the machine
   to themselves, and differ in more than the host's runs: at 1000, a thousand programs
   start on two CPUs at once, and a host process pays for sharing them in the kernel
   (preemptions, wake-ups, the scheduler's tick), whatever it serves. A host serving 10 runs
   beside them pays the same, so the ratio of the two is the host's own growth with its
   runs. Part 2 prints the ratio of its levels too, as a figure.
Before each measurement the bench waits (--settle, 60 s at most) for the CPUs to be under
25% busy, since the last level's runs would weigh on the next (the load average lags for
minutes after them, though they have all ended).
Figures only, each beside its baseline measured in the same run, with the machine's load
average at each part; at the end a Markdown table (one row per version and level). Nothing
fails but a run of the current version that does not complete (exit status 1). Run
directories are made in a temporary directory under --runs-in, /dev/shm by default where it is
a tmpfs ($TMPDIR otherwise), the baseline's build in one under $TMPDIR; both are removed at
the end. The run directories' file system is printed with the figures: on a disk's ext4
without a journal (as on many virtual machines), creating a file costs a scan past every
inode deleted in the last seconds (the kernel's recently_deleted() in find_inode_bit()), so
1,000 runs' files created and removed at once make each creation dearer, a cost of the
disk and not of the host; `--runs-in /tmp` measures it."""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
sys.path.insert(0, str(HERE))

from host_run import run_host  # noqa: E402

HOST = HERE / "bench_python_host.py"
PROGRAM = HERE / "bench_python_program.py"
def library_of(tree):
    """libmafhost.so.VERSION, VERSION as that tree's header says."""
    header = (Path(tree) / "host" / "include" / "mafhost.h").read_text()
    return "libmafhost.so." + re.search(r'^#define MAFH_VERSION "(.*)"$', header,
                                        re.M).group(1)


class Version:
    def __init__(self, name, label, tree, build):
        self.name, self.label = name, label
        self.package = Path(tree) / "host" / "python"
        self.library = Path(build) / library_of(tree)
        self.launcher = Path(build) / "maf-launch"

    def missing(self):
        return [str(p) for p in (self.package / "mafhost", self.library, self.launcher)
                if not p.exists()]


def ms(us):
    """A time in us, as the table shows it."""
    if us is None:
        return "-"
    return f"{us / 1000:.2f} ms" if us < 10_000 else f"{us / 1000:,.0f} ms"


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def cpu_per_call(f):
    """A scale host's own CPU per call answered, us."""
    return f["cpu_s"] * 1e6 / max(1, f["answered"])


def shortfall(f, total):
    """What a scale host's figures f lack of total runs complete after a good warm-up, in
    words; None when nothing."""
    if f["complete"] == total and not f["warm_up"]:
        return None
    what = "; ".join(f"{c} x {w}" for w, c in f["failures"])
    if f["warm_up"]:
        what = f"warm-up: {f['warm_up']}; " + what
    return f"statuses {f['statuses']}: {what}"


def fs_type(path):
    """The file system type of the mount holding path (the longest mount point over it)."""
    path, best, kind = os.path.realpath(path), "", "unknown"
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                point = fields[4].encode().decode("unicode_escape")
                sep = fields.index("-")
                under = path == point or path.startswith(point.rstrip("/") + "/")
                if under and len(point) >= len(best):
                    best, kind = point, fields[sep + 1]
    except (OSError, ValueError, IndexError):
        pass
    return kind


def default_runs_in():
    """/dev/shm where it is a writable tmpfs, else $TMPDIR (or /tmp)."""
    if fs_type("/dev/shm") == "tmpfs" and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return os.environ.get("TMPDIR", "/tmp")


def load_avg():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_busy(window_s=1.0):
    """The share of the machine's CPU time that was busy over the next window_s."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]         # all, idle + iowait
    t0, i0 = sample()
    time.sleep(window_s)
    t1, i1 = sample()
    return 1 - (i1 - i0) / max(1, t1 - t0)


def settle(wait_s, most=0.25):
    """Waits (at most wait_s) until the machine's CPUs were busy less than most of a second:
    the last level's runs (or an earlier bench) would weigh on the next figures. Returns the
    share busy in the last second looked at. (The load average lags by minutes after the
    1000 runs of a level, though nothing of them runs any more.)"""
    deadline = time.monotonic() + wait_s
    busy = cpu_busy()
    while busy >= most and time.monotonic() < deadline:
        busy = cpu_busy()
    return busy


def make_env():
    """The environment for the baseline's make: without the variables a make running this
    script hands down (MAKEFLAGS carries its command line's BUILD=..., which would send the
    baseline's build into this tree's)."""
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES", "MAKE_TERMOUT",
              "MAKE_TERMERR", "GNUMAKEFLAGS"):
        env.pop(k, None)
    return env


def build_baseline(rev, tp, tmp):
    """Builds rev's tree in tmp/prev; returns (its directory, seconds) or (None, why)."""
    if not (Path(tp) / ".stamp").exists():
        return None, f"{tp} holds no third-party build (.stamp): run make first"
    prev = Path(tmp) / "prev"
    prev.mkdir()
    t0 = time.monotonic()
    git = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(prev)], stdin=git.stdout,
                         capture_output=True)
    git.stdout.close()
    gerr = git.stderr.read().decode()
    if git.wait() != 0 or tar.returncode != 0:
        return None, f"git archive {rev} failed: {gerr.strip()} {tar.stderr.decode().strip()}"
    log = Path(tmp) / "build.log"
    with open(log, "wb") as f:
        rc = subprocess.run(["make", "-C", str(prev), f"TP={tp}", "all"], stdout=f,
                            stderr=subprocess.STDOUT, env=make_env()).returncode
    if rc != 0:
        tail = log.read_text(errors="replace")[-3000:]
        return None, f"make all in {prev} failed ({rc}):\n{tail}"
    return prev, time.monotonic() - t0


def child(v, base, args, timeout, cpu=None, launcher=None):
    """One host process of version v; returns (its JSON, None) or (None, what happened).
    cpu: the one CPU it and every process it starts (the launcher, the program) may run on,
    or None for all of them. launcher: what it runs as v's launcher (v's own by default)."""
    return child_end(child_start(v, base, args, cpu, launcher), timeout)


def child_start(v, base, args, cpu=None, launcher=None):
    """The host process of child(), started."""
    env = dict(os.environ, PYTHONPATH=str(v.package), TMPDIR=str(base))
    env.pop("MAFHOST_LAUNCHER", None)
    argv = [sys.executable, str(HOST), "--package", str(v.package), "--library",
            str(v.library), "--launcher", str(launcher or v.launcher), "--program",
            str(PROGRAM), "--base", str(base)] + args
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True, preexec_fn=pin)


def child_end(p, timeout):
    """child()'s answer for the process p, waited for at most timeout s."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, f"the host process did not end within {timeout:.0f} s (killed)"
    except BaseException:
        # Its own session keeps a ^C from it: end it here, or it outlives the bench.
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        f = json.loads(lines[-1])
    except (ValueError, IndexError):
        what = f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
        return None, f"the host process ended ({what}) with no figures: " \
                     f"{err.decode(errors='replace').strip()[-2000:]}"
    if f.get("failed"):
        return None, f["failed"]
    return f, None


class Bench:
    def __init__(self, a, base, versions):
        self.a, self.base, self.versions = a, base, versions
        self.current_failed = []

    def fail(self, name, what):
        print(f"  {name}: {what}")
        if name != "previous":
            self.current_failed.append(f"{name}: {what}")

    def per_call(self):
        """Three passes: as a host runs (every CPU, where the scheduler places each process),
        then with each host process and all it starts on one CPU, then with the host on one
        CPU and the launcher and all it starts on another. On two CPUs a call's processes
        share a CPU or not, differently from one host process to the next, and a wake-up
        across CPUs costs more than the work: the first pass's p50s fall in modes, and which
        mode more processes drew decides its ratio. The last two place every process alike
        for both versions, and carry the verdict. Returns the first pass's figures."""
        out = self.per_call_pass(None)
        cpus = sorted(os.sched_getaffinity(0))
        self.per_call_pass((cpus[0],))
        taskset = shutil.which("taskset")
        if len(cpus) < 2 or not taskset:
            print("\nper call, the host on one CPU and the launcher on another: not measured "
                  f"({'one CPU here' if len(cpus) < 2 else 'no taskset on PATH'})")
            self.fail("per call", "the split placement could not be measured")
        else:
            self.per_call_pass((cpus[0], cpus[1]), taskset)
        return out

    def wrapper(self, v, cpu, taskset):
        """A launcher that is v's, on CPU cpu: `taskset -c CPU LAUNCHER ARG...`, exec'd (the
        processes it starts inherit the CPU)."""
        w = Path(self.base) / f"launcher-{v.name}-cpu{cpu}"
        w.write_text(f"#!/bin/sh\nexec {shlex.quote(taskset)} -c {cpu} "
                     f"{shlex.quote(str(v.launcher))} \"$@\"\n")
        w.chmod(0o755)
        return w

    def per_call_pass(self, place, taskset=None):
        """place: None (every CPU), (a,) (the host and all it starts on CPU a) or (a, b)
        (the host on CPU a, the launcher and all it starts on CPU b)."""
        a = self.a
        busy = settle(a.settle)
        samples = {(v.name, t): [] for v in self.versions for t in ("thread", "inline")}
        p50s = {k: [] for k in samples}    # each process's own p50, us
        if place is None:
            # The reference host's program, copied once: it runs in the first pass alone.
            samples[("maf-host", "server")] = []
            p50s[("maf-host", "server")] = []
            prog = Path(self.base) / "bench_python_program.py"
            shutil.copy(PROGRAM, prog)
            where = "every CPU"
        elif len(place) == 1:
            where = f"CPU {place[0]} alone, the host and all it starts"
        else:
            where = (f"the host on CPU {place[0]}, the launcher and all it starts (`maf-launch "
                     f"serve`, the supervisor, the program) on CPU {place[1]}")
        launchers = {v.name: self.wrapper(v, place[1], taskset) if place and len(place) > 1
                     else None for v in self.versions}
        cpu = place[0] if place else None
        print(f"\nper call, on {where}: {a.rounds} rounds of {a.calls} calls (`echo`), each "
              f"version in a fresh process, alternately (load {load_avg()}; CPU {busy:.0%} "
              "busy in the second before)")
        transports = {}
        for rnd in range(a.rounds):
            order = self.versions if rnd % 2 == 0 else self.versions[::-1]
            for v in order:
                f, err = child(v, self.base, ["--per-call", str(a.calls),
                                              "--timeout", str(a.timeout)], a.timeout * 3, cpu,
                               launchers[v.name])
                if err:
                    self.fail(v.name, f"round {rnd + 1}: a run did not complete: {err}")
                    continue
                transports[v.name] = f.get("transport")
                for t in ("thread", "inline"):
                    samples[(v.name, t)] += f[t]
                    p50s[(v.name, t)].append(pct(f[t], 0.5) / 1000)
            if place is not None:
                continue
            try:
                argv = [str(BUILD / "maf-host"), "run", "--json", "--max-calls", str(a.calls),
                        "--timeout", str(int(a.timeout)), "--tools-server",
                        f"{sys.executable} {HERE / 'bench_tools_server.py'}", "--tool", "echo",
                        str(prog), "--", str(a.calls)]
                _, inner = run_host(argv, a.timeout * 2, env=dict(os.environ, TMPDIR=self.base))
                samples[("maf-host", "server")] += inner["samples_ns"]
                p50s[("maf-host", "server")].append(pct(inner["samples_ns"], 0.5) / 1000)
            except SystemExit as e:
                self.fail("maf-host", f"round {rnd + 1}: {e}")
        print(f"  transport: {', '.join(f'{k} {t}' for k, t in transports.items())}; "
              f"load after: {load_avg()}")
        # The ratio's figure, one p50 a process, each weighed alike: every CPU, their mean
        # (the p50s fall in modes, and a median falls in one of them); placed, their median
        # (one mode, and a process that met another load on the machine is left aside).
        kind = "mean" if place is None else "median"
        stat = f"{kind} p50"
        print(f"  p50: of every call of every process; {stat}: the {kind} of each process's "
              "own p50 (the ratio's figure)")
        print(f"  {'host':<18} {'tool':<13} {'calls':>6} {'p50 us':>8} {'p99 us':>9} "
              f"{stat:>10} {'current / previous':>19}   each process's p50, us")
        out = {k: (pct(s, 0.5) / 1000, pct(s, 0.99) / 1000, len(s),
                   sum(p50s[k]) / len(p50s[k]) if place is None else statistics.median(p50s[k]))
               for k, s in samples.items() if s}
        for (name, t) in samples:
            label = "maf-host (C CLI)" if name == "maf-host" else f"mafhost {name}"
            tool = {"server": "tools server", "thread": "worker thread"}.get(t, t)
            if (name, t) not in out:
                print(f"  {label:<18} {tool:<13} {0:>6} {'-':>8} {'-':>9}")
                continue
            p50, p99, n, fig = out[(name, t)]
            ratio = f"{'':>19}"
            if name == "current" and ("previous", t) in out:
                ratio = f"{fig / out[('previous', t)][3]:>19.2f}"
            each = " ".join(f"{x:.0f}" for x in p50s[(name, t)])
            print(f"  {label:<18} {tool:<13} {n:>6} {p50:>8.0f} {p99:>9.0f} {fig:>10.0f} "
                  f"{ratio}   {each}")
        tol = a.tolerance
        for t, tool in (("thread", "worker thread"), ("inline", "inline")):
            if ("current", t) in out and ("previous", t) in out:
                r = out[("current", t)][3] / out[("previous", t)][3]
                if place is None:
                    print(f"  every CPU ({tool}): current p50 / previous p50 {r:.2f} (a "
                          "figure: the processes' placement differs from one to the next; "
                          "the target is judged with every process placed, below)")
                else:
                    how = "one CPU" if len(place) == 1 else "host and launcher apart"
                    print(f"  target ({tool}, {how}): current p50 / previous p50 (the median "
                          f"of the processes' p50s) no worse than 1.00, within {tol:.0%} for "
                          f"noise: {r:.2f}, {'met' if r <= 1 + tol else 'NOT met'}")
            elif place is not None and ("previous", t) in out:
                print(f"  target ({tool}): NOT met (the current version was not measured)")
        return out

    def scale(self):
        a = self.a
        print(f"\nscale: runs of {a.scale_calls} calls at once on one event loop, each level "
              f"and version in a fresh process, in rounds of that many to {a.min_runs} runs "
              "at least (load 1m and busy: the load average and the share of CPU busy in the "
              "second before; wall: one round; CPU: the host process's own, user + system; "
              "RSS: its peak above its peak before, per run at once; threads and fds: at "
              "their peak)")
        print(f"  {'version':<9} {'runs':>5} {'rounds':>6} {'load 1m':>7} {'busy':>5} "
              f"{'complete':>9} {'answered':>9} {'wall s':>7} {'CPU us/call':>12} "
              f"{'RSS KiB/run':>12} {'p50 ms':>8} {'p99 ms':>9} {'threads':>8} {'fds':>6}")
        rows = {}
        for i, n in enumerate(a.levels):
            rounds = max(1, -(-a.min_runs // n))
            order = self.versions if i % 2 == 0 else self.versions[::-1]
            for v in order:
                busy = settle(a.settle)
                load = os.getloadavg()[0]
                args = ["--scale", str(n), "--rounds", str(rounds), "--calls",
                        str(a.scale_calls), "--timeout", str(a.timeout)]
                f, err = child(v, self.base, args, rounds * (a.timeout + 60) + 120)
                if err:
                    rows[(v.name, n)] = {"error": err}
                    print(f"  {v.name:<9} {n:>5} {rounds:>6} {load:>7.2f} {busy:>5.0%}  "
                          f"did not complete: {err}")
                    if v.name == "current":
                        self.current_failed.append(f"{n} runs: {err}")
                    continue
                total = n * rounds
                f["load"] = load
                f["cpu_us_call"] = cpu_per_call(f)
                f["rss_kb_run"] = (f["peak_rss_kb"] - f["rss_before_kb"]) / n
                s = f.pop("samples_ns")
                f["p50_us"] = pct(s, 0.5) / 1000 if s else None
                f["p99_us"] = pct(s, 0.99) / 1000 if s else None
                rows[(v.name, n)] = f
                print(f"  {v.name:<9} {n:>5} {rounds:>6} {load:>7.2f} {busy:>5.0%} "
                      f"{f['complete']:>4}/{total:<4} {f['answered']:>9} {f['wall_s']:>7.2f} "
                      f"{f['cpu_us_call']:>12.0f} {f['rss_kb_run']:>12.0f} "
                      f"{ms(f['p50_us']).replace(' ms', ''):>8} "
                      f"{ms(f['p99_us']).replace(' ms', ''):>9} "
                      f"{f['threads']:>8} {f['fds']:>6}")
                short = shortfall(f, total)
                if short:
                    print(f"  {'':<9} {short}")
                    if v.name == "current":
                        self.current_failed.append(f"{n} runs: {short}")
        print(f"  load after: {load_avg()}")
        self.scale_targets(rows)
        return rows

    def scale_targets(self, rows):
        a, tol = self.a, self.a.tolerance
        top = max(a.levels)
        f = rows.get(("current", top))
        rounds = max(1, -(-a.min_runs // top))
        want = top * rounds * a.scale_calls
        if f and "error" not in f:
            done = f["complete"] == top * rounds and f["answered"] == want
            print(f"  target: {top} runs at once, every run complete and every call answered "
                  f"(current): {'met' if done else 'NOT met'} ({f['complete']} of "
                  f"{top * rounds} runs, {f['answered']} of {want} calls)")
        elif f:
            print(f"  target: {top} runs at once, every call answered (current): NOT met")
        ten = rows.get(("current", 10))
        if f and ten and "error" not in f and "error" not in ten and top != 10:
            r = f["cpu_us_call"] / ten["cpu_us_call"]
            print(f"  the current version's host CPU per call at {top} runs against 10, each "
                  f"level on the machine alone: {f['cpu_us_call']:.0f} us against "
                  f"{ten['cpu_us_call']:.0f} us ({r:.2f}; the levels' own load differs: the "
                  "target is judged under the same load, in the part after this one)")
        print(f"  threads of the host process at the peak of {top} runs at once "
              "(the kernel's Threads:, threading.active_count(); before the runs; a plain "
              "tool runs on asyncio's default executor, up to "
              f"{min(32, (os.cpu_count() or 1) + 4)} workers here, in either version):")
        for v in self.versions:
            g = rows.get((v.name, top))
            if not g or "error" in g:
                print(f"    {v.name:<9} not measured: the level did not complete")
                continue
            b = g["before"]
            print(f"    {v.name:<9} {g['threads']:>5} threads, {g['py_threads']:>5} in "
                  f"threading ({b['threads']} and {b['py_threads']} before); "
                  f"{g['fds']} fds at the peak ({b['fds']} before)")

    def beside(self):
        """The current version's host CPU per call at the top level against 10 runs, under
        the same load: a second host process serves rounds of 10 runs beside the top level's
        host, over the same span. Each level alone differs in more than the host's runs: at
        1,000, a thousand programs start at once on the machine's CPUs, and the host pays in
        the kernel for sharing them (preemptions, wake-ups, the scheduler's ticks), which a
        host serving 10 runs beside them pays as much. Returns the two figures, or None."""
        a, tol = self.a, self.a.tolerance
        top, v = max(a.levels), self.versions[0]
        if top <= 10:
            return None
        rounds = max(1, -(-a.min_runs // top))
        print(f"\nbeside: {top} runs at once of the current version, and beside them, over "
              "the same span, a second host process of the current version serving rounds "
              "of 10 runs at once (from the first's measured start to its end): each host's "
              "own CPU per call, under the same load of the machine")
        busy = settle(a.settle)
        load = os.getloadavg()[0]
        marks = Path(tempfile.mkdtemp(prefix="beside-", dir=self.base))
        started, until = marks / "started", marks / "until"
        common = ["--calls", str(a.scale_calls), "--timeout", str(a.timeout)]
        small = child_start(v, self.base, ["--scale", "10", "--start-after", str(started),
                                           "--until", str(until)] + common)
        try:
            big, big_err = child(v, self.base, ["--scale", str(top), "--rounds", str(rounds),
                                                "--started", str(started)] + common,
                                 rounds * (a.timeout + 60) + 120)
        finally:
            started.touch()    # a host beside still waiting (the first failed) goes on
            until.touch()
            ten, ten_err = child_end(small, a.timeout * 2 + 180)
            shutil.rmtree(marks, ignore_errors=True)
        print(f"  load 1m {load:.2f}, busy {busy:.0%} before")
        print(f"  {'host':<14} {'rounds':>6} {'complete':>11} {'answered':>9} {'wall s':>7} "
              f"{'CPU us/call':>12}")
        out = {}
        for name, n, f, err in ((f"{top} runs", top, big, big_err),
                                ("10 runs beside", 10, ten, ten_err)):
            if err:
                print(f"  {name:<14} did not complete: {err}")
                self.current_failed.append(f"beside, {name}: {err}")
                continue
            f["cpu_us_call"] = cpu_per_call(f)
            total = n * f["rounds"]
            print(f"  {name:<14} {f['rounds']:>6} {f['complete']:>5}/{total:<5} "
                  f"{f['answered']:>9} {f['total_wall_s']:>7.1f} {f['cpu_us_call']:>12.0f}")
            short = shortfall(f, total)
            if short:
                print(f"  {'':<14} {short}")
                self.current_failed.append(f"beside, {name}: {short}")
            out[n] = f
        if top in out and 10 in out:
            r = out[top]["cpu_us_call"] / out[10]["cpu_us_call"]
            print(f"  target: the current version's host CPU per call at {top} runs no more "
                  f"than at 10 under the same load, within {tol:.0%} for noise: "
                  f"{out[top]['cpu_us_call']:.0f} us against {out[10]['cpu_us_call']:.0f} us "
                  f"({r:.2f}), {'met' if r <= 1 + tol else 'NOT met'}")
        else:
            print(f"  target: host CPU per call at {top} runs no more than at 10 under the "
                  "same load: NOT met (not measured)")
        return out

    def table(self, rows, calls_out, beside=None):
        a = self.a
        print("\n| version | runs at once | runs complete | calls answered | host CPU per call "
              "| peak RSS per run | call p50 | call p99 | wall (one round) | threads at peak |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in a.levels:
            for v in self.versions:
                f = rows.get((v.name, n))
                if f is None:
                    continue
                rounds = max(1, -(-a.min_runs // n))
                if "error" in f:
                    print(f"| {v.label} | {n:,} | did not complete | | | | | | | |")
                    continue
                print(f"| {v.label} | {n:,} | {f['complete']:,} of {n * rounds:,} | "
                      f"{f['answered']:,} of {n * rounds * a.scale_calls:,} | "
                      f"{f['cpu_us_call']:,.0f} us | {f['rss_kb_run']:,.0f} KiB | "
                      f"{ms(f['p50_us'])} | {ms(f['p99_us'])} | "
                      f"{f['wall_s']:,.2f} s | {f['threads']:,} |")
        parts = []
        for v in self.versions:
            if (v.name, "thread") in calls_out:
                p50, p99, _, mean = calls_out[(v.name, "thread")]
                parts.append(f"{v.label} {ms(p50)} (p99 {ms(p99)}, mean of the processes' "
                             f"p50s {ms(mean)})")
        if parts:
            print(f"\nper call on every CPU ({a.rounds} x {a.calls} sequential calls, a plain "
                  "tool), p50: " + "; ".join(parts))
        if beside and len(beside) == 2:
            (top, f), (_, g) = sorted(beside.items(), reverse=True)
            print(f"beside, under the same load: host CPU per call {f['cpu_us_call']:,.0f} us "
                  f"at {top:,} runs, {g['cpu_us_call']:,.0f} us at 10 "
                  f"({f['cpu_us_call'] / g['cpu_us_call']:.2f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per run, per-call part")
    ap.add_argument("--rounds", type=int, default=12,
                    help="host processes of each version, per-call part")
    ap.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")],
                    default=[1, 10, 100, 1000], help="runs at once, scale part")
    ap.add_argument("--scale-calls", type=int, default=10, help="calls per run, scale part")
    ap.add_argument("--min-runs", type=int, default=100,
                    help="runs per level at least, scale part (in rounds of N at once)")
    ap.add_argument("--baseline", default="ad4847e", help="the previous release's revision")
    ap.add_argument("--baseline-dir", help="a tree of the previous release already built "
                    "(host/python, build/libmafhost.so.VERSION, build/maf-launch)")
    ap.add_argument("--tp", default=str(ROOT / "build" / "third_party"),
                    help="the third-party build the baseline's make reuses (TP)")
    ap.add_argument("--timeout", type=float, default=600, help="a run's timeout, s")
    ap.add_argument("--runs-in", default=None,
                    help="where the run directories are made (default: /dev/shm where it is "
                    "a tmpfs, else $TMPDIR); its file system is printed with the figures")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="how far past a ratio's target still counts as met (noise)")
    ap.add_argument("--settle", type=float, default=60,
                    help="seconds at most to wait, before each measurement, for the CPUs to "
                    "be busy less than 25%% of a second")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    t_start = time.monotonic()
    tmpdir = os.environ.get("TMPDIR", "/tmp")
    runs_in = a.runs_in or default_runs_in()
    if not os.path.isdir(runs_in):
        sys.exit(f"bench-python: --runs-in {runs_in}: not a directory")
    base = tempfile.mkdtemp(prefix="mafhost-bench-", dir=runs_in)
    os.chmod(base, 0o711)
    prev_tmp = None
    try:
        current = Version("current", "current", ROOT, BUILD)
        if current.missing():
            sys.exit(f"bench-python: not built: {', '.join(current.missing())} (run make)")
        versions = [current]
        who = "root" if os.getuid() == 0 else f"uid {os.getuid()}"
        print(f"make bench-python: mafhost on the local backend, as {who}, {os.cpu_count()} "
              f"CPUs, load {load_avg()}; run directories in {runs_in} ({fs_type(base)})")
        print(f"  current:  package {current.package}, library {current.library}, "
              f"launcher {current.launcher}")
        if a.baseline_dir:
            prev, how = Path(a.baseline_dir).resolve(), "built beforehand"
        else:
            prev_tmp = tempfile.mkdtemp(prefix="mafhost-bench-prev-", dir=tmpdir)
            prev, how = build_baseline(a.baseline, os.path.abspath(a.tp), prev_tmp)
            if prev is None:
                print(f"  previous: {a.baseline} could not be built, so the current version is "
                      f"measured alone: {how}")
            else:
                how = f"built from git {a.baseline} in {how:.0f} s"
        if prev is not None:
            label = "previous" + ("" if a.baseline_dir else f" ({a.baseline})")
            previous = Version("previous", label, prev, prev / "build")
            if previous.missing():
                print(f"  previous: not usable, so the current version is measured alone: "
                      f"missing {', '.join(previous.missing())}")
            else:
                versions.append(previous)
                print(f"  previous: package {previous.package}, library {previous.library}, "
                      f"launcher {previous.launcher} ({how})")
        bench = Bench(a, base, versions)
        calls_out = bench.per_call()
        rows = bench.scale()
        beside = bench.beside()
        bench.table(rows, calls_out, beside)
        print(f"\nmake bench-python: {time.monotonic() - t_start:.0f} s in all")
        if bench.current_failed:
            sys.exit("bench-python: runs of the current version did not complete:\n  "
                     + "\n  ".join(bench.current_failed))
    finally:
        for d in (base, prev_tmp):
            if d:
                shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
