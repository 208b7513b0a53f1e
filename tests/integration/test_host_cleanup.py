"""A host's own cleanup never races the supervisor.

maf-sandbox ends a run at its deadline with `kill -KILL -- -SESSION` (the session the
launcher reported) and at once removes the transport directory with `rm -rf R/host_tools`.
Nothing may appear in that directory after the kill: a file made there between rm's listing
and its rmdir makes rm fail with "Directory not empty", which maf-sandbox reports as a run
that kept its transport files. The shell launcher writes its markers from inside the
session, so the kill ends the writer too; maf-launch's supervisor stays outside the session
(the program cannot kill it), and leaves the markers to a process of its own inside it."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, launch, launch_info, pid_alive, probe

ROUNDS = 100


def wait_gone(pid, timeout=30.0):
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} still there after {timeout}s")
        time.sleep(0.005)


def wait_for(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s")
        time.sleep(0.002)


def run_uid_processes(uid):
    """Pids of live processes whose real uid is uid."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                if pid_alive(int(d.name)):
                    found.append(int(d.name))
    return found


def kill_session_then_remove(run_dir, info, delay):
    """maf-sandbox's timeout path: the session killed, then rm -rf R/host_tools as soon as
    its backend runs it: delay seconds later (a backend's exec takes from a millisecond on
    this machine to a hundred over Docker)."""
    os.killpg(info["session"], signal.SIGKILL)
    if delay:
        time.sleep(delay)
    return subprocess.run(["rm", "-rf", str(run_dir / HOST_TOOLS)], capture_output=True,
                          timeout=60)


@pytest.mark.parametrize("moment", ["mid-call", "at-once", "in-output"])
def test_session_kill_then_rm_rf_never_races(tmp_path, moment):
    """100 runs killed the way maf-sandbox kills them at its deadline, each followed by
    `rm -rf R/host_tools` after a delay that sweeps 0 to 30 ms, across the moments the
    supervisor takes to see the kill and end the run (a few ms to a few tens here): every
    removal succeeds, nothing reappears, no process of the run survives, and the supervisor
    leaves."""
    failures = []
    for i in range(ROUNDS):
        run_dir = tmp_path / f"run{i}"
        run_dir.mkdir()
        if moment == "in-output":
            # Floods its output, so the supervisor is busy relaying when the kill lands.
            program = ["/usr/bin/python3", "-c",
                       "import sys\nwhile True: sys.stdout.write('x' * 4096)"]
        else:
            # One call that nobody answers: a request is in flight when the kill lands.
            program = [probe("chan_call"), str(LAUNCHER), "add", '{"a": 1, "b": 2}']
        proc = launch(run_dir, *program, opts=("--tool", "add"))
        assert proc.returncode == 0, proc.stderr
        info = launch_info(proc)
        if moment == "mid-call":
            wait_for(run_dir / HOST_TOOLS / "host_tool_calls" / "0001.request.json")
        elif moment == "in-output":
            out = run_dir / HOST_TOOLS / "program_output.txt"
            deadline = time.monotonic() + 30
            while out.stat().st_size == 0 and time.monotonic() < deadline:
                time.sleep(0.002)
        rm = kill_session_then_remove(run_dir, info, i * 0.0003)
        if rm.returncode != 0:
            failures.append(f"run {i}: rm -rf exited {rm.returncode}: "
                            f"{rm.stderr.decode(errors='replace').strip()}")
        wait_gone(info["supervisor_pid"])
        if (run_dir / HOST_TOOLS).exists():
            left = sorted(p.name for p in (run_dir / HOST_TOOLS).iterdir())
            failures.append(f"run {i}: R/host_tools is still there, holding {left}")
        if info.get("identity") == "own":
            assert run_uid_processes(info["uid"]) == [], f"run {i}: a process survived"
    assert failures == [], f"{len(failures)} of {ROUNDS} runs raced:\n" + "\n".join(failures)


def test_a_program_that_ends_by_itself_still_leaves_its_markers(run_dir):
    """The other side of the same coin: without a kill from outside, the exit marker and the
    record are written as always, and a later rm -rf removes them."""
    proc = launch(run_dir, probe("run_hello"), "3")
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    marker = run_dir / HOST_TOOLS / "program_exit_code"
    wait_for(marker)
    assert marker.read_text() == "3"
    assert (run_dir / HOST_TOOLS / "program_exit.json").exists()
    wait_gone(info["supervisor_pid"])
    rm = subprocess.run(["rm", "-rf", str(run_dir / HOST_TOOLS)], capture_output=True)
    assert rm.returncode == 0, rm.stderr
