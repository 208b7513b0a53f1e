"""maf-launch's program channel (MafLaunchChannel) against a hostile launcher: the attacks of
tests/hostile-guest/hostile_launcher.py, the launcher in the sandbox replaced by a program
that floods, never returns, garbles or forges frames, forges the program's end, or lies about
taking an answer (serve --ack's accepted line withheld, for another call, twice, for a frame
that carried none, never said, said before one byte of the answer was read).

Each case is one MafLaunchChannel.run, over a live HostToolRun of maf-sandbox's (a registry
with a tool that records its arguments, and an observer recording every HostToolCalled),
with the channel's launcher the hostile one, installed as DIR/maf-launch with DIR/hostile.json
beside it as the hostile-guest suite installs it (every command it does not attack goes to
this build's maf-launch). Sandbox objects of the current line carry it, each this machine as
root (local_sandbox.LocalSandbox) with an exec that holds no more of a command's stdout than
mafhost asks (max_output) and kills the command's group at its timeout:
- relay: with exec_input, so each answer rides on the relay's stdin, and is taken when the
  relay returns with it in place;
- relay-noinput: exec alone, as LocalSandbox: each answer is written first (taken when the
  write returns), and the relay only waits;
- stream: with open_stream too (a command on pipes), so calls go over `maf-launch serve
  --ack`, and an answer is taken at serve's accepted line.

For every case, asserted:
- memory: this process's peak resident set during the run (VmHWM, reset just before it) at
  most 64 MiB above its resident set before it, as the hostile-guest suite bounds the Python
  host; a run past 1 GiB more is cancelled there, and fails;
- time: run() returns within its deadline + the ending's 15 s (MAFH_ENDING_MS) + 5 s (the
  channel's look at the guest, a loaded machine); one still going at the deadline + 60 s
  fails with what was seen (a hang never hangs the module);
- the verdict: an ExecResult only with the program's own exit code (never an exit for a
  program still running), else an exception that says what happened
  (SandboxProgramTimeout, mafhost's RunError, the policy's TimeoutError), with a sentence;
- the policy is closed afterwards;
- no HostToolCalled says "delivered" for an answer no launcher took: an answer to the
  program's own call is delivered only if the program printed it (it was in place), and one
  to a forged request only where the hostile command reads its answers whole (the forgeries);
  where the launcher takes an answer and never says so, the call is "delivery_uncertain";
- no tool ran with arguments no request sent whole carried: the program's own, or a
  forgery's read as maf-sandbox's own supervisor reads a request (read_as_upstream), each
  at most once.
And for each attack what it must lead to (the stream broken with the library's sentence,
the run's timeout, the policy's failure, the record's exit code). Part of `make
upstream-current`; about a minute and a half."""
import asyncio
import importlib.util
import io
import json
import logging
import os
import shutil
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Optional

import pytest

from maf_sandbox import (ExecResult, HostToolRegistry, HostToolRun, ProgramRequirements,
                         SandboxObserver, SandboxProgramTimeout, sandbox_tool)

from mafhost.errors import RunError
from mafhost.maf_sandbox import MafLaunchChannel
from local_sandbox import LocalSandbox

from conftest import BUILD, ROOT

_spec = importlib.util.spec_from_file_location(
    "hostile_launcher", ROOT / "tests" / "hostile-guest" / "hostile_launcher.py")
hostile_launcher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostile_launcher)

REAL_LAUNCHER = BUILD / "maf-launch"
MIB_KB = 1024
MEMORY_BOUND_KB = 64 * MIB_KB       # this process's peak above its resident set, one run
RSS_KILL_KB = 1024 * MIB_KB         # past this above it, the run is cancelled: long broken
ENDING_S = 15.0                     # MAFH_ENDING_MS
SLACK_S = 5.0                       # the channel's look at the guest, a loaded machine
HARD_EXTRA_S = 60.0                 # a run still going at T + this fails
LIFETIME_S = 120                    # the hostile processes' own end
EXEC_OUTPUT_MAX = 64 << 20          # an exec's stdout held where mafhost does not say
BIG = 2 << 20                       # an answer far past what a pipe holds

PROGRAMS = {
    # one call of its own, then exit 0
    "benign": ('from maf_host_tools import call\n'
               'print("answer", call("rec", tag="genuine"), flush=True)\n'
               'print("done")\n', 0),
    # one call whose answer is 2 MiB, then exit 0
    "big": ('from maf_host_tools import call\n'
            f'print("answer", len(call("big", size={BIG})), flush=True)\n', 0),
    # no call, exit 0 (the forged requests are the launcher's, not the program's)
    "quick": ('print("started", flush=True)\n', 0),
    # still running when the launcher says it exited
    "sleeper": ('import time\nprint("started", flush=True)\ntime.sleep(30)\n', None),
    # exits 3 while the launcher says 0
    "exit3": ('import sys\nprint("started", flush=True)\nsys.exit(3)\n', 3),
}
# What each program sends: (tool, arguments).
SENT = {"benign": ("rec", {"tag": "genuine"}), "big": ("big", {"size": BIG})}


@dataclass(frozen=True)
class Case:
    transport: str       # "stream", "relay" or "relay-noinput" (the sandbox object's)
    attack: str          # hostile_launcher's attack, or "baseline" (the real launcher)
    command: str         # the launcher command attacked
    program: str         # a key of PROGRAMS
    timeout: float       # the run's deadline, seconds
    call_bound: float = 30.0    # ProgramRequirements.host_tool_timeout_seconds

    @property
    def id(self):
        what = "baseline" if self.attack == "baseline" else f"{self.attack}-{self.command}"
        extra = "" if self.program in ("benign", "quick") else f"-{self.program}"
        bound = "" if self.call_bound == 30.0 else f"-bound{self.call_bound:g}s"
        return f"{self.transport}-{what}{extra}{bound}"


T = 3.0          # floods and hangs
T_FORGED = 15.0  # forgeries: the program is quick, the forged requests are served first
T_ACK = 8.0      # the acceptance's lies that end in the stream broken, the run going on

CASES = [
    Case("stream", "baseline", "", "benign", T_ACK),
    Case("stream", "baseline", "", "big", T_ACK),
    Case("relay", "baseline", "", "benign", T_ACK),
    Case("relay-noinput", "baseline", "", "benign", T_ACK),
    # FLOOD: one endless line; an event announcing a 1 GB request; endless stdout and stderr
    Case("stream", "flood-line", "serve", "benign", T),
    Case("stream", "flood-frame", "serve", "benign", T),
    Case("relay", "flood", "relay", "benign", T),
    # NEVER RETURNS: silent and deaf; returns at once, a grandchild writing on its stdout
    Case("stream", "hang", "serve", "benign", T),
    Case("stream", "fork", "serve", "benign", T),
    Case("relay", "hang", "relay", "benign", T),
    Case("relay", "fork", "relay", "benign", T),
    Case("relay", "hang", "stop", "benign", T),
    Case("relay", "hang", "reclaim", "benign", T),
    Case("relay-noinput", "hang", "relay", "benign", T),
    # FORGED EXIT: an exit event saying 0, for a program still running or one that exited 3
    *[Case(t, "forge-exit", c, p, T_FORGED) for t, c in (("stream", "serve"),
                                                         ("relay", "relay"))
      for p in ("sleeper", "exit3")],
    # GARBLED AND FORGED FRAMES
    *[Case(t, a, c, "quick", T_FORGED) for t, c in (("stream", "serve"), ("relay", "relay"))
      for a in hostile_launcher.FORGERIES],
    Case("relay-noinput", "forge-dupkeys", "relay", "quick", T_FORGED),
    # ACCEPTANCE (serve --ack's accepted line, relay's return): withheld, for another call,
    # twice, for a frame without an answer; never said, the answer taken (serve, and a relay
    # that never returns with it); said before the answer was read
    *[Case("stream", a, "serve", "benign", T_ACK)
      for a in ("ack-withheld", "ack-wrong-id", "ack-twice", "ack-unasked")],
    Case("stream", "ack-never", "serve", "benign", T),
    Case("stream", "ack-never", "serve", "benign", T_ACK, call_bound=1.5),
    Case("relay", "ack-never", "relay", "benign", T),
    Case("stream", "ack-early", "serve", "big", T_ACK),
]

# What the stream's break says, where an attack must break it (the library's sentences).
BROKEN_BY = {
    "ack-withheld": ("printed an event without accepting the answer before it",),
    "ack-wrong-id": ("accepted an answer to call 2, not to call 1",),
    "ack-twice": ("accepted the answer to call 1 twice",),
    # the accepted line and the request's event may come in either order
    "ack-unasked": ("accepted an answer it was not sent", "printed what is not one event"),
    "flood-line": ("the stream of maf-launch serve broke",),
    "flood-frame": ("the stream of maf-launch serve broke",),
    "fork": ("the stream of maf-launch serve broke",),
}


# ---- the sandbox objects -------------------------------------------------------------------

async def _take(stream, cap):
    """All of stream, the first cap bytes of it kept."""
    kept = bytearray()
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return bytes(kept)
        if len(kept) < cap:
            kept += chunk[:cap - len(kept)]


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _ended(proc, within):
    """Whether proc has ended, given up to within seconds. Not Process.wait(), which also
    waits for its pipes to close, and a grandchild of the command may hold them open."""
    end = time.monotonic() + within
    while proc.returncode is None and time.monotonic() < end:
        await asyncio.sleep(0.01)
    return proc.returncode is not None


def _release(proc):
    """proc's pipes closed (asyncio's Process has no close of its own: its transport's)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


class RelaySandbox(LocalSandbox):
    """LocalSandbox whose exec holds at most max_output bytes of the command's stdout (64 KiB
    of its stderr), reading and dropping the rest, kills the command's process group at its
    timeout (raising TimeoutError, as LocalSandbox does), and takes an input (exec_input)."""

    async def exec(self, command, *, working_directory, timeout, max_output=EXEC_OUTPUT_MAX):
        return await self._exec(command, None, working_directory, timeout, max_output)

    async def exec_input(self, command, data, *, working_directory, timeout,
                         max_output=EXEC_OUTPUT_MAX):
        return await self._exec(command, bytes(data), working_directory, timeout, max_output)

    async def _exec(self, command, data, working_directory, timeout, max_output):
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        self.commands.append(argv)
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=self._dir(working_directory),
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)

        async def feed():
            try:
                proc.stdin.write(data)
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass           # a command that exits without reading it all is no error
            finally:
                proc.stdin.close()

        jobs = [_take(proc.stdout, max_output), _take(proc.stderr, 65536), proc.wait()]
        if data is not None:
            jobs.append(feed())
        try:
            out, err, *_ = await asyncio.wait_for(asyncio.gather(*jobs), timeout)
        except (TimeoutError, asyncio.CancelledError):
            _kill_group(proc)
            await _ended(proc, 1.0)
            _release(proc)
            raise
        return ExecResult(stdout_bytes=out, stderr_bytes=err, exit_code=proc.returncode)


class PipeStream:
    """A command on pipes, as mafhost.sandbox.Stream has it: its stdout read as asked (what
    asyncio holds of it is bounded by the reader's limit), its stderr's first 4 KiB kept."""

    def __init__(self, proc):
        self.proc = proc
        self.err = bytearray()
        self.err_task = asyncio.ensure_future(self._stderr())

    async def _stderr(self):
        while chunk := await self.proc.stderr.read(65536):
            if len(self.err) < 4096:
                self.err += chunk[:4096 - len(self.err)]

    async def write(self, data):
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read(self, max_bytes):
        return await self.proc.stdout.read(max_bytes)

    async def close(self):
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        if not await _ended(self.proc, 1.0):
            _kill_group(self.proc)
            await _ended(self.proc, 1.0)
        _release(self.proc)
        self.err_task.cancel()

    @property
    def stderr_text(self):
        return self.err.decode("utf-8", "replace")


class NoInputSandbox(RelaySandbox):
    """RelaySandbox without exec_input, as LocalSandbox: each answer is written to the run
    directory first (taken when the write returns), and the relay after it only waits."""

    exec_input = None


class StreamSandbox(RelaySandbox):
    """RelaySandbox with open_stream: calls go over `maf-launch serve`."""

    async def open_stream(self, argv):
        self.commands.append(list(argv))
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        return PipeStream(proc)


# ---- a run, measured -----------------------------------------------------------------------

class Recorder(SandboxObserver):
    def __init__(self):
        self.calls = []

    def host_tool_called(self, event):
        self.calls.append(event)


class Messages(logging.Handler):
    """mafhost's log of the run (its errors: the stream's break, among them)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak():
    """VmHWM from now on (clear_refs 5 resets the peak resident set)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


@dataclass
class Outcome:
    case: Case
    elapsed: float = 0.0
    hung: bool = False
    killed: str = ""
    base_kb: int = 0
    peak_kb: int = 0
    result: Optional[ExecResult] = None
    exception: Optional[BaseException] = None
    records: list = field(default_factory=list)      # HostToolCalled
    tool_calls: list = field(default_factory=list)   # (tool, arguments)
    closed: bool = False
    log: list = field(default_factory=list)
    commands: list = field(default_factory=list)     # the launcher's, in order
    trace: str = ""

    @property
    def output(self):
        if self.result is not None:
            return self.result.stdout
        return getattr(self.exception, "output", "") or ""

    def brief(self):
        what = (f"ExecResult(exit {self.result.exit_code}, {self.result.stdout[:200]!r}, "
                f"stderr {self.result.stderr[:200]!r})" if self.result is not None else
                f"{type(self.exception).__name__}: {str(self.exception)[:400]}")
        return (f"{self.case.id}: {self.elapsed:.1f}s, peak +"
                f"{(self.peak_kb - self.base_kb) / MIB_KB:.1f} MiB, {what}; calls "
                f"{[(c.tool, c.outcome) for c in self.records]}; tool saw {self.tool_calls}"
                f"; launcher commands {self.commands}"
                f"{'; KILLED: ' + self.killed if self.killed else ''}")


def install(base, case):
    """The hostile launcher for case, in a directory of its own: its path."""
    d = base / case.id
    d.mkdir()
    conf = {"attack": case.attack, "command": case.command, "real": str(REAL_LAUNCHER),
            "lifetime": LIFETIME_S}
    (d / "hostile.json").write_text(json.dumps(conf))
    shutil.copy(hostile_launcher.__file__, d / "maf-launch")
    (d / "maf-launch").chmod(0o755)
    return d


def make_registry(observer, tool_calls):
    @sandbox_tool(source=None, sink=None, identity=None)
    def rec(**arguments) -> bool:
        tool_calls.append(("rec", dict(arguments)))
        return True

    @sandbox_tool(source=None, sink=None, identity=None)
    def big(size: int) -> str:
        tool_calls.append(("big", {"size": size}))
        return "x" * min(size, BIG)

    registry = HostToolRegistry(observer=observer, max_host_tool_calls_per_run=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        registry.register(rec)
        registry.register(big)
    return registry


def run_case(tmp, case):
    """Makes case's run, in a thread of its own with its own event loop (so that a run that
    never returns is abandoned there, not waited for), and returns its Outcome."""
    out = Outcome(case)
    if case.attack == "baseline":
        launcher, d = str(REAL_LAUNCHER), None
    else:
        d = install(tmp, case)
        launcher = str(d / "maf-launch")
    base = tmp / f"{case.id}-base"
    sandbox = {"stream": StreamSandbox, "relay": RelaySandbox,
               "relay-noinput": NoInputSandbox}[case.transport](base)
    channel = MafLaunchChannel(launcher=launcher)
    recorder = Recorder()
    policy = HostToolRun(make_registry(recorder, out.tool_calls))
    messages = Messages()
    logger = logging.getLogger("mafhost")
    logger.addHandler(messages)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    loop_box = {}

    async def go():
        loop_box["loop"] = asyncio.get_running_loop()
        loop_box["task"] = asyncio.current_task()
        t0 = time.monotonic()
        try:
            out.result = await channel.run(
                sandbox, PROGRAMS[case.program][0],
                requirements=ProgramRequirements(host_tool_timeout_seconds=case.call_bound),
                guest_call_path=f"calls/{case.id}", timeout=case.timeout, policy=policy)
        except BaseException as e:    # the verdict is judged below
            out.exception = e
        out.elapsed = time.monotonic() - t0
        try:
            await policy.call("rec", {"tag": "after"}, publish=_never)
        except RuntimeError as e:
            out.closed = "closed" in str(e)

    def watch(stop):
        while not stop.wait(0.02):
            rss = _status_kb("VmRSS")
            if rss - out.base_kb > RSS_KILL_KB and not out.killed:
                out.killed = f"grew to {rss / MIB_KB:.0f} MiB: cancelled"
                loop, task = loop_box.get("loop"), loop_box.get("task")
                if loop is not None and task is not None:
                    loop.call_soon_threadsafe(task.cancel)

    runner = threading.Thread(target=asyncio.run, args=(go(),), daemon=True,
                              name=f"hostile-{case.id}")
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,), daemon=True)
    out.base_kb = _status_kb("VmRSS")
    _reset_peak()
    t0 = time.monotonic()
    watcher.start()
    runner.start()
    try:
        runner.join(case.timeout + HARD_EXTRA_S)
        out.hung = runner.is_alive()
        if out.hung:
            out.elapsed = time.monotonic() - t0
        out.peak_kb = _status_kb("VmHWM")
    finally:
        stop.set()
        watcher.join()
        logger.removeHandler(messages)
        logger.setLevel(level)
        if d is not None:
            trace = io.StringIO()
            hostile_launcher.reap(str(d), trace)
            out.trace = trace.getvalue()
    out.records = list(recorder.calls)
    out.log = list(messages.lines)
    out.commands = [argv[1] for argv in sandbox.commands if argv[0] == launcher]
    return out


async def _never(result):
    raise AssertionError("a closed policy published")


# ---- the checks ----------------------------------------------------------------------------

def came_back(o):
    if o.hung:
        return [f"run() did not return within the deadline + {HARD_EXTRA_S:g} s"]
    p = []
    if o.killed:
        p.append(o.killed)
    if o.elapsed > o.case.timeout + ENDING_S + SLACK_S:
        p.append(f"run() took {o.elapsed:.1f} s: more than its deadline {o.case.timeout:g} s "
                 f"+ the ending's {ENDING_S:g} s + {SLACK_S:g} s")
    return p


def memory(o):
    grew = o.peak_kb - o.base_kb
    if grew > MEMORY_BOUND_KB:
        return [f"this process peaked at {o.peak_kb / MIB_KB:.1f} MiB, "
                f"{grew / MIB_KB:.1f} MiB above its {o.base_kb / MIB_KB:.1f} MiB before the run "
                f"(bound {MEMORY_BOUND_KB // MIB_KB} MiB)"]
    return []


def verdict(o):
    """An ExecResult only with the program's own exit code; else an exception that says
    what happened."""
    code = PROGRAMS[o.case.program][1]
    if o.result is not None:
        got = o.result.exit_code
        if code is None and got < 128:
            return [f"an exit code {got} for a program that was still running"]
        if code is not None and got != code:
            return [f"an exit code {got}; the program exited {code}"]
        return []
    e = o.exception
    if e is None:
        return [] if o.hung else ["neither a result nor an exception"]
    if not isinstance(e, (SandboxProgramTimeout, RunError, TimeoutError)):
        return [f"run() raised what says nothing of the run: {type(e).__name__}: {e}"]
    if not str(e).strip():
        return [f"run() raised {type(e).__name__} with no sentence"]
    return []


def closed(o):
    return [] if o.closed or o.hung else ["the policy is still open after run()"]


def delivered_truly(o):
    """Every "delivered" is an answer some launcher took: the program's own only if the
    program printed it, a forged request's only where the hostile command reads answers
    whole (the forgeries); and an answer taken and never said to be is never delivered."""
    p = []
    own = SENT.get(o.case.program)
    printed = "answer " in o.output
    forging = o.case.attack in hostile_launcher.FORGERIES
    for c in o.records:
        if c.outcome != "delivered":
            continue
        if own is not None and c.tool == own[0]:
            if not printed:
                p.append(f"the program's call to {c.tool} is recorded delivered, and the "
                         f"program never had its answer (output {o.output[:300]!r})")
        elif not forging:
            p.append(f"a call to {c.tool} is recorded delivered, with no request of the "
                     "program's nor a forgery that takes its answer")
    return p


def read_as_upstream(attack, command):
    """The arguments of each forged request the launcher sent whole, as maf-sandbox's own
    supervisor reads a request file, and so the answerer, kept to its letter: an event for
    the id asked for, its size exact, the body strict UTF-8 that json.loads takes as an
    object naming the tool with an object of arguments. json.loads takes the last of a key
    twice, an escaped lone surrogate or NUL as that character, and nothing reads the body's
    own id: of hostile_launcher's "bad-" requests these six reach the tool as they would
    under maf-sandbox (bad-dupargs-b, bad-dupkey-b, bad-dupname, bad-escsurrogate,
    bad-nul, bad-idmismatch), a "well-formed request" of the current line's contract: one
    reader, whose reading the policy and the tool share. Never a frame cut short, spliced,
    trailed by garbage, of invalid UTF-8 or for a call not asked for."""
    out = []
    for n in range(1, 100):
        steps = hostile_launcher.FORGERIES[attack](n, command)
        if steps is None:
            break
        for step in steps:
            if not isinstance(step, bytes) or not step.startswith(b'{"event"'):
                continue
            line, _, rest = step.partition(b"\n")
            head = json.loads(line)
            if head.get("id") != n or head.get("size") != len(rest):
                continue
            try:
                req = json.loads(rest.decode("utf-8"))
            except ValueError:
                continue
            if isinstance(req, dict) and req.get("name") == "rec" and \
                    isinstance(req.get("arguments"), dict):
                out.append(req["arguments"])
    return out


def only_sent(o):
    """Every tool call had exactly the arguments of the program's own call or of a forged
    request sent whole and read as maf-sandbox reads one (read_as_upstream), each at most
    once."""
    allowed = {}
    if o.case.program in SENT:
        tool, args = SENT[o.case.program]
        allowed[json.dumps([tool, args], sort_keys=True)] = 0
    if o.case.attack in hostile_launcher.FORGERIES:
        for args in read_as_upstream(o.case.attack, o.case.command):
            allowed[json.dumps(["rec", args], sort_keys=True)] = 0
    p = []
    for tool, args in o.tool_calls:
        key = json.dumps([tool, args], sort_keys=True)
        if key not in allowed:
            p.append(f"a tool ran with arguments no request sent whole carried: {key[:300]}")
        else:
            allowed[key] += 1
            if allowed[key] > 1:
                p.append(f"a tool ran twice on one request: {key[:300]}")
    return p


def text(o, problems):
    return (o.brief() + "\n  - " + "\n  - ".join(problems) +
            "\n  mafhost's log: " + " | ".join(o.log)[-3000:] +
            (f"\n  hostile launcher: {o.trace[-1500:]}" if o.trace else ""))


def expectations(o):
    """What each attack must lead to, beyond the bounds every run keeps."""
    a, p = o.case.attack, []
    outcomes = [(c.tool, c.outcome) for c in o.records]
    if a == "baseline":
        if o.result is None or o.result.exit_code != 0 or "answer" not in o.result.stdout:
            p.append("the benign run over the real launcher did not end cleanly")
        if outcomes != [(SENT[o.case.program][0], "delivered")]:
            p.append(f"the benign run's call is recorded {outcomes}")
        return p
    if a in BROKEN_BY and o.case.transport == "stream" and not o.hung:
        if not any(s in line for line in o.log for s in BROKEN_BY[a]):
            p.append(f"the stream did not break with {' or '.join(map(repr, BROKEN_BY[a]))}")
    if a in ("ack-withheld", "ack-wrong-id", "ack-twice", "ack-unasked"):
        # The stream breaks and the run goes on by relay, which takes the answer: the run
        # ends as the program did, its call delivered.
        if o.result is None or o.result.exit_code != 0 or "answer True" not in o.output:
            p.append("after the stream broke the run did not go on to the program's end")
        if outcomes != [("rec", "delivered")]:
            p.append(f"the program's call is recorded {outcomes}, not delivered once")
    if a == "ack-never":
        # Taken, dropped, never said to be taken: never delivered. The call's bound, where
        # it comes before the run's deadline, fails the run there with the policy's
        # TimeoutError, as maf-sandbox's own channel does; else the run's deadline does.
        if outcomes != [("rec", "delivery_uncertain")]:
            p.append(f"an answer the launcher took and never accepted is recorded {outcomes}")
        if o.case.call_bound < o.case.timeout:
            if not isinstance(o.exception, TimeoutError) or \
                    isinstance(o.exception, SandboxProgramTimeout):
                p.append("the call's bound expired awaiting the acceptance: the run did not "
                         "fail with the policy's TimeoutError")
            elif o.elapsed > o.case.call_bound + ENDING_S:
                p.append(f"the run went on {o.elapsed:.1f} s, past the call's bound and the "
                         "ending's")
        elif o.case.transport == "relay":
            if not isinstance(o.exception, RunError) or "relay" not in str(o.exception):
                p.append("a relay that never returned with the answer is not the run's error")
        elif not isinstance(o.exception, SandboxProgramTimeout):
            p.append("the program never had its answer: the run is not its timeout")
    if a == "ack-early":
        if outcomes not in ([("big", "delivered")], [("big", "delivery_uncertain")]):
            p.append(f"the program's call is recorded {outcomes}")
    if a == "forge-exit" and o.case.program == "exit3" and o.result is not None \
            and o.result.exit_code != 3:
        p.append("the forged exit's 0 was taken over the record's 3")
    if a == "hang" and o.case.command in ("serve", "relay") and o.records:
        if any(c.outcome == "delivered" for c in o.records):
            p.append(f"a launcher that never returned took an answer: {outcomes}")
    return p


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the local sandbox's hostile cases run as root, as maf-launch's users "
                    "run it")
    return tmp_path_factory.mktemp("hostile-channel")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_hostile_launcher(hostile_dir, case):
    o = run_case(hostile_dir, case)
    p = (came_back(o) + memory(o) + verdict(o) + closed(o) + delivered_truly(o) +
         only_sent(o) + expectations(o))
    assert not p, text(o, p)
