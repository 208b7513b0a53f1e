"""mafhost on the Docker engine, in a container of maf-launch/python-noshell (no shell in
it): through the package's DockerSandbox (the stream transport), and through a sandbox object
that knows nothing of mafhost and drives the container with `docker exec` and `docker cp`
(foreign.py), as a maf-sandbox user's Docker sandbox does. Skipped where no engine answers,
unless REQUIRE_DOCKER=1."""
import asyncio

import pytest

import mafhost
import programs
from programs import aadd, add
from conftest import ROOT, arun, images_support
from foreign import DockerCliSandbox

images = images_support()
engine, containers = images.engine, images.containers  # fixtures

LAUNCHER = images.IN_IMAGE_LAUNCHER
# The images hold the static launcher of `make images` (build/maf-launch). Under make asan
# the build is another one, linked against glibc, which no image can hold: the host side is
# what these tests put under the sanitizers, so the images are taken as make images built
# them.
STATIC = ROOT / "build" / "maf-launch"
if images.LAUNCHER.resolve() != STATIC.resolve():
    images.LAUNCHER = STATIC


PROG = '''
import socket
from maf_host_tools import call, HostToolError
print(call("add", a=40, b=2), call("aadd", a=1, b=1))
try:
    call("boom")
except HostToolError as e:
    print("refused:", e)
try:
    socket.create_connection(("10.0.0.1", 80), timeout=1)
except PermissionError:
    print("egress closed")
'''


def boom():
    raise RuntimeError("no such thing")


TOOLS = [add, aadd, boom]
WANT = "42 2\nrefused: the host tool 'boom' failed: no such thing\negress closed\n"


@pytest.fixture
def noshell(containers):
    if not STATIC.exists():
        pytest.skip(f"{STATIC} is not built: the images hold it (make images)")
    c = containers("python-noshell")
    assert c.exec("sh", "-c", "true").returncode != 0, "python-noshell has a shell"
    return c


def _gone(c, run_dir):
    return c.read(f"{run_dir}/host_tools/program.py") is None


def test_the_package_docker_backend_serves_sync_and_async_tools(noshell):
    async def main():
        async with mafhost.DockerSandbox(noshell.name) as sb:
            await sb.check()
            r = await mafhost.run(sb, PROG, tools=TOOLS, timeout=60)
            return r, sb.requests
    r, requests = arun(main())
    assert r.output == WANT, r.errors
    assert (r.status, r.exit_code, r.calls, r.refusals) == ("exited", 0, 3, 1)
    assert r.transport == "stream" and r.verified
    assert r.record.seccomp == "default"
    assert requests > 0
    assert _gone(noshell, r.run_dir)
    assert noshell.only_init_left() == {}


def test_a_foreign_docker_sandbox_object_serves_sync_and_async_tools(noshell):
    sb = DockerCliSandbox(noshell.name)
    r = arun(mafhost.run(sb, PROG, tools=TOOLS, timeout=120, launcher=LAUNCHER))
    assert r.output == WANT, r.errors
    assert (r.exit_code, r.calls, r.refusals) == (0, 3, 1)
    assert r.transport == "relay"
    assert set(sb.calls) <= {"exec", "write_file", "read_file", "stat_file"}
    assert _gone(noshell, r.run_dir)
    assert noshell.only_init_left() == {}


def test_runs_at_once_in_one_container_and_a_deadline(noshell):
    async def main():
        async with mafhost.DockerSandbox(noshell.name) as sb:
            runs = [mafhost.run(sb, programs.calls(i), tools=[add], timeout=120)
                    for i in range(1, 6)]
            late = mafhost.run(sb, "import time\nprint('begun', flush=True)\n"
                                   "time.sleep(60)\n", timeout=3, check=False)
            return await asyncio.gather(late, *runs)
    late, *rs = arun(main(), timeout=300)
    for i, r in enumerate(rs, 1):
        assert (r.output, r.calls) == (f"total {programs.total(i)}\n", i)
    assert late.status == "timeout" and late.output == "begun\n"
    assert noshell.only_init_left() == {}


def test_a_launch_failure_in_the_container(noshell):
    async def main():
        async with mafhost.DockerSandbox(noshell.name) as sb:
            return await mafhost.run(sb, argv=["/bin/sh", "-c", "true"], timeout=30)
    with pytest.raises(mafhost.LaunchFailed) as ei:
        arun(main())
    assert ei.value.result.exit_code == 127 and "/bin/sh" in str(ei.value)
