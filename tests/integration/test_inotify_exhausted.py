"""A run whose user is out of inotify instances (a per-user limit, 128 by default, which a host
running that many runs at once as one user reaches): the launcher's channel and `maf-launch
serve` look for files on a timer instead, and every call is still served. Run as a user of
its own (uid 4242), so that nothing else on the machine is starved of instances meanwhile."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from conftest import BUILD

UID = 4242

HOLDER = textwrap.dedent('''
    import ctypes, json, os, subprocess, sys
    libc = ctypes.CDLL(None, use_errno=True)
    held = []
    while len(held) < 100000:
        fd = libc.inotify_init1(0o2000000)  # IN_CLOEXEC
        if fd < 0:
            break
        held.append(fd)
    err = ctypes.get_errno()
    p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
    print(json.dumps({"held": len(held), "errno": err, "rc": p.returncode,
                      "stdout": p.stdout, "stderr": p.stderr}))
''')

PROGRAM = textwrap.dedent('''
    from maf_host_tools import call
    print(sum(call("add", a=i, b=1) for i in range(20)))
''')


def test_calls_are_served_when_the_user_is_out_of_inotify_instances():
    # A directory of the user's own, which it can reach from / (pytest's are 0700).
    home = Path(tempfile.mkdtemp(prefix="maf-inotify-", dir="/tmp"))
    try:
        os.chown(home, UID, UID)
        serve(home)
    finally:
        shutil.rmtree(home)


def serve(home):
    prog = home / "program.py"
    prog.write_text(PROGRAM)
    os.chmod(prog, 0o644)
    tool = f"{sys.executable} -c 'import json,sys; a=json.load(sys.stdin); print(a[\"a\"]+a[\"b\"])'"
    for transport in ("stream", "files"):
        p = subprocess.run(
            [sys.executable, "-c", HOLDER, str(BUILD / "maf-host"), "run", "--json",
             "--transport", transport, "--max-calls", "20", "--tool", f"add={tool}",
             str(prog)],
            user=UID, group=UID, extra_groups=[], capture_output=True, text=True,
            timeout=180, env=dict(os.environ, TMPDIR=str(home)))
        assert p.returncode == 0, p.stderr
        held = json.loads(p.stdout)
        assert held["held"] > 0 and held["errno"] == 24, held  # EMFILE: none left
        assert held["rc"] == 0, held["stderr"]
        rep = json.loads(held["stdout"])
        assert (rep["status"], rep["exit_code"], rep["calls"]) == ("exited", 0, 20), rep
        assert rep["output"] == f"{sum(range(1, 21))}\n", rep
