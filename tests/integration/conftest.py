"""Shared fixtures for the integration tests: they run the real binaries from the build."""
import atexit
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

# make asan preloads the sanitizer's runtime into this interpreter (for a test that loads the
# library in-process); the programs the tests start are not to get it.
os.environ.pop("LD_PRELOAD", None)

BUILD_TREE = Path(os.environ.get("MAF_BUILD", Path(__file__).resolve().parents[2] / "build"))
HOST_TOOLS = "host_tools"


def _open_to_all(path):
    """True if every directory from / down to path lets any user pass."""
    p = Path(path).resolve()
    for d in [p, *p.parents]:
        if not os.stat(d).st_mode & stat.S_IXOTH:
            return False
    return True


def _public_build():
    """The binaries the tests run, where any user may reach them. A program run by a
    privileged launcher takes an identity of its own, which must be able to exec what a test
    hands it (maf-launch call, the probes); a build tree in a clone under a private home
    (mode 0700) is out of its reach, so it is copied once to a directory any user may pass."""
    if _open_to_all(BUILD_TREE):
        return BUILD_TREE
    pub = Path(tempfile.mkdtemp(prefix="maf-test-build-"))
    pub.chmod(0o755)
    for name in ("maf-launch", "maf-host"):
        if (BUILD_TREE / name).exists():
            shutil.copy2(BUILD_TREE / name, pub / name)
    if (BUILD_TREE / "probes").is_dir():
        shutil.copytree(BUILD_TREE / "probes", pub / "probes")
    atexit.register(shutil.rmtree, pub, ignore_errors=True)
    return pub


BUILD = _public_build()
LAUNCHER = BUILD / "maf-launch"


@pytest.fixture
def launcher():
    assert LAUNCHER.exists(), f"{LAUNCHER} is not built (run make)"
    return str(LAUNCHER)


@pytest.fixture
def launcher_for_anyone():
    """The launcher, for a test that runs it as another user: BUILD is one any user may
    reach, copied there when the build tree is not (_public_build)."""
    return str(LAUNCHER)


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    return d


def launch(run_dir, *program, opts=(), timeout=30, **kw):
    """Runs `maf-launch run --run-dir R OPTS -- PROGRAM...` and returns the CompletedProcess."""
    argv = [str(LAUNCHER), "run", "--run-dir", str(run_dir), *opts, "--", *program]
    return subprocess.run(argv, capture_output=True, timeout=timeout, **kw)


def wait_exit(run_dir, timeout=30.0):
    """Waits for R/host_tools/program_exit_code and returns its text."""
    marker = Path(run_dir) / HOST_TOOLS / "program_exit_code"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists():
            return marker.read_text()
        time.sleep(0.01)
    raise AssertionError(f"no exit marker in {run_dir} after {timeout}s")


def exit_record(run_dir):
    return json.loads((Path(run_dir) / HOST_TOOLS / "program_exit.json").read_text())


def launch_info(proc):
    """The JSON line maf-launch run prints first."""
    return json.loads(proc.stdout.decode().splitlines()[0])


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# The reference the launcher is compared against: maf-sandbox's shell launcher, rebuilt from
# its documented behaviour (shared/PROTOCOL.md).
REFERENCE = Path(__file__).resolve().parent / "reference" / "run_program.sh"
PROBES = BUILD / "probes"


def probe(name):
    """The path of a static probe built from tests/probes/NAME.c."""
    p = PROBES / name
    assert p.exists(), f"{p} is not built (run make probes)"
    return str(p)


def run_reference(run_dir, timeout=30, **kw):
    """Runs upstream's way: R/host_tools/run_program.sh (copied there, as the host uploads
    it) with `sh`, which starts `python3 R/host_tools/program.py`. Returns the
    CompletedProcess."""
    ht = Path(run_dir) / HOST_TOOLS
    ht.mkdir(parents=True, exist_ok=True)
    (ht / "run_program.sh").write_bytes(REFERENCE.read_bytes())
    return subprocess.run(["sh", str(ht / "run_program.sh")], capture_output=True,
                          timeout=timeout, **kw)


# maf-host: the CLI over libmafhost, and the programs and tools its tests use.
HOST = BUILD / "maf-host"
PROGRAMS = Path(__file__).resolve().parent / "programs"
HOST_PYTHON = "/usr/bin/python3"  # tools and tools servers run on the host with this


@pytest.fixture
def host():
    assert HOST.exists(), f"{HOST} is not built (run make)"
    return str(HOST)


def host_tool(script, *args):
    """A COMMAND for --tool NAME=COMMAND or --tools-server: the host's python3 running
    tests/integration/programs/SCRIPT ARGS, quoted for sh -c."""
    import shlex

    return " ".join(shlex.quote(str(a)) for a in (HOST_PYTHON, PROGRAMS / script, *args))


def host_run(program, *opts, args=(), timeout=120, json_out=True, **kw):
    """Runs `maf-host run [--json] OPTS PROGRAM -- ARGS` (PROGRAM relative to
    tests/integration/programs unless absolute). Returns (CompletedProcess, the --json
    report or None). The timeout is a safety net, not an assertion."""
    prog = Path(program)
    if not prog.is_absolute():
        prog = PROGRAMS / prog
    argv = [str(HOST), "run", *(["--json"] if json_out else []), *opts, str(prog), "--",
            *map(str, args)]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, **kw)
    report = None
    if json_out:
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            pass
    return proc, report


def output_lines(report):
    """The program's output lines that are JSON objects, parsed."""
    out = []
    for line in report["output"].splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def launcher_is_static():
    """False for the sanitizer build (make asan links the launcher against glibc)."""
    out = subprocess.run(["readelf", "-l", str(LAUNCHER)], capture_output=True, text=True)
    return out.returncode == 0 and "INTERP" not in out.stdout
