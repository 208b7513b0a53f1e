"""`maf-launch serve` driven over pipes, as a host drives it, against a real run: frames on its
stdin, events on its stdout. With --ack, the line that accepts an answer comes the moment the
answer is in place, while the program has not made its next call (it waits for a file the
test makes only once it has that line); without --ack, serve prints nothing until the next
event, and its output is the same, byte for byte, as with --ack less its accepted lines."""
import json
import select
import subprocess
import time

from conftest import HOST_TOOLS, LAUNCHER, launch, wait_exit

CALLS = "host_tool_calls"
# Two calls, with a pause between them that only the test ends: the second call can come
# only after R/work/go exists.
PROGRAM = (f'{LAUNCHER} call add \'{{"a": 1}}\'; '
           'while [ ! -e go ]; do sleep 0.01; done; '
           f'{LAUNCHER} call add \'{{"a": 2}}\'')


class Serve:
    """A `maf-launch serve` process, its output read as it comes."""

    def __init__(self, run_dir, *opts):
        self.proc = subprocess.Popen([str(LAUNCHER), "serve", "--run-dir", str(run_dir),
                                      *opts], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.buf = b""
        self.out = b""           # everything serve printed

    def send(self, frame):
        self.proc.stdin.write(frame)
        self.proc.stdin.flush()

    def answer(self, n, response):
        self.send(json.dumps({"answer": n, "size": len(response)}).encode() + b"\n" +
                  response)

    def _fill(self, timeout):
        """Reads what serve printed within timeout seconds; False if nothing came."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return False
        data = self.proc.stdout.raw.read(65536)
        assert data, ("serve ended", self.proc.stderr.read())
        self.buf += data
        self.out += data
        return True

    def event(self, timeout=30.0):
        """The next event: its head, and the bytes it says follow."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            assert self._fill(deadline - time.monotonic()), "no event in time"
        line, _, self.buf = self.buf.partition(b"\n")
        head = json.loads(line)
        size = head.get("size", 0) if head.get("event") in ("request", "exit") else 0
        while len(self.buf) < size:
            assert self._fill(deadline - time.monotonic()), "no body in time"
        body, self.buf = self.buf[:size], self.buf[size:]
        return head, body

    def quiet_for(self, seconds):
        """True if serve printed nothing for that long."""
        return not self.buf and not self._fill(seconds)

    def end(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0, self.proc.stderr.read()
        assert self.proc.stdout.read() == b""


def served_run(run_dir, *opts):
    """Runs PROGRAM and serves its two calls through `maf-launch serve OPTS`; returns
    everything serve printed and the program's output."""
    proc = launch(run_dir, "sh", "-c", PROGRAM)
    assert proc.returncode == 0, proc.stderr
    calls = run_dir / HOST_TOOLS / CALLS
    s = Serve(run_dir, *opts)
    s.send(b'{"next":1}\n')
    head, body = s.event()
    assert head == {"event": "request", "id": 1, "size": len(body)}
    assert json.loads(body)["arguments"] == {"a": 1}
    s.answer(1, b'{"value": 2}')
    if "--ack" in opts:
        # At once, while the program waits for go and cannot have made its next call.
        assert s.event() == ({"event": "accepted", "id": 1}, b"")
        assert not (calls / "0002.request.json").exists()
        assert not (run_dir / "work" / "go").exists()
    else:
        # Nothing until the next event: the answer is there all the same.
        assert s.quiet_for(0.3)
    deadline = time.monotonic() + 30
    while (run_dir / HOST_TOOLS / "program_output.txt").read_text() != "2\n":
        assert time.monotonic() < deadline, "the program did not get its answer"
        time.sleep(0.01)
    (run_dir / "work" / "go").write_text("")
    head, body = s.event()
    assert head == {"event": "request", "id": 2, "size": len(body)}
    assert json.loads(body)["arguments"] == {"a": 2}
    s.answer(2, b'{"value": 3}')
    if "--ack" in opts:
        assert s.event() == ({"event": "accepted", "id": 2}, b"")
    wait_exit(run_dir)
    assert s.event() == ({"event": "exit", "size": 1}, b"0")
    s.end()
    return s.out, (run_dir / HOST_TOOLS / "program_output.txt").read_text()


def test_serve_ack_accepts_each_answer_before_the_next_call(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "ack").mkdir()
    plain, plain_output = served_run(tmp_path / "plain")
    acked, acked_output = served_run(tmp_path / "ack", "--ack")
    assert plain_output == acked_output == "2\n3\n"
    lines = [b'{"event":"accepted","id":1}\n', b'{"event":"accepted","id":2}\n']
    assert all(acked.count(line) == 1 for line in lines), acked
    # Without --ack, not a byte more or less than with it, but for its accepted lines.
    assert b"accepted" not in plain
    assert acked.replace(lines[0], b"").replace(lines[1], b"") == plain


def test_serve_ack_prints_nothing_for_an_answer_it_cannot_write(tmp_path):
    # A response name that is a directory: the rename fails, serve exits 125, and no line
    # says the answer is in place.
    run_dir = tmp_path / "run"
    (run_dir / HOST_TOOLS / CALLS / "0001.response.json").mkdir(parents=True)
    (run_dir / HOST_TOOLS / CALLS / "0001.response.json" / "x").write_text("")
    s = Serve(run_dir, "--ack")
    s.answer(1, b'{"value": 2}')
    s.proc.stdin.close()
    assert s.proc.wait(timeout=30) == 125
    assert s.proc.stdout.read() == b""
    assert b"cannot put the answer in place" in s.proc.stderr.read()
