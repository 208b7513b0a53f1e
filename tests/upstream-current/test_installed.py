"""The environment is the pin file's: every distribution at its pinned version, nothing else
installed, and the five packages and agent_framework importable from it."""
import importlib
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from conftest import PINS


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pins():
    out = {}
    for line in PINS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[canonical(name)] = version
    return out


def test_versions_are_the_pins():
    installed = {canonical(d.metadata["Name"]): d.version
                 for d in importlib.metadata.distributions()}
    installed.pop("pip", None)  # the environment's own, from Debian's python3-venv
    assert installed == pins()


@pytest.mark.parametrize("module", ["maf_sandbox", "maf_sandbox_docker", "maf_sandbox_codeact",
                                    "maf_sandbox_bubblewrap", "maf_sandbox_otel",
                                    "agent_framework"])
def test_imports_from_the_environment(module):
    mod = importlib.import_module(module)
    # From the installed release, not from a checkout of upstream on sys.path.
    assert Path(mod.__file__).is_relative_to(sys.prefix), mod.__file__
