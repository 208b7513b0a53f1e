"""`maf-launch run`'s failures: the exit code (tini/env conventions), one clear line on
stderr, and nothing left behind that claims a success."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, exit_record, launch, pid_alive, wait_exit

OPTIONS = ["--run-dir", "--timeout", "--grace", "--max-output-bytes", "--egress", "--seccomp",
           "--landlock", "--help"]


def maf(*args, **kw):
    return subprocess.run([str(LAUNCHER), *args], capture_output=True, timeout=30, **kw)


def one_line(stderr):
    """stderr is exactly one non-empty line naming the launcher."""
    text = stderr.decode()
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    assert text.startswith("maf-launch"), repr(text)
    assert len(text.strip()) > len("maf-launch run: "), repr(text)
    return text


def assert_no_success(run_dir):
    """Nothing under R says the program started."""
    ht = run_dir / HOST_TOOLS
    assert not (ht / "program_pid").exists()
    assert not (ht / "program_session").exists()
    assert not any(p.name.endswith(".part") for p in ht.iterdir())


# --- Launch failures: 126 and 127, recorded ------------------------------------------------

def launch_failure(run_dir, program, code, line_pattern):
    proc = launch(run_dir, program)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stdout == b"", "a failed launch prints no launch line and no session line"
    text = one_line(proc.stderr)
    assert re.search(line_pattern, text), text
    ht = run_dir / HOST_TOOLS
    # The failure is recorded synchronously: the markers exist once the launcher returns.
    assert (ht / "program_exit_code").read_text() == str(code)
    rec = exit_record(run_dir)
    assert rec["status"] == "launch_failed"
    assert rec["exit_code"] == code
    assert rec["signal"] == 0
    assert rec["error"], rec
    assert_no_success(run_dir)
    return rec


def test_missing_program_by_path_is_127(run_dir, tmp_path):
    launch_failure(run_dir, str(tmp_path / "no-such-program"), 127, r"not found")


def test_missing_program_on_path_is_127(run_dir):
    launch_failure(run_dir, "maf-no-such-program-anywhere", 127, r"not found")


def test_non_executable_file_is_126(run_dir):
    # In R: below pytest's private directory, R is all of it the program sees.
    (run_dir / HOST_TOOLS).mkdir(exist_ok=True)
    f = run_dir / HOST_TOOLS / "not-executable"
    f.write_text("#!/bin/sh\necho should not run\n")
    f.chmod(0o644)
    launch_failure(run_dir, str(f), 126, r"cannot execute")
    assert b"should not run" not in (run_dir / HOST_TOOLS / "program_output.txt").read_bytes()


def test_directory_is_126(run_dir):
    (run_dir / HOST_TOOLS).mkdir(exist_ok=True)
    d = run_dir / HOST_TOOLS / "a-directory"
    d.mkdir()
    launch_failure(run_dir, str(d), 126, r"cannot execute")


def run_processes(run_dir):
    """Live processes whose command line names run_dir: the launcher, its supervisor (a fork
    of it, same command line) or the program."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if str(run_dir).encode() + b"\0" in cmdline and pid_alive(int(pid)):
            found.append((int(pid), cmdline))
    return found


def test_failed_launch_does_not_leave_a_supervisor(run_dir, tmp_path):
    launch_failure(run_dir, str(tmp_path / "nothing"), 127, r"not found")
    # The supervisor reports, then exits: it may take a moment to go, never forever.
    deadline = time.monotonic() + 10
    while run_processes(run_dir) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run_processes(run_dir) == []


def test_successful_launch_is_seen_by_the_same_check(run_dir, tmp_path):
    # The check above can fail: while a program runs, its supervisor is found by it.
    proc = launch(run_dir, "sleep", "1000", opts=["--timeout", "60"])
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.decode().splitlines()[0])
    try:
        assert info["supervisor_pid"] in [p for p, _ in run_processes(run_dir)]
    finally:
        os.kill(info["pid"], 9)
        wait_exit(run_dir)


# --- Usage errors: 2, and the run directory untouched ---------------------------------------

def usage_error(args, must_mention=None):
    proc = maf("run", *args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == b""
    text = one_line(proc.stderr)
    if must_mention:
        assert must_mention in text, text
    return text


def test_unknown_flag(run_dir):
    usage_error(["--run-dir", str(run_dir), "--frobnicate", "--", "true"], "--frobnicate")
    assert list(run_dir.iterdir()) == []


def test_missing_run_dir():
    usage_error(["--", "true"], "--run-dir")


def test_run_dir_without_value():
    usage_error(["--run-dir"], "--run-dir")


def test_relative_run_dir(run_dir):
    usage_error(["--run-dir", "relative/run", "--", "true"], "relative/run")


def test_run_dir_with_dot_dot(run_dir):
    usage_error(["--run-dir", f"{run_dir}/../run", "--", "true"])
    assert list(run_dir.iterdir()) == []


def test_run_dir_with_a_colon(tmp_path):
    d = tmp_path / "a:b"
    d.mkdir()
    usage_error(["--run-dir", str(d), "--", "true"])
    assert list(d.iterdir()) == []


def test_nonexistent_run_dir(tmp_path):
    missing = tmp_path / "missing"
    usage_error(["--run-dir", str(missing), "--", "true"], str(missing))
    assert not missing.exists()


def test_run_dir_that_is_a_symlink(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    usage_error(["--run-dir", str(link), "--", "true"], "symlink")
    assert list(target.iterdir()) == [], "nothing may be created through the symlink"


def test_run_dir_that_is_a_regular_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    usage_error(["--run-dir", str(f), "--", "true"], "not a directory")
    assert f.read_text() == "x"


def test_missing_program(run_dir):
    usage_error(["--run-dir", str(run_dir)], "PROGRAM")
    usage_error(["--run-dir", str(run_dir), "--"], "PROGRAM")
    assert list(run_dir.iterdir()) == []


@pytest.mark.parametrize("value", ["abc", "0", "-1", "", "1s", "nan", "inf", "1e400"])
def test_bad_timeout(run_dir, value):
    usage_error(["--run-dir", str(run_dir), "--timeout", value, "--", "true"], "--timeout")
    assert list(run_dir.iterdir()) == []


@pytest.mark.parametrize("args", [
    ["--grace", "x"], ["--max-output-bytes", "-5"], ["--max-output-bytes", "1k"],
    ["--egress", "sideways"], ["--seccomp", "strict"], ["--landlock", "on"],
])
def test_bad_option_values(run_dir, args):
    usage_error(["--run-dir", str(run_dir), *args, "--", "true"], args[0])
    assert list(run_dir.iterdir()) == []


def test_unknown_command():
    proc = maf("frobnicate")
    assert proc.returncode == 2
    one_line(proc.stderr)


def test_no_command():
    proc = maf()
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"usage" in proc.stderr


# --- The run directory's own parts: refused, never followed --------------------------------

@pytest.mark.parametrize("part", ["work", HOST_TOOLS])
def test_symlinked_part_of_the_run_dir_is_refused(run_dir, tmp_path, part):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / part).symlink_to(elsewhere)
    proc = launch(run_dir, "true")
    assert proc.returncode == 125, (proc.returncode, proc.stderr)
    assert proc.stdout == b""
    assert part in one_line(proc.stderr)
    assert list(elsewhere.iterdir()) == [], "nothing may be written through the symlink"


def test_a_file_at_work_is_refused(run_dir):
    (run_dir / "work").write_text("not a directory")
    (run_dir / HOST_TOOLS).mkdir()
    proc = launch(run_dir, "true")
    assert proc.returncode == 125, (proc.returncode, proc.stderr)
    assert proc.stdout == b""
    assert one_line(proc.stderr) == (f"maf-launch run: {run_dir}/work is not a directory (a "
                                     f"symlink or a file)\n")
    assert_no_success(run_dir)
    assert not (run_dir / HOST_TOOLS / "program_output.txt").exists()


def test_work_that_cannot_be_made_is_the_launchs_failure(tmp_path):
    # The launcher makes R/work once the supervisor has started; its failure is still one
    # line naming the cause, exit 125, and nothing made after it.
    run_dir = tmp_path / "ro"
    run_dir.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(run_dir)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (run_dir / HOST_TOOLS).mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(run_dir)], check=True)
        proc = launch(run_dir, "true")
        assert proc.returncode == 125, (proc.returncode, proc.stderr)
        assert proc.stdout == b""
        assert one_line(proc.stderr) == (f"maf-launch run: cannot create {run_dir}/work: "
                                         f"Read-only file system\n")
        assert list(run_dir.iterdir()) == [run_dir / HOST_TOOLS]
        assert list((run_dir / HOST_TOOLS).iterdir()) == []
    finally:
        subprocess.run(["umount", str(run_dir)], check=True)


def test_symlinked_output_file_is_refused(run_dir, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (run_dir / HOST_TOOLS).mkdir()
    (run_dir / HOST_TOOLS / "program_output.txt").symlink_to(victim)
    proc = launch(run_dir, "true")
    assert proc.returncode == 125, (proc.returncode, proc.stderr)
    assert proc.stdout == b""
    one_line(proc.stderr)
    assert victim.read_text() == "precious"
    assert_no_success(run_dir)



def test_planted_session_staging_symlink_is_not_followed(run_dir, tmp_path):
    """The launcher makes program_session.part while the supervisor starts the program; a
    symlink planted under that name (an earlier program in the same R) is refused there
    and by the supervisor's own attempt, so nothing is written through it."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    (ht / "program_session.part").symlink_to(victim)
    proc = launch(run_dir, "true")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.splitlines()[0])
    assert wait_exit(run_dir) == "0"
    assert victim.read_text() == "precious"
    assert (ht / "program_pid").read_text() == str(info["pid"])



def test_planted_fifo_output_file_is_refused(run_dir):
    """A FIFO left under the output file's name (an earlier program in the same R) is refused
    at once: opening it for writing would wait for a reader forever. The harness's timeout
    is only a safety net."""
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    os.mkfifo(ht / "program_output.txt")
    proc = launch(run_dir, "true")
    assert proc.returncode == 125, (proc.returncode, proc.stderr)
    assert "program_output.txt" in one_line(proc.stderr)
    assert_no_success(run_dir)


def test_planted_fifo_marker_staging_does_not_hang_the_run(run_dir):
    """FIFOs left under the markers' staging names cost the markers they stand for, never the
    run: the launch returns, the program runs, the supervisor ends."""
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    os.mkfifo(ht / "program_session.part")
    os.mkfifo(ht / "program_exit.json.part")
    proc = launch(run_dir, "true")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.splitlines()[0])
    assert (ht / "program_pid").read_text() == str(info["pid"])
    assert wait_exit(run_dir) == "0"
    deadline = time.monotonic() + 30
    while pid_alive(info["supervisor_pid"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not pid_alive(info["supervisor_pid"])

def test_session_marker_is_the_staged_file_renamed(run_dir):
    """The pid markers of a launch: one inode under both names, holding the pid, and no
    staging file left behind (the launcher's, renamed by the supervisor)."""
    proc = launch(run_dir, "true")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.splitlines()[0])
    ht = run_dir / HOST_TOOLS
    session, pid = ht / "program_session", ht / "program_pid"
    assert session.read_text() == pid.read_text() == str(info["pid"])
    assert session.stat().st_ino == pid.stat().st_ino
    assert wait_exit(run_dir) == "0"
    assert not any(p.name.endswith(".part") for p in ht.iterdir())

def test_options_with_equals(run_dir):
    proc = maf("run", f"--run-dir={run_dir}", "--timeout=30", "--max-output-bytes=10", "--",
               "echo", "0123456789abc")
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "0"
    assert (run_dir / HOST_TOOLS / "program_output.txt").read_text() == "0123456789"
    assert exit_record(run_dir)["output_truncated"] is True


# --- Help and version ---------------------------------------------------------------------

def test_run_help_mentions_every_option():
    proc = maf("run", "--help")
    assert proc.returncode == 0
    assert proc.stderr == b""
    text = proc.stdout.decode()
    for opt in OPTIONS:
        assert opt in text, f"run --help does not mention {opt}"
    for code in ("2", "125", "126", "127"):
        assert re.search(rf"\b{code}\b", text), f"run --help does not explain exit code {code}"


def test_top_level_help():
    proc = maf("--help")
    assert proc.returncode == 0
    text = proc.stdout.decode()
    assert "run" in text and "--version" in text and "--help" in text


def test_version():
    proc = maf("--version")
    assert proc.returncode == 0
    assert proc.stderr == b""
    # The project's one version (host/include/mafhost.h), and the wire protocol's.
    header = (Path(__file__).resolve().parents[2] / "host/include/mafhost.h").read_text()
    version = re.search(r'^#define MAFH_VERSION "(.*)"$', header, re.M).group(1)
    assert re.fullmatch(rb"maf-launch (\S+) \(protocol \d+\.\d+\.\d+\)\n",
                        proc.stdout), proc.stdout
    assert proc.stdout.split()[1].decode() == version
