"""pip install host/python, offline, into a fresh virtual environment: setuptools and wheel
(the build backend) come from the wheels Debian ships, the wheel built carries this build's
libmafhost and the package's metadata, and the README's ten-line host (tests/install/host.py)
serves a call with what was installed alone. An editable install (pip install -e) serves from
the source tree, with the tree's own build of the library."""
import os
import subprocess
import sys

import pytest

from conftest import LAUNCHER, ROOT, VERSION


def _tree(d):
    return sorted(os.path.relpath(os.path.join(p, n), d) for p, ds, fs in os.walk(d)
                  for n in ds + fs if "__pycache__" not in p and n != "__pycache__")


WHEELS = "/usr/share/python-wheels"


def offline_env():
    """pip with no index at all: what it needs comes from Debian's wheels."""
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=WHEELS, PIP_RETRIES="0",
               PIP_TIMEOUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.pop("MAFHOST_LIBRARY", None)
    env.pop("PYTHONPATH", None)
    return env


def test_pip_install_needs_no_network_and_carries_the_library(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    before = _tree(ROOT / "host" / "python")
    env = offline_env()
    env.pop("MAFHOST_LIBRARY", None)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", str(ROOT / "host" / "python")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Successfully installed mafhost-{VERSION}" in proc.stdout
    assert _tree(ROOT / "host" / "python") == before, "pip install left files in the tree"
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import mafhost, os; print(os.path.dirname(mafhost.__file__))"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    pkg = site.stdout.strip()
    assert pkg.startswith(str(venv)), pkg
    meta = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import importlib.metadata as m; d = m.distribution('mafhost'); "
                           "print(d.version, any(str(f).endswith('py.typed') for f in d.files))"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert meta.stdout.split() == [VERSION, "True"], meta
    soname = "libmafhost.so." + ".".join(VERSION.split(".")[:2])
    assert os.path.exists(os.path.join(pkg, "_lib", soname))
    out = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "tests/install/host.py"),
                          str(LAUNCHER), str(ROOT / "tests/install/program.py"),
                          os.path.join(pkg, "_lib")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "42\ncalls: 1\n"), out.stderr


def test_an_editable_install_serves_from_the_tree(tmp_path):
    tree_lib = ROOT / "build" / ("libmafhost.so." + ".".join(VERSION.split(".")[:2]))
    if not tree_lib.exists():
        pytest.skip(f"the tree's own build of the library ({tree_lib}) is not made")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    before = _tree(ROOT / "host" / "python")
    env = offline_env()
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-e",
                           str(ROOT / "host" / "python")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _tree(ROOT / "host" / "python") == before, "pip install -e left files in the tree"
    got = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import importlib.metadata as m, mafhost; "
                          "print(m.version('mafhost')); print(mafhost.__file__); "
                          "print(mafhost.load().path)"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    version, where, lib = got.stdout.split()
    assert version == VERSION
    assert where == str(ROOT / "host" / "python" / "mafhost" / "__init__.py")
    assert os.path.samefile(lib, tree_lib), lib
