"""maf-host run --verbose: what happens in a run, on stderr as it happens: the start, each
call served or refused (with what the tool printed), each error, the end; and what --json
says beside it (errors, undelivered)."""
import json
import re

import pytest

from conftest import host_run, host_tool, output_lines

P = r"maf-host run: "
CALLS = json.dumps([["echo", {"x": 1}], ["sum", {"numbers": "three"}], ["junk", {}],
                    ["nope", {}]])
TOOLS = ["--tool", "echo=cat", "--tool", "sum=" + host_tool("tool_sum.py"),
         "--tool", "junk=echo 'not json at all'; echo 'and a second line'"]


def event_lines(stderr):
    return [ln for ln in stderr.decode().splitlines() if ln.startswith("maf-host run: ")]


def test_verbose_shows_each_call_and_what_the_tools_printed(host):
    proc, _ = host_run("calls.py", "--verbose", *TOOLS, args=[CALLS], json_out=False)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    lines = err.splitlines()
    events = event_lines(proc.stderr)
    assert re.fullmatch(P + r"started \(pid \d+, supervisor \d+\)", events[0]), err
    assert re.fullmatch(P + r"call 1 echo served in \d+ ms", events[1]), err
    assert re.fullmatch(P + r"call 2 sum refused in \d+ ms: sum needs 'numbers', a list of "
                        r"numbers", events[2]), err
    # The tool's whole stderr, indented under its refusal: the second line never reaches
    # the program.
    at = lines.index(events[2])
    assert lines[at + 1:at + 3] == ["    sum needs 'numbers', a list of numbers",
                                    "    (second line, not part of the refusal)"], err
    assert re.fullmatch(P + r"call 3 junk refused in \d+ ms: the tool junk printed something "
                        r"that is not one JSON value", events[3]), err
    at = lines.index(events[3])
    assert lines[at + 1:at + 3] == ["    not json at all", "    and a second line"], err
    assert re.fullmatch(P + r"call 4 (nope )?refused in \d+ ms: .*nope.*", events[4]), err
    assert events[5] == P + "ended: exited, exit code 0, 4 calls", err
    assert len(events) == 6, err

    # The program's output is what it is without --verbose, and it never saw the notes.
    quiet, _ = host_run("calls.py", *TOOLS, args=[CALLS], json_out=False)
    assert quiet.returncode == 0 and quiet.stderr == b"", quiet.stderr
    assert proc.stdout == quiet.stdout
    assert b"second line" not in proc.stdout


def test_verbose_with_json(host):
    proc, rep = host_run("calls.py", "--verbose", *TOOLS, json_out=True, args=[CALLS])
    assert proc.returncode == 0, proc.stderr
    assert rep["calls"] == 4 and rep["refusals"] == 3
    assert rep["undelivered"] == 0 and rep["errors"] == [] and rep["error"] is None
    assert rep["record"]["calls"] == 4 and rep["record"]["undelivered"] == 0
    assert len(output_lines(rep)) == 4
    assert "    (second line, not part of the refusal)" in proc.stderr.decode()


def test_verbose_shows_a_tools_servers_bad_line(host):
    proc, rep = host_run("calls.py", "--verbose",
                         "--tools-server", host_tool("tools_server.py", "garbage-after", 1),
                         "--tool", "echo", args=[json.dumps([["echo", {}], ["echo", {}]])])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode().splitlines()
    refused = [i for i, ln in enumerate(lines) if " call 2 echo refused " in ln]
    assert refused and "not a JSON object" in lines[refused[0]], lines
    assert lines[refused[0] + 1] == "    this is not json", lines


def test_verbose_makes_control_characters_visible(host):
    tool = "printf 'bad\\033[2J\\a\\n' >&2; exit 1"
    proc, _ = host_run("calls.py", "--verbose", "--tool", "t=" + tool, json_out=False,
                       args=[json.dumps([["t", {}]])])
    err = proc.stderr
    assert b"\x1b" not in err and b"\x07" not in err, err
    assert b"    bad\\x1b[2J\\x07" in err, err


def test_tool_words_that_are_not_utf8(host):
    # The refusal the program reads stays UTF-8 (its shim could not decode it otherwise);
    # --verbose shows the bytes as the tool printed them, escaped.
    tool = "printf 'bad \\377\\376 bytes \\303\\251\\n' >&2; exit 1"
    proc, rep = host_run("calls.py", "--verbose", "--tool", "t=" + tool,
                         args=[json.dumps([["t", {}]])])
    assert proc.returncode == 0, proc.stderr
    assert output_lines(rep) == [{"refusal": "bad ?? bytes \u00e9"}], rep["output"]
    assert "    bad \\xff\\xfe bytes \u00e9" in proc.stderr.decode(), proc.stderr


def test_errors_are_listed_and_shown(host):
    proc, rep = host_run("forever.py", "--verbose", "--timeout", "1", timeout=60)
    assert proc.returncode == 124, proc.stderr
    assert rep["status"] == "timeout"
    assert rep["errors"] and rep["errors"][0] == rep["error"], rep
    events = event_lines(proc.stderr)
    assert P + "error: " + rep["error"] in events, events
    assert re.fullmatch(P + r"ended: timeout(, exit code \d+)?, 0 calls", events[-2]), events
    assert events[-1] == P + "the run timed out after 1 s and was stopped", events


def test_call_in_flight_when_the_program_exits_is_undelivered(host):
    proc, rep = host_run("call_then_exit.py", "--verbose", "--tool", "slow=sleep 1; cat",
                         args=["slow", "0.3"], timeout=60)
    assert rep is not None, proc.stderr
    assert rep["output"] == "exiting\n"
    assert rep["calls"] == 0 and rep["undelivered"] == 1, rep
    assert rep["record"]["undelivered"] == 1, rep["record"]
    events = event_lines(proc.stderr)
    assert any(re.fullmatch(P + r"call 1 slow served in \d+ ms", e) for e in events), events
    assert P + "call 1 undelivered: the program ended before its answer reached it" in events
    assert events[-1] == P + "ended: exited, exit code 0, 0 calls, 1 undelivered", events
