"""The host-side helpers of the launcher, run as the real static binary against real processes
and directories: `maf-launch stop` (ends a run's whole tree, and signals nothing unless the pid
is the run's supervisor), `maf-launch reclaim` (deletes the run tree without following symlinks
or crossing mounts) and `maf-launch wait` (the inotify long-poll). Every assertion is on
behaviour (which process exists, which file is left, which bytes were printed), never on how
long something took; waits in the set-up only guard against a hang."""
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, exit_record, launch, launch_info, pid_alive, wait_exit

CALLS = "host_tool_calls"
EXIT_MARKER = "program_exit_code"


def ml(*args, timeout=60, launcher=LAUNCHER, **kw):
    """Runs `maf-launch ARGS...` (the build's, or launcher) and returns the
    CompletedProcess."""
    return subprocess.run([str(launcher), *map(str, args)], capture_output=True,
                          timeout=timeout, **kw)


def until(pred, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError(f"{what}: not after {timeout}s")


def read_pid(path):
    until(lambda: path.exists() and path.read_text().strip(), f"{path} written")
    return int(path.read_text())


def start_run(run_dir, script, opts=()):
    """Launches `sh -c SCRIPT` (in R/work) and returns the launch line as a dict."""
    proc = launch(run_dir, "sh", "-c", script, opts=opts)
    assert proc.returncode == 0, proc.stderr
    return launch_info(proc)


def kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- stop ---------------------------------------------------------------------------------

# A program that ignores SIGTERM, with a grandchild that left for its own session and a
# double-forked daemon (reparented away from the program), both ignoring SIGTERM too.
STUBBORN = (
    "trap '' TERM; "
    "setsid sleep 1000 & echo $! > gc.pid; "
    "(setsid sleep 1001 & echo $! > daemon.pid); "
    "echo $$ > main.pid; "
    "exec sleep 1002"
)


def stubborn_run(run_dir, opts=("--grace", "0.3")):
    info = start_run(run_dir, STUBBORN, opts)
    work = run_dir / "work"
    pids = {"program": info["pid"], "supervisor": info["supervisor_pid"],
            "grandchild": read_pid(work / "gc.pid"), "daemon": read_pid(work / "daemon.pid")}
    read_pid(work / "main.pid")
    return info, pids


def test_stop_ends_a_stubborn_tree_with_a_setsid_grandchild(run_dir):
    info, pids = stubborn_run(run_dir)
    for name, pid in pids.items():
        assert pid_alive(pid), f"the {name} should be running before stop"
    # The program's pid files are the program's to write: stop must not care.
    (run_dir / HOST_TOOLS / "program_pid").write_text(str(os.getpid()))
    (run_dir / HOST_TOOLS / "program_session").write_text(str(os.getpid()))

    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"])
    assert res.returncode == 0, res.stderr
    for name, pid in pids.items():
        assert not pid_alive(pid), f"the {name} ({pid}) survived stop"
    assert json.loads(res.stdout)["status"] == "stopped"
    assert exit_record(run_dir)["status"] == "stopped"
    assert (run_dir / HOST_TOOLS / EXIT_MARKER).exists()
    assert pid_alive(os.getpid())


def test_stop_kills_everything_when_the_supervisor_takes_too_long(run_dir):
    # A grace far beyond stop's timeout: stop must kill the tree and the supervisor itself.
    info, pids = stubborn_run(run_dir, opts=("--grace", "600"))
    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"],
             "--timeout", "0.2")
    assert res.returncode == 0, res.stderr
    for name, pid in pids.items():
        assert not pid_alive(pid), f"the {name} ({pid}) survived stop"
    assert b"did not end run" in res.stderr, "stop should have had to kill"


def test_stop_matches_the_equals_form_and_trailing_slashes(run_dir):
    proc = subprocess.run(
        [str(LAUNCHER), "run", f"--run-dir={run_dir}//", "--", "sleep", "1000"],
        capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    res = ml("stop", "--run-dir", f"{run_dir}/", "--supervisor-pid", info["supervisor_pid"])
    assert res.returncode == 0, res.stderr
    assert not pid_alive(info["pid"])
    assert exit_record(run_dir)["status"] == "stopped"


def full_pipe():
    """A pipe whose write end blocks: filled to capacity, never read until released."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 65536)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w


def test_stop_refuses_every_process_that_is_not_the_runs_supervisor(run_dir, tmp_path):
    info = start_run(run_dir, "exec sleep 1000")
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = start_run(other_dir, "exec sleep 1000")
    plain = subprocess.Popen(["sleep", "1000"])
    leader = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    # Same executable, and a command line naming this run, but not a session leader: the
    # launcher itself, stuck writing its launch line into a full pipe.
    stuck_dir = tmp_path / "stuckrun"
    stuck_dir.mkdir()
    r, w = full_pipe()
    stuck = subprocess.Popen([str(LAUNCHER), "run", "--run-dir", str(stuck_dir),
                              "--", "sleep", "1000"], stdout=w, stderr=subprocess.DEVNULL)
    try:
        until(lambda: (stuck_dir / HOST_TOOLS / "program_pid").exists(), "the stuck launch")
        cases = [
            ("a plain process", plain.pid, run_dir),
            ("a session leader running another executable", leader.pid, run_dir),
            ("the program of the run", info["pid"], run_dir),
            ("the supervisor of another run", other["supervisor_pid"], run_dir),
            ("the launcher, not a session leader", stuck.pid, stuck_dir),
            ("the pytest process", os.getpid(), run_dir),
        ]
        for what, pid, rd in cases:
            assert pid_alive(pid), what
            res = ml("stop", "--run-dir", rd, "--supervisor-pid", pid, "--timeout", "1")
            assert res.returncode == 1, (what, res.stderr)
            assert b"nothing was signalled" in res.stderr, what
            assert res.stdout == b"", what
            assert pid_alive(pid), f"stop signalled {what}"
        for d, i in ((run_dir, info), (other_dir, other)):
            assert pid_alive(i["pid"]) and pid_alive(i["supervisor_pid"])
            assert not (d / HOST_TOOLS / EXIT_MARKER).exists()
    finally:
        plain.kill()
        leader.kill()
        os.close(r)
        stuck.wait(timeout=30)
        os.close(w)
        plain.wait()
        leader.wait()
        for d, i in ((run_dir, info), (other_dir, other)):
            ml("stop", "--run-dir", d, "--supervisor-pid", i["supervisor_pid"])
        stuck_program = stuck_dir / HOST_TOOLS / "program_pid"
        if stuck_program.exists():
            kill_quietly(int(stuck_program.read_text()))


def test_stop_after_the_run_ended_reports_the_record(run_dir):
    info = start_run(run_dir, "exit 3")
    assert wait_exit(run_dir) == "3"
    until(lambda: not pid_alive(info["supervisor_pid"]), "the supervisor's exit")
    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"])
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["status"] == "exited" and rec["exit_code"] == 3
    assert b"already ended" in res.stderr


def test_stop_of_a_gone_pid_without_an_exit_marker_says_the_run_is_lost(run_dir):
    # A supervisor gone without the exit marker: the run is lost (exit 3). Nothing outside
    # the run is signalled: only processes of the run's own identity would be (none here).
    bystander = subprocess.Popen(["sleep", "30"])
    p = subprocess.Popen(["true"])
    p.wait()
    try:
        res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", p.pid)
        assert res.returncode == 3, res.stderr
        assert b"the run is lost" in res.stderr
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def stop_output(out):
    """stop --output's stdout: (the record or None, what the output line says, the bytes)."""
    line, rest = out.split(b"\n", 1)
    said, body = rest.split(b"\n", 1)
    assert said.startswith(b"output "), out
    said = said[7:].decode()
    if said.isdigit():
        assert len(body) == int(said), out
    else:
        assert body == b"", out
    return (json.loads(line) if line else None), said, body


def test_stop_prints_the_output_after_the_record_and_reclaims(run_dir):
    # A stubborn tree to end first, then the output, then all of R but work.
    info, pids = stubborn_run(run_dir)
    (run_dir / "work" / "kept").write_text("k")
    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"],
             "--output", 1 << 20, "--reclaim", "--keep", "work")
    assert res.returncode == 0, res.stderr
    for name, pid in pids.items():
        assert not pid_alive(pid), f"the {name} ({pid}) survived stop"
    rec, said, body = stop_output(res.stdout)
    assert rec["status"] == "stopped"
    assert said == str(len(body)) and body == b"", "the stubborn program printed nothing"
    assert sorted(os.listdir(run_dir)) == ["work"]
    assert (run_dir / "work" / "kept").read_text() == "k"


def test_stop_brings_back_binary_output_of_an_ended_run(run_dir):
    info = start_run(run_dir, "printf 'a\\000b\\377\\noutput 9\\n'; exit 4")
    assert wait_exit(run_dir) == "4"
    until(lambda: not pid_alive(info["supervisor_pid"]), "the supervisor's exit")
    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"],
             "--output", 100, "--reclaim")
    assert res.returncode == 0, res.stderr
    rec, said, body = stop_output(res.stdout)
    assert rec["exit_code"] == 4 and rec["output_bytes"] == len(body)
    assert body == b"a\0b\xff\noutput 9\n"
    assert not run_dir.exists()


def test_stop_output_over_its_limit_absent_or_not_a_file(run_dir):
    info = start_run(run_dir, "echo 0123456789")
    wait_exit(run_dir)
    until(lambda: not pid_alive(info["supervisor_pid"]), "the supervisor's exit")
    args = ("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"])
    res = ml(*args, "--output", 10)
    assert res.returncode == 0, res.stderr
    assert stop_output(res.stdout)[1:] == ("over", b"")
    res = ml(*args, "--output", 11)
    assert stop_output(res.stdout)[1:] == ("11", b"0123456789\n")
    # A symlink where the output was is not followed: no output.
    out = run_dir / HOST_TOOLS / "program_output.txt"
    out.unlink()
    out.symlink_to("/etc/passwd")
    res = ml(*args, "--output", 1 << 20)
    assert stop_output(res.stdout)[1:] == ("absent", b"")
    out.unlink()
    res = ml(*args, "--output", 1 << 20, "--reclaim")
    assert res.returncode == 0, res.stderr
    assert stop_output(res.stdout)[1:] == ("absent", b"")
    assert not run_dir.exists()


def test_stop_reclaims_nothing_without_a_record(run_dir):
    # A supervisor that does not end in time is killed, before it writes the record.
    info, pids = stubborn_run(run_dir, opts=("--grace", "600"))
    res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"],
             "--timeout", "0.2", "--output", 100, "--reclaim")
    assert res.returncode == 0, res.stderr
    for name, pid in pids.items():
        assert not pid_alive(pid), f"the {name} ({pid}) survived stop"
    rec, said, _ = stop_output(res.stdout)
    assert rec is None and said == "0"
    assert (run_dir / HOST_TOOLS).is_dir(), "R is left for the host to read"


def test_stop_says_when_it_could_not_reclaim(run_dir, tmp_path):
    info = start_run(run_dir, "echo hi")
    wait_exit(run_dir)
    until(lambda: not pid_alive(info["supervisor_pid"]), "the supervisor's exit")
    src = tmp_path / "src"
    src.mkdir()
    (src / "mine").write_text("m")
    mnt = run_dir / "work" / "mnt"
    mnt.mkdir()
    m = subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True)
    if m.returncode:
        pytest.skip(f"mount --bind failed: {m.stderr.decode().strip()}")
    try:
        res = ml("stop", "--run-dir", run_dir, "--supervisor-pid", info["supervisor_pid"],
                 "--output", 100, "--reclaim")
        assert res.returncode == 4, res.stderr
        rec, said, body = stop_output(res.stdout)
        assert rec["status"] == "exited" and body == b"hi\n"
        assert b"mount point" in res.stderr and b"not reclaimed" in res.stderr
        assert (src / "mine").read_text() == "m"
        assert not (run_dir / HOST_TOOLS).exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("args", [
    [],
    ["--run-dir", "/tmp/x"],
    ["--supervisor-pid", "123"],
    ["--run-dir", "relative", "--supervisor-pid", "123"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "12x"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "1"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--timeout", "soon"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--bogus"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--output", "ten"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--output", "-1"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--keep", "work"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--reclaim", "--keep", "a/b"],
    ["--run-dir", "/tmp/x", "--supervisor-pid", "123", "--reclaim", "--keep", "w",
     "--keep", "x"],
])
def test_stop_usage_errors(args):
    res = ml("stop", *args)
    assert res.returncode == 2
    assert len(res.stderr.decode().strip().splitlines()) == 1, res.stderr


# --- reclaim ------------------------------------------------------------------------------

def build_hostile_tree(root, outside):
    """A run tree with what a program may leave behind."""
    (outside / "sub").mkdir(parents=True)
    (outside / "keep.txt").write_text("outside")
    (outside / "sub" / "deep.txt").write_text("outside too")
    (root / "work" / "a" / "b" / "c").mkdir(parents=True)
    (root / "work" / "a" / "b" / "c" / "f.txt").write_text("x")
    (root / "host_tools" / CALLS).mkdir(parents=True)
    (root / "host_tools" / CALLS / "0001.request.json").write_text("{}")
    (root / "work" / "to_outside").symlink_to(outside, target_is_directory=True)
    (root / "work" / "to_outside_file").symlink_to(outside / "keep.txt")
    (root / "work" / "dangling").symlink_to(root / "nowhere")
    os.mkfifo(root / "work" / "fifo")
    ro = root / "work" / "ro"
    (ro / "inner").mkdir(parents=True)
    (ro / "inner" / "f").write_text("x")
    os.chmod(ro / "inner", 0o500)
    os.chmod(ro, 0o500)
    closed = root / "work" / "closed"
    closed.mkdir()
    (closed / "f").write_text("x")
    os.chmod(closed, 0o000)


def assert_outside_intact(outside):
    assert (outside / "keep.txt").read_text() == "outside"
    assert (outside / "sub" / "deep.txt").read_text() == "outside too"


def test_reclaim_removes_a_hostile_tree_and_nothing_outside(tmp_path):
    root, outside = tmp_path / "run", tmp_path / "outside"
    build_hostile_tree(root, outside)
    res = ml("reclaim", "--run-dir", root)
    assert res.returncode == 0, res.stderr
    assert not os.path.lexists(root)
    assert_outside_intact(outside)


def test_reclaim_as_an_unprivileged_owner_opens_read_only_directories(launcher_for_anyone):
    if os.geteuid() != 0:
        pytest.skip("needs root to run reclaim as another user")
    base = Path(tempfile.mkdtemp(prefix="maf-reclaim-"))
    try:
        os.chmod(base, 0o755)
        root, outside = base / "run", base / "outside"
        build_hostile_tree(root, outside)
        for dirpath, dirnames, filenames in os.walk(base):
            for n in [dirpath] + [os.path.join(dirpath, x) for x in dirnames + filenames]:
                os.lchown(n, 65534, 65534)
        os.chmod(outside, 0o755)
        res = ml("reclaim", "--run-dir", root, launcher=launcher_for_anyone, cwd="/",
                 user=65534, group=65534, extra_groups=[])
        assert res.returncode == 0, res.stderr
        assert not os.path.lexists(root)
        assert_outside_intact(outside)
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_reclaim_of_a_deeply_nested_tree(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(400):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.open("leaf", os.O_CREAT | os.O_WRONLY, dir_fd=fd)
    finally:
        os.close(fd)
    res = ml("reclaim", "--run-dir", root)
    assert res.returncode == 0, res.stderr
    assert not os.path.lexists(root)


def test_reclaim_of_an_absent_run_dir_succeeds(tmp_path):
    assert ml("reclaim", "--run-dir", tmp_path / "never").returncode == 0
    assert ml("reclaim", "--run-dir", tmp_path / "no" / "parent").returncode == 0


def test_reclaim_refuses_a_relative_path(tmp_path):
    (tmp_path / "rel").mkdir()
    res = ml("reclaim", "--run-dir", "rel", cwd=tmp_path)
    assert res.returncode == 2
    assert (tmp_path / "rel").is_dir()


def test_reclaim_refuses_a_symlink_run_dir_and_removes_nothing(tmp_path):
    target = tmp_path / "target"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "f").write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    res = ml("reclaim", "--run-dir", link)
    assert res.returncode == 2
    assert b"symlink" in res.stderr
    assert link.is_symlink()
    assert (target / "sub" / "f").read_text() == "keep"
    res = ml("reclaim", "--run-dir", str(link) + "/")
    assert res.returncode == 2
    assert (target / "sub" / "f").read_text() == "keep"


def test_reclaim_refuses_a_file_run_dir(tmp_path):
    f = tmp_path / "file"
    f.write_text("keep")
    assert ml("reclaim", "--run-dir", f).returncode == 2
    assert f.read_text() == "keep"


def test_reclaim_does_not_cross_a_bind_mount(tmp_path):
    root, src = tmp_path / "run", tmp_path / "src"
    (root / "work" / "mnt").mkdir(parents=True)
    (root / "work" / "other").mkdir()
    (root / "work" / "other" / "f").write_text("x")
    (src / "d").mkdir(parents=True)
    (src / "d" / "precious").write_text("precious")
    mnt = root / "work" / "mnt"
    m = subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True)
    if m.returncode != 0:
        pytest.skip(f"mount --bind failed: {m.stderr.decode().strip()}")
    try:
        res = ml("reclaim", "--run-dir", root)
        assert res.returncode == 1
        assert str(mnt).encode() in res.stderr
        assert b"mount point" in res.stderr
        assert (mnt / "d" / "precious").read_text() == "precious"
        assert (src / "d" / "precious").read_text() == "precious"
        assert not (root / "work" / "other").exists(), "what is not below the mount goes"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    assert (src / "d" / "precious").read_text() == "precious"
    res = ml("reclaim", "--run-dir", root)
    assert res.returncode == 0, res.stderr
    assert not os.path.lexists(root)
    assert (src / "d" / "precious").read_text() == "precious"


def test_reclaim_usage_errors():
    assert ml("reclaim").returncode == 2
    assert ml("reclaim", "--run-dir").returncode == 2
    assert ml("reclaim", "--run-dir", "/").returncode == 2
    assert ml("reclaim", "--run-dir", "/tmp/a:b").returncode == 2
    assert ml("reclaim", "--run-dir", "/tmp/x", "extra").returncode == 2



# --- reclaim --keep -----------------------------------------------------------------------

def snapshot(top):
    """Every path below top (not following symlinks) with what it is: the bytes of a file,
    the target of a symlink, "dir" or "fifo", and the mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                what = ("file", p.read_bytes())
            elif stat.S_ISDIR(st.st_mode):
                what = ("dir",)
            else:
                what = ("other",)
            out[str(p.relative_to(top))] = (what, stat.S_IMODE(st.st_mode))
    return out


def test_reclaim_keep_leaves_the_entry_and_removes_the_rest(tmp_path):
    root, outside = tmp_path / "run", tmp_path / "outside"
    build_hostile_tree(root, outside)
    (root / "work" / "result.txt").write_text("carried over")
    # Beside it: a symlink named as if it were another entry, to the kept one and to
    # outside, a nested read-only directory, a FIFO.
    (root / "host_tools").rename(root / "tools")
    (root / "host_tools").symlink_to(root / "work", target_is_directory=True)
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    ro = root / "tools" / "ro" / "inner"
    ro.mkdir(parents=True)
    (ro / "f").write_text("x")
    ro.chmod(0o500)
    ro.parent.chmod(0o500)
    os.mkfifo(root / "fifo")
    # What is kept holds read-only and closed directories of its own: not made writable.
    kept = snapshot(root / "work")
    res = ml("reclaim", "--run-dir", root, "--keep", "work")
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""
    assert sorted(os.listdir(root)) == ["work"]
    assert not (root / "work").is_symlink() and (root / "work").is_dir()
    assert snapshot(root / "work") == kept
    assert (root / "work" / "result.txt").read_text() == "carried over"
    assert_outside_intact(outside)


def test_reclaim_keep_of_an_absent_entry_empties_the_run_dir(tmp_path):
    root, outside = tmp_path / "run", tmp_path / "outside"
    build_hostile_tree(root, outside)
    res = ml("reclaim", "--run-dir", root, "--keep", "absent")
    assert res.returncode == 0, res.stderr
    assert root.is_dir() and os.listdir(root) == []
    assert_outside_intact(outside)
    # Again, on the empty directory, and with the equals form.
    res = ml("reclaim", f"--run-dir={root}", "--keep=absent")
    assert res.returncode == 0, res.stderr
    assert root.is_dir() and os.listdir(root) == []


def test_reclaim_keep_of_a_symlink_leaves_the_link_as_it_is(tmp_path):
    root, outside = tmp_path / "run", tmp_path / "outside"
    build_hostile_tree(root, outside)
    (root / "keep").symlink_to(outside, target_is_directory=True)
    res = ml("reclaim", "--run-dir", root, "--keep", "keep")
    assert res.returncode == 0, res.stderr
    assert os.listdir(root) == ["keep"]
    assert os.readlink(root / "keep") == str(outside)
    assert_outside_intact(outside)
    # A dangling one too: it is not looked at.
    os.unlink(root / "keep")
    (root / "keep").symlink_to(root / "nowhere")
    (root / "other").write_text("x")
    res = ml("reclaim", "--run-dir", root, "--keep", "keep")
    assert res.returncode == 0, res.stderr
    assert os.listdir(root) == ["keep"] and os.readlink(root / "keep") == str(root / "nowhere")


def test_reclaim_keep_leaves_the_run_dirs_own_mode(tmp_path):
    root = tmp_path / "run"
    (root / "work").mkdir(parents=True)
    (root / "gone").mkdir()
    (root / "gone" / "f").write_text("x")
    root.chmod(0o500)
    try:
        res = ml("reclaim", "--run-dir", root, "--keep", "work")
        assert res.returncode == 0, res.stderr
        assert stat.S_IMODE(os.lstat(root).st_mode) == 0o500
        assert os.listdir(root) == ["work"]
    finally:
        root.chmod(0o755)


def test_reclaim_keep_of_a_deep_tree_removes_what_it_moved_up(tmp_path):
    # Directories nested past the walk's depth are moved up to R as .maf-reclaim-N and
    # emptied from there; a kept name of that form is absent here, and must not stay.
    root = tmp_path / "run"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(200):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    res = ml("reclaim", "--run-dir", root, "--keep", ".maf-reclaim-0")
    assert res.returncode == 0, res.stderr
    assert os.listdir(root) == []


def test_reclaim_keep_of_a_mount_point_is_silent_and_other_mounts_are_named(tmp_path):
    root, src = tmp_path / "run", tmp_path / "src"
    (root / "work").mkdir(parents=True)
    (src / "d").mkdir(parents=True)
    (src / "d" / "precious").write_text("precious")
    m = subprocess.run(["mount", "--bind", str(src), str(root / "work")], capture_output=True)
    if m.returncode != 0:
        pytest.skip(f"mount --bind failed: {m.stderr.decode().strip()}")
    try:
        (root / "gone").write_text("x")
        res = ml("reclaim", "--run-dir", root, "--keep", "work")
        assert res.returncode == 0, res.stderr
        assert res.stderr == b""
        assert os.listdir(root) == ["work"]
        (root / "other" / "mnt").mkdir(parents=True)
        (root / "other" / "f").write_text("x")
        subprocess.run(["mount", "--bind", str(src), str(root / "other" / "mnt")], check=True)
        try:
            res = ml("reclaim", "--run-dir", root, "--keep", "work")
            assert res.returncode == 1
            assert str(root / "other" / "mnt").encode() in res.stderr
            assert b"mount point" in res.stderr
            assert b"was not emptied but for work" in res.stderr
            assert not (root / "other" / "f").exists(), "what is not below the mount goes"
        finally:
            subprocess.run(["umount", str(root / "other" / "mnt")], check=False)
        assert (root / "work" / "d" / "precious").read_text() == "precious"
    finally:
        subprocess.run(["umount", str(root / "work")], check=False)
    assert (src / "d" / "precious").read_text() == "precious"


@pytest.mark.parametrize("name, why", [
    ("", b"empty"), (".", b"'.' or '..'"), ("..", b"'.' or '..'"), ("a/b", b"'/'"),
    ("/", b"'/'"), ("work/", b"'/'"), ("x" * 256, b"longer than 255 bytes")])
def test_reclaim_keep_refuses_a_bad_name_and_removes_nothing(tmp_path, name, why):
    root = tmp_path / "run"
    (root / "work" / "a" / "b").mkdir(parents=True)
    (root / "f").write_text("x")
    before = snapshot(root)
    res = ml("reclaim", "--run-dir", root, "--keep", name)
    assert res.returncode == 2
    assert why in res.stderr, res.stderr
    assert len(res.stderr.decode().strip().splitlines()) == 1, res.stderr
    assert snapshot(root) == before


def test_reclaim_keep_usage_errors(tmp_path):
    root = tmp_path / "run"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    res = ml("reclaim", "--run-dir", root, "--keep", "a", "--keep", "b")
    assert res.returncode == 2 and b"once" in res.stderr
    assert ml("reclaim", "--run-dir", root, "--keep").returncode == 2
    assert sorted(os.listdir(root)) == ["a", "b"]
    # The longest name a directory entry may have is kept.
    long = "y" * 255
    (root / long).mkdir()
    res = ml("reclaim", "--run-dir", root, "--keep", long)
    assert res.returncode == 0, res.stderr
    assert os.listdir(root) == [long]
    res = ml("reclaim", "--help")
    assert b"--keep NAME" in res.stdout

# --- wait ---------------------------------------------------------------------------------

def parse_event(out):
    """Splits wait's output into the JSON head and the bytes after it."""
    head, sep, rest = out.partition(b"\n")
    assert sep, out
    return json.loads(head), rest


def calls_dir(run_dir):
    d = run_dir / HOST_TOOLS / CALLS
    d.mkdir(parents=True, exist_ok=True)
    return d


def inotify_watches(pid):
    """How many inotify watches process pid holds, from /proc/PID/fdinfo."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    n += sum(1 for line in f if line.startswith("inotify wd:"))
            except OSError:
                pass
    except OSError:
        pass
    return n


def start_wait(run_dir, *args):
    """Starts wait and returns once both its watches are in place."""
    p = subprocess.Popen([str(LAUNCHER), "wait", "--run-dir", str(run_dir), *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    until(lambda: inotify_watches(p.pid) >= 2 or p.poll() is not None, "wait's watches")
    assert p.poll() is None, p.communicate()
    return p


def publish(d, name, data):
    (d / (name + ".part")).write_bytes(data)
    os.rename(d / (name + ".part"), d / name)


def test_wait_returns_a_request_published_after_it_started(run_dir):
    calls = calls_dir(run_dir)
    body = b'{"id": "0003", "name": "lookup", "arguments": {"q": "\\u00e9\\n"}}'
    # Earlier ids and a .part of ours must not end the wait.
    publish(calls, "0002.request.json", b'{"id": "0002"}')
    p = start_wait(run_dir, "--next", 3, "--timeout-ms", 60000)
    # Written in two steps under .part, as a torn write would be, then renamed.
    with open(calls / "0003.request.json.part", "wb") as f:
        f.write(body[:10])
        f.flush()
        f.write(body[10:])
    os.rename(calls / "0003.request.json.part", calls / "0003.request.json")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    head, rest = parse_event(out)
    assert head == {"event": "request", "id": 3, "size": len(body)}
    assert rest == body


def test_wait_returns_a_request_already_there(run_dir):
    calls = calls_dir(run_dir)
    publish(calls, "0001.request.json", b"[1]")
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    assert res.returncode == 0, res.stderr
    assert parse_event(res.stdout) == ({"event": "request", "id": 1, "size": 3}, b"[1]")


def test_wait_returns_the_exit_when_the_run_ends(run_dir):
    start_run(run_dir, "while [ ! -e go ]; do sleep 0.05; done; exit 7")
    p = start_wait(run_dir, "--next", 1, "--timeout-ms", 60000)
    (run_dir / "work" / "go").write_text("")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert parse_event(out) == ({"event": "exit", "size": 1}, b"7")


def test_wait_times_out(run_dir):
    calls = calls_dir(run_dir)
    publish(calls, "0002.request.json", b"{}")
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 50)
    assert res.returncode == 0, res.stderr
    assert res.stdout == b'{"event":"timeout"}\n'


def test_wait_prefers_a_request_over_the_exit(run_dir):
    calls = calls_dir(run_dir)
    (run_dir / HOST_TOOLS / EXIT_MARKER).write_text("0")
    publish(calls, "0004.request.json", b'{"id": "0004"}')
    res = ml("wait", "--run-dir", run_dir, "--next", 4, "--timeout-ms", 0)
    assert parse_event(res.stdout) == ({"event": "request", "id": 4, "size": 14},
                                       b'{"id": "0004"}')
    res = ml("wait", "--run-dir", run_dir, "--next", 5, "--timeout-ms", 0)
    assert parse_event(res.stdout) == ({"event": "exit", "size": 1}, b"0")


def test_wait_reports_an_oversized_request_without_reading_it(run_dir):
    calls = calls_dir(run_dir)
    publish(calls, "0001.request.json", b"A" * 5000)
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0, "--max-bytes", 4999)
    assert res.returncode == 0, res.stderr
    assert parse_event(res.stdout) == (
        {"event": "request", "id": 1, "size": 5000, "oversized": True}, b"")
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0, "--max-bytes=5000")
    assert parse_event(res.stdout) == ({"event": "request", "id": 1, "size": 5000}, b"A" * 5000)


def test_wait_default_cap_is_one_mebibyte(run_dir):
    calls = calls_dir(run_dir)
    publish(calls, "0001.request.json", b"B" * ((1 << 20) + 1))
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    head, rest = parse_event(res.stdout)
    assert head.get("oversized") is True and rest == b""


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "dangling"])
def test_wait_reports_a_request_that_is_not_a_regular_file(run_dir, tmp_path, kind):
    calls = calls_dir(run_dir)
    secret = tmp_path / "secret"
    secret.write_text("SECRET")
    name = calls / "0002.request.json"
    if kind == "symlink":
        name.symlink_to(secret)
    elif kind == "dangling":
        name.symlink_to(tmp_path / "nowhere")
    elif kind == "fifo":
        os.mkfifo(name)
    else:
        name.mkdir()
    # A FIFO without a writer would block a reader that opened it: the subprocess timeout
    # is only a guard against such a hang.
    res = ml("wait", "--run-dir", run_dir, "--next", 2, "--timeout-ms", 60000, timeout=30)
    assert res.returncode == 0, res.stderr
    assert parse_event(res.stdout) == (
        {"event": "request", "id": 2, "size": 0, "error": "not a regular file"}, b"")
    assert b"SECRET" not in res.stdout


def test_wait_reports_an_exit_marker_that_is_not_a_regular_file(run_dir, tmp_path):
    calls_dir(run_dir)
    (tmp_path / "code").write_text("0")
    (run_dir / HOST_TOOLS / EXIT_MARKER).symlink_to(tmp_path / "code")
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    assert parse_event(res.stdout) == (
        {"event": "exit", "size": 0, "error": "not a regular file"}, b"")


def test_wait_reports_an_oversized_exit_marker(run_dir):
    calls_dir(run_dir)
    (run_dir / HOST_TOOLS / EXIT_MARKER).write_text("0" * 33)
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    assert parse_event(res.stdout) == ({"event": "exit", "size": 33, "oversized": True}, b"")


def test_wait_creates_the_calls_directory(run_dir):
    (run_dir / HOST_TOOLS).mkdir()
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    assert res.stdout == b'{"event":"timeout"}\n'
    assert (run_dir / HOST_TOOLS / CALLS).is_dir()


def test_wait_refuses_a_symlinked_calls_directory(run_dir, tmp_path):
    (run_dir / HOST_TOOLS).mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "0001.request.json").write_text("{}")
    (run_dir / HOST_TOOLS / CALLS).symlink_to(elsewhere, target_is_directory=True)
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 0)
    assert res.returncode == 125
    assert res.stdout == b""


@pytest.mark.parametrize("args", [
    [],
    ["--run-dir", "/tmp/x", "--next", "1"],
    ["--run-dir", "/tmp/x", "--timeout-ms", "1"],
    ["--next", "1", "--timeout-ms", "1"],
    ["--run-dir", "rel", "--next", "1", "--timeout-ms", "1"],
    ["--run-dir", "/tmp/x", "--next", "0", "--timeout-ms", "1"],
    ["--run-dir", "/tmp/x", "--next", "1000000", "--timeout-ms", "1"],
    ["--run-dir", "/tmp/x", "--next", "1", "--timeout-ms", "-1"],
    ["--run-dir", "/tmp/x", "--next", "1", "--timeout-ms", "1", "--max-bytes", "x"],
])
def test_wait_usage_errors(args):
    res = ml("wait", *args)
    assert res.returncode == 2
    assert res.stdout == b""
    assert len(res.stderr.decode().strip().splitlines()) == 1, res.stderr


def test_help_of_each_command():
    for cmd in ("stop", "reclaim", "wait"):
        res = ml(cmd, "--help")
        assert res.returncode == 0
        assert res.stdout.startswith(f"usage: maf-launch {cmd} ".encode())
        assert b"Exit codes" in res.stdout


def test_wait_without_inotify_still_answers(run_dir):
    # Six descriptors: 0-2 and the three directories, none left for an inotify instance (as
    # when the per-user instance limit is spent).
    calls_dir(run_dir)
    # (LeakSanitizer, in `make asan`, cannot work with so few descriptors.)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    # (Past the first 100 ms, which it spends looking every millisecond.)
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 300, env=env,
             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (6, 6)))
    assert res.returncode == 0, res.stderr
    assert res.stdout == b'{"event":"timeout"}\n'
    assert b"cannot use inotify" in res.stderr


def test_wait_for_a_file_already_there_makes_no_watch(run_dir):
    # The first looks go before any inotify watch (a process that made one takes longer to
    # end). Seven descriptors: 0-2, the three directories and the request's, none left for
    # an inotify instance: made first, it would take the request's.
    calls = calls_dir(run_dir)
    publish(calls, "0001.request.json", b"[1]")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    res = ml("wait", "--run-dir", run_dir, "--next", 1, "--timeout-ms", 60000, env=env,
             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (7, 7)))
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""
    assert parse_event(res.stdout) == ({"event": "request", "id": 1, "size": 3}, b"[1]")


def test_wait_for_a_request_that_comes_soon_makes_no_watch(run_dir):
    # A request published within the first 100 ms is found by a look, with no watch made:
    # no descriptor is left for one, and the wait still answers without a word on stderr.
    calls = calls_dir(run_dir)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.Popen([str(LAUNCHER), "wait", "--run-dir", str(run_dir), "--next", "1",
                          "--timeout-ms", "60000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (7, 7)))
    time.sleep(0.005)
    publish(calls, "0001.request.json", b"[1]")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and err == b"", err
    assert parse_event(out) == ({"event": "request", "id": 1, "size": 3}, b"[1]")
