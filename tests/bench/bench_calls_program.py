"""Runs in the sandbox for `make bench-calls`: times host-tool calls of the `echo` tool over
the launcher's channel and over the legacy files, in the same run, and prints one JSON line.

argv: CHANNEL_CALLS LEGACY_CALLS WARMUP THREADS ROUNDS [SETTLE_S]

Paths, each timed call by call (time.perf_counter_ns around the call):
  channel-shim    the generated shim's call() (MAF_HOST_TOOLS_FD set: one connection per
                  thread, newline-delimited JSON)
  channel-client  the CLIENT of tests/integration/test_channel.py, copied: a connection of
                  its own per call (socketpair + SCM_RIGHTS), one call on it
  legacy-files    the generated shim loaded a second time with MAF_HOST_TOOLS_FD and
                  MAF_HOST_TOOLS_SOCKET unset: the upstream behaviour (claim, .part +
                  rename, poll the response every 0.05 s)
The channel and legacy calls alternate in ROUNDS blocks, so both see the same machine. A
legacy block leaves the machine all but idle for a second or more (its calls sleep in 50 ms
polls), and on a VM the calls that follow an idle spell are slower until the machine is busy
again (measured: about 150 ms of calls at twice the round trip). So after each legacy block,
and before the threads, the shim calls for SETTLE_S seconds (default 0.3) before the next
timed block; those calls are timed as their own path, `channel-shim-after-idle`, what a
program that calls after a pause pays.
Beside the times, how often the calling thread slept per path (getrusage's voluntary context
switches): waiting for one answer should be one sleep. Throughput with THREADS threads
calling through the shim at once is measured last."""
import functools
import importlib.util
import json
import os
import resource
import socket
import sys
import threading
import time

import maf_host_tools

# ---- the CLIENT of tests/integration/test_channel.py, copied --------------------------------
def connect():
    chan = socket.socket(fileno=os.dup(int(os.environ["MAF_HOST_TOOLS_FD"])))
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    socket.send_fds(chan, [b"connect"], [b.fileno()])
    b.close(); chan.close()
    return a
def client_call(name, cid=1, **arguments):
    s = connect()
    s.sendall(json.dumps({"id": cid, "name": name, "arguments": arguments}).encode() + b"\n")
    f = s.makefile("rb")
    line = f.readline()
    s.close()
    return json.loads(line)
# ---------------------------------------------------------------------------------------------


def legacy_shim():
    """The shim module again, imported with MAF_HOST_TOOLS_FD and MAF_HOST_TOOLS_SOCKET
    unset: it takes the files."""
    saved = {k: os.environ.pop(k) for k in ("MAF_HOST_TOOLS_FD", "MAF_HOST_TOOLS_SOCKET")
             if k in os.environ}
    try:
        spec = importlib.util.spec_from_file_location("maf_host_tools_legacy",
                                                      maf_host_tools.__file__)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        os.environ.update(saved)
    assert mod._CHANNEL_FD is None and mod._CHANNEL_PATH is None
    return mod


def timed(fn, n, samples):
    for i in range(n):
        t = time.perf_counter_ns()
        v = fn(i)
        samples.append(time.perf_counter_ns() - t)
        assert v == {"i": i}, v


def main():
    channel_calls, legacy_calls, warmup, threads, rounds = map(int, sys.argv[1:6])
    settle_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0.3
    legacy = legacy_shim()
    shim_call = maf_host_tools.call
    via_shim = lambda i: shim_call("echo", i=i)
    via_client = lambda i: client_call("echo", cid=i, i=i)["value"]
    via_files = lambda i: legacy.call("echo", i=i)
    got = {"channel-shim": [], "channel-client": [], "legacy-files": [],
           "channel-shim-after-idle": []}
    timed(via_shim, warmup, [])
    timed(via_client, warmup, [])
    wall = {k: 0 for k in got}
    sleeps = {k: 0 for k in got}

    def block(name, run):
        """Runs run(samples) as a block of path name, adding its wall time and sleeps."""
        t = time.perf_counter_ns()
        v = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
        run(got[name])
        sleeps[name] += resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - v
        wall[name] += time.perf_counter_ns() - t

    def settle(samples):
        """Shim calls for settle_s seconds, timed apart (see the docstring)."""
        end = time.monotonic() + settle_s
        while time.monotonic() < end:
            timed(via_shim, 1, samples)

    for r in range(rounds):
        if r > 0 and legacy_calls // rounds > 0:
            block("channel-shim-after-idle", settle)
        for name, fn, n in (("channel-shim", via_shim, channel_calls // rounds),
                            ("channel-client", via_client, channel_calls // rounds),
                            ("legacy-files", via_files, legacy_calls // rounds)):
            block(name, functools.partial(timed, fn, n))

    if legacy_calls // rounds > 0:
        block("channel-shim-after-idle", settle)

    # Throughput: THREADS threads calling through the shim at once.
    per_thread = channel_calls // threads
    errors = []

    def worker():
        try:
            for i in range(per_thread):
                v = shim_call("echo", i=i)
                assert v == {"i": i}, v
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            errors.append(repr(e))

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    t = time.perf_counter_ns()
    [x.start() for x in ts]
    [x.join() for x in ts]
    parallel_ns = time.perf_counter_ns() - t
    print(json.dumps({"samples_ns": got, "wall_ns": wall, "sleeps": sleeps,
                      "parallel": {"threads": threads, "calls": per_thread * threads,
                                   "wall_ns": parallel_ns, "errors": errors[:3]}}))


main()
