"""maf-sandbox's dispatch_over_exec over maf-sandbox-docker's own sandbox: the container made
by DockerSandboxBackend.acquire() from maf-launch/python-noshell as upstream makes every one
(`docker run -d ... IMAGE sleep infinity`; no sleep is supplied here, the image has it), and
maf-launch in place of the shell launcher, which that image could not run (it has no shell).
Skipped where no engine answers, unless REQUIRE_DOCKER=1."""
import os
import shutil
import subprocess
import uuid

import pytest

from maf_sandbox import (HostToolRegistry, HostToolRun, SandboxKey, SandboxSpec,
                         dispatch_over_exec, guest_run_layout, host_tool_shim)
from maf_sandbox_docker import DockerSandboxBackend, DockerSandboxConfig

from conftest import run
from swap import Swapped

IMAGE = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch") + "/python-noshell"
PROGRAM = r"""
import threading
from maf_host_tools import HostToolError, call, add
print("sequential", [add(left=i, right=1) for i in range(10)])
got = []
def worker(k):
    got.append(add(left=k, right=k))
ts = [threading.Thread(target=worker, args=(k,)) for k in range(10)]
[t.start() for t in ts]
[t.join() for t in ts]
print("threads", sorted(got))
try:
    call("unknown")
except HostToolError as e:
    print("refused", e)
raise SystemExit(7)
"""


@pytest.fixture(scope="module")
def engine():
    why = None
    if shutil.which("docker") is None:
        why = "there is no docker client here"
    elif subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        why = "the Docker engine is not reachable"
    elif subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        why = f"{IMAGE} is not built (make images)"
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
        pytest.skip(why)


def test_upstreams_docker_backend_runs_the_image_and_serves_the_registry(engine):
    backend = DockerSandboxBackend(DockerSandboxConfig())
    key = SandboxKey(scope=f"maf-launch-{uuid.uuid4().hex[:8]}", thread_id="t",
                     agent_dir="upstream")
    spec = SandboxSpec(kind="maf-launch", image=IMAGE, work_dir="/runs")
    calls = []

    def add(left: int, right: int) -> int:
        calls.append((left, right))
        return left + right

    registry = HostToolRegistry(max_dispatches_per_run=32)
    registry.register(add)

    async def go():
        sandbox = await backend.acquire(key, spec)
        try:
            inspected = subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Status}} {{json .Config.Cmd}}",
                 sandbox.container_name], capture_output=True, text=True, check=True)
            assert inspected.stdout.strip() == 'running ["sleep","infinity"]'
            ours = Swapped(sandbox)
            layout = guest_run_layout(f"/runs/{uuid.uuid4().hex}")
            await ours.write_file(layout.program, PROGRAM, working_directory=layout.directory)
            await ours.write_file(layout.shim, host_tool_shim(registry.names()),
                                  working_directory=layout.directory)
            result = await dispatch_over_exec(ours, HostToolRun(registry), layout, timeout=120,
                                              poll_interval=0.02, interpreter="python3")
            left = await sandbox.stat_file(layout.shim, working_directory="/")
            return ours, result, left
        finally:
            await backend.dispose(key)

    ours, result, left = run(go())
    assert result.exit_code == 7, result
    lines = result.stdout.splitlines()
    assert lines[0] == "sequential " + str([i + 1 for i in range(10)])
    assert lines[1] == "threads " + str(sorted(2 * k for k in range(10)))
    assert lines[2].startswith("refused ") and "unknown" in lines[2]
    assert len(calls) == 20
    assert ours.commands[0][:2] == ["/usr/local/bin/maf-launch", "run"]
    assert any(c[:2] == ["/usr/local/bin/maf-launch", "reclaim"] for c in ours.commands)
    assert left is None, "the transport's files were left behind"
