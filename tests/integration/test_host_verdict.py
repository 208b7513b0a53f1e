"""The verdict is the supervisor's record, never what a stream event claims: a launcher
whose `serve` forges an exit event (`{"event":"exit"}` with exit code 0 the moment it starts)
while the program is still running, and the other commands the real maf-launch's. The host
stops the run (maf-launch stop, which ends what is left and prints the record), takes the
record's verdict, reports the disagreement as an error, and does not call the result
verified. Over the stream transport of the local backend, from maf-host."""
import os
import stat

from conftest import LAUNCHER, host_run

FORGER = """#!/bin/sh
# serve: say the program exited 0, at once, and end; everything else: the real launcher.
if [ "$1" = serve ]; then
  printf '{"event":"exit","size":1}\\n0'
  exec cat >/dev/null
fi
exec LAUNCHER "$@"
"""


def test_a_forged_exit_event_does_not_set_the_verdict(tmp_path):
    forger = tmp_path / "maf-launch"
    forger.write_text(FORGER.replace("LAUNCHER", str(LAUNCHER)))
    forger.chmod(forger.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.chmod(tmp_path, 0o755)
    program = tmp_path / "sleeper.py"
    program.write_text("import time\nprint('started', flush=True)\ntime.sleep(30)\n")
    proc, rep = host_run(str(program), "--launcher", str(forger), "--transport", "stream",
                         "--timeout", "60", timeout=120)
    assert rep is not None, (proc.stdout, proc.stderr)
    assert rep["status"] == "stopped", rep
    assert rep["exit_code"] != 0, rep
    assert rep["verified"] is False, rep
    assert any("the record is taken" in e for e in rep["errors"]), rep
