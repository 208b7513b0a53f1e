"""Everything the guest writes is hostile: each bad request gets a refusal or a clear run
error; the host never crashes, hangs or grows without bound, and never writes outside R."""
import os

import pytest

from conftest import host_run, output_lines

ECHO = ["--tool", "echo=cat", "--param", "echo:x:integer?",
        "--param", "echo:s:string?", "--param", "echo:n:integer?", "--param", "echo:pad:string?", "--max-calls", "64",
        "--timeout", "90"]


def outcomes(rep):
    return {o["label"]: o for o in output_lines(rep) if "label" in o}


def check_refused_or_error(proc, rep, labels):
    """Either the run went on (each hostile request refused, the next call served), or it
    ended with a clear error. Never a crash (a signal) nor a report that is not JSON."""
    assert proc.returncode >= 0, proc
    assert rep is not None, (proc.stdout[:2000], proc.stderr)
    out = outcomes(rep)
    if rep["status"] == "error":
        assert rep["error"], rep
        return out
    assert rep["status"] == "exited", rep
    for label in labels:
        assert out[label]["outcome"] == "refusal", (label, out)
    assert out["after"]["outcome"] == "value", out
    assert "end" in out
    return out


def test_malformed_requests(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["malformed"], timeout=120)
    out = check_refused_or_error(proc, rep, ["malformed", "not utf-8", "deep",
                                             "not utf-8 in an argument"])
    # Refused before the tool runs, in the library's words (the same from Python).
    assert out["not utf-8 in an argument"]["detail"] == "the request is not valid UTF-8"
    assert rep["calls"] == 5 and rep["refusals"] == 4, rep


def test_50_mb_request(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["big"], timeout=120)
    out = check_refused_or_error(proc, rep, ["50 MB"])
    if rep["status"] == "exited":
        assert "large" in out["50 MB"]["detail"] or "bytes" in out["50 MB"]["detail"], out


def test_wrong_types(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["wrong-types"], timeout=120)
    check_refused_or_error(proc, rep, ["array", "null", "name not a string",
                                       "arguments a list", "arguments a string",
                                       "id of another call", "no name", "huge name"])


@pytest.mark.parametrize("mode", ["symlink", "directory", "fifo"])
def test_request_that_is_not_a_regular_file(host, mode):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=[mode], timeout=120)
    check_refused_or_error(proc, rep, [mode])


def test_repeated_ids(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["repeated"], timeout=120)
    assert rep is not None and proc.returncode >= 0, proc
    out = outcomes(rep)
    if rep["status"] == "error":
        assert rep["error"]
        return
    assert out["first"]["detail"] == {"x": 1}
    # A request rewritten under an id already answered is not served again.
    assert out["same id again"]["detail"] == {"x": 1}
    assert out["earlier id in a later file"]["outcome"] == "refusal"
    assert out["after"]["outcome"] == "value"


def test_planted_response_symlink_is_not_followed(host, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("original")
    before = os.stat(outside)
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["planted", outside], timeout=120)
    assert rep is not None and proc.returncode >= 0, proc
    assert outside.read_text() == "original"
    after = os.stat(outside)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == \
        (before.st_mtime_ns, before.st_size, before.st_ino)
    out = outcomes(rep)
    if rep["status"] == "exited":
        assert out["planted"]["outcome"] in ("value", "refusal"), out
        assert out["after"]["outcome"] == "value"
    else:
        assert rep["error"]
