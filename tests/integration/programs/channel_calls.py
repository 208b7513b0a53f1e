"""Runs in the sandbox: calls `add` through the generated shim in the way argv[1] names
(sequential, threads, fork, fork-after-call, mixed, timeout), checks every answer is its own,
and prints one JSON line {"mode", "ok", "bad", "channel"}; "channel" says whether
MAF_HOST_TOOLS_FD was set."""
import json
import os
import sys
import threading

import maf_host_tools
from maf_host_tools import HostToolError, add, call

mode = sys.argv[1]
bad = []
ok = 0


def check(i, j):
    global ok
    got = add(a=i * 1000, b=j)
    if got == i * 1000 + j:
        ok += 1
    else:
        bad.append([i, j, got])


def connection_inode():
    """The inode of this thread's channel connection in the shim."""
    return os.fstat(maf_host_tools._local.conn[0].fileno()).st_ino


def fork_children(n, not_sharing=None):
    """Forks n children that each call check(i, 1) and check(i, 2), and exit 0 when both
    answers were their own (and, given not_sharing, their connection is not that inode).
    Returns their exit codes."""
    kids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                check(i, 1)
                check(i, 2)
                own = not_sharing is None or connection_inode() != not_sharing
            except Exception:
                os._exit(1)
            os._exit(0 if not bad and own else 1)
        kids.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids]


if mode == "sequential":
    for j in range(20):
        check(0, j)
elif mode == "threads":
    ts = [threading.Thread(target=lambda i=i: [check(i, j) for j in range(4)]) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
elif mode == "fork":
    codes = fork_children(4)
    ok = 2 * codes.count(0)
    bad = [c for c in codes if c]
elif mode == "fork-after-call":
    # The parent's thread holds a connection when it forks: each child must make its own,
    # and the parent's must still be its own afterwards.
    check(9, 1)
    codes = fork_children(3, not_sharing=connection_inode())
    check(9, 2)
    ok += 2 * codes.count(0)
    bad += [c for c in codes if c]
elif mode == "timeout":
    # The tools server answers one call, then never again: the next call ends with the
    # shim's timeout, as a refusal the program can catch.
    maf_host_tools.CALL_TIMEOUT = 1.5
    check(0, 1)
    try:
        add(a=1, b=2)
        bad.append("answered")
    except HostToolError as e:
        print(json.dumps({"refusal": str(e)}))
elif mode == "mixed":
    # A channel call, then legacy calls: the shim falls back to the files when the
    # descriptor is gone and it has no socket to reach the channel by either.
    check(1, 1)
    fd = int(os.environ["MAF_HOST_TOOLS_FD"])
    os.close(fd)
    maf_host_tools._CHANNEL_PATH = None
    maf_host_tools._local.conn = None
    check(2, 2)
    try:
        call("nope")
    except HostToolError as e:
        print(json.dumps({"refusal": str(e)}))
print(json.dumps({"mode": mode, "ok": ok, "bad": bad,
                  "channel": "MAF_HOST_TOOLS_FD" in os.environ}))
