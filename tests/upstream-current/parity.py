"""Two ways of serving maf-sandbox-codeact's execute_code over maf-sandbox-docker, each as a
host builds it: maf-sandbox's own exec channel (ExecProgramChannel, which DockerSandboxBackend
declares) in an image with a shell (tests/upstream/shell_image.py), and maf-launch's program
channel (with_maf_launch(DockerSandboxBackend(config))) in maf-launch/python-noshell, which has
none. Each way has one SandboxRouter with the router's defaults but for the isolation floor
(the backend's own, as maf-sandbox-codeact's live tests set it), and an observer that keeps
every record the router emits.

A case is one execute_code call: a tool made by make_codeact_tools over a fresh registry (its
observer keeps the registry's records), on a conversation of its own (so a sandbox of its own,
acquired by the call and disposed after it, the router's default cleanup), invoked as the
agent framework invokes a tool (FunctionTool.invoke). What comes back is an Outcome: what the
model is given, the records, what the tool bodies received and what is left of the sandbox.

Used by test_parity.py, and by agent.py."""
from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import posixpath
import re
import subprocess
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from maf_sandbox import (CallerContext, HostToolRegistry, Isolation, ProgramRequirements,
                         SandboxObserver, SandboxRouter)
from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

from mafhost.maf_sandbox import with_maf_launch

from conftest import ROOT


def by_path(name: str, path: Path) -> Any:
    """The module at path, imported under name without putting its folder on sys.path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# tests/upstream/shell_image.py, by its path: that folder's other modules share names with
# this one's (conftest, local_sandbox).
shell_image = by_path("shell_image", ROOT / "tests" / "upstream" / "shell_image.py")

PREFIX = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch")
NOSHELL_IMAGE = f"{PREFIX}/python-noshell"
SHELL_IMAGE = os.environ.get("MAF_SHELL_IMAGE", f"{PREFIX}/python-busybox-test")
UPSTREAM, OURS = "upstream", "maf-launch"
WAYS = (UPSTREAM, OURS)
IMAGES = {UPSTREAM: SHELL_IMAGE, OURS: NOSHELL_IMAGE}


def _image_there(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image],
                          capture_output=True).returncode == 0


def engine_missing() -> tuple[Optional[str], bool]:
    """(why the Docker side cannot run here or None, whether the image with a shell was built
    now). That image is made from python-noshell where it is missing and this machine has what
    shell_image.py needs (busybox-static); the Debian 13 root the tests run in has not, so
    there it is built before entering the root, as make upstream builds its own."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "the Docker engine is not reachable", False
    if not _image_there(NOSHELL_IMAGE):
        return f"{NOSHELL_IMAGE} is not built (make images)", False
    if _image_there(SHELL_IMAGE):
        return None, False
    try:
        shell_image.build(SHELL_IMAGE, NOSHELL_IMAGE)
    except shell_image.Failed as e:
        return (f"{SHELL_IMAGE} is not built and cannot be made here ({e}); build it with "
                f"tests/upstream/shell_image.py build {SHELL_IMAGE} {NOSHELL_IMAGE}"), False
    return None, True


def remove_shell_image() -> None:
    shell_image.remove(SHELL_IMAGE)


@contextlib.contextmanager
def docker_side() -> Iterator[None]:
    """For a fixture that runs both ways: skips its tests where engine_missing() says the
    Docker side cannot run here (fails them under REQUIRE_DOCKER=1), and removes the image with
    a shell after them where it was built for them."""
    why, built = engine_missing()
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
        pytest.skip(why)
    try:
        yield
    finally:
        if built:
            remove_shell_image()


class RunEnds(logging.Handler):
    """How each maf-launch run ended, by run directory, from the mafhost logger's line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.status: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "run %s: ended, %s, exit code %s" and isinstance(record.args, tuple):
            self.status[str(record.args[0])] = str(record.args[1])


class Recorder(SandboxObserver):
    """Every record handed to this observer, in order; each handed on to `then` too, where
    there is one (a router and a registry take one observer each)."""

    def __init__(self, then: Optional[SandboxObserver] = None) -> None:
        self.events: list[Any] = []
        self.then = then

    def keep(self, event: Any) -> None:
        self.events.append(event)
        if self.then is not None:
            event.deliver_to(self.then)


for _method in [m for m in vars(SandboxObserver) if not m.startswith("_")]:
    setattr(Recorder, _method, lambda self, event: self.keep(event))


@dataclass
class Case:
    """One execute_code call and what both ways must give back.

    registry(log, observer) builds the registry, recording to observer (its tools append what
    they receive to log); program is the code the model wrote. exit, outcomes and shows pin
    what both ways give (so that two ways failing alike fail): the exit the model is told of
    ("0", a code, or "none" for no exit status), the HostToolCalled outcomes in order, and a
    text the model's items contain."""
    registry: Callable[[list, SandboxObserver], HostToolRegistry]
    program: str
    exit: str
    outcomes: tuple[str, ...]
    shows: str
    timeout: int = 30                  # make_codeact_tools' exec_timeout_seconds
    host_tool_timeout: float = 30.0    # ProgramRequirements.host_tool_timeout_seconds
    unordered: bool = False            # calls made from threads: their order is the guest's
    # The caller cancels execute_code half a second after the first call was answered
    # ("after a call") or after a tool body was entered ("during a call").
    cancel: Optional[str] = None


@dataclass
class Outcome:
    model: list                       # execute_code's items: (type, text, additional_properties)
    raised: Optional[str]             # the exception invoke raised instead, by name
    calls: list                       # the registry's HostToolCalled records, projected
    router: list                      # the router's records about the call, projected
    processes: list                   # ProcessesObserved and ProcessCleanup, projected
    log: list                         # what the tool bodies received
    left: list                        # containers of the call's conversation still there
    # How the run ended, as its supervisor says: maf-launch's, from mafhost's log ("exited",
    # "signaled", "timeout", "stopped"); maf-sandbox's, its ProcessCleanup ("absent", "sent").
    ended: Optional[str] = None
    seconds: float = 0.0
    attempts: int = 1
    events: list = field(default_factory=list, repr=False)

    @property
    def exit(self) -> str:
        """How the program ended, as the model is told: "0", its exit code, or "none" where
        the call reached no exit status (a timeout, a failure, a cancel)."""
        texts = [text for _, text, _ in self.model]
        if "Result: ok" in texts:
            return "0"
        for text in texts:
            found = re.search(r"\bexit code: (-?\d+)\Z", text)
            if found:
                return found.group(1)
        return "none"

    @property
    def text(self) -> str:
        return "\n".join(text for _, text, _ in self.model)


_CALL_ID = re.compile(r"\b[0-9a-f]{32}\b")


def normalized(text: str) -> str:
    """text with the call's own id (its directory's name, which is random) written <call>."""
    return _CALL_ID.sub("<call>", text)


def project(event: Any) -> tuple:
    """What of a record is compared: all but ids, keys (each way has its conversations) and
    seconds."""
    name = type(event).__name__
    if name == "HostToolCalled":
        return (event.tool, event.declared, event.source, event.sink, event.identity,
                event.outcome, event.refusal, event.response_bytes, event.calls,
                event.host_started, event.host_completed)
    if name == "SandboxAcquired":
        return (name, event.backend, event.isolation, event.isolation_scope, event.refusal,
                event.program_channel)
    if name == "SandboxDisposed":
        return (name, event.backend, event.outcome, event.failure)
    if name == "ToolCallEnded":
        return (name, event.tool, event.kind, event.failure, event.unclean, event.fed)
    if name == "ProcessesObserved":
        return (name, event.phase, event.incomplete, event.unavailable)
    if name == "ProcessCleanup":
        return (name, event.outcome, event.reach, event.signal)
    return (name,)


def _thread(event: Any) -> Optional[str]:
    """The conversation a router's record is about (every record a call makes names one)."""
    if hasattr(event, "thread_id"):
        return str(event.thread_id)
    key = getattr(event, "key", None)
    if key is None:
        keys = getattr(event, "keys", ())
        key = keys[0] if keys else None
    return getattr(key, "thread_id", None)


async def _no_files(store: Any) -> list:
    return []


class Ways:
    """One router a way, over its own DockerSandboxBackend; every call on a conversation of
    its own under one scope, all disposed by close()."""

    def __init__(self, then: Optional[dict[str, SandboxObserver]] = None) -> None:
        self.scope = f"maf-parity-{uuid.uuid4().hex[:8]}"
        self.recorders = {way: Recorder((then or {}).get(way)) for way in WAYS}
        backends = {UPSTREAM: DockerSandboxBackend(DockerSandboxConfig()),
                    OURS: with_maf_launch(DockerSandboxBackend(DockerSandboxConfig()))}
        self.routers = {way: SandboxRouter([backends[way]], min_isolation=Isolation.CONTAINER,
                                           observer=self.recorders[way]) for way in WAYS}
        self.threads: list[tuple[str, str]] = []
        self.ends = RunEnds()

    def tool(self, way: str, case: Case, log: list, recorder: SandboxObserver) -> tuple:
        """(the conversation, case's execute_code tool on it): a conversation of its own, and a
        registry of its own, built by case.registry(log, recorder)."""
        from maf_sandbox_codeact import make_codeact_tools

        thread = f"{way}-{len(self.threads)}"
        self.threads.append((way, thread))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            registry = case.registry(log, recorder)
        context = CallerContext(current_scope=lambda: self.scope,
                                current_thread_id=lambda: thread, list_files=_no_files)
        (tool,) = make_codeact_tools(
            self.routers[way], "parity", context, host_tools=registry, image=IMAGES[way],
            exec_timeout_seconds=case.timeout,
            program=ProgramRequirements(host_tool_timeout_seconds=case.host_tool_timeout))
        return thread, tool

    async def execute(self, way: str, case: Case) -> Outcome:
        log: list = []
        recorder = Recorder()
        thread, tool = self.tool(way, case, log, recorder)
        routed = self.recorders[way].events
        first = len(routed)
        loop = asyncio.get_running_loop()
        started = loop.time()
        raised, model = None, []
        task = asyncio.ensure_future(tool.invoke(arguments={"code": case.program}))
        if case.cancel:
            def reached() -> bool:
                if case.cancel == "during a call":
                    return bool(log)
                return any(type(e).__name__ == "HostToolCalled" for e in recorder.events)

            while not reached() and not task.done():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            task.cancel()
        try:
            items = await task
            model = [(c.type, normalized(c.text or ""), c.additional_properties or {})
                     for c in items]
        except BaseException as e:  # noqa: BLE001  (a cancel is an outcome here)
            raised = type(e).__name__
        seconds = loop.time() - started
        mine = [e for e in routed[first:] if _thread(e) == thread]
        calls = [project(e) for e in recorder.events if type(e).__name__ == "HostToolCalled"]
        # The call's id names its directory, and the run's (ToolCallEnded.call).
        ids = [e.call for e in mine if type(e).__name__ == "ToolCallEnded"]
        if way == OURS:
            ended = next((status for run_dir, status in self.ends.status.items()
                          if posixpath.basename(run_dir) in ids), None)
        else:
            ended = next((e.outcome for e in recorder.events
                          if type(e).__name__ == "ProcessCleanup"), None)
        if case.unordered:
            calls.sort(key=repr)
            log.sort(key=repr)
        return Outcome(
            model=model, raised=raised, calls=calls, router=[project(e) for e in mine],
            processes=[project(e) for e in recorder.events
                       if type(e).__name__ in ("ProcessesObserved", "ProcessCleanup")],
            log=log, left=await self.left(thread), ended=ended, seconds=seconds,
            events=mine + recorder.events)

    async def left(self, thread: str) -> list:
        """The containers of this scope's conversation thread still there."""
        proc = await asyncio.create_subprocess_exec(
            "docker", "ps", "-aq", "--filter", f"label=maf-sandbox.scope={self.scope}",
            "--filter", f"label=maf-sandbox.thread={thread}",
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out, _ = await proc.communicate()
        return out.decode().split()

    async def close(self) -> None:
        for way, thread in self.threads:
            await self.routers[way].dispose_scope(self.scope, thread)


# What execute_code says when the channel raised: under load, maf-sandbox's own channel
# now and then fails a run of its own accord (`docker pause` refused: "unable to freeze").
COULD_NOT_RUN = "Error: could not run the program in the sandbox"


async def run_all(cases: dict, lanes: int) -> dict:
    """Every case both ways: {name: (upstream's Outcome, maf-launch's Outcome)}. A case runs
    its two ways at once (a sandbox each); `lanes` workers take the cases in order. A case in
    which maf-sandbox's own channel could not run the program is run once more, both ways
    (the reference failing is no answer to compare with); Outcome.attempts counts."""
    ways = Ways()
    results: dict = {}
    queue = list(cases)
    logger = logging.getLogger("mafhost")
    level = logger.level
    logger.addHandler(ways.ends)
    logger.setLevel(logging.INFO)

    async def worker() -> None:
        while queue:
            name = queue.pop(0)
            for attempt in (1, 2):
                up, ours = await asyncio.gather(
                    *(ways.execute(way, cases[name]) for way in WAYS))
                if COULD_NOT_RUN not in up.text:
                    break
            up.attempts = ours.attempts = attempt
            results[name] = (up, ours)

    try:
        await asyncio.gather(*(worker() for _ in range(lanes)))
    finally:
        logger.removeHandler(ways.ends)
        logger.setLevel(level)
        await ways.close()
    return results
