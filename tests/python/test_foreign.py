"""mafhost over a sandbox object that knows nothing of it (foreign.py): the surface alone,
so the relay transport (no stream); and a backend whose exec raises."""
import os

import pytest

import mafhost
import programs
from programs import aadd, add
from conftest import LAUNCHER, alive, arun
from foreign import ExecRaises, PlainLocalSandbox, PlainLocalSandboxWithInput, ReadsGarbage


PROG = '''
from maf_host_tools import call
print(call("add", a=1, b=2), call("aadd", a=3, b=4))
'''


def test_a_foreign_sandbox_object_serves_sync_and_async_tools(run_base):
    sb = PlainLocalSandbox()
    run_dir = str(run_base / "foreign-1")
    r = arun(mafhost.run(sb, PROG, tools=[add, aadd], timeout=30, launcher=str(LAUNCHER),
                         run_dir=run_dir))
    assert r.output == "3 7\n" and r.calls == 2 and r.exit_code == 0
    assert r.transport == "relay"  # exec blocks, but there is no stream
    assert set(sb.calls) <= {"exec", "write_file", "read_file", "stat_file"}
    assert r.backend_operations == {k: sb.calls.count(k) for k in set(sb.calls)}
    assert not os.path.exists(run_dir)


def test_relay_writes_each_answer_first_or_gives_it_on_exec_input(run_base):
    # The surface alone: each answer a write_file, then the relay's exec. With exec_input:
    # the program and the shim on the launch's stdin, the answer on the relay's stdin, one
    # exec a call, and nothing written.
    for sb, name in ((PlainLocalSandbox(), "plain"), (PlainLocalSandboxWithInput(), "input")):
        r = arun(mafhost.run(sb, programs.calls(5), tools=[add], timeout=30,
                             launcher=str(LAUNCHER), run_dir=str(run_base / f"relay-{name}")))
        assert r.output == f"total {programs.total(5)}\n" and r.calls == 5
        assert r.transport == "relay"
        ops = r.backend_operations
        assert ops == {k: sb.calls.count(k) for k in set(sb.calls)}
        if name == "plain":
            assert ops["write_file"] == 2 + 5 and "exec_input" not in ops, ops
        else:
            assert "write_file" not in ops and ops["exec_input"] == 1 + 5, ops


@pytest.mark.parametrize("transport", ["files", "wait", "relay"])
def test_a_foreign_sandbox_object_with_each_transport(run_base, transport):
    sb = PlainLocalSandbox()
    r = arun(mafhost.run(sb, programs.calls(4), tools=[add], timeout=30, transport=transport,
                         launcher=str(LAUNCHER), run_dir=str(run_base / f"foreign-{transport}")))
    assert r.output == f"total {programs.total(4)}\n" and r.calls == 4
    with pytest.raises(mafhost.ConfigError, match="STREAM.*PlainLocalSandbox has no open_stream"):
        arun(mafhost.run(sb, "", transport="stream", launcher=str(LAUNCHER),
                         run_dir=str(run_base / "never")))


def test_a_run_directory_is_named_for_a_foreign_sandbox_when_none_is_given():
    sb = PlainLocalSandbox()
    r = arun(mafhost.run(sb, "print('hi')", timeout=30, launcher=str(LAUNCHER)))
    assert r.output == "hi\n" and r.run_dir.startswith("/tmp/mafhost-")
    assert not os.path.exists(r.run_dir)


def test_a_backend_whose_exec_raises_raises_backend_error(run_base):
    sb = ExecRaises()
    run_dir = run_base / "raises"
    events = []
    with pytest.raises(mafhost.BackendError) as ei:
        arun(mafhost.run(sb, PROG, tools=[add, aadd], timeout=30, launcher=str(LAUNCHER),
                         run_dir=str(run_dir), on_event=events.append))
    assert "control plane went away" in str(ei.value)
    r = ei.value.result
    assert r.status == "error" and r.calls == 0
    assert any(e.kind == "error" and "control plane" in e.message for e in events)
    assert events[-1].kind == "run_ended"
    # Nothing could be reclaimed without exec: what the host wrote is there, named.
    assert (run_dir / "host_tools" / "program.py").exists()
    import shutil
    shutil.rmtree(run_dir)


def test_an_object_without_the_surface_is_refused():
    class Half:
        async def exec(self, command, *, working_directory, timeout):
            raise AssertionError("never called")
    with pytest.raises(mafhost.ConfigError, match="write_file"):
        arun(mafhost.run(Half(), "print(1)"))


def test_a_program_already_in_a_foreign_sandbox():
    # No program is written, so the run directory is made by writing a file in it, which
    # the reclaim removes with the rest.
    sb = PlainLocalSandbox()
    r = arun(mafhost.run(sb, argv=["python3", "-c", "print('in place')"], timeout=30,
                         launcher=str(LAUNCHER)))
    assert (r.output, r.exit_code) == ("in place\n", 0)
    assert not os.path.exists(r.run_dir)


def test_a_backend_that_answers_garbage_ends_the_run_and_its_program(run_base):
    events = []
    prog = "from maf_host_tools import call\nimport time\ncall('add', a=1, b=2)\ntime.sleep(60)\n"
    with pytest.raises(mafhost.RunError) as ei:
        arun(mafhost.run(ReadsGarbage(), prog, tools=[add], timeout=60, transport="files",
                         launcher=str(LAUNCHER), run_dir=str(run_base / "garbage"),
                         on_event=events.append))
    r = ei.value.result
    assert "read_file returned int, not bytes" in " ".join(r.errors), r.errors
    pid = next(e.pid for e in events if e.kind == "run_started")
    assert not alive(pid)  # the program was stopped
    assert not os.path.exists(r.run_dir)       # and its run directory reclaimed
