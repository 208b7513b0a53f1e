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


def test_runs_wait_on_the_loop_with_no_thread_of_their_own(local):
    """200 runs with streams at once, their tools inline: every call is answered, and the
    process's threads while they wait are as many as with none (the library's runs are
    watched by the loop: one descriptor each, no thread)."""
    import resource
    import threading

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = 200
    if hard != resource.RLIM_INFINITY and hard < 8 * n:
        import pytest
        pytest.skip(f"RLIMIT_NOFILE's hard limit ({hard}) is below {8 * n}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 8 * n), hard))
    tool = mafhost.Tool(add, name="add", inline=True)
    threads_before = threading.active_count()
    seen = []

    async def sample():
        while True:
            seen.append(threading.active_count())
            await asyncio.sleep(0.05)

    async def main():
        s = asyncio.ensure_future(sample())
        try:
            return await asyncio.gather(*(mafhost.run(local, programs.calls(3), tools=[tool],
                                                      timeout=240) for _ in range(n)))
        finally:
            s.cancel()

    try:
        results = arun(main(), timeout=300)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [r.calls for r in results] == [3] * n
    assert all(r.ok and r.transport == "stream" for r in results)
    assert max(seen) <= threads_before, (threads_before, max(seen))
