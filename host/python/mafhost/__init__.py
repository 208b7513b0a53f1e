"""mafhost: serve the host-tool calls of programs run in a sandbox by maf-launch, from
asyncio, through libmafhost.

    import asyncio, mafhost

    def add(a: int, b: int) -> int:
        return a + b

    async def main():
        result = await mafhost.run(mafhost.LocalSandbox(), PROGRAM, tools=[add], timeout=30)
        print(result.exit_code, result.calls, result.output)

    asyncio.run(main())

The backend is any object with maf-sandbox's sandbox surface (see mafhost.sandbox), or one
of this package's: LocalSandbox (this machine) and DockerSandbox (a running container)."""
from . import _abi
from ._abi import Library, load, unload
from ._run import Event, ExitRecord, RunResult, run
from ._tools import Limits, Param, Tool, tool
from .errors import (BackendError, ConfigError, FileTooLarge, LaunchFailed, LibraryError,
                     MafhostError, Refusal, RunError, RunLost, RunTimeout)
from .docker import DockerSandbox
from .local import LocalSandbox
from .sandbox import ExecResult, FileEntry

__version__ = _abi.VERSION

__all__ = ["run", "Tool", "tool", "Param", "Limits", "RunResult", "ExitRecord", "Event",
           "LocalSandbox", "DockerSandbox", "ExecResult", "FileEntry", "Library", "load",
           "unload", "MafhostError", "LibraryError", "ConfigError", "RunError", "RunTimeout",
           "RunLost", "LaunchFailed", "BackendError", "Refusal", "FileTooLarge"]
