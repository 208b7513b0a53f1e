"""mafhost over the local backend: tools plain and async, refusals, events and logs, the
typed exceptions, cancellation."""
import asyncio
import logging
import os

import pytest

import mafhost
import programs
from programs import add
from conftest import LAUNCHER, alive, arun


async def slow_echo(text: str) -> dict:
    await asyncio.sleep(0.01)
    return {"text": text}


def boom():
    raise RuntimeError("the disk is on fire")


def refuse():
    raise mafhost.Refusal("not for you")


def big():
    return "x" * 4096


class Opaque:
    pass


def not_json():
    return Opaque()


TOOLS = [add, slow_echo, boom, refuse, big, not_json]
LIMITS = mafhost.Limits(max_response_bytes=1024)


def test_sync_and_async_tools_served_on_the_local_backend(local):
    r = arun(mafhost.run(local, programs.calls(5), tools=[add], timeout=30))
    assert r.status == "exited" and r.exit_code == 0 and r.ok
    assert r.output == f"total {programs.total(5)}\n"
    assert (r.calls, r.refusals, r.undelivered) == (5, 0, 0)
    assert r.transport == "stream"  # the local backend has a stream
    assert r.record is not None and r.record.status == "exited" and r.record.calls == 5
    assert r.identity == "own" and r.verified  # run as root: an identity of its own
    assert r.backend_operations["open_stream"] == 1
    assert not os.path.exists(r.run_dir)


def test_every_kind_of_refusal_is_a_sentence_and_the_host_goes_on(local):
    events = []
    r = arun(mafhost.run(local, programs.MIXED, tools=TOOLS, limits=LIMITS, timeout=30,
                         on_event=events.append))
    lines = r.output.splitlines()
    assert lines[0] == "sync 42"
    assert lines[1] == "async {'text': 'hé'}"
    assert lines[2] == "boom refused: the host tool 'boom' failed: the disk is on fire"
    assert lines[3] == "refuse refused: not for you"
    assert lines[4].startswith("add refused: ") and "'a'" in lines[4], lines[4]
    assert lines[5].startswith("nope refused: ") and "nope" in lines[5], lines[5]
    assert lines[6].startswith("big refused: ") and "1024" in lines[6], lines[6]
    assert lines[7] == "not_json refused: the host tool 'not_json' gave an answer that is " \
        "not JSON"
    assert r.exit_code == 0 and r.calls == 8 and r.refusals == 6
    refused = {e.tool: e for e in events if e.kind == "call_refused"}
    # The operator sees the tool's traceback; the program saw only the sentence.
    assert "RuntimeError: the disk is on fire" in refused["boom"].detail
    assert 'in boom' in refused["boom"].detail and "_tools.py" not in refused["boom"].detail
    assert "Opaque" in refused["not_json"].detail
    served = [e for e in events if e.kind == "call_served"]
    assert [e.tool for e in served] == ["add", "slow_echo"]
    assert all(e.duration_ms >= 0 and e.call_id for e in served)
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended"
    assert events[-1].status == "exited" and events[-1].exit_code == 0


def test_declared_parameters_from_the_signature_and_explicit(local):
    prog = '''
from maf_host_tools import call, HostToolError
for kw in [{"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}, {"a": 1.5, "b": 1}]:
    try:
        print(call("add", **kw))
    except HostToolError as e:
        print("refused", e)
print(call("greet", name="ann"))
print(call("greet", name="bob", polite=True))
'''

    def greet(name, polite=False):
        return ("Dear " if polite else "Hi ") + name
    tools = [add, mafhost.Tool(greet, params={"name": "string",
                                              "polite": mafhost.Param("boolean", False)})]
    r = arun(mafhost.run(local, prog, tools=tools, timeout=30))
    lines = r.output.splitlines()
    assert lines[0].startswith("refused") and "'b'" in lines[0]
    assert lines[1] == "3"
    assert lines[2].startswith("refused") and "'c'" in lines[2]
    assert lines[3].startswith("refused") and "integer" in lines[3]
    assert lines[4:] == ["Hi ann", "Dear bob"]


def test_a_spent_budget_is_refused_and_the_program_goes_on(local):
    prog = '''
from maf_host_tools import call, HostToolError
for i in range(5):
    try:
        print(call("add", a=i, b=0))
    except HostToolError as e:
        print("refused", e)
'''
    r = arun(mafhost.run(local, prog, tools=[add], limits=mafhost.Limits(max_calls=3),
                         timeout=30))
    lines = r.output.splitlines()
    assert lines[:3] == ["0", "1", "2"]
    assert all(line.startswith("refused") for line in lines[3:]) and len(lines) == 5
    assert r.exit_code == 0


@pytest.mark.parametrize("transport", ["files", "wait", "relay", "stream"])
def test_every_transport_serves_the_calls(local, transport):
    r = arun(mafhost.run(local, programs.calls(6), tools=[add], transport=transport,
                         timeout=30))
    assert r.transport == transport
    assert r.output == f"total {programs.total(6)}\n" and r.calls == 6


def test_a_run_past_its_deadline_raises_run_timeout_with_its_result(local):
    prog = "import time\nprint('begun', flush=True)\ntime.sleep(60)\n"
    with pytest.raises(mafhost.RunTimeout) as ei:
        arun(mafhost.run(local, prog, timeout=1.5))
    r = ei.value.result
    assert r.status == "timeout" and r.exit_code == 143  # SIGTERM at the deadline
    assert r.output == "begun\n"
    assert "deadline" in str(ei.value) or "timeout" in str(ei.value).lower()
    assert not os.path.exists(r.run_dir)
    r = arun(mafhost.run(local, prog, timeout=1.0, check=False))
    assert r.status == "timeout"


def test_a_program_that_cannot_start_raises_launch_failed(local):
    with pytest.raises(mafhost.LaunchFailed) as ei:
        arun(mafhost.run(local, argv=["/nonexistent/program"], timeout=10))
    assert ei.value.result.status == "launch_failed"
    assert ei.value.result.exit_code == 127
    assert "/nonexistent/program" in str(ei.value)


def test_a_launcher_that_is_not_there_raises_launch_failed(run_base):
    sb = mafhost.LocalSandbox(launcher_path="/nonexistent/maf-launch", tmpdir=str(run_base))
    with pytest.raises(mafhost.RunError) as ei:
        arun(mafhost.run(sb, programs.calls(1), tools=[add], timeout=10))
    assert "/nonexistent/maf-launch" in str(ei.value)
    assert ei.value.result.status in ("launch_failed", "error")
    # What the host wrote is left behind only if the reclaim could not run (no launcher):
    # the run directory is named, so the operator can remove it.
    import shutil
    shutil.rmtree(ei.value.result.run_dir, ignore_errors=True)


def test_a_launcher_that_hangs_is_cut_off_at_exec_timeout(run_base, tmp_path):
    # A launcher that never returns: its `run` is bounded by exec_timeout, not only by the
    # run's deadline, and so are the stop and reclaim the ending tries with it.
    hang = tmp_path / "maf-launch"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    sb = mafhost.LocalSandbox(launcher_path=str(hang), tmpdir=str(run_base))
    with pytest.raises(mafhost.BackendError) as ei:
        arun(mafhost.run(sb, programs.calls(1), tools=[add], timeout=300, exec_timeout=1))
    assert ei.value.result.status == "error"
    assert "maf-launch run did not return in time" in str(ei.value)
    import shutil
    shutil.rmtree(ei.value.result.run_dir, ignore_errors=True)
    with pytest.raises(mafhost.ConfigError, match="exec_timeout"):
        arun(mafhost.run(sb, "", exec_timeout=0))
    for bad in (0, 5.9, 3601):
        with pytest.raises(mafhost.ConfigError, match="ending_timeout must be 6 to 3600"):
            arun(mafhost.run(sb, "", ending_timeout=bad))


def test_a_slow_stop_keeps_the_output_within_a_raised_ending_timeout(run_base, tmp_path):
    # A launcher whose stop takes 5 s, as an engine's exec may under load: the ending's
    # smallest budget (6 s) gives stop at most 4.4 s, and cuts it; raised to 20 s,
    # stop returns within its share and the run keeps its output, its record and its
    # directory's reclaim.
    slow = tmp_path / "maf-launch"
    slow.write_text(f'#!/bin/sh\n[ "$1" = stop ] && sleep 5\nexec {LAUNCHER} "$@"\n')
    slow.chmod(0o755)
    sb = mafhost.LocalSandbox(launcher_path=str(slow), tmpdir=str(run_base))
    r = arun(mafhost.run(sb, programs.calls(2), tools=[add], timeout=60, ending_timeout=6,
                         check=False))
    assert r.exit_code == 0 and r.calls == 2
    assert any("maf-launch stop did not return within" in e for e in r.errors), r.errors
    if os.path.exists(r.run_dir):
        import shutil
        shutil.rmtree(r.run_dir, ignore_errors=True)
    r = arun(mafhost.run(sb, programs.calls(2), tools=[add], timeout=60, ending_timeout=20))
    assert (r.status, r.exit_code, r.calls) == ("exited", 0, 2) and r.verified
    assert r.output == f"total {programs.total(2)}\n" and not r.errors
    assert not os.path.exists(r.run_dir)


def test_signals_and_exit_codes_are_results_not_exceptions(local):
    r = arun(mafhost.run(local, "import sys\nsys.exit(7)\n", timeout=10))
    assert (r.status, r.exit_code, r.ok) == ("exited", 7, False)
    r = arun(mafhost.run(local, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                         timeout=10))
    assert (r.status, r.exit_code) == ("signaled", 137)


def test_cancelling_the_task_stops_the_program_and_reclaims_its_run_directory(local):
    seen = []

    async def main():
        started = asyncio.Event()

        def on_event(e):
            seen.append(e)
            if e.kind == "run_started":
                started.set()
        task = asyncio.ensure_future(mafhost.run(
            local, "import time\ntime.sleep(60)\n", timeout=60, on_event=on_event))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    arun(main())
    pid = next(e.pid for e in seen if e.kind == "run_started")
    assert seen[-1].kind == "run_ended" and seen[-1].status == "stopped"
    assert not alive(pid)
    assert not os.path.exists(seen[0].run_dir)


def test_progress_goes_to_logging(local, caplog):
    caplog.set_level(logging.DEBUG, logger="mafhost")
    arun(mafhost.run(local, programs.MIXED, tools=TOOLS, limits=LIMITS, timeout=30))
    text = caplog.text
    assert "started, pid" in text
    assert "call 1 add served in" in text
    assert "call 3 boom refused in" in text and "the disk is on fire" in text
    assert "ended, exited, exit code 0" in text
    levels = {r.levelname for r in caplog.records if "refused" in r.getMessage()}
    assert levels == {"INFO"}


def test_an_event_callback_that_raises_does_not_stop_the_run(local, caplog):
    def bad(_ev):
        raise ValueError("callback bug")
    r = arun(mafhost.run(local, programs.calls(3), tools=[add], timeout=30, on_event=bad))
    assert r.output == f"total {programs.total(3)}\n"
    assert "callback bug" in caplog.text


def test_an_async_event_callback_is_awaited(local):
    got = []

    async def on_event(ev):
        await asyncio.sleep(0)
        got.append(ev.kind)
    arun(mafhost.run(local, programs.calls(2), tools=[add], timeout=30, on_event=on_event))
    assert got.count("call_served") == 2 and got[-1] == "run_ended"


def test_bad_tools_and_options_are_refused_before_anything_runs(local):
    with pytest.raises(mafhost.ConfigError, match="two tools are named 'add'"):
        arun(mafhost.run(local, "", tools=[add, add]))
    with pytest.raises(mafhost.ConfigError, match="name"):
        arun(mafhost.run(local, "", tools=[mafhost.Tool(add, name="a b")]))
    with pytest.raises(mafhost.ConfigError, match="unknown type 'text'"):
        arun(mafhost.run(local, "", tools=[mafhost.Tool(add, params={"a": "text"})]))
    with pytest.raises(mafhost.ConfigError, match="transport"):
        arun(mafhost.run(local, "", transport="pigeon"))
    with pytest.raises(mafhost.ConfigError, match="timeout"):
        arun(mafhost.run(local, "", timeout=0))
    with pytest.raises(mafhost.ConfigError, match="program"):
        arun(mafhost.run(local))
    with pytest.raises(mafhost.ConfigError, match="max_calls|calls"):
        arun(mafhost.run(local, "", limits=mafhost.Limits(max_calls=-1)))
    with pytest.raises(mafhost.ConfigError, match="cannot declare a JSON type"):
        mafhost.Tool(lambda x: x, name="t").__class__(lambda x: x, name="t") and \
            mafhost.Tool(_typed_oddly)


def _typed_oddly(x: complex):
    return x


def test_the_launcher_is_found_through_the_environment(run_base, monkeypatch):
    monkeypatch.setenv("MAFHOST_LAUNCHER", str(LAUNCHER))
    sb = mafhost.LocalSandbox(tmpdir=str(run_base))
    assert sb.launcher_path == str(LAUNCHER)
    r = arun(mafhost.run(sb, programs.calls(1), tools=[add], timeout=30))
    assert r.calls == 1


def test_a_program_already_in_the_sandbox_calls_through_the_launcher(local):
    # No program written, no shim: the program calls with `maf-launch call`, as one in any
    # language would.
    prog = ("import subprocess, sys\n"
            "out = subprocess.run([sys.argv[1], 'call', 'add', '{\"a\": 2, \"b\": 3}'],"
            " capture_output=True, text=True)\n"
            "print(out.stdout.strip(), out.returncode)\n")
    r = arun(mafhost.run(local, argv=["python3", "-c", prog, str(LAUNCHER)], tools=[add],
                         timeout=30))
    assert (r.output, r.calls, r.exit_code) == ("5 0\n", 1, 0)


@pytest.mark.parametrize("transport", ["stream", "relay", "files"])
def test_a_supervisor_killed_from_outside_raises_run_lost(local, transport):
    import signal

    def on_event(e):
        if e.kind == "run_started":
            os.kill(e.supervisor_pid, signal.SIGKILL)
    prog = "import time\nprint('begun', flush=True)\ntime.sleep(60)\n"
    with pytest.raises(mafhost.RunLost) as ei:
        arun(mafhost.run(local, prog, timeout=30, transport=transport, on_event=on_event))
    r = ei.value.result
    assert r.status == "lost" and r.record is None
    assert "supervisor" in str(ei.value), str(ei.value)
    assert not alive(r.pid)  # what was left of the run is killed
    assert not os.path.exists(r.run_dir)


def test_tools_given_as_a_mapping_take_its_names():
    from mafhost._tools import as_tools
    t = mafhost.Tool(add, description="sums", inline=True)
    got = as_tools({"plus": t, "add": t, "also": lambda x: x})
    assert [g.name for g in got] == ["plus", "add", "also"]
    assert got[1] is t
    assert (got[0].fn, got[0].description, got[0].params, got[0].inline) == \
        (add, "sums", t.params, True)
    assert list(got[2].params) == ["x"]


def test_a_request_that_is_not_utf8_is_refused_before_any_tool_runs(local):
    ran = []

    def echo(s: str) -> str:
        ran.append(s)
        return s

    program = (
        "import json, os, time, maf_host_tools as m\n"
        "d = m.CALLS_DIR\nos.makedirs(d, exist_ok=True)\n"
        "open(os.path.join(d, '0001.claim'), 'w').close()\n"
        "with open(os.path.join(d, '0001.request.json.part'), 'wb') as f:\n"
        "    f.write(b'{\"id\": \"0001\", \"name\": \"echo\", \"arguments\": {\"s\": \"\\xff\\xfe\"}}')\n"
        "os.replace(os.path.join(d, '0001.request.json.part'), "
        "os.path.join(d, '0001.request.json'))\n"
        "p = os.path.join(d, '0001.response.json')\n"
        "while not os.path.exists(p):\n    time.sleep(0.01)\n"
        "print(json.load(open(p)))\n"
        "print(m.echo(s='ok'))\n")
    r = arun(mafhost.run(local, program, tools=[echo], timeout=30, transport="files"))
    assert r.output.splitlines() == ["{'refusal': 'the request is not valid UTF-8'}", "ok"], r
    assert ran == ["ok"]


def test_a_forged_exit_event_does_not_set_the_verdict(run_base, tmp_path):
    # A launcher whose serve claims the program exited 0 at once; the rest is maf-launch's.
    forger = tmp_path / "maf-launch"
    forger.write_text("#!/bin/sh\nif [ \"$1\" = serve ]; then\n"
                      "  printf '{\"event\":\"exit\",\"size\":1}\\n0'\n  exec cat >/dev/null\n"
                      f"fi\nexec {LAUNCHER} \"$@\"\n")
    forger.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    sandbox = mafhost.LocalSandbox(launcher_path=str(forger), tmpdir=str(run_base))
    r = arun(mafhost.run(sandbox, "import time\ntime.sleep(30)\n", timeout=60,
                         transport="stream", check=False))
    assert r.status == "stopped" and r.exit_code != 0, r
    assert not r.verified
    assert any("the record is taken" in e for e in r.errors), r.errors
