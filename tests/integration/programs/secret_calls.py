"""Runs in the sandbox: N sequential calls of the tool secret (argv: N), each answered with
{"i": i, "secret": S}; prints {"calls": N, "answered": K}, K the answers that held their i
and a secret. The program never holds the secret in an argument."""
import json
import sys

from maf_host_tools import call

n = int(sys.argv[1])
answered = 0
for i in range(n):
    v = call("secret", i=i)
    answered += v.get("i") == i and str(v.get("secret", "")).startswith("S3CR3T")
print(json.dumps({"calls": n, "answered": answered}))
