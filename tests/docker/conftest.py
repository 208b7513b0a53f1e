"""The Docker tests' session: an engine, an image built FROM scratch of static probes (and
the static launcher), containers run from it, and docker_ops, which drives the Docker
backend through libmafhost's API. Without an engine the tests skip, unless REQUIRE_DOCKER=1
is set: then they fail. Every container and image made here is removed at the end."""
import glob
import io
import json
import os
import select
import shutil
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("MAF_BUILD", Path(__file__).resolve().parents[2] / "build"))
HERE = Path(__file__).resolve().parent
LAUNCHER = BUILD / "maf-launch"
HOST = BUILD / "maf-host"
DOCKER_OPS = BUILD / "docker" / "docker_ops"
PROBES = BUILD / "probes"
TOOLS_SERVER = HERE.parents[0] / "integration" / "programs" / "tools_server.py"
GUEST_LAUNCHER = "/usr/local/bin/maf-launch"
PREFIX = "maf-docker-test-"
REQUIRE = os.environ.get("REQUIRE_DOCKER") == "1"


def engine_socket():
    """Where the engine is as the backend names it in its sentences: DOCKER_HOST's unix
    path, its tcp://HOST:PORT, its ssh:// URL as written, or the default socket (the tests
    of tests/engines run this suite with DOCKER_HOST set to each engine they start)."""
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        return host[len("unix://"):]
    if host.startswith("tcp://"):
        return host.rstrip("/")
    return host or "/var/run/docker.sock"


def engine_is_local_socket():
    return not os.environ.get("DOCKER_HOST") or os.environ["DOCKER_HOST"].startswith("unix://")


def _engine_answers():
    """None when the engine answers the docker CLI (which reaches it as the backend does:
    DOCKER_HOST, its TLS variables, a context), else why not."""
    if shutil.which("docker") is None:
        return "no docker client on this machine (make setup installs it)"
    try:
        proc = subprocess.run(["docker", "version", "--format", "{{.Server.APIVersion}}"],
                              capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return f"the Docker engine at {engine_socket()} did not answer within 60 s"
    if proc.returncode != 0 or not proc.stdout.strip():
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        return (f"the Docker engine at {engine_socket()} cannot be reached: "
                f"{why[-1] if why else 'docker version failed'}")
    return None


def launcher_is_static():
    """False for the sanitizer build (make asan links the launcher against glibc)."""
    out = subprocess.run(["readelf", "-l", str(LAUNCHER)], capture_output=True, text=True)
    return out.returncode == 0 and "INTERP" not in out.stdout


def docker(*args, check=True, timeout=120, **kw):
    proc = subprocess.run(["docker", *args], capture_output=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


@pytest.fixture(scope="session")
def engine():
    why = _engine_answers()
    if why:
        if REQUIRE:
            pytest.fail(f"REQUIRE_DOCKER=1, but {why}")
        pytest.skip(why)
    for p in (DOCKER_OPS, HOST, PROBES / "run_pause"):
        assert p.exists(), f"{p} is not built (make docker builds it)"


@pytest.fixture(scope="session", autouse=True)
def no_ssh_directory_left():
    """Over ssh:// each connection's listener lives in a directory of its own under /tmp,
    removed once ssh has connected: none is left when the backends are done."""
    before = set(glob.glob("/tmp/maf-ssh-*"))
    yield
    assert set(glob.glob("/tmp/maf-ssh-*")) <= before


@pytest.fixture(autouse=True)
def _every_test_needs_the_engine(engine):
    """Skips (or with REQUIRE_DOCKER=1 fails) every test here where no engine answers."""


@pytest.fixture(scope="session")
def image(engine, tmp_path_factory):
    ctx = tmp_path_factory.mktemp("docker-context")
    root = ctx / "rootfs"
    root.mkdir()
    shutil.copy(HERE / "Dockerfile", ctx / "Dockerfile")
    for probe, name in (("run_pause", "pause"), ("run_hello", "hello"), ("spew", "spew"),
                        ("chan_call", "chan_call"), ("rename_on_close", "rename_on_close"),
                        ("echo_stdin", "echo_stdin")):
        shutil.copy(PROBES / probe, root / name)
    if launcher_is_static():
        (root / "usr/local/bin").mkdir(parents=True)
        for d in ("usr", "usr/local", "usr/local/bin"):
            # The program's own identity execs the launcher (maf-launch call): every
            # directory on the way lets anyone pass, whatever the umask here.
            (root / d).chmod(0o755)
        shutil.copy(LAUNCHER, root / "usr/local/bin/maf-launch")
    tag = f"{PREFIX}image:{uuid.uuid4().hex[:12]}"
    docker("build", "-q", "-t", tag, str(ctx), timeout=300)
    yield tag
    docker("rmi", "-f", tag, check=False)


class Containers:
    """Containers run from the image, with the engine's default capabilities and no
    network; each is removed at the end (or at once, by a test)."""

    def __init__(self, image):
        self.image = image
        self.names = []

    def run(self):
        name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
        self.names.append(name)
        docker("run", "-d", "--name", name, "--network", "none", self.image)
        return name

    def remove_all(self):
        for name in self.names:
            docker("rm", "-f", name, check=False)


@pytest.fixture(scope="session")
def containers(image):
    c = Containers(image)
    yield c
    c.remove_all()


@pytest.fixture(scope="module")
def container(containers):
    """A container for the tests of one module, which leave it as they found it, but for
    the commands an exec timed out on (the engine cannot end an exec): those stay in it."""
    return containers.run()


@pytest.fixture
def fresh_container(containers):
    """A container of the test's own, to stop or remove."""
    return containers.run()


@pytest.fixture
def needs_launcher():
    if not launcher_is_static():
        pytest.skip("this launcher is the sanitizer build, linked against glibc: a FROM "
                    "scratch image can only hold the static one (make test runs this)")


class Ops:
    """docker_ops: one operation a line; bytes come back as bytes (in the answer, and in each
    of its "results"). The wait for an answer is a safety net, not an assertion."""

    def __init__(self, env=None):
        self.proc = subprocess.Popen([str(DOCKER_OPS)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)

    def __call__(self, op, **kw):
        self.proc.stdin.write((json.dumps({"op": op, **kw}) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 300)
        assert ready, f"docker_ops did not answer {op} within 300 s"
        line = self.proc.stdout.readline()
        assert line, f"docker_ops ended at {op} (exit {self.proc.wait()})"
        r = json.loads(line)
        for d in [r, *r.get("results", [])]:
            for k in ("out", "err", "hex"):
                if k in d:
                    d[k] = bytes.fromhex(d[k])
        return r

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture
def ops():
    made = []

    def make(env=None):
        o = Ops(env)
        made.append(o)
        return o

    yield make
    for o in made:
        o.close()


def container_id(name):
    return docker("inspect", "-f", "{{.Id}}", name).stdout.decode().strip()


def put_tar(name, members, path="/"):
    """Extracts a tar of members [(TarInfo, bytes or None)] at path in the container, as
    `docker cp -` does: how a test makes symlinks and FIFOs there."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    docker("cp", "-", f"{name}:{path}", input=buf.getvalue())


def listing(name, path):
    """{name below path: (mode, type)} from the engine's archive of path."""
    proc = docker("cp", f"{name}:{path}", "-")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as t:
        return {m.name: (m.mode & 0o7777, m.type) for m in t.getmembers()}


def run_dirs(name):
    """The run directories maf-host left under /tmp in the container."""
    proc = docker("cp", f"{name}:/tmp", "-", check=False)
    if proc.returncode != 0:
        return []
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as t:
        return sorted({m.name.split("/")[1] for m in t.getmembers()
                       if m.name.startswith("tmp/maf-host-")})


def _status(pid):
    """(ppid, depth of its pid namespace) of /proc/pid, or None when it has ended."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["PPid"]), len(fields["NSpid"].split())
    except (OSError, KeyError, ValueError):
        return None


def processes(name):
    """The command lines of the container's processes, its init's first, read from /proc
    (the engines the tests drive run on this machine), as `docker top` lists them: every
    process of its init's pid namespace, and of the namespaces made below it (a process in
    one descends from a process of the container's). Podman's `docker top` cannot list a
    container's processes by fields, so the tests do not ask the engine."""
    pid = int(docker("inspect", "-f", "{{.State.Pid}}", name).stdout.decode().strip() or 0)
    try:
        ns = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return []
    init = _status(pid)
    if pid <= 0 or init is None:
        return []

    def inside(p, hops=64):
        while hops > 0:
            try:
                if os.readlink(f"/proc/{p}/ns/pid") == ns:
                    return True
            except OSError:
                return False
            st = _status(p)
            if st is None or st[1] <= init[1]:
                return False  # not in a namespace below the container's
            p, hops = st[0], hops - 1
        return False

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or not inside(int(entry)):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().rstrip(b"\0").split(b"\0")
            if argv == [b""]:  # a zombie has no command line left: its name, as ps shows it
                with open(f"/proc/{entry}/comm", "rb") as f:
                    argv = [b"[" + f.read().strip() + b"]"]
        except OSError:  # ended meanwhile
            continue
        found.append((int(entry) != pid, int(entry), b" ".join(argv).decode(errors="replace")))
    return [args for _, _, args in sorted(found)]


def engine_is_podman():
    """True when the engine the tests drive is Podman's Docker-compatible service."""
    out = docker("version", "--format", "{{range .Server.Components}}{{.Name}};{{end}}",
                 check=False).stdout.decode()
    return "Podman Engine" in out


def only_init_left(name, timeout=10.0):
    """True once the container's init is its only process, else what is left (a run's
    supervisor exits right after its markers; init reaps it)."""
    deadline = time.monotonic() + timeout
    while True:
        procs = processes(name)
        if procs == ["/pause"] or time.monotonic() > deadline:
            return procs == ["/pause"] or procs
        time.sleep(0.05)


def host_run(*args, env=None, timeout=180):
    """`maf-host run --json ARGS`: (CompletedProcess, the report or None). The timeout is a
    safety net, not an assertion."""
    proc = subprocess.run([str(HOST), "run", "--json", *map(str, args)], capture_output=True,
                          timeout=timeout, env=env)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    return proc, report
