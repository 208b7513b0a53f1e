"""maf-launch sleep, and maf-launch run by the name sleep (guest/sleep.c): coreutils' operands
for the command container backends start images with (`IMAGE sleep infinity`)."""
import os
import signal
import subprocess

import pytest

from conftest import LAUNCHER


@pytest.fixture
def sleep_link(tmp_path):
    link = tmp_path / "sleep"
    link.symlink_to(LAUNCHER)
    return str(link)


@pytest.mark.parametrize("args", [["0"], ["0.05"], [".01s"], ["0.001m"], ["0", "0", "0.01"],
                                  ["0d"], ["0h"]])
def test_intervals_are_slept_and_exit_0(sleep_link, args):
    for argv in ([sleep_link, *args], [str(LAUNCHER), "sleep", *args]):
        proc = subprocess.run(argv, capture_output=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == proc.stderr == b""


@pytest.mark.parametrize("bad", ["ten", "1x", "1e3", "-1", "", ".", "1ss", "1 s"])
def test_a_bad_interval_is_usage(sleep_link, bad):
    proc = subprocess.run([sleep_link, bad], capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"sleep: invalid time interval '{bad}' (try '--help')\n"


def test_no_operand_is_usage_and_help_is_not(sleep_link):
    proc = subprocess.run([sleep_link], capture_output=True, timeout=30)
    assert proc.returncode == 2 and proc.stderr.startswith(b"usage: sleep NUMBER[SUFFIX]...")
    helped = subprocess.run([sleep_link, "--help"], capture_output=True, timeout=30)
    assert helped.returncode == 0 and b"'infinity'" in helped.stdout
    version = subprocess.run([str(LAUNCHER), "sleep", "--version"], capture_output=True)
    assert version.returncode == 0 and version.stdout.startswith(b"sleep (maf-launch) ")


@pytest.mark.parametrize("forever", [["infinity"], ["inf"], ["1", "infinity"],
                                     ["99999999999999999999"]])
def test_infinity_lasts_until_a_signal_ends_it(sleep_link, forever):
    proc = subprocess.Popen([sleep_link, *forever], stderr=subprocess.PIPE)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert proc.stderr.read() == b""


def test_a_signal_it_ignores_does_not_end_it_early(sleep_link):
    """SIGCHLD and SIGWINCH (ignored by default) interrupt nothing: the sleep goes on."""
    proc = subprocess.Popen([sleep_link, "infinity"])
    try:
        for sig in (signal.SIGCHLD, signal.SIGWINCH, signal.SIGURG):
            os.kill(proc.pid, sig)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.3)
    finally:
        proc.kill()
        proc.wait()
