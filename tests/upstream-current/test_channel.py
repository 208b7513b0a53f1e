"""maf-launch's program channel (mafhost.maf_sandbox.MafLaunchChannel) held to maf-sandbox's
own conformance helper, assert_program_channel_conformance, on this machine as root and on
maf-sandbox-docker's own sandbox from maf-launch/python-noshell (no shell), acquired through
with_maf_launch; and what a run returns and records, beside maf-sandbox's own answers."""
import asyncio
import os
import shutil
import subprocess

import pytest

from maf_sandbox import (Capability, HostToolRegistry, HostToolRun, ProgramRequirements,
                         SandboxObserver, SandboxProgramTimeout, SandboxSpec,
                         sandbox_tool)
from maf_sandbox.conformance import assert_program_channel_conformance

import mafhost
import mafhost.maf_sandbox as adopted
from mafhost.maf_sandbox import MafLaunchChannel, with_maf_launch
from local_sandbox import LocalSandbox

from conftest import BUILD, on_acquired

LAUNCHER = str(BUILD / "maf-launch")
IMAGE = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch") + "/python-noshell"


def run(coro):
    return asyncio.run(coro)


def test_the_installed_line_is_the_current_one():
    assert adopted.LINE == "current"
    assert not hasattr(adopted, "dispatch_over_exec")


def test_conformance_on_this_machine(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")
    channel = MafLaunchChannel(launcher=LAUNCHER)
    run(assert_program_channel_conformance(sandbox, channel, guest_call_path="calls/c",
                                           timeout=30))
    # Nothing of the runs is left but their work directories.
    for generation in ("0", "1"):
        assert sorted(os.listdir(tmp_path / "base" / "calls" / "c" / generation)) == ["work"]


class Recorder(SandboxObserver):
    def __init__(self):
        self.calls = []

    def host_tool_called(self, event):
        self.calls.append(event)


def registry_with_add(observer=None):
    @sandbox_tool(source=None, sink=None, identity=None)
    def add(left: int, right: int) -> int:
        return left + right

    registry = HostToolRegistry(observer=observer)
    registry.register(add)
    return registry


PROGRAM = """
from maf_host_tools import HostToolError, call, add
print("sum", add(left=40, right=2))
try:
    call("unknown")
except HostToolError as e:
    print("refused", e)
raise SystemExit(3)
"""


def test_a_run_returns_and_records_as_the_exec_channel_does(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")
    channel = MafLaunchChannel(launcher=LAUNCHER)
    recorder = Recorder()
    policy = HostToolRun(registry_with_add(recorder))

    async def go():
        await channel.prepare(sandbox, ProgramRequirements())
        return await channel.run(sandbox, PROGRAM, requirements=ProgramRequirements(),
                                 guest_call_path="calls/r", timeout=30, policy=policy)

    result = run(go())
    assert result.exit_code == 3
    assert result.stdout.splitlines() == [
        "sum 42", "refused Error: 'unknown' is not a registered host tool"]
    assert result.producer_owns_stderr and result.stderr == ""
    assert [(c.tool, c.outcome, c.host_started, c.host_completed) for c in recorder.calls] \
        == [("add", "delivered", True, True), (None, "refused", False, False)]
    # Revoked on the way out.
    with pytest.raises(RuntimeError):
        run(policy.call("add", {"left": 1, "right": 1}, publish=lambda r: None))


def test_the_policy_is_revoked_when_staging_fails(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")
    channel = MafLaunchChannel(launcher=LAUNCHER)
    policy = HostToolRun(registry_with_add())
    with pytest.raises(ValueError, match="byte limit"):
        run(channel.run(sandbox, "x" * 100, requirements=ProgramRequirements(
            max_program_bytes=10), guest_call_path="calls/s", timeout=30, policy=policy))
    with pytest.raises(RuntimeError, match="closed"):
        run(policy.call("add", {"left": 1, "right": 1}, publish=lambda r: None))


def test_the_runs_bound_is_a_sandbox_program_timeout(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")
    channel = MafLaunchChannel(launcher=LAUNCHER)
    policy = HostToolRun(registry_with_add())
    program = "import time\nprint('before', flush=True)\ntime.sleep(60)\n"
    with pytest.raises(SandboxProgramTimeout) as raised:
        run(channel.run(sandbox, program, requirements=ProgramRequirements(),
                        guest_call_path="calls/t", timeout=2, policy=policy))
    assert raised.value.signal == "sent" and raised.value.reach == "group"
    assert raised.value.output == "before\n"


def test_a_slow_stop_is_given_the_ending_the_channel_was_given(tmp_path, caplog):
    # A launcher whose stop takes 5 s, as an engine's exec may under load. With the
    # smallest ending (6 s), stop's share is cut and mafhost's log says so (the output is
    # still read here, from the file); with the ending raised (to 20 s, exec_timeout beside
    # it), stop returns within its share, and nothing is logged.
    slow = tmp_path / "maf-launch"
    slow.write_text(f'#!/bin/sh\n[ "$1" = stop ] && sleep 5\nexec {LAUNCHER} "$@"\n')
    slow.chmod(0o755)
    sandbox = LocalSandbox(tmp_path / "base")

    def go(channel, where):
        async def both():
            await channel.prepare(sandbox, ProgramRequirements())
            return await channel.run(sandbox, PROGRAM, requirements=ProgramRequirements(),
                                     guest_call_path=where, timeout=30,
                                     policy=HostToolRun(registry_with_add()))
        return run(both())

    def cut_stops():
        return [r for r in caplog.records if r.name == "mafhost" and
                "maf-launch stop did not return within" in r.getMessage()]

    go(MafLaunchChannel(launcher=str(slow), ending_timeout=6), "calls/cut")
    assert len(cut_stops()) == 1
    kept = go(MafLaunchChannel(launcher=str(slow), exec_timeout=60, ending_timeout=20),
              "calls/kept")
    assert len(cut_stops()) == 1
    assert kept.exit_code == 3 and kept.stderr == ""
    assert kept.stdout.splitlines() == [
        "sum 42", "refused Error: 'unknown' is not a registered host tool"]
    # The knobs are judged where the channel is made, and reach it through the wrapper.
    with pytest.raises(mafhost.ConfigError, match="ending_timeout must be 6 to 3600"):
        MafLaunchChannel(ending_timeout=5)
    with pytest.raises(mafhost.ConfigError, match="exec_timeout must be a positive"):
        MafLaunchChannel(exec_timeout=0)
    wrapped = with_maf_launch(LocalSandbox(tmp_path / "other"), exec_timeout=90,
                              ending_timeout=120)
    assert (wrapped.channel.exec_timeout, wrapped.channel.ending_timeout) == (90, 120)
    with pytest.raises(TypeError, match="the channel's"):
        with_maf_launch(LocalSandbox(tmp_path / "other"), MafLaunchChannel(),
                        ending_timeout=120)


def test_the_channel_declares_no_shell_and_no_response_files_on_the_stream():
    registry = registry_with_add()
    spec = SandboxSpec(kind="k", requires=frozenset({Capability.EXEC, Capability.HOST_TOOLS,
                                                     Capability.FILES_IN,
                                                     Capability.FILES_OUT}),
                       host_tools=registry.aggregate(), program=ProgramRequirements())
    on_stream = MafLaunchChannel(calls_on_stream=True).transfer_limits(spec)
    by_relay = MafLaunchChannel(calls_on_stream=False).transfer_limits(spec)
    assert on_stream.files_in.max_files == spec.files_in.max_files + 2
    assert by_relay.files_in.max_files > on_stream.files_in.max_files
    assert MafLaunchChannel().required_capabilities(spec) == {
        Capability.EXEC, Capability.FILES_IN, Capability.FILES_OUT}


@pytest.fixture(scope="module")
def engine():
    why = None
    if shutil.which("docker") is None:
        why = "there is no docker client here"
    elif subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        why = "the Docker engine is not reachable"
    elif subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        why = f"{IMAGE} is not built (make images)"
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
        pytest.skip(why)


async def on_docker(agent, channel, use):
    """use(backend, sandbox) on a sandbox maf-sandbox-docker 0.29 acquires from python-noshell
    through with_maf_launch (channel, or the wrapper's own), disposed of after."""
    from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

    backend = with_maf_launch(DockerSandboxBackend(DockerSandboxConfig()), channel)
    return await on_acquired(backend, agent, use, image=IMAGE, work_dir="/runs")


def test_conformance_on_maf_sandbox_docker_with_python_noshell(engine):
    async def use(backend, sandbox):
        assert backend.declarations.program_channels[0] is backend.channel
        assert backend.channel.calls_on_stream
        await assert_program_channel_conformance(sandbox, backend.channel,
                                                 guest_call_path="calls/c", timeout=60)

    run(on_docker("conformance", None, use))


def test_a_guest_without_maf_launch_gets_this_hosts_put_in(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")
    channel = MafLaunchChannel(launcher=str(tmp_path / "nowhere" / "maf-launch"),
                               install_from=LAUNCHER)
    run(assert_program_channel_conformance(sandbox, channel, guest_call_path="calls/i",
                                           timeout=30))
    put = list((tmp_path / "base" / ".maf-launch").iterdir())
    assert len(put) == 1 and os.access(put[0], os.X_OK)
    assert put[0].read_bytes() == open(LAUNCHER, "rb").read()


def test_a_launcher_that_cannot_be_made_executable_is_said_at_prepare(tmp_path):
    sandbox = LocalSandbox(tmp_path / "base")

    async def refuse_chmod(command, *, working_directory, timeout):
        # A guest whose interpreter may not change modes (a read-only or foreign-owned
        # storage base): the look says why.
        if isinstance(command, list) and "os.chmod(p,0o755)" in " ".join(command):
            command = [command[0], "-c", "print('chmod: [Errno 1] Operation not permitted')"]
        return await LocalSandbox.exec(sandbox, command, working_directory=working_directory,
                                       timeout=timeout)

    sandbox.exec = refuse_chmod
    channel = MafLaunchChannel(launcher=str(tmp_path / "nowhere" / "maf-launch"),
                               install_from=LAUNCHER)
    with pytest.raises(ValueError, match="could not be made executable .*Operation not "
                                         "permitted.*bake it into the image"):
        run(channel.prepare(sandbox, ProgramRequirements()))


def test_a_container_without_maf_launch_at_the_path_gets_one_through_the_engine(engine):
    channel = MafLaunchChannel(launcher="/opt/nowhere/maf-launch", calls_on_stream=True,
                               install_from=LAUNCHER)

    async def use(backend, sandbox):
        await assert_program_channel_conformance(sandbox, channel, guest_call_path="calls/c",
                                                 timeout=60)
        return channel._by_instance[sandbox.instance_id].launcher

    assert run(on_docker("install", channel, use)).startswith("/runs/.maf-launch/maf-launch-")

def test_these_tests_run_in_a_plain_chroot():
    """make upstream-current enters the Debian 13 root as a plain chroot enters it (its / is
    no mount's root), so the runs above, below pytest's private tmp_path, were made there."""
    if os.environ.get("MAF_ENTER_PLAIN") != "1":
        pytest.skip("not entered with MAF_ENTER_PLAIN=1 (make upstream-current does)")
    with open("/proc/self/mountinfo") as f:
        assert not any(line.split()[4] == "/" for line in f)


def test_a_run_activity_guard_is_held_for_the_run(tmp_path):
    """Where the sandbox has SandboxRunActivity, the channel holds one guard from before the
    program starts until its run is over, and checks it on both sides."""
    import contextlib

    events = []

    class Guard:
        def check(self):
            events.append("check")

    class WithActivity(LocalSandbox):
        @contextlib.asynccontextmanager
        async def run_activity(self, *, timeout):
            events.append(("enter", timeout))
            try:
                yield Guard()
            finally:
                events.append("exit")

        async def exec(self, command, *, working_directory, timeout):
            if isinstance(command, list) and "run" in command[1:2]:
                events.append("launch")
            return await super().exec(command, working_directory=working_directory,
                                      timeout=timeout)

    sandbox = WithActivity(tmp_path / "base")
    channel = MafLaunchChannel(launcher=LAUNCHER)
    policy = HostToolRun(registry_with_add())

    async def go():
        await channel.prepare(sandbox, ProgramRequirements())
        events.clear()
        return await channel.run(sandbox, "print('hi')", requirements=ProgramRequirements(),
                                 guest_call_path="calls/a", timeout=30, policy=policy)

    assert run(go()).stdout == "hi\n"
    assert events[0] == ("enter", 30) and events[1] == "check"
    assert events.index("launch") > 1 and events[-2:] == ["exit", "check"]


def test_reclaim_on_an_image_without_rm(engine):
    """maf-sandbox-docker's reclaim runs `rm -rf` in the guest; python-noshell has no `rm`,
    and the wrapper's sandbox makes the removal with maf-launch instead, checked through the
    engine, so a host that reuses sandboxes keeps its container."""
    async def use(backend, sandbox):
        await backend.channel.prepare(sandbox, ProgramRequirements())
        result = await backend.channel.run(
            sandbox, "open('made.txt', 'w').write('x')\nprint('ok')",
            requirements=ProgramRequirements(), guest_call_path="calls/r", timeout=30,
            policy=HostToolRun(registry_with_add()))
        assert result.stdout == "ok\n"
        assert await sandbox.stat_file("calls/r/work/made.txt", working_directory=".")
        await sandbox.reclaim("calls/r", working_directory=".", timeout=30)
        assert await sandbox.stat_file("calls/r", working_directory=".") is None
        # The backend's rm is not tried again in this container, whatever object stands for
        # it: maf-launch's reclaim at once.
        assert list(backend.without_rm) == [sandbox.instance_id]
        theirs = sandbox._sandbox.reclaim
        tried = []

        async def counted(*args, **kwargs):
            tried.append(args)
            return await theirs(*args, **kwargs)

        sandbox._sandbox.reclaim = counted
        await sandbox.write_file("calls/s/work/x", "x", working_directory=".")
        await sandbox.reclaim("calls/s", working_directory=".", timeout=30)
        assert await sandbox.stat_file("calls/s", working_directory=".") is None
        assert tried == []
        with pytest.raises(ValueError):
            await sandbox.reclaim("../../etc", working_directory=".", timeout=30)

    run(on_docker("reclaim", None, use))
