"""The same programs served over each transport on the local backend give the same results
(tests/integration/transport_cases.py): files (reads, woken by the backend), wait
(`maf-launch wait`: an exec finds each request, a write answers it), relay (`maf-launch
relay`: one exec answers a call and finds the next) and stream (`maf-launch serve` on one
exec that stays open). Where a transport's count of backend operations is its point, it is
checked too; a stream killed mid-call falls back to relay with no call lost or made twice,
and so does one whose launcher is older than `serve --ack`."""
import os

import pytest

from conftest import LAUNCHER, host_run
from transport_cases import CASES, TRANSPORTS, agree, host_tool, output_lines


def run_all(case):
    program, opts, args, fields, check = CASES[case]
    reports = {}
    for t in TRANSPORTS:
        proc, rep = host_run(program, "--transport", t, *opts, args=args)
        assert rep is not None, (t, proc.returncode, proc.stderr)
        assert rep["transport"] == t and rep["errors"] in (
            [], ["the run's deadline of 3000 ms passed"]), (t, rep["transport"], rep["errors"])
        reports[t] = rep
    check(reports["files"])
    agree(reports, fields)
    return reports


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_transport_serves_alike(host, case):
    run_all(case)


def test_the_backend_operations_each_transport_makes(host):
    reps = run_all("sequential calls and a refusal")
    # relay: the launch (the program and the shim on its stdin), one relay per call and one
    # for the exit (and a last look, maybe), the stop (which brings the output back and
    # reclaims R); nothing written. wait writes every answer. stream: the launch, serve and
    # the stop, whatever the calls; nothing written or read.
    assert reps["relay"]["ops"]["write"] == 0, reps["relay"]["ops"]
    assert reps["relay"]["ops"]["exec"] <= 1 + 7 + 2 + 1, reps["relay"]["ops"]
    assert reps["relay"]["ops"]["read"] == 0, reps["relay"]["ops"]
    assert reps["wait"]["ops"]["write"] == 7, reps["wait"]["ops"]
    assert reps["stream"]["ops"] == {"exec": 3, "read": 0, "write": 0, "stat": 0, "wait": 0}


def test_relay_writes_first_an_answer_too_large_to_carry(host):
    reps = run_all("answers over 64 KiB")
    # 180,012 bytes go by a write; 12 and 45,012 ride on the relay's stdin.
    assert reps["relay"]["ops"]["write"] == 1, reps["relay"]["ops"]


@pytest.mark.parametrize("kill_at", [1, 3])
def test_a_stream_killed_mid_call_falls_back_with_no_call_lost_or_made_twice(host, tmp_path,
                                                                             kill_at):
    # The tool kills `maf-launch serve` on its kill_at-th call, before it answers: the
    # answer then goes out on a stream that is gone, and the run goes on with relay.
    count = tmp_path / "count"
    proc, rep = host_run("count_calls.py", "--transport", "stream", "--tool",
                         "count=" + host_tool("tool_count.py", count, kill_at), args=[6])
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 0, rep
    assert output_lines(rep)[:6] == [{"value": {"i": i, "n": i + 1}} for i in range(6)]
    assert count.read_text() == "call\n" * 6         # each tool call made once
    assert rep["calls"] == 6 and rep["undelivered"] == 0
    assert len(rep["errors"]) == 1 and "the stream of maf-launch serve broke" in \
        rep["errors"][0], rep["errors"]
    assert "going on with the relay transport" in rep["errors"][0]
    assert rep["transport"] == "relay"


# A launcher from before COMMAND's OPTIONs: it refuses them as usage (exit 2, one line on
# stderr), as it refuses any option it does not know; every other command is the real one's.
OLDER = """#!/bin/sh
if [ "$1" = COMMAND ]; then
  for a; do
    for o in OPTIONS; do
      if [ "$a" = "$o" ]; then
        echo "maf-launch COMMAND: unknown option '$a' (try 'maf-launch COMMAND --help')" >&2
        exit 2
      fi
    done
  done
fi
exec LAUNCHER "$@"
"""


def run_older(tmp_path, command, *options):
    """A stream run of 3 calls with an older launcher; its report and the calls' count file,
    the run's answers checked."""
    older = tmp_path / "maf-launch"
    older.write_text(OLDER.replace("COMMAND", command).replace("OPTIONS", " ".join(options))
                     .replace("LAUNCHER", str(LAUNCHER)))
    older.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    count = tmp_path / "count"
    proc, rep = host_run("count_calls.py", "--launcher", str(older), "--transport", "stream",
                         "--tool", "count=" + host_tool("tool_count.py", count), args=[3])
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 0, rep
    assert output_lines(rep)[:3] == [{"value": {"i": i, "n": i + 1}} for i in range(3)]
    return rep, count


def test_a_launcher_whose_stop_refuses_output_ends_the_run_as_before(host, tmp_path):
    rep, _ = run_older(tmp_path, "stop", "--output", "--reclaim")
    assert rep["errors"] == [] and rep["transport"] == "stream", rep
    # The stop asked twice, then the output read and the run directory reclaimed apart.
    assert rep["ops"] == {"exec": 5, "read": 1, "write": 0, "stat": 0, "wait": 0}, rep["ops"]


def test_a_launcher_whose_run_refuses_files_stdin_has_them_written(host, tmp_path):
    rep, _ = run_older(tmp_path, "run", "--files-stdin")
    assert rep["errors"] == [] and rep["transport"] == "stream", rep
    # The launch asked twice, the program and the shim written between.
    assert rep["ops"] == {"exec": 4, "read": 0, "write": 2, "stat": 0, "wait": 0}, rep["ops"]


def test_a_launcher_whose_serve_refuses_ack_is_served_by_relay(host, tmp_path):
    rep, count = run_older(tmp_path, "serve", "--ack")
    assert count.read_text() == "call\n" * 3         # each tool call made once
    assert rep["calls"] == 3 and rep["undelivered"] == 0
    assert rep["transport"] == "relay"
    assert len(rep["errors"]) == 1 and "the stream of maf-launch serve broke" in \
        rep["errors"][0] and "unknown option '--ack'" in rep["errors"][0], rep["errors"]
