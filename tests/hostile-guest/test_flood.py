"""FLOOD: a launcher command writes without end. serve writes one endless line with no
newline, or announces a 1 GB frame (an event whose size is 1_000_000_000, then endless
bytes); relay and wait write endless stdout and stderr; so do stop and reclaim. The host's
peak memory stays within 64 MiB of its baseline, the run returns within its deadline plus
the ending's 15 s, with a clear error and the verdict the record gives.

stop and reclaim do not depend on the transport: they run over files here, the transport
that uses no other launcher command. Over Docker, as locally, relay takes each answer on
its stdin."""
import pytest

import guest_lib as g

FLOODS = [("flood-line", "serve", "stream"), ("flood-frame", "serve", "stream"),
          ("flood", "relay", "relay"), ("flood", "wait", "wait"),
          ("flood", "stop", "files"), ("flood", "reclaim", "files")]
T = 3.0
SPECS = [g.Spec(h, b, t, a, c, "benign", T) for h, b in g.HOSTS for a, c, t in FLOODS
         if g.covers(b, t)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_flood(outcome):
    res, base = outcome
    p = (g.came_back(res) + g.memory_bound(res, base) + g.time_bound(res) + g.verdict(res) +
         g.clear_error(res) + g.only_calls(res, {"genuine": g.GENUINE}))
    assert not p, g.problems_text(res, p)
