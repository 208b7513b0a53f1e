"""No answer is ever in an argv (or an environment): any process of the machine, under any
uid, may read /proc/PID/cmdline while `maf-launch relay` waits. Each run makes 100 calls
over the relay transport whose answers all hold a secret, while a scanner
(programs/proc_scanner.py, as root, a process of its own as an attacker's would be, so that
its loop shares no interpreter with the host it watches) reads the cmdline and environ of
every process in a tight loop. Nothing may hold the secret, nor its base64 at any alignment,
nor any argument of a relay decode to it; every call is answered; and the backend
operations a call are 1 where the exec takes an input (the answer on the relay's stdin) and
at most 2 where it cannot (the answer written first). The scanner must have seen relays
while they carried answers, or the test proves nothing.

Three hosts: maf-host over the local backend (the C library's exec_input), mafhost over an
object of maf-sandbox's surface alone (tests/python/foreign.py: the answer written first),
and mafhost over its own LocalSandbox (exec_input)."""
import asyncio
import base64
import binascii
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import BUILD_TREE, HOST_PYTHON, LAUNCHER, PROGRAMS, host_run, host_tool

ROOT = Path(__file__).resolve().parents[2]
CALLS = 100

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the scanner reads every "
                                "process's /proc files, which takes root")


def needles(secret):
    """The secret, and what any base64 text holding it holds whatever the secret's offset in
    it: the encoding of its whole 3-byte groups from each of the three alignments."""
    s = secret.encode()
    out = [s]
    for j in range(3):
        whole = s[j:j + (len(s) - j) // 3 * 3]
        out.append(base64.b64encode(whole))
    return out


class Scanner:
    """proc_scanner.py, started before the run and stopped after it."""

    def __init__(self, secret):
        self.proc = subprocess.Popen([HOST_PYTHON, str(PROGRAMS / "proc_scanner.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.proc.stdin.write(json.dumps([n.hex() for n in needles(secret)]).encode() +
                              b"\n")
        self.proc.stdin.flush()

    def stop(self):
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        self.proc.wait(timeout=60)
        return json.loads(out)


def decodes_to_secret(arg, secret):
    try:
        return secret.encode() in base64.b64decode(arg, validate=True)
    except (binascii.Error, ValueError):
        return False


def check_nothing_leaked(seen, secret, carrying):
    """Nothing held the secret; no relay argument decodes to it; the scanner saw relays,
    carrying answers on stdin when carrying, else never carrying one."""
    assert seen["hits"] == [], f"the secret was readable in /proc: {seen['hits'][:3]}"
    relays = [r for r in seen["relays"] if "--next" in r]
    for r in relays:
        assert "--value-b64" not in r, r
        assert not any(decodes_to_secret(a, secret) for a in r), r
    with_answer = {r[r.index("--next") + 1] for r in relays if "--answer" in r}
    print(f"{seen['sweeps']} sweeps, {len(relays)} relay argvs seen, {len(with_answer)} "
          "carrying an answer")
    assert seen["sweeps"] > 50, seen["sweeps"]
    if carrying:
        assert all("--value-stdin" in r for r in relays if "--answer" in r)
        # The scanner looked while answers crossed, often enough to have caught a leak.
        assert len(with_answer) >= 5, (len(with_answer), relays[:5])
    else:
        # Each relay finds its request at once (the answer went first): few are seen.
        assert not with_answer, relays[:5]
        assert relays, "the scanner saw no relay"


@pytest.fixture
def secret(tmp_path):
    s = f"S3CR3T{secrets.token_hex(16)}"
    f = tmp_path / "secret"
    f.write_text(s)
    return s, f


def test_maf_host_relay_carries_no_answer_in_an_argv(host, secret):
    s, secret_file = secret
    scanner = Scanner(s)
    try:
        proc, rep = host_run("secret_calls.py", "--transport", "relay", "--max-calls",
                             str(CALLS), "--timeout", "120", "--tool",
                             "secret=" + host_tool("tool_secret.py", secret_file),
                             args=[CALLS], timeout=180)
    finally:
        seen = scanner.stop()
    check_nothing_leaked(seen, s, carrying=True)
    assert rep is not None and proc.returncode == 0, (proc.stderr, rep and rep["errors"])
    assert rep["transport"] == "relay" and rep["errors"] == [], rep["errors"]
    assert rep["calls"] == CALLS
    assert json.loads(rep["output"].splitlines()[-1]) == {"calls": CALLS, "answered": CALLS}
    # Nothing written (the program and the shim go on the launch's stdin); beside launch and
    # stop (which brings the output back and reclaims), one relay a call, one for the first
    # request and maybe a slice that timed out.
    ops = rep["ops"]
    assert ops["write"] == 0, ops
    assert CALLS + 1 <= ops["exec"] - 2 <= CALLS + 3, ops


# ---- the Python package ----------------------------------------------------------------

def _mafhost():
    # Another test module may have put host/python there already.
    if str(ROOT / "host" / "python") not in sys.path:
        sys.path.insert(0, str(ROOT / "host" / "python"))
    if str(ROOT / "tests" / "python") not in sys.path:
        sys.path.append(str(ROOT / "tests" / "python"))  # foreign.py, after our own modules
    import mafhost
    mafhost.load(str(BUILD_TREE / f"libmafhost.so.{mafhost.__version__}"))
    return mafhost


PROGRAM = (PROGRAMS / "secret_calls.py").read_text().replace("int(sys.argv[1])", str(CALLS))


@pytest.fixture
def run_base():
    """Run directories where the run's own identity can reach them."""
    d = tempfile.mkdtemp(prefix="maf-relay-argv-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def python_run(sandbox, secret, run_dir, **kw):
    """mafhost.run of PROGRAM over sandbox, its tool answering with secret, under the
    scanner: (the RunResult, what the scanner saw)."""
    mafhost = _mafhost()

    def secret_tool(i: int) -> dict:
        return {"i": i, "secret": secret}

    scanner = Scanner(secret)
    try:
        r = asyncio.run(mafhost.run(sandbox, PROGRAM, tools={"secret": secret_tool},
                                    timeout=120,
                                    launcher=str(LAUNCHER), run_dir=str(run_dir),
                                    limits=mafhost.Limits(max_calls=CALLS), **kw))
    finally:
        seen = scanner.stop()
    return r, seen


def test_python_over_the_surface_alone_writes_each_answer_first(secret, run_base):
    _mafhost()
    from foreign import PlainLocalSandbox

    s, _ = secret
    sb = PlainLocalSandbox()
    r, seen = python_run(sb, s, run_base / "surface")
    check_nothing_leaked(seen, s, carrying=False)
    assert r.transport == "relay" and r.calls == CALLS, (r.transport, r.errors)
    assert json.loads(r.output.splitlines()[-1]) == {"calls": CALLS, "answered": CALLS}
    # Each answer a write_file (beside the program and the shim), then the relay's exec:
    # two operations a call.
    ops = r.backend_operations
    assert "exec_input" not in ops
    assert ops["write_file"] == CALLS + 2, ops
    assert CALLS + 1 <= ops["exec"] - 3 <= CALLS + 3, ops


def test_python_local_sandbox_gives_each_answer_on_stdin(secret, run_base):
    mafhost = _mafhost()
    s, _ = secret
    r, seen = python_run(mafhost.LocalSandbox(launcher_path=str(LAUNCHER)), s,
                         run_base / "local", transport="relay")
    check_nothing_leaked(seen, s, carrying=True)
    assert r.transport == "relay" and r.calls == CALLS, (r.transport, r.errors)
    assert json.loads(r.output.splitlines()[-1]) == {"calls": CALLS, "answered": CALLS}
    ops = r.backend_operations
    # Each answer on the stdin of the relay that waits for the next request: one exec a
    # call; the program and the shim on the launch's stdin; nothing written or read, the
    # stop bringing the output back.
    assert ops["exec_input"] == CALLS + 1, ops
    assert ops.get("write_file", 0) == 0, ops
    assert ops.get("read_file", 0) == 0, ops
    # Beside the stop: the relay for the first request, and maybe a slice that timed out.
    assert 1 <= ops["exec"] - 1 <= 3, ops
