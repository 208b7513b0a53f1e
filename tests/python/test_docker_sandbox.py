"""mafhost.docker.DockerSandbox against the real Docker engine: exec, the files, the stream,
mkdtemp and the engine's errors, in containers of maf-launch/python-noshell (python3, no
shell) with --network none, removed at the end. Without a reachable engine those tests are
skipped, unless REQUIRE_DOCKER=1: then they fail. The HTTP framings and a silent engine are
tried against a fake engine on a socket of the test's own."""
import asyncio
import errno
import os
import time
import uuid

import pytest

from conftest import images_support
from mafhost.docker import DockerSandbox
from mafhost.errors import BackendError, ConfigError, FileTooLarge

IMAGE = f"{os.environ.get('MAF_IMAGE_PREFIX', 'maf-launch')}/python-noshell"
EIO, ENOENT = -errno.EIO, -errno.ENOENT


images = images_support()
engine, docker = images.engine, images.docker  # the fixture, and `docker ARGS`


def engine_socket():
    host = os.environ.get("DOCKER_HOST", "")
    return host[len("unix://"):] if host.startswith("unix://") else "/var/run/docker.sock"


def start_container():
    name = f"maf-dockersb-test-{uuid.uuid4().hex[:12]}"
    docker("run", "-d", "--name", name, "--network", "none", IMAGE)
    return name


@pytest.fixture(scope="module")
def container(engine):
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail(f"the image {IMAGE} is not built (run make images)", pytrace=False)
    name = start_container()
    yield name
    docker("rm", "-f", name, check=False)


@pytest.fixture
def fresh_container(container):
    """A container of its own, for a test that stops or removes it."""
    name = start_container()
    yield name
    docker("rm", "-f", name, check=False)


def run(container, body):
    """asyncio.run of body(sandbox), in a sandbox checked and closed around it."""
    async def main():
        async with DockerSandbox(container) as sb:
            return await body(sb)
    return asyncio.run(main())


def py(source):
    return ["python3", "-c", source]


# ---- exec --------------------------------------------------------------------------------

def test_exec_argv_output_and_exit_code(container):
    async def body(sb):
        r = await sb.exec(py("import sys; print('x'); print('e', file=sys.stderr); "
                             "sys.exit(7)"))
        assert (r.stdout, r.stderr, r.exit_code) == ("x\n", "e\n", 7)
        # One word each, never a shell line: there is no shell in the image anyway.
        r = await sb.exec(py("import sys; print(sys.argv[1:])") + ["a b", "; exit 3"])
        assert (r.stdout, r.exit_code) == ("['a b', '; exit 3']\n", 0)
        # Invalid UTF-8 is replaced, not an error.
        r = await sb.exec(py("import sys; sys.stdout.buffer.write(b'\\xff!')"))
        assert r.stdout == "\ufffd!"
    run(container, body)


def test_exec_of_a_command_that_cannot_start(container):
    async def body(sb):
        for command, why in ((["/no-such-command"], "no such file or directory"),
                             ("echo hi", "no such file or directory"),  # no /bin/sh
                             (["/etc/passwd"], "permission denied")):
            with pytest.raises(BackendError) as e:
                await sb.exec(command)
            argv0 = command[0] if isinstance(command, list) else "/bin/sh"
            assert e.value.code == EIO
            assert str(e.value).startswith(f"the Docker engine could not start {argv0} in "
                                           f"the container '{container}': ")
            assert why in str(e.value)
    run(container, body)


def test_exec_working_directory(container):
    async def body(sb):
        r = await sb.exec(py("import os; print(os.getcwd())"), working_directory="/tmp")
        assert (r.stdout, r.exit_code) == ("/tmp\n", 0)
        with pytest.raises(BackendError) as e:
            await sb.exec(py("pass"), working_directory="/no/such/dir")
        assert "/no/such/dir" in str(e.value)
    run(container, body)


def test_exec_timeout_keeps_what_came(container):
    async def body(sb):
        t0 = time.monotonic()
        r = await sb.exec(py("import sys, time; print('early', flush=True); "
                             "print('err', file=sys.stderr, flush=True); time.sleep(60)"),
                          timeout=1.5)
        assert time.monotonic() - t0 < 10
        assert (r.stdout, r.stderr, r.exit_code) == ("early\n", "err\n", -1)
        # The next exec is not held up by the one still running in the container.
        assert (await sb.exec(py("print(1)"), timeout=30)).stdout == "1\n"
    run(container, body)


def test_exec_in_a_container_stopped_under_it(fresh_container):
    async def body(sb):
        docker("stop", "-t", "0", fresh_container)
        with pytest.raises(BackendError) as e:
            await sb.exec(py("pass"))
        assert e.value.code == EIO
        # The library's sentence, for dockerd's words and Podman's alike.
        assert str(e.value) == (f"running python3 in the container '{fresh_container}' "
                                f"failed: the container is not running")
    run(fresh_container, body)


# ---- files -------------------------------------------------------------------------------

def test_write_makes_parents_and_reads_back(container):
    async def body(sb):
        d = await sb.mkdtemp()
        data = bytes(range(256)) * 3 + b"\x00end"
        await sb.write_file(f"{d}/a/b/c/file.bin", data)
        assert await sb.read_file(f"{d}/a/b/c/file.bin") == data
        assert (await sb.stat_file(f"{d}/a/b")).kind == "directory"
        # A str is UTF-8; a path is relative to working_directory.
        await sb.write_file("a/text", "héllo\n", working_directory=d)
        assert await sb.read_file(f"{d}/a/text") == "héllo\n".encode()
        assert await sb.read_file("text", working_directory=f"{d}/a") == "héllo\n".encode()
        # Written again: replaced whole, shorter. An empty file is a file.
        await sb.write_file(f"{d}/a/text", b"short")
        assert await sb.read_file(f"{d}/a/text") == b"short"
        await sb.write_file(f"{d}/empty", b"")
        assert await sb.read_file(f"{d}/empty", max_bytes=0) == b""
        # Owner 0:0, mode 0644; parents 0755.
        r = await sb.exec(py(f"import os\nfor p in ('{d}/a/b/c/file.bin', '{d}/a/b'):\n"
                             f"    s = os.stat(p); print(oct(s.st_mode & 0o7777), s.st_uid, "
                             f"s.st_gid)"))
        assert r.stdout == "0o644 0 0\n0o755 0 0\n"
    run(container, body)


def test_a_large_binary_file_whole(container):
    big = os.urandom(3 << 20)

    async def body(sb):
        d = await sb.mkdtemp()
        await sb.write_file(f"{d}/big", big)
        assert (await sb.stat_file(f"{d}/big")).size_bytes == len(big)
        assert await sb.read_file(f"{d}/big") == big
        assert await sb.read_file(f"{d}/big", max_bytes=len(big)) == big
    run(container, body)


def test_read_refusals(container):
    async def body(sb):
        d = await sb.mkdtemp()
        r = await sb.exec(py(f"import os; os.symlink('/etc/passwd', '{d}/link'); "
                             f"os.mkfifo('{d}/fifo')"))
        assert r.exit_code == 0, r.stderr
        for absent in (f"{d}/nothing", f"{d}/no/such/dir/file"):
            with pytest.raises(FileNotFoundError) as e:
                await sb.read_file(absent)
            assert e.value.filename == absent
        with pytest.raises(IsADirectoryError):
            await sb.read_file(d)
        with pytest.raises(OSError) as e:
            await sb.read_file(f"{d}/link")
        assert e.value.errno == errno.ELOOP
        with pytest.raises(OSError) as e:
            await sb.read_file(f"{d}/fifo")
        assert e.value.errno == errno.EINVAL
        # A directory is refused at the engine's header, before its tar: one request, and
        # the stat that tells what it is.
        before = sb.requests
        with pytest.raises(IsADirectoryError):
            await sb.read_file("/proc")
        assert sb.requests == before + 2
    run(container, body)


def test_read_past_max_bytes(container):
    async def body(sb):
        d = await sb.mkdtemp()
        await sb.write_file(f"{d}/f", b"x" * 5000)
        with pytest.raises(FileTooLarge) as e:
            await sb.read_file(f"{d}/f", max_bytes=4999)
        assert e.value.size == 5000
        assert await sb.read_file(f"{d}/f", max_bytes=5000) == b"x" * 5000
        # Refused before the data comes: a file of 64 MiB costs no more than a small one.
        await sb.exec(py(f"open('{d}/huge', 'wb').truncate(64 << 20)"))
        t0 = time.monotonic()
        with pytest.raises(FileTooLarge) as e:
            await sb.read_file(f"{d}/huge", max_bytes=1 << 20)
        assert e.value.size == 64 << 20
        assert time.monotonic() - t0 < 5
    run(container, body)


def test_stat_kinds_and_sizes(container):
    async def body(sb):
        d = await sb.mkdtemp()
        await sb.write_file(f"{d}/f", b"12345")
        await sb.exec(py(f"import os; os.symlink('/usr/local/bin/maf-launch', '{d}/l'); "
                         f"os.symlink('/nowhere', '{d}/dangling'); os.mkfifo('{d}/p')"))
        st = {n: await sb.stat_file(n, working_directory=d)
              for n in ("f", "l", "dangling", "p", "absent", "no/such/absent")}
        assert (st["f"].kind, st["f"].size_bytes) == ("file", 5)
        # Never followed: the link itself, its size its target's length.
        assert (st["l"].kind, st["l"].size_bytes) == ("symlink", len("/usr/local/bin/maf-launch"))
        assert (st["dangling"].kind, st["dangling"].size_bytes) == ("symlink", 8)
        assert st["p"].kind == "other"
        assert st["absent"] is None and st["no/such/absent"] is None
        assert (await sb.stat_file(d)).kind == "directory"
    run(container, body)


def test_write_never_replaces_a_directory(container):
    async def body(sb):
        d = await sb.mkdtemp()
        await sb.write_file(f"{d}/dir/inside", b"1")
        with pytest.raises(BackendError) as e:
            await sb.write_file(f"{d}/dir", b"2")
        assert e.value.code == EIO
        assert str(e.value).startswith(f"writing {d}/dir into the container '{container}' "
                                       f"failed: ")
        assert "cannot overwrite directory" in str(e.value)
        assert await sb.read_file(f"{d}/dir/inside") == b"1"
    run(container, body)


def test_an_engine_error_carries_the_engines_message(container):
    async def body(sb):
        d = await sb.mkdtemp()
        await sb.write_file(f"{d}/file", b"0")
        bad = f"{d}/file/below"
        for op, what in ((sb.read_file, f"reading {bad} in"),
                         (sb.stat_file, f"looking at {bad} in")):
            with pytest.raises(BackendError) as e:
                await op(bad)
            assert e.value.code == EIO
            assert str(e.value).startswith(f"{what} the container '{container}' failed: ")
            assert str(e.value).endswith(f"{bad}: not a directory")
    run(container, body)


def test_bad_paths_are_refused_before_the_engine(container):
    async def body(sb):
        before = sb.requests
        for path, wd in (("/a/../etc/passwd", "/"), ("/", "/"), ("/tmp/dir/", "/"),
                         ("f", "relative")):
            with pytest.raises(ConfigError):
                await sb.read_file(path, working_directory=wd)
            with pytest.raises(ConfigError):
                await sb.write_file(path, b"", working_directory=wd)
        assert sb.requests == before
    run(container, body)


def test_mkdtemp(container):
    async def body(sb):
        a, b = await sb.mkdtemp(), await sb.mkdtemp(prefix="/tmp/other/x-")
        assert a != b
        assert a.startswith("/tmp/mafhost-") and len(a) == len("/tmp/mafhost-") + 6
        assert a[-6:].isalnum() and a[-6:].isascii()
        assert b.startswith("/tmp/other/x-")
        r = await sb.exec(py(f"import os; s = os.stat('{a}'); "
                             f"print(oct(s.st_mode), s.st_uid, s.st_gid)"))
        assert r.stdout == "0o40700 0 0\n"
    run(container, body)


def test_requests_are_counted(container):
    async def body(sb):
        d = await sb.mkdtemp()
        n = sb.requests
        await sb.stat_file(d)
        await sb.write_file(f"{d}/f", b"0")
        await sb.read_file(f"{d}/f")
        assert sb.requests == n + 3
        # A stat of an absent path: the HEAD, and the container's inspection.
        await sb.stat_file(f"{d}/absent")
        assert sb.requests == n + 5
        # An exec: create, start, and one inspection or more.
        await sb.exec(py("pass"))
        assert sb.requests >= n + 8
    run(container, body)


def test_concurrent_operations(container):
    async def one(sb, d, i):
        r = await sb.exec(py(f"print({i} * 2)"), timeout=120)
        assert (r.stdout, r.exit_code) == (f"{i * 2}\n", 0)
        await sb.write_file(f"{d}/{i}/out", r.stdout)
        return await sb.read_file(f"{d}/{i}/out")

    async def body(sb):
        d = await sb.mkdtemp()
        got = await asyncio.gather(*(one(sb, d, i) for i in range(50)))
        assert got == [f"{i * 2}\n".encode() for i in range(50)]
    run(container, body)


# ---- the stream --------------------------------------------------------------------------

ECHO = """
import sys
sys.stderr.write('echo ready\\n'); sys.stderr.flush()
while True:
    line = sys.stdin.readline()
    if line in ('', 'quit\\n'):
        break
    sys.stdout.write(line.upper()); sys.stdout.flush()
print('bye')
"""


async def read_n(stream, n):
    got = b""
    while len(got) < n:
        data = await asyncio.wait_for(stream.read(65536), 30)
        assert data, got
        got += data
    return got


def test_stream_round_trip_and_end(container):
    async def body(sb):
        s = await sb.open_stream(py(ECHO))
        await s.write(b"hello\n")
        assert await read_n(s, 6) == b"HELLO\n"
        # Reads of at most max_bytes; a read cancelled loses nothing.
        await s.write(b"abcdef\n")
        assert await s.read(3) == b"ABC"
        assert await read_n(s, 4) == b"DEF\n"
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(s.read(100), 0.3)
        await s.write(b"x" * 100000 + b"\n")
        assert await read_n(s, 100001) == b"X" * 100000 + b"\n"
        assert s.stderr_text == ""
        # The command ends: its last words, then the end (its stderr in the sentence), and
        # writes fail.
        await s.write(b"quit\n")
        assert await read_n(s, 4) == b"bye\n"
        assert await asyncio.wait_for(s.read(100), 30) == b""
        assert "echo ready" in s.stderr_text
        with pytest.raises(BrokenPipeError):
            await s.write(b"more\n")
        await s.close()
        await s.close()
    run(container, body)


def test_stream_close_ends_stdin(container):
    async def body(sb):
        s = await sb.open_stream(py("import sys; sys.stdin.read()"))
        pending = asyncio.ensure_future(s.read(10))
        t0 = time.monotonic()
        await s.close()
        # The command read its stdin's end and exited: no wait of the whole second.
        assert time.monotonic() - t0 < 0.9
        assert await asyncio.wait_for(pending, 5) == b""
    run(container, body)


def test_stream_of_a_command_that_cannot_start(container):
    async def body(sb):
        # The engine has upgraded the connection before it tries: its reason comes as the
        # command's stdout, then the end.
        s = await sb.open_stream(["/no-such-command"])
        got = b""
        while data := await asyncio.wait_for(s.read(65536), 30):
            got += data
        assert b"no such file or directory" in got
        await s.close()
    run(container, body)


def test_exec_input_is_the_commands_stdin(container):
    async def body(sb):
        n = sb.requests
        r = await sb.exec_input(py("import sys; d = sys.stdin.buffer.read(); "
                                   "print(len(d), d[:5]); print('e', file=sys.stderr); "
                                   "sys.exit(4)"), b"hello" * 30000)
        assert (r.stdout, r.stderr, r.exit_code) == ("150000 b'hello'\n", "e\n", 4)
        assert sb.requests - n >= 3      # create, start, one inspection or more
        # Not read at all, or empty.
        r = await sb.exec_input(py("pass"), b"x" * 200000)
        assert r.exit_code == 0
        r = await sb.exec_input(py("import sys; print(repr(sys.stdin.read()))"), b"",
                                working_directory="/tmp")
        assert (r.stdout, r.exit_code) == ("''\n", 0)
        with pytest.raises(BackendError, match="could not start /no-such-command") as e:
            await sb.exec_input(["/no-such-command"], b"x")
        assert e.value.code == EIO
        r = await sb.exec_input(py("import sys, time; sys.stdin.read(); print('up', "
                                   "flush=True); time.sleep(30)"), b"x", timeout=2)
        assert (r.stdout, r.exit_code) == ("up\n", -1)
    run(container, body)


def test_closing_the_sandbox_closes_its_streams(container):
    async def body():
        async with DockerSandbox(container) as sb:
            s = await sb.open_stream(py("import sys; sys.stdin.read()"))
        assert await asyncio.wait_for(s.read(10), 5) == b""
        with pytest.raises(BrokenPipeError):
            await s.write(b"x")
    asyncio.run(body())


# ---- the engine and the container --------------------------------------------------------

def test_no_such_container(container):
    name = f"maf-dockersb-absent-{uuid.uuid4().hex[:8]}"
    gone = f"there is no container '{name}' on the Docker engine at {engine_socket()}"

    async def body():
        sb = DockerSandbox(name)
        with pytest.raises(BackendError) as e:
            await sb.check()
        assert (e.value.code, str(e.value)) == (ENOENT, gone)
        for op in (sb.exec(py("pass")), sb.read_file("/etc/passwd"),
                   sb.stat_file("/etc/passwd"), sb.write_file("/tmp/f", b"0"),
                   sb.open_stream(py("pass"))):
            with pytest.raises(BackendError) as e:
                await op
            assert (e.value.code, str(e.value)) == (ENOENT, gone)
    asyncio.run(body())


def test_a_container_removed_under_it(fresh_container):
    async def body(sb):
        docker("rm", "-f", fresh_container)
        gone = (f"there is no container '{fresh_container}' on the Docker engine at "
                f"{engine_socket()}")
        for op in (sb.exec(py("pass")), sb.read_file("/etc/passwd"),
                   sb.stat_file("/etc/passwd")):
            with pytest.raises(BackendError) as e:
                await op
            assert (e.value.code, str(e.value)) == (ENOENT, gone)
    run(fresh_container, body)


def test_a_stopped_container(fresh_container):
    docker("stop", "-t", "0", fresh_container)
    with pytest.raises(BackendError) as e:
        asyncio.run(DockerSandbox(fresh_container).check())
    assert e.value.code == EIO
    assert str(e.value) == f"the container '{fresh_container}' is not running (exited)"


def test_docker_host(container, monkeypatch, tmp_path):
    # tcp:// is reached as the docker CLI reaches it (tests/engines: TLS, ssh, contexts);
    # nothing listens on port 1. A scheme the backend does not speak is a ConfigError.
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    with pytest.raises(BackendError) as e:
        asyncio.run(DockerSandbox(container).check())
    assert str(e.value) == "cannot reach the Docker engine at tcp://127.0.0.1:1: Connection refused"
    monkeypatch.setenv("DOCKER_HOST", "npipe:////./pipe/docker_engine")
    with pytest.raises(ConfigError) as e:
        asyncio.run(DockerSandbox(container).check())
    assert str(e.value) == ("the Docker host 'npipe:////./pipe/docker_engine' is not one the "
                            "Docker backend can reach: it takes unix:///PATH, tcp://HOST:PORT "
                            "and ssh://[USER@]HOST[:PORT]")
    # A socket given wins over DOCKER_HOST.
    assert DockerSandbox(container, socket_path="/s").socket_path == "/s"
    asyncio.run(DockerSandbox(container, socket_path=engine_socket()).check())
    sock = tmp_path / "no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    sb = DockerSandbox(container)
    with pytest.raises(BackendError) as e:
        asyncio.run(sb.check())
    assert (e.value.code, str(e.value)) == (
        ENOENT, f"cannot reach the Docker engine at {sock}: No such file or directory")
    assert sb.requests == 1
    monkeypatch.delenv("DOCKER_HOST")
    # None: the library's choice, made when the engine is first asked.
    assert DockerSandbox(container).socket_path is None
    assert DockerSandbox(container).launcher_path == "/usr/local/bin/maf-launch"


# ---- HTTP, against a fake engine (no Docker needed) -----------------------------------------

async def fake_engine(path, answer):
    """A unix socket server at path that reads one request head and writes answer (bytes),
    or never answers when answer is None."""
    async def serve(reader, writer):
        try:
            await reader.readuntil(b"\r\n\r\n")
            if answer is None:
                await asyncio.sleep(3600)
            writer.write(answer)
            await writer.drain()
        finally:
            writer.close()
    return await asyncio.start_unix_server(serve, path)


INSPECT = b'{"Id":"abc123","State":{"Running":true,"Status":"running"}}'


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(INSPECT), INSPECT),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\n%s\r\n%x\r\n%s\r\n"
    b"0\r\nX-Trailer: 1\r\n\r\n" % (INSPECT[:5], len(INSPECT) - 5, INSPECT[5:]),
    b"HTTP/1.0 200 OK\r\n\r\n%s" % INSPECT,
])
def test_answers_by_length_in_chunks_or_to_the_end(tmp_path, answer):
    async def body():
        server = await fake_engine(str(tmp_path / "e.sock"), answer)
        async with server:
            sb = DockerSandbox("c", socket_path=str(tmp_path / "e.sock"))
            await sb.check()
            assert sb.requests == 1
    asyncio.run(body())


def test_an_answer_cut_short_or_not_http(tmp_path):
    async def body():
        for answer, code in ((b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", EIO),
                             (b"SSH-2.0-OpenSSH\r\n\r\n", EIO)):
            sock = str(tmp_path / f"e{code}.sock")
            async with await fake_engine(sock, answer):
                with pytest.raises(BackendError) as e:
                    await DockerSandbox("c", socket_path=sock).check()
                assert e.value.code == code
    asyncio.run(body())


def test_a_silent_engine_times_out(tmp_path, monkeypatch):
    import mafhost.docker
    monkeypatch.setattr(mafhost.docker, "REQUEST_TIMEOUT", 0.3)
    sock = str(tmp_path / "e.sock")

    async def body():
        async with await fake_engine(sock, None):
            with pytest.raises(BackendError) as e:
                await DockerSandbox("c", socket_path=sock).check()
            assert e.value.code == -errno.ETIMEDOUT
            assert str(e.value) == (f"looking up the container 'c' failed: the Docker engine "
                                    f"at {sock} did not answer within 300 ms")
    asyncio.run(body())
