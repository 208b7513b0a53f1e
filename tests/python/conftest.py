"""Fixtures for the Python package's tests: mafhost from host/python, over the library and
launcher of this build, run as the user runs it (root on the local backend, where
maf-launch is the only boundary)."""
import asyncio
import atexit
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

# make asan preloads the sanitizer's runtime into this interpreter: the programs it starts
# (the launcher, python3 in the sandbox) are not to get it.
os.environ.pop("LD_PRELOAD", None)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "host" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import mafhost  # noqa: E402

BUILD_TREE = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
# The project's one version (host/include/mafhost.h), as the package reads it.
VERSION = mafhost.__version__
LIBRARY = BUILD_TREE / f"libmafhost.so.{VERSION}"


def _open_to_all(path):
    return all(os.stat(d).st_mode & stat.S_IXOTH for d in [path, *path.parents])


def _public(path):
    """path where the run's own identity can reach it: a build tree in a clone under a
    private (0700) directory is copied once to a directory any user may pass."""
    if _open_to_all(path.parent):
        return path
    pub = Path(tempfile.mkdtemp(prefix="mafhost-test-build-"))
    pub.chmod(0o755)
    shutil.copy2(path, pub / path.name)
    atexit.register(shutil.rmtree, pub, ignore_errors=True)
    return pub / path.name


LAUNCHER = _public(BUILD_TREE / "maf-launch")


@pytest.fixture(scope="session", autouse=True)
def _library():
    assert LIBRARY.exists(), f"{LIBRARY} is not built (run make)"
    assert LAUNCHER.exists(), f"{LAUNCHER} is not built (run make)"
    mafhost.load(str(LIBRARY))
    yield


@pytest.fixture(scope="session")
def run_base():
    """Where run directories go: a directory of its own under /tmp that every user may
    pass (a run's identity must reach its run directory), removed at the end, which must
    find it empty: every run reclaims its own."""
    base = Path(tempfile.mkdtemp(prefix="mafhost-tests-", dir="/tmp"))
    base.chmod(0o711)
    yield base
    left = sorted(p.name for p in base.iterdir())
    shutil.rmtree(base, ignore_errors=True)
    assert not left, f"run directories left behind: {left}"


@pytest.fixture
def local(run_base):
    return mafhost.LocalSandbox(launcher_path=str(LAUNCHER), tmpdir=str(run_base))


def images_support():
    """tests/images/conftest.py as a module of its own: the fixtures engine (the Docker
    engine, or a skip, or a failure under REQUIRE_DOCKER=1) and containers, and docker()."""
    spec = importlib.util.spec_from_file_location("images_support",
                                                  ROOT / "tests" / "images" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def alive(pid):
    """Whether pid runs: a zombie is dead (a killed run's processes are handed to this
    machine's PID 1, which may reap them late)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def arun(coro, timeout=120):
    """Runs coro on a fresh event loop, with a safety net."""
    return asyncio.run(asyncio.wait_for(coro, timeout))
