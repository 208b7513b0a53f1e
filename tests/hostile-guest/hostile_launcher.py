#!/usr/bin/python3
"""A hostile maf-launch: the launcher inside the sandbox replaced by a program that speaks
garbage to the host. It is installed as DIR/maf-launch with DIR/hostile.json beside it:
{"attack": ATTACK, "command": COMMAND, "real": PATH, "lifetime": SECONDS}. For COMMAND
(run, serve, relay, wait, stop or reclaim) it misbehaves as ATTACK says; every other command
execs the real launcher at PATH with the same arguments. A stop asked to reclaim too
(`--reclaim`) is, for reclaim's attacks, the real stop without it and then the attack. Standard library only, no shell:
it runs on this machine and in maf-launch/python-noshell alike.

Attacks:
  flood        endless stdout and stderr, never a newline that ends anything
  flood-line   serve: one endless line, no newline
  flood-frame  serve: an event announcing a 1 GB request, then endless bytes
  hang         says nothing, never returns, ignores SIGTERM
  fork         double-forks a setsid'd child that keeps stdout open and keeps writing;
               the command itself returns at once
  forge-exit   an exit event saying the program exited 0 (at once when the program is
               still running; once the real exit marker is there when it exited)
  forge-*      request events of its own (FORGERIES below), by the id the host asks for;
               once a sequence is spent, the real launcher takes over
  ack-*        serve: the real serve, with what it says of an answer (its accepted line)
               lied about: withheld, for another call, twice, for a frame with no answer,
               never (the answer taken and dropped), before the answer was read (ACKS below);
               relay (ack-never): a relay that carries an answer reads it, drops it and never
               returns, the others are the real relay

Every process it leaves records its pid in DIR/pids and dies by SIGALRM after `lifetime`
seconds at the latest; `DIR/maf-launch __reap__` kills them (a process whose command line
does not name DIR is left alone) and prints DIR/trace, a line for each thing it did.

The module is also imported by the tests, which read FORGERIES to know which requests were
sent whole and well formed (GOOD tags) and which were not (BAD tags)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(sys.argv[0] if __name__ == "__main__" else __file__))


# ---- the forged requests -----------------------------------------------------------------
#
# A scenario maps the id N the host asks for to what the hostile command prints for it: a
# list of steps, each bytes (written), a float (a pause, in seconds) or "eof" (stdout closed,
# the command ends), or None once the scenario is spent. Requests carry a tag: "good-..."
# for a request sent as a complete, well-formed frame (the event line right, its size
# exact, the body strict UTF-8 JSON, one object, its id N, no key twice): the host may run
# the tool with exactly its arguments; "bad-..." for anything else: no tool may ever see it.

def header(n, size, event="request"):
    return json.dumps({"event": event, "id": n, "size": size}).encode() + b"\n"


def body(n, args, *, name="rec", ensure_ascii=False):
    return json.dumps({"id": f"{n:04d}", "name": name, "arguments": args},
                      ensure_ascii=ensure_ascii).encode()


def frame(n, data):
    return header(n, len(data)) + data


def raw(n, text):
    """A body written by hand, NNNN standing for the id."""
    return text.replace(b"NNNN", f"{n:04d}".encode())


GOOD_ARGS = {
    "good-1": {"tag": "good-1", "n": 1},
    "good-2": {"tag": "good-2-\u00e9\u2713", "nested": {"a": [1, 2, {"b": None}]}},
    "good-3": {"tag": "good-3-escaped-\u00e9\U0001f600", "x": -0.5},
    "good-between": {"tag": "good-between", "n": 7},
}


def _refuse(n, command):
    """Requests a host refuses one after another, well-formed ones among them, then a
    line that is not an event (for relay and wait it ends the run; the stream breaks, and
    the run goes on with the real relay)."""
    seq = [
        # truncated JSON, its size exact
        lambda n: frame(n, body(n, {"tag": "bad-truncjson"})[:-5]),
        # invalid UTF-8: a stray byte, an overlong '/', an encoded surrogate
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-utf8-\xff\xfe"}}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-overlong-\xc0\xaf"}}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-surrogate-\xed\xa0\x80"}}')),
        # a lone surrogate as an escape, and an escaped NUL
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-escsurrogate-\\ud800"}}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-nul-\\u0000-tail"}}')),
        # JSON that is not an object
        lambda n: frame(n, b"[" + body(n, {"tag": "bad-array"}) + b"]"),
        lambda n: frame(n, json.dumps("bad-string").encode()),
        lambda n: frame(n, b"42"),
        # the body's id is another call's
        lambda n: frame(n, body(n + 1, {"tag": "bad-idmismatch"})),
        # arguments that are not an object; a name that is no name
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":["bad-argslist"]}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":5,"arguments":{"tag":"bad-name"}}')),
        # well formed: a tool call the program never made (the guest may call tools)
        lambda n: frame(n, body(n, GOOD_ARGS["good-1"])),
        lambda n: frame(n, body(n, GOOD_ARGS["good-2"])),
        lambda n: frame(n, body(n, GOOD_ARGS["good-3"], ensure_ascii=True)),
        # not an event at all
        lambda n: b"\x00\xff this is not an event {\"tag\":\"bad-garbage\"}\n",
    ]
    return [seq[n - 1](n)] if n <= len(seq) else None


def _dupkeys(n, command):
    """JSON with a key twice, which readers take differently (the first, the last, both):
    the arguments, a name in the arguments, the tool's name; then a well-formed request."""
    seq = [
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":{"tag":"bad-dupargs-a"},'
                                  b'"arguments":{"tag":"bad-dupargs-b"}}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","arguments":'
                                  b'{"tag":"bad-dupkey-a","tag":"bad-dupkey-b"}}')),
        lambda n: frame(n, raw(n, b'{"id":"NNNN","name":"rec","name":"rec",'
                                  b'"arguments":{"tag":"bad-dupname"}}')),
        lambda n: frame(n, body(n, GOOD_ARGS["good-1"])),
    ]
    return [seq[n - 1](n)] if n <= len(seq) else None


def _splice(n, command):
    """A size that lies, larger: the frame takes in the next frame's event line and half
    its body, bytes of two requests spliced into one; then a size that lies, smaller."""
    if n == 1:
        a = body(1, {"tag": "bad-splice-a"})
        b = header(2, 0) + body(2, {"tag": "bad-splice-b"})
        whole = a + b
        cut = len(a) + len(b) // 2
        steps = [header(1, cut) + whole[:cut]]
        if command == "serve":
            steps += [0.2, whole[cut:]]
        return steps
    if n == 2:
        data = body(2, {"tag": "bad-shortsize"})
        return [header(2, len(data) - 10) + data]
    return None


def _wrong_id(n, command):
    """An event for a call the host did not ask for, its body matching it."""
    if n == 1:
        return [frame(7, body(7, {"tag": "bad-wrongid"}))]
    return None


def _truncated(n, command):
    """A frame cut in the middle of its body, then the end of the output."""
    if n == 1:
        data = body(1, {"tag": "bad-truncated", "pad": "x" * 200})
        return [header(1, len(data)) + data[:len(data) // 2], "eof"]
    return None


def _between(n, command):
    """Garbage between frames: on the stream, a whole frame, then bytes nobody asked for;
    relay and wait print an event once, so there the garbage follows the body in the same
    output (the frame is then not whole)."""
    if n == 1:
        if command == "serve":
            return [frame(1, body(1, GOOD_ARGS["good-between"])), 0.3,
                    b'\xff\xfejunk between frames {"tag":"bad-between"}\n']
        return [frame(1, body(1, {"tag": "bad-trailing"})) +
                b'\xff\xfejunk after the body {"tag":"bad-trailing-junk"}\n']
    return None


FORGERIES = {
    "forge-refuse": _refuse,
    "forge-dupkeys": _dupkeys,
    "forge-splice": _splice,
    "forge-wrong-id": _wrong_id,
    "forge-truncated": _truncated,
    "forge-between": _between,
}


def good_args(attack, command):
    """{tag: arguments} of the well-formed requests the scenario sends on command."""
    out = {}
    for n in range(1, 100):
        steps = FORGERIES[attack](n, command)
        if steps is None:
            break
        for s in steps:
            if not isinstance(s, bytes) or not s.startswith(b'{"event"'):
                continue
            line, _, rest = s.partition(b"\n")
            head = json.loads(line)
            try:
                req = json.loads(rest.decode("utf-8"),
                                 object_pairs_hook=no_duplicates)
            except ValueError:
                continue
            if (head["size"] == len(rest) and head["id"] == n and isinstance(req, dict)
                    and req.get("id") == f"{n:04d}" and req.get("name") == "rec"
                    and isinstance(req.get("arguments"), dict)
                    and str(req["arguments"].get("tag", "")).startswith("good-")):
                out[req["arguments"]["tag"]] = req["arguments"]
    return out


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a key twice")
    return dict(pairs)


# ---- the command ---------------------------------------------------------------------------

def _conf():
    with open(os.path.join(HERE, "hostile.json")) as f:
        return json.load(f)


def _trace(what):
    try:
        with open(os.path.join(HERE, "trace"), "a") as f:
            f.write(f"{time.time():.3f} {os.getpid()} {what}\n")
    except OSError:
        pass


def _mark(lifetime):
    """This process is one of ours: its pid recorded, SIGALRM ends it at the latest."""
    with open(os.path.join(HERE, "pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    signal.alarm(int(lifetime))


def _deaf():
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)


def _write(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _opt(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


class _Frames:
    """serve's stdin: the host's frames, {"next":N} or {"answer":I,"size":L} + L bytes. With
    ack (serve --ack), each answer taken is accepted at once, as the real serve does once it
    has written it (here it is not written: the program makes no call of its own)."""

    def __init__(self, ack=False):
        self.buf = b""
        self.ack = ack

    def _fill(self):
        d = os.read(0, 65536)
        if not d:
            raise EOFError
        self.buf += d

    def next_id(self):
        while b"\n" not in self.buf:
            self._fill()
        line, _, self.buf = self.buf.partition(b"\n")
        head = json.loads(line)
        if "answer" in head:
            while len(self.buf) < head["size"]:
                self._fill()
            self.buf = self.buf[head["size"]:]
            if self.ack:
                _write(1, b'{"event":"accepted","id":%d}\n' % head["answer"])
            return head["answer"] + 1
        return head["next"]


def _flood_both(chunk):
    def pump(fd):
        try:
            while True:
                _write(fd, chunk)
        except OSError:
            while True:
                time.sleep(3600)
    threading.Thread(target=pump, args=(2,), daemon=True).start()
    pump(1)


def _fork_writer(lifetime):
    """The command returns at once; a setsid'd grandchild keeps its stdout and writes."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            _deaf()
            _mark(lifetime)
            _trace("fork: grandchild writing")
            line = b"still writing " + b"." * 1000 + b"\n"
            while True:
                try:
                    _write(1, line)
                except OSError:
                    pass
                time.sleep(0.01)
        os._exit(0)
    os.wait()
    _trace("fork: returning")
    os._exit(0)


def _wait_file(path, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not os.path.exists(path):
        time.sleep(0.02)
    return os.path.exists(path)


def _forge_exit(argv, command):
    """An exit event saying 0: at once for a program still running (its pid in place first),
    once the real exit marker is there for one that has ended."""
    ht = os.path.join(_opt(argv, "--run-dir"), "host_tools")
    if not _wait_file(os.path.join(ht, "program_exit_code"), 3.0):
        _wait_file(os.path.join(ht, "program_pid"), 5.0)
    event = b'{"event":"exit","size":1}\n0'
    _trace("forge-exit: exit 0")
    if command != "serve":
        if "--value-stdin" in argv:
            sys.stdin.buffer.read()
        _write(1, event)
        return 0
    frames = _Frames("--ack" in argv)
    try:
        while True:
            frames.next_id()
            _write(1, event)
    except (EOFError, OSError):
        return 0


def _steps(steps):
    """Performs a scenario's steps; False once stdout is closed."""
    for s in steps:
        if s == "eof":
            os.close(1)
            return False
        if isinstance(s, float):
            time.sleep(s)
        else:
            _write(1, s)
    return True


def _forge_serve(argv, real, scenario):
    frames = _Frames("--ack" in argv)
    try:
        while True:
            n = frames.next_id()
            steps = scenario(n, "serve")
            if steps is None:
                break
            _trace(f"serve: forged frame for {n}")
            if not _steps(steps):
                return 0
    except (EOFError, OSError):
        return 0
    # Spent: the real serve from here on, given the frame it would have had.
    _trace(f"serve: the real serve from {n}")
    child = subprocess.Popen([real, *argv[1:]], stdin=subprocess.PIPE)
    try:
        child.stdin.write(json.dumps({"next": n}).encode() + b"\n" + frames.buf)
        child.stdin.flush()
        while True:
            d = os.read(0, 65536)
            if not d:
                break
            child.stdin.write(d)
            child.stdin.flush()
        child.stdin.close()
    except OSError:
        pass
    return child.wait()


# ---- serve --ack: what serve says of an answer ----------------------------------------------
#
# The accepted line is serve's word that an answer is whole in place, and the host counts
# the answer as taken at it and at nothing else. These lie about it, over the real serve: the
# host's frames go to it and its events come back, but for what the attack changes.

ACKS = ("ack-withheld", "ack-wrong-id", "ack-twice", "ack-unasked", "ack-never", "ack-early")


class _RawFrames:
    """serve's stdin as the host wrote it: each frame's head line, then its answer's bytes,
    read only when asked for."""

    def __init__(self):
        self.buf = b""

    def _fill(self):
        d = os.read(0, 65536)
        if not d:
            raise EOFError
        self.buf += d

    def head(self):
        while b"\n" not in self.buf:
            self._fill()
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line), line + b"\n"

    def body(self, size):
        while len(self.buf) < size:
            self._fill()
        data, self.buf = self.buf[:size], self.buf[size:]
        return data


def _events(f):
    """The real serve's events from its stdout f: (head, its line and bytes), until it ends."""
    while True:
        line = f.readline()
        if not line.endswith(b"\n"):
            return
        head = json.loads(line)
        size = head.get("size", 0)
        if head.get("event") in ("request", "exit") and size and not head.get("error") \
                and not head.get("oversized"):
            line += f.read(size)
        yield head, line


def _ack_serve(argv, real, attack):
    """The real serve, with its accepted lines lied about:
      ack-withheld  never passed on (the answer is in place; the host is never told)
      ack-wrong-id  passed on naming the call after the one answered
      ack-twice     passed on twice
      ack-unasked   the real ones passed on, and one more after each {"next":N} frame, for
                    call N, which no answer was sent for
      ack-never     an answer frame is read whole, not passed on, and never accepted; nothing
                    more is printed
      ack-early     an answer frame is accepted as soon as its head line is read, before one
                    byte of the answer; nothing more is read or printed"""
    lock = threading.Lock()

    def out(data):
        with lock:
            _write(1, data)

    child = subprocess.Popen([real, *argv[1:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def events():
        try:
            for head, data in _events(child.stdout):
                if head.get("event") != "accepted":
                    out(data)
                elif attack == "ack-withheld":
                    _trace(f"serve: withheld the acceptance of {head['id']}")
                elif attack == "ack-wrong-id":
                    _trace(f"serve: accepted {head['id'] + 1} for {head['id']}")
                    out(b'{"event":"accepted","id":%d}\n' % (head["id"] + 1))
                elif attack == "ack-twice":
                    _trace(f"serve: accepted {head['id']} twice")
                    out(data + data)
                else:
                    out(data)
        except (OSError, ValueError):
            pass
    reader = threading.Thread(target=events, daemon=True)
    reader.start()
    frames = _RawFrames()
    try:
        while True:
            head, line = frames.head()
            if "answer" not in head:
                child.stdin.write(line)
                child.stdin.flush()
                if attack == "ack-unasked":
                    _trace(f"serve: accepted {head['next']}, which was never answered")
                    out(b'{"event":"accepted","id":%d}\n' % head["next"])
                continue
            if attack == "ack-early":
                _trace(f"serve: accepted {head['answer']} before reading it")
                out(b'{"event":"accepted","id":%d}\n' % head["answer"])
                _deaf()
                while True:
                    time.sleep(3600)
            data = frames.body(head["size"])
            if attack == "ack-never":
                _trace(f"serve: took the answer to {head['answer']} ({len(data)} bytes), "
                       "said nothing")
                _deaf()
                while True:
                    time.sleep(3600)
            child.stdin.write(line + data)
            child.stdin.flush()
    except (EOFError, OSError):
        pass
    try:
        child.stdin.close()
    except OSError:
        pass
    code = child.wait()
    reader.join(5)
    return code


def main(argv):
    if len(argv) > 1 and argv[1] == "__reap__":
        return reap(HERE, sys.stdout)
    conf = _conf()
    real, command, attack = conf["real"], conf["command"], conf["attack"]
    cmd = argv[1] if len(argv) > 1 else ""
    scenario = FORGERIES.get(attack)
    if cmd == command and scenario is not None and command in ("relay", "wait"):
        n = int(_opt(argv, "--next") or 0)
        steps = scenario(n, command)
        if steps is None:
            cmd = ""                    # spent: the real launcher
    if cmd == command == "relay" and attack in ACKS and "--answer" not in argv:
        cmd = ""                        # a relay that carries no answer: the real one
    if command == "reclaim" and cmd == "stop" and "--reclaim" in argv:
        # A stop asked to reclaim as well: the real stop without the reclaim, what it says
        # passed on, and then the attack as the reclaim it was asked for.
        plain = [a for i, a in enumerate(argv) if a != "--reclaim" and not
                 (a == "--keep" or (i and argv[i - 1] == "--keep"))]
        said = subprocess.run([real, *plain[1:]], stdout=subprocess.PIPE)
        _write(1, said.stdout)
        if said.returncode:
            return said.returncode
        cmd = command
    if cmd != command:
        os.execv(real, [real, *argv[1:]])
    _mark(conf.get("lifetime", 90))
    _trace(f"{command}: {attack}")
    if attack == "flood":
        _flood_both(b"flood " * 10922)
    elif attack == "flood-line":
        chunk = b"A" * 65536
        while True:
            _write(1, chunk)
    elif attack == "flood-frame":
        _Frames().next_id()
        _write(1, b'{"event":"request","id":1,"size":1000000000}\n')
        chunk = b"B" * 65536
        while True:
            _write(1, chunk)
    elif attack == "hang":
        _deaf()
        while True:
            time.sleep(3600)
    elif attack == "fork":
        _fork_writer(conf.get("lifetime", 90))
    elif attack == "forge-exit":
        return _forge_exit(argv, command)
    elif scenario is not None and command == "serve":
        return _forge_serve(argv, real, scenario)
    elif attack in ACKS and command == "serve":
        return _ack_serve(argv, real, attack)
    elif attack == "ack-never" and command == "relay":
        # The relay that carries an answer: read whole, dropped, and never a return.
        taken = sys.stdin.buffer.read()
        _trace(f"relay: took the answer to {_opt(argv, '--answer')} ({len(taken)} bytes), "
               "never returns")
        _deaf()
        while True:
            time.sleep(3600)
    elif scenario is not None:
        if "--value-stdin" in argv:
            sys.stdin.buffer.read()
        _steps(steps)
        return 0
    print(f"hostile maf-launch: no attack {attack!r}", file=sys.stderr)
    return 125


def reap(here, out):
    """Kills every process of the directory here still alive, then writes its trace."""
    mine = os.path.join(here, "maf-launch").encode()
    try:
        with open(os.path.join(here, "pids")) as f:
            pids = [int(x) for x in f.read().split()]
    except OSError:
        pids = []
    for pid in set(pids):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if mine not in f.read():
                    continue        # gone, and the pid taken by another process
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        with open(os.path.join(here, "trace")) as f:
            out.write(f.read())
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
