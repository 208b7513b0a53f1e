"""This machine as a maf-sandbox Sandbox of the current line, for the program channel: exec
(an argv as it is, a string through sh -c, as upstream's Docker backend does), write_file,
read_file (refused past max_bytes, never cut), stat_file, remove and reclaim, on paths from
the working directory given, relative ones below a storage base of its own. maf-sandbox ships
no sandbox that executes anything; this is the smallest one that does, written against its
protocol (maf_sandbox.Sandbox)."""
import asyncio
import os
import posixpath
import shutil
import stat
import uuid

from maf_sandbox import EntryKind, ExecResult, SandboxEntry, SandboxTransferCapExceeded
from maf_sandbox.paths import resolve_guest_working_directory


class LocalSandbox:
    def __init__(self, base):
        self.base = str(base)
        os.makedirs(self.base, exist_ok=True)
        self.instance_id = uuid.uuid4().hex
        self.commands = []

    def _dir(self, working_directory):
        return resolve_guest_working_directory(working_directory, self.base)

    def _full(self, path, working_directory):
        return posixpath.normpath(posixpath.join(self._dir(working_directory), path))

    async def exec(self, command, *, working_directory, timeout):
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        self.commands.append(argv)
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=self._dir(working_directory), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        return ExecResult(stdout_bytes=out, stderr_bytes=err, exit_code=proc.returncode)

    async def write_file(self, path, content, *, working_directory):
        full = self._full(path, working_directory)
        os.makedirs(posixpath.dirname(full), exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        with open(full, "wb") as f:
            f.write(data)

    async def read_file(self, path, *, working_directory, max_bytes):
        full = self._full(path, working_directory)
        with open(full, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path!r} is not a regular file")
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise SandboxTransferCapExceeded(
                f"{path!r} is over the {max_bytes} bytes the caller allowed")
        return data

    async def stat_file(self, path, *, working_directory):
        full = self._full(path, working_directory)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            kind, size = EntryKind.SYMLINK, None
        elif stat.S_ISDIR(st.st_mode):
            kind, size = EntryKind.DIRECTORY, None
        elif stat.S_ISREG(st.st_mode):
            kind, size = EntryKind.FILE, st.st_size
        else:
            kind, size = EntryKind.OTHER, None
        rel = posixpath.relpath(full, posixpath.normpath(self._dir(working_directory)))
        return SandboxEntry(path=rel, kind=kind, size_bytes=size)

    async def remove(self, path, *, working_directory, recursive=False):
        full = self._full(path, working_directory)
        if os.path.isdir(full) and not os.path.islink(full):
            if recursive:
                shutil.rmtree(full)
            else:
                os.rmdir(full)
        elif os.path.lexists(full):
            os.unlink(full)

    async def reclaim(self, directory, *, working_directory, timeout):
        full = self._full(directory, working_directory)
        if os.path.lexists(full):
            shutil.rmtree(full)
