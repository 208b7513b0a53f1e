"""The images driven by a host over the engine: `maf-host run --backend docker:CONTAINER`
(libmafhost's Docker backend) in python-noshell and scratch-c, and a host that writes its
answers with `docker cp`, as maf-sandbox's Docker backend does, for hundreds of calls. No
call may be lost, whoever writes the response files and however."""
import concurrent.futures
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import BUILD, CALLS, HOST_TOOLS, IN_IMAGE_LAUNCHER, docker, tar_of

HOST = BUILD / "maf-host"
TOOLS_SERVER = Path(__file__).resolve().parents[1] / "integration" / "programs" / \
    "tools_server.py"
TOOLS = ["--tools-server", f"/usr/bin/python3 {TOOLS_SERVER} ok", "--tool", "add",
         "--tool", "echo", "--tool", "fail"]


def host_run(*args, timeout=600):
    """`maf-host run --json ARGS`: (CompletedProcess, report or None). The timeout is a
    safety net, not an assertion."""
    proc = subprocess.run([str(HOST), "run", "--json", *map(str, args)], capture_output=True,
                          timeout=timeout)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    return proc, report


def left_in(c):
    """maf-host's run directories left in the container, and its processes but init."""
    proc = docker("cp", f"{c.name}:/tmp", "-", check=False)
    dirs = []
    if proc.returncode == 0:
        import io
        import tarfile
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as t:
            dirs = sorted({m.name.split("/")[1] for m in t.getmembers()
                           if m.name.startswith("tmp/maf-host-")})
    return dirs, c.only_init_left()


CALLS_PROGRAM = r'''
import json, socket, sys, threading
from maf_host_tools import call, HostToolError

mode, n = sys.argv[1], int(sys.argv[2])
results = {}

def work(first, step):
    for i in range(first, n, step):
        results[i] = call("add", a=i, b=1)

if mode == "sequential":
    work(0, 1)
else:
    threads = [threading.Thread(target=work, args=(k, 8)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
try:
    call("fail")
except HostToolError as e:
    refused = str(e)
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    inet = "allowed"
except OSError as e:
    inet = type(e).__name__
print(json.dumps({"right": sum(results.get(i) == i + 1 for i in range(n)),
                  "refused": refused, "inet": inet}))
sys.exit(7)
'''


@pytest.mark.parametrize("mode", ["sequential", "threads"])
def test_python_without_a_shell_calls_host_tools(containers, tmp_path, mode):
    c = containers("python-noshell")
    # No shell to run anything with: the whole run goes through maf-launch alone.
    assert c.exec("sh", "-c", "true").returncode != 0
    prog = tmp_path / "calls.py"
    prog.write_text(CALLS_PROGRAM)
    proc, rep = host_run("--backend", f"docker:{c.name}", "--max-calls", "64", *TOOLS, prog,
                         "--", mode, 50)
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 7, rep
    assert proc.returncode == 7
    out = json.loads(rep["output"].strip().splitlines()[-1])
    assert out == {"right": 50, "refused": "the tool fail refuses, politely",
                   "inet": "PermissionError"}
    assert rep["calls"] == 51 and rep["refusals"] == 1 and rep["record"]["calls"] == 51
    assert rep["errors"] == [] and rep["undelivered"] == 0
    assert rep["identity"] == "own" and rep["verified"] is True
    assert left_in(c) == ([], {}), "the run was not reclaimed, or left a process"


def test_python_past_its_deadline_is_stopped_and_reclaimed(containers, tmp_path):
    c = containers("python-noshell")
    prog = tmp_path / "forever.py"
    prog.write_text("import os, time\n"
                    "if os.fork() == 0:\n"
                    "    os.setsid()\n"
                    "print('started', flush=True)\n"
                    "time.sleep(600)\n")
    proc, rep = host_run("--backend", f"docker:{c.name}", "--timeout", "3", prog)
    assert rep is not None, proc.stderr
    assert rep["status"] == "timeout", rep
    assert rep["output"].startswith("started")
    assert left_in(c) == ([], {}), "the run was not reclaimed, or left a process"


def test_scratch_c_hostcall_demo_through_guest_program(containers):
    c = containers("scratch-c")
    proc, rep = host_run("--backend", f"docker:{c.name}", *TOOLS, "--guest-program",
                         "/hostcall-demo")
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 0, rep
    assert "40 + 2 = 42" in rep["output"]
    assert rep["calls"] == 1 and rep["errors"] == []
    assert left_in(c) == ([], {})


MANY_CALLS = 504  # 8 threads of 63 calls


def test_500_calls_through_maf_host_over_docker(containers, tmp_path):
    c = containers("python-noshell")
    prog = tmp_path / "calls.py"
    prog.write_text(CALLS_PROGRAM)
    proc, rep = host_run("--backend", f"docker:{c.name}", "--max-calls", MANY_CALLS + 1,
                         "--timeout", "900", *TOOLS, prog, "--", "threads", MANY_CALLS,
                         timeout=1200)
    assert rep is not None, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 7, rep
    out = json.loads(rep["output"].strip().splitlines()[-1])
    assert out["right"] == MANY_CALLS, out
    assert rep["calls"] == MANY_CALLS + 1 and rep["record"]["calls"] == MANY_CALLS + 1
    assert rep["errors"] == [] and rep["undelivered"] == 0
    assert left_in(c) == ([], {})


def test_500_calls_answered_with_docker_cp(containers):
    # maf-sandbox's Docker backend writes every file with `docker cp - CONTAINER:DIR` (a tar
    # on stdin): the engine creates the file, writes and closes it, and only then sets its
    # owner, mode and times. The launcher relays the answer at the close; had it then reused
    # that file, the engine's last step would fail and the host would see its write fail.
    # Eight callers keep eight calls in flight; eight writers answer them at once.
    c = containers("python-noshell")
    shim = subprocess.run([str(HOST), "shim", "--tool", "add", "--tool", "fail"],
                          capture_output=True, timeout=60, check=True).stdout
    run = c.run_dir("many", {f"{HOST_TOOLS}/program.py": CALLS_PROGRAM.encode(),
                             f"{HOST_TOOLS}/maf_host_tools.py": shim})
    proc = c.launch(run, "python3", f"{run}/{HOST_TOOLS}/program.py", "threads",
                    str(MANY_CALLS), opts=["--tool", "add", "--tool", "fail",
                                           "--max-calls", str(MANY_CALLS + 1)])
    assert proc.returncode == 0, proc.stderr
    calls = f"{run}/{HOST_TOOLS}/{CALLS}"
    failures, lock = [], threading.Lock()

    def serve(n):
        name = f"{n:04d}"
        deadline = time.monotonic() + 300
        while True:
            data = c.read(f"{calls}/{name}.request.json")
            if data:
                try:
                    req = json.loads(data)
                    break
                except ValueError:
                    pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no request {name}")
            time.sleep(0.01)
        if req["name"] == "add":
            answer = {"value": req["arguments"]["a"] + req["arguments"]["b"]}
        else:
            answer = {"refusal": "no"}
        w = docker("cp", "-", f"{c.name}:{calls}", check=False,
                   input=tar_of({f"{name}.response.json": json.dumps(answer).encode()}))
        if w.returncode != 0:
            with lock:
                failures.append(f"{name}: {w.stderr.decode(errors='replace').strip()}")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for f in [pool.submit(serve, n) for n in range(1, MANY_CALLS + 2)]:
            f.result()
    assert c.wait_marker(run) == "7"
    assert failures == [], f"{len(failures)} writes failed: {failures[:5]}"
    out = json.loads(c.output(run).strip().splitlines()[-1])
    assert out["right"] == MANY_CALLS, out
    rec = json.loads(c.read(f"{run}/{HOST_TOOLS}/program_exit.json"))
    assert rec["calls"] == MANY_CALLS + 1 and rec.get("undelivered", []) == []
    # Every response is still the file the engine wrote: none was renamed or removed.
    for n in (1, MANY_CALLS // 2, MANY_CALLS + 1):
        assert c.read(f"{calls}/{n:04d}.response.json") is not None
