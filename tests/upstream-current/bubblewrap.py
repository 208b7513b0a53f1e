"""maf-sandbox-bubblewrap 0.3.0 on this machine, as far as it can run here.

Its backend refuses to start without a cgroup v2 group delegated with the cpu, memory and
pids controllers (it writes memory.max, memory.swap.max, memory.oom.group, pids.max and
cpu.max into a group of its own for each sandbox, starts bwrap in it and ends the sandbox
with cgroup.kill). A machine whose controllers are bound to cgroup v1 hierarchies (this
one's: /proc/cgroups, and memory in use there by the machine's own process manager) cannot
give it one: a controller serves one hierarchy at a time. What runs here is the backend
less that group, and nothing else changed:
- WithoutResourceGroup is BubblewrapSandboxBackend (its records, locks, dispose, its
  sandbox class _Sandbox and every operation of it) but for acquire's start, which makes no
  group, writes no limit and starts upstream's own bwrap argument list (_arguments: every
  namespace unshared, user namespaces disabled inside, --cap-drop ALL, --die-with-parent,
  the runtime read-only, tmpfs /tmp /run /maf-sandbox) with upstream's broker (_guest.py)
  directly rather than through _launch.py's join; and kill_group, which ends that bwrap
  (its PID namespace's first process dies with it, and the namespace with it) rather than
  the group. BubblewrapSandboxBackend.create(config) is what a host calls where the group
  can be given (tested by test_bubblewrap.py where MAF_BWRAP_CGROUP_ROOT names one).
- runtime() makes the trusted root the backend mounts read-only as the sandbox's /: this
  Debian 13 root's /usr and /etc bound read-only into a directory of its own, with the
  mount points bwrap needs.
Both need root in a mount namespace whose root is a mount's root (tests/upstream/enter with
MAF_ENTER_PIVOT=1): the kernel makes no user namespace for a chroot'ed process."""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator, Optional
from uuid import uuid4

from maf_sandbox import Egress
from maf_sandbox_bubblewrap import BubblewrapSandboxBackend, BubblewrapSandboxConfig
from maf_sandbox_bubblewrap import _backend as upstream

BWRAP = Path("/usr/bin/bwrap")


def why_not_here() -> Optional[str]:
    """Why bubblewrap cannot make a sandbox here, or None."""
    if os.geteuid() != 0:
        return "maf-sandbox-bubblewrap's tests run as root"
    if not BWRAP.exists():
        return f"there is no {BWRAP} (Debian's bubblewrap) in this root"
    probe = subprocess.run([str(BWRAP), "--unshare-user", "--ro-bind", "/", "/", "/bin/true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return ("bwrap cannot make a user namespace here (a chroot'ed process cannot; "
                "tests/upstream/enter with MAF_ENTER_PIVOT=1 can): " + probe.stderr.strip())
    return None


@contextlib.contextmanager
def runtime() -> Iterator[Path]:
    """A trusted root for the sandbox: /usr and /etc bound read-only, the usual links, the
    mount points bwrap needs. Unbound and removed after."""
    top = Path(tempfile.mkdtemp(prefix="maf-bwrap-runtime-"))
    os.chmod(top, 0o755)
    bound: list[Path] = []
    try:
        for name in ("usr", "etc"):
            (top / name).mkdir()
            subprocess.run(["mount", "--bind", f"/{name}", str(top / name)], check=True)
            bound.append(top / name)
            subprocess.run(["mount", "-o", "remount,bind,ro", str(top / name)], check=True)
        for name in ("bin", "sbin", "lib", "lib64"):
            if os.path.lexists(f"/{name}"):
                os.symlink(f"usr/{name}", top / name)
        for name in ("proc", "dev", "tmp", "run", "maf-sandbox"):
            (top / name).mkdir()
        yield top
    finally:
        for mount in reversed(bound):
            subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(top, ignore_errors=True)


class WithoutResourceGroup(BubblewrapSandboxBackend):
    """BubblewrapSandboxBackend less its cgroup group (see the module)."""

    def __init__(self, config: BubblewrapSandboxConfig) -> None:
        super().__init__(config)
        self._bwraps: dict[str, asyncio.subprocess.Process] = {}

    async def kill_group(self, instance: str) -> None:
        process = self._bwraps.pop(instance, None)
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    async def acquire(self, key, spec):  # type: ignore[no-untyped-def]
        # The checks and records of upstream's acquire; its start, less the group.
        if (spec.egress != Egress.CLOSED
                or not spec.required_capabilities <= upstream._CAPABILITIES
                or spec.work_dir not in (None, "/maf-sandbox/work")
                or spec.image not in (None, self.config.runtime_id)
                or spec.image_id is not None):
            raise ValueError("Unsupported Bubblewrap specification")
        identity = upstream._identity(key, spec.kind)
        digest = upstream._digest(identity)
        async with self._serial:
            existing = self._sandboxes.get(digest)
            if existing is not None:
                if existing.dead or existing.spec != spec:
                    raise RuntimeError("Dispose the prior sandbox before replacing it")
                return existing
            record = self.config.state_root / (digest + ".json")
            lock_fd = upstream._lock(record.with_suffix(".lock"))
            instance = uuid4().hex
            try:
                upstream._write_record(record, {"identity": identity, "instance": instance,
                                                "cgroup_root": str(self.config.cgroup_root)})
                process = await asyncio.create_subprocess_exec(
                    *upstream._arguments(self.config), stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                    limit=upstream.FRAME_LIMIT, env={"PATH": "/usr/bin:/bin",
                                                     "LANG": "C.UTF-8"})
                self._bwraps[instance] = process
                assert process.stdout is not None and process.stderr is not None
                diagnostics = asyncio.create_task(upstream._diagnostics(process.stderr))
                async with asyncio.timeout(10):
                    if await process.stdout.readline() != b'{"ready":1}\n':
                        raise RuntimeError("Bubblewrap startup failed: " + await diagnostics)
                sandbox = upstream._Sandbox(self, instance, process, lock_fd, record, spec,
                                            diagnostics)
                self._sandboxes[digest] = sandbox
                return sandbox
            except BaseException:
                await self.kill_group(instance)
                record.unlink(missing_ok=True)
                os.close(lock_fd)
                raise


def config(root: Path, state: Path) -> BubblewrapSandboxConfig:
    """The backend's configuration over root, its records in state: its cgroup_root the group
    MAF_BWRAP_CGROUP_ROOT names, else a path that does not exist (never made)."""
    delegated = os.environ.get("MAF_BWRAP_CGROUP_ROOT")
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    return BubblewrapSandboxConfig(
        runtime_root=root, state_root=state, bwrap=BWRAP,
        cgroup_root=Path(delegated) if delegated else state.parent / "no-cgroup-here")


def make(root: Path, state: Path) -> BubblewrapSandboxBackend:
    """The backend over root, unprobed: BubblewrapSandboxBackend where
    MAF_BWRAP_CGROUP_ROOT names a delegated group, else WithoutResourceGroup."""
    made = config(root, state)
    return BubblewrapSandboxBackend(made) if os.environ.get("MAF_BWRAP_CGROUP_ROOT") \
        else WithoutResourceGroup(made)


@contextlib.asynccontextmanager
async def backend(root: Path, state: Path):
    """maf-sandbox-bubblewrap's backend over root: BubblewrapSandboxBackend.create (its probe)
    where MAF_BWRAP_CGROUP_ROOT names a delegated cgroup v2 group, else
    WithoutResourceGroup; every sandbox still held is stopped after."""
    made = make(root, state)
    if not isinstance(made, WithoutResourceGroup):
        made = await BubblewrapSandboxBackend.create(made.config)
    try:
        yield made
    finally:
        for sandbox in list(made._sandboxes.values()):
            with contextlib.suppress(Exception):
                await sandbox.stop()


