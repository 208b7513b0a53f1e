"""Host tools on maf-sandbox-bubblewrap 0.3.0, which serves none itself: with_maf_launch
declares maf-launch's channel on it, and the channel enters the sandbox its broker runs in
(mafhost's EnteredSandbox: the broker's namespaces and cgroup, no capability, no_new_privs)
to run the program under maf-launch with its calls on the stream, since the sandbox's own
exec kills every process a command leaves behind.

The backend runs as bubblewrap.py says: BubblewrapSandboxBackend.create where
MAF_BWRAP_CGROUP_ROOT names a delegated cgroup v2 group, else, on a machine that cannot give
one (this one), the backend less its resource group. Run as root in a root entered with
MAF_ENTER_PIVOT=1 (make upstream-current does); skipped with the reason elsewhere, unless
REQUIRE_BWRAP=1, which fails.

Asserted: maf-sandbox-codeact's execute_code, called by an agent_framework agent whose
model is test_agent's script, gets the four-stage lookup's answer through the four host
tools (what the model is told, the agent's answer, the tools' arguments and the calls'
outcomes as on Docker, where test_agent.py shows both channels alike); the program runs in
the broker's namespaces with bubblewrap's confinement (no capability, no_new_privs) and
maf-launch's inside it (seccomp, Landlock, no socket but AF_UNIX); upstream's own
assert_program_channel_conformance holds on a bubblewrap sandbox; a run's bound ends the
program; the sandbox's own exec still works after a run."""
import asyncio
import os
import uuid
import warnings

import pytest

from maf_sandbox import (CallerContext, Capability, Isolation, ProgramRequirements,
                         SandboxKey, SandboxProgramTimeout, SandboxRouter, SandboxSpec)
from maf_sandbox.conformance import assert_program_channel_conformance

from mafhost.maf_sandbox import with_maf_launch
from mafhost.maf_sandbox.serving import broker_pid

import agent
import bubblewrap
from conftest import BUILD, on_acquired
from parity import Recorder, project

# agent_framework warns, when make_codeact_tools first imports its security module.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[FIDES\]")

CAPS = frozenset({Capability.EXEC, Capability.FILES_IN, Capability.FILES_OUT,
                  Capability.HOST_TOOLS})


@pytest.fixture(scope="module")
def here(tmp_path_factory):
    """The runtime root, or a skip (a failure under REQUIRE_BWRAP=1)."""
    why = bubblewrap.why_not_here()
    if why:
        if os.environ.get("REQUIRE_BWRAP") == "1":
            pytest.fail(f"REQUIRE_BWRAP=1 and {why}", pytrace=False)
        pytest.skip(why)
    os.environ.setdefault("MAFHOST_LAUNCHER", str(BUILD / "maf-launch"))
    with bubblewrap.runtime() as root:
        yield root, tmp_path_factory.mktemp("bwrap-state")


def run(coro):
    return asyncio.run(coro)


async def _on_sandbox(here, use):
    """use(backend, sandbox) on a sandbox acquired through with_maf_launch, disposed after."""
    root, state = here
    async with bubblewrap.backend(root, state / uuid.uuid4().hex) as upstream:
        return await on_acquired(with_maf_launch(upstream), "a", use)


def test_the_wrapper_declares_the_channel_and_host_tools(here):
    async def use(backend, sandbox):
        declared = backend.declarations
        assert declared.program_channels[0] is backend.channel
        assert backend.channel.calls_on_stream
        assert Capability.HOST_TOOLS in declared.capabilities
        assert Capability.HOST_TOOLS not in backend.backend.declarations.capabilities
        assert broker_pid(sandbox) is not None

    run(_on_sandbox(here, use))


def test_conformance_on_a_bubblewrap_sandbox(here):
    async def use(backend, sandbox):
        await assert_program_channel_conformance(sandbox, backend.channel,
                                                 guest_call_path="calls/c", timeout=60)

    run(_on_sandbox(here, use))


async def _converse(here):
    """test_agent's conversation on a router over with_maf_launch(bubblewrap)."""
    from agent_framework import Agent
    from maf_sandbox_codeact import make_codeact_tools

    root, state = here
    async with bubblewrap.backend(root, state / uuid.uuid4().hex) as upstream:
        routed = Recorder()
        router = SandboxRouter([with_maf_launch(upstream)], min_isolation=Isolation.CONTAINER,
                               observer=routed)
        log: list = []
        calls = Recorder()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            registry = agent.LOOKUP.registry(log, calls)
        scope = f"maf-bwrap-{uuid.uuid4().hex[:8]}"

        async def no_files(store):
            return []

        context = CallerContext(current_scope=lambda: scope, current_thread_id=lambda: "t",
                                list_files=no_files)
        (tool,) = make_codeact_tools(
            router, "bubblewrap", context, host_tools=registry,
            exec_timeout_seconds=agent.LOOKUP.timeout, program=ProgramRequirements())
        model = agent.ScriptedModel(agent.LOOKUP.program)
        assistant = Agent(model, agent.INSTRUCTIONS, id="lookup-agent", name="lookup",
                          tools=[tool])
        response = await assistant.run(agent.QUESTION)
        await router.dispose_scope(scope, "t")
        return model, response, log, calls, routed


def test_execute_code_through_an_agent_serves_its_host_tools(here):
    model, response, log, calls, routed = run(_converse(here))
    first, second = agent.transcript(model.turns)
    assert first == [("user", [{"type": "text", "text": agent.QUESTION,
                                "additional_properties": {}}])]
    (result,) = [content for role, contents in second if role == "tool"
                 for content in contents]
    # What test_agent.py pins for both channels on Docker.
    assert result["result"].startswith("The workload ran to a definitive result.\n"
                                       "Result: ok\nstdout:\nrefused: Error: host tool "
                                       "'product_name' failed"), result
    assert agent.LOOKUP.shows in result["result"]
    assert response.text.startswith(agent.ANSWER_HEAD)
    assert response.text.endswith(agent.LOOKUP.shows)
    assert log == agent.ASKED
    outcomes = tuple(project(e)[5] for e in calls.events
                     if type(e).__name__ == "HostToolCalled")
    assert outcomes == agent.LOOKUP.outcomes
    (acquired,) = [e for e in routed.events if type(e).__name__ == "SandboxAcquired"]
    assert acquired.program_channel == "maf-launch"
    assert acquired.backend == "bubblewrap"


# What the program reports of itself, and of what it may do.
_CONTAINED = """
import json, os, socket
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
ns = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("user", "pid", "mnt", "net", "ipc", "uts")}
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    inet = "made"
except OSError as e:
    inet = e.errno
try:
    open("/tmp/outside-the-run", "w")
    tmp = "written"
except OSError as e:
    tmp = e.errno
print(json.dumps({"status": {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff",
                  "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")}, "ns": ns, "inet": inet,
                  "tmp": tmp}))
"""


def test_the_program_is_inside_bubblewraps_confinement_and_maf_launchs(here):
    import errno
    import json

    async def use(backend, sandbox):
        broker = broker_pid(sandbox)
        theirs = {n: os.readlink(f"/proc/{broker}/ns/{n}")
                  for n in ("user", "pid", "mnt", "net", "ipc", "uts")}
        requirements = ProgramRequirements()
        await backend.channel.prepare(sandbox, requirements)
        result = await backend.channel.run(sandbox, _CONTAINED, requirements=requirements,
                                           guest_call_path="calls/contained", timeout=60)
        assert result.exit_code == 0, result
        said = json.loads(result.stdout)
        return theirs, said

    theirs, said = run(_on_sandbox(here, use))
    assert said["ns"] == theirs
    assert said["status"] == {"CapInh": "0000000000000000", "CapPrm": "0000000000000000",
                              "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
                              "CapAmb": "0000000000000000", "NoNewPrivs": "1",
                              "Seccomp": "2"}
    assert said["inet"] == errno.EPERM          # maf-launch's --egress closed
    assert said["tmp"] == errno.EACCES          # Landlock: the run writes below its directory


# The live processes in the sandbox, one a line: pid and the first two words of its command. Ended ones the broker
# has not reaped yet (it reaps its orphans after each request) are no process of the run's.
_PROCESSES = """
import os
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    try:
        if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            continue
        print(pid, open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[:2])
    except OSError:
        pass
"""


def test_a_runs_bound_ends_the_program_and_the_sandbox_serves_on(here):
    async def use(backend, sandbox):
        requirements = ProgramRequirements()
        await backend.channel.prepare(sandbox, requirements)
        with pytest.raises(SandboxProgramTimeout) as raised:
            await backend.channel.run(sandbox, "import time\nprint('up', flush=True)\n"
                                      "time.sleep(600)\n", requirements=requirements,
                                      guest_call_path="calls/slow", timeout=3)
        after = await sandbox.exec(["python3", "-c", _PROCESSES], working_directory=".",
                                   timeout=10)
        return raised.value, after

    raised, after = run(_on_sandbox(here, use))
    assert raised.signal == "sent" and "up" in raised.output
    assert after.exit_code == 0
    # Nothing of the run is left in the sandbox: the broker, and the look itself.
    assert len(after.stdout.splitlines()) == 2, after.stdout


# A program that goes for the broker, the sandbox's first process, whose stdin and stdout are
# the backend's frames: a signal (a Python process dies of SIGINT), its descriptors through
# /proc (writing a frame of its own to the host), its environment, a trace.
_AT_THE_BROKER = """
import ctypes, errno, json, os, signal
tried = {}
def attempt(name, f):
    try:
        f()
        tried[name] = "done"
    except OSError as e:
        tried[name] = errno.errorcode.get(e.errno, str(e.errno))
attempt("kill", lambda: os.kill(1, signal.SIGINT))
attempt("stdout", lambda: open("/proc/1/fd/1", "wb").write(b'{"id":1,"result":{}}\\\\n'))
attempt("stdin", lambda: open("/proc/1/fd/0", "rb").read(1))
attempt("environ", lambda: open("/proc/1/environ", "rb").read())
def trace():
    if ctypes.CDLL(None, use_errno=True).ptrace(16, 1, 0, 0) != 0:   # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
attempt("ptrace", trace)
print(json.dumps(tried))
"""


def test_a_program_cannot_reach_the_broker(here):
    import json

    async def use(backend, sandbox):
        requirements = ProgramRequirements()
        await backend.channel.prepare(sandbox, requirements)
        result = await backend.channel.run(sandbox, _AT_THE_BROKER, requirements=requirements,
                                           guest_call_path="calls/broker", timeout=30)
        after = await sandbox.exec(["python3", "-c", "print('served')"],
                                   working_directory=".", timeout=10)
        return result, after

    result, after = run(_on_sandbox(here, use))
    assert result.exit_code == 0, result
    tried = json.loads(result.stdout)
    # Landlock's scopes (signals) and its ptrace restriction (the /proc files of a process
    # outside the domain) keep the program from the broker; seccomp refuses ptrace outright.
    assert tried == {"kill": "EPERM", "stdout": "EACCES", "stdin": "EACCES",
                     "environ": "EACCES", "ptrace": "EPERM"}, tried
    assert after.exit_code == 0 and after.stdout == "served\n"


def test_the_channel_lets_go_of_a_disposed_sandbox(here):
    """What the channel keeps of a sandbox it entered (the broker's pidfd and root, open) is
    let go once the broker has ended, at the next sandbox it looks at."""
    async def scenario():
        root, state = here
        async with bubblewrap.backend(root, state / uuid.uuid4().hex) as upstream:
            backend = with_maf_launch(upstream)
            spec = SandboxSpec(kind="maf-launch", requires=CAPS, program=ProgramRequirements())
            kept = []
            for n in range(2):
                key = SandboxKey(scope=f"maf-launch-{uuid.uuid4().hex[:8]}", thread_id="t",
                                 agent_id=f"a{n}")
                sandbox = await backend.acquire(key, spec)
                await backend.channel.prepare(sandbox, ProgramRequirements())
                kept.append(list(backend.channel._by_instance))
                await backend.dispose(key, kind=spec.kind)
            return kept

    first, second = run(scenario())
    assert len(first) == 1 and first[0] not in second and len(second) == 1
