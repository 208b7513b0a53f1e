"""maf-launch in maf-launch/scratch-c, an image built FROM scratch: no shell, no libc,
nothing but the launcher, /hostcall-demo, /tmp and /runs. The static probes a test runs are
uploaded as a host uploads a program (docker cp); host-tool calls are served by hand, the
way a host serves them over the file transport (shared/PROTOCOL.md)."""
import io
import json
import re
import tarfile

import pytest

from conftest import CALLS, HOST_TOOLS, docker, probe


@pytest.fixture
def scratch(containers):
    c = containers("scratch-c")
    c.write("/", {"probes": None, "probes/hello": probe("run_hello"),
                  "probes/pause": probe("run_pause")}, mode=0o755)
    return c


def test_the_image_has_no_shell(scratch):
    for sh in ("sh", "/bin/sh"):
        assert scratch.exec(sh, "-c", "true").returncode != 0


def test_run_in_a_scratch_image(scratch):
    run = scratch.run_dir("r1")
    # docker exec reads the launcher's stdout and stderr to EOF: it returns while the
    # program (3 s) still runs, only because the program holds none of the exec's pipes.
    proc = scratch.launch(run, "/probes/hello", "3", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert lines[-1] == "maf-host-tools: session"
    info = json.loads(lines[0])
    assert scratch.read(f"{run}/{HOST_TOOLS}/program_exit_code") is None, \
        "docker exec returned only after the program ended"
    assert "/probes/hello 3 3" in [cmd for _, cmd in scratch.processes().values()]

    assert scratch.wait_marker(run) == "3"
    tar = tarfile.open(fileobj=io.BytesIO(docker("cp", f"{scratch.name}:{run}", "-").stdout))
    files = {m.name: m for m in tar.getmembers()}
    ht = f"r1/{HOST_TOOLS}"
    assert sorted(n[len(ht) + 1:] for n in files if n.startswith(ht + "/") and
                  n.count("/") == 2) == [CALLS, "program_exit.json", "program_exit_code",
                                         "program_output.txt", "program_pid",
                                         "program_session"]
    read = lambda name: tar.extractfile(files[f"{ht}/{name}"]).read().decode()  # noqa: E731
    assert read("program_output.txt") == "hello from stdout\nhello from stderr\n"
    assert read("program_pid") == str(info["pid"])
    assert re.fullmatch(r"[1-9][0-9]*", read("program_session"))
    assert files["r1/work"].isdir()
    rec = json.loads(read("program_exit.json"))
    assert rec["status"] == "exited" and rec["exit_code"] == 3 and rec["signal"] == 0
    # Nothing of the run is left: only the container's init.
    assert scratch.only_init_left() == {}


def test_timeout_in_a_scratch_image(scratch):
    run = scratch.run_dir("r2")
    proc = scratch.launch(run, "/probes/pause", opts=["--timeout", "1", "--grace", "0.5"])
    assert proc.returncode == 0, proc.stderr
    assert scratch.wait_marker(run) == "143"
    rec = json.loads(scratch.read(f"{run}/{HOST_TOOLS}/program_exit.json"))
    assert rec["status"] == "timeout" and rec["signal"] == 15
    assert scratch.only_init_left() == {}


def test_launch_failure_in_a_scratch_image(scratch):
    run = scratch.run_dir("r3")
    proc = scratch.launch(run, "/no-such-program")
    assert proc.returncode == 127
    assert proc.stdout == b""
    assert proc.stderr.decode().count("\n") == 1
    assert scratch.wait_marker(run) == "127"
    rec = json.loads(scratch.read(f"{run}/{HOST_TOOLS}/program_exit.json"))
    assert rec["status"] == "launch_failed"
    assert scratch.read(f"{run}/{HOST_TOOLS}/program_pid") is None


def serve_one_call(c, run, response):
    """Waits for call 1's request, checks it is hostcall-demo's, and answers it."""
    calls = f"{run}/{HOST_TOOLS}/{CALLS}"
    request = json.loads(c.wait_file(f"{calls}/0001.request.json"))
    assert request == {"id": "0001", "name": "add", "arguments": {"a": 40, "b": 2}}
    c.write(calls, {"0001.response.json": json.dumps(response).encode()})


def test_hostcall_demo_gets_its_answer(scratch):
    run = scratch.run_dir("r4")
    proc = scratch.launch(run, "/hostcall-demo", opts=["--tool", "add"])
    assert proc.returncode == 0, proc.stderr
    serve_one_call(scratch, run, {"value": 42})
    assert scratch.wait_marker(run) == "0"
    assert scratch.output(run) == "40 + 2 = 42\n"


def test_hostcall_demo_refused(scratch):
    run = scratch.run_dir("r5")
    proc = scratch.launch(run, "/hostcall-demo", opts=["--tool", "add"])
    assert proc.returncode == 0, proc.stderr
    serve_one_call(scratch, run, {"refusal": "add is closed today"})
    assert scratch.wait_marker(run) == "1"
    assert scratch.output(run) == ("maf-launch call: refused: add is closed today\n"
                                   "hostcall-demo: the host refused the call to add\n")
