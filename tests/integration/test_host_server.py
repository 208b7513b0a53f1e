"""A tools server that dies, answers garbage, a wrong id, too long a line, or nothing: the
program gets refusals (and carries on), the run reports a clear error, nothing hangs."""
import json

import pytest

from conftest import host_run, host_tool, output_lines

CALLS = json.dumps([["echo", {"i": 0}], ["echo", {"i": 1}], ["echo", {"i": 2}],
                    ["local", {"still": "served"}]])


@pytest.mark.parametrize("mode,words", [
    ("die-after", "ended"),
    ("garbage-after", "not a JSON object"),
    ("wrong-id-after", "wrong or missing id"),
    ("long-line-after", "longer than"),
    ("hang-after", "did not answer"),
    ("both-after", "both"),
])
def test_misbehaving_tools_server(host, mode, words):
    proc, rep = host_run("calls.py", "--tools-server", host_tool("tools_server.py", mode, 1),
                         "--tool", "echo", "--tool", "local=cat", "--tool-timeout", "2",
                         "--max-response-bytes", "100000", args=[CALLS], timeout=90)
    assert rep is not None, (proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert out[0] == {"value": {"i": 0}}
    assert "refusal" in out[1] and words in out[1]["refusal"], out
    assert "refusal" in out[2], out
    assert out[3] == {"value": {"still": "served"}}
    assert rep["tools_server_error"] and words in rep["tools_server_error"]
    assert "tools server" in proc.stderr.decode()


def test_tools_server_that_cannot_start(host):
    proc, rep = host_run("calls.py", "--tools-server", "/nonexistent/server", "--tool", "echo",
                         args=[json.dumps([["echo", {}]])], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "refusal" in output_lines(rep)[0]
    assert rep["tools_server_error"]
