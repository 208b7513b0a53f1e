"""Runs in the sandbox: calls the `count` tool argv[1] times through the generated shim, each
time with its own number and the run directory (where the shim was written, R/host_tools),
and prints one JSON line per call: {"value": V}."""
import json
import os
import sys

import maf_host_tools
from maf_host_tools import call

run_dir = os.path.dirname(os.path.dirname(os.path.abspath(maf_host_tools.__file__)))
for i in range(int(sys.argv[1])):
    print(json.dumps({"value": call("count", i=i, run_dir=run_dir)}))
