"""Shared by the bench scripts: one run of a host that prints `maf-host run --json`'s report
(maf-host itself, or bench_calls_inproc, which prints the same fields)."""
import json
import os
import subprocess
import sys


def run_host(argv, timeout, env=None):
    """Runs the host and returns its report and the JSON object the program printed last.
    Exits with the reason if the host failed or the run did not end with exit code 0."""
    p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        sys.exit(f"{os.path.basename(argv[0])} failed ({p.returncode}): "
                 f"{p.stderr.decode().strip()}")
    if rep["status"] != "exited" or rep["exit_code"] != 0:
        sys.exit(f"the run ended {rep['status']} ({rep['exit_code']}): {rep.get('error')}\n"
                 f"{rep['output'][-3000:]}")
    return rep, json.loads(rep["output"].strip().splitlines()[-1])
