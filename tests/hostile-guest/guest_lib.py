"""The hostile-guest suite's harness: what a run is (Spec), how one is made (under maf-host
or mafhost, locally, in a container or in a bubblewrap sandbox entered, with the hostile
launcher of hostile_launcher.py),
measured (wall time, peak memory) and judged (the checks the tests share).

Every run is a process of its own, started here through measure.c and measured from here:
maf-host's peak is the ru_maxrss wait4 gives measure (forked from that small program, not
from this one, whose own peak a child would carry); the Python host (py_host.py) reports
its own VmRSS before the run and its VmHWM after it. A run that does not return is killed at its hard timeout, one
that grows past RSS_KILL_KB at that size, and either is a failure with what was seen."""
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import bwrap_sandbox  # noqa: E402
import hostile_launcher  # noqa: E402

BUILD_TREE = Path(os.environ.get("MAF_BUILD", ROOT / "build")).resolve()
LIBRARY = BUILD_TREE / ("libmafhost.so." + re.search(
    r'^#define MAFH_VERSION "(.*)"$', (ROOT / "host/include/mafhost.h").read_text(),
    re.M).group(1))
IMAGE = f"{os.environ.get('MAF_IMAGE_PREFIX', 'maf-launch')}/python-noshell"
IN_IMAGE_LAUNCHER = "/usr/local/bin/maf-launch"
IN_IMAGE_DIR = "/hostile"          # the hostile launchers' directories in the container
# The bubblewrap sandbox binds this machine's / read-only: the build's launcher is there at
# its own path; the hostile launchers go to its /tmp (a tmpfs of its own), as run dirs do.
IN_BWRAP_LAUNCHER = str(BUILD_TREE / "maf-launch")
IN_BWRAP_DIR = "/tmp/hostile"
HOST_PYTHON = sys.executable        # the Python host's interpreter: pytest's own
IS_ROOT = os.geteuid() == 0
REQUIRE_DOCKER = os.environ.get("REQUIRE_DOCKER") == "1"

MIB_KB = 1024
MEMORY_BOUND_KB = 64 * MIB_KB       # peak host memory above its baseline, one run
ENDING_S = 15.0                     # MAFH_ENDING_MS: a run is over this long after its end
START_SLACK_S = 8.0                 # process start-up, a loaded machine
HARD_EXTRA_S = 60.0                 # the hard timeout: T + this, then the run is killed
RSS_KILL_KB = 1536 * MIB_KB         # a host past this is killed: the bound is long broken
LIFETIME_S = 160                    # the hostile processes' own end, past any hard timeout
SANITIZED = LIBRARY.exists() and b"libasan" in subprocess.run(
    ["readelf", "-d", str(LIBRARY)], capture_output=True).stdout

# The programs the runs start; what each does by itself is the truth a verdict must keep.
PROGRAMS = {
    # one call of its own, then exit 0
    "benign": ('from maf_host_tools import call\n'
               'print("answer", call("rec", tag="genuine"), flush=True)\n'
               'print("done")\n', ("exited", 0)),
    # no call, exit 0 (the forged requests are the launcher's, not the program's)
    "quick": ('print("started", flush=True)\n', ("exited", 0)),
    # still running when the launcher says it exited
    "sleeper": ('import time\nprint("started", flush=True)\ntime.sleep(30)\n',
                ("running", None)),
    # exits 3 while the launcher says 0
    "exit3": ('import sys\nprint("started", flush=True)\nsys.exit(3)\n', ("exited", 3)),
}
GENUINE = {"tag": "genuine"}


@dataclass(frozen=True)
class Spec:
    host: str            # "c" (maf-host run) or "py" (mafhost.run)
    backend: str         # "local", "docker" or "bwrap" (the local backend entered into it)
    transport: str       # stream, relay, wait, files
    attack: str          # hostile_launcher's attack, or "baseline" (the real launcher)
    command: str         # the launcher command attacked ("" for the baseline)
    program: str         # a key of PROGRAMS
    timeout: float       # the run's deadline, seconds
    ending: float = 0.0  # the ending's budget, seconds (--ending-timeout); 0: the default

    @property
    def id(self):
        what = "baseline" if self.attack == "baseline" else f"{self.attack}-{self.command}"
        extra = "" if self.program in ("benign", "quick") else f"-{self.program}"
        if self.ending:
            extra += f"-ending{self.ending:g}"
        return f"{self.host}-{self.backend}-{self.transport}-{what}{extra}"

    @property
    def heavy(self):
        """Writes without end: the machine's CPUs are what it takes."""
        return self.attack in ("flood", "flood-line", "flood-frame", "fork")

    def baseline(self):
        return Spec(self.host, self.backend, self.transport, "baseline", "", "benign", 20.0)


HOSTS = [("c", "local"), ("c", "docker"), ("py", "local"), ("py", "docker"), ("c", "bwrap"),
         ("py", "bwrap")]


def covers(backend, transport):
    """Whether the suite attacks transport over backend. The entered backend (bwrap) is the
    local one but for where its commands start and its paths lead: its stream, the transport
    its runs take, is attacked; what a hostile relay, wait or file exchange does to a run is
    the library's core, attacked over the local backend and Docker."""
    return backend != "bwrap" or transport == "stream"


def host_ids(hb):
    return f"{hb[0]}-{hb[1]}"


@dataclass
class Result:
    spec: Spec
    elapsed: float = 0.0
    killed: str = ""             # why the run was killed here, if it was
    returncode: int = 0
    peak_kb: int = 0             # maf-host: ru_maxrss; Python: VmHWM during the run
    base_kb: int = 0             # Python: VmRSS just before the run
    seen_rss_kb: int = 0         # the largest VmRSS the monitor saw
    report: dict = None          # status, exit_code, verified, errors, record, ...
    tool_calls: list = None      # maf-host: the tool's stdin, bytes each; Python: JSON text
    stdout: bytes = b""
    stderr: bytes = b""
    trace: str = ""              # what the hostile launcher did
    exception: str = ""          # the Python host's traceback, if it raised

    def brief(self):
        rep = self.report or {}
        return (f"{self.spec.id}: {self.elapsed:.1f}s, peak {self.peak_kb / MIB_KB:.1f} MiB"
                f"{' (base %.1f)' % (self.base_kb / MIB_KB) if self.base_kb else ''}, "
                f"status {rep.get('status')} exit {rep.get('exit_code')} verified "
                f"{rep.get('verified')}{', KILLED: ' + self.killed if self.killed else ''}")


class Env:
    """The session's places: a directory of its own for programs, hostile launchers, tool
    logs and run directories; the container and the bubblewrap sandbox, each made on first
    use and removed at the end."""

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="maf-hostile-guest-", dir="/tmp"))
        self.base.chmod(0o755)
        for d in ("runs", "programs", "guests", "logs", "io"):
            (self.base / d).mkdir()
        # Run directories: every run's identity passes, only root lists.
        (self.base / "runs").chmod(0o711)
        self.real = self._public_launcher()
        self.measure = build_measure(self.base)
        self._lock = threading.Lock()
        self._container = None
        self.docker_why = _docker_unavailable()
        self._sandbox = None
        self.bwrap_why = bwrap_sandbox.unavailable()
        for name, (src, _) in PROGRAMS.items():
            p = self.base / "programs" / f"{name}.py"
            p.write_text(src)
            p.chmod(0o644)

    def _public_launcher(self):
        """The real launcher, where the run's own identity may reach it (a build under a
        private home is copied)."""
        src = BUILD_TREE / "maf-launch"
        if all(os.stat(d).st_mode & 0o001 for d in [src.parent, *src.parent.parents]):
            return str(src)
        dst = self.base / "maf-launch"
        shutil.copy2(src, dst)
        return str(dst)

    def container(self):
        with self._lock:
            if self._container is None:
                name = f"maf-hostile-guest-{uuid.uuid4().hex[:12]}"
                docker("run", "-d", "--name", name, "--network", "none", IMAGE)
                self._container = name
            return self._container

    def sandbox(self):
        """The bubblewrap sandbox (bwrap_sandbox.Sandbox), as maf-sandbox-bubblewrap starts
        one; its PID 1 is the process the runs enter."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = bwrap_sandbox.Sandbox()
            return self._sandbox

    def close(self):
        if self._container:
            docker("rm", "-f", self._container, check=False)
        if self._sandbox:
            self._sandbox.close()
        shutil.rmtree(self.base, ignore_errors=True)


def docker(*args, check=True, timeout=120, **kw):
    p = subprocess.run(["docker", *map(str, args)], capture_output=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"docker {' '.join(map(str, args[:3]))} exited {p.returncode}: "
                             f"{p.stderr.decode(errors='replace')[-500:]}")
    return p


def _docker_unavailable():
    """None when the engine answers and has the image, else why not."""
    if shutil.which("docker") is None:
        return "there is no docker client on this machine (make setup installs it)"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer `docker info` within 60 s"
    if info.returncode != 0:
        return "the Docker engine is not reachable (make setup starts dockerd)"
    if subprocess.run(["docker", "image", "inspect", IMAGE],
                      capture_output=True).returncode != 0:
        return f"the image {IMAGE} is not built (make images)"
    return None


def in_sandbox(env, ops):
    """ops (enter_ops.py's) done in the bubblewrap sandbox; what its commands printed."""
    cfg = {"python_path": str(ROOT / "host" / "python"), "library": str(LIBRARY),
           "pid": env.sandbox().pid, "ops": ops}
    e = _host_env()
    if SANITIZED:
        e["LD_PRELOAD"] = _libasan()
    p = subprocess.run([HOST_PYTHON, str(HERE / "enter_ops.py"), json.dumps(cfg)],
                       capture_output=True, timeout=120, env=e)
    if p.returncode != 0:
        raise AssertionError(f"in the bubblewrap sandbox, {ops!r:.300} failed: "
                             f"{p.stderr.decode(errors='replace')[-800:]}")
    return p.stdout.decode(errors="replace")


def real_launcher(env, spec):
    """The real launcher as the backend's exec finds it."""
    return {"local": env.real, "docker": IN_IMAGE_LAUNCHER,
            "bwrap": IN_BWRAP_LAUNCHER}[spec.backend]


# ---- the hostile launcher where the run is --------------------------------------------------

def install(env, spec):
    """The hostile launcher for spec (a directory of its own): its path as the backend's exec
    finds it, and the directory here."""
    d = env.base / "guests" / spec.id
    d.mkdir()
    d.chmod(0o755)
    conf = {"attack": spec.attack, "command": spec.command, "real": real_launcher(env, spec),
            "lifetime": LIFETIME_S}
    (d / "hostile.json").write_text(json.dumps(conf))
    shutil.copy(HERE / "hostile_launcher.py", d / "maf-launch")
    (d / "maf-launch").chmod(0o755)
    if spec.backend == "local":
        return str(d / "maf-launch"), d
    if spec.backend == "bwrap":
        inside = f"{IN_BWRAP_DIR}/{spec.id}"
        in_sandbox(env, [{"write": f"{inside}/hostile.json", "from": str(d / "hostile.json"),
                          "mode": "0644"},
                         {"write": f"{inside}/maf-launch", "from": str(d / "maf-launch"),
                          "mode": "0755"}])
        return f"{inside}/maf-launch", d
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, mode in (("hostile", 0o755), (f"hostile/{spec.id}", 0o755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            t.addfile(info)
        for name, mode in (("maf-launch", 0o755), ("hostile.json", 0o644)):
            data = (d / name).read_bytes()
            info = tarfile.TarInfo(f"hostile/{spec.id}/{name}")
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            t.addfile(info, io.BytesIO(data))
    docker("cp", "-", f"{env.container()}:/", input=buf.getvalue())
    return f"{IN_IMAGE_DIR}/{spec.id}/maf-launch", d


def reap(env, spec, d):
    """Ends what the hostile launcher left running; returns its trace."""
    if spec.attack == "baseline":
        return ""
    if spec.backend == "docker":
        p = docker("exec", env.container(), f"{IN_IMAGE_DIR}/{spec.id}/maf-launch",
                   "__reap__", check=False, timeout=60)
        return p.stdout.decode(errors="replace")
    if spec.backend == "bwrap":
        # The pids it recorded are the sandbox's: the reaper runs there.
        return in_sandbox(env, [{"exec": [f"{IN_BWRAP_DIR}/{spec.id}/maf-launch",
                                          "__reap__"]}])
    out = io.StringIO()
    hostile_launcher.reap(str(d), out)
    return out.getvalue()


# ---- a measured process ---------------------------------------------------------------------

def _vm(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def build_measure(base):
    """measure.c, compiled into the session's directory."""
    exe = base / "measure"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Werror", "-o", str(exe),
                    str(HERE / "measure.c")], check=True, capture_output=True)
    return str(exe)


def measured(measure, argv, env, hard_timeout, res):
    """Runs argv under measure (stdout and stderr to files), watching its memory; fills
    res.elapsed, returncode, peak_kb (ru_maxrss), seen_rss_kb, stdout, stderr, killed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="measure-") as report:
        t0 = time.monotonic()
        p = subprocess.Popen([measure, report.name, *argv], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, env=env, start_new_session=True)
        host = None
        while True:
            pid, status, _ = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if host is None:
                with open(report.name) as f:
                    first = f.readline()
                host = int(first) if first.endswith("\n") else None
            rss = _vm(host, "VmRSS") if host else 0
            res.seen_rss_kb = max(res.seen_rss_kb, rss)
            why = ""
            if time.monotonic() - t0 > hard_timeout:
                why = f"did not return within the hard timeout of {hard_timeout:.0f} s"
            elif rss > RSS_KILL_KB:
                why = f"grew to {rss / MIB_KB:.0f} MiB (killed at {RSS_KILL_KB // MIB_KB} MiB)"
            if why and not res.killed:
                res.killed = why
                os.killpg(p.pid, signal.SIGKILL)
            time.sleep(0.02)
        res.elapsed = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        with open(report.name) as f:
            lines = f.read().split("\n")
        if len(lines) > 2 and lines[1]:
            maxrss, st = map(int, lines[1].split())
            res.peak_kb, res.returncode = maxrss, os.waitstatus_to_exitcode(st)
        else:
            res.returncode = p.returncode if p.returncode < 0 else -signal.SIGKILL
        if res.killed:
            try:
                os.killpg(p.pid, signal.SIGKILL)   # what it left in its group
            except OSError:
                pass
        out.seek(0)
        err.seek(0)
        res.stdout, res.stderr = out.read(4 << 20), err.read(1 << 20)


def _host_env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if SANITIZED:
        # Freed memory waits in ASan's quarantine (256 MiB by default): kept small, so that
        # the peak measures what the host holds.
        opts = [o for o in env.get("ASAN_OPTIONS", "").split(":")
                if o and not o.startswith(("quarantine_size_mb=", "detect_leaks="))]
        env["ASAN_OPTIONS"] = ":".join(opts + ["quarantine_size_mb=8", "detect_leaks=0"])
    return env


def _libasan():
    cc = os.environ.get("CC", "cc")
    return subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()


def run(env, spec):
    """Makes the run spec asks for and returns its Result."""
    res = Result(spec)
    if spec.attack == "baseline":
        launcher = real_launcher(env, spec)
        d = env.base / "logs"
    else:
        launcher, d = install(env, spec)
    log = env.base / "logs" / f"{spec.id}.log"
    hard = spec.timeout + HARD_EXTRA_S
    try:
        if spec.host == "c":
            _run_c(env, spec, launcher, log, hard, res)
        else:
            _run_py(env, spec, launcher, hard, res)
    finally:
        res.trace = reap(env, spec, d)
    return res


def _run_c(env, spec, launcher, log, hard, res):
    tool = f"rec={{ cat; echo; }} >> {shlex.quote(str(log))}; echo true"
    argv = [str(BUILD_TREE / "maf-host"), "run", "--json", "--tool", tool, "--max-calls", "64",
            "--timeout", str(spec.timeout), "--transport", spec.transport,
            "--launcher", launcher]
    if spec.ending:
        argv += ["--ending-timeout", str(spec.ending)]
    if spec.backend == "docker":
        argv += ["--backend", f"docker:{env.container()}"]
    elif spec.backend == "bwrap":
        argv += ["--backend", f"enter:{env.sandbox().pid}"]
    argv.append(str(env.base / "programs" / f"{spec.program}.py"))
    e = _host_env()
    if spec.backend == "local":
        e["TMPDIR"] = str(env.base / "runs")
    measured(env.measure, argv, e, hard, res)
    try:
        res.report = json.loads(res.stdout)
    except ValueError:
        res.report = None
    res.tool_calls = log.read_bytes().splitlines() if log.exists() else []


def _run_py(env, spec, launcher, hard, res):
    backend = {"local": lambda: "local", "docker": lambda: f"docker:{env.container()}",
               "bwrap": lambda: f"enter:{env.sandbox().pid}"}[spec.backend]()
    cfg = {"python_path": str(ROOT / "host" / "python"), "library": str(LIBRARY),
           "backend": backend, "launcher": launcher, "real": real_launcher(env, spec),
           "tmpdir": str(env.base / "runs"),
           "program": PROGRAMS[spec.program][0], "timeout": spec.timeout,
           "transport": spec.transport, "ending": spec.ending or None}
    e = _host_env()
    if SANITIZED:
        e["LD_PRELOAD"] = _libasan()
    measured(env.measure, [HOST_PYTHON, str(HERE / "py_host.py"), json.dumps(cfg)], e, hard,
             res)
    try:
        out = json.loads(res.stdout.splitlines()[-1])
    except (ValueError, IndexError):
        out = None
    if out is None:
        res.report = None
        res.tool_calls = []
        return
    res.exception = out.pop("exception", "")
    res.tool_calls = out.pop("tool_calls")
    if out.get("peak_kb"):
        res.peak_kb, res.base_kb = out.pop("peak_kb"), out.pop("base_kb")
    res.report = out if "status" in out else None


# ---- the checks ---------------------------------------------------------------------------

def came_back(res):
    """The run came back by itself, with a result: no hang, no crash, no traceback."""
    p = []
    host = "maf-host" if res.spec.host == "c" else "the Python host"
    if res.killed:
        p.append(f"{host} {res.killed} (after {res.elapsed:.1f} s)")
    elif res.returncode < 0:
        p.append(f"{host} was killed by signal {-res.returncode}")
    if res.exception:
        p.append(f"mafhost.run raised: {res.exception.strip().splitlines()[-1]}\n"
                 f"{res.exception[-3000:]}")
    if b"Traceback (most recent call last)" in res.stderr:
        p.append(f"{host} printed a traceback: {res.stderr[-2000:].decode(errors='replace')}")
    if b"AddressSanitizer" in res.stderr or b"runtime error:" in res.stderr:
        p.append(f"the sanitizers reported: {res.stderr[-2000:].decode(errors='replace')}")
    if res.report is None and not res.killed:
        p.append(f"{host} gave no result: stdout {res.stdout[-300:]!r} "
                 f"stderr {res.stderr[-1000:]!r}")
    return p


def time_bound(res):
    ending = res.spec.ending or ENDING_S
    bound = res.spec.timeout + ending + START_SLACK_S
    if res.elapsed > bound:
        return [f"the run took {res.elapsed:.1f} s: more than its deadline "
                f"{res.spec.timeout:g} s + the ending's {ending:g} s + {START_SLACK_S:g} s "
                f"of start-up ({bound:g} s)"]
    return []


def memory_bound(res, base):
    """Peak host memory at most MEMORY_BOUND_KB above the host's baseline: for maf-host the
    benign run's ru_maxrss; for the Python host its own VmRSS before the run, and the benign
    run's peak too."""
    peak = max(res.peak_kb, res.seen_rss_kb)
    p = []
    if res.spec.host == "c":
        if peak - base.peak_kb > MEMORY_BOUND_KB:
            p.append(f"maf-host peaked at {peak / MIB_KB:.1f} MiB, "
                     f"{(peak - base.peak_kb) / MIB_KB:.1f} MiB above the benign run's "
                     f"{base.peak_kb / MIB_KB:.1f} MiB (bound 64 MiB)")
        return p
    start = res.base_kb or base.base_kb
    if peak - start > MEMORY_BOUND_KB:
        p.append(f"the Python host peaked at {peak / MIB_KB:.1f} MiB, "
                 f"{(peak - start) / MIB_KB:.1f} MiB above its "
                 f"{start / MIB_KB:.1f} MiB before the run (bound 64 MiB; the benign run "
                 f"grew {(base.peak_kb - base.base_kb) / MIB_KB:.1f} MiB)")
    if peak - base.peak_kb > MEMORY_BOUND_KB:
        p.append(f"the Python host peaked at {peak / MIB_KB:.1f} MiB, "
                 f"{(peak - base.peak_kb) / MIB_KB:.1f} MiB above the benign run's peak "
                 f"{base.peak_kb / MIB_KB:.1f} MiB (bound 64 MiB)")
    return p


def verdict(res):
    """Never a verdict the supervisor's record (or the program's real end) contradicts."""
    rep = res.report
    if rep is None:
        return []
    p = []
    truth, code = PROGRAMS[res.spec.program][1]
    rec = rep.get("record")
    status, exit_code = rep.get("status"), rep.get("exit_code")
    if rep.get("verified"):
        if not rec:
            p.append(f"verified without a record: {status}, exit code {exit_code}")
        elif exit_code != rec["exit_code"] or (status in ("exited", "signaled") and
                                               status != rec["status"]):
            # The host's own statuses (timeout, error, stopped) may differ from the
            # record's; a claim of how the program ended, and its exit code, may not.
            p.append(f"verified as {status}, exit code {exit_code}, while the record says "
                     f"{rec['status']}, exit code {rec['exit_code']}")
    if truth == "exited":
        if status == "exited" and exit_code != code:
            p.append(f"reported exited with {exit_code}; the program exited {code}")
        if rec and rec["status"] == "exited" and rec["exit_code"] != code:
            p.append(f"the record says exit code {rec['exit_code']}; the program exited "
                     f"{code}")
    elif status == "exited":
        p.append(f"reported exited with {exit_code}: the program was still running")
    return p


def clear_error(res):
    rep = res.report
    if rep is None:
        return []
    if not rep.get("errors"):
        return [f"no error on the result of a hostile run: {json.dumps(rep)[:800]}"]
    return []


def ending_shares(res):
    """With the ending's budget set (spec.ending): every ending command the host cut says
    it was cut within that budget, not the default's shares (stop's 11 s of 15)."""
    if not res.spec.ending or res.report is None:
        return []
    cut = [int(ms) for ms in re.findall(r"did not return within (\d+) ms",
                                        json.dumps(res.report.get("errors")))]
    if not cut:
        return [f"no ending command was cut: {json.dumps(res.report)[:800]}"]
    return [f"an ending command was given {ms} ms, past the ending's {res.spec.ending:g} s"
            for ms in cut if ms > res.spec.ending * 1000]


def decode_call(res, raw):
    """A tool call's arguments as the tool saw them: (dict or None, why not)."""
    if res.spec.host == "py":
        return json.loads(raw), None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 reached the tool ({e}): {raw[:200]!r}"
    try:
        args = json.loads(text, object_pairs_hook=hostile_launcher.no_duplicates)
    except ValueError as e:
        return None, f"the tool got what is not one JSON object without a key twice ({e}): " \
                     f"{raw[:200]!r}"
    if not isinstance(args, dict):
        return None, f"the tool got arguments that are not an object: {raw[:200]!r}"
    return args, None


def only_calls(res, allowed):
    """Every call the tool saw had exactly the arguments of one well-formed request sent
    (allowed: {tag: arguments}), each at most once; none carried a bad tag."""
    p = []
    seen = {}
    for raw in res.tool_calls or []:
        text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        if "bad-" in text:
            p.append(f"a tool ran on a malformed request's arguments: {raw[:300]!r}")
            continue
        args, why = decode_call(res, raw)
        if why:
            p.append(why)
            continue
        tag = args.get("tag")
        if tag not in allowed or allowed[tag] != args:
            p.append(f"a tool ran with arguments no well-formed request carried: {args!r}")
            continue
        seen[tag] = seen.get(tag, 0) + 1
        if seen[tag] > 1:
            p.append(f"a tool ran twice on one request: {args!r}")
    return p


def problems_text(res, problems):
    return (f"{res.brief()}\n  - " + "\n  - ".join(problems) +
            (f"\n  errors: {(res.report or {}).get('errors')}" if res.report else "") +
            (f"\n  hostile launcher: {res.trace[-1500:]}" if res.trace else ""))
