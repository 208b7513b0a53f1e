"""Runs are apart: a run can neither read nor write another run's files, concurrent or later,
nor reach its processes or sockets; its write scope is its own (a private temporary
directory), and the host's view of it is what the supervisor recorded."""
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from hostile_lib import LAUNCHER, denied, run_hostile, runs_base

# A run started with maf-launch directly, so the test knows its directory: it keeps a
# secret in its work directory and in /dev/shm, and an abstract socket open.
VICTIM = r'''
import os, socket, time
open("secret", "w").write("victim secret")
open("/dev/shm/maf-victim-%d" % os.getpid(), "w").write("victim shm")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0maf-victim-%d" % os.getpid())
s.listen(1)
print("ready", flush=True)
time.sleep(60)
'''


@pytest.fixture
def victim():
    run = Path(tempfile.mkdtemp(prefix="maf-victim-", dir=runs_base()))
    ht = run / "host_tools"
    ht.mkdir()
    (ht / "maf_host_tools.py").write_text("# the victim's shim\n")
    (ht / "program.py").write_text(VICTIM)
    proc = subprocess.run([str(LAUNCHER), "run", "--run-dir", str(run), "--", "python3",
                           str(ht / "program.py")], capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.splitlines()[0])
    out = ht / "program_output.txt"
    for _ in range(500):
        if b"ready" in out.read_bytes():
            break
        time.sleep(0.01)
    yield run, info
    subprocess.run([str(LAUNCHER), "stop", "--run-dir", str(run), "--supervisor-pid",
                    str(info["supervisor_pid"])], capture_output=True, timeout=30)
    subprocess.run([str(LAUNCHER), "reclaim", "--run-dir", str(run)], capture_output=True,
                   timeout=30)


def test_a_run_cannot_reach_a_concurrent_one(victim):
    run, info = victim
    proc, rep, r = run_hostile(r'''
import socket
V, VPID, VSUP = %r, %d, %d
attempt("list", lambda: os.listdir(V))
attempt("read_secret", lambda: open(V + "/work/secret").read())
attempt("read_shim", lambda: open(V + "/host_tools/maf_host_tools.py").read())
attempt("write_shim", lambda: open(V + "/host_tools/maf_host_tools.py", "a").write("evil"))
attempt("write_work", lambda: open(V + "/work/planted", "w").write("x"))
attempt("write_request", lambda: open(V + "/host_tools/host_tool_calls/0001.request.json",
                                      "w").write("{}"))
attempt("read_output", lambda: open(V + "/host_tools/program_output.txt").read())
attempt("read_shm", lambda: open("/dev/shm/maf-victim-%%d" %% VPID).read())
attempt("unlink_shm", lambda: os.unlink("/dev/shm/maf-victim-%%d" %% VPID))
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0maf-victim-%%d" %% VPID)
attempt("abstract_socket", abstract)
def channel():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(V + "/host_tools/channel.sock")
attempt("channel_socket", channel)
attempt("kill_program", lambda: os.kill(VPID, 9))
attempt("kill_supervisor", lambda: os.kill(VSUP, 9))
attempt("environ", lambda: open("/proc/%%d/environ" %% VPID).read())
attempt("cwd", lambda: os.listdir("/proc/%%d/cwd" %% VPID))
report()
''' % (str(run), info["pid"], info["supervisor_pid"]))
    assert r is not None, proc.stderr
    denied(r, "list", "read_secret", "read_shim", "write_shim", "write_work",
           "write_request", "read_output", "read_shm", "unlink_shm", "kill_program",
           "kill_supervisor", "environ", "cwd", "channel_socket")
    assert r["abstract_socket"] in ("EPERM", "ECONNREFUSED"), r
    assert (run / "host_tools" / "maf_host_tools.py").read_text() == "# the victim's shim\n"
    assert not (run / "work" / "planted").exists()
    assert Path(f"/dev/shm/maf-victim-{info['pid']}").read_text() == "victim shm"


def test_what_a_run_left_in_dev_shm_goes_with_it(victim):
    run, info = victim
    shm = Path(f"/dev/shm/maf-victim-{info['pid']}")
    assert shm.exists()
    subprocess.run([str(LAUNCHER), "stop", "--run-dir", str(run), "--supervisor-pid",
                    str(info["supervisor_pid"])], capture_output=True, timeout=30)
    assert not shm.exists()


def test_a_later_run_cannot_read_what_an_earlier_one_kept():
    proc, rep, r = run_hostile(r'''
open("kept", "w").write("earlier secret")
print("CWD " + os.getcwd())
report()
''', "--keep-run-dir")
    assert r is not None, proc.stderr
    kept = Path(rep["run_dir"])
    try:
        assert (kept / "work" / "kept").read_text() == "earlier secret"
        proc2, rep2, r2 = run_hostile(r'''
K = %r
attempt("list", lambda: os.listdir(K))
attempt("read", lambda: open(K + "/work/kept").read())
attempt("write", lambda: open(K + "/work/kept", "a").write("x"))
report()
''' % str(kept))
        assert r2 is not None, proc2.stderr
        denied(r2, "list", "read", "write")
        # The kept directory is its owner's alone once the run is over.
        assert kept.stat().st_mode & 0o077 == 0
    finally:
        subprocess.run([str(LAUNCHER), "reclaim", "--run-dir", str(kept)],
                       capture_output=True, timeout=30)
        if kept.exists():
            kept.rmdir()


def test_the_write_scope_is_the_runs_own():
    proc, rep, r = run_hostile(r'''
import tempfile
ht = os.environ["PYTHONPATH"].split(":")[0]
run = os.path.dirname(ht)
attempt("tmp", lambda: open("/tmp/maf-hostile-planted", "w").write("x"))
attempt("var_tmp", lambda: open("/var/tmp/maf-hostile-planted", "w").write("x"))
attempt("etc", lambda: open("/etc/maf-hostile-planted", "w").write("x"))
attempt("run_dir", lambda: open(run + "/planted", "w").write("x"))
attempt("host_tools", lambda: open(ht + "/planted", "w").write("x"))
attempt("output", lambda: open(ht + "/program_output.txt", "a").write("forged"))
attempt("shim", lambda: open(ht + "/maf_host_tools.py", "a").write("evil"))
attempt("rename_shim", lambda: os.rename(ht + "/maf_host_tools.py", ht + "/x"))
attempt("work", lambda: open("mine", "w").write("x"))
attempt("tmpfile", lambda: tempfile.NamedTemporaryFile(delete=False).write(b"x"))
attempt("request_dir", lambda: open(ht + "/host_tool_calls/9999.claim", "w").close())
report(tmpdir=tempfile.gettempdir(), run=run)
''')
    assert r is not None, proc.stderr
    denied(r, "tmp", "var_tmp", "etc", "run_dir", "host_tools", "output", "shim",
           "rename_shim")
    assert r["work"] == r["tmpfile"] == r["request_dir"] == "ok", r
    assert r["tmpdir"] == r["run"] + "/tmp"
    assert not os.path.exists("/tmp/maf-hostile-planted")
    assert "forged" not in rep["output"]


def test_the_host_reports_the_exit_the_supervisor_recorded():
    # A forged exit marker, then exit 3: the marker is out of reach, the host reports 3.
    proc, rep, r = run_hostile(r'''
ht = os.environ["PYTHONPATH"].split(":")[0]
attempt("marker", lambda: open(ht + "/program_exit_code", "w").write("0"))
attempt("record", lambda: open(ht + "/program_exit.json", "w").write(
    '{"status":"exited","exit_code":0}'))
attempt("part", lambda: open(ht + "/program_exit_code.part", "w").write("0"))
report()
sys.exit(3)
''')
    assert r is not None, proc.stderr
    denied(r, "marker", "record", "part")
    assert rep["exit_code"] == 3 and rep["status"] == "exited" and rep["verified"]
    assert proc.returncode == 3


def test_without_containment_the_result_is_said_unverified():
    # The same forgery with the launcher's own identity and no Landlock: it can succeed,
    # and then the report says the result is unverified.
    proc, rep, r = run_hostile(r'''
report()
''', "--user", "0", "--landlock", "off")
    assert r is not None, proc.stderr
    assert rep["identity"] == "launcher" and rep["landlock"] == "off"
    assert rep["verified"] is False
    assert b"the result is unverified" in proc.stderr
