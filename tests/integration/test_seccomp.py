"""The default seccomp filter, pinned as data.

`maf-launch policy` must print exactly tests/golden/seccomp-default*.pfc, and the PFC must say
what guest/seccomp.c means (bad-arch kill, socket rules, clone flags, clone3, the calls that
name another process, device nodes). The floor, the filter by number a run loads after
libseccomp's, is pinned the same way (`maf-launch policy --floor`, tests/golden/seccomp-floor.txt)
and run here, instruction by instruction, for every syscall number. test_seccomp_live.py proves
the filter live.
"""
import errno
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_TREE, LAUNCHER

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden"

REGENERATE = (
    "If the seccomp filter changed on purpose, review the diff above, then regenerate the "
    "golden files from the repository root with:\n"
    "  make build/maf-launch && build/maf-launch policy > tests/golden/seccomp-default.pfc"
    " && build/maf-launch policy --egress open > tests/golden/seccomp-default-egress.pfc"
    " && build/maf-launch policy --floor > tests/golden/seccomp-floor.txt\n"
    "(the PFC text is libseccomp's: a different libseccomp version may print it differently)"
)


def policy(*opts):
    proc = subprocess.run([str(LAUNCHER), "policy", *opts], capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


# ---------------------------------------------------------------------------------------------
# The filter as data: golden PFC files

@pytest.mark.parametrize("opts,golden", [
    ((), "seccomp-default.pfc"),
    (("--egress", "closed"), "seccomp-default.pfc"),
    (("--egress", "open"), "seccomp-default-egress.pfc"),
    # The floor is the same whatever the egress.
    (("--floor",), "seccomp-floor.txt"),
    (("--egress", "open", "--floor"), "seccomp-floor.txt"),
])
def test_policy_matches_golden(launcher, opts, golden):
    got = policy(*opts)
    want = (GOLDEN / golden).read_bytes()
    if got != want:
        import difflib
        diff = "".join(difflib.unified_diff(
            want.decode(errors="replace").splitlines(True),
            got.decode(errors="replace").splitlines(True),
            f"tests/golden/{golden}", f"maf-launch policy {' '.join(opts)}".rstrip()))
        pytest.fail(f"the seccomp filter differs from tests/golden/{golden}:\n{diff}\n"
                    f"{REGENERATE}")


def test_policy_supervisor_pid(launcher):
    """The pid the filter protects is a run's own; --supervisor-pid only renames it."""
    default = policy().decode()
    other = policy("--supervisor-pid", "31337").decode()
    assert "== 4242)" in default and "== 4242)" not in other
    assert other == default.replace("== 4242)", "== 31337)").replace(
        f"== {2**32 - 4242})", f"== {2**32 - 31337})")


FILTERGEN = BUILD_TREE / "gen" / "filtergen"


def test_prebuilt_filter_is_libseccomps():
    # A run loads the filter libseccomp built when maf-launch was built, with the
    # supervisor's pid filled in (the launcher links no libseccomp); filtergen --check
    # rebuilds it with libseccomp now and compares, instruction by instruction, with and
    # without egress and Landlock's signal scope.
    assert FILTERGEN.exists(), f"{FILTERGEN} is not built (run make)"
    pids = (2, 4242, os.getpid(), 65535, 4194304, 2**30 - 1)
    proc = subprocess.run([str(FILTERGEN), "--check", *map(str, pids)], capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert proc.stdout.decode().count("the prebuilt filter is libseccomp's") == 4 * len(pids)


def test_prebuilt_filter_check_refuses_pid_1():
    # Pid 1 would make -pid equal -1 in kill's rules; no supervisor has it, and no run
    # loads a filter for it.
    proc = subprocess.run([str(FILTERGEN), "--check", "1"], capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert b"takes pids from 2" in proc.stderr


def test_policy_check_is_done_at_build_time(launcher):
    proc = subprocess.run([launcher, "policy", "--check"], capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert b"filtergen --check" in proc.stderr


def test_policy_seccomp_off_prints_nothing(launcher):
    assert policy("--seccomp", "off") == b""
    assert policy("--seccomp", "off", "--floor") == b""


def pfc_rules(text):
    """The PFC's syscall blocks as {syscall name: body below its `if ($syscall == N)`}, plus
    the default and bad-arch actions. The blocks sit at any depth of the binary search on
    the syscall number; each body is given as if its block were at the top level."""
    blocks, name, indent, default, badarch = {}, None, "", None, None
    lines = text.splitlines(True)
    for i, line in enumerate(lines):
        m = re.match(r'( +)# filter for syscall "(\w+)" \((\d+)\)', line)
        if m:
            indent, name = m.group(1), m.group(2)
            assert lines[i + 1] == f"{indent}if ($syscall == {m.group(3)})\n", lines[i + 1]
            assert name not in blocks, name
            blocks[name] = ""
        elif line.startswith("  # default action"):
            name = None
            default = re.match(r"  action (\S+);", lines[i + 1]).group(1)
        elif line.startswith("# invalid architecture action"):
            badarch = re.match(r"action (\S+);", lines[i + 1]).group(1)
        elif name and line.startswith(indent + "  "):
            blocks[name] += "  " + line[len(indent):]
        elif name and not line.startswith(indent + "if ($syscall == "):
            name = None
    return blocks, default, badarch


DENIED_EPERM = ["ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
                "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                "delete_module", "mount", "umount2", "pivot_root", "move_mount", "open_tree",
                "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns",
                "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter",
                "io_uring_register", "quotactl_fd", "process_mrelease",
                # The machine's own state, whatever the program's capabilities.
                "chroot", "quotactl", "sethostname", "setdomainname", "settimeofday",
                "clock_settime", "clock_adjtime", "adjtimex", "syslog", "iopl", "ioperm",
                "fanotify_init", "vhangup", "nfsservctl",
                # Comparing other processes.
                "kcmp"]
# (open_tree_attr, statmount, listmount and lsm_set_self_attr are newer than libseccomp
# 2.5.4's table: the floor denies them by number.)
# Answered as a kernel without them would, so that callers fall back.
DENIED_ENOSYS = ["clone3", "memfd_secret", "cachestat"]
CLONE_NS_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000,
                  "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
                  "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                  "CLONE_NEWNET": 0x40000000}


@pytest.mark.parametrize("egress", ["closed", "open"])
def test_policy_says_what_seccomp_c_means(launcher, egress):
    text = policy("--egress", egress).decode()
    blocks, default, badarch = pfc_rules(text)
    # Only the native architecture is in the filter; anything else is killed.
    assert re.findall(r"# filter for arch (\S+)", text) == ["x86_64"], text
    assert badarch == "KILL_PROCESS"
    assert default == "ALLOW"
    for name in DENIED_EPERM:
        assert blocks.get(name, "").strip() == "action ERRNO(1);", (name, blocks.get(name))
    for name in DENIED_ENOSYS:  # clone3: libc falls back to clone
        assert blocks.get(name, "").strip() == "action ERRNO(38);", (name, blocks.get(name))
    clone = blocks["clone"]
    for flag, bit in CLONE_NS_FLAGS.items():
        assert f"if ($a0.lo32 & 0x{bit:08x} == {bit})\n        action ERRNO(1);" in clone, flag
    # CLONE_NEWTIME (0x80) is part of clone()'s exit signal byte: it must not be matched.
    assert "0x00000080" not in clone
    # Signals to the supervisor (policy prints 4242 in its place): pid, -pid and -1 for
    # kill; the pid or tid arguments of the others.
    # Pids are ints: the high 32 bits are masked out, the low 32 compared.
    def has_pid_rule(block, arg, value):
        return (f"    if ($a{arg}.hi32 & 0x00000000 == 0)\n" in block and
                f"      if ($a{arg}.lo32 & 0xffffffff == {value})\n"
                f"        action ERRNO(1);\n" in block)
    for value in (4242, 2**32 - 4242, 2**32 - 1):
        assert has_pid_rule(blocks["kill"], 0, value), (value, blocks["kill"])
    for call, args in {"tkill": (0,), "tgkill": (0, 1), "rt_sigqueueinfo": (0,),
                       "rt_tgsigqueueinfo": (0, 1), "pidfd_open": (0,)}.items():
        for arg in args:
            assert has_pid_rule(blocks[call], arg, 4242), (call, arg, blocks[call])
    if egress == "closed":
        for call in ("socket", "socketpair"):
            # All 64 bits compared: hi32 != 0 is denied, and in lo32 only AF_UNIX (1) passes.
            assert blocks[call] == ("    if ($a0.hi32 == 0)\n"
                                    "      if ($a0.lo32 == 1)\n"
                                    "      else\n"
                                    "        action ERRNO(1);\n"
                                    "    else\n"
                                    "      action ERRNO(1);\n"), blocks[call]
    else:
        assert "socket" not in blocks and "socketpair" not in blocks


# Calls that name another process by pid: only exactly 0 (the caller) passes; all 64 bits are
# compared, so high bits can only turn an allowed call into a denied one.
NOT_SELF = {"prlimit64": 0, "setpriority": 1, "ioprio_set": 1, "sched_setaffinity": 0,
            "sched_setscheduler": 0, "sched_setparam": 0, "sched_setattr": 0,
            "migrate_pages": 0, "move_pages": 0}


def not_zero_rule(arg):
    return (f"    if ($a{arg}.hi32 == 0)\n"
            f"      if ($a{arg}.lo32 == 0)\n"
            f"      else\n"
            f"        action ERRNO(1);\n"
            f"    else\n"
            f"      action ERRNO(1);\n")


def at_least_rule(value):
    """which >= value, in all 64 bits: 0x100000002 is PRIO_USER to the kernel, and denied."""
    return ("    if ($a0.hi32 > 0)\n"
            "      action ERRNO(1);\n"
            "    else\n"
            "      if ($a0.hi32 == 0)\n"
            f"        if ($a0.lo32 >= {value})\n"
            "          action ERRNO(1);\n")


@pytest.mark.parametrize("egress", ["closed", "open"])
def test_policy_other_processes(launcher, egress):
    blocks, _, _ = pfc_rules(policy("--egress", egress).decode())
    for call, arg in NOT_SELF.items():
        assert not_zero_rule(arg) in blocks[call], (call, blocks[call])
    assert blocks["prlimit64"] == not_zero_rule(0), blocks["prlimit64"]
    # PRIO_USER (2) and IOPRIO_WHO_USER (3) name every process of a user.
    assert blocks["setpriority"] == not_zero_rule(1) + at_least_rule(2), blocks["setpriority"]
    assert blocks["ioprio_set"] == not_zero_rule(1) + at_least_rule(3), blocks["ioprio_set"]


@pytest.mark.parametrize("egress", ["closed", "open"])
def test_policy_devices_and_terminals(launcher, egress):
    blocks, _, _ = pfc_rules(policy("--egress", egress).decode())
    # S_IFMT of the mode: S_IFCHR (0o20000) and S_IFBLK (0o60000), nothing else.
    for call, arg in (("mknod", 1), ("mknodat", 2)):
        assert blocks[call] == (f"    if ($a{arg}.hi32 & 0x00000000 == 0)\n"
                                f"      if ($a{arg}.lo32 & 0x0000f000 == 24576)\n"
                                f"        action ERRNO(1);\n"
                                f"      if ($a{arg}.lo32 & 0x0000f000 == 8192)\n"
                                f"        action ERRNO(1);\n"), (call, blocks[call])
    # TIOCSTI and TIOCLINUX in the low 32 bits (the kernel reads an unsigned int).
    for cmd in (0x5412, 0x541C):
        assert (f"      if ($a1.lo32 & 0xffffffff == {cmd})\n"
                f"        action ERRNO(1);\n") in blocks["ioctl"], (cmd, blocks["ioctl"])


# The floor: what it must deny by number, whether libseccomp knows the name or not (all from
# 424 on, numbered alike on every architecture), and with which errno.
FLOOR_EPERM = {
    425: "io_uring_setup", 426: "io_uring_enter", 427: "io_uring_register", 428: "open_tree",
    429: "move_mount", 430: "fsopen", 431: "fsconfig", 432: "fsmount", 433: "fspick",
    438: "pidfd_getfd", 440: "process_madvise", 442: "mount_setattr", 443: "quotactl_fd",
    448: "process_mrelease", 457: "statmount", 458: "listmount", 460: "lsm_set_self_attr",
    467: "open_tree_attr",
}
FLOOR_ENOSYS = {435: "clone3", 447: "memfd_secret", 451: "cachestat"}
FLOOR_DENIED = {**{nr: (name, errno.EPERM) for nr, name in FLOOR_EPERM.items()},
                **{nr: (name, errno.ENOSYS) for nr, name in FLOOR_ENOSYS.items()}}
MAX_KNOWN = 469          # file_setattr, Linux 6.17
X86_64_OWN_MAX = 336     # uprobe
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003


def floor_program(text):
    """The floor's listing as [(kind, ...)], checking that each line is numbered in turn."""
    prog = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r" *(\d+): (.*?)(?: +# (.*))?$", line)
        assert m and int(m.group(1)) == len(prog), line
        body = m.group(2)
        if body in ("A = nr", "A = arch"):
            prog.append(("ld", body[4:]))
        elif m2 := re.fullmatch(r"return (KILL_PROCESS|ALLOW|ERRNO\((\d+)\))", body):
            prog.append(("ret", m2.group(1)))
        elif m2 := re.fullmatch(r"if \(A (==|>|>=) (0x[0-9a-f]+|\d+)\) goto (\d+) else goto (\d+)",
                                body):
            prog.append(("jmp", m2.group(1), int(m2.group(2), 0), int(m2.group(3)),
                         int(m2.group(4)), m.group(3)))
        else:
            pytest.fail(f"unexpected instruction in the floor: {line}")
    return prog


def floor_run(prog, arch, nr):
    """What the floor answers for syscall nr of arch, as classic BPF would run it: jumps only
    forward, the program ends on a return."""
    regs, pc, cmp = {"arch": arch, "nr": nr}, 0, {"==": int.__eq__, ">": int.__gt__,
                                                    ">=": int.__ge__}
    a = None
    while True:
        insn = prog[pc]
        if insn[0] == "ld":
            a, pc = regs[insn[1]], pc + 1
        elif insn[0] == "ret":
            return insn[1]
        else:
            _, op, k, jt, jf, _ = insn
            target = jt if cmp[op](a, k) else jf
            assert target > pc, f"backward jump at {pc}"
            pc = target


def test_floor_answers_every_number(launcher):
    prog = floor_program(policy("--floor").decode())
    numbers = list(range(0, 1100)) + [0x3FFFFFFF, 0x40000000, 0x40000001 + 39, 0x7FFFFFFF,
                                      0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
    for nr in numbers:
        if 0x40000000 <= nr < 0xFFFFFFFF:
            want = "KILL_PROCESS"  # the x32 bit (-1 is no call: ENOSYS)
        elif nr in FLOOR_DENIED:
            want = f"ERRNO({FLOOR_DENIED[nr][1]})"
        elif nr > MAX_KNOWN or X86_64_OWN_MAX < nr < 424:
            want = f"ERRNO({errno.ENOSYS})"  # unknown to this build: as on an older kernel
        else:
            want = "ALLOW"  # libseccomp's filter decides
        assert floor_run(prog, AUDIT_ARCH_X86_64, nr) == want, (nr, want)
    for nr in (0, 39, 425, 1000):
        assert floor_run(prog, AUDIT_ARCH_I386, nr) == "KILL_PROCESS"


def test_floor_names_what_it_denies(launcher):
    """Each denial's note names the call the x86_64 table gives that number."""
    prog = floor_program(policy("--floor").decode())
    named = {insn[2]: insn[5] for insn in prog if insn[0] == "jmp" and insn[1] == "=="}
    for nr, (name, _) in FLOOR_DENIED.items():
        assert named.get(nr) == name, (nr, named.get(nr), name)


# The mount API and the calls that change the machine itself, by x86_64 number: each denied
# with EPERM, by name in libseccomp's filter and, from 424 on, by number in the floor whether
# libseccomp knows the name or not.
MACHINE_DENIED = {
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428,
    "open_tree_attr": 467, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "quotactl": 179, "quotactl_fd": 443,
    "sethostname": 170, "setdomainname": 171, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "adjtimex": 159, "fanotify_init": 300, "iopl": 172, "ioperm": 173,
    "syslog": 103, "vhangup": 153, "nfsservctl": 180, "swapon": 167, "swapoff": 168,
    "reboot": 169, "acct": 163, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "keyctl": 250,
    "add_key": 248, "request_key": 249,
}


@pytest.mark.parametrize("egress", ["closed", "open"])
def test_machine_state_denied_by_name_or_number(launcher, egress):
    text = policy("--egress", egress).decode()
    blocks, _, _ = pfc_rules(text)
    numbers = {int(n): name for name, n in re.findall(r'# filter for syscall "(\w+)" \((\d+)\)',
                                                      text)}
    floor = {insn[2]: insn for insn in floor_program(policy("--floor").decode())
             if insn[0] == "jmp" and insn[1] == "=="}
    for name, nr in MACHINE_DENIED.items():
        if nr in numbers:
            assert numbers[nr] == name, (nr, numbers[nr], name)
            assert blocks[name].strip() == "action ERRNO(1);", (name, blocks[name])
        else:
            # Unknown to this libseccomp by name: the floor holds it.
            assert nr >= 424, f"{name} ({nr}) is in no filter"
        if nr >= 424:
            assert nr in floor and FLOOR_DENIED[nr] == (name, errno.EPERM), name
