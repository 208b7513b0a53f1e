"""maf-host serving real python3 programs over the local backend: tools run as commands and
through a tools server; refusals the program catches and carries on after."""
import json
import os
import signal

from conftest import host_run, host_tool, output_lines, pid_alive


def calls(*pairs):
    return json.dumps([list(p) for p in pairs])


def test_command_tools(host):
    proc, rep = host_run(
        "calls.py", "--tool", "echo=cat", "--tool", "sum=" + host_tool("tool_sum.py"),
        args=[calls(("echo", {"s": "h\u00e9llo \"q\"\n", "n": [1, {"a": None}]}),
                    ("sum", {"numbers": [1, 2, 3]}))])
    assert proc.returncode == 0, proc.stderr
    assert output_lines(rep) == [{"value": {"s": "h\u00e9llo \"q\"\n", "n": [1, {"a": None}]}},
                                 {"value": 6}]
    assert rep["calls"] == 2 and rep["refusals"] == 0


def test_command_failure_is_a_refusal_with_the_first_stderr_line(host):
    proc, rep = host_run(
        "calls.py", "--tool", "sum=" + host_tool("tool_sum.py"),
        "--tool", "broken=echo 'not json at all'",
        "--tool", "silent=exit 9",
        args=[calls(("sum", {"numbers": "three"}), ("broken", {}), ("silent", {}),
                    ("sum", {"numbers": [2, 2]}))])
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert out[0] == {"refusal": "sum needs 'numbers', a list of numbers"}
    assert "refusal" in out[1] and "JSON" in out[1]["refusal"]
    assert "refusal" in out[2] and "9" in out[2]["refusal"]
    assert out[3] == {"value": 4}
    assert rep["calls"] == 4 and rep["refusals"] == 3


def test_slow_command_tool_is_refused_at_its_time_limit(host):
    # The tool would sleep an hour: only its time limit lets the run go on (host_run's own
    # timeout is the safety net that fails the test otherwise).
    proc, rep = host_run("calls.py", "--tool", "slow=sleep 3600", "--tool", "echo=cat",
                         "--tool-timeout", "0.5",
                         args=[calls(("slow", {}), ("echo", {"after": True}))], timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert "refusal" in out[0]
    assert out[1] == {"value": {"after": True}}


def test_tools_server(host):
    proc, rep = host_run(
        "calls.py", "--tools-server", host_tool("tools_server.py", "ok"),
        "--tool", "echo", "--tool", "add", "--tool", "fail", "--tool", "sum=" + host_tool("tool_sum.py"),
        args=[calls(("add", {"a": 2, "b": 40}), ("echo", {"k": ["v"]}), ("fail", {}),
                    ("sum", {"numbers": [1]}), ("add", {"a": 1, "b": 1}))])
    assert proc.returncode == 0, proc.stderr
    assert output_lines(rep) == [{"value": 42}, {"value": {"k": ["v"]}},
                                 {"refusal": "the tool fail refuses, politely"},
                                 {"value": 1}, {"value": 2}]
    assert rep["error"] is None and rep["tools_server_error"] is None
    assert rep["calls"] == 5 and rep["refusals"] == 1


def test_unknown_tool_is_refused(host):
    proc, rep = host_run("calls.py", "--tool", "echo=cat",
                         args=[calls(("nope", {}), ("echo", {"ok": 1}))])
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert "refusal" in out[0] and "nope" in out[0]["refusal"]
    assert out[1] == {"value": {"ok": 1}}


def test_bad_arguments_are_refused_before_the_tool_runs(host, tmp_path):
    witness = tmp_path / "ran"
    proc, rep = host_run(
        "calls.py", "--tool", f"lookup=touch {witness}; echo 1",
        "--param", "lookup:name:string", "--param", "lookup:limit:integer?",
        args=[calls(("lookup", {}), ("lookup", {"name": 5}), ("lookup", {"name": "x",
                                                                         "limit": 1.5}))])
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert all("refusal" in o for o in out), out
    assert not witness.exists()
    proc, rep = host_run("calls.py", "--tool", f"lookup=touch {witness}; echo 1",
                         "--param", "lookup:name:string", "--param", "lookup:limit:integer?",
                         args=[calls(("lookup", {"name": "x"}), ("lookup", {"name": "x",
                                                                            "limit": 3}))])
    assert output_lines(rep) == [{"value": 1}, {"value": 1}]
    assert witness.exists()


def test_spent_budget_is_refused_and_the_program_carries_on(host):
    proc, rep = host_run("calls.py", "--tool", "echo=cat", "--max-calls", "3",
                         args=[calls(*[("echo", {"i": i}) for i in range(6)])])
    assert proc.returncode == 0, proc.stderr
    out = output_lines(rep)
    assert out[:3] == [{"value": {"i": i}} for i in range(3)]
    assert all("refusal" in o for o in out[3:]), out
    assert rep["output"].rstrip().endswith("done")


def test_refusals_count_against_the_budget(host):
    proc, rep = host_run("calls.py", "--tool", "echo=cat", "--max-calls", "2",
                         args=[calls(("nope", {}), ("nope", {}), ("echo", {}))])
    out = output_lines(rep)
    assert all("refusal" in o for o in out), out


def test_wait_and_files_transports(host):
    for transport in ("files", "wait"):
        proc, rep = host_run("calls.py", "--transport", transport, "--tool", "echo=cat",
                             args=[calls(*[("echo", {"i": i}) for i in range(3)])])
        assert proc.returncode == 0, (transport, proc.stderr)
        assert output_lines(rep) == [{"value": {"i": i}} for i in range(3)], transport


def test_command_tool_output_cap_and_stray_background_process(host, tmp_path):
    stray_pid = tmp_path / "stray.pid"
    proc, rep = host_run(
        "calls.py", "--max-response-bytes", "10000",
        "--tool", "flood=head -c 200000 /dev/zero | tr '\\0' 7",
        "--tool", f"stray=(sleep 3600 & echo $! > {stray_pid}); echo '\"answered\"'",
        args=[calls(("flood", {}), ("stray", {}))], timeout=60)
    try:
        assert proc.returncode == 0, proc.stderr
        out = output_lines(rep)
        assert "refusal" in out[0] and "10000" in out[0]["refusal"], out
        # The shell has exited; a background process holding stdout (for an hour) must not
        # stall the call: the answer is what was printed, and the tool's process group is
        # killed (host_run's timeout is the safety net that fails the test otherwise).
        assert out[1] == {"value": "answered"}
        assert not pid_alive(int(stray_pid.read_text()))
    finally:
        if stray_pid.exists():
            try:
                os.kill(int(stray_pid.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
