"""The hostile-guest session: one directory of its own (programs, hostile launchers, tool
logs, run directories), one container of maf-launch/python-noshell and one bubblewrap
sandbox, all removed at the end; and a pool that makes every selected test's run, several at once, from the start of the
session, so that the suite takes minutes while each run is still measured alone (its own
process, its own peak). A test waits for its run, then judges it.

Local cases need root (the local backend as its users run it, maf-launch the only
boundary), bubblewrap cases root and bwrap (to enter the sandbox); Docker cases an engine
that answers and the image (`make images`): skipped otherwise, unless REQUIRE_DOCKER=1,
which fails them."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import guest_lib as g

WORKERS = 6          # runs at once; most of a hostile run is waiting
HEAVY = 2            # of which runs that write without end (they take the CPUs)


class Pool:
    def __init__(self, env):
        self.env = env
        self.ex = ThreadPoolExecutor(WORKERS, thread_name_prefix="hostile-run")
        self.heavy = threading.Semaphore(HEAVY)
        self.futures = {}
        self.lock = threading.Lock()

    def _run(self, spec):
        if spec.heavy:
            with self.heavy:
                return g.run(self.env, spec)
        return g.run(self.env, spec)

    def submit(self, spec):
        with self.lock:
            if spec not in self.futures:
                self.futures[spec] = self.ex.submit(self._run, spec)
            return self.futures[spec]

    def result(self, spec):
        return self.submit(spec).result()

    def close(self):
        self.ex.shutdown(wait=True, cancel_futures=True)


def why_not(env, spec):
    """Why spec cannot run here, or None."""
    if spec.backend == "local" and not g.IS_ROOT:
        return "the local backend's hostile cases run as root, as its users run it"
    if spec.backend == "docker" and env.docker_why:
        return env.docker_why
    if spec.backend == "bwrap" and env.bwrap_why:
        return env.bwrap_why
    return None


_state = {}


@pytest.fixture(scope="session")
def pool(request):
    env = g.Env()
    p = Pool(env)
    _state["pool"] = p
    # Every selected test's run and its baseline, baselines first, then the runs.
    specs = [item.callspec.params["spec"] for item in request.session.items
             if hasattr(item, "callspec") and "spec" in item.callspec.params]
    for spec in [s.baseline() for s in specs] + specs:
        if why_not(env, spec) is None:
            p.submit(spec)
    yield p
    p.close()
    env.close()


@pytest.fixture
def outcome(pool, spec):
    """(the run's Result, its baseline's Result), or a skip (a failure under
    REQUIRE_DOCKER=1) where the run cannot be made here."""
    why = why_not(pool.env, spec)
    if why:
        if spec.backend == "docker" and g.REQUIRE_DOCKER:
            pytest.fail(f"REQUIRE_DOCKER=1, but {why}", pytrace=False)
        pytest.skip(why)
    base = pool.result(spec.baseline())
    res = pool.result(spec)
    # The harness itself: a benign run over the real launcher serves its one call.
    bp = g.came_back(base) + g.verdict(base)
    if base.report and (base.report.get("errors") or base.report.get("status") != "exited"):
        bp.append(f"the benign run did not end cleanly: {base.report}")
    bp += g.only_calls(base, {"genuine": g.GENUINE})
    if not bp and len(base.tool_calls) != 1:
        bp.append(f"the benign run's tool saw {base.tool_calls!r}, not one genuine call")
    if bp:
        pytest.fail("the baseline run failed: " + g.problems_text(base, bp), pytrace=False)
    return res, base


def pytest_terminal_summary(terminalreporter):
    p = _state.get("pool")
    if not p:
        return
    rows = []
    for spec, fut in p.futures.items():
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            rows.append(fut.result().brief())
    if rows:
        terminalreporter.section("hostile-guest runs (wall time, peak memory, verdict)")
        for r in sorted(rows):
            terminalreporter.write_line(r)
