#!/usr/bin/env python3
"""The tools server of `make bench-calls` (host side, maf-host --tools-server): `echo` returns
its arguments. Newline-delimited JSON on stdin and stdout, as maf-host speaks it."""
import json
import sys


def main():
    out = sys.stdout
    for line in sys.stdin:
        call = json.loads(line)
        out.write(json.dumps({"id": call["id"], "value": call["arguments"]}) + "\n")
        out.flush()


main()
