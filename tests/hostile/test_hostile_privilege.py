"""The program runs under an identity of its own with no capability: what root could do to
the host (an engine's socket, a terminal, devices, other files' metadata, the machine's own
state, mounts) it cannot, and its processes and memory are bounded."""
import os
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from hostile_lib import denied, is_run_id, run_hostile


def test_identity_is_unprivileged_and_its_own():
    proc, rep, r = run_hostile(r'''
st = open("/proc/self/status").read()
caps = {l.split(":")[0]: l.split()[1] for l in st.splitlines() if l.startswith("Cap")}
report(uid=os.getuid(), euid=os.geteuid(), gid=os.getgid(), groups=os.getgroups(),
       caps=caps, nnp=st.split("NoNewPrivs:")[1].split()[0],
       seccomp=st.split("Seccomp:")[1].split()[0], umask=oct(os.umask(0o77)))
''')
    assert r is not None, proc.stderr
    assert is_run_id(r["uid"]) and r["euid"] == r["uid"]
    assert r["gid"] == r["uid"] and r["groups"] == []
    assert set(r["caps"].values()) == {"0000000000000000"}, r["caps"]
    assert r["nnp"] == "1" and r["seccomp"] == "2" and r["umask"] == "0o77"
    assert rep["identity"] == "own" and rep["uid"] == r["uid"] and rep["verified"]


@pytest.fixture
def engine_socket():
    """A stand-in for a container engine's socket: root's, mode 0660, in a directory any
    user may pass (as /var/run/docker.sock is, group docker)."""
    d = Path(tempfile.mkdtemp(prefix="maf-hostile-engine-"))
    d.chmod(0o755)
    path = d / "engine.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(8)
    path.chmod(0o660)
    yield path
    s.close()
    path.unlink()
    d.rmdir()


def test_no_engine_socket(engine_socket):
    real = "/var/run/docker.sock"
    proc, rep, r = run_hostile(r'''
import socket
ENGINE, REAL = %r, %r
def connect(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(p)
    s.sendall(b"POST /containers/create HTTP/1.1\r\nHost: x\r\n\r\n")
attempt("engine", lambda: connect(ENGINE))
if os.path.exists(REAL):
    attempt("docker", lambda: connect(REAL))
report()
''' % (str(engine_socket), real))
    assert r is not None, proc.stderr
    denied(r, "engine")
    if "docker" in r:
        denied(r, "docker")


def test_no_terminal_injection():
    master, slave = os.openpty()
    slave_path = os.ttyname(slave)
    try:
        proc, rep, r = run_hostile(r'''
import fcntl, termios
SLAVE = %r
def inject(fd):
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
def open_and_inject(path):
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    inject(fd)
attempt("open_slave", lambda: open_and_inject(SLAVE))
attempt("open_tty", lambda: open_and_inject("/dev/tty"))
attempt("open_ptmx", lambda: os.open("/dev/ptmx", os.O_RDWR))
attempt("tiocsti_stdin", lambda: inject(0))
attempt("tioclinux", lambda: fcntl.ioctl(0, 0x541C, b"\x02"))
report()
''' % slave_path)
        assert r is not None, proc.stderr
        denied(r, "open_slave", "open_ptmx", "tiocsti_stdin", "tioclinux")
        assert r["open_tty"] in ("EPERM", "EACCES", "ENXIO"), r
        # Nothing reached the terminal.
        os.set_blocking(master, False)
        try:
            got = os.read(master, 64)
        except BlockingIOError:
            got = b""
        assert got == b"", got
    finally:
        os.close(master)
        os.close(slave)


def test_no_devices():
    proc, rep, r = run_hostile(r'''
import stat
attempt("mknod_block", lambda: os.mknod("blk", stat.S_IFBLK | 0o600, os.makedev(7, 0)))
attempt("mknod_char", lambda: os.mknod("chr", stat.S_IFCHR | 0o600, os.makedev(1, 3)))
attempt("mknod_fifo", lambda: os.mknod("fifo", stat.S_IFIFO | 0o600))
attempt("loop", lambda: os.open("/dev/loop-control", os.O_RDWR))
attempt("loop0", lambda: os.open("/dev/loop0", os.O_RDWR))
for d in ("/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda"):
    if os.path.exists(d):
        attempt("disk", lambda: os.open(d, os.O_RDONLY))
        break
attempt("kmsg", lambda: os.open("/dev/kmsg", os.O_RDONLY))
attempt("mem", lambda: os.open("/dev/mem", os.O_RDONLY))
attempt("null", lambda: os.write(os.open("/dev/null", os.O_WRONLY), b"x"))
attempt("urandom", lambda: os.read(os.open("/dev/urandom", os.O_RDONLY), 8))
report()
''')
    assert r is not None, proc.stderr
    denied(r, "mknod_block", "mknod_char")
    assert r["mknod_fifo"] == "ok"
    for name in ("loop", "loop0", "disk", "kmsg", "mem"):
        assert r.get(name, "ENOENT") in ("EPERM", "EACCES", "ENOENT"), (name, r.get(name))
    assert r["null"] == "ok" and r["urandom"] == "ok"


@pytest.fixture
def outside_file():
    """A file of root's outside every writable path, where any user may reach it."""
    d = Path(tempfile.mkdtemp(prefix="maf-hostile-outside-"))
    d.chmod(0o755)
    f = d / "victim"
    f.write_text("victim\n")
    f.chmod(0o644)
    os.setxattr(f, "user.tag", b"kept")
    os.utime(f, (1_000_000_000, 1_000_000_000))
    yield f
    subprocess.run(["chattr", "-i", str(f)], capture_output=True)
    f.unlink()
    d.rmdir()


def test_no_metadata_changes_outside(outside_file):
    before = outside_file.stat()
    proc, rep, r = run_hostile(r'''
import fcntl, struct
F = %r
attempt("chmod", lambda: os.chmod(F, 0o777))
attempt("chown", lambda: os.chown(F, os.getuid(), os.getgid()))
attempt("utime", lambda: os.utime(F, (0, 0)))
attempt("utime_now", lambda: os.utime(F))
attempt("setxattr", lambda: os.setxattr(F, "user.evil", b"1"))
attempt("removexattr", lambda: os.removexattr(F, "user.tag"))
attempt("filecap", lambda: os.setxattr(F, "security.capability",
                                       b"\x01\x00\x00\x02" + b"\xff" * 16))
def immutable():
    fd = os.open(F, os.O_RDONLY)
    fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x10))
attempt("immutable", immutable)
attempt("write", lambda: open(F, "a").write("x"))
attempt("unlink", lambda: os.unlink(F))
attempt("rename", lambda: os.rename(F, F + ".moved"))
report()
''' % str(outside_file))
    assert r is not None, proc.stderr
    denied(r, "chmod", "chown", "utime", "utime_now", "setxattr", "removexattr", "filecap",
           "immutable", "write", "unlink", "rename")
    after = outside_file.stat()
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_mtime_ns) == \
        (before.st_mode, before.st_uid, before.st_gid, before.st_mtime_ns)
    assert os.listxattr(outside_file) == ["user.tag"]
    assert outside_file.read_text() == "victim\n"
    lsattr = subprocess.run(["lsattr", str(outside_file)], capture_output=True, text=True)
    assert "i" not in lsattr.stdout.split()[0] if lsattr.returncode == 0 else True


def test_no_change_to_the_machine():
    host = socket.gethostname()
    proc, rep, r = run_hostile(r'''
import time
attempt("sethostname", lambda: sc(170, b"pwned", 5))
attempt("setdomainname", lambda: sc(171, b"pwned", 5))
tv = (ctypes.c_long * 2)(int(time.time()), 0)
attempt("settimeofday", lambda: sc(164, ctypes.byref(tv), None))
ts = (ctypes.c_long * 2)(int(time.time()), 0)
attempt("clock_settime", lambda: sc(227, 0, ctypes.byref(ts)))
attempt("adjtimex", lambda: sc(159, ctypes.create_string_buffer(256)))
attempt("fanotify_init", lambda: sc(300, 0, 0))
attempt("syslog", lambda: sc(103, 10, None, 0))
attempt("reboot", lambda: sc(169, 0xfee1dead, 672274793, 0x4321fedc, None))
attempt("swapoff", lambda: sc(168, b"/nonexistent"))
attempt("iopl", lambda: sc(172, 3))
attempt("keyctl", lambda: sc(250, 0, 0))
attempt("bpf", lambda: sc(321, 0, None, 0))
attempt("perf", lambda: sc(298, None, 0, -1, -1, 0))
report()
''')
    assert r is not None, proc.stderr
    denied(r, "sethostname", "setdomainname", "settimeofday", "clock_settime", "adjtimex",
           "fanotify_init", "syslog", "reboot", "swapoff", "iopl", "keyctl", "bpf", "perf")
    assert socket.gethostname() == host


def test_no_mounts():
    proc, rep, r = run_hostile(r'''
attempt("mount", lambda: sc(165, b"none", b"/tmp", b"tmpfs", 0, None))
attempt("unshare_ns", lambda: sc(272, 0x20000))
attempt("unshare_user", lambda: sc(272, 0x10000000))
attempt("open_tree", lambda: sc(428, -100, b"/", 1))
attempt("move_mount", lambda: sc(429, -1, b"", -100, b"/tmp", 0))
attempt("fsopen", lambda: sc(430, b"tmpfs", 0))
attempt("fspick", lambda: sc(433, -100, b"/", 0))
attempt("mount_setattr", lambda: sc(442, -100, b"/", 0, None, 0))
attempt("quotactl_fd", lambda: sc(443, 0, 0, 0, None))
attempt("open_tree_attr", lambda: sc(467, -100, b"/", 1, None, 0))
attempt("chroot", lambda: os.chroot("/tmp"))
attempt("pivot_root", lambda: sc(155, b"/", b"/"))
attempt("newer_than_known", lambda: sc(470, 0))
report()
''')
    assert r is not None, proc.stderr
    denied(r, "mount", "unshare_ns", "unshare_user", "open_tree", "move_mount", "fsopen",
           "fspick", "mount_setattr", "quotactl_fd", "open_tree_attr", "chroot",
           "pivot_root")
    # A syscall newer than the filter knows answers as on an older kernel.
    assert r["newer_than_known"] == "ENOSYS"


def test_fork_bomb_is_bounded():
    proc, rep, r = run_hostile(r'''
import time
n = 0
err = None
for i in range(2000):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno)
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    n += 1
report(forks=n, err=err)
''', "--max-procs", "64", "--timeout", "60")
    assert r is not None, proc.stderr
    assert r["err"] == "EAGAIN" and r["forks"] < 64, r
    assert rep["status"] == "exited" and rep["exit_code"] == 0


def test_memory_bomb_is_bounded():
    proc, rep, r = run_hostile(r'''
hoard = []
try:
    for i in range(256):
        hoard.append(bytearray(64 << 20))
    err = None
except MemoryError:
    err = "MemoryError"
report(mib=64 * len(hoard), err=err)
''', "--max-memory", "512M", "--timeout", "60")
    assert r is not None, proc.stderr
    assert r["err"] == "MemoryError" and r["mib"] < 512, r
    assert rep["status"] == "exited"
