"""One deadline for the whole run: a program that never ends is stopped at --timeout, the
output read before, status timeout, and no process of the run survives."""
import time

from conftest import host_run, pid_alive


def test_program_that_never_ends_is_stopped_at_the_deadline(host):
    # host_run's own timeout is the safety net: only the deadline can end this run.
    proc, rep = host_run("forever.py", "--timeout", "3", timeout=60)
    assert rep is not None, (proc.stdout, proc.stderr)
    assert rep["status"] == "timeout", rep
    assert proc.returncode == 124
    assert "timed out" in proc.stderr.decode()
    line = [ln for ln in rep["output"].splitlines() if ln.startswith("pids ")]
    assert line, rep["output"]
    pids = [int(p) for p in line[0].split()[1:]]
    assert len(pids) == 3
    if rep.get("supervisor_pid"):
        pids.append(rep["supervisor_pid"])
    deadline = time.monotonic() + 5
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if pid_alive(p)]


def test_deadline_also_bounds_a_slow_tool(host):
    # The tool would sleep an hour and has no time limit of its own below the run's: only
    # the deadline ends the call (host_run's timeout is the safety net).
    proc, rep = host_run("calls.py", "--timeout", "2", "--tool", "slow=sleep 3600",
                         args=['[["slow", {}]]'], timeout=60)
    assert rep is not None, (proc.stdout, proc.stderr)
    assert rep["status"] in ("timeout", "exited"), rep


def test_sigint_stops_the_run_cleanly(host):
    import json
    import signal
    import subprocess

    from conftest import PROGRAMS

    p = subprocess.Popen([host, "run", "--json", str(PROGRAMS / "forever.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    rep = json.loads(out)
    assert rep["status"] == "stopped", rep
    assert "stopped" in err.decode()
    pids = [int(x) for x in rep["output"].split("pids", 1)[1].split()]
    deadline = time.monotonic() + 5
    while any(pid_alive(x) for x in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [x for x in pids if pid_alive(x)]
