"""libmafhost serves an unmodified maf-sandbox guest: a program that writes the legacy
request files itself, exactly as upstream's shim does (programs/legacy_calls.py, written
from shared/PROTOCOL.md, not from our shim)."""
from conftest import host_run, output_lines

ECHO = ["--tool", "echo=cat", "--param", "echo:x:integer?",
        "--param", "echo:s:string?", "--param", "echo:n:integer?", "--param", "echo:pad:string?"]


def by_label(rep):
    return {o["label"]: o for o in output_lines(rep)}


def test_legacy_guest_is_served(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["basic"], timeout=90)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    out = by_label(rep)
    assert out["echo"]["outcome"] == "value"
    assert out["echo"]["detail"] == {"x": 1, "s": "h\u00e9llo"}
    assert out["unknown tool"]["outcome"] == "refusal"
    assert out["bad arguments"]["outcome"] == "refusal"
    # The abandoned request is stepped over, and the next one served.
    assert out["after abandoned"] == {"label": "after abandoned", "outcome": "value",
                                      "detail": {"x": 2}}
    assert "end" in out


def test_ids_out_of_order_are_served_in_order(host):
    proc, rep = host_run("legacy_calls.py", *ECHO, args=["out-of-order"], timeout=90)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    out = by_label(rep)
    assert out["second answered before first"]["outcome"] is False
    assert out["first"]["detail"] == {"n": 1}
    assert out["second"]["detail"] == {"n": 2}


def test_the_local_backend_answers_in_the_request_file(host):
    # Nobody reads a request once it is answered, so libmafhost's local backend writes the
    # response into it and renames it (no new file); a request file with a second name is
    # left alone and the response gets a file of its own.
    proc, rep = host_run("legacy_calls.py", *ECHO, "--transport", "files", args=["reuse"],
                         timeout=90)
    assert proc.returncode == 0, (proc.stderr, rep and rep["output"])
    out = by_label(rep)
    assert out["one link"] == {"label": "one link", "outcome": "value", "detail": {
        "same file": True, "request still there": False, "answer": True}}
    assert out["two links"] == {"label": "two links", "outcome": "value", "detail": {
        "same file": False, "request still there": True, "answer": True,
        "other name kept the request": True}}
