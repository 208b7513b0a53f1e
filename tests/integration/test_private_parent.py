"""A run directory below a directory the run's own uid cannot pass (pytest's tmp_path,
mkdtemp(), /root): a root launcher covers it in the program's mount namespace (guest/cover.c),
so the program runs at the same paths and sees nothing else of the private directory, while
the host's side reads and writes through its own paths unaware. Without CAP_SYS_ADMIN the
launch still fails with exit 125 and says what to do."""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (HOST_TOOLS, exit_record, host_run, host_tool, launch, launch_info,
                      output_lines, wait_exit)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cover is a root launcher's")

PYTHON = "/usr/bin/python3"

# What the program reports of its world, as JSON on its first line.
LOOK = r"""
import json, os, sys
def listing(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return type(e).__name__
def reads(p):
    try:
        return open(p).read()
    except OSError as e:
        return type(e).__name__
private, run = sys.argv[1], sys.argv[2]
print(json.dumps({
    "uid": os.getuid(), "cwd": os.getcwd(), "path0": sys.path[0],
    "private": listing(private), "between": listing(os.path.dirname(run)),
    "up": listing("../.."), "sibling": reads(os.path.join(private, "sibling.txt")),
    "inner_sibling": reads(os.path.join(os.path.dirname(run), "beside.txt")),
    "own": reads(os.path.join(run, "work", "input.txt")),
}))
open("made.txt", "w").write("by the program")
"""


@pytest.fixture
def private():
    """A 0700 directory of root's, with a file the run must not see, and a 0755 directory
    inside it (which the program could list, could it get there) holding another."""
    d = Path(tempfile.mkdtemp(prefix="maf-private-"))
    assert (d.stat().st_mode & 0o777) == 0o700
    (d / "sibling.txt").write_text("root's secret")
    inner = d / "inner"
    inner.mkdir(mode=0o755)
    inner.chmod(0o755)
    (inner / "beside.txt").write_text("another run's")
    (inner / "beside.txt").chmod(0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split(" ", 4)[4] for line in f)


def test_the_program_runs_below_a_private_parent_and_sees_only_its_run(private):
    run = private / "inner" / "run"
    (run / HOST_TOOLS).mkdir(parents=True)
    (run / "work").mkdir()
    (run / "work" / "input.txt").write_text("the host's input")
    program = run / HOST_TOOLS / "program.py"
    program.write_text(LOOK)
    before = mounts()

    proc = launch(run, PYTHON, str(program), str(private), str(run))

    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    assert info["identity"] == "own"
    assert wait_exit(run) == "0"
    seen = json.loads((run / HOST_TOOLS / "program_output.txt").read_text().splitlines()[0])
    assert seen["uid"] == info["uid"] != 0
    assert seen["cwd"] == str(run / "work")
    assert seen["path0"] == str(run / HOST_TOOLS)
    assert seen["own"] == "the host's input"
    # Nothing of the private directory but the way to the run: not listable, and what else
    # is there (even in a directory the uid could list) is not there at all.
    assert seen["private"] == "PermissionError"
    assert seen["between"] == "PermissionError"
    assert seen["up"] == "PermissionError"
    assert seen["sibling"] == "FileNotFoundError"
    assert seen["inner_sibling"] == "FileNotFoundError"
    # The host's side, through its own paths: the program's file, the record, nothing
    # mounted in the host's namespace.
    assert (run / "work" / "made.txt").read_text() == "by the program"
    assert exit_record(run)["status"] == "exited"
    assert mounts() == before


def test_host_tools_are_served_below_a_private_tmpdir(private, host):
    """maf-host makes its run directory under TMPDIR: a private one, as under pytest."""
    env = dict(os.environ, TMPDIR=str(private))
    calls = [["add", {"numbers": [i, 1]}] for i in range(5)]
    proc, report = host_run("calls.py", "--tool", "add=" + host_tool("tool_sum.py"),
                            args=[json.dumps(calls)], env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert [line["value"] for line in output_lines(report)] == [1, 2, 3, 4, 5], report
    assert sorted(p.name for p in private.iterdir()) == ["inner", "sibling.txt"]


def test_without_cap_sys_admin_the_launch_fails_and_says_what_to_do(private):
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("needs setpriv (util-linux)")
    run = private / "inner" / "run"
    (run / HOST_TOOLS).mkdir(parents=True)
    program = run / HOST_TOOLS / "program.py"
    program.write_text("print('ran')\n")

    proc = subprocess.run([setpriv, "--bounding-set=-sys_admin", "--", *_launch_argv(run, program)],
                          capture_output=True, timeout=30)

    assert proc.returncode == 125
    err = proc.stderr.decode()
    assert f"the run directory's parent {private} does not let the program's uid" in err
    assert "(mode 0700)" in err and "CAP_SYS_ADMIN" in err
    assert "make R where any user may pass, such as under /tmp, or give --user" in err


def test_a_parent_the_uid_may_pass_gets_no_namespace(tmp_path):
    """Below /tmp nothing is covered: the program shares the launcher's mount namespace."""
    run = Path(tempfile.mkdtemp(prefix="maf-open-")) / "run"
    try:
        run.parent.chmod(0o755)
        (run / HOST_TOOLS).mkdir(parents=True)
        program = run / HOST_TOOLS / "program.py"
        program.write_text("import os\nprint(os.readlink('/proc/self/ns/mnt'))\n")
        proc = launch(run, PYTHON, str(program))
        assert proc.returncode == 0, proc.stderr
        assert wait_exit(run) == "0"
        seen = (run / HOST_TOOLS / "program_output.txt").read_text().strip()
        assert seen == os.readlink("/proc/self/ns/mnt")
    finally:
        shutil.rmtree(run.parent, ignore_errors=True)


def _launch_argv(run, program):
    from conftest import LAUNCHER

    return [str(LAUNCHER), "run", "--run-dir", str(run), "--", PYTHON, str(program)]
