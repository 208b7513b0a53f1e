"""maf-sandbox's dispatch_over_exec, served by maf-launch: the one import a maf-sandbox host
changes.

    from mafhost.maf_sandbox import dispatch_over_exec   # was: from maf_sandbox import ...

It takes what maf-sandbox's takes (the sandbox, a HostToolRun of the host's own
HostToolRegistry, a GuestRunLayout from guest_run_layout, timeout, poll_interval,
interpreter) and returns what it returns: maf-sandbox's ExecResult (the program's merged
output as stdout, its exit code), SandboxProgramTimeout when the run's own bound expires
(with the output so far, and what the stop reached), and what the backend raised when the
backend fails. Every request the program makes goes to HostToolRun.dispatch, so the
registry's cap, identities, response limits, observers and sentences apply, and the program
reads byte for byte what maf-sandbox's supervisor would have written (see mafhost._upstream).
layout.work is left to the caller; the transport's own files (R/host_tools, and the
launcher's R/tmp) are removed by `maf-launch reclaim`, with no shell.

What differs is how the calls travel. The program runs under `maf-launch run` (its own
identity, no capabilities, seccomp, Landlock), the shim the caller wrote (maf-sandbox's
generated one) is replaced by one that is the same module to the program but hands each call
to the launcher's channel, and the host reads the requests:
- over a stream through the Docker engine (DockerSandbox: libmafhost's Docker backend) where
  the sandbox is maf-sandbox-docker's (it has container_name), one message a call;
- else relay over the sandbox's own exec, one exec a call;
falling back within a run from stream to relay to files, with no call lost or made twice.
Where the sandbox has no maf-launch (none at the launcher path through the engine, or no
answer to `maf-launch --version` over the sandbox's exec), or the layout is not
guest_run_layout's, the run is maf-sandbox's own dispatch_over_exec, unchanged, with the whole
timeout, and the log says why (a warning)."""
from __future__ import annotations

import asyncio
import logging
import math
import posixpath
import time
from typing import TYPE_CHECKING, Optional

from maf_sandbox import ExecResult, SandboxProgramTimeout, guest_run_layout, host_tool_shim
from maf_sandbox import dispatch_over_exec as _maf_sandbox_dispatch_over_exec

from . import _compat_shim, _upstream
from ._run import _Sandbox, _serve, _Spec
from .docker import DockerSandbox
from .errors import BackendError, ConfigError

if TYPE_CHECKING:
    # maf-sandbox's (each an Any where maf-sandbox is not installed).
    from maf_sandbox import GuestRunLayout, HostToolRun
    from maf_sandbox import Sandbox as MafSandbox

    from ._abi import Library
    from ._run import RunResult
    from .sandbox import Sandbox

__all__ = ["dispatch_over_exec", "DEFAULT_LAUNCHER"]

log = logging.getLogger("mafhost")

#: Where maf-launch is in mafhost's images (maf-launch/python-noshell and the others).
DEFAULT_LAUNCHER = "/usr/local/bin/maf-launch"

_SHIM_READ_MAX = 4 << 20
# The most the look for maf-launch (and for the engine) may take before a run.
_LOOK_MAX_S = 15.0

# maf-sandbox's clauses for what a stop reached (see SandboxProgramTimeout).
_SIGNALLED_GROUP = " and its process group was sent SIGKILL"
_NOT_SIGNALLED = " and could not be signalled, so it may still be running"


def _is_standard(layout: GuestRunLayout) -> bool:
    try:
        same: bool = layout == guest_run_layout(layout.directory,
                                                program=posixpath.basename(layout.program))
        return same
    except (ValueError, TypeError, AttributeError):
        return False


async def _engine_backend(sandbox: MafSandbox, launcher: str) -> Optional[DockerSandbox]:
    """mafhost's own Docker backend over the container of a maf-sandbox-docker sandbox, or
    None (not such a sandbox, or its engine not reachable from here: relay then)."""
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


async def _has_launcher(backend: Sandbox, launcher: str, budget: float) -> bool:
    """Whether maf-launch answers at launcher: one look through the engine where the engine
    is ours (a stat), else one exec of `maf-launch --version` (a sandbox object's stat may
    walk every parent directory, and an exec is what the run needs to work anyway)."""
    if isinstance(backend, DockerSandbox) and launcher.startswith("/"):
        return await backend.stat_file(launcher.lstrip("/"), working_directory="/") is not None
    said = await backend.exec([launcher, "--version"], working_directory="/", timeout=budget)
    out = getattr(said, "stdout", "")
    return getattr(said, "exit_code", None) == 0 and isinstance(out, str) and \
        out.startswith("maf-launch ")


async def _replace_shim(backend: Sandbox, layout: GuestRunLayout) -> bool:
    """Puts the channel shim in place of maf-sandbox's generated one. A shim the caller
    wrote itself (anything host_tool_shim would not have written) is left as it is."""
    try:
        data = await backend.read_file(layout.shim.lstrip("/"), working_directory="/",
                                       max_bytes=_SHIM_READ_MAX)
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else str(data)
    except Exception as e:  # noqa: BLE001 -- a shim not read is a shim served as written
        log.info("host tools: the shim at %s was not read (%s): it is served as written",
                 layout.shim, e)
        return False
    ours = _compat_shim.compatible(text, host_tool_shim)
    if ours is None:
        log.info("host tools: %s is not maf-sandbox's generated shim: served as written",
                 layout.shim)
        return False
    await backend.write_file(layout.shim.lstrip("/"), ours.encode(), working_directory="/")
    return True


async def dispatch_over_exec(sandbox: MafSandbox, run: HostToolRun, layout: GuestRunLayout, *,
                             timeout: float, poll_interval: float = 0.2,
                             interpreter: str = "python3", launcher: Optional[str] = None,
                             library: Optional[Library] = None) -> ExecResult:
    """Runs the program detached under maf-launch and serves its host-tool calls until it
    exits, as maf-sandbox's dispatch_over_exec does (see the module's documentation).

    launcher: maf-launch in the sandbox (default: the sandbox's launcher_path, else
    DEFAULT_LAUNCHER). library: a mafhost.Library to use."""
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite positive number of seconds, not {timeout}")
    if not math.isfinite(poll_interval) or poll_interval <= 0:
        raise ValueError(
            f"poll_interval must be a finite positive number of seconds, not {poll_interval}"
        )
    deadline = time.monotonic() + timeout

    async def theirs(why: str) -> ExecResult:
        # With the whole bound, as the caller gave it: its sentences quote it.
        log.warning("host tools: %s: served by maf-sandbox's own transport", why)
        return await _maf_sandbox_dispatch_over_exec(sandbox, run, layout, timeout=timeout,
                                                     poll_interval=poll_interval,
                                                     interpreter=interpreter)

    if not _is_standard(layout):
        return await theirs(f"{layout.directory} is not guest_run_layout's layout")
    launcher = launcher or getattr(sandbox, "launcher_path", None) or DEFAULT_LAUNCHER
    try:
        async with asyncio.timeout(min(timeout, _LOOK_MAX_S)):
            backend = await _engine_backend(sandbox, launcher) or sandbox
            there = await _has_launcher(backend, launcher, min(timeout, _LOOK_MAX_S))
    except Exception as e:  # noqa: BLE001 -- maf-sandbox's transport, as before
        return await theirs(f"looking for {launcher} in the sandbox failed ({e!r})")
    if not there:
        return await theirs(f"there is no maf-launch at {launcher} in this sandbox")
    await _replace_shim(backend, layout)
    counted = _Sandbox(backend)
    # run() (no tools, check=False), with the private parts of its spec: the registry's
    # answerer, the entry the reclaim leaves (layout.work) and the slowest poll.
    argv, left = [interpreter, layout.program], max(deadline - time.monotonic(), 0.001)
    limits = _upstream.limits_for(run)
    spec = _Spec(None, argv, left, run_dir=layout.directory, launcher=launcher,
                 answerer=_upstream.Answerer(run),
                 reclaim_keep=posixpath.basename(layout.work),
                 poll_max_ms=poll_interval * 1000)
    result = await _serve(backend, spec, (), limits, None, False, library, counted)
    return _outcome(result, counted, timeout)


def _outcome(result: RunResult, counted: _Sandbox, timeout: float) -> ExecResult:
    """maf-sandbox's answer for a run's result."""
    printed = "" if result.output_truncated else result.output
    note = _upstream.OUTPUT_TOO_LARGE if result.output_truncated else ""
    if result.status in ("exited", "signaled"):
        return ExecResult(stdout=printed, stderr=note, exit_code=result.exit_code)
    if result.status == "launch_failed":
        return ExecResult(stdout="", stderr=result.error or "the launcher did not start the "
                          "program", exit_code=result.exit_code)
    if result.status == "timeout":
        stopped = not any(e.startswith("maf-launch stop") for e in result.errors)
        if not result.pid:
            raise SandboxProgramTimeout(
                f"the run's {timeout:g}s were gone while starting the program (whether it "
                "got as far as starting one could not be established)", signal="unknown")
        said = f"no output was read — {note}" if note else f"Output so far: {printed[:2000]}"
        raise SandboxProgramTimeout(
            f"the guest program did not finish within {timeout:g}s"
            f"{_SIGNALLED_GROUP if stopped else _NOT_SIGNALLED}. {said}",
            output=printed[:2000], signal="sent" if stopped else "refused",
            reach="group" if stopped else "nothing")
    if counted.exceptions:
        # What the backend raised, as maf-sandbox's supervisor lets it through.
        raise counted.exceptions[0]
    if result.status == "lost":
        raise BackendError(result.error or "the run's supervisor ended without its record",
                           result.error_code, result)
    raise BackendError(result.error or result.status, result.error_code, result)
