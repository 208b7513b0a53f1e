"""The Docker backend through libmafhost's API (docker_ops), against the engine: exec, the
files, and every error the engine can give, each as one sentence."""
import errno
import os
import tarfile
import uuid

import pytest

from conftest import (docker, engine_is_podman, engine_socket, listing, put_tar)

EIO, ENOENT, EINVAL = -errno.EIO, -errno.ENOENT, -errno.EINVAL


def pattern(first, n):
    """What spew writes: byte i is first + i % 26."""
    return bytes(ord(first) + i % 26 for i in range(n))


@pytest.fixture
def backend(ops, container):
    o = ops()
    r = o("new", container=container)
    assert r["rc"] == 0, r["message"]
    return o


@pytest.fixture
def tmpdir_in(backend):
    """A fresh directory in the shared container (mkdtemp through the backend)."""
    r = backend("mkdtemp", template="/tmp/dt-XXXXXX")
    assert r["rc"] == 0, r["message"]
    return r["path"]


# ---- exec ------------------------------------------------------------------------------

def test_exec_argv_stdout_stderr_and_exit_code(backend):
    r = backend("exec", argv=["/hello", "7"], timeout_ms=30000, out_cap=4096)
    assert r["rc"] == 0, r["message"]
    assert (r["exit_code"], r["timed_out"]) == (7, False)
    assert r["out"] == b"hello from stdout\n"
    assert r["err"] == b"hello from stderr\n"


def test_exec_argv_is_never_a_shell_string(backend):
    # The argument reaches the program as one word: atoi("5; exit 9") is 5. There is no
    # shell in the image to run it otherwise.
    r = backend("exec", argv=["/hello", "5; exit 9"], timeout_ms=30000, out_cap=4096)
    assert (r["rc"], r["exit_code"]) == (0, 5)


def test_exec_output_under_the_cap_is_whole(backend):
    r = backend("exec", argv=["/spew", "1000000", "3000", "4"], timeout_ms=60000,
                out_cap=1 << 20)
    assert (r["rc"], r["exit_code"], r["timed_out"]) == (0, 4, False), r["message"]
    assert r["out"] == pattern("a", 1000000)
    assert r["err"] == pattern("A", 3000)


def test_exec_output_past_the_cap_is_read_and_dropped(backend):
    # 3 MB of stdout with a cap of 100 KB, and more stderr than the 64 KiB it keeps: the
    # command runs to its end (its exit code arrives), what is kept is the start.
    r = backend("exec", argv=["/spew", "3000000", "200000", "5"], timeout_ms=60000,
                out_cap=100000)
    assert (r["rc"], r["exit_code"], r["timed_out"]) == (0, 5, False), r["message"]
    assert r["out"] == pattern("a", 100000)
    assert r["err"] == pattern("A", 65536)


def test_exec_timeout_is_reported_not_an_error(backend):
    # /pause never ends; the engine cannot end an exec, so it goes on in the container
    # (removed with it at the end of the session).
    r = backend("exec", argv=["/pause"], timeout_ms=500, out_cap=4096)
    assert r["rc"] == 0, r["message"]
    assert (r["exit_code"], r["timed_out"]) == (-1, True)
    # The connection the stream held is gone; the next request opens another.
    r = backend("exec", argv=["/hello", "1"], timeout_ms=30000, out_cap=4096)
    assert (r["rc"], r["exit_code"]) == (0, 1)


def test_exec_of_a_command_that_cannot_start(backend, container, tmpdir_in):
    r = backend("exec", argv=["/no-such-command"], timeout_ms=30000, out_cap=4096)
    assert r["rc"] == EIO
    assert r["exit_code"] == -1
    assert r["message"].startswith(f"the Docker engine could not start /no-such-command in "
                                   f"the container '{container}': ")
    assert "no such file or directory" in r["message"]
    # A file that is there but not executable (written 0644).
    path = f"{tmpdir_in}/not-executable"
    assert backend("write", path=path, hex=b"\x7fELF".hex())["rc"] == 0
    r = backend("exec", argv=[path], timeout_ms=30000, out_cap=4096)
    assert r["rc"] == EIO
    assert r["message"].startswith(f"the Docker engine could not start {path} in the "
                                   f"container '{container}': ")
    assert "permission denied" in r["message"]


# ---- files -----------------------------------------------------------------------------

def test_write_read_stat_round_trip(backend, container, tmpdir_in):
    data = bytes(range(256)) * 3 + b"\x00end"
    path = f"{tmpdir_in}/a/b/c/file.bin"
    assert backend("write", path=path, hex=data.hex())["rc"] == 0
    r = backend("read", path=path, cap=len(data))
    assert (r["rc"], r["status"], r["hex"]) == (0, "ok", data)
    assert backend("stat", path=path) == {"exists": True, "size": len(data),
                                          "type": "regular", "rc": 0, "message": ""}
    # The missing parents were made by the engine: directories, 0755.
    st = backend("stat", path=f"{tmpdir_in}/a/b")
    assert (st["exists"], st["type"]) == (True, "dir")
    top = tmpdir_in.split("/")[-1]
    tree = listing(container, tmpdir_in)
    assert tree[f"{top}/a/b/c"] == (0o755, tarfile.DIRTYPE)
    assert tree[f"{top}/a/b/c/file.bin"] == (0o644, tarfile.REGTYPE)
    # Written again: replaced whole, shorter.
    assert backend("write", path=path, hex=b"short".hex())["rc"] == 0
    assert backend("read", path=path, cap=100)["hex"] == b"short"


def test_empty_and_large_files(backend, tmpdir_in):
    assert backend("write", path=f"{tmpdir_in}/empty", hex="")["rc"] == 0
    r = backend("read", path=f"{tmpdir_in}/empty", cap=0)
    assert (r["status"], r["hex"]) == ("ok", b"")
    big = os.urandom(3 << 20)
    assert backend("write", path=f"{tmpdir_in}/big", hex=big.hex())["rc"] == 0
    r = backend("read", path=f"{tmpdir_in}/big", cap=len(big))
    assert (r["status"], r["hex"] == big) == ("ok", True)


def test_absent_files(backend, tmpdir_in):
    r = backend("read", path=f"{tmpdir_in}/nothing", cap=10)
    assert (r["rc"], r["status"]) == (0, "absent")
    r = backend("read", path=f"{tmpdir_in}/no/such/dir/file", cap=10)
    assert (r["rc"], r["status"]) == (0, "absent")
    r = backend("stat", path=f"{tmpdir_in}/nothing")
    assert (r["rc"], r["exists"], r["type"]) == (0, False, "none")


def test_read_past_the_cap_is_too_big(backend, tmpdir_in):
    data = b"x" * 5000
    assert backend("write", path=f"{tmpdir_in}/f", hex=data.hex())["rc"] == 0
    r = backend("read", path=f"{tmpdir_in}/f", cap=4999)
    assert (r["rc"], r["status"], r["size"], r["hex"]) == (0, "too_big", 5000, b"")
    r = backend("read", path=f"{tmpdir_in}/f", cap=5000)
    assert (r["status"], len(r["hex"])) == ("ok", 5000)


def test_symlinks_directories_and_fifos_are_not_regular(backend, container, tmpdir_in):
    link = tarfile.TarInfo(tmpdir_in[1:] + "/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/usr/local/bin/maf-launch"
    dangling = tarfile.TarInfo(tmpdir_in[1:] + "/dangling")
    dangling.type, dangling.linkname = tarfile.SYMTYPE, "/nowhere"
    fifo = tarfile.TarInfo(tmpdir_in[1:] + "/fifo")
    fifo.type = tarfile.FIFOTYPE
    put_tar(container, [(link, None), (dangling, None), (fifo, None)])
    for name, size in (("link", len("/usr/local/bin/maf-launch")), ("dangling", 8)):
        r = backend("read", path=f"{tmpdir_in}/{name}", cap=1 << 20)
        assert (r["rc"], r["status"], r["hex"]) == (0, "not_regular", b"")
        # Never followed: the link itself.
        assert backend("stat", path=f"{tmpdir_in}/{name}") == {
            "exists": True, "size": size, "type": "symlink", "rc": 0, "message": ""}
    r = backend("read", path=f"{tmpdir_in}/fifo", cap=10)
    assert (r["rc"], r["status"]) == (0, "not_regular")
    assert backend("stat", path=f"{tmpdir_in}/fifo")["type"] == "other"
    # A directory, however large, is refused from the engine's header before its tar comes:
    # one request (/proc, which the engine would take long to tar, if it could at all).
    before = backend("requests")["requests"]
    r = backend("read", path="/proc", cap=1 << 20)
    assert (r["rc"], r["status"]) == (0, "not_regular")
    assert backend("requests")["requests"] == before + 1
    assert backend("stat", path=tmpdir_in)["type"] == "dir"


def test_write_replaces_a_symlink_without_following_it(backend, container, tmpdir_in):
    assert backend("write", path=f"{tmpdir_in}/target", hex=b"keep".hex())["rc"] == 0
    link = tarfile.TarInfo(tmpdir_in[1:] + "/s")
    link.type, link.linkname = tarfile.SYMTYPE, f"{tmpdir_in}/target"
    put_tar(container, [(link, None)])
    assert backend("write", path=f"{tmpdir_in}/s", hex=b"new".hex())["rc"] == 0
    assert backend("stat", path=f"{tmpdir_in}/s")["type"] == "regular"
    assert backend("read", path=f"{tmpdir_in}/s", cap=10)["hex"] == b"new"
    assert backend("read", path=f"{tmpdir_in}/target", cap=10)["hex"] == b"keep"


def test_write_never_replaces_a_directory(backend, container, tmpdir_in):
    assert backend("write", path=f"{tmpdir_in}/d/inside", hex=b"1".hex())["rc"] == 0
    r = backend("write", path=f"{tmpdir_in}/d", hex=b"2".hex())
    assert r["rc"] == EIO
    assert r["message"].startswith(f"writing {tmpdir_in}/d into the container "
                                   f"'{container}' failed: ")
    # The engine's own words: dockerd's, or Podman's (its copier's open(2) of the path).
    assert ("file exists" if engine_is_podman() else "cannot overwrite directory") \
        in r["message"]
    assert backend("read", path=f"{tmpdir_in}/d/inside", cap=10)["hex"] == b"1"


def test_a_file_taken_as_soon_as_it_is_closed_is_written(backend, tmpdir_in):
    # The engine sets a file's owner, mode and times after closing it; a guest that renames
    # it at once (the supervisor reuses a relayed response so) makes that fail, once the
    # data is in. rename_on_close renames every file closed in its directory; the exec
    # that starts it times out while it goes on.
    watched = f"{tmpdir_in}/watched"
    r = backend("exec", argv=["/rename_on_close", watched], timeout_ms=300, out_cap=100)
    assert r["timed_out"], r
    # Ready once a file written there is taken (the wait is a safety net).
    for _ in range(3000):
        assert backend("write", path=f"{watched}/probe", hex="00")["rc"] == 0
        if backend("read", path=f"{watched}/probe.taken", cap=1)["status"] == "ok":
            break
    else:
        raise AssertionError("rename_on_close never took a file")
    # Each write and each read of a file there costs the engine an extraction (tens of ms):
    # 40 files, of which the engine fails to finish some (one in seven, here).
    for i in range(40):
        data = f"file {i}".encode()
        r = backend("write", path=f"{watched}/f{i}", hex=data.hex())
        assert r["rc"] == 0, r["message"]
        # Taken whole (the wait is a safety net).
        for _ in range(3000):
            got = backend("read", path=f"{watched}/f{i}.taken", cap=100)
            if got["status"] != "absent":
                break
        assert (got["status"], got["hex"]) == ("ok", data)


def test_mkdtemp_makes_fresh_private_directories(backend, container):
    a = backend("mkdtemp", template="/tmp/mk-XXXXXX")
    b = backend("mkdtemp", template="/tmp/mk-XXXXXX")
    assert a["rc"] == b["rc"] == 0
    assert a["path"] != b["path"] and a["path"].startswith("/tmp/mk-")
    tree = listing(container, a["path"])
    assert tree[a["path"].split("/")[-1]] == (0o700, tarfile.DIRTYPE)
    r = backend("mkdtemp", template="/tmp/no-x")
    assert r["rc"] == EINVAL
    assert r["message"] == ("the directory template '/tmp/no-x' is not an absolute path "
                            "ending in XXXXXX")


def test_bad_paths_are_refused_before_the_engine(backend):
    before = backend("requests")["requests"]
    for path in ("relative/f", "/a/../etc/passwd", "/", "/tmp/dir/"):
        r = backend("read", path=path, cap=10)
        assert r["rc"] == EINVAL, path
        assert "absolute path to a file" in r["message"] or "'..'" in r["message"]
    assert backend("requests")["requests"] == before


def test_requests_are_counted(backend, tmpdir_in):
    n = backend("requests")["requests"]
    backend("stat", path=tmpdir_in)
    backend("read", path=f"{tmpdir_in}/absent", cap=1)
    backend("write", path=f"{tmpdir_in}/f", hex="00")
    assert backend("requests")["requests"] == n + 3
    # An exec: create, start, and one inspection or more.
    backend("exec", argv=["/hello"], timeout_ms=30000, out_cap=100)
    assert backend("requests")["requests"] >= n + 6
    # A stat of an absent path: the HEAD, and the container's inspection that tells it
    # from an absent container.
    n = backend("requests")["requests"]
    backend("stat", path=f"{tmpdir_in}/absent")
    assert backend("requests")["requests"] == n + 2


# ---- the engine's errors, one sentence each ---------------------------------------------

def test_no_engine_at_the_socket(ops, container, tmp_path):
    sock = str(tmp_path / "no-engine.sock")
    r = ops(env={**os.environ, "DOCKER_HOST": f"unix://{sock}"})("new", container=container)
    assert r["rc"] == -errno.ENOENT
    assert r["message"] == (f"cannot reach the Docker engine at {sock}: No such file or "
                            f"directory")
    # The same through the option, and a socket that nobody listens on.
    r = ops()("new", container=container, socket=sock)
    assert r["message"] == (f"cannot reach the Docker engine at {sock}: No such file or "
                            f"directory")
    import socket as s
    dead = s.socket(s.AF_UNIX)
    dead.bind(str(tmp_path / "dead.sock"))
    r = ops()("new", container=container, socket=str(tmp_path / "dead.sock"))
    dead.close()
    assert r["rc"] == -errno.ECONNREFUSED
    assert r["message"] == (f"cannot reach the Docker engine at {tmp_path}/dead.sock: "
                            f"Connection refused")


def test_hosts_the_backend_cannot_reach(ops, container):
    """DOCKER_HOST as the docker CLI reads it: tcp:// with nothing listening is the connect's
    errno; a scheme the backend does not speak, or a malformed host, is EINVAL with a
    sentence naming it, before anything is tried."""
    r = ops(env={**os.environ, "DOCKER_HOST": "tcp://127.0.0.1:1"})("new", container=container)
    assert r["rc"] == -errno.ECONNREFUSED
    assert r["message"] == ("cannot reach the Docker engine at tcp://127.0.0.1:1: "
                            "Connection refused")
    for host, why in [
            ("npipe:////./pipe/docker_engine", "is not one the Docker backend can reach: it "
             "takes unix:///PATH, tcp://HOST:PORT and ssh://[USER@]HOST[:PORT]"),
            ("tcp://127.0.0.1:99999", "is not tcp://HOST:PORT"),
            ("tcp://h:1/some/path", "has a path; the Docker backend takes tcp://HOST:PORT"),
            ("ssh://u:secret@h", "holds a password: a plain-text password is not supported "
             "(use ssh's keys or agent)"),
            ("ssh://-oProxyCommand=x", "is not ssh://[USER@]HOST[:PORT][/SOCKET]"),
            ("unix://relative.sock", "does not name an absolute socket path (unix:///PATH)")]:
        r = ops(env={**os.environ, "DOCKER_HOST": host})("new", container=container)
        assert r["rc"] == EINVAL, host
        assert r["message"] == f"the Docker host '{host}' {why}"


def test_no_such_container(ops):
    name = f"maf-docker-test-absent-{uuid.uuid4().hex[:8]}"
    r = ops()("new", container=name)
    assert r["rc"] == ENOENT
    assert r["message"] == (f"there is no container '{name}' on the Docker engine at "
                            f"{engine_socket()}")


def test_a_stopped_container(ops, fresh_container):
    docker("stop", "-t", "0", fresh_container)
    r = ops()("new", container=fresh_container)
    assert r["rc"] == EIO
    assert r["message"] == f"the container '{fresh_container}' is not running (exited)"


def test_a_container_stopped_under_the_backend(ops, fresh_container):
    o = ops()
    assert o("new", container=fresh_container)["rc"] == 0
    docker("stop", "-t", "0", fresh_container)
    r = o("exec", argv=["/hello"], timeout_ms=30000, out_cap=100)
    assert r["rc"] == EIO
    # One sentence for dockerd's "Container ID is not running" and Podman's "can only
    # create exec sessions on running containers: container state improper".
    assert r["message"] == (f"running /hello in the container '{fresh_container}' failed: "
                            f"the container is not running")


def test_a_container_removed_under_the_backend(ops, fresh_container):
    o = ops()
    assert o("new", container=fresh_container)["rc"] == 0
    docker("rm", "-f", fresh_container)
    gone = (f"there is no container '{fresh_container}' on the Docker engine at "
            f"{engine_socket()}")
    for op, kw in (("exec", {"argv": ["/hello"], "timeout_ms": 30000, "out_cap": 10}),
                   ("read", {"path": "/hello", "cap": 10}),
                   ("stat", {"path": "/hello"}),
                   ("write", {"path": "/tmp/f", "hex": "00"})):
        r = o(op, **kw)
        assert (r["rc"], r["message"]) == (ENOENT, gone), op


def test_an_engine_error_carries_the_engines_message(backend, container, tmpdir_in):
    assert backend("write", path=f"{tmpdir_in}/file", hex="00")["rc"] == 0
    bad = f"{tmpdir_in}/file/below"
    r = backend("read", path=bad, cap=10)
    if engine_is_podman():
        # Podman answers a path below a file as absent (404, "no such file or directory"),
        # and says so to a write alone.
        assert (r["rc"], r["status"]) == (0, "absent"), r
        assert backend("stat", path=bad) == {"exists": False, "size": 0, "type": "none",
                                             "rc": 0, "message": ""}
        r = backend("write", path=f"{bad}/deeper", hex="00")
        assert r["rc"] == EIO
        assert r["message"].startswith(f"writing {bad}/deeper into the container "
                                       f"'{container}' failed: ")
        assert r["message"].endswith("not a directory")
        return
    assert r["rc"] == EIO
    assert r["message"].startswith(f"reading {bad} in the container '{container}' failed: ")
    assert r["message"].endswith(f"{bad}: not a directory")
    # A HEAD has no body: the message comes from a GET of the same path.
    r = backend("stat", path=bad)
    assert r["rc"] == EIO
    assert r["message"].startswith(f"looking at {bad} in the container '{container}' "
                                   f"failed: ")
    assert r["message"].endswith(f"{bad}: not a directory")
    r = backend("write", path=f"{bad}/deeper", hex="00")
    assert r["rc"] == EIO
    assert r["message"].startswith(f"writing {bad}/deeper into the container '{container}' "
                                   f"failed: ")
    assert r["message"].endswith("not a directory")
