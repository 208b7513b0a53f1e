"""Fixtures for the image tests: the images `make images` built (maf-launch/launcher,
python-noshell, scratch-c), run on the real Docker engine, each container with --network
none and removed afterwards, driven the way a host drives a Docker sandbox: `docker cp` (the
engine's archive API) for files, `docker exec` for commands.

Without a reachable engine the tests are skipped, unless REQUIRE_DOCKER=1: then they fail."""
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import time
import uuid
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from pidns import processes_beside  # noqa: E402

BUILD = Path(os.environ.get("MAF_BUILD", Path(__file__).resolve().parents[2] / "build"))
LAUNCHER = BUILD / "maf-launch"
PROBES = BUILD / "probes"
PREFIX = os.environ.get("MAF_IMAGE_PREFIX", "maf-launch")
IN_IMAGE_LAUNCHER = "/usr/local/bin/maf-launch"
HOST_TOOLS = "host_tools"
CALLS = "host_tool_calls"


def docker(*args, check=True, timeout=120, **kw):
    """Runs `docker ARGS` and returns the CompletedProcess; the timeout is a safety net."""
    proc = subprocess.run(["docker", *map(str, args)], capture_output=True, timeout=timeout,
                          **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(map(str, args))} exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


def _no_engine(why):
    if os.environ.get("REQUIRE_DOCKER") == "1":
        pytest.fail(f"REQUIRE_DOCKER=1 and {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def engine():
    if shutil.which("docker") is None:
        _no_engine("there is no docker client on this machine (make setup installs it)")
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    if info.returncode != 0:
        last = (info.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        _no_engine(f"the Docker engine is not reachable (make setup starts dockerd): {last}")


_checked = {}


def image(name):
    """The tag of image NAME, once it is known to exist and to hold this build's launcher
    (a tag made by another build would test something else)."""
    tag = f"{PREFIX}/{name}"
    if tag not in _checked:
        if docker("image", "inspect", tag, check=False).returncode != 0:
            pytest.fail(f"the image {tag} is not built (run make images)", pytrace=False)
        cid = docker("create", "--network", "none", tag).stdout.decode().strip()
        try:
            baked = read_file(cid, IN_IMAGE_LAUNCHER)
        finally:
            docker("rm", "-f", cid, check=False)
        built = LAUNCHER.read_bytes()
        if hashlib.sha256(baked or b"").digest() != hashlib.sha256(built).digest():
            pytest.fail(f"{tag} holds another launcher than {LAUNCHER} (run make images)",
                        pytrace=False)
        _checked[tag] = True
    return tag


def read_file(container, path):
    """The bytes of the file at path in the container (running or stopped), or None if it
    does not exist; docker cp streams a tar."""
    proc = docker("cp", f"{container}:{path}", "-", check=False)
    if proc.returncode != 0:
        err = proc.stderr.lower()
        if b"no such container:path" in err or b"could not find" in err or \
                b"no such file" in err:
            return None
        raise AssertionError(proc.stderr.decode(errors="replace"))
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        member = tar.next()
        return tar.extractfile(member).read()


def tar_of(files, mode=0o644):
    """A tar of {relative path: bytes, or None for a directory (0755)}, owned by root, as
    docker cp takes on stdin."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.mtime = int(time.time())
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Container:
    def __init__(self, name):
        self.name = name

    def exec(self, *argv, timeout=60):
        return docker("exec", self.name, *argv, check=False, timeout=timeout)

    def read(self, path):
        return read_file(self.name, path)

    def write(self, directory, files, mode=0o644):
        """Writes {name: bytes} into the existing directory, through the archive API."""
        docker("cp", "-", f"{self.name}:{directory}", input=tar_of(files, mode))

    def run_dir(self, name, files=None):
        """Makes /runs/NAME with R/host_tools and the files given ({path below R: bytes}),
        as a host uploads a run directory, and returns its path."""
        content = {name: None, f"{name}/{HOST_TOOLS}": None}
        content.update({f"{name}/{p}": data for p, data in (files or {}).items()})
        docker("cp", "-", f"{self.name}:/runs", input=tar_of(content))
        return f"/runs/{name}"

    def launch(self, run, *program, opts=()):
        """`docker exec C maf-launch run --run-dir RUN OPTS -- PROGRAM...`."""
        return self.exec(IN_IMAGE_LAUNCHER, "run", "--run-dir", run, *opts, "--", *program)

    def wait_file(self, path, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = self.read(path)
            if data is not None:
                return data
            time.sleep(0.05)
        raise AssertionError(f"no {path} in {self.name} after {timeout}s")

    def wait_marker(self, run):
        return self.wait_file(f"{run}/{HOST_TOOLS}/program_exit_code").decode()

    def output(self, run):
        return self.read(f"{run}/{HOST_TOOLS}/program_output.txt").decode()

    def state(self, field):
        return docker("inspect", "-f", "{{.State.%s}}" % field, self.name).stdout.decode().strip()

    def processes(self):
        """{pid: (state, command line)} of every process in the container but its init, read
        from this machine's /proc: those in the pid namespace of the container's init."""
        init = int(self.state("Pid"))
        return processes_beside(init, os.readlink(f"/proc/{init}/ns/pid"))

    def only_init_left(self, timeout=30.0):
        """Waits until the container's init is its only process (a zombie nobody reaps
        stays forever), and returns what else is left when that does not happen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.processes()
            if not left:
                return {}
            time.sleep(0.05)
        return left


@pytest.fixture
def containers(engine):
    """start(IMAGE_NAME, *run_options, args=()) runs a container of the image, detached,
    with --network none; every one is removed at the end of the test."""
    made = []

    def start(name, *options, args=()):
        cname = f"maf-image-test-{uuid.uuid4().hex[:12]}"
        made.append(cname)
        docker("run", "-d", "--name", cname, "--network", "none", *options, image(name),
               *args)
        return Container(cname)

    yield start
    for cname in made:
        docker("rm", "-f", cname, check=False)


def probe(name):
    p = PROBES / name
    assert p.exists(), f"{p} is not built (run make probes)"
    return p.read_bytes()
