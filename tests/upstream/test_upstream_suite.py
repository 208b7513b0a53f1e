"""maf-sandbox's own test suite, twice: as published, and with maf-launch swapped in wherever
the suite executes its launcher for real (swap.py, as a pytest plugin). Every test must end
the same way in both, but for the differences by design below, each with its reason (the
README lists them too). Tests that fail in both for a reason of this machine's (MAF itself,
agent_framework, cannot be installed here) are the same in both and so no difference."""
import os
import subprocess
import sys

import junit
from conftest import HERE, LAUNCHER, PACKAGES

SUITE = PACKAGES / "maf-sandbox" / "tests"

# The program writes only below R/work, R/tmp and its requests, under an identity of its own:
# these tests have their program write a file into R itself (R/pid, R/kid), which the shell
# launcher's program, running as the caller (root), may do.
BY_DESIGN = {
    "tests/test_host_tools_over_exec.py::TestTheLauncherAgainstARealShell::"
    "test_a_program_that_prints_and_then_hangs_leaves_its_output_readable":
        "the program writes R/pid, outside what a run may write (R/work, R/tmp)",
    "tests/test_host_tools_over_exec.py::TestThePidAgainstARealShell::"
    "test_the_group_kill_stops_the_program_and_its_child":
        "the program writes R/kid, outside what a run may write (R/work, R/tmp)",
}


def outcomes(tmp_path, name, swapped):
    report = tmp_path / f"{name}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *(str(PACKAGES / p / "src") for p in
                      ("maf-sandbox", "maf-sandbox-docker", "maf-sandbox-codeact"))])
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--junitxml={report}", "-o", "junit_family=xunit2", str(SUITE)]
    if swapped:
        env["MAF_SWAP_LAUNCHER"] = str(LAUNCHER)
        argv[3:3] = ["-p", "swap"]
    proc = subprocess.run(argv, cwd=SUITE.parent, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]

    def nodeid(classname, name):
        # classname is tests.test_x.TestClass: the module's path, then the class.
        parts = classname.split(".")
        cls = [p for p in parts if p[:1].isupper()]
        mod = "/".join(p for p in parts if not p[:1].isupper()) + ".py"
        return "::".join([mod, *cls, name])

    return junit.outcomes(report, nodeid), proc


def test_the_suite_ends_alike_with_maf_launch_swapped_in(tmp_path, launcher):
    theirs, p1 = outcomes(tmp_path, "shell", swapped=False)
    ours, p2 = outcomes(tmp_path, "maf-launch", swapped=True)

    assert len(theirs) > 1000, p1.stdout[-2000:]
    assert theirs.keys() == ours.keys()
    differ = {t: (theirs[t], ours[t]) for t in theirs if theirs[t] != ours[t]}
    unexplained = {t: d for t, d in differ.items() if t not in BY_DESIGN}
    gone = sorted(t for t in BY_DESIGN if t not in differ)
    summary = (f"{len(theirs)} tests; with the shell launcher "
               f"{sum(v == 'passed' for v in theirs.values())} passed, with maf-launch "
               f"{sum(v == 'passed' for v in ours.values())}; {len(differ)} differ")
    print(summary)
    assert not unexplained, f"{summary}: unexplained differences {unexplained}"
    assert not gone, f"{summary}: listed by design but alike now: {gone}"
