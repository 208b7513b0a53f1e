"""maf-launch as a program channel of maf-sandbox's current line: MafLaunchChannel.

A backend declares it in BackendDeclarations.program_channels (with_maf_launch does that for
any backend, backend.py), the router picks it, a kind (maf-sandbox-codeact) hands it source,
and the channel owns the rest, as maf-sandbox's ProgramChannel protocol has it:
- prepare() verifies python-portable-v1 in the acquired guest: one exec of the interpreter
  (no shell) that also finds the storage base and looks at maf-launch, then the same probe
  as a program under `maf-launch run`, contained as every program is, once per sandbox;
- run() writes the program and the guest API (maf_host_tools: the names, HostToolError, the
  wrappers, sentences and call timeout of maf-sandbox's shim, each call carried by the
  launcher's channel) and runs it under `maf-launch run` in the call's directory, its
  working directory `work`; every request goes through the live HostToolPolicy.call(...,
  publish=), bounded as maf-sandbox's own channel bounds it (BoundedHostToolPolicy: each call
  by the requirements' host_tool_timeout_seconds and the run's deadline), and publish returns
  only once the guest's maf-launch has taken the whole response (answerer.PolicyDoor);
- the policy is revoked (closed) on every way out of run(), a failed staging included;
- it returns what maf-sandbox's exec channel returns: the program's merged output and exit
  code (producer_owns_stderr: stderr is the transport's note), SandboxProgramTimeout at the
  run's bound (the output so far, signal, reach), the failure a policy or the backend
  raised; and it holds a SandboxRunActivity guard for the run where the sandbox has one.
Calls travel over the engine's stream where the sandbox is maf-sandbox-docker's (it has
container_name and the engine answers here); over the stream of the local backend entered
into the sandbox where it is maf-sandbox-bubblewrap's (whose own exec kills what a command
leaves behind: the whole run goes through EnteredSandbox, serving.engine_backend); else by
relay over the sandbox's own exec."""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import json
import logging
import os
import posixpath
import select
import shutil
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional

from maf_sandbox import (Capability, ExecResult, ProgramRequirements, SandboxLimits,
                         TransferLimits, guest_run_layout)
from maf_sandbox._host_tools import BoundedHostToolPolicy
from maf_sandbox.run_activity import SandboxRunActivity

from .._run import _Sandbox, _serve, _Spec
from . import answerer
from ..local import EnteredSandbox, NativeSandbox
from .serving import (DEFAULT_LAUNCHER, LOOK_MAX_S, answers_version, engine_backend,
                      has_launcher, outcome)

if TYPE_CHECKING:
    from maf_sandbox import HostToolPolicy, SandboxSpec
    from maf_sandbox import Sandbox as MafSandbox

    from .._abi import Library

log = logging.getLogger("mafhost")

PROFILE = "python-portable-v1"
# maf-sandbox's probe of the profile, which also says where "." is (the storage base, which a
# relative guest_call_path is below) and what stands at the launcher's path.
_PROBE = (
    "import sys,json,math,re,types,os; "
    "sys.exit(1) if sys.version_info < (3,11) or sys.implementation.name != 'cpython' "
    "else None; "
    "print('maf-python-portable-v1'); print(json.dumps(os.getcwd()))"
)
# The same probe as a program run under maf-launch: what the program will have.
_CONTAINED_PROBE = (
    "import sys,json,math,re,types\n"
    "sys.exit(1) if sys.version_info < (3,11) or sys.implementation.name != 'cpython' "
    "else None\n"
    "print('maf-python-portable-v1')\n"
)
_PROBE_TIMEOUT = 30.0
# Looks at a launcher put in the guest (argv: its path, the digest it must have) and makes it
# executable: "ok", or why not.
_MAKE_EXECUTABLE = (
    "import hashlib,os,sys\n"
    "p,want=sys.argv[1],sys.argv[2]\n"
    "try:\n"
    "    f=open(p,'rb')\n"
    "except FileNotFoundError:\n"
    "    print('absent'); sys.exit(0)\n"
    "with f:\n"
    "    h=hashlib.sha256(f.read()).hexdigest()\n"
    "if h!=want:\n"
    "    print('its sha256 is '+h+', not '+want); sys.exit(0)\n"
    "try:\n"
    "    os.chmod(p,0o755)\n"
    "except OSError as e:\n"
    "    print('chmod: '+str(e)); sys.exit(0)\n"
    "print('ok' if os.access(p,os.X_OK) else 'it is not executable there')\n"
)
# Where a launcher put in the guest goes, below the storage base.
_INSTALLED = ".maf-launch"
# The sandbox instances whose look prepare() keeps (the least recently used go first).
_GUESTS_KEPT = 256
# The guest API module's ceiling, as maf-sandbox's channel has one for its shim.
_GUEST_API_LIMIT = 128 * 1024
# What a run reads back beside the output: the exit marker and record, the launch line.
_RECORD_BYTES = 64 * 1024


@dataclass
class _Guest:
    """What prepare() learned of one sandbox: kept while the sandbox object lives."""
    instance: str
    base: str
    backend: Any
    launcher: str
    verified: bool = False


def _ended(pid: int) -> bool:
    """Whether process pid has ended (a zombie too, which /proc still lists)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:
        return False          # no pidfd here: kept, until the oldest go
    try:
        return bool(select.select([fd], [], [], 0)[0])
    finally:
        os.close(fd)


async def _release(guest: _Guest) -> None:
    """Closes what a sandbox entered holds (a later op would make it again)."""
    if isinstance(guest.backend, EnteredSandbox):
        await guest.backend.aclose()


def _launcher_here(given: Optional[str]) -> Optional[str]:
    """The static maf-launch on this host to put in a guest that has none."""
    return given or os.environ.get("MAFHOST_LAUNCHER") or shutil.which("maf-launch")


def _unsupported(requirements: ProgramRequirements, profiles: frozenset[str]) -> bool:
    return requirements.profile != PROFILE or requirements.profile not in profiles


@dataclass(frozen=True)
class MafLaunchChannel:
    """A ProgramChannel that runs Python programs under maf-launch and carries their host
    tools over its channel (see the module's documentation).

    launcher: maf-launch in the guest. Where the guest has none there, the channel puts the
    static launcher install_from names (default: $MAFHOST_LAUNCHER, else maf-launch on this
    host's PATH) below the storage base, once per sandbox: through the engine for
    maf-sandbox-docker's sandbox, through the sandbox's own write_file elsewhere; made
    executable and checked against its sha256 by the guest's interpreter, and tried, before
    any program runs; where that cannot be done, prepare() says why.
    calls_on_stream: the backend's calls travel over the engine's stream
    (maf-sandbox-docker's): no response crosses the backend's file surface, so
    transfer_limits asks for none. entered: every byte of a run (the program and the guest
    API staged, the calls, the output and the record read back) goes through the local
    backend entered into the sandbox (maf-sandbox-bubblewrap's), never through the
    sandbox's own file operations, so transfer_limits asks for nothing beyond the
    workload's own. exec_timeout, ending_timeout: mafhost.run's, for a run of a program
    (None: the library's, 30 and 15 s); raise both where the engine is slow to finish execs
    under load, since a stop cut at its share of the ending loses the program's output.
    library: a mafhost.Library to use."""

    name: str = "maf-launch"
    interpreter: str = "python3"
    launcher: str = DEFAULT_LAUNCHER
    mode: Literal["exec", "runtime"] = "exec"
    profiles: frozenset[str] = frozenset({PROFILE})
    host_tools: bool = True
    calls_on_stream: bool = False
    entered: bool = False
    install_from: Optional[str] = None
    exec_timeout: Optional[float] = None
    ending_timeout: Optional[float] = None
    library: Optional[Library] = field(default=None, compare=False, repr=False)
    # What prepare() learned, by sandbox instance (a backend may hand out a new object for the
    # same instance at each acquire), else by the sandbox object itself.
    _by_instance: "collections.OrderedDict[str, _Guest]" = field(
        default_factory=collections.OrderedDict, compare=False, repr=False)
    _guests: "weakref.WeakKeyDictionary[Any, _Guest]" = field(
        default_factory=weakref.WeakKeyDictionary, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Refused where the channel is made, not at a program's run.
        _Spec(None, ["x"], 1.0, exec_timeout=self.exec_timeout,
              ending_timeout=self.ending_timeout).check_timeouts()

    def required_capabilities(self, spec: SandboxSpec) -> frozenset[Capability]:
        # EXEC runs the launcher's commands; FILES_IN stages the program and the guest API;
        # FILES_OUT reads back the output and the run's record. Calls need nothing more.
        return frozenset({Capability.EXEC, Capability.FILES_IN, Capability.FILES_OUT})

    def transfer_limits(self, spec: SandboxSpec) -> SandboxLimits:
        if spec.program is None:
            raise ValueError("a program channel requires program requirements")
        none = TransferLimits(0, 0, 0)
        files_in = spec.files_in if Capability.FILES_IN in spec.requires else none
        files_out = spec.files_out if Capability.FILES_OUT in spec.requires else none
        if self.entered:
            return SandboxLimits(files_in=files_in, files_out=files_out)
        tools = spec.host_tools
        staged_one = max(spec.program.max_program_bytes, _GUEST_API_LIMIT if tools else 0)
        per_file = max(files_in.max_bytes_per_file, staged_one)
        total = files_in.max_total_bytes + spec.program.max_program_bytes + \
            (_GUEST_API_LIMIT if tools else 0)
        count = files_in.max_files + (2 if tools else 1)
        output = (min(tools.response_limits.max_total_bytes, answerer.HOST_MAX_OUTPUT)
                  if tools is not None else answerer.HOST_MAX_OUTPUT)
        if tools is not None and not self.calls_on_stream:
            # Relay over a sandbox without an exec that takes input writes each response
            # with write_file: one file a call, refusals included, the one past the cap too.
            calls = tools.max_host_tool_calls_per_run + 1
            one = min(tools.response_limits.max_bytes_per_file + 256,
                      answerer.HOST_MAX_RESPONSE)
            per_file = max(per_file, one)
            total += tools.response_limits.max_total_bytes + calls * 1024
            count += calls
        return SandboxLimits(
            files_in=TransferLimits(per_file, total, count),
            files_out=TransferLimits(max(files_out.max_bytes_per_file, output),
                                     files_out.max_total_bytes + output + _RECORD_BYTES,
                                     files_out.max_files + 3))

    def guest_working_directory(self, guest_call_path: str, *, host_tools: bool = False) -> str:
        # The launcher runs every program in R/work, host tools or not.
        return posixpath.join(guest_call_path, "work")

    async def _guest(self, sandbox: MafSandbox) -> _Guest:
        """What prepare() learns of sandbox: looked at once per sandbox instance."""
        instance = str(getattr(sandbox, "instance_id", "") or "")
        known: Optional[_Guest] = None
        if instance:
            known = self._by_instance.get(instance)
            if known is not None:
                self._by_instance.move_to_end(instance)
                if not isinstance(known.backend, NativeSandbox) and known.backend is not sandbox:
                    # Served by relay: through this object, the instance's newest.
                    known = dataclasses.replace(known, backend=sandbox)
                    self._by_instance[instance] = known
                return known
        else:
            try:
                known = self._guests.get(sandbox)
            except TypeError:      # no weak reference can name it: looked at anew
                known = None
            if known is not None:
                return known
        await self._forget_ended()
        said = await sandbox.exec([self.interpreter, "-c", _PROBE], working_directory=".",
                                  timeout=_PROBE_TIMEOUT)
        lines = said.stdout.splitlines() if said.exit_code == 0 else []
        if len(lines) != 2 or lines[0] != "maf-python-portable-v1":
            raise ValueError("the guest does not satisfy python-portable-v1")
        base = json.loads(lines[1])
        if not isinstance(base, str) or not base.startswith("/"):
            raise ValueError("the guest's storage base is not an absolute path")
        async with asyncio.timeout(LOOK_MAX_S):
            backend = await engine_backend(sandbox, self.launcher) or sandbox
            try:
                there = await has_launcher(backend, self.launcher, LOOK_MAX_S)
            except FileNotFoundError:
                there = False      # a sandbox whose exec raises for a missing program
        launcher = self.launcher if there else await self._put_in(backend, base)
        guest = _Guest(instance, base, backend, launcher)
        if instance:
            self._by_instance[instance] = guest
            while len(self._by_instance) > _GUESTS_KEPT:
                await _release(self._by_instance.popitem(last=False)[1])
        else:
            try:
                self._guests[sandbox] = guest
            except TypeError:
                pass
        return guest

    async def _forget_ended(self) -> None:
        """Lets go of the sandboxes entered whose broker has ended (disposed of): each holds
        the descriptors of the process it entered (its pidfd, its root)."""
        for instance, guest in list(self._by_instance.items()):
            backend = guest.backend
            if isinstance(backend, EnteredSandbox) and _ended(backend.pid):
                del self._by_instance[instance]
                await _release(guest)

    async def _put_in(self, backend: Any, base: str) -> str:
        """Puts this host's maf-launch in a guest that has none, below its storage base, and
        returns its path there; ValueError with the reason where it cannot be done."""
        source = _launcher_here(self.install_from)
        if source is None:
            raise ValueError(
                f"there is no maf-launch at {self.launcher} in the guest, and none on this "
                "host to put in (give install_from=, set MAFHOST_LAUNCHER, or put maf-launch "
                "on PATH; or bake it into the image: see mafhost's README, Images)")
        with open(source, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        target = posixpath.join(base, _INSTALLED, f"maf-launch-{digest[:16]}")

        async def look() -> str:
            said = await backend.exec([self.interpreter, "-c", _MAKE_EXECUTABLE, target,
                                       digest], working_directory="/", timeout=_PROBE_TIMEOUT)
            out = str(getattr(said, "stdout", "")).strip()
            return out if getattr(said, "exit_code", None) == 0 else \
                f"the look exited {getattr(said, 'exit_code', None)}: {out}"

        how = await look()
        if how == "absent":
            log.info("host tools: putting maf-launch (%s) in the guest at %s", source, target)
            await backend.write_file(target.lstrip("/"), data, working_directory="/")
            how = await look()
        # An exec, not has_launcher's look through the engine: a file on a noexec mount is
        # there and does not run.
        if how != "ok" or not await answers_version(backend, target, _PROBE_TIMEOUT):
            raise ValueError(
                f"maf-launch could not be made executable at {target} in the guest ({how}): "
                "bake it into the image at /usr/local/bin/maf-launch (COPY --from="
                "maf-launch/launcher; see mafhost's README, Images)")
        return target

    async def prepare(self, sandbox: MafSandbox, requirements: ProgramRequirements) -> None:
        if _unsupported(requirements, self.profiles):
            raise ValueError("unsupported Python execution profile")
        guest = await self._guest(sandbox)
        if guest.verified:
            return
        # The probe again, as a program under maf-launch run: contained as programs are.
        run_dir = posixpath.join(guest.base, f".maf-launch-probe-{uuid.uuid4().hex}")
        spec = _Spec(_CONTAINED_PROBE, [self.interpreter, posixpath.join(
            run_dir, "host_tools", "program.py")], _PROBE_TIMEOUT, run_dir=run_dir,
            launcher=guest.launcher)
        result = await _serve(guest.backend, spec, (), None, None, False, self.library,
                              _Sandbox(guest.backend))
        if result.status != "exited" or result.exit_code != 0 or \
                result.output.strip() != "maf-python-portable-v1":
            raise ValueError("the guest does not satisfy python-portable-v1 under maf-launch "
                             f"({result.status}, exit {result.exit_code}"
                             f"{': ' + result.error if result.error else ''})")
        guest.verified = True

    async def run(self, sandbox: MafSandbox, code: str, *, requirements: ProgramRequirements,
                  guest_call_path: str, timeout: float,
                  policy: Optional[HostToolPolicy] = None) -> ExecResult:
        try:
            if _unsupported(requirements, self.profiles):
                raise ValueError("unsupported Python execution profile")
            if len(code.encode("utf-8")) > requirements.max_program_bytes:
                raise ValueError("the program exceeds its declared byte limit")
            guest = await self._guest(sandbox)
            run_dir = guest_call_path
            if not posixpath.isabs(run_dir):
                run_dir = posixpath.normpath(posixpath.join(guest.base, run_dir))
            # maf-sandbox's own checks of a run directory (no ':', canonical, ...).
            layout = guest_run_layout(run_dir, program="program.py")
            if not isinstance(sandbox, SandboxRunActivity):
                return await self._run(guest, sandbox, code, layout.directory, timeout,
                                       requirements, policy)
            async with asyncio.timeout(timeout):
                guard = sandbox.run_activity(timeout=timeout)
                activity = await guard.__aenter__()
            try:
                activity.check()
                result = await self._run(guest, sandbox, code, layout.directory, timeout,
                                         requirements, policy)
            except BaseException as e:
                await guard.__aexit__(type(e), e, e.__traceback__)
                raise
            await guard.__aexit__(None, None, None)
            activity.check()
            return result
        finally:
            if policy is not None:
                policy.close()

    async def _run(self, guest: _Guest, sandbox: MafSandbox, code: str, run_dir: str,
                   timeout: float, requirements: ProgramRequirements,
                   policy: Optional[HostToolPolicy]) -> ExecResult:
        counted = _Sandbox(guest.backend)
        argv = [self.interpreter, posixpath.join(run_dir, "host_tools", "program.py")]
        if policy is None:
            spec = _Spec(code, argv, timeout, run_dir=run_dir, launcher=guest.launcher,
                         reclaim_keep="work", exec_timeout=self.exec_timeout,
                         ending_timeout=self.ending_timeout)
            result = await _serve(guest.backend, spec, (), None, None, False, self.library,
                                  counted)
            return outcome(result, counted, timeout, owns_stderr=True)
        deadline = time.monotonic() + timeout
        bounded = BoundedHostToolPolicy(policy, sandbox, deadline=deadline,
                                        timeout=requirements.host_tool_timeout_seconds)
        door = answerer.PolicyDoor(bounded)
        served = answerer.Answerer(door, call_timeout=float(timeout))
        spec = _Spec(code, argv, timeout, run_dir=run_dir, launcher=guest.launcher,
                     answerer=served, write_shim=True, reclaim_keep="work",
                     exec_timeout=self.exec_timeout, ending_timeout=self.ending_timeout)
        task = asyncio.ensure_future(_serve(guest.backend, spec, (), answerer.limits_for(door),
                                            None, False, self.library, counted))

        def stop(failure: BaseException) -> None:
            task.cancel()     # _serve stops the program and reclaims before it goes on

        door.failed = stop
        try:
            result = await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if door.failure is not None and (me is None or not me.cancelling()):
                raise door.failure from None
            raise
        return outcome(result, counted, timeout, owns_stderr=True)
