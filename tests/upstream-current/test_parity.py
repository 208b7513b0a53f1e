"""maf-launch's program channel against maf-sandbox's own exec channel, through
maf-sandbox-codeact's execute_code, case by case (parity.py). Each program runs once over
maf-sandbox's ExecProgramChannel (DockerSandboxBackend, in an image with busybox's shell) and
once over maf-launch's channel (with_maf_launch(DockerSandboxBackend(config)), in
maf-launch/python-noshell, no shell), each through its own SandboxRouter and with a registry
of its own built the same way. Compared: the items execute_code gives the model (the text,
and with it the exit), or the exception the caller got; the registry's HostToolCalled records
(tool, declaration, outcome, refusal, response_bytes, calls, host_started, host_completed); the
router's records (SandboxAcquired, SandboxDisposed, ToolCallEnded); what the tool bodies
received; and that nothing of the call's sandbox is left. They must be the same but for
DIFFERENCES, which test_the_differences_are_the_listed_ones holds to what they say.

Each case also pins what both ways give (the exit, the HostToolCalled outcomes, a text the
model is shown), so that two ways failing alike fail.

The cases run one after another (LANES), each case's two ways at once, on sandboxes of their
own (the router's default cleanup disposes each after its call). maf-sandbox's exec channel
spends 5 to 15 s on a call here (its supervisor polls the guest's files through `docker cp`,
the container paused around each, and snapshots /proc four times a run), so the file takes
about three minutes; cases side by side do not shorten that (the engine's pauses queue) and
make maf-sandbox's own channel fail now and then. A case in which maf-sandbox's channel could
not run the program at all (under load, `docker pause` is sometimes refused) runs once more.

Skipped where no engine answers or the images are not built, unless REQUIRE_DOCKER=1. The
image with a shell (MAF_SHELL_IMAGE, by default maf-launch/python-busybox-test) is made from
python-noshell, and removed after, where it is missing and this machine has busybox-static;
the Debian 13 root has not, so there it is built before entering the root, as make upstream
builds its own (tests/upstream/shell_image.py)."""
import asyncio
import os
import re

import pytest

from maf_sandbox import (Capability, HostToolRegistry, SandboxKey, TransferLimits,
                         sandbox_tool)

from mafhost.maf_sandbox import with_maf_launch

import parity
from parity import Case

# agent_framework warns, when make_codeact_tools first imports its security module.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[FIDES\]")

LANES = 1   # cases at a time (see above)

# The differences by design: what differs, and why. Each is held to what it says below.
DIFFERENCES = {
    "the program channel's name": (
        "SandboxAcquired.program_channel names the channel the router picked: 'python-exec', "
        "maf-sandbox's ExecProgramChannel, or 'maf-launch', which with_maf_launch declares "
        "first"),
    "process records": (
        "maf-sandbox's supervisor reaches the program only through the sandbox's exec and "
        "files: its shell launcher prints a process receipt, and it takes four /proc snapshots "
        "a run (ProcessesObserved: before and after the launch, before and after the cleanup) "
        "and records the signal it sends by that receipt (ProcessCleanup). maf-launch's "
        "supervisor is the program's parent in the guest and ends the program's whole tree "
        "itself (maf-launch stop), so it has no receipt to act on and takes no snapshots"),
    "the timeout's sentence": (
        "where the run's bound falls while maf-sandbox's supervisor waits on one of its "
        "`docker cp` polls, its SandboxProgramTimeout says so ('— the sandbox did not answer "
        "stat 0002.request.json within the 0.7s it was given'); maf-launch's supervisor waits "
        "on the engine's stream and has no such operation to name. The rest of the sentence "
        "(the bound, 'its process group was sent SIGKILL', the output so far) is the same"),
    "timings": "the seconds of every record, and how long a call takes",
}

# maf-sandbox's clause for the operation its bound fell in (see DIFFERENCES).
_POLL_CLAUSE = re.compile(r" — the sandbox did not answer .{1,200}? within the [\d.]+s it "
                          r"was given")


def stamped(function):
    return sandbox_tool(source=None, sink=None, identity=None)(function)


def registry(log, observer, *tools, named=(), **policy):
    r = HostToolRegistry(observer=observer, **policy)
    for tool in tools:
        r.register(stamped(tool))
    for name, tool in named:
        r.register(stamped(tool), name=name)
    return r


def basic(log, observer, **policy):
    def add(left: int, right: int) -> int:
        log.append(("add", left, right))
        return left + right

    def echo(**kw):
        log.append(("echo", repr(sorted(kw.items()))))
        return kw

    def boom():
        log.append(("boom",))
        raise ValueError("a secret the program must not see")

    def big(n: int) -> str:
        log.append(("big", n))
        return "z" * n

    async def later(x: int) -> int:
        log.append(("later", x))
        await asyncio.sleep(0.05)
        return x * 2

    async def slow(seconds: float) -> str:
        log.append(("slow", seconds))
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    def tick(n: int) -> int:
        log.append(("tick", n))
        return n

    return registry(log, observer, add, echo, boom, big, later, slow, tick, **policy)


def with_policy(**policy):
    return lambda log, observer: basic(log, observer, **policy)


def unicode_names(log, observer):
    def make(label):
        def tool(**kw):
            log.append((label, repr(sorted(kw.items()))))
            return {"label": label, "kw": kw}
        return tool

    return registry(log, observer, named=[("búsqueda", make("búsqueda")),
                                          ("ｌｏｏｋｕｐ", make("wide")),
                                          ("with space", make("space")),
                                          ("x" * 100, make("long"))])


HEAD = "from maf_host_tools import HostToolError, call\n"


def shown(expr):
    """A program line that prints expr's value, or the refusal it raised."""
    return (f"try:\n    print('ok', repr({expr}))\nexcept HostToolError as e:\n"
            f"    print('refused', e)\n")


# A response's framing: big(n)'s response is n + 13 bytes ({"result": "z…"}, newline).
FRAMING = 13
SMALL = TransferLimits(max_bytes_per_file=4096, max_total_bytes=1 << 20, max_files=64)
BUDGET = TransferLimits(max_bytes_per_file=4096, max_total_bytes=6000, max_files=64)
D, R = "delivered", "refused"

CASES = {
    "plain output": Case(
        basic, "print('hello')\nprint(sum(range(10)))\n",
        exit="0", outcomes=(), shows="stdout:\nhello\n45"),
    "stderr and an exit code": Case(
        basic, HEAD + "import sys\nprint('out', flush=True)\n"
        "print('err', file=sys.stderr, flush=True)\n" + shown("call('add', left=2, right=3)") +
        "raise SystemExit(3)\n",
        exit="3", outcomes=(D,), shows="stdout:\nout\nerr\nok 5\n\nexit code: 3"),
    "an uncaught exception": Case(
        basic, "print('before')\n{}['missing']\n",
        exit="1", outcomes=(),
        shows='File "/maf-sandbox/work/<call>/host_tools/program.py", line 2, in <module>'),
    "values": Case(
        basic, HEAD + shown("call('echo', i=2**70, f=1.5, e=1e300, n=None, b=True, "
                            "s='búsqueda ✓', l=[1, [2, {'k': 'v'}]])") +
        shown("call('echo', v=float('inf'))") + shown("call(['not', 'a', 'name'])"),
        exit="0", outcomes=(D, R, R),
        shows="ok {'i': 1180591620717411303424, 'f': 1.5, 'e': 1e+300, 'n': None, 'b': True, "
        "'s': 'búsqueda ✓', 'l': [1, [2, {'k': 'v'}]]}"),
    "an unknown tool": Case(
        basic, HEAD + shown("call('nope', x=1)"),
        exit="0", outcomes=(R,), shows="refused Error: 'nope' is not a registered host tool"),
    "bad arguments": Case(
        basic, HEAD + shown("call('add', left=1)") +
        shown("call('add', left=1, right=2, third=3)") +
        shown("call('add', left='one', right=2)") +
        "for args, kw in (((1, 2), {}), ((), {'left': object(), 'right': 1})):\n"
        "    try:\n        call('add', *args, **kw)\n"
        "    except Exception as e:\n        print(type(e).__name__, e)\n",
        exit="0", outcomes=(R, R, R),
        shows="arguments do not bind to host tool 'add': missing a required argument"),
    "a tool that raises": Case(
        basic, HEAD + shown("call('boom')") + shown("call('add', left=1, right=1)"),
        exit="0", outcomes=(R, D),
        shows="refused Error: host tool 'boom' failed — the reason is in the host's log\nok 2"),
    "calls past the cap": Case(
        # The call past max_host_tool_calls_per_run is refused; the one after it is past the
        # serving bound and never answered: the program waits out the run's bound.
        with_policy(max_host_tool_calls_per_run=1),
        HEAD + "".join(shown(f"call('add', left={i}, right=0)") for i in range(3)),
        exit="none", outcomes=(D, R), timeout=10,
        shows="did not finish within 10s and its process group was sent SIGKILL. Output so "
        "far: ok 0\nrefused Error: this run's host-tool-call cap (1) is exhausted"),
    "values at and past the response limit": Case(
        with_policy(response_limits=SMALL),
        HEAD + "".join(shown(f"len(call('big', n={n}))")
                       for n in (4096 - FRAMING, 4096 - FRAMING + 1, 100)),
        exit="0", outcomes=(D, R, D),
        shows="ok 4083\nrefused Error: host tool 'big''s response is 4097 bytes and the "
        "per-response cap allows 4096\nok 100"),
    "past the total response budget": Case(
        with_policy(response_limits=BUDGET),
        HEAD + shown("len(call('big', n=3500))") + shown("len(call('big', n=3500))") +
        shown("len(call('big', n=10))"),
        exit="0", outcomes=(D, R, D),
        shows="would exceed this run's total response cap (6000 bytes)\nok 10"),
    "output past the limit": Case(
        with_policy(response_limits=BUDGET), "print('x' * 7000)\n",
        exit="0", outcomes=(),
        shows="stderr:\nthe program's output was larger than the host will read"),
    "a program that never calls": Case(
        basic, "x = 1 + 1\n",
        exit="0", outcomes=(), shows="The program ran and printed nothing."),
    "concurrent callers from threads": Case(
        basic, HEAD + "import threading\ngot = []\n"
        "def work(k):\n    got.append(call('add', left=k, right=k))\n"
        "ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]\nprint(sorted(got))\n",
        exit="0", outcomes=(D,) * 4, shows="[0, 2, 4, 6]", unordered=True),
    "a forked child calling": Case(
        basic, HEAD + "import os\npid = os.fork()\nif pid == 0:\n"
        "    print('child', call('add', left=1, right=1), flush=True)\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nprint('parent', call('add', left=2, right=2))\n",
        exit="0", outcomes=(D, D), shows="child 2\nparent 4"),
    "unicode names and values": Case(
        unicode_names, HEAD + "import maf_host_tools as m\n" +
        shown("m.búsqueda(q='¿dónde? ✓')") + shown("m.lookup(k='ｗｉｄｅ')") +
        shown("call('with space', a=1)") + shown("call('lookup')"),
        exit="0", outcomes=(D, D, D, R),
        shows="ok {'label': 'búsqueda', 'kw': {'q': '¿dónde? ✓'}}\n"
        "ok {'label': 'wide', 'kw': {'k': 'ｗｉｄｅ'}}"),
    "an async tool": Case(
        basic, HEAD + shown("call('later', x=21)") + shown("call('later', x=-1)"),
        exit="0", outcomes=(D, D), shows="ok 42\nok -2"),
    "a slow tool within its timeout": Case(
        basic, HEAD + shown("call('slow', seconds=1.5)"), host_tool_timeout=2.5,
        exit="0", outcomes=(D,), shows="ok 'slept 1.5'"),
    "a tool past its timeout": Case(
        basic, HEAD + shown("call('slow', seconds=3.0)") + shown("call('add', left=1, right=1)"),
        host_tool_timeout=1.5,
        exit="0", outcomes=(R, D),
        shows="refused Error: the host tool timed out; effects may have occurred\nok 2"),
    "killed by a signal": Case(
        basic, "import os\nprint('going', flush=True)\nos.kill(os.getpid(), 9)\n",
        exit="137", outcomes=(), shows="stdout:\ngoing\n\nexit code: 137"),
    "the run's timeout": Case(
        basic, HEAD + shown("call('add', left=1, right=1)") +
        "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n", timeout=10,
        exit="none", outcomes=(D,),
        shows="Error: the guest program did not finish within 10s and its process group was "
        "sent SIGKILL. Output so far: ok 2\nsleeping\n"),
    "cancelled by the caller": Case(
        basic, HEAD + "import time\nprint(call('tick', n=1), flush=True)\ntime.sleep(60)\n",
        cancel="after a call", exit="none", outcomes=(D,), shows=""),
    "cancelled during a tool call": Case(
        basic, HEAD + "print('calling', flush=True)\ncall('slow', seconds=20.0)\n",
        cancel="during a call", exit="none", outcomes=("cancelled",), shows=""),
}


@pytest.fixture(scope="module")
def outcomes():
    why, built = parity.engine_missing()
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
        pytest.skip(why)
    try:
        yield asyncio.run(parity.run_all(CASES, LANES))
    finally:
        if built:
            parity.remove_shell_image()


def _channel(router):
    return [r[-1] for r in router if r[0] == "SandboxAcquired"]


def _without_channel(router):
    return [r[:-1] if r[0] == "SandboxAcquired" else r for r in router]


@pytest.mark.parametrize("name", list(CASES))
def test_execute_code_answers_as_over_maf_sandboxs_exec_channel(outcomes, name):
    case = CASES[name]
    up, ours = outcomes[name]
    up_model = [(t, _POLL_CLAUSE.sub("", text), p) for t, text, p in up.model]
    # What both give, pinned.
    for outcome, model in ((up, up_model), (ours, ours.model)):
        assert outcome.exit == case.exit, model
        assert tuple(c[5] for c in outcome.calls) == case.outcomes, outcome.calls
        assert case.shows in "\n".join(text for _, text, _ in model), model
        assert outcome.raised == ("CancelledError" if case.cancel else None)
        assert outcome.left == [], "the call's sandbox was left behind"
    # And the same, but for the differences by design.
    assert ours.model == up_model
    assert ours.calls == up.calls
    assert ours.log == up.log
    assert _without_channel(ours.router) == _without_channel(up.router)


def test_the_differences_are_the_listed_ones(outcomes):
    assert set(DIFFERENCES) == {"the program channel's name", "process records",
                                "the timeout's sentence", "timings"}
    for name, (up, ours) in outcomes.items():
        case = CASES[name]
        # The program channel's name.
        assert _channel(up.router) == ["python-exec"], name
        assert _channel(ours.router) == ["maf-launch"], name
        # Process records: maf-sandbox's four snapshots and its cleanup by receipt, a signal
        # to the group where the program was still running; none from maf-launch, whose
        # supervisor says how the run ended: stopped when the caller cancelled, at its bound
        # when it timed out.
        phases = [p[1] for p in up.processes if p[0] == "ProcessesObserved"]
        assert phases == ["before_launch", "after_launch", "before_cleanup",
                          "after_cleanup"], (name, up.processes)
        cleanup = [p for p in up.processes if p[0] == "ProcessCleanup"]
        running = case.exit == "none"
        assert cleanup == [("ProcessCleanup", "sent", "group", "SIGKILL") if running else
                           ("ProcessCleanup", "absent", "nothing", "SIGKILL")], (name, cleanup)
        assert ours.processes == [], name
        assert ours.ended == ("stopped" if case.cancel else "timeout" if running else
                              "signaled" if case.exit == "137" else "exited"), name
        # The timeout's sentence: the clause is maf-sandbox's alone, and all it changes.
        assert not any(_POLL_CLAUSE.search(text) for _, text, _ in ours.model), name


def test_with_maf_launch_acquires_codeacts_spec_on_maf_sandbox_docker():
    # maf-sandbox-codeact's spec carries its registry's surface beside HOST_TOOLS; acquired
    # without HOST_TOOLS (no shell to probe for), it goes without the surface too, which
    # maf-sandbox refuses alone. No engine needed: the backend's acquire is the test's.
    from maf_sandbox_codeact import codeact_sandbox_spec
    from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

    docker = DockerSandboxBackend(DockerSandboxConfig())
    asked = []

    async def acquire(key, spec):
        asked.append(spec)
        return "the sandbox"

    docker.acquire = acquire
    spec = codeact_sandbox_spec(parity.NOSHELL_IMAGE,
                                host_tools=basic([], parity.Recorder()))
    assert Capability.HOST_TOOLS in spec.requires and spec.host_tools is not None
    key = SandboxKey(scope="s", thread_id="t", agent_id="a")
    assert asyncio.run(with_maf_launch(docker).acquire(key, spec)) == "the sandbox"
    (acquired,) = asked
    assert Capability.HOST_TOOLS not in acquired.requires and acquired.host_tools is None
    assert acquired.program == spec.program and acquired.image == spec.image
