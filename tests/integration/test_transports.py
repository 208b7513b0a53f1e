"""The same programs served over each transport on the local backend give the same results
(tests/integration/transport_cases.py): files (reads, woken by the backend), wait
(`maf-launch wait`: an exec finds each request, a write answers it) and relay (`maf-launch
relay`: one exec answers a call and finds the next). Where a transport's count of backend
operations is its point, it is checked too."""
import pytest

from conftest import host_run
from transport_cases import CASES, TRANSPORTS, agree


def run_all(case):
    program, opts, args, fields, check = CASES[case]
    reports = {}
    for t in TRANSPORTS:
        proc, rep = host_run(program, "--transport", t, *opts, args=args)
        assert rep is not None, (t, proc.returncode, proc.stderr)
        reports[t] = rep
    check(reports["files"])
    agree(reports, fields)
    return reports


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_transport_serves_alike(host, case):
    run_all(case)


def test_relay_makes_one_exec_a_call_and_writes_nothing(host):
    reps = run_all("sequential calls and a refusal")
    # The launch, one relay per call and one for the exit (and a last look, maybe), stop
    # and reclaim; the program and the shim the only writes. wait writes every answer.
    assert reps["relay"]["ops"]["write"] == 2, reps["relay"]["ops"]
    assert reps["relay"]["ops"]["exec"] <= 1 + 7 + 2 + 2, reps["relay"]["ops"]
    assert reps["wait"]["ops"]["write"] == 2 + 7, reps["wait"]["ops"]


def test_relay_writes_first_an_answer_too_large_to_carry(host):
    reps = run_all("answers over 64 KiB")
    # 180,012 bytes go by a write; 12 and 45,012 ride in the relay's argv.
    assert reps["relay"]["ops"]["write"] == 2 + 1, reps["relay"]["ops"]
