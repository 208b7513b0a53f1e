"""Many runs on one event loop."""
import asyncio

import mafhost
import programs
from programs import aadd, add
from conftest import LAUNCHER, arun
from foreign import PlainLocalSandbox


def test_20_runs_supervised_at_once_on_one_event_loop(local, run_base):
    foreign = PlainLocalSandbox()
    events = []

    async def one(i):
        # Run i makes i calls; every third is served by an object knowing nothing of
        # mafhost, the rest by the package's own local backend; sync and async tools.
        sb = foreign if i % 3 == 0 else local
        tool = mafhost.Tool(aadd if i % 2 else add, name="add")
        return await mafhost.run(sb, programs.calls(i), tools=[tool], timeout=120,
                                 launcher=str(LAUNCHER), limits=mafhost.Limits(max_calls=20),
                                 run_dir=str(run_base / f"c{i}") if sb is foreign else None,
                                 on_event=events.append)

    async def main():
        return await asyncio.gather(*(one(i) for i in range(1, 21)))

    results = arun(main(), timeout=300)
    for i, r in enumerate(results, 1):
        assert r.exit_code == 0, (i, r.output, r.errors)
        assert r.output == f"total {programs.total(i)}\n", (i, r.output)
        assert (r.calls, r.refusals) == (i, 0)
        assert r.transport == ("relay" if i % 3 == 0 else "stream")
    served = [e for e in events if e.kind == "call_served"]
    assert len(served) == sum(range(1, 21))
    by_run = {}
    for e in served:
        by_run[e.run_dir] = by_run.get(e.run_dir, 0) + 1
    assert sorted(by_run.values()) == list(range(1, 21))
    assert len({r.run_dir for r in results}) == 20
