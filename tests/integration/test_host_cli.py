"""maf-host's command line: help, version, usage errors, the shim, output and exit codes."""
import json
import os
import subprocess

import pytest

from conftest import HOST, LAUNCHER, host_run, host_tool, probe


def mh(*args, **kw):
    return subprocess.run([str(HOST), *args], capture_output=True, timeout=60, **kw)


def test_help_lists_every_option(host):
    p = mh("--help")
    assert p.returncode == 0
    text = p.stdout.decode()
    assert "--help" in text and "--version" in text
    assert "run" in text and "shim" in text
    # Each command's options, against the table they are printed from: test_host_docs.py.
    p = mh("run", "--help")
    assert p.returncode == 0 and "--tools-server" in p.stdout.decode()
    p = mh("shim", "--help")
    assert p.returncode == 0 and "--tool" in p.stdout.decode()


def test_help_is_short_and_each_command_has_its_own(host):
    p = mh("--help")
    text = p.stdout.decode()
    assert p.returncode == 0 and len(text.splitlines()) <= 25, text
    commands = [ln.split()[0] for ln in text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
                .splitlines()]
    assert commands == ["run", "shim", "help"], text
    assert "maf-host COMMAND --help" in text
    # The commands' options are theirs to list.
    assert "--tools-server" not in text and "--max-calls" not in text
    for cmd in ("run", "shim"):
        full = mh(cmd, "--help")
        assert full.returncode == 0 and full.stdout.startswith(b"usage: maf-host " +
                                                               cmd.encode())
        assert mh("help", cmd).stdout == full.stdout
        assert mh(cmd, "-h").stdout == full.stdout
    assert mh("help").stdout == p.stdout


def test_version(host):
    p = mh("--version")
    assert p.returncode == 0
    assert p.stdout.decode().startswith("maf-host ")


@pytest.mark.parametrize("args,words", [
    ([], "usage"),
    (["frobnicate"], "unknown command"),
    (["run"], "no PROGRAM"),
    (["run", "--bogus", "x.py"], "unknown option"),
    (["run", "--tool", "lookup", "x.py"], "no --tools-server"),
    (["run", "--tools-server", "cat", "x.py"], "there is none"),
    (["run", "--tool", "a=cat", "--tool", "a=cat", "x.py"], "twice"),
    (["run", "--tool", "bad name=cat", "x.py"], "bad tool name"),
    (["run", "--tool", "a=", "x.py"], "empty COMMAND"),
    (["run", "--timeout", "soon", "x.py"], "--timeout"),
    (["run", "--timeout", "-1", "x.py"], "--timeout"),
    (["run", "--max-calls", "many", "x.py"], "--max-calls"),
    (["run", "--backend", "kvm", "x.py"], "unknown --backend 'kvm'"),
    (["run", "--backend", "docker:", "x.py"], "unknown --backend 'docker:'"),
    (["run", "--backend", "enter:", "x.py"], "--backend enter:PID takes a process id"),
    (["run", "--backend", "enter:0", "x.py"], "takes a process id (a positive number), not '0'"),
    (["run", "--backend", "enter:-7", "x.py"], "not '-7'"),
    (["run", "--backend", "enter:12x", "x.py"], "not '12x'"),
    (["run", "--backend", "enter:4294967297", "x.py"], "not '4294967297'"),
    (["run", "--guest-program", "", "x.py"], "--guest-program takes a path"),
    (["run", "--simulate-latency-ms", "fast", "x.py"], "--simulate-latency-ms"),
    (["run", "--exec-timeout", "0", "x.py"], "--exec-timeout takes a positive number"),
    (["run", "--ending-timeout", "0", "x.py"], "--ending-timeout takes a positive number"),
    (["run", "--ending-timeout", "5.5", "x.py"],
     "--ending-timeout 5.5: the ending's budget must be 6000 to 3600000 ms, not 5500"),
    (["run", "--ending-timeout", "3601", "x.py"], "must be 6000 to 3600000 ms, not 3601000"),
    (["run", "--tool", "a=cat", "--param", "b:x:string", "x.py"], "no --tool b"),
    (["run", "--tool", "a=cat", "--param", "a:x:float", "x.py"], "unknown type"),
    (["run", "--tool", "a=cat", "--param", "a-x-string", "x.py"], "TOOL:NAME:TYPE"),
    (["run", "--egress", "half", "x.py"], "--egress"),
    (["run", "--seccomp", "strict", "x.py"], "--seccomp strict: the seccomp option"),
    (["run", "--landlock", "on", "x.py"], "--landlock on: the landlock option"),
    (["run", "--transport", "carrier-pigeon", "x.py"], "--transport"),
    (["run", "--max-calls", "1000000", "x.py"], "--max-calls 1000000: max_calls"),
    (["run", "--max-output-bytes", "0", "x.py"], "--max-output-bytes 0:"),
    (["run", "--max-response-bytes", "0", "x.py"], "--max-response-bytes 0:"),
    (["run", "--json=yes", "x.py"], "--json takes no value"),
    (["run", "--verbose=1", "x.py"], "--verbose takes no value"),
    (["run", "--tool", "a=cat", "--param", "a::string", "x.py"], "--tool a: parameter"),
    (["run", "--timeout"], "needs a value"),
    (["run", "/nonexistent/program.py"], "cannot open the program"),
    (["shim", "--bogus"], "unknown option"),
    (["shim", "extra"], "extra"),
    (["help", "frobnicate"], "unknown command"),
])
def test_usage_errors_exit_2_with_one_clear_line(host, args, words):
    p = mh(*args)
    assert p.returncode == 2, (args, p)
    err = p.stderr.decode()
    assert words in err, err
    if args:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("maf-host"), err


def test_shim_prints_a_python_module_with_wrappers(host, tmp_path):
    p = mh("shim", "--tool", "lookup_state", "--tool=sum=cat", "--tool", "not-an-identifier")
    assert p.returncode == 0, p.stderr
    src = p.stdout.decode()
    assert "HostToolError" in src and "def call" in src
    mod = tmp_path / "maf_host_tools.py"
    mod.write_text(src)
    check = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import maf_host_tools as m; print(callable(m.lookup_state), callable(m.sum), "
         "hasattr(m, 'not-an-identifier'))"],
        cwd=tmp_path, capture_output=True, timeout=30)
    assert check.stdout.decode().split() == ["True", "True", "False"], check


def test_program_importing_the_shim_with_no_tools(host, tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import maf_host_tools\nprint('imported')\n")
    proc, rep = host_run(prog)
    assert rep["output"] == "imported\n", rep["output"]
    assert proc.returncode == 0


def test_output_and_exit_code_pass_through(host):
    proc, _ = host_run("calls.py", "--tool", "echo=cat", json_out=False,
                       args=[json.dumps([["echo", {"x": 1}]]), "7"])
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.decode().splitlines() == ['{"value": {"x": 1}}', "done"]


def test_json_report_fields(host):
    proc, rep = host_run("calls.py", "--tool", "echo=cat",
                         args=[json.dumps([["echo", {"x": 1}], ["echo", {"y": [1, 2]}]])])
    assert proc.returncode == 0, proc.stderr
    for key in ("exit_code", "status", "output", "output_truncated", "calls", "ops",
                "wall_ms", "refusals", "ops_total", "ops_per_call", "error"):
        assert key in rep, key
    assert rep["exit_code"] == 0 and rep["status"] == "exited"
    assert rep["calls"] == 2 and rep["refusals"] == 0
    assert set(rep["ops"]) >= {"exec", "read", "write", "stat"}
    assert rep["ops_total"] == sum(rep["ops"][k] for k in ("exec", "read", "write", "stat"))
    assert rep["output_truncated"] is False
    assert rep["wall_ms"] > 0
    assert rep["error"] is None
    assert rep["record"]["seccomp"] == "default"


def test_program_arguments_and_summary(host):
    proc, _ = host_run("calls.py", "--summary", "--tool", "sum=" + host_tool("tool_sum.py"),
                       json_out=False, args=[json.dumps([["sum", {"numbers": [1, 2, 3.5]}]])])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[0] == '{"value": 6.5}'
    err = proc.stderr.decode()
    assert "calls" in err and "exec" in err and "wall time" in err


def test_output_truncation_is_reported(host, tmp_path):
    prog = tmp_path / "loud.py"
    prog.write_text("import sys\nsys.stdout.write('x' * 300000)\n")
    proc, rep = host_run(prog, "--max-output-bytes", "1000")
    assert proc.returncode == 0, proc.stderr
    assert rep["output_truncated"] is True
    assert 0 < len(rep["output"]) <= 1000


def test_invalid_utf8_output_is_still_json(host, tmp_path):
    prog = tmp_path / "bytes.py"
    prog.write_text("import sys\nsys.stdout.buffer.write(b'a\\xff\\xfeb\\x00c\\n')\n")
    proc, rep = host_run(prog)
    assert rep is not None, proc.stdout
    assert rep["output"].startswith("a\ufffd\ufffdb\x00c")


def test_launch_failure_is_clear(host, tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("print('hi')\n")
    env = dict(os.environ, MAF_LAUNCH=str(tmp_path / "no-launcher"))
    p = subprocess.run([str(HOST), "run", str(prog)], capture_output=True, timeout=60, env=env)
    assert p.returncode == 125
    assert "launcher" in p.stderr.decode()


def test_run_dir_is_reclaimed_unless_kept(host, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    proc, rep = host_run("calls.py", "--tool", "echo=cat", args=["[]"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp.iterdir()) == []
    proc, rep = host_run("calls.py", "--keep-run-dir", "--tool", "echo=cat",
                         args=[json.dumps([["echo", {}]])], env=env)
    assert proc.returncode == 0, proc.stderr
    kept = list(tmp.iterdir())
    assert len(kept) == 1 and rep["run_dir"] == str(kept[0])
    assert (kept[0] / "host_tools" / "host_tool_calls" / "0001.response.json").exists()
    assert str(kept[0]) in proc.stderr.decode()


def test_a_guest_program_and_a_launcher_named(host, tmp_path):
    # --guest-program: a program already there (a static C probe calling through maf-launch
    # call), nothing uploaded; --launcher names maf-launch (here a copy of it).
    launcher = tmp_path / "ml"
    launcher.write_bytes(LAUNCHER.read_bytes())
    launcher.chmod(0o755)
    p = mh("run", "--json", "--launcher", str(launcher), "--tools-server",
           host_tool("tools_server.py", "ok"), "--tool", "add", "--guest-program",
           probe("chan_call"), "--", str(LAUNCHER), "add", '{"a": 1, "b": 2}')
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["output"] == "add rc=0 value=3\n"
    assert rep["calls"] == 1 and rep["engine_requests"] is None
    # Nothing was written: no program, no shim, and the answer went on the stream (auto on
    # the local backend), through the launcher named.
    assert rep["ops"]["write"] == 0 and rep["transport"] == "stream"
    p = mh("run", "--launcher", str(tmp_path / "none"), "--guest-program", "/bin/true")
    assert p.returncode == 125
    assert f"cannot use the launcher {tmp_path}/none" in p.stderr.decode()
