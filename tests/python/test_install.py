"""pip install host/python, offline, into a fresh virtual environment: the wheel carries this
build's libmafhost, and the README's ten-line host (tests/install/host.py) serves a call with
what was installed alone."""
import os
import subprocess
import sys

from conftest import LAUNCHER, ROOT


def _tree(d):
    return sorted(os.path.relpath(os.path.join(p, n), d) for p, ds, fs in os.walk(d)
                  for n in ds + fs if "__pycache__" not in p and n != "__pycache__")


def test_pip_install_needs_no_network_and_carries_the_library(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    before = _tree(ROOT / "host" / "python")
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/", PIP_RETRIES="0",
               PIP_TIMEOUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.pop("MAFHOST_LIBRARY", None)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", str(ROOT / "host" / "python")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Successfully installed mafhost-0.2.0" in proc.stdout
    assert _tree(ROOT / "host" / "python") == before, "pip install left files in the tree"
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import mafhost, os; print(os.path.dirname(mafhost.__file__))"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    pkg = site.stdout.strip()
    assert pkg.startswith(str(venv)), pkg
    assert os.path.exists(os.path.join(pkg, "_lib", "libmafhost.so.0.2"))
    out = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "tests/install/host.py"),
                          str(LAUNCHER), str(ROOT / "tests/install/program.py"),
                          os.path.join(pkg, "_lib")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "42\ncalls: 1\n"), out.stderr
