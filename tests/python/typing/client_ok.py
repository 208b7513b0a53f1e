"""A host as its users write it, checked by mypy --strict against mafhost's hints."""
import asyncio

import mafhost


def add(a: int, b: int) -> int:
    return a + b


async def main() -> int:
    sb = mafhost.LocalSandbox()
    try:
        r = await mafhost.run(sb, "print(1)\n", tools=[add], timeout=30.0, transport="stream",
                              egress="closed", seccomp="default", landlock="auto")
    except mafhost.RunTimeout as e:
        assert isinstance(e, TimeoutError)
        return 124
    except mafhost.BackendError as e:
        assert isinstance(e, OSError)
        return 1
    calls: int = r.calls
    out: str = r.output
    print(out, calls, r.record.exit_code if r.record else None)
    return r.exit_code


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
