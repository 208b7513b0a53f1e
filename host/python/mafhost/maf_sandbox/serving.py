"""What both maf-sandbox lines' ways in share: finding the engine and the launcher behind a
maf-sandbox sandbox, and maf-sandbox's answer for a run's result."""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Optional

from maf_sandbox import ExecResult, SandboxProgramTimeout

from ..docker import DockerSandbox
from ..errors import BackendError, ConfigError
from ..local import EnteredSandbox, NativeSandbox
from .answerer import OUTPUT_TOO_LARGE

if TYPE_CHECKING:
    from maf_sandbox import Sandbox as MafSandbox

    from .._run import RunResult, _Sandbox
    from ..sandbox import Sandbox

log = logging.getLogger("mafhost")

#: Where maf-launch is in mafhost's images (maf-launch/python-noshell and the others).
DEFAULT_LAUNCHER = "/usr/local/bin/maf-launch"

#: The most the look for maf-launch (and for the engine) may take before a run.
LOOK_MAX_S = 15.0

# maf-sandbox's clauses for what a stop reached (see SandboxProgramTimeout).
_SIGNALLED_GROUP = " and its process group was sent SIGKILL"
_NOT_SIGNALLED = " and could not be signalled, so it may still be running"


def of_package(obj: object, package: str) -> bool:
    """Whether obj is of a class of package (a distribution's top-level module)."""
    return any(t.__module__.split(".")[0] == package for t in type(obj).__mro__)


def _pid_one(pid: int) -> bool:
    """Whether pid is the first process of a PID namespace of its own (NSpid: ... 1)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == "1"
    except OSError:
        pass
    return False


def broker_pid(sandbox: Any) -> Optional[int]:
    """The process maf-sandbox-bubblewrap's sandbox serves its operations from (its broker,
    the first process of the sandbox's PID namespace), or None (it is gone). Looked for in
    the sandbox's cgroup v2 group (the backend's cgroup_root, maf-INSTANCE), which holds
    every process of the sandbox, else among the children of the bwrap process the backend
    started."""
    candidates: list[int] = []
    instance = str(getattr(sandbox, "instance_id", "") or "")
    config = getattr(getattr(sandbox, "backend", None), "config", None)
    root = getattr(config, "cgroup_root", None)
    try:
        if root is not None and instance:
            with open(os.path.join(str(root), f"maf-{instance}", "cgroup.procs"),
                      encoding="ascii") as f:
                candidates = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        candidates = []
    if not candidates:
        bwrap = getattr(getattr(sandbox, "process", None), "pid", None)
        if isinstance(bwrap, int):
            try:
                with open(f"/proc/{bwrap}/task/{bwrap}/children", encoding="ascii") as f:
                    candidates = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                candidates = []
    return next((pid for pid in candidates if _pid_one(pid)), None)


async def engine_backend(sandbox: MafSandbox, launcher: str) -> Optional[NativeSandbox]:
    """mafhost's own backend behind a maf-sandbox sandbox, or None (relay then, over the
    sandbox's own exec): the Docker backend over the container of a maf-sandbox-docker
    sandbox (None where its engine is not reachable from here); the local backend entered
    into a maf-sandbox-bubblewrap sandbox (EnteredSandbox, its broker's namespaces, cgroup
    and root), whose own exec holds no run: it kills what each command leaves behind."""
    if of_package(sandbox, "maf_sandbox_bubblewrap"):
        broker = broker_pid(sandbox)
        if broker is None:
            raise ValueError("the bubblewrap sandbox's broker process was not found (in its "
                             "cgroup, or below its bwrap): is it still running?")
        entered = EnteredSandbox(broker, launcher_path=launcher)
        try:
            # Its first op makes the backend: the broker's pidfd, namespaces, cgroup, root.
            await entered.stat_file(launcher.lstrip("/"), working_directory="/")
        except (BackendError, ConfigError, OSError) as e:
            # No relay to fall back to: the sandbox's own exec kills what it leaves behind.
            raise ValueError(f"the bubblewrap sandbox's broker (process {broker}) cannot be "
                             f"entered from here, and its own exec holds no run: {e}") from e
        return entered
    name = getattr(sandbox, "container_name", None)
    if not isinstance(name, str) or not name:
        return None
    try:
        ours = DockerSandbox(name, launcher_path=launcher)
        await ours.check()
    except (BackendError, ConfigError, OSError) as e:
        log.info("host tools: the engine of container %s is not reachable from here (%s): "
                 "calls go by relay over the sandbox's own exec", name, e)
        return None
    return ours


async def has_launcher(backend: Sandbox, launcher: str, budget: float) -> bool:
    """Whether maf-launch answers at launcher: one look through the engine where the engine
    is ours (a stat), else one exec of `maf-launch --version` (a sandbox object's stat may
    walk every parent directory, and an exec is what the run needs to work anyway)."""
    if isinstance(backend, DockerSandbox) and launcher.startswith("/"):
        return await backend.stat_file(launcher.lstrip("/"), working_directory="/") is not None
    return await answers_version(backend, launcher, budget)


async def answers_version(backend: Any, launcher: str, budget: float) -> bool:
    """Whether launcher answers `maf-launch --version` over backend's exec."""
    said = await backend.exec([launcher, "--version"], working_directory="/", timeout=budget)
    out = getattr(said, "stdout", "")
    return getattr(said, "exit_code", None) == 0 and isinstance(out, str) and \
        out.startswith("maf-launch ")


def outcome(result: RunResult, counted: _Sandbox, timeout: float,
            owns_stderr: Optional[bool] = None) -> Any:
    """maf-sandbox's answer for a run's result: its ExecResult, or what it raises.
    owns_stderr: the current line's producer_owns_stderr (True: stderr carries the
    transport's note, never the program's words); None on 0.21, which has no such field."""
    printed = "" if result.output_truncated else result.output
    note = OUTPUT_TOO_LARGE if result.output_truncated else ""
    extra = {} if owns_stderr is None else {"producer_owns_stderr": owns_stderr}
    if result.status in ("exited", "signaled"):
        return ExecResult(stdout=printed, stderr=note, exit_code=result.exit_code, **extra)
    if result.status == "launch_failed":
        return ExecResult(stdout="", stderr=result.error or "the launcher did not start the "
                          "program", exit_code=result.exit_code, **extra)
    if result.status == "timeout":
        stopped = not any(e.startswith("maf-launch stop") for e in result.errors)
        if not result.pid:
            raise SandboxProgramTimeout(
                f"the run's {timeout:g}s were gone while starting the program (whether it "
                "got as far as starting one could not be established)", signal="unknown")
        said = f"no output was read — {note}" if note else f"Output so far: {printed[:2000]}"
        reason = {} if owns_stderr is None else {"output_reason": note}
        raise SandboxProgramTimeout(
            f"the guest program did not finish within {timeout:g}s"
            f"{_SIGNALLED_GROUP if stopped else _NOT_SIGNALLED}. {said}",
            output=printed[:2000], signal="sent" if stopped else "refused",
            reach="group" if stopped else "nothing", **reason)
    if counted.exceptions:
        # What the backend raised, as maf-sandbox's supervisor lets it through.
        raise counted.exceptions[0]
    if result.status == "lost":
        raise BackendError(result.error or "the run's supervisor ended without its record",
                           result.error_code, result)
    raise BackendError(result.error or result.status, result.error_code, result)
