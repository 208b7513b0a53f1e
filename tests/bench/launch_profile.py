#!/usr/bin/python3
"""make bench-launch's profile: where one launch's time goes, step by step.

    usage: launch_profile.py LAUNCHER [--iterations N] [--dir DIR]

LAUNCHER is a maf-launch built with -DMAFL_PROFILE (guest/profile.h), whose launch records
the monotonic clock at each of its steps, in the launcher, the supervisor and the program's
process (which share one memory until the exec), and prints them on stderr as the launcher
exits. Each of N launches of a trivial python3 program gets a fresh run directory under DIR
(default $TMPDIR or /tmp), removed once its run has ended; the steps are printed in order,
each with the median time since the step before it and since the first mark, over the N
launches, and how often it ran on the CPU the launcher started on. What comes before the first mark (the exec of maf-launch) and after the last (its
exit) is not in it: `maf-launch --version` in make bench-launch is that floor. Figures only."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def one(launcher, base, python):
    run = tempfile.mkdtemp(prefix="maf-profile-", dir=base)
    os.chmod(run, 0o755)
    os.mkdir(os.path.join(run, "host_tools"))
    program = os.path.join(run, "host_tools", "program.py")
    with open(program, "w") as f:
        f.write("pass\n")
    proc = subprocess.run([launcher, "run", "--run-dir", run, "--", python, program],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        sys.exit(f"launch_profile: the launch failed ({proc.returncode}): {proc.stderr}")
    marks = []
    for line in proc.stderr.splitlines():
        if line.startswith("PROFILE "):
            _, ns, cpu, step = line.split(" ", 3)
            marks.append((step, int(ns), int(cpu)))
    marker = os.path.join(run, "host_tools", "program_exit_code")
    deadline = time.monotonic() + 30
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.005)
    shutil.rmtree(run, ignore_errors=True)
    return marks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("launcher")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp"))
    a = ap.parse_args()
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "python3"
    runs = [one(a.launcher, a.dir, python) for _ in range(a.iterations)]
    order = [step for step, _, _ in runs[0]]
    if not order or any([s for s, _, _ in r] != order for r in runs):
        # The launcher's and the supervisor's steps overlap, and may interleave differently:
        # each step is then placed by its median time from the first mark.
        order = sorted({s for r in runs for s, _, _ in r},
                       key=lambda s: statistics.median(ns for r in runs for t, ns, _ in r
                                                       if t == s))
    at = {s: statistics.median(ns for r in runs for t, ns, _ in r if t == s) for s in order}
    # How often the step ran on the CPU the launcher started on: the launcher, the supervisor
    # and the program's process run one after the other there, or side by side.
    same = {s: sum(1 for r in runs for t, _, c in r if t == s and c == r[0][2]) / len(runs)
            for s in order}
    print(f"launch profile: {a.iterations} launches under {a.dir}, median microseconds")
    print(f"  {'since previous':>14}  {'since first':>11}  {'same CPU':>8}  step")
    prev = 0
    for step in order:
        print(f"  {(at[step] - prev) / 1000:14.0f}  {at[step] / 1000:11.0f}  "
              f"{same[step]:8.0%}  {step}")
        prev = at[step]


if __name__ == "__main__":
    main()
