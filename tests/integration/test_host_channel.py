"""Programs calling through the generated shim, which uses the launcher's channel, served by
libmafhost over the local backend; and a legacy-file program beside a channel one."""
import json

import pytest

from conftest import host_run, host_tool, output_lines

ADD = ["--tools-server", host_tool("tools_server.py", "ok"), "--tool", "add", "--tool", "echo"]


def summary(rep):
    return [o for o in output_lines(rep) if "mode" in o][-1]


@pytest.mark.parametrize("mode,calls", [("sequential", 20), ("threads", 32), ("fork", 8),
                                        ("fork-after-call", 8)])
def test_shim_calls_through_the_channel(host, mode, calls):
    proc, rep = host_run("channel_calls.py", *ADD, "--max-calls", "64", args=[mode])
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    s = summary(rep)
    assert s == {"mode": mode, "ok": calls, "bad": [], "channel": True}
    assert rep["calls"] == calls
    # Every call went through the launcher's channel: its record counts them.
    assert rep["record"]["calls"] == calls


def test_channel_and_legacy_files_served_by_the_same_host(host):
    proc, rep = host_run("channel_calls.py", *ADD, args=["mixed"])
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    lines = output_lines(rep)
    assert lines[0] == {"refusal": "unknown tool 'nope'"} or "nope" in lines[0]["refusal"]
    assert summary(rep)["ok"] == 2 and summary(rep)["bad"] == []
    assert rep["calls"] == 3
    # One call through the channel; the other two from the shim's own files.
    assert rep["record"]["calls"] == 1


def test_a_child_without_the_descriptor_calls_through_the_socket(host):
    # subprocess closes every descriptor but stdio by default: the shim in the child finds
    # the inherited channel gone and connects to R/host_tools/channel.sock instead.
    proc, rep = host_run("subprocess_calls.py", *ADD)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    assert output_lines(rep)[-1] == {"children": [1, 2, 3]}
    assert rep["calls"] == 3
    # Through the channel, not the shim's own files: the launcher's record counts them.
    assert rep["record"]["calls"] == 3


def test_shim_call_timeout_is_a_refusal(host):
    # The shim's CALL_TIMEOUT bounds each call on the channel too: a tool that never answers
    # gives the program a HostToolError it can catch, and the run still ends.
    # The host's own limit on the tool is later than the shim's 1.5 s, and ends the run.
    tools = ["--tools-server", host_tool("tools_server.py", "hang-after", "1"), "--tool", "add",
             "--tool-timeout", "4"]
    proc, rep = host_run("channel_calls.py", *tools, args=["timeout"])
    assert rep is not None, proc.stderr
    lines = output_lines(rep)
    assert lines[0] == {"refusal": "the host did not answer the call to 'add' within 1.5 "
                                   "seconds"}, rep["output"]
    assert summary(rep) == {"mode": "timeout", "ok": 1, "bad": [], "channel": True}
