"""Runs in the sandbox: makes the calls listed in argv[1] (JSON: [[tool, {args}], ...]) through
the generated shim, and prints one JSON line per call: {"value": V} or {"refusal": S}. A
refusal is caught and the program carries on. Exits with argv[2] (default 0)."""
import json
import sys

from maf_host_tools import HostToolError, call

for name, args in json.loads(sys.argv[1]):
    try:
        print(json.dumps({"value": call(name, **args)}))
    except HostToolError as e:
        print(json.dumps({"refusal": str(e)}))
print("done")
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
