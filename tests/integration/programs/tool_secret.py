#!/usr/bin/env python3
"""A --tool NAME=COMMAND tool (host side, argv: SECRET_FILE): {"i": I} -> {"i": I,
"secret": the file's text}. The secret comes from a file, so that no process's argv holds
it but where the host puts it."""
import json
import sys

with open(sys.argv[1]) as f:
    secret = f.read()
json.dump({"i": json.load(sys.stdin)["i"], "secret": secret}, sys.stdout)
