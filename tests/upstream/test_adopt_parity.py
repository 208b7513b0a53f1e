"""The drop-in against maf-sandbox itself, case by case: each program runs once under
maf-sandbox's dispatch_over_exec with its shell launcher (in an image with busybox's shell)
and once under mafhost.maf_sandbox.dispatch_over_exec (in maf-launch/python-noshell, no
shell), both over maf-sandbox-docker's real sandbox, each with a registry of its own built
the same way. What the program printed, how the run ended, and the registry's dispatch log
(every dispatch its observer saw, every call a tool body received) must be the same.

Two differences are by design, and asserted as such: the launch failure's sentence
(maf-sandbox's shell says `sh: NAME: not found` in the program's output, maf-launch says why
on the result's stderr; the exit code, 127, and the empty dispatch log are the same), and what
a timeout's stop reached (maf-launch stop takes the program's whole tree, "group"; maf-sandbox
over `docker cp` often runs out of its stop's grace before it has read the session file, and
signals the pid alone, "program"; the output, the signal sent and the sentence's ends are the
same).

Skipped where no engine answers or the images are not built, unless REQUIRE_DOCKER=1."""
import asyncio
import contextlib
import warnings

import pytest

from maf_sandbox import (HostToolRegistry, Identity, SandboxProgramTimeout, TransferLimits,
                         sandbox_tool)

from adopt import recorded_results, run, ways  # noqa: F401  (ways: a fixture)

SMALL = TransferLimits(max_bytes_per_file=4096, max_total_bytes=1 << 20, max_files=64)


def registry(log, *tools, named=(), **policy):
    """A registry whose observer and tools write to log."""
    def observer(_run, name):
        log.append(("dispatch", name if isinstance(name, str) else type(name).__name__))
        return contextlib.nullcontext()

    r = HostToolRegistry(dispatch_observer=observer, **policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tools:
            r.register(t)
        for name, t in named:
            r.register(t, name=name)
    return r


def basic(log, **policy):
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

    return registry(log, add, echo, boom, big, **policy)


def unicode_names(log):
    def make(label):
        def tool(**kw):
            log.append((label, repr(sorted(kw.items()))))
            return label
        return tool

    return registry(log, named=[("búsqueda", make("búsqueda")), ("ｌｏｏｋｕｐ", make("wide")),
                                ("x" * 129, make("long")), ("with space", make("space"))])


def user_identity(log):
    @sandbox_tool(source=None, sink=None, identity=Identity.USER)
    def calendar() -> list:
        log.append(("calendar",))
        return []

    def add(left: int, right: int) -> int:
        log.append(("add", left, right))
        return left + right

    return registry(log, calendar, add,
                    allowed_identities=frozenset({Identity.APP, Identity.USER}))


HEAD = "from maf_host_tools import HostToolError, call\n"


def shown(expr):
    """A program line that prints expr's value, or the refusal it raised."""
    return (f"try:\n    print('ok', repr({expr}))\nexcept HostToolError as e:\n"
            f"    print('refused', e)\n")


CASES = {
    "returns": (basic, HEAD + shown("call('add', left=2, right=3)"), {}),
    "raises": (basic, HEAD + shown("call('boom')"), {}),
    "refuses bad arguments": (basic, HEAD + shown("call('add', left=1)") +
                              shown("call('add', left=1, right=2, third=3)"), {}),
    "values": (basic, HEAD + shown("call('echo', i=2**70, f=1.5, e=1e300, n=None, b=True, "
                                   "s='búsqueda ✓', l=[1, [2, {'k': 'v'}]])") +
               shown("call('echo', v=float('inf'))") + shown("call(['not', 'a', 'name'])") +
               shown("call('echo', nan=float('nan'))"), {}),
    "exceeds response_limits": (lambda log: basic(log, response_limits=SMALL),
                                HEAD + shown("len(call('big', n=5000))") +
                                shown("len(call('big', n=100))"), {}),
    "exceeds the total response budget": (
        lambda log: basic(log, response_limits=TransferLimits(
            max_bytes_per_file=4096, max_total_bytes=6000, max_files=64)),
        HEAD + shown("len(call('big', n=3500))") + shown("len(call('big', n=3500))") +
        shown("len(call('big', n=10))"), {}),
    "unknown name": (basic, HEAD + shown("call('nope', x=1)"), {}),
    "oversized request": (lambda log: basic(log, response_limits=SMALL),
                          HEAD + shown("call('echo', x='y' * 10000)") +
                          shown("call('add', left=1, right=1)"), {}),
    "the call past the cap": (lambda log: basic(log, max_dispatches_per_run=3),
                              HEAD + "".join(shown(f"call('add', left={i}, right=0)")
                                             for i in range(4)), {}),
    "past the serving bound": (lambda log: basic(log, max_dispatches_per_run=2),
                               HEAD + "".join(shown(f"call('add', left={i}, right=0)")
                                              for i in range(4)),
                               {"call_timeout": 3}),
    "a USER-identity tool": (user_identity, HEAD + shown("call('calendar')") +
                             shown("call('add', left=1, right=1)"), {}),
    "unicode and unusual names": (unicode_names, HEAD + "import maf_host_tools as m\n" +
                                  shown("m.búsqueda(q='x')") + shown("m.lookup()") +
                                  shown("call('x' * 129)") + shown("call('with space', a=1)") +
                                  shown("call('lookup')"), {}),
    "concurrent callers from threads": (
        basic, HEAD + "import threading\ngot = []\n"
        "def work(k):\n    got.append(call('add', left=k, right=k))\n"
        "ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]\nprint(sorted(got))\n",
        {"unordered": True}),
    "a forked child calling": (
        basic, HEAD + "import os\npid = os.fork()\nif pid == 0:\n"
        "    print('child', call('add', left=1, right=1), flush=True)\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nprint('parent', call('add', left=2, right=2))\n", {}),
    "an argument that cannot be sent": (
        basic, HEAD + "try:\n    call('add', left=object(), right=1)\n"
        "except TypeError as e:\n    print('TypeError', e)\n" + shown("call('add', left=1, "
                                                                      "right=2)"), {}),
    "a program that never calls": (
        basic, "import sys\nprint('hello')\nprint('to stderr', file=sys.stderr)\n"
        "raise SystemExit(3)\n", {}),
    "killed by a signal": (basic, "import os\nprint('going', flush=True)\n"
                           "os.kill(os.getpid(), 9)\n", {}),
    "a timeout": (basic, HEAD + shown("call('add', left=1, right=1)") +
                  "import time\nprint('sleeping', flush=True)\ntime.sleep(120)\n",
                  {"timeout": 6}),
    "a launch failure": (basic, "print('never')\n", {"interpreter": "python3-absent"}),
}


async def one(ways, way, case):
    make, program, kw = CASES[case]
    kw = dict(kw)
    unordered = kw.pop("unordered", False)
    call_timeout = kw.pop("call_timeout", None)
    kw.setdefault("timeout", 90)
    log = []
    reg = make(log)
    sandbox, layout = await ways.prepare(way, program, reg, call_timeout=call_timeout)
    try:
        r = await ways.dispatch(way, sandbox, reg, layout, poll_interval=0.05, **kw)
        outcome = ("returned", r.stdout, r.exit_code, r.stderr)
    except SandboxProgramTimeout as e:
        outcome = ("timeout", str(e), e.output, e.signal, e.reach)
    left = await sandbox.stat_file(layout.shim, working_directory="/")
    return outcome, (sorted(log, key=repr) if unordered else log), left


@pytest.mark.parametrize("case", list(CASES))
def test_the_drop_in_answers_as_maf_sandbox_does(ways, case):
    up, up_log, up_left = run(one(ways, "upstream", case))
    ours, our_log, our_left = run(one(ways, "drop-in", case))
    assert our_log == up_log
    assert up_left is None and our_left is None, "the transport's files were left behind"
    if case == "a launch failure":
        assert up[0] == ours[0] == "returned"
        assert (up[2], ours[2]) == (127, 127)
        assert "python3-absent" in up[1] and "not found" in up[1]
        assert ours[1] == "" and "python3-absent" in ours[3]
        assert up_log == []
        return
    if case == "a timeout":
        # Both end the program at its bound and quote what it printed; maf-sandbox's stop
        # runs out of its grace reading the session file through `docker cp`, and so often
        # signals the pid alone, where maf-launch stop takes the program's whole tree.
        assert up[0] == ours[0] == "timeout"
        assert up[2:4] == ours[2:4] == ("ok 2\nsleeping\n", "sent")
        for said in (up[1], ours[1]):
            assert said.startswith("the guest program did not finish within 6s")
            assert said.endswith("Output so far: ok 2\nsleeping\n")
        assert ours[4] == "group" and up[4] in ("group", "program")
        return
    assert ours == up


def test_calls_travel_over_the_engine_stream(ways, monkeypatch):
    seen = recorded_results(monkeypatch)
    log = []
    reg = basic(log, max_dispatches_per_run=32)
    program = HEAD + "print(sum(call('add', left=i, right=1) for i in range(20)))\n"

    async def go():
        sandbox, layout = await ways.prepare("drop-in", program, reg)
        return await ways.dispatch("drop-in", sandbox, reg, layout, timeout=60)

    r = run(go())
    assert (r.stdout, r.exit_code) == ("210\n", 0)
    assert [e for e in log if e[0] == "add"] == [("add", i, 1) for i in range(20)]
    (result,) = seen
    assert result.transport == "stream"
    assert result.record is not None and result.record.calls == 20, \
        "the calls did not take the launcher's channel"
    assert result.identity == "own" and result.verified


def test_cancelling_stops_the_program_and_removes_the_transport(ways):
    outcomes = {}
    for way in ("upstream", "drop-in"):
        log = []
        reg = basic(log)
        program = HEAD + "print(call('add', left=1, right=1), flush=True)\n" \
            "import time\ntime.sleep(120)\n"

        async def go():
            sandbox, layout = await ways.prepare(way, program, reg)
            task = asyncio.ensure_future(ways.dispatch(way, sandbox, reg, layout,
                                                       timeout=90, poll_interval=0.05))
            for _ in range(600):
                if log:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await sandbox.stat_file(layout.shim, working_directory="/")

        left = run(go())
        outcomes[way] = (log, left)
    assert outcomes["drop-in"] == outcomes["upstream"] == \
        ([("dispatch", "add"), ("add", 1, 1)], None)
