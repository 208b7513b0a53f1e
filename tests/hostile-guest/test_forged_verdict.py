"""FORGED VERDICT: serve, relay and wait print an exit event saying the program exited 0,
while the program is still running (a sleeper: at once) or has exited 3 (once its real
exit marker is there). The result is never verified with a status or exit code the
supervisor's record contradicts: the record gives the verdict, the disagreement is among
the result's errors ("the record is taken") and the result is not verified."""
import pytest

import guest_lib as g

FORGERS = [("serve", "stream"), ("relay", "relay"), ("wait", "wait")]
T = 20.0
SPECS = [g.Spec(h, b, t, "forge-exit", c, prog, T) for h, b in g.HOSTS for c, t in FORGERS
         for prog in ("sleeper", "exit3") if g.covers(b, t)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_forged_exit_event(outcome):
    res, base = outcome
    p = g.came_back(res) + g.time_bound(res) + g.memory_bound(res, base) + g.verdict(res)
    rep = res.report
    if rep is not None:
        if rep.get("verified"):
            p.append("a run whose launcher forged its end is reported verified")
        if not any("the record is taken" in e for e in rep.get("errors") or []):
            p.append(f"the disagreement with the record is not among the errors: "
                     f"{rep.get('errors')}")
        if res.spec.program == "exit3" and (rep.get("status"), rep.get("exit_code")) != \
                ("exited", 3):
            p.append(f"the program exited 3, the result says {rep.get('status')}, exit code "
                     f"{rep.get('exit_code')}")
    p += g.only_calls(res, {})
    assert not p, g.problems_text(res, p)
