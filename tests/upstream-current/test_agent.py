"""execute_code as an agent_framework Agent calls it (agent.py), over maf-sandbox's own exec
channel (DockerSandboxBackend, in an image with busybox's shell) and over maf-launch's channel
(with_maf_launch(DockerSandboxBackend(config)), in maf-launch/python-noshell), one
conversation each: a model played from a script calls execute_code with a program that walks
four host tools, stage by stage, and answers with what the call gave back.

Compared: what the model was asked each turn (the call's result among it), the agent's answer,
the registry's records (parity.project), the router's, and what the tool bodies received; and
the telemetry maf-sandbox-otel made of the records, beside the agent framework's own spans:
spans (names, scopes, kinds, statuses, attributes, parents, traces), log records (names,
bodies, severities, attributes, the span each was emitted under) and metrics (names,
attributes, sums; a histogram's count). They must be the same but for DIFFERENCES, which
test_the_differences_are_the_listed_ones holds to what they say; PROJECTION says what else is
written alike, and why. What both give is pinned too, so that two ways failing alike fail.

The two conversations run one after the other, in some 20 s, most of it maf-sandbox's channel
(its supervisor polls the guest's files through `docker cp`, some seconds a host-tool call).
Skipped where no engine answers or the images are not built, unless REQUIRE_DOCKER=1
(parity.docker_side)."""
import asyncio

import pytest

import agent
import parity
from agent import LOOKUP, Projection

# agent_framework warns, when make_codeact_tools first imports its security module.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[FIDES\]")

# The differences by design: what differs, and why. Each is held to what it says below.
DIFFERENCES = {
    "the program channel's name": (
        "SandboxAcquired.program_channel, in the router's records, names the channel the "
        "router picked: 'python-exec', maf-sandbox's ExecProgramChannel, or 'maf-launch', "
        "which with_maf_launch declares first. maf-sandbox-otel 0.10.0 does not export it, so "
        "no span, log record or metric shows it"),
    "the image": (
        "maf_sandbox.sandbox.image, on sandbox.acquire's span and log record, names the image "
        "the sandbox was made from: maf-sandbox's exec channel launches the program with a "
        "shell script, so it runs in an image with a shell (python-noshell with busybox's); "
        "maf-launch's channel needs none and runs in maf-launch/python-noshell"),
    "process records": (
        "maf-sandbox's supervisor takes four /proc snapshots a run and records its cleanup by "
        "the launcher's process receipt (ProcessesObserved, ProcessCleanup), of which "
        "maf-sandbox-otel makes the spans and log records sandbox.process.snapshot and "
        "sandbox.process.cleanup, a log record sandbox.process.observed for each process seen, "
        "and the counters maf_sandbox.process.snapshots and maf_sandbox.process.cleanups. "
        "maf-launch's supervisor is the program's parent in the guest and ends the program's "
        "whole tree itself, so it has no receipt to act on and takes no snapshots: none of "
        "these"),
    "timings": (
        "how long everything took: spans' start and end, log records' timestamps, the "
        "maf_sandbox.duration and agent_framework.function.invocation.duration attributes, "
        "and maf_sandbox.call.duration's sum and buckets. maf-sandbox's channel polls the "
        "guest's files through `docker cp`, some seconds a host-tool call; maf-launch's "
        "answers each call on the engine's stream"),
}

PROCESS_RECORDS = {"sandbox.process.snapshot", "sandbox.process.cleanup",
                   "sandbox.process.observed", "maf_sandbox.process.snapshots",
                   "maf_sandbox.process.cleanups"}
IMAGE = "maf_sandbox.sandbox.image"

PROJECTION = Projection(
    left_out=frozenset(PROCESS_RECORDS),
    dropped=frozenset({
        IMAGE,
        # Timings.
        "maf_sandbox.duration", "agent_framework.function.invocation.duration"}),
    # Written as labels, not by design but because no two runs share them: ids drawn afresh
    # for each call (maf_sandbox.call.id) and each run (run_id); and hashes of the sandbox's key
    # (scope, conversation, agent, call), which differ because each run is on a conversation
    # of its own. Trace and span ids are labelled alike (Projection).
    ids=frozenset({"maf_sandbox.call.id", "maf_sandbox.host_tool.run_id",
                   "maf_sandbox.sandbox.key", "maf_sandbox.sandbox.conversation"}))

AGENT, CHAT, TOOL = "invoke_agent lookup", "chat scripted-model", "execute_tool execute_code"
# The spans of a conversation, in the order they end, each with its parent's name: the
# observer's (maf_sandbox_otel) under execute_tool, which is where they are delivered, all in
# the agent's trace; but for the purge, after the agent's run, the root of a trace of its own.
SPANS = ([(CHAT, AGENT), ("sandbox.dispose", TOOL), ("sandbox.acquire", TOOL)] +
         [("sandbox.host_tool_call", TOOL)] * 5 +
         [("sandbox.dispose", TOOL), ("sandbox.call", TOOL), (TOOL, AGENT), (CHAT, AGENT),
          (AGENT, None), ("sandbox.purge", None)])
# Each metric's points summed (a histogram's: counted): a sandbox acquired, disposed before
# and after the call (the router's default cleanup), five host-tool calls of which four
# delivered 117 bytes, one call, one purge.
METRICS = {"maf_sandbox.sandbox.acquires": 1, "maf_sandbox.sandbox.disposals": 2,
           "maf_sandbox.host_tool.calls": 5, "maf_sandbox.host_tool.response_bytes": 117,
           "maf_sandbox.call.duration": 1, "maf_sandbox.scope.purges": 1}


@pytest.fixture(scope="module")
def conversations():
    with parity.docker_side():
        yield asyncio.run(agent.converse_both())


def _both(conversations):
    return conversations[parity.UPSTREAM], conversations[parity.OURS]


def _without_channel(router):
    return [r[:-1] if r[0] == "SandboxAcquired" else r for r in router]


def test_the_model_is_told_the_same(conversations):
    up, ours = _both(conversations)
    for c in (up, ours):
        first, second = agent.transcript(c.turns)
        assert first == [("user", [{"type": "text", "text": agent.QUESTION,
                                    "additional_properties": {}}])]
        (result,) = [content for role, contents in second if role == "tool"
                     for content in contents]
        assert result["call_id"] == agent.CALL_ID
        assert result["result"].startswith("The workload ran to a definitive result.\n"
                                           "Result: ok\nstdout:\nrefused: Error: host tool "
                                           "'product_name' failed"), result
        assert LOOKUP.shows in result["result"]
    assert agent.transcript(ours.turns) == agent.transcript(up.turns)


def test_the_agent_answers_the_same(conversations):
    up, ours = _both(conversations)
    assert up.answer.startswith(agent.ANSWER_HEAD)
    assert up.answer.endswith(LOOKUP.shows)
    assert ours.answer == up.answer


def test_the_tools_and_records_are_the_same(conversations):
    up, ours = _both(conversations)
    for c in (up, ours):
        assert c.log == agent.ASKED
        assert tuple(call[5] for call in c.calls) == LOOKUP.outcomes, c.calls
    assert ours.calls == up.calls
    assert ours.log == up.log
    assert _without_channel(ours.router) == _without_channel(up.router)


def test_traced_the_same(conversations):
    up, ours = _both(conversations)
    up_seen, ours_seen = PROJECTION(up), PROJECTION(ours)
    for seen in (up_seen, ours_seen):
        spans = seen["spans"]
        assert [(s[1], None if s[6] is None else spans[s[6]][1]) for s in spans] == SPANS
        assert [s[7] for s in spans] == ["trace #0"] * (len(SPANS) - 1) + ["trace #1"]
        # A log record for each of the observer's spans, emitted where the span's record was
        # delivered.
        observed = [s for s in spans if s[2] == "maf_sandbox_otel"]
        assert [(log[0], log[5]) for log in seen["logs"]] == [(s[1], s[6]) for s in observed]
        assert {m[1]: sum(v if isinstance(v, int) else v[1] for _, v in m[4])
                for m in seen["metrics"]} == METRICS
    assert ours_seen["spans"] == up_seen["spans"]
    assert ours_seen["logs"] == up_seen["logs"]
    assert ours_seen["metrics"] == up_seen["metrics"]


def _metric_names(conversation):
    return {m.name for r in conversation.metrics.resource_metrics for s in r.scope_metrics
            for m in s.metrics}


def _values(conversation):
    return ([v for s in conversation.spans for v in s.attributes.values()] +
            [v for r in conversation.logs for v in r.log_record.attributes.values()])


def test_the_differences_are_the_listed_ones(conversations):
    assert set(DIFFERENCES) == {"the program channel's name", "the image", "process records",
                                "timings"}
    up, ours = _both(conversations)
    # The program channel's name: in the router's records, and in no telemetry.
    assert [r[-1] for r in up.router if r[0] == "SandboxAcquired"] == ["python-exec"]
    assert [r[-1] for r in ours.router if r[0] == "SandboxAcquired"] == ["maf-launch"]
    for c in (up, ours):
        assert not {"python-exec", "maf-launch"} & {v for v in _values(c) if isinstance(v, str)}
    # The image.
    for c, image in ((up, parity.SHELL_IMAGE), (ours, parity.NOSHELL_IMAGE)):
        assert [s.attributes.get(IMAGE) for s in c.spans if s.name == "sandbox.acquire"] == [image]
        assert [r.log_record.attributes.get(IMAGE) for r in c.logs
                if r.log_record.event_name == "sandbox.acquire"] == [image]
    # Process records: maf-sandbox's four snapshots and its cleanup, each a span and a log
    # record, a log record for each process a snapshot saw, and the two counters; none from
    # maf-launch.
    phases = ["before_launch", "after_launch", "before_cleanup", "after_cleanup"]
    snapshots = [s for s in up.spans if s.name == "sandbox.process.snapshot"]
    assert [s.attributes["maf_sandbox.process.phase"] for s in snapshots] == phases
    assert [s.attributes["maf_sandbox.process.outcome"] for s in up.spans
            if s.name == "sandbox.process.cleanup"] == ["absent"]
    up_logs = [r.log_record.event_name for r in up.logs]
    assert up_logs.count("sandbox.process.snapshot") == 4
    assert up_logs.count("sandbox.process.cleanup") == 1
    assert up_logs.count("sandbox.process.observed") == sum(
        s.attributes["maf_sandbox.process.count"] for s in snapshots)
    assert _metric_names(up) & PROCESS_RECORDS == {"maf_sandbox.process.snapshots",
                                                   "maf_sandbox.process.cleanups"}
    assert not [s for s in ours.spans if s.name in PROCESS_RECORDS]
    assert not [r for r in ours.logs if r.log_record.event_name in PROCESS_RECORDS]
    assert not _metric_names(ours) & PROCESS_RECORDS
