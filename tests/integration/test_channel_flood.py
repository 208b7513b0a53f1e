"""A program that floods the supervisor with events about a response that never parses.

The program keeps one channel call in flight (no host answers it here), writes a response
of almost 9 MiB for it that is never valid JSON (a whole string, then garbage: the parser
reads all of it before it fails), then opens and closes that file and a second name in
turn, as fast as it can: every close is an IN_CLOSE_WRITE on the calls directory. In the
"change" variant each close of the response follows a write of one byte, so the file is a
new one to any check of its size and times. Whatever the flood, the supervisor must still
end the run at its --timeout: the pass condition is the exit record with status "timeout".
The supervisor's CPU time during the run is printed for information. And calls made while
another process floods the calls directory are still answered.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, exit_record, launch, launch_info, pid_alive, wait_exit

FLOOD = r'''
import json, os, socket, sys, time
mode = sys.argv[1]
chan = socket.socket(fileno=os.dup(int(os.environ["MAF_HOST_TOOLS_FD"])))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
socket.send_fds(chan, [b"connect"], [b.fileno()])
b.close()
a.sendall(json.dumps({"id": 1, "name": "slow"}).encode() + b"\n")
calls = os.path.join(os.environ["PYTHONPATH"].split(":")[0], "host_tool_calls")
while not os.path.exists(os.path.join(calls, "0001.request.json")):
    time.sleep(0.001)
resp = os.path.join(calls, "0001.response.json")
other = os.path.join(calls, "0002.response.json")
head, tail = b'{"value": "', b'"} garbage'
size = (9 << 20) - 4096
with open(resp, "wb") as f:
    f.write(head + b"x" * (size - len(head) - len(tail)) + tail)
print("flooding", flush=True)
n = 0
while True:
    for p in (resp, other):
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o666)
        if mode == "change" and p == resp:
            os.pwrite(fd, b"e", size - 1)  # "garbagf", "garbage": a new mtime and ctime
        os.close(fd)
        n += 1
'''


def cpu_seconds(pid):
    """utime + stime of pid from /proc/PID/stat, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("mode", ["touch", "change"])
def test_a_flood_of_events_does_not_starve_the_supervisor(run_dir, mode, capsys):
    proc = launch(run_dir, sys.executable, "-c", FLOOD, mode, opts=["--timeout", "2"])
    assert proc.returncode == 0, proc.stderr
    info = launch_info(proc)
    sup, start = info["supervisor_pid"], time.monotonic()
    cpu = 0.0
    marker = Path(run_dir) / HOST_TOOLS / "program_exit_code"
    try:
        # The harness's safety net, not the measure: a starved supervisor never gets there.
        deadline = start + 30
        while not marker.exists() and time.monotonic() < deadline:
            cpu = cpu_seconds(sup) or cpu
            time.sleep(0.02)
        wall = time.monotonic() - start
        with capsys.disabled():
            print(f"\n[flood {mode}] supervisor CPU {cpu:.2f} s over {wall:.1f} s of run")
        wait_exit(run_dir, timeout=0.1)
    finally:
        if pid_alive(sup):
            os.kill(sup, signal.SIGKILL)  # a starved supervisor: the program dies with it
    rec = exit_record(run_dir)
    out = (Path(run_dir) / HOST_TOOLS / "program_output.txt").read_text()
    assert out.startswith("flooding"), out
    assert rec["status"] == "timeout", rec
    # The call was published and never answered: the record says so.
    assert rec["undelivered"] == [1], rec
    assert not pid_alive(info["pid"])


def test_calls_are_answered_during_a_flood(run_dir, capsys):
    # The supervisor reads events at a slower pace while they name nothing it awaits (a
    # flood); a call made meanwhile must still be answered, only later.
    from test_channel import run_served, py

    rec, out, r = run_served(run_dir, py(
        'import time\n'
        'calls = os.path.join(os.environ["PYTHONPATH"].split(":")[0], "host_tool_calls")\n'
        'os.makedirs(calls, exist_ok=True)\n'
        'if os.fork() == 0:\n'
        '    names = [os.path.join(calls, n) for n in ("0999.response.json", "junk")]\n'
        '    while True:\n'
        '        for p in names:\n'
        '            os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o666))\n'
        'time.sleep(0.5)\n'
        'res = []\n'
        'for i in range(5):\n'
        '    t = time.monotonic()\n'
        '    v = call("add", cid=i, a=i, b=100)\n'
        '    res.append([v, round((time.monotonic() - t) * 1000)])\n'
        'print(json.dumps(res))\n'), timeout=60)
    res = json.loads(out)
    assert [v for v, _ in res] == [{"id": i, "value": i + 100} for i in range(5)]
    assert rec["status"] == "exited" and rec["calls"] == 5
    with capsys.disabled():
        print(f"\n[flood] call round trips during the flood: {[ms for _, ms in res]} ms")
