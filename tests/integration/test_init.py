"""`maf-launch init`, the PID 1 of the images: run as the init of a new pid namespace without
Docker (`unshare --pid --fork --mount-proc`), with processes entered into that namespace from
outside by `nsenter`, as `docker exec` enters a container; and, once, not as PID 1. Every
assertion is on behaviour (exit codes, which process exists or is a zombie, what a program
received), never on how long something took; waits only guard against a hang."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, exit_record, probe, wait_exit
from pidns import processes_beside

PYTHON = sys.executable

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None or shutil.which("nsenter") is None,
                                reason="util-linux's unshare and nsenter are not installed")


def until(pred, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"{what}: not after {timeout}s")


def in_new_namespace(argv):
    """argv as PID 1 of a new pid and mount namespace (its own /proc)."""
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *userns, "--pid", "--fork", "--mount-proc", *map(str, argv)]


class Init:
    """`maf-launch init ARGS` (or argv) as PID 1 of a new pid namespace."""

    def __init__(self, *args, argv=None):
        ours = argv is None
        argv = argv or [LAUNCHER, "init", *args]
        self.proc = subprocess.Popen(in_new_namespace(argv), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        # unshare forks init: its one child, seen here by its pid outside the namespace.
        self.pid = int(until(lambda: children.read_text().split(), "init started")[0])
        self.ns = os.readlink(f"/proc/{self.pid}/ns/pid")
        if ours:
            # Until init has blocked the signals it reads (SIGTERM among them), a signal sent
            # from outside is dropped: a namespace's PID 1 gets none it has no handler for.
            until(lambda: self.blocks(signal.SIGTERM), "init ready for signals")

    def blocks(self, sig):
        """Whether init (or, before its exec, unshare's child) blocks sig."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return False
        for line in status.splitlines():
            if line.startswith("SigBlk:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
        return False

    def enter(self, *argv, **kw):
        """Runs argv inside init's namespaces, its parent outside them: what it leaves
        behind is handed to init, as with docker exec."""
        return subprocess.run(["nsenter", "-t", str(self.pid), "-p", "-m", *map(str, argv)],
                              capture_output=True, timeout=60, **kw)

    def processes(self):
        """{pid outside: (state, command line)} of every process in init's namespace but
        init."""
        return processes_beside(self.pid, self.ns)

    def signal(self, sig):
        os.kill(self.pid, sig)

    def wait(self):
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out.decode(), err.decode()

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=60)


@pytest.fixture
def inits():
    made = []

    def make(*args, **kw):
        made.append(Init(*args, **kw))
        return made[-1]

    yield make
    for i in made:
        i.kill()


def run_init(*args):
    proc = subprocess.run(in_new_namespace([LAUNCHER, "init", *args]), capture_output=True,
                          timeout=60)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


# --- With CMD -----------------------------------------------------------------------------

@pytest.mark.parametrize("script,code", [("exit 0", 0), ("exit 3", 3), ("kill -KILL $$", 137),
                                         ("kill -TERM $$", 143)])
def test_exits_with_the_status_of_cmd(script, code):
    assert run_init("--", "sh", "-c", script)[0] == code


def test_cmd_without_the_separator():
    rc, out, _ = run_init("sh", "-c", "echo $0 $1; exit 4", "a", "b")
    assert (rc, out) == (4, "a b\n")


@pytest.mark.parametrize("cmd,code,words", [("/no/such/program", 127, "No such file"),
                                            ("/etc/passwd", 126, "Permission denied")])
def test_cmd_that_cannot_be_executed(cmd, code, words):
    rc, out, err = run_init("--", cmd)
    assert rc == code
    assert err.startswith(f"maf-launch init: cannot execute {cmd}: ") and words in err
    assert err.count("\n") == 1 and out == ""


# Blocked and waited for, not handled: a handler then pause() would miss a signal that came
# between its check and the pause.
FORWARD_PROBE = r"""
import signal, sys
sigs = {signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
print("ready", flush=True)
while True:
    got = signal.Signals(signal.sigwaitinfo(sigs).si_signo)
    print(got.name, flush=True)
    if got == signal.SIGTERM:
        sys.exit(7)
"""


def test_forwards_signals_to_cmd(inits):
    init = inits("--", PYTHON, "-c", FORWARD_PROBE)
    assert init.proc.stdout.readline() == b"ready\n"
    # One at a time, each once the last was received: CMD prints each as it comes.
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGTERM):
        init.signal(sig)
        assert init.proc.stdout.readline().decode() == sig.name + "\n"
    rc, _, err = init.wait()
    assert rc == 7 and err == ""


def test_cmd_ended_by_a_forwarded_signal(inits):
    init = inits("--", "sh", "-c", "echo ready; exec sleep 600")
    assert init.proc.stdout.readline() == b"ready\n"
    init.signal(signal.SIGTERM)
    assert init.wait()[0] == 128 + signal.SIGTERM


ORPHANS_PROBE = r"""
import os, sys, time
# Twenty orphans: each child forks a grandchild and exits at once; the grandchild, handed to
# init, exits a moment later.
gpids = []
for _ in range(20):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        g = os.fork()
        if g == 0:
            os.close(r)
            os.close(w)
            time.sleep(0.05)
            os._exit(0)
        os.write(w, str(g).encode())
        os._exit(0)
    os.close(w)
    gpids.append(int(os.read(r, 32)))
    os.close(r)
    os.waitpid(pid, 0)
def exists(p):
    # A zombie still has its /proc entry: only a reaped process is gone.
    return os.path.exists("/proc/%d" % p)
deadline = time.monotonic() + 30
while any(exists(p) for p in gpids) and time.monotonic() < deadline:
    time.sleep(0.01)
left = [p for p in gpids if exists(p)]
print("left", left)
sys.exit(1 if left else 0)
"""


def test_reaps_the_orphans_of_cmd():
    rc, out, err = run_init("--", PYTHON, "-c", ORPHANS_PROBE)
    assert (rc, out) == (0, "left []\n"), err


# --- Without CMD: a container's init ------------------------------------------------------

def no_zombie_and_only_init_left(init):
    """Waits until nothing but init is left in its namespace (a zombie not reaped stays
    forever); returns what is left if that does not happen."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = init.processes()
        if not left:
            return {}
        time.sleep(0.02)
    return left


def test_reaps_what_exec_leaves_behind(inits, tmp_path):
    init = inits()
    # Each run's launcher is entered from outside, as docker exec runs it, and returns at
    # once; its supervisor, orphaned, is handed to init, and exits after the markers.
    for i in range(20):
        run = tmp_path / f"r{i}"
        run.mkdir()
        proc = init.enter(LAUNCHER, "run", "--run-dir", run, "--", probe("run_hello"), "0")
        assert proc.returncode == 0, proc.stderr
        assert wait_exit(run) == "0"
    assert no_zombie_and_only_init_left(init) == {}
    init.signal(signal.SIGTERM)
    assert init.wait() == (0, "", "")


def test_a_pid1_that_does_not_reap_keeps_zombies(inits, tmp_path):
    """The check above, against an init that never waits: it finds the zombie."""
    init = inits(argv=[PYTHON, "-c", "import time; time.sleep(600)"])
    run = tmp_path / "r"
    run.mkdir()
    proc = init.enter(LAUNCHER, "run", "--run-dir", run, "--", probe("run_hello"), "0")
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run) == "0"
    # The supervisor has exited: a zombie nobody reaps.
    until(lambda: [s for s, _ in init.processes().values() if s == "Z"], "a zombie")


def test_sigterm_ends_every_run_and_exits_0(inits, tmp_path):
    init = inits("--grace", "600")
    runs = []
    for i in range(3):
        run = tmp_path / f"r{i}"
        run.mkdir()
        proc = init.enter(LAUNCHER, "run", "--run-dir", run, "--", probe("run_pause"))
        assert proc.returncode == 0, proc.stderr
        runs.append(run)
    # An orphan of no run.
    assert init.enter("sh", "-c", "sleep 600 >/dev/null 2>&1 & exit").returncode == 0
    # The orphan, and for each run its supervisor, program and witness.
    assert len(init.processes()) == 1 + 3 * 3
    init.signal(signal.SIGTERM)
    # Everyone ended on SIGTERM, within a grace of ten minutes: nobody was killed.
    assert init.wait() == (0, "", "")
    for run in runs:
        assert (run / HOST_TOOLS / "program_exit_code").exists()
        assert exit_record(run)["status"] in ("stopped", "signaled")


def test_what_outlives_the_grace_is_killed(inits):
    init = inits("--grace", "0.2")
    assert init.enter("sh", "-c", "trap '' TERM; sleep 600 >/dev/null 2>&1 & exit").returncode == 0
    pids = list(init.processes())
    init.signal(signal.SIGTERM)
    rc, out, err = init.wait()
    assert rc == 0 and out == ""
    assert err == "maf-launch init: processes still running after the 200 ms grace: " \
        "killing them\n"
    assert not any(os.path.exists(f"/proc/{p}") for p in pids)


TERM_NOTED = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, lambda s, f: open(sys.argv[1], "w").close())
print("ready", flush=True)
while True:
    time.sleep(60)
"""


def test_a_second_sigterm_cuts_the_grace(inits, tmp_path):
    init = inits("--grace", "3600")
    noted = tmp_path / "term"
    # A process that notes SIGTERM and carries on: the grace would last an hour.
    p = subprocess.Popen(["nsenter", "-t", str(init.pid), "-p", "-m", PYTHON, "-c", TERM_NOTED,
                          str(noted)], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        init.signal(signal.SIGTERM)
        until(noted.exists, "the first SIGTERM passed on")
        init.signal(signal.SIGTERM)
        rc, _, err = init.wait()
        assert rc == 0 and "killing them" in err
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        p.kill()
        p.wait(timeout=60)


def test_other_signals_without_cmd_are_ignored(inits):
    init = inits()
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT, signal.SIGWINCH):
        init.signal(sig)
    # Still there: a process entered now is handed to it and reaped.
    assert init.enter("sh", "-c", "sleep 0.01 & exit").returncode == 0
    assert no_zombie_and_only_init_left(init) == {}
    init.signal(signal.SIGINT)
    assert init.wait() == (0, "", "")


# --- Not PID 1 ----------------------------------------------------------------------------

SUBREAPER_PROBE = r"""
import os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    child = os.getpid()
    g = os.fork()
    if g == 0:
        # Once the child has exited, the grandchild's parent is whoever adopted it.
        while os.getppid() == child:
            time.sleep(0.01)
        os.write(w, str(os.getppid()).encode())
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
os.close(w)
adopter = int(os.read(r, 32))
print("adopted by init:", adopter == os.getppid())
"""


def test_not_pid1_it_reaps_as_the_child_subreaper():
    proc = subprocess.run([str(LAUNCHER), "init", "--", PYTHON, "-c", SUBREAPER_PROBE],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"adopted by init: True\n"
    assert proc.stderr == b""


# --- Usage --------------------------------------------------------------------------------

@pytest.mark.parametrize("args,words", [(["--bogus"], "unknown option '--bogus'"),
                                        (["--grace", "soon"], "--grace takes"),
                                        (["--grace"], "--grace needs a value")])
def test_usage_errors(args, words):
    proc = subprocess.run([str(LAUNCHER), "init", *args], capture_output=True, timeout=60)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("maf-launch init: ") and words in err and err.count("\n") == 1


def test_help():
    proc = subprocess.run([str(LAUNCHER), "init", "--help"], capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith(b"usage: maf-launch init ")
