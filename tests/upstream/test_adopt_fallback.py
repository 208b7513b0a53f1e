"""The drop-in's stream broken in the middle of a run (its `maf-launch serve` killed in the
container, as a dropped connection or an engine restart would end it): the run goes on by
relay over the same engine, every call is answered, and no tool runs twice."""
import asyncio
import subprocess

from adopt import recorded_results, run, ways  # noqa: F401  (ways: a fixture)
from test_adopt_parity import HEAD, basic

KILL_SERVE = ("import os, signal\n"
              "for p in os.listdir('/proc'):\n"
              "    try:\n"
              "        argv = open('/proc/%s/cmdline' % p, 'rb').read().split(b'\\0')\n"
              "    except OSError:\n"
              "        continue\n"
              "    if len(argv) > 1 and argv[0].endswith(b'maf-launch') and argv[1] == b'serve':\n"
              "        os.kill(int(p), signal.SIGKILL)\n"
              "        print(p)\n")


def test_a_broken_stream_goes_on_by_relay_and_loses_no_call(ways, monkeypatch):
    seen = recorded_results(monkeypatch)
    log = []
    reg = basic(log, max_dispatches_per_run=32)
    program = HEAD + ("import time\ngot = []\nfor i in range(12):\n"
                      "    got.append(call('add', left=i, right=100))\n    time.sleep(0.2)\n"
                      "print(got)\n")

    async def go():
        sandbox, layout = await ways.prepare("drop-in", program, reg)
        task = asyncio.ensure_future(ways.dispatch("drop-in", sandbox, reg, layout,
                                                   timeout=120))
        for _ in range(600):
            if len([e for e in log if e[0] == "add"]) >= 3:
                break
            await asyncio.sleep(0.05)
        killed = subprocess.run(["docker", "exec", sandbox.container_name, "python3", "-c",
                                 KILL_SERVE], capture_output=True, text=True)
        return await task, killed

    r, killed = run(go())
    assert killed.returncode == 0 and killed.stdout.strip(), killed
    assert (r.stdout, r.exit_code) == (str([i + 100 for i in range(12)]) + "\n", 0)
    assert [e for e in log if e[0] == "add"] == [("add", i, 100) for i in range(12)]
    (result,) = seen
    assert result.transport in ("relay", "wait", "files")
    assert result.record is not None and result.record.calls == 12
