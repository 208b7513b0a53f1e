"""Programs the tests run in the sandbox, as Python source, and the tools they call."""
import asyncio


def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


async def aadd(a: int, b: int) -> int:
    """add, as a coroutine that gives the loop a turn first."""
    await asyncio.sleep(0.001)
    return a + b


CALLS = '''
import sys
from maf_host_tools import call, HostToolError
n = int(sys.argv[1]) if len(sys.argv) > 1 else {n}
total = 0
for i in range(n):
    total += call("add", a=i, b=1)
print("total", total)
'''


def calls(n):
    """A program making n calls of add(a=i, b=1) and printing their total."""
    return CALLS.format(n=n)


def total(n):
    return sum(i + 1 for i in range(n))


MIXED = '''
from maf_host_tools import call, HostToolError
print("sync", call("add", a=40, b=2))
print("async", call("slow_echo", text="hé"))
for name, kw in [("boom", {}), ("refuse", {}), ("add", {"a": "x", "b": 1}),
                 ("nope", {}), ("big", {}), ("not_json", {})]:
    try:
        call(name, **kw)
        print(name, "answered")
    except HostToolError as e:
        print(name, "refused:", e)
'''
