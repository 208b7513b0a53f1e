"""maf-sandbox-codeact's own tests, twice: as published, and with the drop-in swapped in for
the one name its kind imports to serve host tools (adopt_swap.py, as a pytest plugin). Every
test must end the same way in both, and the plugin counts how each run that dispatched was
served (its offline fakes have no maf-launch, so the drop-in would hand them to maf-sandbox's
own transport). Its live tests (test_codeact_e2e.py) are pointed at maf-launch/python-noshell.

Here every test that builds the kind's tool needs agent_framework (maf_sandbox.maf imports
its `tool` decorator when a tool is made), which cannot be installed on this machine: those
fail alike in both runs, host-tool tests included, and the count says no run dispatched. The
drop-in is exercised against maf-sandbox's own supervisor case by case in
test_adopt_parity.py instead. Where agent_framework is importable, the same test covers
codeact's host-tool tests as they are."""
import json
import os
import subprocess
import sys
import pytest

import junit
from adopt import NOSHELL_IMAGE, engine_missing
from conftest import BUILD, HERE, PACKAGES, ROOT

SUITE = PACKAGES / "maf-sandbox-codeact" / "tests"


def outcomes(tmp_path, name, swapped):
    report = tmp_path / f"{name}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(ROOT / "host" / "python"),
         *(str(PACKAGES / p / "src") for p in
           ("maf-sandbox", "maf-sandbox-docker", "maf-sandbox-codeact"))])
    env["MAFHOST_LIBRARY"] = str(BUILD / "libmafhost.so")
    if engine_missing() is None:
        env["MAF_SANDBOX_CODEACT_E2E_IMAGE"] = NOSHELL_IMAGE
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--junitxml={report}", "-o", "junit_family=xunit2", str(SUITE)]
    if swapped:
        env["MAF_ADOPT_REPORT"] = str(tmp_path / "served.json")
        argv[3:3] = ["-p", "adopt_swap"]
    proc = subprocess.run(argv, cwd=SUITE.parent, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return junit.outcomes(report, lambda classname, name: f"{classname}::{name}"), proc


def test_codeacts_suite_ends_alike_with_the_drop_in(tmp_path):
    if engine_missing() and os.environ.get("REQUIRE_DOCKER") == "1":
        pytest.fail(f"REQUIRE_DOCKER=1 and {engine_missing()}", pytrace=False)
    theirs, p1 = outcomes(tmp_path, "maf-sandbox", swapped=False)
    ours, p2 = outcomes(tmp_path, "drop-in", swapped=True)
    served = json.loads((tmp_path / "served.json").read_text())
    assert len(theirs) > 100, p1.stdout[-2000:]
    assert theirs.keys() == ours.keys()
    differ = {t: (theirs[t], ours[t]) for t in theirs if theirs[t] != ours[t]}
    summary = (f"{len(theirs)} tests; as published {sum(v == 'passed' for v in theirs.values())}"
               f" passed, with the drop-in {sum(v == 'passed' for v in ours.values())}; "
               f"runs served: {served}")
    print(summary)
    assert not differ, f"{summary}: differences {differ}"
