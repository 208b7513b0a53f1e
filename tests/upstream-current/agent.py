"""maf-sandbox-codeact's execute_code as an agent calls it, both ways of parity.py, traced.

An agent_framework Agent holds one tool, execute_code (parity.Ways.tool: make_codeact_tools
over the way's SandboxRouter), and one chat client, ScriptedModel, that plays the model from a
script and reaches no network: asked first, it calls execute_code with PROGRAM; asked again,
with the call's result in the conversation, it answers with a text quoting that result. The
program walks the demo's four-stage lookup (state name -> state id -> store ids -> sales rows
-> product names) through four host tools over the demo's data (tests/demo/tools_server.py
over tests/demo/data.json), each stage's answer the next one's argument.

maf-sandbox-otel's observer records both halves (the router's records and the registry's) to
OpenTelemetry SDK providers of the run's own: log records to an in-memory exporter, counters and
histograms to an in-memory reader, spans to the tracer provider the run is given. The agent
framework opens its spans (invoke_agent, chat, execute_tool) on OpenTelemetry's global tracer
provider alone, so a conversation's trace is whole only where the observer's provider is that
global one too: global_tracing() sets it for a block and unsets it after.

Used by test_agent.py."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from agent_framework import (Agent, BaseChatClient, ChatResponse, Content,
                             FunctionInvocationLayer, Message)
from agent_framework.observability import ChatTelemetryLayer
from maf_sandbox import HostToolRegistry, SourceIntegrity, sandbox_tool
from maf_sandbox_otel import OpenTelemetrySandboxObserver
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

import parity
from conftest import ROOT
from parity import Case, Recorder, Ways, project

DEMO = ROOT / "tests" / "demo"
tools_server = parity.by_path("tools_server", DEMO / "tools_server.py")

QUESTION = "What did our Nevada stores sell, and for how much?"
INSTRUCTIONS = "Answer from what execute_code prints; run code to find out."
# The call id the script gives its one function call (a model's own, which a real one makes up).
CALL_ID = "call-1"
ANSWER_HEAD = "Here is what the program printed:\n"


def lookup(log: list, observer: Any) -> HostToolRegistry:
    """The demo's four host tools over the demo's data, recording to observer; each appends
    (its name, its argument) to log. A refusal of the demo's tools server is raised, so the
    program is told the tool failed (the reason stays in the host's log)."""
    served = tools_server.make_tools(tools_server.load(DEMO / "data.json"))

    def ask(name: str, argument: str, value: Any) -> Any:
        log.append((name, value))
        return served[name]({argument: value})

    # The host's own data: trusted, no sink, no identity.
    declared = sandbox_tool(source=SourceIntegrity.TRUSTED, sink=None, identity=None)

    @declared
    def state_id(state: str) -> int:
        """A state's id, by its name."""
        return ask("state_id", "name", state)

    @declared
    def stores_in_state(state_id: int) -> list:
        """The ids of a state's stores."""
        return ask("stores_in_state", "state_id", state_id)

    @declared
    def sales_for_store(store_id: int) -> list:
        """A store's sales rows: product_id, units, cents."""
        return ask("sales_for_store", "store_id", store_id)

    @declared
    def product_name(product_id: int) -> str:
        """A product's name, by its id."""
        return ask("product_name", "product_id", product_id)

    registry = HostToolRegistry(observer=observer)
    for tool in (state_id, stores_in_state, sales_for_store, product_name):
        registry.register(tool)
    return registry


# The model's program: the demo's four stages for one state, Nevada (one store, one product,
# so that maf-sandbox's own channel, a few seconds a host-tool call, ends soon), each stage's
# answer the next one's argument; then a product id the host refuses, which it catches.
# state_id's argument is not `name`, the demo's: maf-sandbox's guest module takes the tool's
# name as call(name, **arguments), so cannot pass an argument called name (nor can its
# per-tool wrappers, which call it); maf-launch's guest module for maf-sandbox is the same.
PROGRAM = """\
from maf_host_tools import HostToolError, call

state_id = call("state_id", state="Nevada")
stores = call("stores_in_state", state_id=state_id)
rows = [row for store in stores for row in call("sales_for_store", store_id=store)]
names = {row["product_id"]: call("product_name", product_id=row["product_id"]) for row in rows}
try:
    call("product_name", product_id=999)
except HostToolError as e:
    print("refused:", e)
print(f"Nevada (state {state_id}), stores {stores}:")
for row in rows:
    print(f"  {names[row['product_id']]}: {row['units']} sold for {row['cents'] / 100:.2f}")
"""
# Its bound is far above what it takes (maf-sandbox's own channel: some 20 s here).
LOOKUP = Case(lookup, PROGRAM, exit="0", outcomes=("delivered",) * 4 + ("refused",),
              shows="Nevada (state 32), stores [3201]:\n  two-person tent: 1 sold for 129.99",
              timeout=120)
# What the tool bodies are asked, in order.
ASKED = [("state_id", "Nevada"), ("stores_in_state", 32), ("sales_for_store", 3201),
         ("product_name", 11), ("product_name", 999)]


class ScriptedModel(FunctionInvocationLayer, ChatTelemetryLayer, BaseChatClient):
    """A chat client that answers from a script, composed as the framework's own clients are
    (function invocation over telemetry over the base client). First it calls execute_code with
    program; once the conversation holds that call's result, it answers with a text quoting the
    result's items. What it was asked each turn is kept in turns."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, program: str) -> None:
        super().__init__()
        self.program = program
        self.turns: list[list[Message]] = []

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        if stream:
            raise NotImplementedError("the script answers whole responses only")
        self.turns.append(list(messages))
        return self._answer(messages)

    async def _answer(self, messages) -> ChatResponse:
        results = [c for m in messages for c in m.contents if c.type == "function_result"]
        if not results:
            content = Content.from_function_call(CALL_ID, "execute_code",
                                                 arguments={"code": self.program})
        else:
            content = Content.from_text(
                ANSWER_HEAD + "\n".join(item.text or "" for item in results[-1].items))
        return ChatResponse(messages=[Message(role="assistant", contents=[content])],
                            model="scripted-model")


class Telemetry:
    """maf-sandbox-otel's observer over providers of its own for logs and metrics, and
    tracer_provider for spans."""

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self.logs = InMemoryLogRecordExporter()
        loggers = LoggerProvider()
        loggers.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.metrics = InMemoryMetricReader()
        self.observer = OpenTelemetrySandboxObserver(
            tracer_provider=tracer_provider, logger_provider=loggers,
            meter_provider=MeterProvider(metric_readers=[self.metrics]))


@contextlib.contextmanager
def global_tracing() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """(a TracerProvider, its in-memory exporter), the provider OpenTelemetry's global one for
    the block. The API lets a process set its global provider once and gives no way back; the
    block puts back the unset state through the two module globals the API keeps for it (as
    OpenTelemetry's own test utilities do), so that later tests see no provider."""
    if trace._TRACER_PROVIDER is not None:
        raise RuntimeError("a global TracerProvider is set already; the agent framework's "
                           "spans would go there")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        yield provider, exporter
    finally:
        provider.shutdown()
        trace._TRACER_PROVIDER = None
        trace._TRACER_PROVIDER_SET_ONCE = Once()


@dataclass
class Conversation:
    """One way's agent run: what the model was asked each turn, its final answer, the records
    (projected as parity.project projects them), what the tool bodies received, and the
    telemetry, raw."""
    turns: list
    answer: str
    calls: list
    router: list
    log: list
    spans: list = field(repr=False)
    logs: list = field(repr=False)
    metrics: Any = field(repr=False)


async def converse(ways: Ways, way: str, telemetry: Telemetry,
                   spans: InMemorySpanExporter) -> Conversation:
    """LOOKUP's conversation on way: the agent asks QUESTION, the scripted model calls
    execute_code and answers; then the conversation's sandboxes are purged, as a host ends a
    conversation."""
    log: list = []
    recorder = Recorder(telemetry.observer)
    thread, tool = ways.tool(way, LOOKUP, log, recorder)
    model = ScriptedModel(LOOKUP.program)
    assistant = Agent(model, INSTRUCTIONS, id="lookup-agent", name="lookup", tools=[tool])
    routed = ways.recorders[way].events
    first = len(routed)
    spans.clear()
    response = await assistant.run(QUESTION)
    await ways.routers[way].dispose_scope(ways.scope, thread)
    mine = [e for e in routed[first:] if parity._thread(e) == thread]
    return Conversation(
        turns=model.turns, answer=response.text,
        calls=[project(e) for e in recorder.events if type(e).__name__ == "HostToolCalled"],
        router=[project(e) for e in mine], log=log, spans=list(spans.get_finished_spans()),
        logs=list(telemetry.logs.get_finished_logs()),
        metrics=telemetry.metrics.get_metrics_data())


async def converse_both() -> dict:
    """{way: Conversation}, one way after the other (maf-sandbox's own channel pauses the
    container around each of its polls; two at once slow each other), under one global tracer
    provider whose spans are taken per way."""
    with global_tracing() as (provider, spans):
        telemetry = {way: Telemetry(provider) for way in parity.WAYS}
        ways = Ways({way: t.observer for way, t in telemetry.items()})
        try:
            return {way: await converse(ways, way, telemetry[way], spans)
                    for way in parity.WAYS}
        finally:
            await ways.close()


def transcript(turns: list) -> list:
    """What the model was asked, turn by turn: each message's role and contents, but for the
    id the framework gives a function call's occurrence (af-call-…, drawn afresh each run)."""
    return [[(m.role, [{k: v for k, v in c.to_dict().items() if k != "id"} for c in m.contents])
             for m in turn] for turn in turns]


class Labels:
    """Ids written as labels, numbered by kind in the order they first appear: two runs whose
    records share ids in one pattern are written alike."""

    def __init__(self) -> None:
        self.given: dict[tuple, str] = {}

    def __call__(self, kind: str, value: Any) -> str:
        key = (kind, value)
        if key not in self.given:
            self.given[key] = f"{kind} #{sum(k == kind for k, _ in self.given)}"
        return self.given[key]


@dataclass(frozen=True)
class Projection:
    """What of a conversation's telemetry is compared. Spans, log records and metrics named in
    left_out are left out; attributes named in dropped are left out; attributes named in ids are
    written as labels (Labels). Spans are kept in the order they ended, each with its parent
    and its trace as labels; a log record with the span it was emitted under; a metric's points
    with their attributes and, for a counter, its sum, for a histogram, its count (its sum and
    buckets are durations)."""
    left_out: frozenset
    dropped: frozenset
    ids: frozenset

    def attributes(self, attributes: Any, labels: Labels) -> dict:
        return {name: labels(name, value) if name in self.ids else value
                for name, value in sorted((attributes or {}).items())
                if name not in self.dropped}

    def __call__(self, conversation: Conversation) -> dict:
        labels = Labels()
        spans = [s for s in conversation.spans if s.name not in self.left_out]
        index = {s.context.span_id: i for i, s in enumerate(spans)}

        def span(span_id: int) -> Any:
            return index.get(span_id, "left out") if span_id else None

        def trace_of(trace_id: int) -> Optional[str]:
            return labels("trace", trace_id) if trace_id else None

        return {
            "spans": [(i, s.name, s.instrumentation_scope.name, s.kind.name,
                       s.status.status_code.name, s.status.description,
                       span(s.parent.span_id) if s.parent else None,
                       trace_of(s.context.trace_id), self.attributes(s.attributes, labels))
                      for i, s in enumerate(spans)],
            "logs": [(r.log_record.event_name, r.log_record.body, r.instrumentation_scope.name,
                      r.log_record.severity_text, r.log_record.severity_number.name,
                      span(r.log_record.span_id), trace_of(r.log_record.trace_id),
                      self.attributes(r.log_record.attributes, labels))
                     for r in conversation.logs if r.log_record.event_name not in self.left_out],
            "metrics": sorted(
                (scope.scope.name, m.name, m.unit, m.description,
                 sorted((sorted(p.attributes.items()),
                         p.value if hasattr(p, "value") else ("count", p.count))
                        for p in m.data.data_points))
                for resource in conversation.metrics.resource_metrics
                for scope in resource.scope_metrics for m in scope.metrics
                if m.name not in self.left_out),
        }
