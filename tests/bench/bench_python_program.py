"""The program of make bench-python: N calls of echo, each timed; prints the samples (ns) as
the last line, a JSON object."""
import json
import sys
import time

from maf_host_tools import call

n = int(sys.argv[1])
samples = []
for i in range(n):
    t0 = time.perf_counter_ns()
    call("echo", i=i, text="hello")
    samples.append(time.perf_counter_ns() - t0)
print(json.dumps({"samples_ns": samples}))
