"""Runs in the sandbox and makes host-tool calls WITHOUT the generated shim: it writes the
request files itself, exactly as maf-sandbox 0.21's shim does (shared/PROTOCOL.md, "Host-tool calls (upstream)"),
and can also behave like a hostile guest.

    claim:    NNNN.claim with O_CREAT|O_EXCL, the lowest free N from 1, never removed
    publish:  NNNN.request.json.part, renamed to NNNN.request.json
              ({"id": "NNNN", "name": TOOL, "arguments": {...}}, or {"id": "NNNN",
              "abandoned": true} when publishing failed)
    answer:   poll NNNN.response.json every 0.05 s; absent or unparsable is "not yet";
              {"value": V} or {"refusal": S}

argv[1] is the mode (see MODES); every outcome is printed as one JSON line
{"label": ..., "outcome": "value"|"refusal"|"no answer", "detail": ...}."""
import json
import os
import sys
import time

CALLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_tool_calls")
POLL = 0.05
WAIT = float(os.environ.get("LEGACY_WAIT", "20"))


def claim():
    os.makedirs(CALLS, exist_ok=True)
    n = 1
    while True:
        nnnn = "%04d" % n
        try:
            fd = os.open(os.path.join(CALLS, nnnn + ".claim"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        os.close(fd)
        return nnnn


def path(nnnn, suffix):
    return os.path.join(CALLS, nnnn + suffix)


def publish(nnnn, data):
    if isinstance(data, str):
        data = data.encode()
    target = path(nnnn, ".request.json")
    with open(target + ".part", "wb") as f:
        f.write(data)
    os.replace(target + ".part", target)


def request(nnnn, name, arguments):
    return json.dumps({"id": nnnn, "name": name, "arguments": arguments})


def wait(nnnn, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path(nnnn, ".response.json"), "rb") as f:
                doc = json.loads(f.read())
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict):
            if "refusal" in doc:
                return "refusal", doc["refusal"]
            if "value" in doc:
                return "value", doc["value"]
        if time.monotonic() >= deadline:
            return "no answer", None
        time.sleep(POLL)


def say(label, outcome):
    print(json.dumps({"label": label, "outcome": outcome[0], "detail": outcome[1]}))
    sys.stdout.flush()


def call(name, **arguments):
    nnnn = claim()
    try:
        publish(nnnn, request(nnnn, name, arguments))
    except BaseException:
        publish(nnnn, json.dumps({"id": nnnn, "abandoned": True}))
        raise
    return wait(nnnn)


def raw(label, data):
    """Claims a number and publishes data (bytes or str) as its request, then waits."""
    nnnn = claim()
    publish(nnnn, data if not callable(data) else data(nnnn))
    say(label, wait(nnnn))


def mode_basic():
    say("echo", call("echo", x=1, s="h\u00e9llo"))
    say("unknown tool", call("no_such_tool"))
    say("bad arguments", call("echo", x="not an integer"))
    nnnn = claim()
    publish(nnnn, json.dumps({"id": nnnn, "abandoned": True}))
    say("after abandoned", call("echo", x=2))


def mode_malformed():
    raw("malformed", b'{"id": "')
    raw("not utf-8", b'{"id": "\xff\xfe", "name": "echo"}')
    raw("deep", "[" * 5000 + "]" * 5000)
    raw("not utf-8 in an argument", lambda nnnn: b'{"id": "%s", "name": "echo", "arguments": '
        b'{"s": "\xff\xfe"}}' % nnnn.encode())
    say("after", call("echo", x=3))


def mode_big():
    def big(nnnn):
        head = '{"id": "%s", "name": "echo", "arguments": {"x": 1, "pad": "' % nnnn
        return head.encode() + b"a" * (50 << 20) + b'"}}'
    raw("50 MB", big)
    say("after", call("echo", x=4))


def mode_wrong_types():
    raw("array", "[1, 2]")
    raw("null", "null")
    raw("name not a string", lambda n: json.dumps({"id": n, "name": 5, "arguments": {}}))
    raw("arguments a list", lambda n: json.dumps({"id": n, "name": "echo", "arguments": [1]}))
    raw("arguments a string", lambda n: json.dumps({"id": n, "name": "echo", "arguments": "x"}))
    raw("id of another call", lambda n: json.dumps({"id": "9999", "name": "echo",
                                                     "arguments": {"x": 1}}))
    raw("no name", lambda n: json.dumps({"id": n, "arguments": {}}))
    raw("huge name", lambda n: json.dumps({"id": n, "name": "e" * 100000, "arguments": {}}))
    say("after", call("echo", x=5))


def mode_symlink():
    target = os.path.abspath("planted_request.json")
    nnnn = claim()
    with open(target, "w") as f:
        f.write(request(nnnn, "echo", {"x": 6}))
    os.symlink(target, path(nnnn, ".request.json"))
    say("symlink", wait(nnnn))
    say("after", call("echo", x=6))


def mode_directory():
    nnnn = claim()
    os.mkdir(path(nnnn, ".request.json"))
    say("directory", wait(nnnn))
    say("after", call("echo", x=7))


def mode_fifo():
    nnnn = claim()
    os.mkfifo(path(nnnn, ".request.json"))
    say("fifo", wait(nnnn))
    say("after", call("echo", x=8))


def mode_out_of_order():
    first, second = claim(), claim()
    publish(second, request(second, "echo", {"n": 2}))
    time.sleep(1.0)
    early = os.path.exists(path(second, ".response.json"))
    print(json.dumps({"label": "second answered before first", "outcome": early}))
    publish(first, request(first, "echo", {"n": 1}))
    say("first", wait(first))
    say("second", wait(second))


def mode_repeated():
    nnnn = claim()
    publish(nnnn, request(nnnn, "echo", {"x": 1}))
    say("first", wait(nnnn))
    publish(nnnn, request(nnnn, "echo", {"x": 2}))     # the same id again
    time.sleep(1.0)
    say("same id again", wait(nnnn, timeout=0))
    other = claim()
    publish(other, request(nnnn, "echo", {"x": 3}))    # a body claiming the earlier id
    say("earlier id in a later file", wait(other))
    say("after", call("echo", x=9))


def mode_planted():
    outside = sys.argv[2]
    nnnn = claim()
    os.symlink(outside, path(nnnn, ".response.json"))
    publish(nnnn, request(nnnn, "echo", {"x": 10}))
    say("planted", wait(nnnn, timeout=10))
    print(json.dumps({"label": "response is a symlink",
                      "outcome": os.path.islink(path(nnnn, ".response.json"))}))
    say("after", call("echo", x=11))


def publish_ino(nnnn, data, link_as=None):
    """publish(), returning the request file's inode; link_as gives it a second name."""
    target = path(nnnn, ".request.json")
    with open(target + ".part", "wb") as f:
        f.write(data.encode())
        ino = os.fstat(f.fileno()).st_ino
    if link_as:
        os.link(target + ".part", link_as)
    os.replace(target + ".part", target)
    return ino


def mode_reuse():
    # The host may write its answer into the request file it answered (PROTOCOL.md): the
    # response then has the request's inode, and the request's name is gone.
    for label, link_as in (("one link", None), ("two links", os.path.abspath("kept"))):
        nnnn = claim()
        body = request(nnnn, "echo", {"pad": "p" * 300})
        ino = publish_ino(nnnn, body, link_as)
        outcome = wait(nnnn)
        st = os.stat(path(nnnn, ".response.json"))
        detail = {"same file": st.st_ino == ino,
                  "request still there": os.path.exists(path(nnnn, ".request.json")),
                  "answer": outcome[1] == {"pad": "p" * 300}}
        if link_as:
            with open(link_as) as f:
                detail["other name kept the request"] = f.read() == body
        print(json.dumps({"label": label, "outcome": outcome[0], "detail": detail}))
        sys.stdout.flush()


MODES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("mode_")}

if __name__ == "__main__":
    MODES[sys.argv[1]]()
    print(json.dumps({"label": "end"}))
