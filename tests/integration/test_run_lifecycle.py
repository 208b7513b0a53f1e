"""The life of a run under `maf-launch run`: detached from the caller, timed out, the whole
tree ended, the output capped. Every assertion is on behaviour (which process exists, which
file holds what), never on how long something took."""
import os
import select
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, exit_record, launch, launch_info, pid_alive, probe, \
    wait_exit

EXIT_MARKER = "program_exit_code"


def write_program(run_dir, text):
    ht = run_dir / HOST_TOOLS
    ht.mkdir(exist_ok=True)
    (ht / "program.py").write_text(text)
    return str(ht / "program.py")


def wait_file(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.01)
    raise AssertionError(f"{path} did not appear in {timeout}s")


# --- Detach -------------------------------------------------------------------------------

def test_caller_reading_pipes_to_eof_returns_while_program_runs(run_dir):
    prog = write_program(run_dir, "import time\ntime.sleep(3)\nprint('done')\n")
    # capture_output reads stdout and stderr to EOF, as docker exec does: it returns only when
    # no process holds the write ends any more.
    proc = launch(run_dir, "python3", prog)
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    marker = run_dir / HOST_TOOLS / EXIT_MARKER
    assert pid_alive(info["pid"]), "the program should still be running"
    assert pid_alive(info["supervisor_pid"]), "the supervisor should stay with the program"
    assert not marker.exists(), "the exit marker must not exist while the program runs"
    assert wait_exit(run_dir) == "0"
    assert (run_dir / HOST_TOOLS / "program_pid").read_text() == str(info["pid"])
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == "done\n"


def test_program_holds_none_of_the_callers_descriptors(run_dir):
    # Reports where its descriptors 0..2 lead, and whether stdin is at EOF at once.
    prog = write_program(run_dir, (
        "import os, sys, stat\n"
        "print('stdin=' + os.readlink('/proc/self/fd/0'))\n"
        "s, n = os.fstat(0), os.stat('/dev/null')\n"
        "print('stdin_is_devnull=' + str(stat.S_ISCHR(s.st_mode) and s.st_rdev == n.st_rdev))\n"
        "print('stdin_read=' + repr(sys.stdin.read()))\n"
        "print('stdout_is_pipe_or_file=' + str(not os.isatty(1)))\n"
        "print('channel=' + os.environ.get('MAF_HOST_TOOLS_FD', ''))\n"
        "print('fds=' + ' '.join(sorted(os.listdir('/proc/self/fd'), key=int)))\n"
    ))
    # The caller's stdin is a pipe it never closes: were the program reading it, it would
    # block forever.
    r, w = os.pipe()
    try:
        proc = launch(run_dir, "python3", prog, stdin=r)
    finally:
        os.close(r)
    try:
        assert proc.returncode == 0, proc.stderr
        assert wait_exit(run_dir) == "0"
    finally:
        os.close(w)
    out = (run_dir / HOST_TOOLS / "program_output.txt").read_text()
    assert "stdin=/dev/null\n" in out
    assert "stdin_is_devnull=True\n" in out
    assert "stdin_read=''\n" in out
    # Only 0, 1, 2, the call channel when there is one, and the descriptor listdir itself
    # opened: nothing leaked from the launcher or the caller.
    fds = next(l for l in out.splitlines() if l.startswith("fds=")).split("=", 1)[1].split()
    channel = next(l for l in out.splitlines() if l.startswith("channel=")).split("=", 1)[1]
    assert fds[:3] == ["0", "1", "2"]
    assert len([f for f in fds[3:] if f != channel]) == 1, out


def fd_links(pid):
    """The targets of process pid's open descriptors. A descriptor that closes between the
    listing and its readlink (a dynamic loader's library, say) is skipped."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return links


def test_no_process_of_the_run_holds_a_callers_extra_descriptor(run_dir):
    # A descriptor the caller passed beyond 0-2 (a pipe it reads to EOF, say) is held neither
    # by the supervisor nor by the program.
    r, w = os.pipe()
    try:
        proc = launch(run_dir, "sleep", "1000", opts=["--timeout", "60"], pass_fds=(w,))
        assert proc.returncode == 0, proc.stderr
        info = launch_info(proc)
        pipe = f"pipe:[{os.fstat(w).st_ino}]"
        try:
            for pid in (info["supervisor_pid"], info["pid"]):
                links = fd_links(pid)
                assert pipe not in links, (pid, links)
            # The caller's reader sees EOF once the caller's own write end is closed: no
            # process anywhere holds a copy. The poll's timeout only keeps a failure from
            # hanging; EOF is due at once.
            os.close(w)
            w = -1
            poller = select.poll()
            poller.register(r, select.POLLIN)
            assert poller.poll(30_000), "a process of the run holds the caller's pipe"
            assert os.read(r, 1) == b""
        finally:
            os.kill(info["pid"], 9)
        assert wait_exit(run_dir) == "137"
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


@pytest.mark.parametrize("closed", [
    "<&-", ">&-", "2>&-", ">&- 2>&-", "<&- >&-", "<&- 2>&-", "<&- >&- 2>&-",
])
def test_caller_with_closed_standard_descriptors(run_dir, launcher, closed):
    # Some exec implementations start the command with stdin (or more) closed; the program
    # must run all the same, as it does under the shell launcher.
    proc = subprocess.run(
        ["sh", "-c", f'exec "$@" {closed}', "sh", launcher, "run", "--run-dir", str(run_dir),
         "--", "sh", "-c", "echo hi; pwd"], capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == \
        f"hi\n{run_dir}/work\n"
    assert exit_record(run_dir)["status"] == "exited"


# --- Timeout ------------------------------------------------------------------------------

def test_timeout_kills_a_program_that_ignores_sigterm(run_dir):
    # SIGTERM is ignored from exec on (run_ignore_term), then the program also installs a
    # handler that survives it, whenever Python gets there: either way only SIGKILL ends it.
    prog = write_program(run_dir, (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, lambda s, f: print('got SIGTERM, staying'))\n"
        "print('ready')\n"
        "while True:\n"
        "    time.sleep(1)\n"
    ))
    proc = launch(run_dir, probe("run_ignore_term"), "python3", prog,
                  opts=["--timeout", "1", "--grace", "0.5"])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "137"
    rec = exit_record(run_dir)
    assert rec["status"] == "timeout"
    assert rec["exit_code"] == 137
    assert rec["signal"] == 9
    out = (run_dir / HOST_TOOLS / "program_output.txt").read_text()
    assert "ready\ngot SIGTERM, staying\n".startswith(out), out


def test_timeout_sigterm_ends_a_cooperative_program(run_dir):
    prog = write_program(run_dir, "import time\nprint('ready')\ntime.sleep(1000)\n")
    proc = launch(run_dir, "python3", prog, opts=["--timeout", "1", "--grace", "0.5"])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "143"
    rec = exit_record(run_dir)
    assert rec["status"] == "timeout"
    assert rec["exit_code"] == 143
    assert rec["signal"] == 15


def test_no_timeout_status_when_the_program_ends_first(run_dir):
    prog = write_program(run_dir, "import sys\nsys.exit(3)\n")
    proc = launch(run_dir, "python3", prog, opts=["--timeout", "600"])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "3"
    rec = exit_record(run_dir)
    assert rec["status"] == "exited" and rec["exit_code"] == 3 and rec["signal"] == 0


# --- No survivor --------------------------------------------------------------------------

# Starts a double-forked daemon, a child that called setsid, and 200 sleeping children, all
# ignoring SIGTERM and SIGHUP, records their pids in R/work/pids (the program's cwd), then
# exits 0 while they all still sleep.
SPAWNER = r"""
import os, signal, sys, time

pids = {}

def child(body):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            body(w)
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 64)
        if not chunk:
            break
        data += chunk
    os.close(r)
    return pid, data

def sleep_forever(w):
    os.write(w, str(os.getpid()).encode())
    os.close(w)
    while True:
        time.sleep(100)

def setsid_child(w):
    os.setsid()
    assert os.getsid(0) == os.getpid()
    sleep_forever(w)

def daemon(w):
    os.setsid()
    if os.fork() != 0:
        os._exit(0)     # the middle process goes; the grandchild is orphaned
    sleep_forever(w)

mid, data = child(daemon)
os.waitpid(mid, 0)
pids["daemon"] = [int(data)]
pid, data = child(setsid_child)
pids["setsid"] = [int(data)]
pids["sleepers"] = []
for _ in range(200):
    pid, data = child(sleep_forever)
    pids["sleepers"].append(int(data))

with open("pids.part", "w") as f:
    for kind, ps in pids.items():
        for p in ps:
            f.write(f"{kind} {p}\n")
    f.flush()
    os.fsync(f.fileno())
os.rename("pids.part", "pids")
print("spawned", sum(len(v) for v in pids.values()))
"""


def test_no_process_of_the_run_survives(run_dir):
    prog = write_program(run_dir, SPAWNER)
    proc = launch(run_dir, "python3", prog)
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    assert wait_exit(run_dir, timeout=60) == "0"
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == "spawned 202\n"
    records = [l.split() for l in (run_dir / "work" / "pids").read_text().splitlines()]
    kinds = {}
    for kind, pid in records:
        kinds.setdefault(kind, []).append(int(pid))
    assert len(kinds["daemon"]) == 1 and len(kinds["setsid"]) == 1
    assert len(kinds["sleepers"]) == 200
    survivors = [(k, p) for k, ps in kinds.items() for p in ps if pid_alive(p)]
    assert survivors == [], f"processes of the run outlived it: {survivors[:10]}"
    # The supervisor wrote the markers as its last act and is gone too (a zombie at most,
    # until whoever adopted it reaps it).
    deadline = time.monotonic() + 10
    while pid_alive(info["supervisor_pid"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not pid_alive(info["supervisor_pid"])
    assert not pid_alive(info["pid"])


def test_descendants_are_killed_when_the_program_is_killed(run_dir):
    # The program dies by a signal while a child it left behind still runs: the child goes too.
    prog = write_program(run_dir, (
        "import os, signal, subprocess\n"
        "p = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "open('child', 'w').write(str(p.pid))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    ))
    proc = launch(run_dir, "python3", prog)
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "137"
    child = int((run_dir / "work" / "child").read_text())
    assert not pid_alive(child)
    rec = exit_record(run_dir)
    assert rec["status"] == "signaled" and rec["signal"] == 9


# --- Output cap ---------------------------------------------------------------------------

MIB = 1 << 20


def test_a_one_gigabyte_flood_is_capped(run_dir):
    (run_dir / HOST_TOOLS).mkdir()
    proc = launch(run_dir, "head", "-c", "1G", "/dev/zero",
                  opts=["--max-output-bytes", str(MIB)])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir, timeout=120) == "0"
    out = run_dir / HOST_TOOLS / "program_output.txt"
    assert out.stat().st_size == MIB
    assert out.read_bytes() == bytes(MIB)
    rec = exit_record(run_dir)
    assert rec["output_bytes"] == 1 << 30
    assert rec["output_truncated"] is True
    assert rec["status"] == "exited" and rec["exit_code"] == 0


@pytest.mark.parametrize("size,truncated", [(MIB, False), (MIB + 1, True), (0, False)],
                         ids=["exactly-the-cap", "one-byte-over", "nothing"])
def test_output_cap_boundary(run_dir, size, truncated):
    proc = launch(run_dir, "head", "-c", str(size), "/dev/zero",
                  opts=["--max-output-bytes", str(MIB)])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    out = run_dir / HOST_TOOLS / "program_output.txt"
    assert out.stat().st_size == min(size, MIB)
    rec = exit_record(run_dir)
    assert rec["output_bytes"] == size
    assert rec["output_truncated"] is truncated


def test_output_cap_of_zero_keeps_nothing_and_says_so(run_dir):
    proc = launch(run_dir, "echo", "hi", opts=["--max-output-bytes", "0"])
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_bytes() == b""
    rec = exit_record(run_dir)
    assert rec["output_bytes"] == 3 and rec["output_truncated"] is True


def test_output_of_a_killed_descendant_is_kept(run_dir):
    # Output written by a grandchild before the run ends reaches the file (the supervisor
    # drains the pipe after ending the tree).
    prog = write_program(run_dir, (
        "import subprocess, sys\n"
        "subprocess.run(['sh', '-c', 'echo from grandchild'])\n"
        "print('from program')\n"
    ))
    proc = launch(run_dir, "python3", prog)
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == \
        "from grandchild\nfrom program\n"


# --- Sessions, signals, stop --------------------------------------------------------------

def proc_stat(pid):
    """(ppid, pgrp, session) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def test_supervisor_and_program_lead_their_own_sessions(run_dir):
    proc = launch(run_dir, "sleep", "1000", opts=["--timeout", "60"])
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    try:
        sup, prog = info["supervisor_pid"], info["pid"]
        sup_ppid, sup_pgrp, sup_sid = proc_stat(sup)
        prog_ppid, prog_pgrp, prog_sid = proc_stat(prog)
        assert sup_sid == sup and sup_pgrp == sup, "the supervisor leads its own session"
        assert prog_sid == prog and prog_pgrp == prog, "the program leads another"
        assert prog_ppid == sup, "the supervisor is the program's parent"
        assert sup_sid != os.getsid(0)
        assert info["session"] == prog
        assert (run_dir / HOST_TOOLS / "program_session").read_text() == str(prog)
    finally:
        os.kill(info["pid"], 9)
    assert wait_exit(run_dir) == "137"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to choose from")
@pytest.mark.parametrize("caller_cpus", ["all", "one"])
def test_program_and_supervisor_keep_the_callers_cpu_affinity(run_dir, caller_cpus):
    # The launch keeps to one CPU while it starts the program's process; neither the program
    # (a Go runtime sizes itself by its affinity at start-up) nor the supervisor may keep that.
    cpus = os.sched_getaffinity(0)
    if caller_cpus == "one":
        cpus = {max(cpus)}
    proc = launch(run_dir, "sleep", "1000", opts=["--timeout", "60"],
                  preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    try:
        assert os.sched_getaffinity(info["pid"]) == cpus
        assert os.sched_getaffinity(info["supervisor_pid"]) == cpus
    finally:
        os.kill(info["pid"], 9)
    assert wait_exit(run_dir) == "137"


def ignore_some_signals():
    for sig in (signal.SIGINT, signal.SIGUSR1, signal.SIGPIPE, signal.SIGRTMIN + 3,
                signal.SIGRTMAX):
        signal.signal(sig, signal.SIG_IGN)


@pytest.mark.parametrize("caller_ignores", [False, True])
def test_program_starts_with_default_signal_dispositions(run_dir, caller_ignores):
    # The supervisor blocks and ignores signals for itself, and the caller may have ignored
    # some (nohup, a shell's trap ''); none of that may leak into the program (a shell
    # pipeline relies on SIGPIPE, for one).
    proc = launch(run_dir, "grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status",
                  preexec_fn=ignore_some_signals if caller_ignores else None)
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    fields = dict(line.split(":\t") for line in
                  (run_dir / HOST_TOOLS / "program_output.txt").read_text().splitlines())
    # Signals 32 and 33 are the C library's own (glibc's SIGCANCEL and SIGSETXID), which grep's
    # libc may block for a moment by itself; every other bit must be clear.
    libc_internal = (1 << 31) | (1 << 32)
    assert int(fields["SigBlk"], 16) & ~libc_internal == 0, fields
    assert int(fields["SigIgn"], 16) == 0, fields


def test_sigterm_to_the_supervisor_stops_the_run(run_dir):
    prog = write_program(run_dir, "import time\nprint('ready')\ntime.sleep(1000)\n")
    proc = launch(run_dir, "python3", prog)
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    wait_file(run_dir / HOST_TOOLS / "program_pid")
    os.kill(info["supervisor_pid"], 15)
    assert wait_exit(run_dir) == "143"
    rec = exit_record(run_dir)
    assert rec["status"] == "stopped"
    assert rec["signal"] == 15
    assert not pid_alive(info["pid"])


# Tries to SIGKILL its supervisor (its parent, same uid), then ends on its own. Had the kill
# worked, no exit marker would ever be written and, without a timeout left to enforce, the
# program (and anything it started) would run on unsupervised.
KILL_SUPERVISOR = """
import os, sys
try:
    os.kill(os.getppid(), 9)
    print('killed the supervisor')
except OSError as e:
    print(f'refused: {e.errno}')
sys.exit(5)
"""


@pytest.mark.parametrize("landlock", ["auto", "off"])
def test_program_cannot_kill_its_supervisor(run_dir, landlock):
    # Landlock's signal scope (Linux 6.12+) stops it where the kernel has it; without it
    # (--landlock off, older kernels) the seccomp filter must.
    prog = write_program(run_dir, KILL_SUPERVISOR)
    proc = launch(run_dir, "python3", prog, opts=["--landlock", landlock])
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    try:
        assert wait_exit(run_dir, timeout=30) == "5"
    finally:
        if pid_alive(info["pid"]):
            os.kill(info["pid"], 9)
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == "refused: 1\n"
    rec = exit_record(run_dir)
    assert rec["status"] == "exited" and rec["exit_code"] == 5
