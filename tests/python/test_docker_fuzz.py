"""DockerSandbox's readers of engine-sent bytes (the HTTP head, bodies by length, in chunks
or to the end, the exec's multiplexed stream, the path-stat header, the tar, the upgraded
stream), fed by a fake engine on a socket of the test's own with valid answers mutated at
random (a fixed seed: the same cases every run). Whatever the bytes, an operation ends in one
of the exceptions the surface documents (BackendError, an OSError, FileTooLarge), never in
another (an IndexError, a UnicodeDecodeError, ...), and never hangs. No Docker needed."""
import asyncio
import base64
import io
import json
import random
import struct
import tarfile

import pytest

from mafhost.docker import DockerSandbox
from mafhost.errors import BackendError, FileTooLarge

CASES = 400
ALLOWED = (BackendError, OSError, FileTooLarge)  # FileNotFoundError etc. are OSErrors


def _http(status, body, headers=(), chunked=False):
    head = [f"HTTP/1.1 {status} X"] + list(headers)
    if chunked:
        mid = len(body) // 2
        parts = [b for b in (body[:mid], body[mid:]) if b]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        head.append("Transfer-Encoding: chunked")
    else:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _path_stat(name, size, mode):
    return "X-Docker-Container-Path-Stat: " + base64.b64encode(json.dumps(
        {"name": name, "size": size, "mode": mode, "mtime": "2026-01-01T00:00:00Z",
         "linkTarget": ""}).encode()).decode()


def _tar(name, data):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _mux(*frames):
    return b"".join(struct.pack(">BxxxI", kind, len(data)) + data for kind, data in frames)


def answers(rng):
    """The engine's valid answer to each request, by what the request line holds."""
    data = bytes(rng.randrange(256) for _ in range(rng.choice((0, 5, 700))))
    chunked = rng.random() < 0.5
    return [
        ("/exec/e1/json", _http(200, b'{"Running":false,"ExitCode":3,"Pid":7}')),
        ("/json HTTP", _http(200, b'{"Id":"c1","State":{"Running":true,"Status":"running"}}',
                             chunked=chunked)),
        ("/exec HTTP", _http(201, b'{"Id":"e1"}')),
        ("/start HTTP", _http(200, _mux((1, b"out\n"), (2, b"err\n"), (1, data)),
                              ["Content-Type: application/vnd.docker.raw-stream"],
                              chunked=chunked)),
        ("HEAD ", _http(200, b"", [_path_stat("f", len(data), 420)]).replace(
            b"Content-Length: 0", b"Content-Length: %d" % len(data))),
        ("GET /v1.41/containers/c1/archive", _http(200, _tar("f", data),
                                                    [_path_stat("f", len(data), 420)],
                                                    chunked=chunked)),
        ("PUT ", _http(200, b"")),
    ]


def mutate(rng, b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        how = rng.randrange(5)
        at = rng.randrange(len(b) + 1)
        if how == 0 and b:
            b[min(at, len(b) - 1)] = rng.randrange(256)
        elif how == 1:
            del b[at:]
        elif how == 2:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif how == 3:
            b[at:at] = rng.choice((b"\r\n", b"\r\n\r\n", b"ffffffff\r\n", b"\x01\x00\x00\x00",
                                   b"Content-Length: 99999\r\n", b"\x00"))
        elif b:
            b[at:at + rng.randint(1, 16)] = b""
    return bytes(b)


async def one_case(rng, sock):
    table = answers(rng)
    victim = rng.randrange(len(table))

    async def serve(reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].decode()
            if "Content-Length:" in head.decode(errors="replace"):
                n = int(head.decode().split("Content-Length:")[1].split("\r\n")[0])
                await reader.readexactly(n)
            for i, (key, answer) in enumerate(table):
                if key in line or line.startswith(key):
                    writer.write(mutate(rng, answer) if i == victim else answer)
                    break
            else:
                writer.write(_http(404, b'{"message":"no such route"}'))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_unix_server(serve, sock)
    async with server:
        sb = DockerSandbox("c1", socket_path=sock)
        op = rng.randrange(5)
        try:
            if op == 0:
                await sb.check()
            elif op == 1:
                r = await sb.exec(["x"], timeout=5)
                assert isinstance(r.stdout, str) and isinstance(r.exit_code, int)
            elif op == 2:
                data = await sb.read_file("/f", max_bytes=rng.choice((3, 1 << 20)))
                assert isinstance(data, bytes)
            elif op == 3:
                await sb.stat_file("/f")
            else:
                await sb.write_file("/d/f", b"x")
        except ALLOWED:
            pass
        finally:
            await sb.close()


def test_mutated_engine_answers_end_in_documented_exceptions(tmp_path):
    rng = random.Random(20261201)
    sock = str(tmp_path / "engine.sock")

    async def main():
        for i in range(CASES):
            try:
                await asyncio.wait_for(one_case(rng, sock), 10)
            except asyncio.TimeoutError:
                pytest.fail(f"case {i} hung")

    asyncio.run(main())
