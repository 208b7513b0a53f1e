"""`maf-launch run` as a drop-in for upstream's `sh run_program.sh`: the same files in
R/host_tools, name for name and byte for byte, for the same programs, and the same
environment rules for Python.

Both launchers run the same program.py in the same run directory R (one after the other, R
emptied in between), so even output that names R must match byte for byte."""
import json
import os
import re
import shutil
import signal
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, exit_record, launch, launch_info, run_reference, \
    wait_exit

SESSION_LINE = "maf-host-tools: session"
# Files only we write; everything else must match upstream's set exactly.
ADDITIVE = {"program_exit.json"}
# Made by the launcher for the program before it starts: the calls directory (so that a
# program under an identity of its own may add requests to it) and the private temporary
# directory R/tmp.
ADDITIVE_DIRS = {f"{HOST_TOOLS}/host_tool_calls", "tmp"}
PID_MARKERS = {"program_pid", "program_session"}

EXIT_0 = "print('hello')\n"
EXIT_7 = "import sys\nprint('about to exit 7')\nsys.exit(7)\n"
SELF_KILL = ("import os, signal\nprint('about to die', flush=True)\n"
             "os.kill(os.getpid(), signal.SIGKILL)\n")
BOTH_STREAMS = (
    "import sys\n"
    "for i in range(50):\n"
    "    print(f'out {i}')\n"
    "    print(f'err {i}', file=sys.stderr)\n"
    "sys.stdout.write('no newline at the end')\n"
)
# Reports what the environment rules gave the program (PYTHONUNBUFFERED makes the order of the
# writes the order in the file).
ENV_REPORT = (
    "import os, sys\n"
    "for k in ('PYTHONPATH', 'PYTHONUNBUFFERED', 'PYTHONNOUSERSITE'):\n"
    "    print(k + '=' + repr(os.environ.get(k)))\n"
    "print('cwd=' + os.getcwd())\n"
    "print('nousersite=' + str(sys.flags.no_user_site))\n"
    "print('path0=' + sys.path[1] if len(sys.path) > 1 else 'path0=?')\n"
    "sys.stderr.write('stderr is unbuffered too\\n')\n"
)


def snapshot(run_dir):
    """{relative name: bytes} for every file under R (directories as None), markers included;
    waits for the exit marker first."""
    wait_exit(run_dir)
    out = {}
    for p in sorted(Path(run_dir).rglob("*")):
        rel = str(p.relative_to(run_dir))
        out[rel] = None if p.is_dir() else p.read_bytes()
    return out


def run_both(run_dir, program, env=None):
    """Runs program.py under the reference, then under maf-launch, in the same R. Returns
    (reference CompletedProcess, its files, ours CompletedProcess, our files, our exit
    record)."""
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    (ht / "program.py").write_text(program)
    ref = run_reference(run_dir, env=env)
    assert ref.returncode == 0, ref.stderr
    ref_files = snapshot(run_dir)

    shutil.rmtree(run_dir)
    run_dir.mkdir()
    ht.mkdir()
    (ht / "program.py").write_text(program)
    # The host uploads the same files either way; the launcher simply does not need this one.
    (ht / "run_program.sh").write_bytes(ref_files[f"{HOST_TOOLS}/run_program.sh"])
    ours = launch(run_dir, "python3", str(ht / "program.py"), env=env)
    assert ours.returncode == 0, ours.stderr
    our_files = snapshot(run_dir)
    return ref, ref_files, ours, our_files, exit_record(run_dir)


def assert_same_files(ref_files, our_files):
    ours_extra = {k for k in our_files if k not in ref_files}
    assert ours_extra == {f"{HOST_TOOLS}/{n}" for n in ADDITIVE} | ADDITIVE_DIRS, ours_extra
    missing = {k for k in ref_files if k not in our_files}
    assert not missing, f"upstream writes {missing}, we do not"
    assert not any(k.endswith(".part") for k in our_files), our_files.keys()
    for name, data in ref_files.items():
        if Path(name).name in PID_MARKERS:
            # Pids differ by nature; the format must not: decimal, no newline.
            assert re.fullmatch(rb"[1-9][0-9]*", data), (name, data)
            assert re.fullmatch(rb"[1-9][0-9]*", our_files[name]), (name, our_files[name])
        else:
            assert our_files[name] == data, f"{name}: upstream {data!r}, ours {our_files[name]!r}"


def assert_session_line(ref, ours):
    # Upstream prints exactly the one line; we print our JSON line first, then the same line.
    assert ref.stdout == (SESSION_LINE + "\n").encode()
    lines = ours.stdout.decode().split("\n")
    assert lines[-1] == "", "stdout must end with a newline"
    assert lines[-2] == SESSION_LINE
    assert lines.count(SESSION_LINE) == 1
    info = launch_info(ours)
    assert info["pid"] == info["session"]
    assert ours.stderr == b""


@pytest.mark.parametrize("program,code,status,sig,output", [
    (EXIT_0, 0, "exited", 0, b"hello\n"),
    (EXIT_7, 7, "exited", 0, b"about to exit 7\n"),
    (SELF_KILL, 128 + signal.SIGKILL, "signaled", signal.SIGKILL, b"about to die\n"),
], ids=["exit0", "exit7", "sigkill"])
def test_same_files_as_reference(run_dir, program, code, status, sig, output):
    ref, ref_files, ours, our_files, rec = run_both(run_dir, program)
    assert_same_files(ref_files, our_files)
    assert_session_line(ref, ours)
    # Pin the shared values too, so a reference and a launcher wrong the same way still fail.
    assert our_files[f"{HOST_TOOLS}/program_exit_code"] == str(code).encode()
    assert our_files[f"{HOST_TOOLS}/program_output.txt"] == output
    assert our_files["work"] is None
    assert rec["status"] == status
    assert rec["exit_code"] == code
    assert rec["signal"] == sig
    assert rec["output_bytes"] == len(output)
    assert rec["output_truncated"] is False
    info = launch_info(ours)
    assert our_files[f"{HOST_TOOLS}/program_pid"] == str(info["pid"]).encode()
    assert our_files[f"{HOST_TOOLS}/program_session"] == str(info["session"]).encode()


def test_both_streams_interleaved(run_dir):
    ref, ref_files, ours, our_files, rec = run_both(run_dir, BOTH_STREAMS)
    assert_same_files(ref_files, our_files)
    assert_session_line(ref, ours)
    expected = "".join(f"out {i}\nerr {i}\n" for i in range(50)) + "no newline at the end"
    assert our_files[f"{HOST_TOOLS}/program_output.txt"] == expected.encode()
    assert rec["status"] == "exited" and rec["exit_code"] == 0
    assert rec["output_bytes"] == len(expected)


@pytest.mark.parametrize("name", ["run", "run dir with spaces, 'quotes' and *?[glob]"],
                         ids=["plain", "odd-characters"])
def test_python_environment(tmp_path, name):
    run_dir = tmp_path / name
    run_dir.mkdir()
    r = str(run_dir)
    inherited = [
        "relative/dir",          # dropped: not absolute
        "/usr/lib/kept",         # kept
        "",                      # dropped: empty
        "/a/./b",                # dropped: /./
        "/a//b",                 # dropped: //
        "/a/../b",               # dropped: /../
        "/a/b/.",                # dropped: trailing /.
        "/a/b/..",               # dropped: trailing /..
        f"{r}/inside",           # dropped: inside R
        r,                       # dropped: R itself
        f"{r}/",                 # dropped: R itself, with a slash
        "/opt/kept2/",           # kept: a trailing slash is canonical enough
        f"{r}-sibling",          # kept: outside R, only a common prefix
        "./rel",                 # dropped
        "/",                     # kept
        "//x",                   # dropped: //
        "/...",                  # kept: not a dot component
        "/a/.hidden",            # kept
        "/a/..b",                # kept
    ]
    env = dict(os.environ, PYTHONPATH=":".join(inherited), PYTHONUNBUFFERED="0",
               PYTHONNOUSERSITE="")
    ref, ref_files, ours, our_files, rec = run_both(run_dir, ENV_REPORT, env=env)
    assert_same_files(ref_files, our_files)
    assert_session_line(ref, ours)
    pp = ":".join([f"{r}/{HOST_TOOLS}", "/usr/lib/kept", "/opt/kept2/", f"{r}-sibling", "/",
                   "/...", "/a/.hidden", "/a/..b"])
    text = our_files[f"{HOST_TOOLS}/program_output.txt"].decode()
    assert f"PYTHONPATH={pp!r}\n" in text
    assert "PYTHONUNBUFFERED='1'\n" in text
    assert "PYTHONNOUSERSITE='1'\n" in text
    assert f"cwd={r}/work\n" in text
    assert "nousersite=1\n" in text
    assert f"path0={r}/{HOST_TOOLS}\n" in text
    assert text.endswith("stderr is unbuffered too\n")


@pytest.mark.parametrize("inherited", [None, "", ":::"], ids=["unset", "empty", "colons"])
def test_python_environment_without_pythonpath(run_dir, inherited):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if inherited is not None:
        env["PYTHONPATH"] = inherited
    ref, ref_files, ours, our_files, rec = run_both(run_dir, ENV_REPORT, env=env)
    assert_same_files(ref_files, our_files)
    text = our_files[f"{HOST_TOOLS}/program_output.txt"].decode()
    assert f"PYTHONPATH={str(run_dir) + '/' + HOST_TOOLS!r}\n" in text


def test_exit_record_is_json_with_every_field(run_dir):
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    (ht / "program.py").write_text(EXIT_7)
    proc = launch(run_dir, "python3", str(ht / "program.py"))
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(run_dir) == "7"
    raw = (ht / "program_exit.json").read_bytes()
    rec = json.loads(raw)
    for field, kind in [("status", str), ("exit_code", int), ("signal", int),
                        ("wall_ms", int), ("cpu_ms", int), ("peak_rss_kb", int),
                        ("output_bytes", int), ("output_truncated", bool),
                        ("seccomp", str), ("landlock", str)]:
        assert isinstance(rec.get(field), kind), (field, rec)
    assert rec["seccomp"] != "off"
    assert rec["wall_ms"] >= 0 and rec["cpu_ms"] >= 0 and rec["peak_rss_kb"] > 0
    assert not (ht / "program_exit.json.part").exists()
