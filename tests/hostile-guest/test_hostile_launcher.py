"""A launcher turned hostile, on every transport, under both hosts, locally and in a
container: each run must come back within its deadline and the ending's budget, with the
host's memory at most 64 MiB above its baseline, with no verdict the supervisor's record
does not give, and with no tool run on arguments the program did not send."""
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_spec = importlib.util.spec_from_file_location(
    "maf_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
_conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conf)

BUILD = _conf.BUILD
HOST = BUILD / "maf-host"
LAUNCHER = BUILD / "maf-launch"
LIBRARY = Path(os.environ.get("MAF_BUILD", ROOT / "build")) / "libmafhost.so.0.2.0"
IMAGE = f"{os.environ.get('MAF_IMAGE_PREFIX', 'maf-launch')}/python-noshell"
IN_IMAGE_LAUNCHER = "/usr/local/bin/maf-launch"

TIMEOUT_S = 4.0
ENDING_S = 15.0          # MAFH_ENDING_MS: a run is over this long after its end/deadline
SLACK_S = 8.0            # start-up of the host process, and a loaded machine
MEMORY_BOUND_KB = 64 << 10

PROGRAM = """from maf_host_tools import call
import time
print("answer", call("record", who="program"), flush=True)
time.sleep(1)
raise SystemExit(3)
"""

# (the launcher command attacked, the attack, the transport the host is given)
ATTACKS = [
    ("serve", "flood", "stream"), ("serve", "frame", "stream"), ("serve", "hang", "stream"),
    ("serve", "forge", "stream"),
    *[("serve", f"garble:{i}", "stream") for i in range(5)],
    ("relay", "flood", "relay"), ("relay", "hang", "relay"), ("relay", "forge", "relay"),
    ("wait", "flood", "wait"), ("wait", "forge", "wait"),
    ("run", "flood", "relay"), ("run", "hang", "relay"),
    ("stop", "flood", "relay"), ("stop", "hang", "relay"),
    ("reclaim", "flood", "relay"), ("reclaim", "hang", "relay"),
]
DOCKER_ATTACKS = [("serve", "flood", "stream"), ("serve", "forge", "stream"),
                  ("relay", "flood", "relay"), ("stop", "hang", "relay")]
IS_ROOT = os.geteuid() == 0
SANITIZED = LIBRARY.exists() and b"libasan" in subprocess.run(
    ["ldd", str(LIBRARY)], capture_output=True).stdout


def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if SANITIZED:
        # Freed memory waits in ASan's quarantine (256 MiB by default): kept small, so
        # that the peak measures what the host holds.
        env["ASAN_OPTIONS"] = "quarantine_size_mb=8:detect_leaks=0"
    return env


def _kill_left(tag):
    """Kills what a hostile launcher left behind (its setsid'd children) on this machine."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if tag.encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


class Guest:
    """Where the hostile launcher is: a directory of this machine, or one in a container."""

    def __init__(self, container=None):
        self.container = container
        self.dir = Path(tempfile.mkdtemp(prefix="mafhost-hostile-", dir="/tmp"))
        self.dir.chmod(0o755)
        shutil.copy(HERE / "hostile_launcher.py", self.dir / "maf-launch")
        (self.dir / "maf-launch").chmod(0o755)
        (self.dir / "real").write_text(IN_IMAGE_LAUNCHER if container else str(LAUNCHER))
        self.launcher = str(self.dir / "maf-launch")
        if container:
            subprocess.run(["docker", "cp", str(self.dir), f"{container}:/hostile"],
                           check=True, capture_output=True)
            self.launcher = "/hostile/maf-launch"

    def set_mode(self, mode):
        (self.dir / "mode").write_text(mode)
        if self.container:
            subprocess.run(["docker", "cp", str(self.dir / "mode"),
                            f"{self.container}:/hostile/mode"], check=True,
                           capture_output=True)

    def backend(self):
        return f"docker:{self.container}" if self.container else "local"

    def close(self):
        _kill_left(str(self.dir))
        shutil.rmtree(self.dir, ignore_errors=True)


def c_host(guest, transport, launcher, log):
    """maf-host run as a child: (its --json report, seconds, its peak RSS in KiB)."""
    prog = guest.dir / "program.py"
    prog.write_text(PROGRAM)
    prog.chmod(0o644)
    argv = [str(HOST), "run", "--json", "--backend", guest.backend(), "--launcher", launcher,
            "--transport", transport, "--timeout", str(TIMEOUT_S),
            "--tool", f"record=cat >> {log}; echo >> {log}; echo 1", str(prog)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=_env())
        while True:
            pid, _, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t > TIMEOUT_S + 90:
                p.kill()
                os.wait4(p.pid, 0)
                pytest.fail(f"maf-host did not return within {TIMEOUT_S + 90} s")
            time.sleep(0.05)
        p.returncode = 0  # reaped here
        wall = time.monotonic() - t
        out.seek(0)
        err.seek(0)
        text, etext = out.read(), err.read()
    try:
        rep = json.loads(text)
    except ValueError:
        pytest.fail(f"maf-host printed no report: {text[:300]!r} {etext[-500:]!r}")
    return rep, wall, ru.ru_maxrss


def py_host(guest, transport, launcher, log):
    cfg = {"python_path": str(ROOT / "host" / "python"), "library": str(LIBRARY),
           "log": log, "backend": guest.backend(), "program": PROGRAM,
           "timeout": TIMEOUT_S, "launcher": launcher, "transport": transport}
    env = _env()
    if SANITIZED:
        cc = os.environ.get("CC", "cc")
        env["LD_PRELOAD"] = subprocess.run([cc, "-print-file-name=libasan.so"],
                                           capture_output=True, text=True).stdout.strip()
    t = time.monotonic()
    try:
        p = subprocess.run([sys.executable, str(HERE / "py_host.py"), json.dumps(cfg)],
                           capture_output=True, timeout=TIMEOUT_S + 90, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the Python host did not return within {TIMEOUT_S + 90} s")
    wall = time.monotonic() - t
    try:
        rep = json.loads(p.stdout.splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"the Python host printed no result: {p.stdout[-300:]!r} "
                    f"{p.stderr[-1500:]!r}")
    return rep, wall, rep["peak_kb"] - rep["base_kb"]


def check(rep, wall, attack):
    """What every hostile run must give, whatever the attack."""
    cmd, how, _ = attack
    assert wall <= TIMEOUT_S + ENDING_S + SLACK_S, (wall, rep)
    assert "Traceback" not in " ".join(rep.get("errors", [])), rep
    if rep["verified"]:
        # The record is the verdict: the program exits 3 (or is stopped at the deadline).
        assert rep["exit_code"] != 0, rep
    if how == "forge" and cmd in ("serve", "relay", "wait"):
        assert rep["exit_code"] != 0, rep
    if cmd in ("serve", "relay", "wait") and how != "forge":
        assert rep["status"] != "exited" or rep["exit_code"] == 3, rep


def logged(log):
    p = Path(log)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def _one(host, guest, attack, baseline_kb):
    cmd, how, transport = attack
    guest.set_mode(f"{cmd}:{how}")
    log = str(guest.dir / "tool.log")
    Path(log).unlink(missing_ok=True)
    try:
        rep, wall, grown = (c_host if host == "c" else py_host)(guest, transport,
                                                                 guest.launcher, log)
    finally:
        _kill_left(str(guest.dir))
    check(rep, wall, attack)
    # No tool ran on arguments the program did not send (a garbled frame, a splice).
    for args in logged(log):
        assert args == {"who": "program"}, (args, rep)
    if grown is not None:
        if host == "c":
            grown -= baseline_kb
        assert grown <= MEMORY_BOUND_KB, f"the host grew by {grown} KiB: {rep}"
    return rep


@pytest.fixture(scope="module")
def local_guest():
    if not IS_ROOT:
        pytest.skip("the local backend's hostile cases run as root, as its users run it")
    g = Guest()
    yield g
    g.close()


@pytest.fixture(scope="module")
def c_baseline(local_guest):
    """maf-host's peak RSS in a run with the real launcher, locally (KiB)."""
    log = str(local_guest.dir / "tool.log")
    rep, _, peak = c_host(local_guest, "stream", str(LAUNCHER), log)
    assert rep["exit_code"] == 3 and logged(log) == [{"who": "program"}], rep
    Path(log).unlink()
    return peak or 0


@pytest.mark.parametrize("host", ["c", "python"])
@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: f"{a[0]}-{a[1]}")
def test_local(host, attack, local_guest, c_baseline):
    _one(host, local_guest, attack, c_baseline)


def _engine():
    try:
        return subprocess.run(["docker", "image", "inspect", IMAGE],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def docker_guest():
    if not _engine():
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"no Docker engine with {IMAGE} (REQUIRE_DOCKER=1)")
        pytest.skip(f"no Docker engine with {IMAGE}")
    cid = subprocess.run(["docker", "run", "-d", "--rm", "--network", "none", IMAGE,
                          "sleep", "infinity"], capture_output=True, text=True,
                         check=True).stdout.strip()
    g = Guest(cid)
    yield g
    g.close()
    subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


@pytest.fixture(scope="module")
def c_docker_baseline(docker_guest):
    log = str(docker_guest.dir / "tool.log")
    rep, _, peak = c_host(docker_guest, "stream", IN_IMAGE_LAUNCHER, log)
    assert rep["exit_code"] == 3, rep
    Path(log).unlink(missing_ok=True)
    return peak or 0


# The C Docker backend has no exec with stdin: its relay writes each answer first.
@pytest.mark.parametrize("host", ["c", "python"])
@pytest.mark.parametrize("attack", DOCKER_ATTACKS, ids=lambda a: f"{a[0]}-{a[1]}")
def test_docker(host, attack, docker_guest, c_docker_baseline):
    _one(host, docker_guest, attack, c_docker_baseline)
