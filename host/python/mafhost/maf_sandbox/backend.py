"""One line to adopt maf-launch on any maf-sandbox backend of the current line:

    router = SandboxRouter([with_maf_launch(DockerSandboxBackend(config))], ...)

with_maf_launch(backend) is the backend, passed through in everything but two things:
- its declarations name maf-launch's program channel first (MafLaunchChannel), before the
  channels the backend declares itself, so the router picks it for programs (host tools or
  not) wherever it is admissible;
- maf-sandbox-docker checks, when it starts a container, that the image has the commands its
  own exec channel needs: `sh` for EXEC and HOST_TOOLS, and `sh`, `mv` and `nohup` for
  HOST_TOOLS. maf-launch needs none of them (its exec is an argv, its calls need no shell), so
  the wrapper asks that backend to acquire for the spec without those two capabilities (and
  without the host-tool surface, which maf-sandbox allows only beside HOST_TOOLS), and an
  image with no shell (maf-launch/python-noshell) is acquired. What the channel needs
  instead (maf-launch and python-portable-v1) it checks itself, at prepare. The router's own
  checks still see the spec as the kind wrote it. maf-sandbox-docker's `reclaim` (a host that
  reuses sandboxes cleans a call's directory with it) runs `rm -rf` in the guest; where the
  image has no `rm` (exit 126 or 127), the wrapper's sandbox makes the same removal with
  `maf-launch reclaim --run-dir DIR` (no symlink followed, no mount crossed) and checks through
  the engine that it is gone, as that backend checks.
Every other attribute and method is the backend's own."""
from __future__ import annotations

import collections
import dataclasses
import posixpath
import weakref
from typing import TYPE_CHECKING, Any, Optional

from maf_sandbox import BackendDeclarations, Capability
from maf_sandbox.paths import confine_resolve_guest_path, resolve_guest_working_directory

from .channel import MafLaunchChannel
from ..local import NativeSandbox
from .serving import DEFAULT_LAUNCHER, engine_backend, of_package

if TYPE_CHECKING:
    from maf_sandbox import SandboxKey, SandboxSpec

# The containers whose missing rm is remembered (MafLaunchBackend.without_rm).
_KEPT = 256
# What maf-sandbox-docker probes the image's shell for and maf-launch serves without one.
_SERVED_WITHOUT_A_SHELL = frozenset({Capability.EXEC, Capability.HOST_TOOLS})


def _is_docker(backend: object) -> bool:
    return of_package(backend, "maf_sandbox_docker")


class MafLaunchBackend:
    """A maf-sandbox backend with maf-launch's program channel declared (with_maf_launch)."""

    def __init__(self, backend: Any, channel: Optional[MafLaunchChannel] = None, *,
                 launcher: str = DEFAULT_LAUNCHER, exec_timeout: Optional[float] = None,
                 ending_timeout: Optional[float] = None) -> None:
        if channel is not None and (exec_timeout is not None or ending_timeout is not None):
            raise TypeError("exec_timeout and ending_timeout are the channel's: give them to "
                            "MafLaunchChannel, or give no channel")
        self.backend = backend
        entered = of_package(backend, "maf_sandbox_bubblewrap")
        self.channel = channel or MafLaunchChannel(
            launcher=launcher, calls_on_stream=_is_docker(backend) or entered, entered=entered,
            exec_timeout=exec_timeout, ending_timeout=ending_timeout)
        self._sandboxes: "weakref.WeakKeyDictionary[Any, _ReclaimsWithoutAShell]" = \
            weakref.WeakKeyDictionary()
        # The instances (containers) whose rm could not run: the image will not grow one, so
        # their next reclaims go to maf-launch's at once (one engine round trip each the less),
        # whatever object the backend hands out for them (the newest 256).
        self.without_rm: "collections.OrderedDict[str, OSError]" = collections.OrderedDict()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    @property
    def name(self) -> str:
        return str(self.backend.name)

    @property
    def isolation(self) -> Any:
        return self.backend.isolation

    def _theirs(self) -> BackendDeclarations:
        return getattr(self.backend, "declarations", None) or BackendDeclarations()

    @property
    def declarations(self) -> BackendDeclarations:
        theirs = self._theirs()
        others = tuple(c for c in theirs.program_channels if c is not self.channel)
        # The channel carries host tools: HOST_TOOLS is declared where the backend has none
        # of its own (maf-sandbox-bubblewrap), as a backend owning that channel declares it.
        capabilities = frozenset(theirs.capabilities) | (
            {Capability.HOST_TOOLS} if self.channel.host_tools else set())
        return dataclasses.replace(theirs, capabilities=capabilities,
                                   program_channels=(self.channel, *others))

    async def acquire(self, key: SandboxKey, spec: SandboxSpec) -> Any:
        if not _is_docker(self.backend):
            if Capability.HOST_TOOLS not in frozenset(self._theirs().capabilities) and (
                    Capability.HOST_TOOLS in spec.requires or spec.host_tools is not None):
                # Declared by the wrapper, served by the channel: nothing the backend is
                # asked for (it refuses a spec requiring what it does not declare).
                spec = dataclasses.replace(spec, requires=spec.requires -
                                           {Capability.HOST_TOOLS}, host_tools=None)
            return await self.backend.acquire(key, spec)
        if spec.requires & _SERVED_WITHOUT_A_SHELL:
            # The surface goes with the capability: maf-sandbox refuses a spec whose host_tools
            # is set and whose requires lacks HOST_TOOLS (maf-sandbox-codeact's spec has both).
            spec = dataclasses.replace(spec, requires=spec.requires - _SERVED_WITHOUT_A_SHELL,
                                       host_tools=None)
        sandbox = await self.backend.acquire(key, spec)
        try:
            ours = self._sandboxes.get(sandbox)
            if ours is None:
                ours = self._sandboxes[sandbox] = _ReclaimsWithoutAShell(sandbox, self,
                                                                         spec)
        except TypeError:       # no weak reference names it: handed on as it is
            return sandbox
        return ours

    def __repr__(self) -> str:
        return f"with_maf_launch({self.backend!r})"


class _ReclaimsWithoutAShell:
    """maf-sandbox-docker's sandbox, whose reclaim takes maf-launch where the image has no
    `rm`; everything else is the sandbox's own."""

    def __init__(self, sandbox: Any, wrapper: MafLaunchBackend, spec: SandboxSpec) -> None:
        self._sandbox = sandbox
        self._wrapper = wrapper
        self._base = spec.work_dir if spec.work_dir is not None else "/maf-sandbox/work"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sandbox, name)

    async def reclaim(self, directory: str, *, working_directory: str, timeout: float) -> None:
        instance = str(getattr(self._sandbox, "instance_id", "") or "")
        without_rm = self._wrapper.without_rm
        refused = without_rm.get(instance) if instance else None
        if refused is None:
            try:
                await self._sandbox.reclaim(directory, working_directory=working_directory,
                                            timeout=timeout)
                return
            except OSError as e:
                if "rm exited 126" not in str(e) and "rm exited 127" not in str(e):
                    raise
                refused = e
                if instance:
                    without_rm[instance] = e
                    while len(without_rm) > _KEPT:
                        without_rm.popitem(last=False)
        # The same target, by the same rules, as the backend's own reclaim.
        working = resolve_guest_working_directory(working_directory, self._base)
        target = directory
        if not posixpath.isabs(target):
            target = confine_resolve_guest_path(target, working)
        if posixpath.normpath(target) != target or target.count("/") < 2:
            raise refused
        # maf-launch where prepare found (or put) it in this sandbox, through the engine
        # prepare found it by.
        channel = self._wrapper.channel
        looked = channel._by_instance.get(instance)
        launcher = looked.launcher if looked is not None else channel.launcher
        engine = looked.backend if looked is not None and \
            isinstance(looked.backend, NativeSandbox) else \
            await engine_backend(self._sandbox, launcher)
        if engine is None:
            raise refused
        said = await engine.exec([launcher, "reclaim", "--run-dir", target],
                                 working_directory="/", timeout=timeout)
        if said.exit_code != 0 or await engine.stat_file(target.lstrip("/"),
                                                          working_directory="/") is not None:
            raise OSError(f"could not reclaim {target}: maf-launch reclaim exited "
                          f"{said.exit_code}: {said.stderr.strip()}") from refused


def with_maf_launch(backend: Any, channel: Optional[MafLaunchChannel] = None, *,
                    launcher: str = DEFAULT_LAUNCHER, exec_timeout: Optional[float] = None,
                    ending_timeout: Optional[float] = None) -> MafLaunchBackend:
    """backend, with maf-launch's program channel declared (see the module's
    documentation). channel: the channel to declare (default: MafLaunchChannel with
    launcher, exec_timeout and ending_timeout, its calls on the engine's stream where
    backend is maf-sandbox-docker's)."""
    return MafLaunchBackend(backend, channel, launcher=launcher, exec_timeout=exec_timeout,
                            ending_timeout=ending_timeout)
