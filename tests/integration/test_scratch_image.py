"""maf-launch in an image built FROM scratch (images/scratch/Dockerfile): no shell, no libc,
nothing but the launcher and static programs, driven the way a host drives a Docker
sandbox: `docker cp` (the engine's archive API) for files, `docker exec` for commands."""
import io
import json
import re
import shutil
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import HOST_TOOLS, LAUNCHER, launcher_is_static, probe

IMAGE_DIR = Path(__file__).resolve().parents[2] / "images" / "scratch"


def docker(*args, check=True, timeout=120, **kw):
    proc = subprocess.run(["docker", *args], capture_output=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


@pytest.fixture(scope="module")
def container(tmp_path_factory):
    if not launcher_is_static():
        pytest.skip("this launcher is the sanitizer build, linked against glibc: a FROM "
                    "scratch image can only hold the static one (make test runs this)")
    if shutil.which("docker") is None:
        pytest.skip("no docker client on this machine (make setup installs it)")
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    if info.returncode != 0:
        pytest.skip("the Docker engine is not reachable (make setup starts dockerd): " +
                    info.stderr.decode(errors="replace").strip().splitlines()[-1])
    assert LAUNCHER.exists(), f"{LAUNCHER} is not built"
    ctx = tmp_path_factory.mktemp("scratch-context")
    for name in ("Dockerfile", ".dockerignore"):
        shutil.copy(IMAGE_DIR / name, ctx / name)
    shutil.copy(LAUNCHER, ctx / "maf-launch")
    shutil.copy(probe("run_hello"), ctx / "hello")
    shutil.copy(probe("run_pause"), ctx / "pause")
    tag = f"maf-launch-scratch-test:{uuid.uuid4().hex[:12]}"
    name = f"maf-launch-scratch-{uuid.uuid4().hex[:12]}"
    docker("build", "-q", "-t", tag, str(ctx), timeout=300)
    try:
        docker("run", "-d", "--name", name, "--network", "none", tag)
        try:
            yield name
        finally:
            docker("rm", "-f", name, check=False)
    finally:
        docker("rmi", "-f", tag, check=False)


def upload_run_dir(container, tmp_path, run):
    """Creates /runs/RUN in the container through the archive API, as a host would."""
    src = tmp_path / run
    (src / HOST_TOOLS).mkdir(parents=True)
    docker("cp", str(src), f"{container}:/runs/{run}")
    return f"/runs/{run}"


def read_file(container, path):
    """The file's bytes, or None if it does not exist (docker cp streams a tar)."""
    proc = docker("cp", f"{container}:{path}", "-", check=False)
    if proc.returncode != 0:
        if b"No such container:path" in proc.stderr or b"Could not find" in proc.stderr \
                or b"no such file" in proc.stderr.lower():
            return None
        raise AssertionError(proc.stderr.decode(errors="replace"))
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        member = tar.next()
        return tar.extractfile(member).read()


def wait_marker(container, run, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = read_file(container, f"{run}/{HOST_TOOLS}/program_exit_code")
        if data is not None:
            return data.decode()
        time.sleep(0.1)
    raise AssertionError(f"no exit marker in {container}:{run} after {timeout}s")


def fetch_run(container, run, dest):
    docker("cp", f"{container}:{run}", str(dest))
    return dest


def launch_in(container, run, *program, opts=()):
    return docker("exec", container, "/maf-launch", "run", "--run-dir", run, *opts, "--",
                  *program, check=False, timeout=60)


def processes(container):
    """The command lines of the processes in the container."""
    out = docker("top", container, "-eo", "pid,args").stdout.decode().splitlines()[1:]
    return [line.split(None, 1)[1] for line in out if line.strip()]


def only_init_left(container, timeout=10.0):
    """True once the container's init is its only process (the supervisor exits right after
    publishing the markers, and init reaps it)."""
    deadline = time.monotonic() + timeout
    while True:
        procs = processes(container)
        if procs == ["/pause"] or time.monotonic() > deadline:
            return procs == ["/pause"] or procs
        time.sleep(0.05)


def test_the_image_has_no_shell(container):
    proc = docker("exec", container, "/bin/sh", "-c", "true", check=False)
    assert proc.returncode != 0


def test_run_in_a_scratch_image(container, tmp_path):
    run = upload_run_dir(container, tmp_path, "r1")
    # docker exec reads the launcher's stdout and stderr to EOF: it returns while the
    # program (3 s) still runs, only because the program holds none of the exec's pipes.
    proc = launch_in(container, run, "/hello", "3", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert lines[-1] == "maf-host-tools: session"
    info = json.loads(lines[0])
    assert read_file(container, f"{run}/{HOST_TOOLS}/program_exit_code") is None, \
        "docker exec returned only after the program ended"
    assert any(a.startswith("/hello 3 3") for a in processes(container))

    assert wait_marker(container, run) == "3"
    out = fetch_run(container, run, tmp_path / "out")
    ht = out / HOST_TOOLS
    names = sorted(p.name for p in ht.iterdir())
    assert names == ["host_tool_calls", "program_exit.json", "program_exit_code",
                     "program_output.txt", "program_pid", "program_session"]
    assert (ht / "program_output.txt").read_bytes() == \
        b"hello from stdout\nhello from stderr\n"
    assert (ht / "program_pid").read_text() == str(info["pid"])
    assert re.fullmatch(r"[1-9][0-9]*", (ht / "program_session").read_text())
    assert (out / "work").is_dir()
    rec = json.loads((ht / "program_exit.json").read_text())
    assert rec["status"] == "exited" and rec["exit_code"] == 3 and rec["signal"] == 0
    # Nothing of the run is left: only the container's init.
    assert only_init_left(container) is True


def test_timeout_in_a_scratch_image(container, tmp_path):
    run = upload_run_dir(container, tmp_path, "r2")
    proc = launch_in(container, run, "/pause", opts=["--timeout", "1", "--grace", "0.5"])
    assert proc.returncode == 0, proc.stderr
    assert wait_marker(container, run) == "143"
    rec = json.loads(read_file(container, f"{run}/{HOST_TOOLS}/program_exit.json"))
    assert rec["status"] == "timeout" and rec["signal"] == 15
    assert only_init_left(container) is True


def test_launch_failure_in_a_scratch_image(container, tmp_path):
    run = upload_run_dir(container, tmp_path, "r3")
    proc = launch_in(container, run, "/no-such-program")
    assert proc.returncode == 127
    assert proc.stdout == b""
    assert proc.stderr.decode().count("\n") == 1
    assert wait_marker(container, run, timeout=5) == "127"
    rec = json.loads(read_file(container, f"{run}/{HOST_TOOLS}/program_exit.json"))
    assert rec["status"] == "launch_failed"
    assert read_file(container, f"{run}/{HOST_TOOLS}/program_pid") is None
