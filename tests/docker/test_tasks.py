"""The Docker backend's ops without blocking (mafh_task_*), driven the way an event loop
drives them: docker_ops starts them all at once and takes them to their end from one thread,
in one poll(2) loop over the descriptors and times the tasks hand out. No thread a task, and
no pass condition on time."""
import errno
import os

import pytest

from conftest import engine_is_podman
from test_backend import pattern

E2BIG, EPIPE = -errno.E2BIG, -errno.EPIPE


@pytest.fixture
def backend(ops, container):
    o = ops()
    r = o("new", container=container)
    assert r["rc"] == 0, r["message"]
    return o


def test_many_execs_at_once_from_one_thread(backend):
    # MAF_DOCKER_MANY: fewer where each connection costs a login (make engines' ssh leg).
    n = int(os.environ.get("MAF_DOCKER_MANY", "128"))
    before = backend("requests")["requests"]
    r = backend("tasks", ops=[{"kind": "exec", "argv": ["/spew", str(i * 37 + 1), str(i % 7),
                                                        str(i % 100)],
                               "timeout_ms": 120000, "out_cap": 1 << 20} for i in range(n)])
    assert r["rc"] == 0, r["message"]
    for i, got in enumerate(r["results"]):
        assert (got["rc"], got["message"], got["exit_code"], got["timed_out"]) == \
            (0, "", i % 100, False), i
        assert got["out"] == pattern("a", i * 37 + 1), i
        assert got["err"] == pattern("A", i % 7), i
    # One thread: no thread a task, none of libcurl's.
    assert r["threads_max"] == 1
    # Several requests were under way at once, each on its own descriptor.
    assert r["fds_max"] >= 2
    # Each: create, start, and one inspection or more.
    assert backend("requests")["requests"] >= before + 3 * n


def test_stream_echo_through_tasks(backend):
    # Twenty streams at once, each its own echo; the largest is written while its echo comes
    # back, which the write reads meanwhile (or neither side would take more).
    data = [(b"stream %d " % i) * (1 + i * 300) for i in range(19)] + [bytes(range(256)) * 8192]
    before = backend("requests")["requests"]
    r = backend("streams", argv=["/echo_stdin"], hex=[d.hex() for d in data])
    assert r["rc"] == 0, r["message"]
    for i, got in enumerate(r["results"]):
        assert got["open"] == [0, ""], i
        assert got["write"] == [0, ""], i
        assert got["out"] == data[i], i
        assert got["close"] == [0, ""], i
        assert got["state_left"] is False, i
    assert r["threads_max"] == 1
    assert r["fds_max"] >= 2
    # Each opening: the exec's creation, and its start on a connection of its own.
    assert backend("requests")["requests"] == before + 2 * len(data)


def test_a_stream_that_ends_says_so_with_its_stderr(backend):
    r = backend("streams", argv=["/hello", "3"], hex=[(b"x" * 100).hex()])
    assert r["rc"] == 0, r["message"]
    got = r["results"][0]
    assert got["open"] == [0, ""]
    assert got["ended"] is True
    assert got["close"] == [0, ""] and got["state_left"] is False
    if engine_is_podman():
        # Podman may drop all the output of a command that ends without reading its stdin
        # (its issues 3302 and 11446; the launcher's supervisor reads its stdin to the end,
        # so a run's stream is whole): each of stdout and stderr whole, or none of it, the
        # one lost without the other. Its own line about the closed attach socket is never
        # the one the end carries.
        assert got["out"] in (b"hello from stdout\n", b""), got
        assert got["end"] in ([0, "the stream of /hello has ended: hello from stderr"],
                              [0, "the stream of /hello has ended"]), got
        return
    assert got["out"] == b"hello from stdout\n"
    assert got["end"] == [0, "the stream of /hello has ended: hello from stderr"]


def test_a_stream_of_a_command_that_cannot_start(backend):
    # The engine hands the connection over before it tries: its reason comes as the
    # command's stdout, then the end.
    r = backend("streams", argv=["/no-such-command"], hex=[(b"x" * 4096).hex()])
    got = r["results"][0]
    assert got["open"] == [0, ""]
    assert got["ended"] is True
    assert got["end"][0] == 0
    assert got["end"][1].startswith("the stream of /no-such-command has ended")
    # dockerd writes its reason as the command's stdout, Podman as its stderr, which the
    # end's sentence carries.
    assert b"no such file or directory" in (got["end"][1].encode() if engine_is_podman()
                                            else got["out"])


def test_exec_timeout_keeps_what_came(backend):
    # /hello prints its two lines, then sleeps 30 s: the exec's deadline comes first. The
    # engine cannot end an exec; it goes on in the container (removed at the session's end).
    r = backend("tasks", ops=[{"kind": "exec", "argv": ["/hello", "0", "30"],
                               "timeout_ms": 5000, "out_cap": 4096}])
    got = r["results"][0]
    assert (got["rc"], got["exit_code"], got["timed_out"]) == (0, -1, True), got["message"]
    assert (got["out"], got["err"]) == (b"hello from stdout\n", b"hello from stderr\n")
    # The same through the blocking call, which performs the same op.
    got = backend("exec", argv=["/hello", "0", "30"], timeout_ms=5000, out_cap=4096)
    assert (got["rc"], got["exit_code"], got["timed_out"]) == (0, -1, True), got["message"]
    assert (got["out"], got["err"]) == (b"hello from stdout\n", b"hello from stderr\n")


def test_absent_files_through_tasks(backend):
    r = backend("mkdtemp", template="/tmp/tk-XXXXXX")
    assert r["rc"] == 0, r["message"]
    d = r["path"]
    before = backend("requests")["requests"]
    r = backend("tasks", ops=[{"kind": "read", "path": f"{d}/absent", "cap": 10},
                              {"kind": "read", "path": f"{d}/no/such/dir/f", "cap": 10},
                              {"kind": "stat", "path": f"{d}/absent"},
                              {"kind": "stat", "path": d},
                              {"kind": "read", "path": "relative", "cap": 10}])
    read1, read2, stat1, stat2, bad = r["results"]
    assert (read1["rc"], read1["status"]) == (0, "absent")
    assert (read2["rc"], read2["status"]) == (0, "absent")
    assert (stat1["rc"], stat1["exists"], stat1["type"]) == (0, False, "none")
    assert (stat2["rc"], stat2["exists"], stat2["type"]) == (0, True, "dir")
    assert bad["rc"] == -errno.EINVAL
    assert bad["message"] == "the container path 'relative' is not an absolute path to a file"
    # Two reads, two stats of which one of an absent path (its HEAD and the container's
    # inspection), and nothing for the bad path.
    assert backend("requests")["requests"] == before + 5


def test_files_written_and_read_at_once(backend):
    r = backend("mkdtemp", template="/tmp/tk-XXXXXX")
    d = r["path"]
    files = {f"{d}/f{i}": bytes([i]) * (i * 1000) for i in range(24)}
    r = backend("tasks", ops=[{"kind": "write", "path": p, "hex": b.hex()}
                              for p, b in files.items()])
    assert [x["rc"] for x in r["results"]] == [0] * len(files), r["results"]
    r = backend("tasks", ops=[{"kind": "read", "path": p, "cap": 1 << 20} for p in files])
    assert [(x["rc"], x["status"], x["hex"]) for x in r["results"]] == \
        [(0, "ok", b) for b in files.values()]


def test_a_task_left_under_way(backend):
    # /pause never ends: its task is freed while it waits for the output's end. The backend
    # goes on, from the same pool of connections.
    r = backend("tasks", ops=[{"kind": "exec", "argv": ["/pause"], "out_cap": 10}] * 3,
                abandon_ms=500)
    assert [x.get("abandoned") for x in r["results"]] == [True] * 3
    r = backend("tasks", ops=[{"kind": "exec", "argv": ["/hello", str(i)], "out_cap": 100}
                              for i in range(20)])
    assert [(x["rc"], x["exit_code"]) for x in r["results"]] == [(0, i) for i in range(20)]


def test_a_flood_breaks_the_stream_not_the_host(ops, container):
    # A command that prints without end and never reads its stdin, written 16 MiB: the
    # write reads its output meanwhile, which nobody takes, until the stream's bound. Without
    # the bound this process would hold all the command prints for the write's 30 s.
    o = ops()
    assert o("new", container=container)["rc"] == 0
    r = o("flood", argv=["/spew", "1000000000000"], write_bytes=16 << 20)
    assert r["open"] == [0, ""]
    assert r["write"] == [E2BIG, "the stream of /spew is broken: its command printed more "
                                 "than 4 MiB that were not read"]
    # Broken from then on: the read says so, and the close closes.
    assert r["read_ended"] is True and r["read_len"] == 0
    assert r["read"][0] == E2BIG
    assert r["state_left"] is False
    assert r["hwm_kb"] - r["rss_kb"] < 32 << 10, (r["rss_kb"], r["hwm_kb"])


# ---- an exec with an input --------------------------------------------------------------
# The Docker backend performs an EXEC op that carries data (exec_input) on a connection the
# engine hands over, but does not declare MAFH_CAP_EXEC_STDIN (a run's relay over it writes
# each answer first): docker_ops gives its ops to a backend that declares it.

@pytest.fixture
def stdin_backend(ops, container):
    o = ops()
    r = o("new", container=container, exec_stdin=True)
    assert r["rc"] == 0, r["message"]
    return o


def test_exec_input_is_the_commands_stdin(stdin_backend):
    b = stdin_backend
    data = b"hello" * 30000
    n = b("requests")["requests"]
    r = b("exec", argv=["/echo_stdin", "4"], stdin_hex=data.hex(), timeout_ms=60000,
          out_cap=1 << 20)
    assert (r["rc"], r["exit_code"], r["timed_out"]) == (0, 4, False), r["message"]
    assert r["out"] == data
    # Create, start, one inspection or more.
    assert b("requests")["requests"] - n >= 3
    # Not read at all.
    r = b("exec", argv=["/hello", "3"], stdin_hex=(b"x" * 200000).hex(), timeout_ms=60000,
          out_cap=100)
    assert (r["rc"], r["exit_code"]) == (0, 3), r["message"]
    if engine_is_podman():
        # Podman may drop the output of a command that ends without reading its stdin
        # (its issues 3302 and 11446): each stream whole, or none of it.
        assert r["out"] in (b"hello from stdout\n", b"") and \
            r["err"] in (b"hello from stderr\n", b""), r
    else:
        assert (r["out"], r["err"]) == (b"hello from stdout\n", b"hello from stderr\n")
    # Empty.
    r = b("exec", argv=["/echo_stdin"], stdin_hex="", timeout_ms=60000, out_cap=100)
    assert (r["rc"], r["exit_code"], r["out"]) == (0, 0, b"")
    # Past the output's cap: read to its end, the start kept.
    big = pattern("a", 3 << 20)
    r = b("exec", argv=["/echo_stdin"], stdin_hex=big.hex(), timeout_ms=60000,
          out_cap=100000)
    assert (r["rc"], r["exit_code"], r["out"]) == (0, 0, big[:100000]), r["message"]


def test_exec_input_of_a_command_that_cannot_start(stdin_backend, container):
    r = stdin_backend("exec", argv=["/no-such-command"], stdin_hex="78", timeout_ms=30000,
                      out_cap=100)
    assert (r["rc"], r["exit_code"]) == (-errno.EIO, -1)
    assert r["message"].startswith(f"the Docker engine could not start /no-such-command in "
                                   f"the container '{container}': ")
    assert "no such file or directory" in r["message"]


def test_exec_input_timeout(stdin_backend):
    # Output, then a sleep past the deadline.
    r = stdin_backend("exec", argv=["/hello", "0", "30"], stdin_hex="78", timeout_ms=5000,
                      out_cap=100)
    assert (r["rc"], r["exit_code"], r["timed_out"]) == (0, -1, True), r["message"]
    assert r["out"] == b"hello from stdout\n"
    # An input the command never takes, and never an end: the write waits to the deadline.
    r = stdin_backend("exec", argv=["/pause"], stdin_hex=(b"x" * (8 << 20)).hex(),
                      timeout_ms=3000, out_cap=100)
    assert (r["rc"], r["exit_code"], r["timed_out"]) == (0, -1, True), r["message"]


def test_exec_inputs_at_once_through_tasks(stdin_backend):
    data = [(b"input %d " % i) * (i * 100 + 1) for i in range(32)]
    r = stdin_backend("tasks", ops=[{"kind": "exec", "argv": ["/echo_stdin", str(i)],
                                     "stdin_hex": d.hex(), "timeout_ms": 120000,
                                     "out_cap": 1 << 20} for i, d in enumerate(data)])
    assert [(x["rc"], x["exit_code"], x["out"]) for x in r["results"]] == \
        [(0, i, d) for i, d in enumerate(data)]
    assert r["threads_max"] == 1


def test_blocking_calls_from_threads_at_once(backend):
    # Nothing of the backend is held for an op: eight threads go on at once, each with its
    # own requests (and connections from the one pool).
    d = backend("mkdtemp", template="/tmp/th-XXXXXX")["path"]
    r = backend("threads", n=8, each=5, argv=["/hello"], dir=d)
    assert (r["rc"], r["ok"], r["errors"]) == (0, 2 * 8 * 5, [])
