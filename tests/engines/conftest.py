"""tests/engines: the Docker backend against engines these tests start (engines.py): a
dockerd behind TLS on 127.0.0.1, this machine's engine through ssh to 127.0.0.1, and
Podman's Docker-compatible service. Where one cannot be started the tests skip, unless
REQUIRE_DOCKER=1: then they fail."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
HOST = BUILD / "maf-host"
REQUIRE = os.environ.get("REQUIRE_DOCKER") == "1"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "host" / "python"))

import engines  # noqa: E402


def _engine(kind):
    why = engines.missing(kind)
    if why:
        if REQUIRE:
            pytest.fail(f"REQUIRE_DOCKER=1, but the {kind} engine cannot be started: {why}")
        pytest.skip(why)
    return engines.ENGINES[kind]()


@pytest.fixture(scope="session")
def tls():
    with _engine("tls") as e:
        yield e


@pytest.fixture(scope="session")
def ssh():
    with _engine("ssh") as e:
        yield e


@pytest.fixture(scope="session")
def podman():
    with _engine("podman") as e:
        yield e


def host_new(env, container="maf-engines-test-absent"):
    """maf-host's first step against the engine env reaches (it asks the engine about the
    container): (exit status, its stderr's one line)."""
    proc = subprocess.run([str(HOST), "run", "--backend", f"docker:{container}",
                           "--guest-program", "/x"], capture_output=True, timeout=120, env=env)
    return proc.returncode, proc.stderr.decode(errors="replace").strip()


def absent(where, container="maf-engines-test-absent"):
    """What maf-host says when it reached the engine at where and found no such container."""
    return (125, f"maf-host run: there is no container '{container}' on the Docker engine "
                 f"at {where}")
