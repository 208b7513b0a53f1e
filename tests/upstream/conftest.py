"""The upstream tests: maf-sandbox 0.21 itself (../shared/upstream, beside the checkout, as
published) with maf-launch in place of its shell launcher. They run in the Debian 13 root
(Python 3.13; maf-sandbox needs 3.12 or later) that `make upstream` makes and enters
(.ci/debian13, tests/upstream/enter), as root.

Skipped, with the reason, where the upstream folder is absent or the interpreter too old."""
import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
UPSTREAM = Path(os.environ.get("MAF_UPSTREAM", ROOT.parent / "shared" / "upstream"))
PACKAGES = UPSTREAM / "packages"
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
LAUNCHER = BUILD / "maf-launch"

WHY_NOT = None
if not (PACKAGES / "maf-sandbox" / "src" / "maf_sandbox").is_dir():
    WHY_NOT = f"maf-sandbox's code is not at {UPSTREAM} (the folder beside the checkout)"
elif sys.version_info < (3, 12):
    WHY_NOT = (f"maf-sandbox needs Python 3.12 or later, this is {sys.version.split()[0]} "
               "(make upstream runs these in a Debian 13 root)")
else:
    for pkg in ("maf-sandbox", "maf-sandbox-docker", "maf-sandbox-codeact"):
        sys.path.insert(0, str(PACKAGES / pkg / "src"))
    sys.path.insert(0, str(HERE))
    # mafhost from this checkout, over the library this build made.
    sys.path.insert(0, str(ROOT / "host" / "python"))
    os.environ.setdefault("MAFHOST_LIBRARY", str(BUILD / "libmafhost.so"))
    import warnings

    import maf_sandbox  # noqa: F401  (its experimental warning, once, here)
    from maf_sandbox import MafSandboxHostToolsWarning

    warnings.filterwarnings("ignore", category=MafSandboxHostToolsWarning)
    import swap

    swap.install_recorder()


def pytest_ignore_collect(collection_path, config):
    # The test modules import maf_sandbox at their top; without it they are not collected,
    # and test_upstream_present.py says why, as its skip.
    return bool(WHY_NOT) and collection_path.name.startswith("test_") and \
        collection_path.name != "test_upstream_present.py"


@pytest.fixture
def launcher():
    assert LAUNCHER.exists(), f"{LAUNCHER} is not built (run make)"
    return str(LAUNCHER)


@pytest.fixture
def private_tmp_path(tmp_path):
    """pytest's tmp_path, below a directory no other uid may pass, as pytest makes it."""
    blocked = [d for d in (tmp_path, *tmp_path.parents)
               if d != Path("/") and not stat.S_IMODE(d.stat().st_mode) & 0o001]
    assert blocked, f"{tmp_path} has no private ancestor here; the test would prove nothing"
    return tmp_path


def run(coro):
    return asyncio.run(coro)
