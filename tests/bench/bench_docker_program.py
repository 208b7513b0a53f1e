"""Runs in the container for `make bench-docker`: N sequential calls of the `echo` tool through
the generated shim, each timed here (time.perf_counter_ns around the call), and one JSON line
at the end: {"channel": bool, "samples_ns": [...]}.

argv: N (0 makes no call: the run whose backend operations are subtracted from those of the
N-call run, to leave what the calls cost). Upstream's shell launcher passes no argument: the
baseline uploads this file with a first line that sets sys.argv.

The shim takes the launcher's channel when maf-launch run gave the program one
(MAF_HOST_TOOLS_FD), and upstream's files otherwise (under the shell launcher): "channel" says
which it took."""
import json
import sys
import time

import maf_host_tools


def main():
    n = int(sys.argv[1])
    samples = []
    for i in range(n):
        t = time.perf_counter_ns()
        v = maf_host_tools.call("echo", i=i)
        samples.append(time.perf_counter_ns() - t)
        assert v == {"i": i}, v
    print(json.dumps({"channel": maf_host_tools._CHANNEL_FD is not None,
                      "samples_ns": samples}))


main()
