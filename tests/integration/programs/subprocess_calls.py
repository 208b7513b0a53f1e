"""Calls from child processes started by subprocess with its defaults (close_fds=True): they
lose the inherited channel descriptor and reach the channel through its socket
(MAF_HOST_TOOLS_SOCKET). Prints one JSON line with what the children got."""
import json
import subprocess
import sys

CHILD = ("import json; from maf_host_tools import call; "
         "print(json.dumps(call('add', a=%d, b=1)))")
got = []
for i in range(3):
    r = subprocess.run([sys.executable, "-c", CHILD % i], capture_output=True, text=True)
    got.append(json.loads(r.stdout) if r.returncode == 0 else r.stderr.strip()[-200:])
print(json.dumps({"children": got}))
