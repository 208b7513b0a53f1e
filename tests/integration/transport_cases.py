"""The programs every transport must serve alike, on the local backend
(tests/integration/test_transports.py) and over Docker (tests/images/
test_transports_over_docker.py). Each case is a program of tests/integration/programs, the
maf-host options and arguments it runs with, the report fields every transport must agree
on, and a check of what the files transport's report (the others agreeing) must say."""
import json
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"
HOST_PYTHON = "/usr/bin/python3"  # tools and tools servers run on the host with this
TRANSPORTS = ("files", "wait", "relay", "stream")


def host_tool(script, *args):
    """A COMMAND for --tool NAME=COMMAND or --tools-server, quoted for sh -c."""
    import shlex

    return " ".join(shlex.quote(str(a)) for a in (HOST_PYTHON, PROGRAMS / script, *args))


SERVER = ("--tools-server", host_tool("tools_server.py", "ok"), "--tool", "echo", "--tool",
          "add")


def calls(*pairs):
    return json.dumps([list(p) for p in pairs])


def output_lines(report):
    return [json.loads(line) for line in report["output"].splitlines()
            if line.startswith("{")]


def check_sequential(rep):
    out = output_lines(rep)
    assert rep["status"] == "exited" and rep["exit_code"] == 0
    assert out[:6] == [{"value": {"i": i, "s": "h\u00e9 \"q\"\n"}} for i in range(6)]
    assert out[6] == {"refusal": "there is no host tool named 'nope'"}
    assert rep["calls"] == 7 and rep["refusals"] == 1


def check_threads(rep):
    assert rep["exit_code"] == 0 and rep["calls"] == 32
    assert output_lines(rep)[-1] == {"mode": "threads", "ok": 32, "bad": [], "channel": True}


def check_legacy(rep):
    assert rep["exit_code"] == 0
    assert [(o["label"], o["outcome"]) for o in output_lines(rep) if "outcome" in o] == [
        ("echo", "value"), ("unknown tool", "refusal"), ("bad arguments", "value"),
        ("after abandoned", "value")]
    assert rep["calls"] == 4 and rep["refusals"] == 1


def check_large(rep):
    assert output_lines(rep)[:3] == [{"value": "\u00e9x" * 60000}, {"value": "\u00e9x" * 3},
                                     {"value": "\u00e9x" * 15000}]
    assert rep["calls"] == 3 and rep["refusals"] == 0


def check_budget(rep):
    out = output_lines(rep)
    assert out[:2] == [{"value": 1}, {"value": 2}]
    assert out[2:4] == [{"refusal": "the budget of 2 host-tool calls for this run is "
                                    "spent"}] * 2, out
    assert rep["calls"] == 4 and rep["refusals"] == 2


def check_timeout(rep):
    assert rep["status"] == "timeout", (rep["status"], rep["errors"])
    assert rep["output"].startswith("pids ")


def check_killed(rep):
    assert rep["status"] == "signaled" and rep["exit_code"] == 128 + 9
    assert rep["calls"] == 0 and rep["undelivered"] == 1


# name: (program, options, arguments, fields the transports agree on, check)
AGREE = ("status", "exit_code", "calls", "refusals", "undelivered", "output", "record")
CASES = {
    "sequential calls and a refusal": (
        "calls.py", SERVER, [calls(*[("echo", {"i": i, "s": "h\u00e9 \"q\"\n"})
                                     for i in range(6)], ("nope", {}))],
        AGREE, check_sequential),
    "8 threads": ("channel_calls.py", SERVER + ("--max-calls", "32"), ["threads"], AGREE,
                  check_threads),
    "legacy request files the program writes": ("legacy_calls.py", SERVER, ["basic"], AGREE,
                                                check_legacy),
    "answers over 64 KiB": (
        "calls.py", ("--tool", "text=" + host_tool("tool_text.py")),
        [calls(("text", {"n": 60000}), ("text", {"n": 3}), ("text", {"n": 15000}))], AGREE,
        check_large),
    "a spent budget": ("calls.py", SERVER + ("--max-calls", "2"),
                       [calls(*[("add", {"a": i, "b": 1}) for i in range(4)])], AGREE,
                       check_budget),
    # Whether the supervisor's timeout or the host's deadline comes first is a race: the
    # record says "timeout" or "stopped".
    "a timeout": ("forever.py", ("--timeout", "3"), [], ("status", "calls"), check_timeout),
    "a program killed mid-call": ("killed_mid_call.py", ("--tool", "slow=sleep 1.5; cat"),
                                  [], AGREE, check_killed),
}


RECORD = ("status", "exit_code", "signal", "calls", "undelivered", "output_truncated")


def agree(reports, fields):
    """Every transport's report says what the files transport's says, field by field; with
    "record" among the fields, so does the exit record the launcher left, its timings
    aside."""
    first = reports["files"]
    for t, rep in reports.items():
        for k in fields:
            if k != "record":
                assert rep[k] == first[k], (k, t, rep[k], first[k])
        if "record" not in fields:
            continue
        if first["record"] is None or rep["record"] is None:
            assert rep["record"] == first["record"], (t, "record")
            continue
        for k in RECORD:
            assert rep["record"][k] == first["record"][k], (t, "record", k)
