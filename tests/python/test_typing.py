"""The package is typed as PEP 561 says (py.typed, complete hints): mypy --strict (Debian's)
finds nothing in it, nothing in a host written against it, and refuses a host that passes an
option outside its Literal or misuses a result."""
import shutil
import subprocess

import pytest

from conftest import ROOT

PKG = ROOT / "host" / "python"
HERE = ROOT / "tests" / "python" / "typing"


def mypy(*args):
    exe = shutil.which("mypy")
    if exe is None:
        pytest.fail("mypy is not installed (make setup installs Debian's)", pytrace=False)
    return subprocess.run([exe, "--config-file", str(PKG / "pyproject.toml"),
                           "--no-incremental", "--cache-dir=/dev/null", *args],
                          cwd=PKG, capture_output=True, text=True, timeout=600)


def test_the_package_is_clean_under_mypy_strict():
    p = mypy("mafhost")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Success: no issues found" in p.stdout


def test_a_host_written_against_it_is_clean():
    p = mypy(str(HERE / "client_ok.py"))
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_wrong_option_or_field_is_refused():
    p = mypy(str(HERE / "client_bad.py"))
    assert p.returncode == 1, p.stdout + p.stderr
    out = p.stdout
    assert "'carrier-pigeon'" in out and '"transport"' in out, out
    assert "'wide'" in out and '"egress"' in out, out
    assert 'expression has type "int", variable has type "str"' in out, out
