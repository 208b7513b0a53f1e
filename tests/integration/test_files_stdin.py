"""`maf-launch run --files-stdin`: the files of R/host_tools taken from the launcher's stdin
before the launch ("NAME SIZE" and the bytes, until stdin ends), as the host gives the
program and the guest API in the launch's one exec. Each is written beside its name and
renamed over it, so what was there (a symlink a program left) is replaced, never followed;
what is not the format is refused (exit 2) before anything is written or launched."""
import os
import subprocess

import pytest

from conftest import HOST_TOOLS, LAUNCHER, launch_info, wait_exit


def run_with(run_dir, stdin, *program):
    return subprocess.run([str(LAUNCHER), "run", "--run-dir", str(run_dir), "--files-stdin",
                           "--", *program], input=stdin, capture_output=True, timeout=30)


def files(*pairs):
    return b"".join(b"%s %d\n%s" % (n.encode(), len(d), d) for n, d in pairs)


def test_the_files_are_in_place_before_the_program_runs(run_dir):
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    target = run_dir.parent / "outside"
    target.write_text("untouched")
    (ht / "program.py").symlink_to(target)          # what an earlier program left
    shim = b"def hello():\n    return 'hello from the guest API'\n"
    prog = b"import guest_api\nprint(guest_api.hello())\n"
    proc = run_with(run_dir, files(("program.py", prog), ("guest_api.py", shim),
                                   ("empty", b"")),
                    "python3", str(ht / "program.py"))
    assert proc.returncode == 0, proc.stderr
    launch_info(proc)
    assert wait_exit(run_dir) == "0"
    assert (ht / "program_output.txt").read_text() == "hello from the guest API\n"
    assert target.read_text() == "untouched"
    for name, data in (("program.py", prog), ("guest_api.py", shim), ("empty", b"")):
        p = ht / name
        assert not p.is_symlink() and p.read_bytes() == data
        assert p.stat().st_mode & 0o777 == 0o644
    assert not [n for n in os.listdir(ht) if n.startswith(".")], "a staging file was left"


@pytest.mark.parametrize("stdin, why", [
    (b"a/b 1\nx", "holds a '/'"),
    (b".hidden 1\nx", "starts with '.'"),
    (b"program.py 5\nab", "stdin ends within program.py"),
    (b"program.py 01\nx", "not a decimal number"),
    (b"program.py -1\n", "not a decimal number"),
    (b"program.py\nx", "not 'NAME SIZE'"),
    (b" 1\nx", "the name is empty"),
    (b"program.py 1", "ends within a line"),
    (b"program.py 67108865\n", "up to 64 MiB"),
    (b"".join(b"f%d 0\n" % i for i in range(17)), "more than 16 files"),
])
def test_what_is_not_the_format_is_refused_before_anything(run_dir, stdin, why):
    proc = run_with(run_dir, stdin, "true")
    assert proc.returncode == 2, proc.stderr
    assert why.encode() in proc.stderr, proc.stderr
    assert proc.stdout == b""
    ht = run_dir / HOST_TOOLS
    assert not ht.exists() or os.listdir(ht) == [], "something was written or launched"


def test_a_directory_at_a_name_fails_the_launch(run_dir):
    (run_dir / HOST_TOOLS / "program.py").mkdir(parents=True)
    proc = run_with(run_dir, files(("program.py", b"print(1)\n")), "true")
    assert proc.returncode == 125, proc.stderr
    assert b"cannot put program.py in place" in proc.stderr
    assert os.listdir(run_dir / HOST_TOOLS) == ["program.py"]


def test_a_missing_run_dir_is_made_with_its_parents(tmp_path):
    r = tmp_path / "a" / "b" / "run"
    proc = run_with(r, files(("program.py", b"print(6 * 7)\n")), "python3",
                    str(r / HOST_TOOLS / "program.py"))
    assert proc.returncode == 0, proc.stderr
    assert wait_exit(r) == "0"
    assert (r / HOST_TOOLS / "program_output.txt").read_text() == "42\n"
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o755


def test_without_the_option_stdin_is_not_read(run_dir):
    proc = subprocess.run([str(LAUNCHER), "run", "--run-dir", str(run_dir), "--", "true"],
                          input=files(("program.py", b"x")), capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert not (run_dir / HOST_TOOLS / "program.py").exists()
