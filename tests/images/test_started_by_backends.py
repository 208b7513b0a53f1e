"""The images as other backends start them: maf-sandbox-docker runs every container as
`docker run -d ... IMAGE sleep infinity` (with --security-opt no-new-privileges and a
--pids-limit), so sleep must be there in images with no coreutils: maf-launch is it, by the
name of a link (/usr/local/bin/sleep) or as `maf-launch sleep`."""
import io
import json
import tarfile
import time

import pytest

from conftest import IN_IMAGE_LAUNCHER, docker

IMAGES = ["launcher", "python-noshell", "scratch-c"]
# What maf-sandbox-docker 0.21's acquire() passes to docker run, less its name and labels.
UPSTREAM_RUN = ("--security-opt", "no-new-privileges", "--pids-limit", "512")


@pytest.mark.parametrize("name", IMAGES)
def test_sleep_infinity_keeps_the_container_running(containers, name):
    c = containers(name, *UPSTREAM_RUN, args=("sleep", "infinity"))
    time.sleep(0.5)
    assert c.state("Status") == "running"
    assert c.state("ExitCode") == "0"
    # No shell, no coreutils: sleep is the launcher.
    assert c.exec("sh", "-c", "true").returncode != 0
    assert c.exec("ls", "/").returncode != 0
    # The directory's archive, whose entries are as they are: Podman's archive of the path
    # itself would follow the link.
    with tarfile.open(fileobj=io.BytesIO(docker("cp", f"{c.name}:/usr/local/bin",
                                              "-").stdout)) as tar:
        entry = tar.getmember("bin/sleep")
    assert entry.issym() and entry.linkname == "maf-launch"


@pytest.mark.parametrize("name", IMAGES)
def test_sleep_infinity_stops_at_once_with_sigterm(containers, name):
    """init forwards SIGTERM to sleep, which ends as coreutils' does (128 + 15)."""
    c = containers(name, *UPSTREAM_RUN, args=("sleep", "infinity"))
    started = time.monotonic()
    docker("stop", "-t", "10", c.name)
    assert time.monotonic() - started < 9, "docker stop had to kill the container"
    assert c.state("ExitCode") == "143"


@pytest.mark.parametrize("name", ["python-noshell", "scratch-c"])
def test_sleep_as_a_command_and_by_its_own_name(containers, name):
    c = containers(name)
    assert c.state("Status") == "running"
    assert c.exec("sleep", "0.1").returncode == 0
    assert c.exec(IN_IMAGE_LAUNCHER, "sleep", "0.05", "0.05s").returncode == 0
    bad = c.exec("sleep", "ten")
    assert bad.returncode == 2
    assert b"sleep: invalid time interval 'ten'" in bad.stderr
    assert c.exec("sleep").returncode == 2
    helped = c.exec("sleep", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith(b"usage: sleep NUMBER[SUFFIX]...")


def test_a_sleep_infinity_container_serves_runs(containers):
    """A run in a container started as maf-sandbox-docker starts it: the program, its
    identity and its markers as with no command."""
    c = containers("python-noshell", *UPSTREAM_RUN, args=("sleep", "infinity"))
    run = c.run_dir("r1", {f"host_tools/program.py": b"import os\nprint('uid', os.getuid())\n"})
    proc = c.launch(run, "python3", f"{run}/host_tools/program.py")
    assert proc.returncode == 0, proc.stderr
    assert c.wait_marker(run) == "0"
    info = json.loads(proc.stdout.decode().splitlines()[0])
    # An identity of the run's own, below 2^21: a tar's owner field holds it, so upstream's
    # Docker backend, which reads the first block of docker cp, sees the file's own header.
    assert info["uid"] == info["gid"] == (1 << 20) + info["supervisor_pid"] < (1 << 21)
    assert c.output(run) == f"uid {info['uid']}\n"
    assert c.exec(IN_IMAGE_LAUNCHER, "reclaim", "--run-dir", run).returncode == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = sorted(cmd for _, cmd in c.processes().values())
        if left == ["sleep infinity"]:
            break
        time.sleep(0.05)
    assert left == ["sleep infinity"], "only init and sleep should be left"
