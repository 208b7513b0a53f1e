"""What mypy must refuse: options outside their Literal, a result field that is not one."""
import mafhost


async def main() -> None:
    sb = mafhost.LocalSandbox()
    r = await mafhost.run(sb, "print(1)\n", transport="carrier-pigeon")
    await mafhost.run(sb, "print(1)\n", egress="wide")
    x: str = r.calls
    print(x)
