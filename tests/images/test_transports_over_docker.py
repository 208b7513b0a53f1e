"""The programs of tests/integration/transport_cases.py served over Docker, in a
python-noshell container, by each transport: files (archive reads and writes), wait
(`maf-launch wait` over exec, the answers by archive write), relay (`maf-launch relay`, one
exec a call, the answer on its stdin) and stream (`maf-launch serve` on an exec whose connection
the engine hands over, no operation a call). Every transport gives the same results, and
leaves no run directory and no process behind."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from test_host_over_docker import host_run, left_in  # noqa: E402
from transport_cases import (CASES, PROGRAMS, TRANSPORTS, agree, host_tool,  # noqa: E402
                             output_lines)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_transport_serves_alike_over_docker(containers, case):
    program, opts, args, fields, check = CASES[case]
    c = containers("python-noshell")
    reports = {}
    for t in TRANSPORTS:
        proc, rep = host_run("--backend", f"docker:{c.name}", "--transport", t, *opts,
                             PROGRAMS / program, "--", *args)
        assert rep is not None, (t, proc.returncode, proc.stderr)
        # A timeout's one error is its cause, when the host's deadline came before the
        # supervisor's (which gives it as the record's status).
        assert rep["errors"] == [] or (rep["status"] == "timeout" and rep["errors"] == [
            "the run's deadline of 3000 ms passed"]), (t, rep["errors"])
        assert rep["transport"] == t, (t, rep["transport"])
        reports[t] = rep
        assert left_in(c) == ([], {}), f"{t}: the run was not reclaimed, or left a process"
    check(reports["files"])
    agree(reports, fields)
    # relay: this backend's exec takes an input, so each answer rides on the stdin of the
    # relay that waits for the next request: one exec a call, nothing written but the
    # program and the shim (this backend does not declare MAFH_CAP_LAUNCH_STDIN). wait: an
    # exec to find a request and an archive write to answer. stream: the writes, the launch,
    # serve and the stop, which brings the output back and reclaims; nothing read.
    if case == "sequential calls and a refusal":
        assert reports["relay"]["ops"]["write"] == 2, reports["relay"]["ops"]
        assert reports["wait"]["ops"]["write"] == 2 + 7, reports["wait"]["ops"]
        assert reports["stream"]["ops"] == {"exec": 3, "read": 0, "write": 2, "stat": 0,
                                            "wait": 0}, reports["stream"]["ops"]


@pytest.mark.parametrize("kill_at", [1, 3])
def test_a_stream_killed_mid_call_over_docker_falls_back(containers, tmp_path, kill_at):
    # The tool kills `maf-launch serve` in the container (from this machine's /proc) on its
    # kill_at-th call, before it answers: relay carries that answer, each call made once.
    c = containers("python-noshell")
    count = tmp_path / "count"
    proc, rep = host_run("--backend", f"docker:{c.name}", "--transport", "stream", "--tool",
                         "count=" + host_tool("tool_count.py", count, kill_at),
                         PROGRAMS / "count_calls.py", "--", 6)
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 0, rep
    assert output_lines(rep)[:6] == [{"value": {"i": i, "n": i + 1}} for i in range(6)]
    assert count.read_text() == "call\n" * 6
    assert rep["calls"] == 6 and rep["transport"] == "relay"
    assert len(rep["errors"]) == 1 and "serve broke" in rep["errors"][0], rep["errors"]
    assert left_in(c) == ([], {}), "the run was not reclaimed, or left a process"
