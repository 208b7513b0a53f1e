"""The baseline of `make bench-docker`: a replica, in Python, of how maf-sandbox 0.21 runs a
program with host tools in a Docker container (shared/PROTOCOL.md, "Upstream"), to measure
beside maf-host in the same run. Not maf-sandbox's code: rebuilt from its documented
behaviour, as tests/integration/reference/run_program.sh is.

The backend (DockerCli) is maf-sandbox's Docker backend: every operation is one `docker`
command, and counts as one backend operation:
  write_file  `docker cp - CONTAINER:/`, a tar of the one file on stdin (the engine makes the
              missing parents)
  read_file   `docker cp CONTAINER:PATH -`, the file taken out of the tar it prints
  stat_file   the same command, its output dropped: the file exists when it succeeds, and
              does not when the engine says it cannot find it
  exec        `docker exec CONTAINER ARGV...`, blocking until the command returns

The run (UpstreamRun), in maf-sandbox's order:
- upload R/host_tools/program.py, maf_host_tools.py (the shim) and run_program.sh, a
  write_file each, into a fresh R under /tmp;
- launch: exec `sh R/host_tools/run_program.sh R` (the reference takes R as its argument where
  upstream bakes it into the script), which returns at once and prints
  `maf-host-tools: session`;
- poll: each tick stats the exit marker, and when it is not there, the requests of the
  window in id order, the next one first (the window is 1, doubled up to 4 after a tick
  that found as many as it looked for, and back to 1 after a tick that found none),
  stopping at the first absent one, since a request after it could not be served before
  it anyway; then it serves those found, strictly in id order: read, dispatch, write the
  response. An idle tick is two stats, a call at least three operations (its stat, read and
  write). Then it sleeps the poll interval (a tick lasts its operations and the interval).
  An abandoned request is stepped over; one that does not parse yet (written in pieces) is
  read again at the next tick. With eager=True (a variant, not upstream's order), each
  request is stat'ed only once the one before it has been answered, within the same tick:
  over a backend whose operations take longer than the shim's poll, the next request of a
  sequential caller is then often there already;
- at the exit marker: read it and the output, then remove R/host_tools with `rm -rf` over
  exec, as upstream cleans up;
- one deadline over it all: past it, read the output, `kill -KILL -- -SESSION` over exec,
  remove R/host_tools, and fail.
The tools are Python functions in the supervisor's process, as maf-sandbox's are: `echo`
returns its arguments. The calls budget is the caller's (maf-sandbox's default is 16)."""
import io
import json
import subprocess
import tarfile
import time


class BaselineError(Exception):
    """The baseline could not run; str() says why."""


class DockerCli:
    """maf-sandbox's Docker backend: one `docker` command per operation, each counted."""

    def __init__(self, container, docker="docker"):
        self.container = container
        self.docker = docker
        self.ops = {"exec": 0, "read": 0, "write": 0, "stat": 0}

    def _run(self, kind, argv, data=None, timeout=300):
        self.ops[kind] += 1
        try:
            return subprocess.run([self.docker, *argv], input=data, capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BaselineError(f"docker {' '.join(argv)} did not return within "
                                f"{timeout} s") from None

    def _absent(self, proc):
        return b"could not find the file" in proc.stderr.lower() or \
            b"no such file" in proc.stderr.lower()

    def _failed(self, what, proc):
        return BaselineError(f"{what} in the container {self.container} failed (docker exit "
                             f"{proc.returncode}): "
                             f"{proc.stderr.decode(errors='replace').strip()}")

    def write_file(self, path, data):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        proc = self._run("write", ["cp", "-", f"{self.container}:/"], buf.getvalue())
        if proc.returncode != 0:
            raise self._failed(f"writing {path}", proc)

    def read_file(self, path):
        """The file's bytes, or None when it does not exist."""
        proc = self._run("read", ["cp", f"{self.container}:{path}", "-"])
        if proc.returncode != 0:
            if self._absent(proc):
                return None
            raise self._failed(f"reading {path}", proc)
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            member = tar.next()
            f = tar.extractfile(member) if member is not None else None
            if f is None:
                raise BaselineError(f"{path} in the container {self.container} is not a "
                                    f"regular file")
            return f.read()

    def stat_file(self, path):
        """True when the file exists."""
        proc = self._run("stat", ["cp", f"{self.container}:{path}", "-"])
        if proc.returncode != 0:
            if self._absent(proc):
                return False
            raise self._failed(f"looking for {path}", proc)
        return True

    def exec(self, argv, timeout=300):
        proc = self._run("exec", ["exec", self.container, *argv], timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr


def echo(arguments):
    return arguments


class UpstreamRun:
    """One program run, served the way maf-sandbox serves it (see the module's docstring)."""

    def __init__(self, backend, run_dir, poll_interval, max_calls, deadline_s,
                 tools=None, eager=False):
        self.b = backend
        self.r = run_dir
        self.ht = f"{run_dir}/host_tools"
        self.calls_dir = f"{self.ht}/host_tool_calls"
        self.poll = poll_interval
        self.max_calls = max_calls
        self.deadline_s = deadline_s
        self.tools = tools if tools is not None else {"echo": echo}
        self.eager = eager
        self.dispatched = 0
        self.ticks = 0

    def _respond(self, nnnn, doc):
        self.b.write_file(f"{self.calls_dir}/{nnnn}.response.json",
                          json.dumps(doc).encode())

    def _dispatch(self, nnnn, req):
        """The response to one request, as a document."""
        if self.dispatched >= self.max_calls:
            return {"refusal": f"the host-tool call budget of {self.max_calls} calls is "
                               f"spent"}
        self.dispatched += 1
        name = req.get("name")
        args = req.get("arguments", {})
        if not isinstance(name, str) or name not in self.tools:
            return {"refusal": f"there is no host tool named {name!r}"}
        if not isinstance(args, dict):
            return {"refusal": "the arguments are not an object"}
        try:
            return {"value": self.tools[name](args)}
        except Exception as e:  # noqa: BLE001 - a tool's failure is the program's refusal
            return {"refusal": str(e)}

    def _request(self, n):
        return f"{self.calls_dir}/{n:04d}.request.json"

    def _serve(self, n):
        """Reads, dispatches and answers request n, which a stat found. False when it is
        not whole yet (to be read again at the next tick), True when it was answered or
        stepped over."""
        nnnn = "%04d" % n
        data = self.b.read_file(self._request(n))
        if data is None:
            return False
        try:
            req = json.loads(data)
        except ValueError:
            return False  # written in pieces (write_file is not atomic): read it again
        if not isinstance(req, dict) or req.get("id") != nnnn:
            self._respond(nnnn, {"refusal": "a request that is not one for its file"})
            return True
        if req.get("abandoned") is True:
            return True
        self._respond(nnnn, self._dispatch(nnnn, req))
        return True

    def run(self, program, shim, launcher_script):
        """Uploads, launches and serves; returns (exit code, output). Raises BaselineError."""
        deadline = time.monotonic() + self.deadline_s
        self.b.write_file(f"{self.ht}/program.py", program)
        self.b.write_file(f"{self.ht}/maf_host_tools.py", shim)
        self.b.write_file(f"{self.ht}/run_program.sh", launcher_script)
        rc, out, err = self.b.exec(["sh", f"{self.ht}/run_program.sh", self.r])
        if rc != 0:
            raise BaselineError(f"sh run_program.sh exited {rc}: "
                                f"{err.decode(errors='replace').strip()}")
        session = b"maf-host-tools: session" in out.splitlines()
        marker = f"{self.ht}/program_exit_code"
        n, window = 1, 1
        while True:
            if time.monotonic() > deadline:
                self._expire(session)
            self.ticks += 1
            if self.b.stat_file(marker):
                break
            found = 0
            if self.eager:
                while found < window and self.b.stat_file(self._request(n)):
                    found += 1
                    if not self._serve(n):
                        break
                    n += 1
            else:
                while found < window and self.b.stat_file(self._request(n + found)):
                    found += 1
                for _ in range(found):
                    if not self._serve(n):
                        break
                    n += 1
            window = min(4, window * 2) if found == window else 1 if found == 0 else window
            time.sleep(self.poll)
        code = self.b.read_file(marker)
        output = self.b.read_file(f"{self.ht}/program_output.txt") or b""
        self._cleanup()
        return int(code), output.decode(errors="replace")

    def _cleanup(self):
        rc, _, err = self.b.exec(["rm", "-rf", self.ht])
        if rc != 0:
            raise BaselineError(f"rm -rf {self.ht} exited {rc}: "
                                f"{err.decode(errors='replace').strip()}")

    def _expire(self, session):
        output = self.b.read_file(f"{self.ht}/program_output.txt") or b""
        target = self.b.read_file(f"{self.ht}/program_session" if session
                                  else f"{self.ht}/program_pid")
        if target and target.isdigit():
            self.b.exec(["kill", "-KILL", "--", ("-" if session else "") + target.decode()])
        self._cleanup()
        raise BaselineError(f"the run passed its deadline of {self.deadline_s} s; its output "
                            f"ends: {output.decode(errors='replace')[-2000:]}")
