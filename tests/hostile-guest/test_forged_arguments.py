"""FORGED ARGUMENTS: serve, relay and wait emit request events of their own (the scenarios
of hostile_launcher.FORGERIES): truncated JSON, invalid UTF-8 (a stray byte, an overlong
form, an encoded surrogate), an escaped lone surrogate and an escaped NUL, JSON that is not
an object, a body whose id is another call's, arguments that are not an object, a key twice
(the arguments, a name inside them, the tool's name), a line that is not an event, a size
that lies (larger, splicing two frames; smaller), an event for a call not asked for, a frame
cut short, garbage between frames; and well-formed requests for a tool with arguments the
program never sent. The guest may call tools (it is the guest): a well-formed request may
reach the tool, with exactly its arguments and once. Nothing else ever does: no bytes
spliced from two frames, no invalid UTF-8, no argument a duplicated key made ambiguous.

The tool records what it is called with: for maf-host `--tool rec=COMMAND` appending its
stdin to a log, for mafhost a function appending its arguments to a list. The program
itself makes no call."""
import pytest

import guest_lib as g
import hostile_launcher

# (command, transport, the run's deadline). On relay and wait every forged request is a
# launcher command of its own, and one that does not decode is looked at again before it is
# refused: forge-refuse's sixteen frames are some thirty commands, each a `docker exec` of a
# Python program, which on a loaded machine (six runs at once, two of them floods) took 26
# to 36 s in all. The deadline gives them that room; what is judged is which requests were
# served.
COMMANDS = [("serve", "stream", 20.0), ("relay", "relay", 90.0), ("wait", "wait", 90.0)]
SPECS = [g.Spec(h, b, t, attack, c, "quick", deadline) for h, b in g.HOSTS
         for attack in hostile_launcher.FORGERIES for c, t, deadline in COMMANDS
         if g.covers(b, t)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_forged_requests(outcome):
    res, base = outcome
    good = hostile_launcher.good_args(res.spec.attack, res.spec.command)
    p = (g.came_back(res) + g.time_bound(res) + g.memory_bound(res, base) + g.verdict(res) +
         g.only_calls(res, good))
    rep = res.report
    if rep is not None and not rep.get("errors") and not rep.get("refusals"):
        p.append("neither an error nor a refusal on the result of forged requests")
    if res.spec.attack in ("forge-refuse", "forge-dupkeys") and not p:
        # The well-formed ones come before anything that ends the run: each was served.
        served = {g.decode_call(res, raw)[0].get("tag") for raw in res.tool_calls}
        missing = sorted(set(good) - served)
        if missing:
            p.append(f"well-formed requests were not served: {missing}")
    assert not p, g.problems_text(res, p)
