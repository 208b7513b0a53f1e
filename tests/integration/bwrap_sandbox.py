"""A sandbox as maf-sandbox-bubblewrap starts one, for the tests of the local backend entered
into it (mafh_backend_local_enter_new): bwrap with a namespace of its own of every kind but
time, user namespaces then refused in it, every capability dropped, this machine's / read-only
with /proc, /dev and a tmpfs on /tmp and /run of its own (the checkout bound again over them,
read-only); its PID 1 a python3 that waits on
a pipe the test holds, so that closing the pipe ends it. bwrap's own process stays outside
as the parent of that PID 1, which is the process to enter."""
import os
import shutil
import signal
import subprocess
import time

BWRAP = shutil.which("bwrap")
OPTIONS = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
           "--unshare-uts", "--unshare-cgroup", "--disable-userns", "--assert-userns-disabled",
           "--as-pid-1", "--new-session", "--die-with-parent", "--cap-drop", "ALL",
           "--clearenv", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
           "--tmpfs", "/tmp", "--tmpfs", "/run", "--setenv", "PATH", "/usr/bin:/bin",
           "--chdir", "/"]
# The checkout, read-only at its own path over the tmpfs mounts: a fresh clone may be below
# this machine's /tmp, and the tests run its build's maf-launch in the sandbox.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPTIONS += ["--ro-bind", CHECKOUT, CHECKOUT]
INIT = ["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"]
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time")


def unavailable():
    """Why such a sandbox cannot be entered here, or None."""
    if os.geteuid() != 0:
        return "entering another process's sandbox needs root (CAP_SYS_ADMIN, CAP_SYS_PTRACE)"
    if BWRAP is None:
        return "there is no bwrap on this machine (make setup installs bubblewrap)"
    return None


class Sandbox:
    """One bwrap sandbox, started now; pid is its PID 1 seen from here. close() ends it."""

    def __init__(self, start_timeout=10.0):
        self.proc = subprocess.Popen([BWRAP, *OPTIONS, "--", *INIT], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.pid = self._first_child(start_timeout)

    def _first_child(self, timeout):
        """bwrap's child once it is the sandbox's PID 1: it has exec'd INIT, which it does
        once the sandbox is made (before, its root and mounts are still being set up)."""
        deadline = time.monotonic() + timeout
        children = f"/proc/{self.proc.pid}/task/{self.proc.pid}/children"
        want = ("\0".join(INIT) + "\0").encode()
        while time.monotonic() < deadline:
            try:
                with open(children) as f:
                    kids = f.read().split()
                if kids:
                    with open(f"/proc/{kids[0]}/cmdline", "rb") as f:
                        if f.read() == want:
                            return int(kids[0])
            except OSError:
                pass
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace").strip()
                raise RuntimeError(f"bwrap exited {self.proc.returncode}: {err}")
            time.sleep(0.01)
        self.close()
        raise RuntimeError(f"bwrap started no sandbox within {timeout:g} s")

    @property
    def root(self):
        """Its root, seen from here (for the tests' own looks: nothing is written there
        through it)."""
        return f"/proc/{self.pid}/root"

    def ns(self, name):
        """The inode of its namespace of that kind, seen from here."""
        return os.stat(f"/proc/{self.pid}/ns/{name}").st_ino

    def processes(self):
        """{pid here: comm} of every process in its PID namespace, PID 1 included."""
        mine = self.ns("pid")
        out = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino != mine:
                    continue
                with open(f"/proc/{entry}/comm") as f:
                    out[int(entry)] = f.read().strip()
            except OSError:
                continue
        return out

    def kill(self):
        """Ends it at once: its PID 1 killed, which takes every process in it along."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for f in (self.proc.stdin, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass
