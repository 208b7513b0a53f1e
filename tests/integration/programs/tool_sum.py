#!/usr/bin/env python3
"""A --tool NAME=COMMAND tool (host side): the arguments JSON on stdin, the value on stdout.
sum: {"numbers": [..]} -> their sum; a missing or bad list is refused (exit 1, the reason
on the first line of stderr)."""
import json
import sys

args = json.load(sys.stdin)
nums = args.get("numbers")
if not isinstance(nums, list) or not all(isinstance(n, (int, float)) for n in nums):
    print("sum needs 'numbers', a list of numbers", file=sys.stderr)
    print("(second line, not part of the refusal)", file=sys.stderr)
    sys.exit(1)
json.dump(sum(nums), sys.stdout)
