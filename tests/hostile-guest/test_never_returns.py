"""NEVER RETURNS: a launcher command that never returns and ignores SIGTERM: run that never
reads the files on its stdin nor launches, serve that says nothing forever, relay and wait
that never answer, stop and reclaim that never end; and a
variant that returns at once but leaves a setsid'd grandchild holding its stdout open and
writing to it. With --timeout T the host returns within T + 15 s (the ending's budget,
MAFH_ENDING_MS) plus start-up; a hang is cut at T + 60 s and fails with what was seen. A
stop and a reclaim that never end are also run with the ending's budget set to its least
(--ending-timeout 6, ending_timeout=6): the run returns within T + 6 s plus start-up.

stop and reclaim run over files (they do not depend on the transport)."""
import pytest

import guest_lib as g

HANGS = [("hang", "run", "stream"),
         ("hang", "serve", "stream"), ("hang", "relay", "relay"), ("hang", "wait", "wait"),
         ("hang", "stop", "files"), ("hang", "reclaim", "files"),
         ("fork", "serve", "stream"), ("fork", "relay", "relay"), ("fork", "stop", "files")]
T = 3.0
SPECS = [g.Spec(h, b, t, a, c, "benign", T) for h, b in g.HOSTS for a, c, t in HANGS
         if g.covers(b, t)]
SPECS += [g.Spec(h, b, "files", "hang", c, "benign", T, ending=6.0) for h, b in g.HOSTS
          for c in ("stop", "reclaim") if g.covers(b, "files")]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_never_returns(outcome):
    res, base = outcome
    p = (g.came_back(res) + g.time_bound(res) + g.memory_bound(res, base) + g.verdict(res) +
         g.clear_error(res) + g.ending_shares(res) + g.only_calls(res, {"genuine": g.GENUINE}))
    assert not p, g.problems_text(res, p)
