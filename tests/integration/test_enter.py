"""The local backend entered into a bubblewrap sandbox (mafh_backend_local_enter_new), through
mafhost.local.EnteredSandbox and `maf-host run --backend enter:PID`: a command runs in the
sandbox's namespaces with no capability and no_new_privs, as the sandbox's own processes do;
files are reached below its root and never outside it, not by a symlink planted in it, a
"..", or a magic link; a timeout ends the command there; runs are served over the stream;
once the sandbox is gone every op fails with a sentence; the stand-in on this side exits
as the command did. As root, with bwrap (bwrap_sandbox.py starts each sandbox)."""
import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import bwrap_sandbox
from conftest import BUILD_TREE, HOST

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "host" / "python"))

import mafhost  # noqa: E402
from mafhost.local import EnteredSandbox  # noqa: E402

LIBRARY = BUILD_TREE / f"libmafhost.so.{mafhost.__version__}"
# The sandbox binds this machine's / read-only: the build's launcher is there, at its path.
LAUNCHER = str(BUILD_TREE / "maf-launch")
# Where the tests put a launcher of the sandbox's own, written through the backend.
INSIDE_LAUNCHER = "/tmp/bin/maf-launch"

pytestmark = pytest.mark.skipif(bwrap_sandbox.unavailable() is not None,
                                reason=bwrap_sandbox.unavailable() or "")

PROGRAM = """\
from maf_host_tools import add
total = 0
for i in range(8):
    total = add(a=total, b=i)
print("total", total)
"""


def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture(scope="module", autouse=True)
def _library():
    assert LIBRARY.exists(), f"{LIBRARY} is not built (run make)"
    mafhost.load(str(LIBRARY))


@pytest.fixture
def sandbox():
    try:
        sb = bwrap_sandbox.Sandbox()
    except RuntimeError as e:
        pytest.skip(f"no bubblewrap sandbox here: {e}")
    yield sb
    sb.close()


def arun(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def entered(sandbox, launcher=LAUNCHER):
    return EnteredSandbox(sandbox.pid, launcher_path=launcher)


async def inside(sandbox, command, **kw):
    """command's ExecResult in the sandbox, over a backend of its own."""
    sb = entered(sandbox)
    try:
        return await sb.exec(command, **kw)
    finally:
        await sb.aclose()


def gone_pid():
    """A pid no process has: one that has just been reaped."""
    p = subprocess.Popen(["true"])
    p.wait()
    assert not os.path.exists(f"/proc/{p.pid}")
    return p.pid


# ---- (a) where a command runs --------------------------------------------------------------

LOOK = """\
import json, os
ns = {n: os.stat("/proc/self/ns/" + n).st_ino for n in %r if os.path.exists("/proc/self/ns/" + n)}
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(json.dumps({"ns": ns, "status": {k: v.strip() for k, v in status.items()},
                  "pid": os.getpid(), "ppid": os.getppid()}))
""" % (bwrap_sandbox.NAMESPACES,)

PRIVILEGE = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")


def privilege(status):
    return {k: status[k] for k in PRIVILEGE}


def test_a_command_runs_in_the_sandbox_namespaces_with_no_privilege(sandbox):
    r = arun(inside(sandbox, ["/usr/bin/python3", "-c", LOOK]))
    assert r.exit_code == 0, r
    seen = json.loads(r.stdout)
    for name in bwrap_sandbox.NAMESPACES:
        if not os.path.exists(f"/proc/self/ns/{name}"):
            continue
        assert seen["ns"][name] == sandbox.ns(name), (name, seen["ns"])
        if name != "time":          # bwrap makes every kind of its own but time
            assert seen["ns"][name] != os.stat(f"/proc/self/ns/{name}").st_ino, name
    # A process of the sandbox's PID namespace, not its PID 1; its parent, the stand-in,
    # is outside it (0 seen from in it).
    assert seen["pid"] > 1 and seen["ppid"] == 0, seen
    zero = "0000000000000000"
    assert privilege(seen["status"]) == dict.fromkeys(PRIVILEGE[:5], zero) | {
        "NoNewPrivs": "1"}, seen["status"]
    # As the sandbox's own processes have it.
    with open(f"/proc/{sandbox.pid}/status") as f:
        theirs = {k: v.strip() for k, v in (ln.split(":", 1) for ln in f if ":" in ln)}
    assert privilege(theirs) == privilege(seen["status"])


def cgroup2_mount():
    """Where this machine's cgroup v2 hierarchy is mounted whole, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields, _, rest = line.partition(" - ")
            parts = fields.split()
            if rest.startswith("cgroup2 ") and parts[3] == "/":
                return parts[4]
    return None


def unified(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return next(ln[3:].strip() for ln in f if ln.startswith("0::"))


def test_a_command_joins_the_sandbox_cgroup(sandbox):
    mount = cgroup2_mount()
    if mount is None or not os.access(mount, os.W_OK):
        pytest.skip("no cgroup v2 hierarchy this test may write here")
    group = Path(mount) / f"maf-enter-{os.getpid()}-{sandbox.pid}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(sandbox.pid))
        assert unified(sandbox.pid) != unified("self")
        r = arun(inside(sandbox, ["cat", "/proc/self/cgroup"]))
        assert r.exit_code == 0, r
        # Seen through the sandbox's cgroup namespace, whose root is where bwrap started.
        rel = "/" + os.path.relpath("/" + str(group.relative_to(mount)), unified("self"))
        assert [ln for ln in r.stdout.splitlines() if ln.startswith("0::")] == ["0::" + rel]
    finally:
        sandbox.close()
        group.rmdir()


# ---- (b) files -----------------------------------------------------------------------------

def test_files_are_the_sandboxes(sandbox):
    here = Path(sandbox.root)

    async def go():
        sb = entered(sandbox)
        try:
            await sb.write_file("/tmp/files/in/a.txt", b"written from outside")
            (here / "tmp/files/b.txt").write_bytes(b"made inside")
            return (await sb.read_file("/tmp/files/b.txt"), await sb.stat_file("/tmp/files/b.txt"),
                    await sb.stat_file("/tmp/files/in"), await sb.stat_file("/tmp/files/none"),
                    await sb.exec(["cat", "/tmp/files/in/a.txt"]))
        finally:
            await sb.aclose()

    data, st, st_dir, st_none, cat = arun(go())
    assert (here / "tmp/files/in/a.txt").read_bytes() == b"written from outside"
    assert not Path("/tmp/files/in/a.txt").exists() or \
        Path("/tmp/files/in/a.txt").read_bytes() != b"written from outside"
    assert cat.stdout == "written from outside", cat
    assert data == b"made inside"
    assert (st.kind, st.size_bytes) == ("file", len(b"made inside"))
    assert st_dir.kind == "directory" and st_none is None


@pytest.fixture
def host_secret():
    """A directory of this machine's /tmp, which the sandbox's own /tmp hides, with a file."""
    d = Path(tempfile.mkdtemp(prefix="maf-enter-secret-", dir="/tmp"))
    (d / "secret").write_text("this machine's")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def refused(e):
    """The errors a path on the way refused is: a symlink (ELOOP, ENOTDIR where there is no
    openat2) or a bad path (ConfigError: MAFH_EINVAL)."""
    return isinstance(e, mafhost.ConfigError) or (
        isinstance(e, OSError) and e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV))


def test_a_symlink_planted_in_the_sandbox_is_never_followed(sandbox, host_secret):
    name = f"maf-enter-{os.getpid()}"
    # Planted by a process of the sandbox: absolute to /etc and to the hidden directory, and
    # relative with ".." (from /tmp/d/e, three levels up is /).
    plant = (f"mkdir -p /tmp/d/e && ln -s /etc /tmp/abs && ln -s {host_secret} /tmp/hostlink "
             f"&& ln -s ../../../etc /tmp/d/e/rel && ln -s ../../..{host_secret} "
             f"/tmp/d/e/relhost && ln -s {host_secret}/secret /tmp/last")
    r = arun(inside(sandbox, ["/bin/sh", "-c", plant]))
    assert r.exit_code == 0, r
    links = ["/tmp/abs", "/tmp/hostlink", "/tmp/d/e/rel", "/tmp/d/e/relhost"]

    async def go():
        sb = entered(sandbox)
        errors = []
        try:
            for link in links:
                for op in (sb.write_file(f"{link}/{name}", b"escaped"),
                           sb.write_file(f"{link}/new/{name}", b"escaped"),
                           sb.read_file(f"{link}/secret"), sb.read_file(f"{link}/hostname"),
                           sb.stat_file(f"{link}/secret")):
                    try:
                        errors.append((link, await op))
                    except Exception as e:          # noqa: BLE001 (judged below)
                        errors.append((link, e))
            # A symlink as the last component: read refused; written over, not followed.
            try:
                errors.append(("/tmp/last", await sb.read_file("/tmp/last")))
            except Exception as e:                  # noqa: BLE001
                errors.append(("/tmp/last", e))
            last = await sb.stat_file("/tmp/last")
            await sb.write_file("/tmp/last", b"replaced")
            return errors, last, await sb.stat_file("/tmp/last")
        finally:
            await sb.aclose()

    errors, last_before, last_after = arun(go())
    for link, e in errors:
        assert refused(e), (link, e)
    assert last_before.kind == "symlink" and last_after.kind == "file"
    assert sorted(p.name for p in host_secret.iterdir()) == ["secret"]
    assert (host_secret / "secret").read_text() == "this machine's"
    assert not Path("/etc", name).exists()
    assert not Path("/etc/new").exists()


def test_dotdot_and_magic_links_are_refused(sandbox):
    paths = ["/tmp/../etc/hostname", "/tmp/..", "/..", "/proc/1/root/etc/hostname",
             "/proc/self/root/etc/hostname", "/proc/1/cwd/etc/hostname", "/proc/1/root",
             "/proc/1/fd/0"]

    async def go():
        sb = entered(sandbox)
        out = []
        try:
            for p in paths:
                for op in (sb.read_file(p), sb.stat_file(p + "/x"),
                           sb.write_file(p + "/maf-enter-x", b"escaped")):
                    try:
                        out.append((p, await op))
                    except Exception as e:          # noqa: BLE001 (judged below)
                        out.append((p, e))
        finally:
            await sb.aclose()
        return out

    for p, e in arun(go()):
        assert refused(e), (p, e)
    assert not Path("/etc/hostname/maf-enter-x").exists()
    assert not any(n.startswith("maf-enter-x") for n in os.listdir(sandbox.root + "/tmp"))


# ---- (c) a timeout ---------------------------------------------------------------------------

def test_a_timeout_ends_the_command_in_the_sandbox(sandbox):
    t0 = time.monotonic()
    r = arun(inside(sandbox, ["sleep", "100"], timeout=0.5))
    assert r.exit_code == -1, r
    assert time.monotonic() - t0 < 10
    deadline = time.monotonic() + 5
    while "sleep" in sandbox.processes().values() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "sleep" not in sandbox.processes().values(), sandbox.processes()
    # The sandbox itself lives on.
    assert sandbox.proc.poll() is None and list(sandbox.processes()) == [sandbox.pid]


# ---- (d) runs ------------------------------------------------------------------------------

async def install_launcher(sb):
    """build/maf-launch written into the sandbox's /tmp through the backend, made
    executable there."""
    await sb.write_file(INSIDE_LAUNCHER, Path(LAUNCHER).read_bytes())
    r = await sb.exec(["chmod", "0755", INSIDE_LAUNCHER])
    assert r.exit_code == 0, r


def run_dirs(sandbox):
    return sorted(n for n in os.listdir(sandbox.root + "/tmp") if n.startswith(("maf", "mafhost")))


def test_mafhost_run_is_served_over_the_stream(sandbox):
    async def go():
        sb = entered(sandbox, INSIDE_LAUNCHER)
        try:
            await install_launcher(sb)
            return await mafhost.run(sb, PROGRAM, tools=[add], timeout=60)
        finally:
            await sb.aclose()

    r = arun(go(), 120)
    assert (r.status, r.exit_code) == ("exited", 0), r
    assert r.output == "total 28\n" and r.calls == 8
    assert r.transport == "stream"
    assert r.identity == "launcher"      # no capability to take an identity of its own
    assert run_dirs(sandbox) == [], run_dirs(sandbox)


def test_maf_host_run_backend_enter_is_served_over_the_stream(sandbox, tmp_path):
    prog = tmp_path / "program.py"
    prog.write_text(PROGRAM)
    arun(install_launcher(entered(sandbox)))
    tool = "add=/usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin); " \
           "print(a[\"a\"] + a[\"b\"])'"
    p = subprocess.run([str(HOST), "run", "--json", "--backend", f"enter:{sandbox.pid}",
                        "--launcher", INSIDE_LAUNCHER, "--tool", tool, str(prog)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["output"] == "total 28\n" and rep["calls"] == 8
    assert rep["transport"] == "stream" and rep["backend"] == f"enter:{sandbox.pid}"
    # A program already in the sandbox: its run directory made there before the launch.
    p = subprocess.run([str(HOST), "run", "--backend", f"enter:{sandbox.pid}", "--launcher",
                        INSIDE_LAUNCHER, "--guest-program", "/bin/echo", "--", "in", "there"],
                       capture_output=True, timeout=120)
    assert (p.returncode, p.stdout) == (0, b"in there\n"), p.stderr
    assert run_dirs(sandbox) == [], run_dirs(sandbox)
    # A launcher that is not in the sandbox is looked for there.
    p = subprocess.run([str(HOST), "run", "--backend", f"enter:{sandbox.pid}", "--launcher",
                        "/tmp/none/maf-launch", str(prog)], capture_output=True, timeout=60)
    assert p.returncode == 125
    assert p.stderr.decode() == (f"maf-host run: there is no launcher /tmp/none/maf-launch in "
                                 f"the sandbox of process {sandbox.pid} (put maf-launch there, "
                                 f"or name it with --launcher)\n")


# ---- (e) the sandbox gone ------------------------------------------------------------------

def test_once_the_sandbox_is_gone_every_op_fails_with_a_sentence(sandbox, tmp_path):
    async def go():
        sb = entered(sandbox)
        out = {}
        try:
            assert (await sb.exec(["true"])).exit_code == 0
            pid = sandbox.pid
            sandbox.kill()
            assert not os.path.exists(f"/proc/{pid}")
            t0 = time.monotonic()
            out["exec"] = await sb.exec(["true"])
            for name, op in (("write", sb.write_file("/tmp/x", b"late")),
                             ("read", sb.read_file("/tmp/x")), ("stat", sb.stat_file("/tmp"))):
                try:
                    out[name] = await op
                except Exception as e:              # noqa: BLE001 (judged below)
                    out[name] = e
            try:
                out["run"] = await mafhost.run(sb, PROGRAM, tools=[add], timeout=30)
            except Exception as e:                  # noqa: BLE001
                out["run"] = e
            out["took"] = time.monotonic() - t0
        finally:
            await sb.aclose()
        return out

    out = arun(go(), 90)
    assert out["exec"].exit_code == 125, out["exec"]
    assert out["exec"].stderr.startswith("maf-host: cannot enter the sandbox: "), out["exec"]
    for name in ("write", "read", "stat"):
        e = out[name]
        assert isinstance(e, mafhost.BackendError) and e.errno == errno.ESRCH, (name, e)
        assert f"process {sandbox.pid} has ended: its sandbox is gone" in str(e), e
    assert isinstance(out["run"], mafhost.RunError), out["run"]
    assert out["took"] < 30, out
    # Made after: no process to enter.
    with pytest.raises(mafhost.ConfigError, match=f"there is no process {sandbox.pid} to"):
        arun(inside(sandbox, ["true"]))
    prog = tmp_path / "program.py"
    prog.write_text(PROGRAM)
    p = subprocess.run([str(HOST), "run", "--backend", f"enter:{sandbox.pid}", str(prog)],
                       capture_output=True, timeout=60)
    assert p.returncode == 125
    assert p.stderr.decode() == (f"maf-host run: cannot enter the sandbox of process "
                                 f"{sandbox.pid}: there is no process {sandbox.pid} to "
                                 f"enter\n")


def test_entering_no_such_process_is_a_config_error():
    pid = gone_pid()
    sb = EnteredSandbox(pid, launcher_path=LAUNCHER)
    with pytest.raises(mafhost.ConfigError, match=f"there is no process {pid} to enter"):
        arun(sb.exec(["true"]))
    for bad in (0, -1):
        with pytest.raises(mafhost.ConfigError):
            EnteredSandbox(bad, launcher_path=LAUNCHER)


# ---- (f) the stand-in --------------------------------------------------------------------

@pytest.mark.parametrize("command,code", [
    ("exit 0", 0), ("exit 7", 7), ("exit 255", 255),
    ("kill -TERM $$", 128 + 15), ("kill -KILL $$", 128 + 9), ("kill -SEGV $$", 128 + 11),
])
def test_the_stand_in_exits_as_the_command_did(sandbox, command, code):
    r = arun(inside(sandbox, ["/bin/sh", "-c", command]))
    assert (r.exit_code, r.stderr) == (code, ""), r


def test_a_command_that_cannot_start_says_why(sandbox):
    missing = arun(inside(sandbox, ["/no/such/program"]))
    assert missing.exit_code == 127 and "/no/such/program" in missing.stderr, missing
    r = arun(inside(sandbox, ["/etc/passwd"]))      # not executable
    assert r.exit_code == 126 and "/etc/passwd" in r.stderr, r
