"""The launcher's call channel (MAF_HOST_TOOLS_FD) and `maf-launch call`.

The host here is a small file-protocol responder written from shared/PROTOCOL.md (serving
requests strictly in id order, like upstream's supervisor): the channel must work with any
supervisor that speaks the legacy files, so nothing of ours stands on the host side.
"""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import (HOST_TOOLS, LAUNCHER, exit_record, launch, launch_info,
                      launcher_is_static, probe, wait_exit)

CALLS = "host_tool_calls"


class Responder(threading.Thread):
    """Serves R/host_tools/host_tool_calls in id order until the exit marker appears.

    Tools: add(a, b) -> a+b; echo(**kw) -> kw; big(n) -> "x"*n; refuse() -> a refusal.
    With torn=True every response is written in 3 pieces with pauses, in place (the way a
    backend's non-atomic write_file may land). With keep_links=True each response is also
    hard-linked as kept-N. With archive=True every response is written the way the engine's
    archive API (`docker cp`) writes a file: created, written and closed in place, and only
    then given its owner, mode and times, here once the next request has appeared (when the
    launcher has relayed the answer and moved on); a failure of that last step is kept in
    archive_errors. The inodes of the requests it read and the responses it wrote are kept by
    number."""

    def __init__(self, run_dir, torn=False, keep_links=False, archive=False):
        super().__init__(daemon=True)
        self.ht = Path(run_dir) / HOST_TOOLS
        self.calls = self.ht / CALLS
        self.torn = torn
        self.keep_links = keep_links
        self.archive = archive
        self.archive_errors = []
        self.unfinished = None  # archive: the response whose last step is still to come
        self.served = []
        self.request_inodes, self.response_inodes = {}, {}
        self.stop = threading.Event()

    def answer(self, req):
        name, args = req.get("name"), req.get("arguments", {})
        if name == "add":
            return {"value": args["a"] + args["b"]}
        if name == "echo":
            return {"value": args}
        if name == "big":
            return {"value": "x" * args["n"]}
        return {"refusal": f"no tool named {name}"}

    def write(self, path, data):
        """Publishes data as path; returns its inode (taken before the launcher can have
        handed the file over to a request of its own)."""
        if not self.torn:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            ino = tmp.stat().st_ino
            os.rename(tmp, path)
            return ino
        third = len(data) // 3
        with open(path, "wb") as f:
            ino = os.fstat(f.fileno()).st_ino
            for piece in (data[:third], data[third:2 * third], data[2 * third:]):
                f.write(piece)
                f.flush()
                os.fsync(f.fileno())
                time.sleep(0.15)
        return ino

    def finish_archive_write(self):
        """The engine's last step on a file it extracted: lchown, chmod, utimes."""
        path, self.unfinished = self.unfinished, None
        try:
            os.chown(path, 0, 0, follow_symlinks=False)
            os.chmod(path, 0o644)
            os.utime(path, (0, 0), follow_symlinks=False)
        except OSError as e:
            self.archive_errors.append(f"{path.name}: {e}")

    def run(self):
        n = 1
        while not self.stop.is_set():
            req_path = self.calls / f"{n:04d}.request.json"
            if self.unfinished and (req_path.exists() or
                                    (self.ht / "program_exit_code").exists()):
                self.finish_archive_write()
            if req_path.exists():
                with open(req_path, "rb") as f:
                    self.request_inodes[n] = os.fstat(f.fileno()).st_ino
                    req = json.loads(f.read())
                if not req.get("abandoned"):
                    resp = self.answer(req)
                    resp_path = self.calls / f"{n:04d}.response.json"
                    if self.keep_links:
                        # Linked before it is published: the launcher sees two links.
                        kept, tmp = self.calls / f"kept-{n}", self.calls / f"kept-{n}.tmp"
                        kept.write_bytes(json.dumps(resp).encode())
                        os.link(kept, tmp)
                        self.response_inodes[n] = kept.stat().st_ino
                        os.rename(tmp, resp_path)
                    elif self.archive:
                        with open(resp_path, "wb") as f:
                            self.response_inodes[n] = os.fstat(f.fileno()).st_ino
                            f.write(json.dumps(resp).encode())
                        self.unfinished = resp_path
                    else:
                        self.response_inodes[n] = self.write(resp_path,
                                                             json.dumps(resp).encode())
                    self.served.append((n, req.get("name")))
                n += 1
                continue
            if (self.ht / "program_exit_code").exists():
                return
            time.sleep(0.002)


def run_served(run_dir, program, opts=(), torn=False, timeout=60, keep_links=False,
               archive=False, responder=None):
    """Launches PROGRAM with a responder (responder, or a Responder made with these
    options); returns (exit record, output text, responder), the launch line in
    responder.launch."""
    r = responder or Responder(run_dir, torn=torn, keep_links=keep_links, archive=archive)
    proc = launch(run_dir, *program, opts=opts)
    assert proc.returncode == 0, proc.stderr
    r.launch = launch_info(proc)
    r.start()
    wait_exit(run_dir, timeout=timeout)
    r.stop.set()
    r.join(5)
    out = (Path(run_dir) / HOST_TOOLS / "program_output.txt").read_text()
    return exit_record(run_dir), out, r


# The client the generated shim and these tests use: a private stream connection per caller,
# passed to the supervisor over the inherited SOCK_SEQPACKET socket.
CLIENT = r'''
import json, os, socket
def connect():
    chan = socket.socket(fileno=os.dup(int(os.environ["MAF_HOST_TOOLS_FD"])))
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    socket.send_fds(chan, [b"connect"], [b.fileno()])
    b.close(); chan.close()
    return a
def call(name, cid=1, **arguments):
    s = connect()
    s.sendall(json.dumps({"id": cid, "name": name, "arguments": arguments}).encode() + b"\n")
    f = s.makefile("rb")
    line = f.readline()
    s.close()
    return json.loads(line)
'''


def py(code):
    return [sys.executable, "-c", CLIENT + code]


def test_call_value_refusal_and_usage(run_dir):
    ml = str(LAUNCHER)
    script = (f'{ml} call add \'{{"a": 2, "b": 40}}\'; echo "rc=$?"; '
              f'{ml} call refuse; echo "rc=$?"; '
              f'{ml} call; echo "rc=$?"; '
              f'{ml} call add "[1, 2]"; echo "rc=$?"; '
              f'echo \'{{"a": 1, "b": 1}}\' | {ml} call add -; echo "rc=$?"')
    rec, out, r = run_served(run_dir, ["/bin/sh", "-c", script])
    lines = out.splitlines()
    assert lines[0:2] == ["42", "rc=0"]
    assert lines[2] == "maf-launch call: refused: no tool named refuse"
    assert lines[3] == "rc=1"
    assert lines[5] == "rc=2" and "no TOOL" in lines[4]
    assert lines[7] == "rc=2" and "JSON object" in lines[6]
    assert lines[8:10] == ["2", "rc=0"]
    assert [name for _, name in r.served] == ["add", "refuse", "add"]
    assert rec["calls"] == 3


def test_call_without_a_channel_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MAF_HOST_TOOLS_FD"}
    p = subprocess.run([str(LAUNCHER), "call", "add", "{}"], capture_output=True, env=env)
    assert p.returncode == 125
    assert b"MAF_HOST_TOOLS_FD is not set" in p.stderr
    env["MAF_HOST_TOOLS_FD"] = "0"
    p = subprocess.run([str(LAUNCHER), "call", "add", "{}"], capture_output=True, env=env,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 125
    assert b"not the run's channel socket" in p.stderr


def test_environment_names_the_channel_and_the_tools(run_dir):
    rec, out, _ = run_served(run_dir, py(
        'import stat; fd = int(os.environ["MAF_HOST_TOOLS_FD"]);'
        'print(stat.S_ISSOCK(os.fstat(fd).st_mode), os.environ["MAF_HOST_TOOLS"])'),
        opts=["--tool", "add", "--tool", "echo"])
    assert out.strip() == "True add echo"


def test_unknown_tool_and_spent_budget_are_refused_without_a_round_trip(run_dir):
    rec, out, r = run_served(run_dir, py(
        'print(json.dumps([call("add", a=1, b=2), call("nope"), call("add", a=2, b=2),'
        ' call("add", a=3, b=3)]))'), opts=["--tool", "add", "--max-calls", "3"])  # refusals count
    got = json.loads(out)
    assert got[0] == {"id": 1, "value": 3}
    assert got[1] == {"id": 1, "refusal": "unknown tool 'nope'"}
    assert got[2] == {"id": 1, "value": 4}
    # The refusal of "nope" spent one of the 3 calls, as upstream counts refusals.
    assert "budget of 3 host-tool calls is spent" in got[3]["refusal"]
    # Only the two allowed, in-budget calls became request files.
    assert [name for _, name in r.served] == ["add", "add"]
    assert sorted(p.name for p in (run_dir / HOST_TOOLS / CALLS).glob("*.request.json")) == [
        "0001.request.json", "0002.request.json"]


def test_eight_threads_each_get_their_own_answer(run_dir):
    rec, out, r = run_served(run_dir, py(
        'import threading\n'
        'res = {}\n'
        'def worker(i):\n'
        '    for j in range(5):\n'
        '        res[(i, j)] = call("add", cid=f"t{i}-{j}", a=i * 100, b=j)\n'
        'ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]\n'
        '[t.start() for t in ts]; [t.join() for t in ts]\n'
        'bad = [(k, v) for k, v in res.items() if v != {"id": f"t{k[0]}-{k[1]}", "value": k[0] * 100 + k[1]}]\n'
        'print(len(res), bad)\n'))
    assert out.strip() == "40 []"
    assert len(r.served) == 40
    assert rec["calls"] == 40


def test_forked_processes_each_get_their_own_answer(run_dir):
    rec, out, r = run_served(run_dir, py(
        'import sys\n'
        'kids = []\n'
        'for i in range(6):\n'
        '    pid = os.fork()\n'
        '    if pid == 0:\n'
        '        v = call("add", cid=i, a=i, b=1000)\n'
        '        os._exit(0 if v == {"id": i, "value": i + 1000} else 1)\n'
        '    kids.append(pid)\n'
        'codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids]\n'
        'print(codes)\n'))
    assert out.strip() == "[0, 0, 0, 0, 0, 0]"
    assert len(r.served) == 6


def test_legacy_files_and_the_channel_share_the_numbering(run_dir):
    # The program claims a number the upstream way, then calls through the channel: the
    # channel must take the next free number, and both are answered.
    rec, out, r = run_served(run_dir, py(
        'import time\n'
        'd = os.path.join(os.environ["PYTHONPATH"].split(":")[0], "host_tool_calls")\n'
        'os.makedirs(d, exist_ok=True)\n'
        'os.close(os.open(os.path.join(d, "0001.claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))\n'
        'with open(os.path.join(d, "0001.request.json.part"), "w") as f:\n'
        '    json.dump({"id": "0001", "name": "add", "arguments": {"a": 5, "b": 5}}, f)\n'
        'os.rename(os.path.join(d, "0001.request.json.part"), os.path.join(d, "0001.request.json"))\n'
        'v2 = call("add", a=7, b=7)\n'
        'p = os.path.join(d, "0001.response.json")\n'
        'while not os.path.exists(p): time.sleep(0.01)\n'
        'print(json.dumps([json.load(open(p)), v2]))\n'))
    legacy, channel = json.loads(out)
    assert legacy == {"value": 10}
    assert channel == {"id": 1, "value": 14}
    assert r.served == [(1, "add"), (2, "add")]


def test_claims_are_empty_files_even_when_the_program_meddles_with_them(run_dir):
    # The launcher's claims are empty regular files, as upstream's shim makes them. After its
    # first, each is a hard link to its last one made as a file; the program removing that
    # file, or putting a directory in its place, costs nothing but a fresh file. (Under an
    # identity of its own the program cannot touch the launcher's claims at all; with the
    # launcher's identity, as an unprivileged launcher gives it, it can.)
    rec, out, r = run_served(run_dir, opts=("--user", "0"), program=py(
        'd = os.path.join(os.environ["PYTHONPATH"].split(":")[0], "host_tool_calls")\n'
        'vals = [call("add", a=i, b=1)["value"] for i in range(3)]\n'
        'os.unlink(os.path.join(d, "0001.claim"))\n'
        'vals += [call("add", a=i, b=1)["value"] for i in range(3, 5)]\n'
        'os.unlink(os.path.join(d, "0004.claim"))\n'
        'os.mkdir(os.path.join(d, "0004.claim"))\n'
        'vals += [call("add", a=i, b=1)["value"] for i in range(5, 7)]\n'
        'print(json.dumps(vals))\n'))
    assert json.loads(out) == [1, 2, 3, 4, 5, 6, 7]
    assert [n for n, _ in r.served] == [1, 2, 3, 4, 5, 6, 7]
    calls = Path(run_dir) / HOST_TOOLS / CALLS
    for n in (2, 3, 5, 6, 7):
        claim = calls / f"{n:04d}.claim"
        assert claim.is_file() and not claim.is_symlink() and claim.read_bytes() == b""
    assert not (calls / "0001.claim").exists() and (calls / "0004.claim").is_dir()
    # Linked, not a new file each: 2 and 3 share 1's file, 5 shares 4's, 6 and 7 share 6's.
    ino = {n: (calls / f"{n:04d}.claim").stat().st_ino for n in (2, 3, 5, 6, 7)}
    assert ino[2] == ino[3] and ino[6] == ino[7]
    assert len({ino[2], ino[5], ino[6]}) == 3


def test_a_relayed_response_file_carries_the_next_request(run_dir):
    # Nobody reads a response once it is relayed, so the launcher writes its next request
    # into that file and renames it: no new inode for the request (PROTOCOL.md). Each
    # response here is longer than the request after it, which must be cut to its length.
    rec, out, r = run_served(run_dir, py(
        'vals = [len(call("big", n=300)["value"]) for _ in range(3)]\n'
        'vals.append(call("add", a=1, b=2)["value"])\n'
        'print(json.dumps(vals))\n'))
    assert json.loads(out) == [300, 300, 300, 3]
    calls = Path(run_dir) / HOST_TOOLS / CALLS
    for n in (1, 2, 3):
        assert r.request_inodes[n + 1] == r.response_inodes[n]
        assert not (calls / f"{n:04d}.response.json").exists()
    for n in (1, 2, 3, 4):
        req = json.loads((calls / f"{n:04d}.request.json").read_bytes())
        assert req["id"] == f"{n:04d}" and req["name"] == ("big" if n < 4 else "add")
    assert not list(calls.glob("*.part"))
    assert json.loads((calls / "0004.response.json").read_bytes()) == {"value": 3}


def test_a_response_with_another_link_is_not_reused(run_dir):
    # A response file with a second name is left as it is: writing the request into it
    # would change what that other name holds. The request, which the host has read, carries
    # the next one instead.
    rec, out, r = run_served(run_dir, py(
        'print(json.dumps([call("add", a=i, b=1)["value"] for i in range(3)]))\n'),
        keep_links=True)
    assert json.loads(out) == [1, 2, 3]
    calls = Path(run_dir) / HOST_TOOLS / CALLS
    for n in (1, 2, 3):
        kept = calls / f"kept-{n}"
        assert json.loads(kept.read_bytes()) == {"value": n}
        assert (calls / f"{n:04d}.response.json").stat().st_ino == kept.stat().st_ino
    assert r.request_inodes[1] == r.request_inodes[2] == r.request_inodes[3]
    assert len(set(r.response_inodes.values())) == 3


def test_a_response_written_in_place_is_left_to_its_writer(run_dir):
    # The engine's archive API (docker cp) closes a file it extracts and only then sets its
    # owner, mode and times: the launcher has relayed the answer by then and made its next
    # request. Had it reused that response's file, the engine's last step would find the
    # name gone and the host's write would fail, though the program had its answer. A
    # response that was not renamed into place is never renamed, reused or removed; the
    # request the host read carries the next request instead.
    rec, out, r = run_served(run_dir, py(
        'print(json.dumps([call("add", a=i, b=1)["value"] for i in range(20)]))\n'),
        archive=True)
    assert json.loads(out) == list(range(1, 21))
    assert r.archive_errors == []
    calls = Path(run_dir) / HOST_TOOLS / CALLS
    for n in range(1, 21):
        resp = calls / f"{n:04d}.response.json"
        assert resp.stat().st_ino == r.response_inodes[n]
        assert json.loads(resp.read_bytes()) == {"value": n}
    assert len(set(r.request_inodes.values())) == 1, "each request reused the one before"
    assert rec["calls"] == 20


def test_a_response_written_in_pieces_is_never_delivered_torn(run_dir):
    rec, out, r = run_served(run_dir, py(
        'vals = [call("big", n=n) for n in (10, 5000, 200000)]\n'
        'print(json.dumps([(v.get("id"), len(v.get("value", "")), set(v.get("value", ""))) == (1, n, {"x"})'
        ' for v, n in zip(vals, (10, 5000, 200000))]))\n'), torn=True)
    assert json.loads(out) == [True, True, True]


def test_channel_abuse_harms_only_the_program(run_dir):
    # Garbage, a line without an id, an oversized line, a non-socket descriptor, a flood of
    # connections, a connection closed mid-call, answers never read: afterwards an ordinary
    # call still works and the run ends normally with its markers.
    rec, out, r = run_served(run_dir, py(
        'import time\n'
        'res = []\n'
        's = connect(); f = s.makefile("rb")\n'
        's.sendall(b"not json\\n"); res.append(json.loads(f.readline()))\n'
        's.sendall(b"{\\"name\\": \\"add\\"}\\n"); res.append(json.loads(f.readline()))\n'
        's.sendall(b"{\\"id\\": 3, \\"name\\": \\"a/b\\"}\\n"); res.append(json.loads(f.readline()))\n'
        's.sendall(b"{\\"id\\": 4, \\"name\\": \\"add\\", \\"arguments\\": [1]}\\n"); res.append(json.loads(f.readline()))\n'
        's.sendall(b"[" * 100 + b"\\n"); res.append(json.loads(f.readline()))\n'
        'big = connect(); bf = big.makefile("rb")\n'
        'try:\n'
        '    big.sendall(b"x" * (2 << 20))\n'
        'except OSError: pass\n'
        'res.append(json.loads(bf.readline())); res.append(bf.readline().decode())\n'
        'chan = socket.socket(fileno=os.dup(int(os.environ["MAF_HOST_TOOLS_FD"])))\n'
        'r_, w_ = os.pipe(); socket.send_fds(chan, [b"connect"], [r_])\n'
        'chan.send(b"no descriptor at all")\n'
        'many = [connect() for _ in range(100)]\n'
        'for c in many: c.close()\n'
        'm = connect(); m.sendall(json.dumps({"id": 9, "name": "add", "arguments": {"a": 1, "b": 1}}).encode() + b"\\n"); m.close()\n'
        'flood = connect(); flood.setblocking(False)\n'
        'try:\n'
        '    for i in range(200):\n'
        '        flood.send(json.dumps({"id": i, "name": "echo", "arguments": {"pad": "y" * 1000}}).encode() + b"\\n")\n'
        'except BlockingIOError: pass\n'
        'time.sleep(0.5)\n'
        'res.append(call("add", cid="after", a=20, b=22))\n'
        'print(json.dumps(res))\n'), opts=["--max-calls", "30"])
    res = json.loads(out.splitlines()[-1])
    assert res[0] == {"id": None, "refusal": "the call is not a JSON object"}
    assert res[1]["id"] is None and "no \"id\"" in res[1]["refusal"]
    assert res[2] == {"id": 3, "refusal": "the call has no valid tool \"name\""}
    assert res[3] == {"id": 4, "refusal": "the call's \"arguments\" is not a JSON object"}
    assert res[4] == {"id": None, "refusal": "the call is not a JSON object"}
    assert res[5] == {"id": None, "refusal": "the call line is longer than 1048576 bytes"}
    assert res[6] == ""  # the oversized connection is closed after its refusal
    # The budget of 30 was spent by the flood; the last call is refused, not lost.
    assert res[7]["id"] == "after"
    assert res[7] == {"id": "after", "value": 42} or "budget" in res[7]["refusal"]
    assert rec["status"] == "exited" and rec["exit_code"] == 0


def test_static_program_calls_through_maf_launch_call(run_dir):
    rec, out, r = run_served(run_dir, [probe("chan_call"), str(LAUNCHER),
                                       "add", '{"a": 20, "b": 22}', "refuse", "{}"])
    assert out.splitlines() == ["add rc=0 value=42",
                                "maf-launch call: refused: no tool named refuse",
                                "refuse rc=1 value="]
    assert rec["calls"] == 2


def test_launcher_stays_small(launcher):
    if not launcher_is_static():
        pytest.skip("the sanitizer build is not the one shipped; make test checks the size")
    # The ceiling for the stripped static launcher.
    assert os.path.getsize(launcher) <= 200 * 1024


# The second way in: R/host_tools/channel.sock (MAF_HOST_TOOLS_SOCKET), for the run's
# processes that do not hold the inherited descriptor.

def test_a_child_without_the_descriptor_calls_through_the_socket(run_dir):
    # Python's subprocess closes every descriptor it was not told of (close_fds=True, its
    # default), the channel's among them; and a caller may drop the variable itself.
    ml = str(LAUNCHER)
    rec, out, r = run_served(run_dir, py(
        'import subprocess\n'
        f'ml = {ml!r}\n'
        'a = subprocess.run([ml, "call", "add", \'{"a": 1, "b": 2}\'], close_fds=True,'
        ' capture_output=True)\n'
        'env = {k: v for k, v in os.environ.items() if k != "MAF_HOST_TOOLS_FD"}\n'
        'b = subprocess.run([ml, "call", "add", \'{"a": 3, "b": 4}\'], env=env,'
        ' capture_output=True)\n'
        'print(json.dumps([os.environ["MAF_HOST_TOOLS_SOCKET"], a.returncode, a.stdout.decode(),'
        ' a.stderr.decode(), b.returncode, b.stdout.decode(), b.stderr.decode()]))\n'))
    path, arc, aout, aerr, brc, bout, berr = json.loads(out)
    assert path == str(run_dir / HOST_TOOLS / "channel.sock")
    assert (arc, aout, aerr) == (0, "3\n", "")
    assert (brc, bout, berr) == (0, "7\n", "")
    assert rec["calls"] == 2
    # The socket goes with the run.
    assert not (run_dir / HOST_TOOLS / "channel.sock").exists()


def test_a_daemon_of_the_run_calls_through_the_socket(run_dir):
    # Double-forked: its parent has exited, so the supervisor (the run's child subreaper) is
    # its parent now, and it is still one of the run's processes.
    ml = str(LAUNCHER)
    rec, out, r = run_served(run_dir, py(
        'import subprocess, time\n'
        'rd, wr = os.pipe()\n'
        'if os.fork() == 0:\n'
        '    middle = os.getpid()\n'
        '    if os.fork() == 0:\n'
        '        os.close(rd)\n'
        '        while os.getppid() == middle: time.sleep(0.01)\n'
        f'        p = subprocess.run([{ml!r}, "call", "add", \'{{"a": 5, "b": 6}}\'],'
        ' capture_output=True)\n'
        '        os.write(wr, json.dumps([os.getppid(), p.returncode, p.stdout.decode(),'
        ' p.stderr.decode()]).encode())\n'
        '        os._exit(0)\n'
        '    os._exit(0)\n'
        'os.close(wr)\n'
        'os.wait()\n'
        'print(os.read(rd, 4096).decode())\n'))
    ppid, rc, value, err = json.loads(out)
    assert (rc, value, err) == (0, "11\n", "")
    assert ppid == r.launch["supervisor_pid"]
    assert rec["calls"] == 1


def test_the_socket_refuses_outsiders(run_dir):
    import socket
    import stat

    responder = Responder(run_dir)
    go = run_dir / HOST_TOOLS / "go"
    proc = launch(run_dir, *py(
        'import time\n'
        f'while not os.path.exists({str(go)!r}): time.sleep(0.01)\n'
        'print(json.dumps(call("add", a=20, b=22)))\n'), opts=["--timeout", "60"])
    assert proc.returncode == 0, proc.stderr
    responder.start()
    try:
        path = run_dir / HOST_TOOLS / "channel.sock"
        st = os.lstat(path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660
        for _ in range(3):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(str(path))
            try:
                s.sendall(b'{"id": 1, "name": "add", "arguments": {"a": 1, "b": 1}}\n')
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                got = s.recv(4096)
            except ConnectionResetError:
                got = b""
            assert got == b""  # closed, no answer
            s.close()
        go.touch()
        wait_exit(run_dir)
    finally:
        go.touch()  # the program waits for it, whatever happened here
        responder.stop.set()
        responder.join(5)
    out = (run_dir / HOST_TOOLS / "program_output.txt").read_text()
    assert json.loads(out) == {"id": 1, "value": 42}
    # The outsider's calls never became requests.
    assert [name for _, name in responder.served] == ["add"]
    assert exit_record(run_dir)["calls"] == 1


def test_socket_of_an_enclosing_run_and_a_stale_name_are_replaced(run_dir, tmp_path):
    # A variable inherited from an enclosing run is not this run's; a name an earlier run
    # left at R/host_tools/channel.sock (here a symlink to a file outside) is removed, never
    # followed.
    outside = tmp_path / "outside"
    outside.write_text("keep")
    ht = run_dir / HOST_TOOLS
    ht.mkdir()
    os.symlink(outside, ht / "channel.sock")
    env = dict(os.environ, MAF_HOST_TOOLS_SOCKET="/nonexistent/channel.sock")
    ml = str(LAUNCHER)
    r = Responder(run_dir)
    proc = launch(run_dir, *py(
        'import subprocess\n'
        f'p = subprocess.run([{ml!r}, "call", "add", \'{{"a": 1, "b": 1}}\'],'
        ' capture_output=True)\n'
        'print(json.dumps([os.environ["MAF_HOST_TOOLS_SOCKET"], p.stdout.decode()]))\n'),
        env=env)
    assert proc.returncode == 0, proc.stderr
    r.start()
    wait_exit(run_dir)
    r.stop.set()
    r.join(5)
    out = json.loads((ht / "program_output.txt").read_text())
    assert out == [str(ht / "channel.sock"), "2\n"]
    assert outside.read_text() == "keep" and not (ht / "channel.sock").exists()


def test_socket_path_longer_than_a_socket_address(tmp_path):
    # R may be up to 1024 bytes; a socket address holds 107. The supervisor binds through
    # R/host_tools and the client connects through its directory.
    run_dir = tmp_path / ("d" * 100) / ("e" * 100) / "run"
    run_dir.mkdir(parents=True)
    ml = str(LAUNCHER)
    rec, out, r = run_served(run_dir, py(
        'import subprocess\n'
        f'p = subprocess.run([{ml!r}, "call", "add", \'{{"a": 2, "b": 2}}\'],'
        ' capture_output=True)\n'
        'print(json.dumps([len(os.environ["MAF_HOST_TOOLS_SOCKET"]), p.returncode,'
        ' p.stdout.decode(), p.stderr.decode()]))\n'))
    n, rc, value, err = json.loads(out)
    assert n > 200 and (rc, value, err) == (0, "4\n", "")


def test_call_with_neither_way_in_names_both(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAF_HOST_TOOLS")}
    env["MAF_HOST_TOOLS_SOCKET"] = str(tmp_path / "absent.sock")
    p = subprocess.run([str(LAUNCHER), "call", "add", "{}"], capture_output=True, env=env)
    assert p.returncode == 125
    assert b"MAF_HOST_TOOLS_FD is not set" in p.stderr
    assert b"cannot connect to MAF_HOST_TOOLS_SOCKET" in p.stderr
    del env["MAF_HOST_TOOLS_SOCKET"]
    env["MAF_HOST_TOOLS_FD"] = "0"
    p = subprocess.run([str(LAUNCHER), "call", "add", "{}"], capture_output=True, env=env,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 125
    assert b"MAF_HOST_TOOLS_SOCKET is not set" in p.stderr


def test_a_name_the_socket_cannot_take_leaves_the_inherited_channel(run_dir):
    # What an earlier run's program may leave at the name and the supervisor will not
    # remove (a directory with something in it): the run goes on, the inherited
    # descriptor serves, and a caller without it is told why the socket did not.
    ht = run_dir / HOST_TOOLS
    (ht / "channel.sock" / "x").mkdir(parents=True)
    ml = str(LAUNCHER)
    rec, out, r = run_served(run_dir, py(
        'import subprocess\n'
        f'p = subprocess.run([{ml!r}, "call", "add", \'{{"a": 1, "b": 1}}\'],'
        ' capture_output=True)\n'
        'print(json.dumps([call("add", a=2, b=3), p.returncode, p.stderr.decode()]))\n'))
    inherited, rc, err = json.loads(out)
    assert inherited == {"id": 1, "value": 5}
    assert rc == 125 and "cannot connect to MAF_HOST_TOOLS_SOCKET" in err, err
    assert (ht / "channel.sock" / "x").is_dir()



# Raw calls: {"id": ID, "request": TEXT} published as TEXT's bytes, answered with
# {"id": ID, "response": FILE}, the response file's bytes.

class RawHost(threading.Thread):
    """Plays the host for raw calls: serves R/host_tools/host_tool_calls in id order until
    the exit marker appears, keeping each request's bytes (requests[N]) and handing them to
    respond(n, data, path), which writes the response at path however it likes. An
    exception in it is kept in errors and ends the serving."""

    def __init__(self, run_dir, respond):
        super().__init__(daemon=True)
        self.ht = Path(run_dir) / HOST_TOOLS
        self.calls = self.ht / CALLS
        self.respond = respond
        self.requests = {}
        self.errors = []
        self.stop = threading.Event()

    def run(self):
        n = 1
        try:
            while not self.stop.is_set():
                req = self.calls / f"{n:04d}.request.json"
                if req.exists():
                    data = req.read_bytes()
                    self.requests[n] = data
                    self.respond(n, data, self.calls / f"{n:04d}.response.json")
                    n += 1
                    continue
                if (self.ht / "program_exit_code").exists():
                    return
                time.sleep(0.002)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(e))


def publish_bytes(path, data):
    """Writes data as path whole: a temporary name and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.rename(tmp, path)


# The program's side: the call lines, sent at once on one connection (ascii=False puts the
# line's non-ASCII as UTF-8 rather than \u escapes); the answer lines as text, in the order
# they came.
RAW_CLIENT = r"""
def lines(*calls, ascii=True):
    s = connect()
    s.sendall(b"".join(json.dumps(c, ensure_ascii=ascii).encode() + b"\n" for c in calls))
    f = s.makefile("rb")
    out = [f.readline().decode() for _ in calls]
    s.close()
    return out
"""


def raw_py(code):
    return py(RAW_CLIENT + code)


def by_id(answer_lines):
    """The answer lines, parsed, by id; each line is one JSON object and ends the line."""
    out = {}
    for line in answer_lines:
        assert line.endswith("\n") and line.count("\n") == 1, line
        a = json.loads(line)
        assert a["id"] not in out, line
        out[a["id"]] = a
    return out


# What re-encoding would change: non-ASCII, an integer no double holds, the non-JSON
# numbers Python's json writes, key order (the id after the name), spacing and a newline.
RAW_TEXT = ('{ "name" :"d\u00e9j\u00e0 vu \u65e5\u672c",\t"id":"0001" ,\n  "arguments": '
            '{"n": 123456789012345678901234567890123456789, "x": Infinity, "y": -Infinity,'
            ' "z": NaN, "e": 1E+400, "s": "\\u00e9\\n\\"\\\\"} }  ')
# A host's answers: any JSON value, byte for byte, escapes and all.
RAW_RESPONSES = [
    ('{"value" : {"big": 340282366920938463463374607431768211457, "text": "d\u00e9j\u00e0 '
     '\\u65e5 \u65e5\u672c \\"q\\" \\\\ \\n\u2028", "neg": -0.0,\t"arr": [ 1,2 , 3 ]},'
     '  "extra": null}\n').encode(),
    b"123456789012345678901234567890",
    '"\U0001F600 only a string"'.encode(),
]


def test_raw_call_is_published_and_answered_byte_for_byte(run_dir):
    def respond(n, data, path):
        publish_bytes(path, RAW_RESPONSES[n - 1])

    host = RawHost(run_dir, respond)
    rec, out, _ = run_served(run_dir, raw_py(
        f'text = {ascii(RAW_TEXT)}\n'
        'a = lines({"id": "raw-1", "request": text}, {"id": 2, "request": text})\n'
        'b = lines({"id": "raw-3", "request": text}, ascii=False)\n'
        'print(json.dumps(a + b))\n'), responder=host)
    assert host.errors == []
    # Published as written, whether the line carried TEXT escaped or as UTF-8.
    assert host.requests == {n: RAW_TEXT.encode() for n in (1, 2, 3)}
    got = json.loads(out)
    assert len(got) == 3
    answers = by_id(got)
    for cid, want in (("raw-1", RAW_RESPONSES[0]), (2, RAW_RESPONSES[1]),
                      ("raw-3", RAW_RESPONSES[2])):
        assert set(answers[cid]) == {"id", "response"}
        assert answers[cid]["response"].encode() == want
    # The whole line: no spaces, the bytes as UTF-8 in the string, only what JSON must
    # escape escaped.
    line = next(x for x in got if json.loads(x)["id"] == "raw-1")
    assert line == '{"id":"raw-1","response":' + json.dumps(
        RAW_RESPONSES[0].decode(), ensure_ascii=False) + "}\n"
    assert rec["calls"] == 3 and "undelivered" not in rec


def test_raw_call_carries_a_name_the_tool_form_refuses(run_dir):
    # Not printable ASCII, or with a space: the tool form is refused without a round trip,
    # and so is a tool outside --tool; raw, the host judges them, and they are published.
    def respond(n, data, path):
        req = json.loads(data)
        publish_bytes(path, json.dumps({"value": "served " + req["name"]},
                                       ensure_ascii=False).encode())

    host = RawHost(run_dir, respond)
    rec, out, _ = run_served(run_dir, raw_py(
        'print(json.dumps(lines(\n'
        '    {"id": 1, "name": "d\\u00e9j\\u00e0 vu"},\n'
        '    {"id": 2, "name": "two words"},\n'
        '    {"id": 3, "name": "other"},\n'
        '    {"id": 4, "request": json.dumps({"id": "0001", "name": "d\\u00e9j\\u00e0 vu"},'
        ' ensure_ascii=False)},\n'
        '    {"id": 5, "request": json.dumps({"id": "0002", "name": "two words",'
        ' "arguments": {}})},\n'
        '    {"id": 6, "request": json.dumps({"id": "0003", "name": "other"})})))\n'),
        opts=["--tool", "add"], responder=host)
    assert host.errors == []
    answers = by_id(json.loads(out))
    assert answers[1] == {"id": 1, "refusal": "the call has no valid tool \"name\""}
    assert answers[2] == {"id": 2, "refusal": "the call has no valid tool \"name\""}
    assert answers[3] == {"id": 3, "refusal": "unknown tool 'other'"}
    assert json.loads(answers[4]["response"]) == {"value": "served d\u00e9j\u00e0 vu"}
    assert json.loads(answers[5]["response"]) == {"value": "served two words"}
    assert json.loads(answers[6]["response"]) == {"value": "served other"}
    assert [json.loads(d)["name"] for _, d in sorted(host.requests.items())] == [
        "d\u00e9j\u00e0 vu", "two words", "other"]
    assert host.requests[1] == '{"id": "0001", "name": "d\u00e9j\u00e0 vu"}'.encode()
    assert rec["calls"] == 6


def test_raw_response_that_is_not_json_yet_is_left_until_it_is(run_dir):
    # Written in place in pieces (as a backend's write_file may land), each closed before
    # the next: first a piece that is not JSON and ends inside a UTF-8 sequence, then more
    # that is still not JSON, then the rest.
    whole = '{"value": "d\u00e9j\u00e0", "n": [1, 2, 3]}'.encode()
    cuts = [whole.index(b"\xc3") + 1, whole.index(b"]") - 2]
    last_piece_at = {}

    def respond(n, data, path):
        pieces = [whole[:cuts[0]], whole[cuts[0]:cuts[1]], whole[cuts[1]:]]
        with open(path, "wb") as f:
            f.write(pieces[0])
        for piece in pieces[1:]:
            time.sleep(0.3)
            last_piece_at[n] = time.monotonic()
            with open(path, "ab") as f:
                f.write(piece)

    host = RawHost(run_dir, respond)
    rec, out, _ = run_served(run_dir, raw_py(
        'import time\n'
        'a = lines({"id": "slow", "request": "{}"})\n'
        'print(json.dumps([a, time.monotonic()]))\n'), responder=host)
    assert host.errors == []
    (line,), answered_at = json.loads(out)
    assert json.loads(line) == {"id": "slow", "response": whole.decode()}
    assert answered_at >= last_piece_at[1], "answered before the response was whole"
    assert host.requests[1] == b"{}"


def test_raw_response_not_utf8_or_too_large_is_refused(run_dir):
    bad = {
        "ff": b'{"value": "\xff"}',
        "cut": b'"d\xc3"',
        "surrogate": b'"\xed\xa0\x80"',
        "overlong": b'"\xc0\xaf"',
    }
    order = ["ff", "cut", "surrogate", "overlong", "large", "good"]

    def respond(n, data, path):
        name = order[n - 1]
        if name == "large":
            publish_bytes(path, b'"' + b"x" * (9 << 20) + b'"')
        elif name == "good":
            publish_bytes(path, b'{"value": "fine"}')
        else:
            publish_bytes(path, bad[name])

    host = RawHost(run_dir, respond)
    rec, out, _ = run_served(run_dir, raw_py(
        f'order = {order!r}\n'
        'print(json.dumps(lines(*[{"id": k, "request": k} for k in order])))\n'),
        responder=host)
    assert host.errors == []
    answers = by_id(json.loads(out))
    for name in bad:
        assert answers[name] == {"id": name, "refusal": "the host's response is not UTF-8"}
    assert answers["large"] == {"id": "large",
                                "refusal": "the host's response is larger than 9437184 bytes"}
    assert answers["good"] == {"id": "good", "response": '{"value": "fine"}'}
    assert host.requests == {n: k.encode() for n, k in enumerate(order, 1)}
    assert rec["calls"] == 6 and "undelivered" not in rec


def test_raw_and_tool_calls_mixed_on_one_connection(run_dir):
    # Pipelined on one connection, in one write: tool calls answered with a value, raw ones
    # with the response's bytes, refusals of either kind without a round trip; the claims
    # and the budget are shared.
    def respond(n, data, path):
        if data == b"":
            publish_bytes(path, b' {"empty": true} ')
            return
        req = json.loads(data)
        if req.get("name") == "add":
            args = req["arguments"]
            publish_bytes(path, json.dumps({"value": args["a"] + args["b"]}).encode())
        else:
            publish_bytes(path, json.dumps({"raw": req}).encode())

    host = RawHost(run_dir, respond)
    rec, out, _ = run_served(run_dir, raw_py(
        'print(json.dumps(lines(\n'
        '    {"id": 1, "name": "add", "arguments": {"a": 1, "b": 2}},\n'
        '    {"id": 2, "request": \'{"id": "0002", "name": "raw one"}\'},\n'
        '    {"id": 3, "name": "a/b"},\n'
        '    {"id": 4, "request": ""},\n'
        '    {"id": 5, "request": {"name": "add"}},\n'
        '    {"id": 6, "name": "add", "request": \'{"k": 1}\'},\n'
        '    {"id": 7, "name": "add", "arguments": {"a": 20, "b": 22}},\n'
        '    {"id": 8, "request": "{}"})))\n'), opts=["--max-calls", "5"], responder=host)
    assert host.errors == []
    answers = by_id(json.loads(out))
    assert answers[1] == {"id": 1, "value": 3}
    assert answers[2] == {"id": 2, "response": '{"raw": {"id": "0002", "name": "raw one"}}'}
    assert answers[3] == {"id": 3, "refusal": "the call has no valid tool \"name\""}
    assert answers[4] == {"id": 4, "response": ' {"empty": true} '}
    assert answers[5] == {"id": 5, "refusal": "the call's \"request\" is not a JSON string"}
    # With "request", the call is raw whatever else it holds.
    assert answers[6] == {"id": 6, "response": '{"raw": {"k": 1}}'}
    assert answers[7] == {"id": 7, "value": 42}
    assert "budget of 5 host-tool calls is spent" in answers[8]["refusal"]
    assert set(answers[8]) == {"id", "refusal"}
    assert json.loads(host.requests[1]) == {"id": "0001", "name": "add",
                                            "arguments": {"a": 1, "b": 2}}
    assert host.requests[2] == b'{"id": "0002", "name": "raw one"}'
    assert host.requests[3] == b""
    assert host.requests[4] == b'{"k": 1}'
    assert json.loads(host.requests[5])["id"] == "0005"
    assert sorted(host.requests) == [1, 2, 3, 4, 5]
    assert rec["calls"] == 8
