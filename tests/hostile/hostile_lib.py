"""Helpers of the hostile suite: each test runs a program that attacks what maf-launch
promises to contain, through `maf-host run` on the local backend (where maf-launch is the
only boundary), and asserts containment. Run as root, as a user of the embedded default
runs it."""
import importlib.util
import json
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "maf_integration_conftest", HERE.parent / "integration" / "conftest.py")
_conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conf)

BUILD = _conf.BUILD
HOST = BUILD / "maf-host"
LAUNCHER = BUILD / "maf-launch"
IS_ROOT = os.geteuid() == 0
# The identities a root launcher gives runs (guest/run.h): 2^20 + the supervisor's pid below
# 2^20, 2^28 + it from there on.
def run_id(supervisor):
    return (1 << 20) + supervisor if supervisor < (1 << 20) else (1 << 28) + supervisor


def is_run_id(uid):
    return (1 << 20) <= uid < (1 << 21) or (1 << 28) + (1 << 20) <= uid < (1 << 28) + (1 << 22)

# Every hostile program starts with this: attempt(name, fn) records "ok" (fn returned
# without raising) or the errno's name; sc() makes a raw system call through libc.
PRELUDE = r'''
import ctypes, errno, json, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
RESULTS = {}

def sc(nr, *args):
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = _libc.syscall(ctypes.c_long(nr), *conv)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r

def attempt(name, fn):
    try:
        fn()
        RESULTS[name] = "ok"
    except OSError as e:
        RESULTS[name] = errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:
        RESULTS[name] = type(e).__name__

def report(**extra):
    RESULTS.update(extra)
    print("HOSTILE " + json.dumps(RESULTS), flush=True)
'''


def runs_base():
    return Path(os.environ["MAF_HOSTILE_RUNS"])


def run_hostile(body, *opts, tools=(), timeout=120, env=None, name="hostile.py"):
    """Runs PRELUDE + body through `maf-host run --json OPTS`. Returns (CompletedProcess,
    report, results): results is the program's HOSTILE line parsed, or None."""
    src_dir = Path(tempfile.mkdtemp(prefix="maf-hostile-src-"))
    try:
        prog = src_dir / name
        prog.write_text(PRELUDE + body)
        argv = [str(HOST), "run", "--json", *opts]
        for t in tools:
            argv += ["--tool", t]
        argv += [str(prog)]
        e = dict(os.environ if env is None else env)
        e["TMPDIR"] = str(runs_base())
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=e)
    finally:
        for p in src_dir.iterdir():
            p.unlink()
        src_dir.rmdir()
    rep = json.loads(proc.stdout) if proc.stdout.startswith(b"{") else None
    results = None
    for line in (rep["output"] if rep else "").splitlines():
        if line.startswith("HOSTILE "):
            results = json.loads(line[len("HOSTILE "):])
    return proc, rep, results


def denied(results, *names, allowed=("EPERM", "EACCES")):
    """Asserts every attempt named failed with one of allowed."""
    for n in names:
        assert results.get(n) in allowed, f"{n}: {results.get(n)} (want one of {allowed})"


def run_processes(supervisor=None):
    """(pid, uid) of every live process under a run's own identity (of the run of that
    supervisor only, when given)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "status").read_text()
        except OSError:
            continue
        uid = int(st.split("\nUid:")[1].split()[0])
        state = st.split("\nState:")[1].split()[0]
        if supervisor is not None and uid != run_id(supervisor):
            continue
        if is_run_id(uid) and state != "Z":
            out.append((int(d.name), uid))
    return out
