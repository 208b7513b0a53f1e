"""Both ways of serving a HostToolRegistry over maf-sandbox-docker's own sandbox: maf-sandbox's
dispatch_over_exec with its shell launcher, in the image with a shell (shell_image.py), and
mafhost.maf_sandbox.dispatch_over_exec (the drop-in), in maf-launch/python-noshell, which has
no shell. The containers are made by maf-sandbox-docker's DockerSandboxBackend.acquire(), as
a maf-sandbox host makes them; each run gets a fresh run directory, written as
maf-sandbox-codeact writes one (the program and host_tool_shim's shim).

Used by test_adopt_parity.py and by tests/bench/bench_adopt.py."""
import asyncio
import os
import subprocess
import uuid

import pytest

from maf_sandbox import (HostToolRun, SandboxKey, SandboxSpec, guest_run_layout,
                         host_tool_shim)
from maf_sandbox import dispatch_over_exec as upstream_dispatch
from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

from mafhost.maf_sandbox import dispatch_over_exec as drop_in_dispatch

PREFIX = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch")
NOSHELL_IMAGE = f"{PREFIX}/python-noshell"
SHELL_IMAGE = os.environ.get("MAF_SHELL_IMAGE", f"{PREFIX}/python-busybox-test")
WAYS = ("upstream", "drop-in")


def engine_missing():
    """Why the Docker side cannot run here, or None."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "the Docker engine is not reachable"
    for image, how in ((NOSHELL_IMAGE, "make images"),
                       (SHELL_IMAGE, "make upstream builds it with tests/upstream/"
                                     "shell_image.py")):
        if subprocess.run(["docker", "image", "inspect", image],
                          capture_output=True).returncode != 0:
            return f"{image} is not built ({how})"
    return None


@pytest.fixture(scope="module")
def ways():
    """Ways, open for a test module (skipped where no engine answers or the images are not
    built, unless REQUIRE_DOCKER=1)."""
    why = engine_missing()
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
        pytest.skip(why)
    w = run(Ways().open())
    yield w
    run(w.close())


class Ways:
    """One container of each way, acquired as maf-sandbox-docker acquires them."""

    def __init__(self):
        self.backend = DockerSandboxBackend(DockerSandboxConfig())
        tag = uuid.uuid4().hex[:8]
        self.keys = {way: SandboxKey(scope=f"maf-adopt-{tag}", thread_id=way.replace("-", ""),
                                     agent_dir="adopt") for way in WAYS}
        self.specs = {"upstream": SandboxSpec(kind="adopt", image=SHELL_IMAGE,
                                              work_dir="/runs"),
                      "drop-in": SandboxSpec(kind="adopt", image=NOSHELL_IMAGE,
                                             work_dir="/runs")}
        self.sandboxes = {}

    async def open(self):
        for way in WAYS:
            self.sandboxes[way] = await self.backend.acquire(self.keys[way], self.specs[way])
        return self

    async def close(self):
        for way in WAYS:
            await self.backend.dispose(self.keys[way])

    async def prepare(self, way, program, registry, shim_names=None, call_timeout=None):
        """A fresh run directory in way's container with program and the shim written as
        maf-sandbox-codeact writes them; returns (sandbox, layout)."""
        sandbox = self.sandboxes[way]
        layout = guest_run_layout(f"/runs/{uuid.uuid4().hex}")
        names = registry.names() if shim_names is None else shim_names
        shim = (host_tool_shim(names) if call_timeout is None
                else host_tool_shim(names, call_timeout=call_timeout))
        await sandbox.write_file(layout.program, program, working_directory=layout.directory)
        await sandbox.write_file(layout.shim, shim, working_directory=layout.directory)
        return sandbox, layout

    async def dispatch(self, way, sandbox, registry, layout, **kw):
        fn = upstream_dispatch if way == "upstream" else drop_in_dispatch
        return await fn(sandbox, HostToolRun(registry), layout, **kw)


def run(coro):
    return asyncio.run(coro)


def recorded_results(monkeypatch):
    """The list the drop-in's RunResults go to, one a run, from now on (the test's)."""
    import mafhost.maf_sandbox.legacy as drop_in

    seen = []
    outcome = drop_in.outcome

    def record(result, counted, timeout):
        seen.append(result)
        return outcome(result, counted, timeout)

    monkeypatch.setattr(drop_in, "outcome", record)
    return seen
