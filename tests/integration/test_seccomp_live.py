"""The default seccomp filter, proven live.

Probes run through `maf-launch run`, once under the filter and once with --seccomp off (the
control), so every "denied" assertion is against a call that the kernel would otherwise have
allowed or failed differently: syscalls one by one, what a Python program sees, other syscall
ABIs, and the program's reach to its supervisor. test_seccomp.py pins the filter as data.
"""
import errno
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from conftest import BUILD, exit_record, launch, wait_exit

PROBES = BUILD / "probes"
SYSCALLS = PROBES / "seccomp_syscalls"
ABI = PROBES / "seccomp_abi"
PYTHON = sys.executable
IS_ROOT = os.geteuid() == 0


def run_program(tmp_dir, *program, opts=()):
    """Runs PROGRAM through maf-launch run and waits for its end. Returns (output, record,
    exit marker text)."""
    tmp_dir = Path(tmp_dir)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    proc = launch(tmp_dir, *program, opts=opts)
    assert proc.returncode == 0, proc.stderr.decode()
    code = wait_exit(tmp_dir)
    out = (tmp_dir / "host_tools" / "program_output.txt").read_text()
    return out, exit_record(tmp_dir), code


def parse_probe(out):
    """NAME 0 | NAME errno=N lines into {name: 0 or errno number}; requires the 'done' line
    so that a probe killed half-way is not read as a partial success."""
    lines = out.splitlines()
    assert lines and lines[-1] == "done", f"probe did not finish:\n{out}"
    res = {}
    for line in lines[:-1]:
        name, _, val = line.partition(" ")
        res[name] = 0 if val == "0" else int(val.removeprefix("errno="))
    return res


def errname(v):
    return "success" if v == 0 else errno.errorcode.get(v, str(v))


# ---------------------------------------------------------------------------------------------
# The filter live: syscalls

@pytest.fixture(scope="module")
def probe_results(tmp_path_factory):
    """Results of `seccomp_syscalls all` under each configuration, run once per module."""
    assert SYSCALLS.exists(), f"{SYSCALLS} is not built (run make probes)"
    cache = {}

    def get(mode):
        if mode not in cache:
            opts = {"default": (),
                    "egress": ("--egress", "open"),
                    # Landlock off too: it denies mount() by itself. The launcher's own
                    # root too: the run's identity has no capability, so the kernel would
                    # refuse the privileged calls by itself.
                    "off": ("--seccomp", "off", "--landlock", "off", "--user", "0")}[mode]
            out, rec, code = run_program(tmp_path_factory.mktemp(f"probe-{mode}"),
                                         str(SYSCALLS), "all", opts=opts)
            assert code == "0", (code, rec, out)
            cache[mode] = (parse_probe(out), rec)
        return cache[mode]
    return get


EPERM, ENOSYS = errno.EPERM, errno.ENOSYS

# name: (under the default filter, with --seccomp off as root, needs root for the control)
# The control values are what this kernel answers without a filter, chosen so that none is
# EPERM: the probe passes arguments that fail differently (ENOENT, EINVAL, EBADF) or succeed.
EXPECT = {
    "socket_inet": (EPERM, 0, False),
    "socket_inet6": (EPERM, 0, False),
    "socket_netlink": (EPERM, 0, False),
    "socket_inet_highbit": (EPERM, 0, False),
    "socketpair_inet": (EPERM, errno.EOPNOTSUPP, False),
    "io_uring_setup": (EPERM, 0, False),
    "ptrace_traceme": (EPERM, 0, False),
    "ptrace_attach": (EPERM, 0, False),
    "bpf": (EPERM, errno.EINVAL, True),
    "perf_event_open": (EPERM, errno.EFAULT, False),
    "userfaultfd": (EPERM, 0, True),
    "process_vm_readv": (EPERM, 0, False),
    "keyctl": (EPERM, errno.ENOKEY, False),
    "unshare_user": (EPERM, 0, True),
    "unshare_net": (EPERM, 0, True),
    "setns": (EPERM, errno.EBADF, False),
    "mount": (EPERM, errno.ENOENT, True),
    "umount2": (EPERM, errno.ENOENT, True),
    "clone_newuser": (EPERM, 0, True),
    "clone_newnet": (EPERM, 0, True),
    "clone_newpid": (EPERM, 0, True),
    "clone_newns": (EPERM, 0, True),
    "clone3": (ENOSYS, errno.EINVAL, False),
    # Allowed under the filter too.
    "socket_unix": (0, 0, False),
    "socketpair_unix": (0, 0, False),
    "clone_plain": (0, 0, False),
    "fork": (0, 0, False),
    # Denied calls from 424 on. Without the filter each call fails harmlessly (a missing path,
    # invalid flags or length, a bad pointer) or only reads.
    "open_tree_attr": (EPERM, errno.ENOENT, False),  # unknown to libseccomp: the floor's
    "quotactl_fd": (EPERM, errno.EBADF, True),
    "process_mrelease": (EPERM, errno.EBADF, False),
    "statmount": (EPERM, errno.EFAULT, False),
    "listmount": (EPERM, errno.EFAULT, False),
    "lsm_set_self_attr": (EPERM, errno.EINVAL, False),
    "memfd_secret": (ENOSYS, errno.EINVAL, False),
    "cachestat": (ENOSYS, errno.EBADF, False),
    # Numbers the filter does not know answer ENOSYS. None of them is a call of this kernel
    # (6.18): a kernel that has one fails its control here, which is when to decide about it.
    "nr_after_known": (ENOSYS, ENOSYS, False),
    "nr_1000": (ENOSYS, ENOSYS, False),
    "nr_minus_1": (ENOSYS, ENOSYS, False),
    "nr_own_gap": (ENOSYS, ENOSYS, False),
    # The mount API and the machine's own state.
    "open_tree": (EPERM, errno.ENOENT, False),
    "move_mount": (EPERM, errno.EINVAL, True),
    "fsopen": (EPERM, errno.EINVAL, True),
    "fsconfig": (EPERM, errno.EINVAL, True),
    "fsmount": (EPERM, errno.EBADF, True),
    "fspick": (EPERM, errno.EINVAL, True),
    "mount_setattr": (EPERM, errno.EINVAL, True),
    "quotactl": (EPERM, errno.ENODEV, True),
    "sethostname": (EPERM, errno.EINVAL, True),
    "setdomainname": (EPERM, errno.EINVAL, True),
    "settimeofday": (EPERM, errno.EFAULT, False),
    "clock_settime": (EPERM, errno.EINVAL, False),
    "clock_adjtime": (EPERM, errno.EFAULT, False),
    "adjtimex": (EPERM, errno.EFAULT, False),
    "fanotify_init": (EPERM, errno.EINVAL, True),
    "chroot": (EPERM, errno.ENOENT, False),
    # ENOSYS from kernels built without I/O port access (CONFIG_X86_IOPL_IOPERM).
    "iopl": (EPERM, (errno.EINVAL, ENOSYS), False),
    "ioperm": (EPERM, (errno.EINVAL, ENOSYS), False),
    "syslog": (EPERM, 0, True),  # the size of the kernel log
    "vhangup": (EPERM, 0, True),  # in a session with no terminal: nothing to hang up
    "nfsservctl": (EPERM, ENOSYS, False),
    "add_key": (EPERM, errno.EFAULT, False),
    "request_key": (EPERM, errno.EFAULT, False),
    "kcmp": (EPERM, (errno.EINVAL, ENOSYS), False),
    # Another process, the parent (the supervisor), named by pid, or every process of a user.
    # The controls read, set a value to itself, or pass a bad pointer or an invalid value.
    "prlimit_parent": (EPERM, 0, False),
    "prlimit_parent_highbit": (EPERM, 0, False),
    "setpriority_parent": (EPERM, 0, False),
    "setpriority_user": (EPERM, 0, True),
    "sched_setaffinity_parent": (EPERM, errno.EFAULT, False),
    "sched_setscheduler_parent": (EPERM, errno.EFAULT, False),
    "sched_setparam_parent": (EPERM, errno.EFAULT, False),
    "sched_setattr_parent": (EPERM, errno.EFAULT, False),
    "ioprio_set_parent": (EPERM, errno.EINVAL, False),
    "ioprio_set_user": (EPERM, errno.EINVAL, False),
    "migrate_pages_parent": (EPERM, (errno.EINVAL, ENOSYS), False),  # ENOSYS without NUMA
    "move_pages_parent": (EPERM, (errno.EINVAL, ENOSYS), False),
    # Device nodes, under a directory that does not exist: the control makes none.
    "mknod_chr": (EPERM, errno.ENOENT, False),
    "mknod_blk": (EPERM, errno.ENOENT, False),
    "mknodat_chr": (EPERM, errno.ENOENT, False),
    "mknodat_blk": (EPERM, errno.ENOENT, False),
    "mknodat_chr_highbits": (EPERM, errno.ENOENT, False),
    # Terminal injection, on a pipe: no terminal.
    "tiocsti": (EPERM, errno.ENOTTY, False),
    "tioclinux": (EPERM, errno.ENOTTY, False),
}

# Calls the filter must answer exactly as the kernel does without it (both runs compared),
# with the answer expected here.
SAME = {
    # Newer calls the policy allows.
    "file_setattr": errno.EINVAL, "file_getattr": errno.EINVAL, "getxattrat": errno.EINVAL,
    "fchmodat2": errno.ENOENT, "mseal": errno.EINVAL, "futex_wake": 0,
    "landlock_abi": (0, errno.EOPNOTSUPP),
    # The same calls on the caller itself (pid 0): libc's setrlimit is prlimit64(0).
    "prlimit_self": 0, "setrlimit_self": 0, "setpriority_self": 0, "setpriority_pgrp_self": 0,
    "sched_setaffinity_self": 0, "sched_setscheduler_self": 0, "sched_setparam_self": 0,
    "sched_setattr_self": errno.EFAULT, "ioprio_set_self": 0,
    "migrate_pages_self": (errno.EINVAL, ENOSYS),
    # FIFOs, sockets and regular files in the run's directory; other ioctls.
    "mknod_fifo": 0, "mknodat_fifo": 0, "mknod_sock": 0, "mknod_reg": 0, "fionread": 0,
}

# setpriority_user's child could not become a user of its own (not root).
NO_LONELY_USER = 255


def matches(value, want):
    return value in want if isinstance(want, tuple) else value == want


def wanted(want):
    return " or ".join(map(errname, want)) if isinstance(want, tuple) else errname(want)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_syscall_under_default_filter(launcher, probe_results, name):
    res, rec = probe_results("default")
    assert rec["seccomp"] == "default"
    want = EXPECT[name][0]
    if res[name] == NO_LONELY_USER and name == "setpriority_user":
        pytest.skip("the probe cannot take a uid of its own here")
    assert res[name] == want, f"{name}: {errname(res[name])}, want {errname(want)}"


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_syscall_with_seccomp_off(launcher, probe_results, name):
    """The control: without the filter the same call is not refused with the filter's errno,
    so the denial above is the filter's doing."""
    _, filtered, needs_root = EXPECT[name]
    if needs_root and not IS_ROOT:
        pytest.skip("the control needs root: unprivileged, the kernel itself says EPERM")
    if name == "io_uring_setup" and Path("/proc/sys/kernel/io_uring_disabled").exists() and \
            Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() != "0":
        pytest.skip("io_uring is disabled by sysctl on this machine")
    res, rec = probe_results("off")
    assert rec["seccomp"] == "off"
    if name == "memfd_secret" and res[name] == ENOSYS:
        pytest.skip("this kernel has no secret memory (secretmem.enable=0)")
    assert matches(res[name], filtered), \
        f"{name}: {errname(res[name])}, want {wanted(filtered)}"


@pytest.mark.parametrize("name", sorted(SAME))
def test_syscall_answered_as_without_filter(launcher, probe_results, name):
    filtered, _ = probe_results("default")
    unfiltered, _ = probe_results("off")
    assert matches(filtered[name], SAME[name]), \
        f"{name}: {errname(filtered[name])}, want {wanted(SAME[name])}"
    assert filtered[name] == unfiltered[name], \
        f"{name}: {errname(filtered[name])} under the filter, {errname(unfiltered[name])} without"


def test_egress_open_changes_only_sockets(launcher, probe_results):
    res, rec = probe_results("egress")
    assert rec["seccomp"] == "default+egress"
    for name, (want, _, _) in EXPECT.items():
        if name.startswith("socket"):
            want = errno.EOPNOTSUPP if name == "socketpair_inet" else 0
        if name == "setpriority_user" and res[name] == NO_LONELY_USER:
            continue
        assert res[name] == want, f"{name}: {errname(res[name])}, want {errname(want)}"
    for name, want in SAME.items():
        assert matches(res[name], want), f"{name}: {errname(res[name])}, want {wanted(want)}"


def test_high_bit_domain_is_af_inet_to_the_kernel(launcher, probe_results):
    """Why the filter compares all 64 bits: unfiltered, 0x100000002 makes an AF_INET socket."""
    assert probe_results("off")[0]["socket_inet_highbit"] == 0
    assert probe_results("default")[0]["socket_inet_highbit"] == EPERM
    # The high bits can only turn an allowed domain into a denied one.
    assert probe_results("default")[0]["socket_unix_highbit"] == EPERM


# pidfd_getfd copies a descriptor out of another process under ptrace's access check.
def test_pidfd_getfd_denied(launcher, probe_results):
    res, _ = probe_results("default")
    assert res["pidfd_getfd"] == EPERM, errname(res["pidfd_getfd"])


# ---------------------------------------------------------------------------------------------
# The filter live: what a Python program sees

SOCKETS_PY = r"""
import json, socket
res = {}
def t(name, f):
    try:
        f()
        res[name] = "ok"
    except OSError as e:
        res[name] = "%s:%s" % (type(e).__name__, e.errno)
def unix():
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
def pair():
    a, b = socket.socketpair()
    a.sendall(b"x")
    assert b.recv(1) == b"x"
    a.close(); b.close()
def inet():
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
def inet6():
    socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
def loopback():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=5)
    s, _ = srv.accept()
    c.sendall(b"y")
    assert s.recv(1) == b"y"
    for x in (c, s, srv):
        x.close()
t("unix", unix); t("socketpair", pair); t("inet", inet); t("inet6", inet6)
t("loopback", loopback)
print(json.dumps(res))
"""


def run_python(tmp_path, code, opts=()):
    out, rec, exit_code = run_program(tmp_path, PYTHON, "-c", code, opts=opts)
    assert exit_code == "0", (exit_code, rec, out)
    return json.loads(out.strip().splitlines()[-1]), rec


def test_python_sockets_egress_closed(launcher, tmp_path):
    res, rec = run_python(tmp_path, SOCKETS_PY)
    assert rec["seccomp"] == "default"
    assert res["inet"] == "PermissionError:1", res
    assert res["inet6"] == "PermissionError:1", res
    assert res["loopback"] == "PermissionError:1", res
    assert res["unix"] == "ok", res
    assert res["socketpair"] == "ok", res


def test_python_sockets_egress_open(launcher, tmp_path):
    res, rec = run_python(tmp_path, SOCKETS_PY, opts=("--egress", "open"))
    assert rec["seccomp"] == "default+egress"
    assert res["inet"] == "ok", res
    assert res["loopback"] == "ok", res
    assert res["unix"] == "ok" and res["socketpair"] == "ok", res
    # inet6 may be absent from the machine (no IPv6 in the kernel): only the filter matters.
    assert not res["inet6"].startswith("PermissionError"), res


SUBPROCESS_PY = r"""
import json, os, subprocess, sys
r = subprocess.run([sys.executable, "-c", "import os; print('child', os.getppid())"],
                   capture_output=True, text=True, timeout=30)
pid = os.fork()
if pid == 0:
    os._exit(5)
_, st = os.waitpid(pid, 0)
unshare = "absent"
if hasattr(os, "unshare"):
    try:
        os.unshare(os.CLONE_NEWUSER)
        unshare = "ok"
    except OSError as e:
        unshare = "%s:%s" % (type(e).__name__, e.errno)
print(json.dumps({"rc": r.returncode, "out": r.stdout, "me": os.getpid(),
                  "fork": os.waitstatus_to_exitcode(st), "unshare": unshare}))
"""


def test_python_subprocess_works_under_filter(launcher, tmp_path):
    """clone3 answers ENOSYS, so glibc's posix_spawn and fork fall back to clone()."""
    res, rec = run_python(tmp_path, SUBPROCESS_PY)
    assert rec["seccomp"] == "default"
    assert res["rc"] == 0, res
    assert res["out"] == f"child {res['me']}\n", res
    assert res["fork"] == 5, res
    assert res["unshare"] in ("PermissionError:1", "absent"), res


# What Python (glibc) passes for the program itself is 0, and keeps working; the supervisor's
# pid is refused. Calls that could reach the supervisor set it to its own value, and the device
# node's directory does not exist, so even a filter that failed would change nothing.
PROCESSES_PY = r"""
import json, os, resource, stat
res = {}
def t(name, f):
    try:
        f()
        res[name] = "ok"
    except OSError as e:
        res[name] = "%s:%s" % (type(e).__name__, e.errno)
ppid = os.getppid()
nofile = resource.RLIMIT_NOFILE
t("setrlimit", lambda: resource.setrlimit(nofile, resource.getrlimit(nofile)))
t("prlimit_self", lambda: resource.prlimit(0, nofile))
t("prlimit_parent", lambda: resource.prlimit(ppid, nofile))
t("affinity_self", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
t("affinity_parent", lambda: os.sched_setaffinity(ppid, os.sched_getaffinity(ppid)))
t("priority_self", lambda: os.setpriority(os.PRIO_PROCESS, 0,
                                          os.getpriority(os.PRIO_PROCESS, 0)))
t("priority_parent", lambda: os.setpriority(os.PRIO_PROCESS, ppid,
                                            os.getpriority(os.PRIO_PROCESS, ppid)))
t("nice", lambda: os.nice(0))
def fifo():
    os.mkfifo("fifo")
    os.unlink("fifo")
t("mkfifo", fifo)
t("mknod_chr", lambda: os.mknod("missing/chr", stat.S_IFCHR | 0o600, os.makedev(1, 3)))
print(json.dumps(res))
"""


def test_python_processes_under_filter(launcher, tmp_path):
    res, rec = run_python(tmp_path, PROCESSES_PY)
    assert rec["seccomp"] == "default"
    for name in ("setrlimit", "prlimit_self", "affinity_self", "priority_self", "nice",
                 "mkfifo"):
        assert res[name] == "ok", (name, res)
    for name in ("prlimit_parent", "affinity_parent", "priority_parent", "mknod_chr"):
        assert res[name] == "PermissionError:1", (name, res)


# ---------------------------------------------------------------------------------------------
# The filter live: other syscall ABIs are killed

def run_abi(tmp_path, abi, opts=()):
    assert ABI.exists(), f"{ABI} is not built (run make probes)"
    return run_program(tmp_path, str(ABI), abi, opts=opts)


def test_native_getpid_survives(launcher, tmp_path):
    out, rec, code = run_abi(tmp_path, "native")
    assert code == "0" and re.search(r"^native ret=\d+ errno=0$", out, re.M), (out, rec)


def test_x32_syscall_killed(launcher, tmp_path):
    """libseccomp's x86_64 filter sends nr >= 0x40000000 (the x32 bit) to the bad-arch action;
    the PFC does not show that check, only the BPF has it."""
    out, rec, code = run_abi(tmp_path, "x32")
    assert "x32 ret=" not in out, out
    assert rec["status"] == "signaled", rec
    assert rec["signal"] == signal.SIGSYS, rec
    assert code == str(128 + signal.SIGSYS)


def test_x32_syscall_without_filter_is_not_killed(launcher, tmp_path):
    """The control: the kernel itself answers the x32 getpid (ENOSYS without CONFIG_X86_X32_ABI,
    a pid with it); only the filter kills."""
    out, rec, code = run_abi(tmp_path, "x32", opts=("--seccomp", "off"))
    assert code == "0", (out, rec)
    m = re.search(r"^x32 ret=(-?\d+) errno=(\d+)$", out, re.M)
    assert m, out
    assert m.group(1) != "-1" or int(m.group(2)) == errno.ENOSYS, out


def int80_available(tmp_path):
    """Whether this kernel serves int 0x80 from a 64-bit process at all (IA32 emulation can be
    compiled out, disabled with ia32_emulation=0, or absent under some hypervisors, in which
    case int 0x80 faults with SIGSEGV before seccomp sees it)."""
    out, rec, code = run_abi(tmp_path / "control", "int80", opts=("--seccomp", "off"))
    if code == "0":
        return True, out
    assert rec["status"] == "signaled" and rec["signal"] == signal.SIGSEGV, (out, rec)
    return False, rec


def test_int80_never_returns_under_filter(launcher, tmp_path):
    out, rec, code = run_abi(tmp_path / "filtered", "int80")
    assert "int80 ret=" not in out, out
    assert rec["status"] == "signaled", rec
    assert rec["signal"] in (signal.SIGSYS, signal.SIGSEGV), rec


def test_int80_killed_by_sigsys(launcher, tmp_path):
    """An i386 syscall has AUDIT_ARCH_I386, not in the filter: KILL_PROCESS, SIGSYS."""
    available, control = int80_available(tmp_path)
    if not available:
        pytest.skip(f"this kernel does not serve int 0x80 (unfiltered it gets SIGSEGV: "
                    f"{control}), so the filter never sees the call")
    out, rec, code = run_abi(tmp_path / "filtered", "int80")
    assert "int80 ret=" not in out, out
    assert rec["status"] == "signaled" and rec["signal"] == signal.SIGSYS, rec
    assert code == str(128 + signal.SIGSYS)


# ---------------------------------------------------------------------------------------------
# The filter live: the program cannot signal its supervisor

SIGNAL = PROBES / "seccomp_signal"
# Reached only through a kill-family syscall or pidfd_open, which the filter matches on the
# supervisor's pid (its group, and "everyone" for kill).
SIGNAL_DENIED = ["kill", "kill_group", "kill_all", "tkill", "tgkill", "rt_sigqueueinfo",
                 "rt_tgsigqueueinfo", "pidfd_open"]


def signal_checks(tmp_path, opts):
    assert SIGNAL.exists(), f"{SIGNAL} is not built (run make probes)"
    out, rec, code = run_program(tmp_path, str(SIGNAL), "checks", opts=opts)
    assert code == "0", (out, rec)
    lines = out.splitlines()
    assert lines[0].startswith("supervisor "), out
    return parse_probe("\n".join(lines[1:])), int(lines[0].split()[1])


@pytest.mark.parametrize("landlock", ["auto", "off"])
def test_supervisor_unreachable_by_kill_family(launcher, tmp_path, landlock):
    """Signal 0 tests the permission without delivering anything. With --landlock off the
    filter alone has to hold."""
    res, sup = signal_checks(tmp_path, ("--landlock", landlock))
    for name in SIGNAL_DENIED:
        assert res[name] == EPERM, f"{name} to the supervisor {sup}: {errname(res[name])}"
    for name in ("kill_self", "tgkill_self", "pidfd_open_self"):
        assert res[name] == 0, f"{name}: {errname(res[name])}"


def test_supervisor_reachable_without_filter(launcher, tmp_path):
    """The control: with neither seccomp nor Landlock, and the launcher's own identity,
    every one of those calls succeeds."""
    res, _ = signal_checks(tmp_path, ("--seccomp", "off", "--landlock", "off", "--user", "0"))
    for name in SIGNAL_DENIED + ["pidfd_send_signal_procfd"]:
        assert res[name] == 0, f"{name}: {errname(res[name])}"


# pidfd_send_signal accepts an open /proc/PID directory as its pidfd; without Landlock's
# signal scope the filter denies pidfd_send_signal outright.
def test_supervisor_unreachable_by_pidfd_send_signal_on_procfd(launcher, tmp_path):
    res, sup = signal_checks(tmp_path, ("--landlock", "off"))
    assert res["pidfd_send_signal_procfd"] == EPERM, \
        f"pidfd_send_signal(open('/proc/{sup}'), 0) succeeded"


# fcntl(F_SETOWN, supervisor) + F_SETSIG(SIGKILL) + O_ASYNC would make the kernel itself send
# SIGKILL to the supervisor, with no kill-family syscall; the filter refuses F_SETOWN at the
# supervisor's pid (and F_SETOWN_EX outright when Landlock does not scope signals).
def test_supervisor_survives_sigio_owner_kill(launcher, tmp_path):
    assert SIGNAL.exists(), f"{SIGNAL} is not built (run make probes)"
    proc = launch(tmp_path, str(SIGNAL), "sigio-kill", opts=("--landlock", "off"))
    assert proc.returncode == 0, proc.stderr.decode()
    try:
        code = wait_exit(tmp_path, timeout=8)
    except AssertionError:
        out = (tmp_path / "host_tools" / "program_output.txt").read_text()
        pytest.fail(f"the supervisor was killed through SIGIO: no exit marker; output: {out!r}")
    out = (tmp_path / "host_tools" / "program_output.txt").read_text()
    assert "arm: Operation not permitted" in out, out
    assert code == "1"


PROC_MEM_PY = r"""
import os
try:
    open("/proc/%d/mem" % os.getppid(), "r+b").close()
    print("opened")
except OSError as e:
    print("%s:%s" % (type(e).__name__, e.errno))
"""


# Without Landlock, open() of /proc/SUPERVISOR/mem is refused all the same: the program runs
# under an identity of its own without CAP_SYS_PTRACE, and the supervisor is not dumpable.
@pytest.mark.parametrize("landlock", ["auto", "off"])
def test_supervisor_memory_not_writable(launcher, tmp_path, landlock):
    out, rec, code = run_program(tmp_path, PYTHON, "-c", PROC_MEM_PY,
                                 opts=("--landlock", landlock))
    assert code == "0", (out, rec)
    if landlock == "auto" and not rec["landlock"].startswith("abi-"):
        pytest.skip(f"no Landlock on this kernel ({rec['landlock']})")
    assert out.strip() in ("PermissionError:13", "PermissionError:1"), out
