"""maf-launch/python-noshell: Python and maf-launch, and no shell or coreutils, with programs
run by `docker exec C maf-launch run` as a host runs them, their files read back through the
archive API."""
import io
import json
import subprocess
import tarfile

import pytest

from conftest import BUILD, CALLS, HOST_TOOLS, docker

# What no image without a shell may hold, by file name.
SHELLS_AND_TOOLS = {"sh", "bash", "dash", "ash", "zsh", "busybox", "toybox", "ls", "cat", "cp",
                    "env", "rm", "mkdir", "chmod", "coreutils"}


@pytest.fixture
def py(containers):
    return containers("python-noshell")


def launch_program(c, run_name, source, opts=(), files=None):
    """Uploads R with R/host_tools/program.py and runs it under maf-launch run."""
    content = {f"{HOST_TOOLS}/program.py": source.encode()}
    content.update(files or {})
    run = c.run_dir(run_name, content)
    proc = c.launch(run, "python3", f"{run}/{HOST_TOOLS}/program.py", opts=opts)
    assert proc.returncode == 0, proc.stderr
    return run, proc


def test_no_shell_and_no_coreutils(py):
    for argv in (["sh", "-c", "true"], ["/bin/sh", "-c", "true"], ["ls", "/"]):
        proc = py.exec(*argv)
        assert proc.returncode != 0, argv
    export = subprocess.run(["docker", "export", py.name], capture_output=True, timeout=300)
    assert export.returncode == 0, export.stderr
    with tarfile.open(fileobj=io.BytesIO(export.stdout)) as tar:
        names = tar.getnames()
    assert "usr/bin/python3.11" in names
    found = sorted(n for n in names if n.rsplit("/", 1)[-1] in SHELLS_AND_TOOLS)
    assert found == []


def test_exec_of_run_returns_while_the_program_runs(py):
    run, proc = launch_program(py, "r1", "import time\ntime.sleep(3)\nprint('done')\n")
    assert proc.stdout.decode().splitlines()[-1] == "maf-host-tools: session"
    # docker exec has returned, and read the launcher's pipes to EOF: the program still runs.
    assert py.read(f"{run}/{HOST_TOOLS}/program_exit_code") is None
    assert py.wait_marker(run) == "0"
    assert py.output(run) == "done\n"


INET = r"""
import errno, socket
for name in ("AF_INET", "AF_INET6"):
    try:
        socket.socket(getattr(socket, name), socket.SOCK_STREAM)
        print(name, "allowed")
    except OSError as e:
        print(name, "refused", errno.errorcode[e.errno])
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
print("AF_UNIX allowed")
"""


def test_inet_sockets_are_refused(py):
    run, _ = launch_program(py, "r2", INET)
    assert py.wait_marker(run) == "0"
    out = py.output(run).splitlines()
    assert out[0] in ("AF_INET refused EPERM", "AF_INET refused EACCES")
    assert out[1] in ("AF_INET6 refused EPERM", "AF_INET6 refused EACCES")
    assert out[2] == "AF_UNIX allowed"


SHIM_PROGRAM = r"""
import maf_host_tools
print(maf_host_tools.add(a=40, b=2))
"""


def test_the_shim_calls_a_host_tool(py):
    # The module maf-host writes beside a program, its call served by hand as a host serves
    # it over the files.
    shim = subprocess.run([str(BUILD / "maf-host"), "shim", "--tool", "add"],
                          capture_output=True, timeout=60, check=True).stdout
    run, _ = launch_program(py, "r3", SHIM_PROGRAM, opts=["--tool", "add"],
                            files={f"{HOST_TOOLS}/maf_host_tools.py": shim})
    calls = f"{run}/{HOST_TOOLS}/{CALLS}"
    request = json.loads(py.wait_file(f"{calls}/0001.request.json"))
    assert request == {"id": "0001", "name": "add", "arguments": {"a": 40, "b": 2}}
    py.write(calls, {"0001.response.json": b'{"value": 42}'})
    assert py.wait_marker(run) == "0"
    assert py.output(run) == "42\n"


def test_init_runs_cmd_and_exits_with_its_status(containers):
    c = containers("python-noshell", args=["python3", "-c", "import sys; sys.exit(3)"])
    assert docker("wait", c.name).stdout.decode().strip() == "3"


def test_docker_stop_is_forwarded_to_cmd(containers):
    c = containers("python-noshell", args=["python3", "-c",
                                           "import time; print('up', flush=True); "
                                           "time.sleep(600)"])
    # -t 10 said: dockerd waits 10 s by default, Podman not at all (its StopTimeout is 0).
    docker("stop", "-t", "10", c.name, timeout=60)
    # CMD ended by the SIGTERM init passed on, and init exited with its status: 128 + 15.
    assert c.state("ExitCode") == "143"
