"""The round-trip budget: with 20 ms of simulated latency per backend operation, a
100-call program costs, everything counted (launch, polling, reads, writes, the exit marker,
stop and reclaim), at most 2.2 backend operations per call over files and wait, 1.1 over
relay, and over the stream (auto) the run's few operations whatever its calls. A bound on
operation counts, not on time."""
import pytest

from conftest import host_run, output_lines


@pytest.mark.parametrize("transport,bound", [("auto", 0.1), ("relay", 1.1), ("wait", 2.2),
                                             ("files", 2.2)])
def test_ops_per_call_at_20ms(host, transport, bound):
    proc, rep = host_run("many_calls.py", "--simulate-latency-ms", "20", "--transport",
                         transport, "--max-calls", "100", "--timeout", "240",
                         "--tool", "echo=cat", args=[100], timeout=300)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    assert rep["calls"] == 100
    total = sum(rep["ops"][k] for k in ("exec", "read", "write", "stat"))
    per_call = total / rep["calls"]
    print(f"{transport}: {rep['ops']} -> {per_call:.2f} ops per call, "
          f"{output_lines(rep)[-1]['ms_per_call']:.1f} ms per call")
    assert per_call <= bound, rep["ops"]
    assert rep["transport"] == ("stream" if transport == "auto" else transport)
