"""Sandbox objects written to maf-sandbox's sandbox surface alone, knowing nothing of
mafhost (nothing here imports it): what a maf-sandbox user already has.

PlainLocalSandbox: asyncio subprocesses and plain file calls on this machine
(PlainLocalSandboxWithInput: with exec_input too).
DockerCliSandbox: the docker command, as a Docker sandbox of maf-sandbox's drives a
container: `docker exec` for commands, `docker cp` (tar on stdin and stdout) for files."""
import asyncio
import io
import os
import posixpath
import stat
import tarfile
from types import SimpleNamespace


class Result:
    def __init__(self, stdout, stderr, exit_code):
        self.stdout, self.stderr, self.exit_code = stdout, stderr, exit_code


def _join(path, working_directory):
    return posixpath.normpath(posixpath.join(working_directory, path))


async def _run(argv, stdin=None, timeout=None, cwd=None):
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.PIPE if stdin is not None else
        asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        return out, err + b"timed out\n", -1
    return out, err, proc.returncode


class PlainLocalSandbox:
    def __init__(self):
        self.calls = []

    async def exec(self, command, *, working_directory, timeout):
        self.calls.append("exec")
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        out, err, code = await _run(argv, timeout=timeout, cwd=working_directory)
        return Result(out.decode(errors="replace"), err.decode(errors="replace"), code)

    async def write_file(self, path, content, *, working_directory):
        self.calls.append("write_file")
        p = _join(path, working_directory)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)

    async def read_file(self, path, *, working_directory, max_bytes):
        self.calls.append("read_file")
        with open(_join(path, working_directory), "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"{path} is larger than {max_bytes} bytes")
        return data

    async def stat_file(self, path, *, working_directory):
        self.calls.append("stat_file")
        try:
            s = os.lstat(_join(path, working_directory))
        except FileNotFoundError:
            return None
        kind = ("file" if stat.S_ISREG(s.st_mode) else "directory" if stat.S_ISDIR(s.st_mode)
                else "symlink" if stat.S_ISLNK(s.st_mode) else "other")
        return SimpleNamespace(kind=kind, size_bytes=s.st_size)


class ExecRaises(PlainLocalSandbox):
    """Its exec raises, as a sandbox's whose control plane has gone away."""

    async def exec(self, command, *, working_directory, timeout):
        raise ConnectionError("the sandbox's control plane went away")


class PlainLocalSandboxWithInput(PlainLocalSandbox):
    """The surface and an exec that takes bytes on its stdin (exec_input, looked up by
    name)."""

    async def exec_input(self, command, data, *, working_directory, timeout):
        self.calls.append("exec_input")
        out, err, code = await _run(list(command), stdin=bytes(data), timeout=timeout,
                                    cwd=working_directory)
        return Result(out.decode(errors="replace"), err.decode(errors="replace"), code)


class ReadsGarbage(PlainLocalSandbox):
    """Its read_file of a request answers something that is not bytes, as a sandbox with a
    bug would."""

    async def read_file(self, path, *, working_directory, max_bytes):
        if "host_tool_calls" in path:
            return 12345
        return await super().read_file(path, working_directory=working_directory,
                                        max_bytes=max_bytes)


class DockerCliSandbox:
    def __init__(self, container):
        self.container = container
        self.calls = []

    async def exec(self, command, *, working_directory, timeout):
        self.calls.append("exec")
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        out, err, code = await _run(["docker", "exec", "-w", working_directory,
                                     self.container, *argv], timeout=timeout)
        return Result(out.decode(errors="replace"), err.decode(errors="replace"), code)

    async def write_file(self, path, content, *, working_directory):
        self.calls.append("write_file")
        p = _join(path, working_directory).lstrip("/")
        data = content.encode() if isinstance(content, str) else content
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            parts = p.split("/")
            for i in range(1, len(parts)):  # the parents, made where missing
                d = tarfile.TarInfo("/".join(parts[:i]))
                d.type, d.mode = tarfile.DIRTYPE, 0o755
                t.addfile(d)
            info = tarfile.TarInfo(p)
            info.size, info.mode = len(data), 0o644
            t.addfile(info, io.BytesIO(data))
        _, err, code = await _run(["docker", "cp", "-", f"{self.container}:/"],
                                  stdin=buf.getvalue())
        if code != 0:
            raise OSError(f"docker cp to {p} failed: {err.decode(errors='replace').strip()}")

    async def _tar_of(self, path, working_directory):
        out, err, code = await _run(["docker", "cp",
                                     f"{self.container}:{_join(path, working_directory)}",
                                     "-"])
        if code != 0:
            if b"No such container:path" in err or b"Could not find the file" in err:
                return None
            raise OSError(f"docker cp of {path} failed: {err.decode(errors='replace').strip()}")
        t = tarfile.open(fileobj=io.BytesIO(out))
        return t, t.next()

    async def read_file(self, path, *, working_directory, max_bytes):
        self.calls.append("read_file")
        got = await self._tar_of(path, working_directory)
        if got is None:
            raise FileNotFoundError(path)
        t, member = got
        if member.size > max_bytes:
            raise ValueError(f"{path} is larger than {max_bytes} bytes")
        return t.extractfile(member).read()

    async def stat_file(self, path, *, working_directory):
        self.calls.append("stat_file")
        got = await self._tar_of(path, working_directory)
        if got is None:
            return None
        m = got[1]
        kind = ("file" if m.isreg() else "directory" if m.isdir() else
                "symlink" if m.issym() else "other")
        return SimpleNamespace(kind=kind, size_bytes=m.size)
