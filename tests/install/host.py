"""The ten-line host of the README, run by check.sh against an installed mafhost: it must
load the installed library (argv[3] is its directory) and serve one call."""
import asyncio
import os
import sys

import mafhost


def add(a: int, b: int) -> int:
    return a + b


async def main(launcher, program):
    sandbox = mafhost.LocalSandbox(launcher_path=launcher)
    result = await mafhost.run(sandbox, open(program).read(), tools=[add], timeout=30)
    print(result.output, end="")
    print("calls:", result.calls)


lib = os.path.realpath(mafhost.load().path)
if not lib.startswith(os.path.realpath(sys.argv[3]) + "/"):
    sys.exit(f"mafhost loaded {lib}, not the installed library")
asyncio.run(main(sys.argv[1], sys.argv[2]))
