#!/usr/bin/env python3
"""A --tool NAME=COMMAND tool (host side) that counts its invocations: argv[1] is a file it
appends a line to each time; {"i": I, "run_dir": R} -> {"i": I, "n": the count}. With
argv[2] = K, its K-th invocation first kills (SIGKILL) the `maf-launch serve` of run R (on
this machine or in a container of it, read from this machine's /proc), as a stream that
breaks mid-call; the serve of any other run is left alone."""
import json
import os
import signal
import sys

args = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write("call\n")
with open(sys.argv[1]) as f:
    n = f.read().count("\n")
if len(sys.argv) > 2 and n == int(sys.argv[2]):
    want = args["run_dir"].encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 3 and argv[0].endswith(b"maf-launch") and argv[1] == b"serve" and \
                argv[2] == b"--run-dir" and argv[3].rstrip(b"/") == want.rstrip(b"/"):
            os.kill(int(pid), signal.SIGKILL)
json.dump({"i": args["i"], "n": n}, sys.stdout)
