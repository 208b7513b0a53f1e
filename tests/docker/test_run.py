"""Whole runs over the Docker backend: `maf-host run --backend docker:CONTAINER`, the run
directory made in the container by the engine, the program launched, served, stopped and
reclaimed through maf-launch over the engine's exec alone (the image has no shell), with a
static program that calls host tools through `maf-launch call`."""
import json
import os
import re
import subprocess
import uuid

import pytest

from conftest import (GUEST_LAUNCHER, HOST, TOOLS_SERVER, docker, engine_socket, host_run,
                      only_init_left, run_dirs)

TOOLS = ["--tools-server", f"/usr/bin/python3 {TOOLS_SERVER} ok", "--tool", "add",
         "--tool", "echo", "--tool", "fail"]

launched = pytest.mark.usefixtures("needs_launcher")


def calls(*pairs):
    """chan_call's arguments: the launcher, then TOOL JSON pairs."""
    return ["--guest-program", "/chan_call", "--", GUEST_LAUNCHER, *pairs]


def assert_left_clean(container):
    assert run_dirs(container) == [], "a run directory was left in the container"
    assert only_init_left(container) is True


def call_lines(report):
    """chan_call's lines in the output (maf-launch call's own stderr is there too, and
    chan_call's stdout, a file, is written at its exit)."""
    return [line for line in report["output"].splitlines() if re.match(r"\w+ rc=", line)]


@launched
@pytest.mark.parametrize("transport", ["auto", "files"])
def test_a_static_program_calls_host_tools(container, transport):
    proc, rep = host_run("--backend", f"docker:{container}", "--transport", transport,
                         *TOOLS, *calls("add", '{"a": 2, "b": 3}', "echo", '{"k": "v"}',
                                        "nope", "{}", "fail", "{}"))
    assert proc.returncode == 0, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 0
    assert call_lines(rep) == ["add rc=0 value=5", 'echo rc=0 value={"k":"v"}',
                               "nope rc=1 value=", "fail rc=1 value="]
    # nope is refused by the host (no such tool), fail by the tools server.
    output = rep["output"].splitlines()
    assert "maf-launch call: refused: there is no host tool named 'nope'" in output
    assert "maf-launch call: refused: the tool fail refuses, politely" in output
    assert rep["calls"] == 4 and rep["refusals"] == 2
    assert rep["record"]["calls"] == 4
    assert rep["errors"] == []
    assert rep["backend"] == f"docker:{container}"
    assert rep["engine_requests"] > rep["ops_total"]
    # Contained in the container as on a host: an identity of the run's own.
    assert rep["identity"] == "own" and rep["verified"] is True
    assert_left_clean(container)


@launched
def test_many_calls_in_one_run(container):
    # Each answer is a file the engine writes in place and sets the owner of after its
    # close: the supervisor leaves it alone and writes the next request into the last one.
    pairs = []
    for i in range(12):
        pairs += ["add", f'{{"a": {i}, "b": 1}}']
    proc, rep = host_run("--backend", f"docker:{container}", *TOOLS, *calls(*pairs))
    assert proc.returncode == 0, proc.stderr
    assert call_lines(rep) == [f"add rc=0 value={i + 1}" for i in range(12)]
    assert rep["calls"] == 12 and rep["errors"] == []
    assert_left_clean(container)


@launched
def test_exit_code_and_output(container):
    proc, rep = host_run("--backend", f"docker:{container}", "--guest-program", "/hello",
                         "--", "7")
    assert proc.returncode == 7, proc.stderr
    assert rep["status"] == "exited" and rep["exit_code"] == 7
    assert rep["output"] == "hello from stdout\nhello from stderr\n"
    assert rep["record"]["status"] == "exited"
    assert_left_clean(container)


@launched
def test_a_run_past_its_deadline_is_stopped_and_reclaimed(container):
    proc, rep = host_run("--backend", f"docker:{container}", "--timeout", "1",
                         "--guest-program", "/pause")
    assert proc.returncode == 124, proc.stderr
    assert rep["status"] == "timeout"
    # Stopped by `maf-launch stop` (which proved its supervisor without CAP_SYS_PTRACE) or
    # by the supervisor's own timeout, whichever came first; never lost.
    assert rep["record"]["status"] in ("stopped", "timeout"), rep["errors"]
    assert not any("lost" in e or "failed" in e for e in rep["errors"]), rep["errors"]
    assert_left_clean(container)


@launched
def test_a_run_stopped_by_a_signal(container):
    # SIGTERM to maf-host stops the run: `maf-launch stop` over exec, then reclaim.
    proc = subprocess.Popen([str(HOST), "run", "--json", "--verbose", "--backend",
                             f"docker:{container}", "--guest-program", "/pause"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for line in proc.stderr:
        if b"started" in line:
            break
    proc.terminate()
    out, err = proc.communicate(timeout=120)
    assert b"maf-host run: the run was stopped" in err, err
    rep = json.loads(out)
    # The supervisor took the stop's SIGTERM: `maf-launch stop` proved it was the run's,
    # without CAP_SYS_PTRACE, which a container does not have by default.
    assert rep["status"] == "stopped" and rep["record"]["status"] == "stopped"
    assert rep["errors"] == ["the run was stopped by the host"]
    assert_left_clean(container)


@launched
def test_keep_run_dir(container):
    proc, rep = host_run("--backend", f"docker:{container}", "--keep-run-dir",
                         "--guest-program", "/hello")
    assert proc.returncode == 0, proc.stderr
    m = re.search(rb"run directory kept: (/tmp/maf-host-\w{6}) in the container (\S+)\n",
                  proc.stderr)
    assert m and m.group(2).decode() == container, proc.stderr
    kept = m.group(1).decode()
    assert run_dirs(container) == [kept.split("/")[-1]]
    docker("exec", container, GUEST_LAUNCHER, "reclaim", "--run-dir", kept)
    assert_left_clean(container)


@launched
def test_a_program_that_cannot_start(container):
    proc, rep = host_run("--backend", f"docker:{container}", "--guest-program",
                         "/no-such-program")
    assert proc.returncode == 127, proc.stderr
    assert rep["status"] == "launch_failed"
    assert b"/no-such-program: not found" in proc.stderr
    assert_left_clean(container)


# ---- what maf-host says before anything is made ---------------------------------------------

def run_plain(*args, env=None):
    return subprocess.run([str(HOST), "run", *args], capture_output=True, timeout=120,
                          env=env)


def test_no_engine(container, tmp_path):
    sock = tmp_path / "none.sock"
    proc = run_plain("--backend", f"docker:{container}", "--guest-program", "/hello",
                     env={**os.environ, "DOCKER_HOST": f"unix://{sock}"})
    assert proc.returncode == 125
    assert proc.stderr.decode() == (f"maf-host run: cannot reach the Docker engine at {sock}: "
                                    f"No such file or directory\n")


def test_no_such_container():
    name = f"maf-docker-test-absent-{uuid.uuid4().hex[:8]}"
    proc = run_plain("--backend", f"docker:{name}", "--guest-program", "/hello")
    assert proc.returncode == 125
    assert proc.stderr.decode() == (f"maf-host run: there is no container '{name}' on the "
                                    f"Docker engine at {engine_socket()}\n")


def test_a_stopped_container(fresh_container):
    docker("stop", "-t", "0", fresh_container)
    proc = run_plain("--backend", f"docker:{fresh_container}", "--guest-program", "/hello")
    assert proc.returncode == 125
    assert proc.stderr.decode() == (f"maf-host run: the container '{fresh_container}' is not "
                                    f"running (exited)\n")


def test_no_launcher_in_the_container(container):
    proc = run_plain("--backend", f"docker:{container}", "--launcher", "/bin/maf-launch",
                     "--guest-program", "/hello")
    assert proc.returncode == 125
    assert proc.stderr.decode() == (f"maf-host run: there is no launcher /bin/maf-launch in "
                                    f"the container {container} (put maf-launch there, or "
                                    f"name it with --launcher)\n")
    assert run_dirs(container) == []


def test_usage():
    proc = run_plain("--backend", "docker:", "--guest-program", "/hello")
    assert proc.returncode == 2
    assert b"unknown --backend 'docker:' (this build has: local, docker:CONTAINER, enter:PID)" in \
        proc.stderr
    proc = run_plain("--backend", "docker:c")
    assert proc.returncode == 2
    assert b"no PROGRAM.py to run (or --guest-program PATH)" in proc.stderr
    helptext = run_plain("--help").stdout.decode()
    for words in ("--backend local|docker:CONTAINER", "--guest-program PATH",
                  "--launcher PATH", "/usr/local/bin/maf-launch", "unix:///PATH",
                  "/tmp/maf-host-XXXXXX"):
        assert words in helptext.replace("\n" + " " * 26, " "), words
