"""`maf-launch init` as the ENTRYPOINT of the images: a bare `docker run -d IMAGE` gives a
container that reaps what `docker exec` leaves behind and stops cleanly. The container's
processes are read from this machine's /proc, through the pid namespace of its init."""
import json
import time

import pytest

from conftest import HOST_TOOLS, docker, probe


@pytest.mark.parametrize("name", ["launcher", "python-noshell", "scratch-c"])
def test_a_bare_container_starts_and_stops_with_code_0(containers, name):
    c = containers(name)
    assert c.state("Running") == "true"
    assert c.processes() == {}
    # -t 10 said: dockerd waits 10 s by default, Podman not at all (its StopTimeout is 0).
    docker("stop", "-t", "10", c.name, timeout=60)
    # Ended by itself on SIGTERM: docker stop's SIGKILL after its grace would make it 137.
    assert c.state("ExitCode") == "0"


def test_init_reaps_what_exec_leaves_behind(containers):
    c = containers("scratch-c")
    c.write("/", {"probes": None, "probes/hello": probe("run_hello")}, mode=0o755)
    # Each run's supervisor outlives its docker exec, and is handed to the container's init
    # when the launcher returns; it exits once the markers are written.
    for i in range(20):
        run = c.run_dir(f"r{i}")
        proc = c.launch(run, "/probes/hello", "0")
        assert proc.returncode == 0, proc.stderr
        assert c.wait_marker(run) == "0"
    assert c.only_init_left() == {}


def test_an_init_that_does_not_reap_keeps_zombies(containers):
    """The check above, against a PID 1 that never waits: it finds the zombie."""
    c = containers("python-noshell", "--entrypoint", "python3",
                   args=["-c", "import time; time.sleep(600)"])
    run = c.run_dir("r")
    assert c.launch(run, "python3", "-c", "pass").returncode == 0
    assert c.wait_marker(run) == "0"
    # The supervisor has exited: a zombie nobody reaps (the wait bounds a hang).
    deadline = time.monotonic() + 30
    while not any(state == "Z" for state, _ in c.processes().values()):
        assert time.monotonic() < deadline, f"no zombie in {c.processes()}"
        time.sleep(0.05)


def test_docker_stop_ends_the_runs_and_exits_0(containers):
    c = containers("python-noshell")
    runs = []
    for i in range(2):
        run = c.run_dir(f"r{i}")
        assert c.launch(run, "python3", "-c", "import time; time.sleep(600)").returncode == 0
        runs.append(run)
    # -t 10 said: dockerd waits 10 s by default, Podman not at all (its StopTimeout is 0).
    docker("stop", "-t", "10", c.name, timeout=60)
    assert c.state("ExitCode") == "0"
    # init passed SIGTERM on to every process and waited: each run ended with its markers.
    for run in runs:
        assert c.read(f"{run}/{HOST_TOOLS}/program_exit_code") is not None
        rec = json.loads(c.read(f"{run}/{HOST_TOOLS}/program_exit.json"))
        assert rec["status"] in ("stopped", "signaled") and rec["signal"] == 15
