"""The hostile suite's session: run directories under a directory of its own, and after the
last test, no process and no file of any run may be left."""
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from hostile_lib import IS_ROOT, run_processes


@pytest.fixture(scope="session", autouse=True)
def hostile_session():
    if not IS_ROOT:
        pytest.skip("the hostile suite runs as root, as the embedded default does", 
                    allow_module_level=True)
    base = Path(tempfile.mkdtemp(prefix="maf-hostile-runs-"))
    base.chmod(0o711)
    os.environ["MAF_HOSTILE_RUNS"] = str(base)
    yield base
    # Nothing of any run survives the suite: no process of a run's identity, no run
    # directory (maf-host reclaims each one, kept ones aside).
    deadline = time.monotonic() + 5
    while run_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = run_processes()
    files = sorted(str(p) for p in base.iterdir())
    shutil.rmtree(base, ignore_errors=True)
    assert not left, f"processes of runs survived the suite: {left}"
    assert not files, f"run directories were left behind: {files}"
