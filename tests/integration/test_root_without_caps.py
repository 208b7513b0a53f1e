"""A launcher that is root without the capabilities to take another identity (a container
started with every capability dropped, as maf-sandbox-docker starts its containers): it runs
the program under its own identity, as an unprivileged launcher does, and says so, rather
than failing the launch; --user, which it cannot honour, is refused with a sentence."""
import os
import shutil
import subprocess

import pytest

from conftest import exit_record, launch_info, wait_exit, LAUNCHER

SETPRIV = shutil.which("setpriv")
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed"),
]
# Root, every capability gone from every set, as `docker run --cap-drop ALL` leaves it.
NO_CAPS = [SETPRIV, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"]


def run_without_caps(run_dir, *program, opts=()):
    argv = [*NO_CAPS, str(LAUNCHER), "run", "--run-dir", str(run_dir), *opts, "--", *program]
    return subprocess.run(argv, capture_output=True, timeout=30)


def test_the_program_runs_under_the_launchers_own_identity(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = run_without_caps(run_dir, "/bin/sh", "-c",
                            "grep -E '^(Uid|CapEff):' /proc/self/status")
    assert proc.returncode == 0, proc.stderr.decode()
    info = launch_info(proc)
    assert info["identity"] == "launcher" and info["uid"] == 0
    assert wait_exit(run_dir) == "0"
    record = exit_record(run_dir)
    assert record["status"] == "exited" and record["exit_code"] == 0
    out = (run_dir / "host_tools" / "program_output.txt").read_text()
    assert "CapEff:\t0000000000000000" in out


def test_user_is_refused_with_a_sentence(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = run_without_caps(run_dir, "/bin/true", opts=("--user", "1000"))
    assert proc.returncode == 125
    assert b"without CAP_SETUID, CAP_SETGID and CAP_CHOWN" in proc.stderr
