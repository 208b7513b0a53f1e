"""The programs of tests/integration/transport_cases.py served over Docker, in a
python-noshell container, by each transport: files (archive reads and writes), wait
(`maf-launch wait` over exec, the answers by archive write) and relay (`maf-launch relay`,
one exec a call). Every transport gives the same results, and leaves no run directory and
no process behind."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from test_host_over_docker import host_run, left_in  # noqa: E402
from transport_cases import CASES, PROGRAMS, TRANSPORTS, agree  # noqa: E402


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_transport_serves_alike_over_docker(containers, case):
    program, opts, args, fields, check = CASES[case]
    c = containers("python-noshell")
    reports = {}
    for t in TRANSPORTS:
        proc, rep = host_run("--backend", f"docker:{c.name}", "--transport", t, *opts,
                             PROGRAMS / program, "--", *args)
        assert rep is not None, (t, proc.returncode, proc.stderr)
        # A timeout's one error is its cause.
        assert rep["errors"] == ([] if rep["status"] != "timeout" else
                                 ["the run's deadline of 3000 ms passed"]), (t, rep["errors"])
        reports[t] = rep
        assert left_in(c) == ([], {}), f"{t}: the run was not reclaimed, or left a process"
    check(reports["files"])
    agree(reports, fields)
    # relay: one exec a call, and nothing written but the program and the shim where every
    # answer fits in an argument.
    if case == "sequential calls and a refusal":
        assert reports["relay"]["ops"]["write"] == 2, reports["relay"]["ops"]
        assert reports["wait"]["ops"]["write"] == 2 + 7, reports["wait"]["ops"]
