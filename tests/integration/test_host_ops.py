"""The round-trip budget: with 20 ms of simulated latency per backend operation, a
100-call program costs at most 2.2 backend operations per call, everything counted
(launch, polling, reads, writes, the exit marker, stop and reclaim). A bound on operation
counts, not on time."""
import pytest

from conftest import host_run, output_lines


@pytest.mark.parametrize("transport", ["auto", "files"])
def test_ops_per_call_at_20ms(host, transport):
    proc, rep = host_run("many_calls.py", "--simulate-latency-ms", "20", "--transport",
                         transport, "--max-calls", "100", "--timeout", "240",
                         "--tool", "echo=cat", args=[100], timeout=300)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    assert rep["calls"] == 100
    total = sum(rep["ops"][k] for k in ("exec", "read", "write", "stat"))
    per_call = total / rep["calls"]
    print(f"{transport}: {rep['ops']} -> {per_call:.2f} ops per call, "
          f"{output_lines(rep)[-1]['ms_per_call']:.1f} ms per call")
    assert per_call <= 2.2, rep["ops"]
