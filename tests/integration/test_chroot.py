"""`maf-launch run` in a plain chroot (`chroot DIR`, DIR not made a mount point), R below a
directory the run's identity may not pass. / there is not the root of a mount, so the run's
mounts cannot be made slaves (guest/cover.c): the cover goes ahead where the mount it goes on
is not shared, and nothing it mounts leaves the run's namespace; where that mount is shared,
the launch fails with exit 125 and a sentence, having mounted nothing. Each test works in a
mount namespace of its own (`unshare --mount --propagation private`), held by a process it
starts and entered with `nsenter`; a second one, a copy of it, watches what propagates."""
import ctypes
import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, exit_record, launcher_is_static, probe, wait_exit

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the cover is a root launcher's"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in ("unshare", "nsenter", "chroot")),
                       reason="util-linux's unshare and nsenter, and chroot, are needed"),
    pytest.mark.skipif(not launcher_is_static(),
                       reason="the chroot holds no libc: the launcher must be the static one"),
]

RUN = "/tmp/priv/run"  # R, in the chroot: /tmp/priv is 0700, as mkdtemp() makes it
SENTENCE = "cannot hide R's private parent in a chroot whose / is not a mount point"
INSTEAD = ("mount --bind DIR DIR before chroot, unshare --mount --propagation private, "
           "put R under /tmp, or give --user")


def statmount_answers():
    """Whether this kernel says how a mount propagates (statmount, Linux 6.8): where it does
    not, the launcher refuses every cover in a plain chroot. A NULL request gets EFAULT."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(457), None, None, ctypes.c_size_t(0), ctypes.c_uint(0)) == 0:
        return True
    return ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM)


def until(pred, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"{what}: not after {timeout}s")


class Namespace:
    """A mount namespace held by `sleep infinity`: `unshare --mount --propagation private`
    from the test's, or with `within`, a copy of that one's (`--propagation unchanged`: its
    shared mounts' copies are their peers). What is mounted in it is undone by close()."""

    def __init__(self, within=None):
        argv = ["unshare", "--mount", "--propagation", "unchanged" if within else "private",
                "sleep", "infinity"]
        if within:
            argv = within.enter(argv)
        self.proc = subprocess.Popen(argv)
        self.pid = self.proc.pid
        self.mounted = []
        # nsenter and unshare exec what they start: the namespace is ready once sleep runs.
        until(lambda: Path(f"/proc/{self.pid}/comm").read_text().strip() == "sleep",
              "the namespace's holder started")

    def enter(self, argv):
        return ["nsenter", "-t", str(self.pid), "-m", "--", *map(str, argv)]

    def run(self, *argv, check=True):
        proc = subprocess.run(self.enter(argv), capture_output=True, timeout=30)
        if check:
            assert proc.returncode == 0, (argv, proc.stderr.decode())
        return proc

    def mount(self, *argv, target):
        self.run("mount", *argv, target)
        self.mounted.append(target)

    def path(self, path):
        """path as this namespace sees it, from the test's."""
        return Path(f"/proc/{self.pid}/root{path}")

    def mounts(self):
        return Path(f"/proc/{self.pid}/mountinfo").read_text().splitlines()

    def close(self):
        for target in reversed(self.mounted):
            self.run("umount", "--recursive", target, check=False)
        self.proc.kill()
        self.proc.wait()


class Setting:
    """A test's scratch directory (mode 0755, where the test's namespace sees it too, but for
    what is mounted in it) and the namespaces it made, undone in reverse."""

    def __init__(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="maf-chroot-"))
        self.scratch.chmod(0o755)
        self.namespaces = []

    def namespace(self, within=None):
        n = Namespace(within)
        self.namespaces.append(n)
        return n

    def mounts_here(self):
        """What this process's own namespace has mounted in the scratch directory."""
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
        return [line for line in lines if f" {self.scratch}" in line]

    def close(self):
        for n in reversed(self.namespaces):
            n.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture
def setting():
    s = Setting()
    try:
        yield s
    finally:
        s.close()


def make_chroot(ns, root):
    """A minimal root at root (a path of ns's): the static launcher and probes in /bin,
    /dev/null (bound from the host's), /tmp, and R below /tmp/priv, mode 0700. Not a mount
    point, and no /proc: the launcher needs none."""
    at = ns.path(root)
    for d in ("bin", "dev", "tmp/priv/run/" + HOST_TOOLS):
        (at / d).mkdir(parents=True, exist_ok=True)
    at.chmod(0o755)
    (at / "tmp").chmod(0o1777)
    (at / "tmp" / "priv").chmod(0o700)
    for src in (LAUNCHER, probe("run_hello"), probe("run_pause")):
        shutil.copy2(src, at / "bin" / Path(src).name)
    (at / "dev" / "null").touch()
    ns.mount("--bind", "/dev/null", target=root / "dev" / "null")
    return root


def launch(ns, root, program, *opts):
    """`chroot ROOT /bin/maf-launch run --run-dir /tmp/priv/run OPTS -- /bin/PROGRAM` in ns."""
    return ns.run("chroot", root, "/bin/maf-launch", "run", "--run-dir", RUN, *opts, "--",
                  "/bin/" + program, check=False)


def assert_covered_run(proc):
    """The launch line of a run under an identity of its own."""
    assert proc.returncode == 0, proc.stderr.decode()
    info = json.loads(proc.stdout.decode().splitlines()[0])
    assert info["identity"] == "own"
    sup = info["supervisor_pid"]
    assert info["uid"] == info["gid"] == sup + (1 << 20 if sup < 1 << 20 else 1 << 28)
    return info


def run_dir(ns, root):
    """R of the chroot at root, from the test's namespace."""
    return ns.path(root / RUN.lstrip("/"))


def assert_refused(proc, ns, root, why):
    """The launch failed (125), said why and what to do, and recorded it."""
    assert proc.returncode == 125, proc.stderr.decode()
    err = proc.stderr.decode()
    assert SENTENCE in err and why in err and INSTEAD in err, err
    rec = exit_record(run_dir(ns, root))
    assert rec["status"] == "launch_failed" and rec["exit_code"] == 125
    assert rec["error"] in err and len(rec["error"]) < 256


def program_mounts(info):
    """The running program's mounts, by mount point (relative to its root, the chroot)."""
    lines = Path(f"/proc/{info['pid']}/mountinfo").read_text().splitlines()
    return {line.split()[4]: line for line in lines}


def test_a_private_namespace_runs_the_program_covered_and_keeps_its_mounts(setting):
    """The plain chroot in a private mount namespace: the program runs under the run's own
    identity, to its end, and nothing it was shown is mounted anywhere but in its own."""
    ns = setting.namespace()
    root = make_chroot(ns, setting.scratch / "root")
    before = ns.mounts()

    proc = launch(ns, root, "run_hello")

    if not statmount_answers():
        assert_refused(proc, ns, root, "not known to be unshared")
        return
    assert_covered_run(proc)
    run = run_dir(ns, root)
    assert wait_exit(run) == "0"
    rec = exit_record(run)
    assert rec["status"] == "exited" and rec["exit_code"] == 0
    assert (run / HOST_TOOLS / "program_output.txt").read_text() == \
        "hello from stdout\nhello from stderr\n"
    assert ns.mounts() == before
    assert setting.mounts_here() == []


def test_the_program_sees_the_cover_and_it_propagates_nowhere(setting):
    """The program's own namespace, seen from outside while it runs: the private directory
    covered read-only, R back in place, neither of them shared; its uid the run's."""
    ns = setting.namespace()
    root = make_chroot(ns, setting.scratch / "root")
    before = ns.mounts()

    proc = launch(ns, root, "run_pause", "--timeout", "60")

    if not statmount_answers():
        assert_refused(proc, ns, root, "not known to be unshared")
        return
    info = assert_covered_run(proc)
    run = run_dir(ns, root)
    try:
        status = Path(f"/proc/{info['pid']}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:"))
        assert uids.split()[1:] == [str(info["uid"])] * 4
        seen = program_mounts(info)
        cover, back = seen["/tmp/priv"], seen[RUN]
        assert " - tmpfs maf-launch " in cover and "ro" in cover.split()[5].split(","), cover
        assert "shared:" not in cover and "shared:" not in back, (cover, back)
    finally:
        os.kill(info["pid"], signal.SIGTERM)
    assert wait_exit(run) == str(128 + signal.SIGTERM)
    assert ns.mounts() == before
    assert setting.mounts_here() == []


def test_a_shared_mount_holding_the_root_refuses_and_nothing_propagates(setting):
    """A chroot inside a tmpfs shared with a second namespace (as / is on a systemd host): a
    cover there would appear in both. The launch fails, says why and what to do, and neither
    namespace gains a mount."""
    ns = setting.namespace()
    top = setting.scratch / "shared"
    top.mkdir()
    ns.mount("-t", "tmpfs", "maf-test", target=top)
    ns.run("mount", "--make-shared", top)
    peer = setting.namespace(within=ns)
    root = make_chroot(ns, top / "root")
    before, peer_before = ns.mounts(), peer.mounts()
    assert any(f" {top}/root/dev/null " in line for line in peer_before)  # they are peers

    proc = launch(ns, root, "run_hello")

    assert ns.mounts() == before
    assert setting.mounts_here() == []
    assert peer.mounts() == peer_before
    assert_refused(proc, ns, root, "on a shared mount (the run's mounts would reach the host)"
                   if statmount_answers() else "not known to be unshared")


def test_a_shared_mount_below_the_root_refuses_too(setting):
    """The chroot's own mount is private, but the private directory sits on a shared mount
    inside it: that is the mount the cover would go on."""
    ns = setting.namespace()
    root = make_chroot(ns, setting.scratch / "root")
    priv = root / "tmp" / "priv"
    ns.mount("-t", "tmpfs", "-o", "mode=0700", "maf-test", target=priv)
    ns.run("mount", "--make-shared", priv)
    (ns.path(priv) / "run" / HOST_TOOLS).mkdir(parents=True)
    peer = setting.namespace(within=ns)
    before, peer_before = ns.mounts(), peer.mounts()

    proc = launch(ns, root, "run_hello")

    assert ns.mounts() == before
    assert setting.mounts_here() == []
    assert peer.mounts() == peer_before
    assert_refused(proc, ns, root, "on a shared mount (the run's mounts would reach the host)"
                   if statmount_answers() else "not known to be unshared")


def test_a_slave_of_a_shared_mount_runs_and_its_master_gets_nothing(setting):
    """The chroot's mount a slave only: the run works, and nothing reaches the master."""
    ns = setting.namespace()
    top = setting.scratch / "shared"
    top.mkdir()
    ns.mount("-t", "tmpfs", "maf-test", target=top)
    ns.run("mount", "--make-shared", top)
    root = make_chroot(ns, top / "root")
    slave = setting.namespace(within=ns)
    slave.run("mount", "--make-slave", top)
    before, slave_before = ns.mounts(), slave.mounts()

    proc = launch(slave, root, "run_hello")

    if not statmount_answers():
        assert_refused(proc, slave, root, "not known to be unshared")
        return
    assert_covered_run(proc)
    run = run_dir(slave, root)
    assert wait_exit(run) == "0"
    assert exit_record(run)["status"] == "exited"
    assert ns.mounts() == before
    assert setting.mounts_here() == []
    assert slave.mounts() == slave_before


def test_a_chroot_made_a_mount_point_runs_on_a_shared_mount(setting):
    """What the sentence advises: `mount --bind DIR DIR` before chroot (--rbind here, to
    keep the chroot's /dev/null). / is then a mount's root, every mount of the run a slave,
    and nothing reaches the peer."""
    ns = setting.namespace()
    top = setting.scratch / "shared"
    top.mkdir()
    ns.mount("-t", "tmpfs", "maf-test", target=top)
    ns.run("mount", "--make-shared", top)
    peer = setting.namespace(within=ns)
    root = make_chroot(ns, top / "root")
    ns.mount("--rbind", root, target=root)
    before, peer_before = ns.mounts(), peer.mounts()

    proc = launch(ns, root, "run_hello")

    assert_covered_run(proc)
    run = run_dir(ns, root)
    assert wait_exit(run) == "0"
    assert exit_record(run)["status"] == "exited"
    assert ns.mounts() == before
    assert setting.mounts_here() == []
    assert peer.mounts() == peer_before


def test_r_on_a_shared_mount_is_a_slave_in_the_run(setting):
    """R itself a mount shared with another namespace, below a private directory on a mount
    that is not: the cover goes ahead, and R's copy in the run's namespace is made a slave,
    as every mount of the run is where / is a mount's root."""
    ns = setting.namespace()
    root = make_chroot(ns, setting.scratch / "root")
    run_at = root / RUN.lstrip("/")
    ns.mount("-t", "tmpfs", "maf-test", target=run_at)
    ns.run("mount", "--make-shared", run_at)
    (ns.path(run_at) / HOST_TOOLS).mkdir()
    peer = setting.namespace(within=ns)
    before, peer_before = ns.mounts(), peer.mounts()

    proc = launch(ns, root, "run_pause", "--timeout", "60")

    if not statmount_answers():
        assert_refused(proc, ns, root, "not known to be unshared")
        return
    info = assert_covered_run(proc)
    try:
        back = program_mounts(info)[RUN]
        assert "master:" in back and "shared:" not in back, back
    finally:
        os.kill(info["pid"], signal.SIGTERM)
    assert wait_exit(ns.path(run_at)) == str(128 + signal.SIGTERM)
    assert ns.mounts() == before
    assert setting.mounts_here() == []
    assert peer.mounts() == peer_before
