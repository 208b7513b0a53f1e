#!/usr/bin/env python3
"""A --tool NAME=COMMAND tool (host side): {"n": N} -> a string of N times "\u00e9x" (3N
bytes of JSON text, 2N characters), for answers larger than an argument can carry."""
import json
import sys

json.dump("\u00e9x" * int(json.load(sys.stdin)["n"]), sys.stdout, ensure_ascii=False)
