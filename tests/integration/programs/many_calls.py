"""Runs in the sandbox: N sequential calls of TOOL (argv: N [TOOL]); prints the time per call
in ms as the last line ({"calls": N, "ms_per_call": X})."""
import json
import sys
import time

from maf_host_tools import call

n = int(sys.argv[1])
tool = sys.argv[2] if len(sys.argv) > 2 else "echo"
start = time.monotonic()
for i in range(n):
    v = call(tool, i=i)
    assert v == {"i": i}, v
elapsed = time.monotonic() - start
print(json.dumps({"calls": n, "ms_per_call": elapsed * 1000.0 / n}))
