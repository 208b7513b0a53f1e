"""The drop-in on this machine, as root, over an object of maf-sandbox's sandbox surface
alone (local_sandbox.LocalSandbox: no container_name, so calls go by relay), below pytest's
0700 tmp_path: the same answers as maf-sandbox's own dispatch_over_exec with its shell
launcher, and a backend that fails surfaces as the exception it raised, under both."""
import os

import pytest

from maf_sandbox import HostToolRegistry, HostToolRun, guest_run_layout, host_tool_shim
from maf_sandbox import dispatch_over_exec as upstream_dispatch

from mafhost.maf_sandbox import dispatch_over_exec as drop_in_dispatch
from conftest import run
from local_sandbox import LocalSandbox

PROGRAM = r"""
from maf_host_tools import HostToolError, call, add
print(add(left=2, right=3))
for name in ("nope", "búsqueda"):
    try:
        print(call(name, q="x"))
    except HostToolError as e:
        print("refused:", e)
raise SystemExit(3)
"""


class Failing(LocalSandbox):
    """Its exec raises from the n-th on, as a backend that went away."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    async def exec(self, command, *, working_directory, timeout):
        self.n -= 1
        if self.n <= 0:
            raise ConnectionResetError("the sandbox's service went away")
        return await super().exec(command, working_directory=working_directory,
                                  timeout=timeout)


def registry(log):
    def add(left: int, right: int) -> int:
        log.append(("add", left, right))
        return left + right

    def search(q: str) -> str:
        log.append(("search", q))
        return q.upper()

    r = HostToolRegistry()
    r.register(add)
    r.register(search, name="búsqueda")
    return r


def prepare(base, reg):
    layout = guest_run_layout(str(base / "run"))
    os.makedirs(os.path.dirname(layout.program))
    with open(layout.program, "w") as f:
        f.write(PROGRAM)
    with open(layout.shim, "w") as f:
        f.write(host_tool_shim(reg.names()))
    return layout


def test_relay_over_a_plain_sandbox_answers_as_maf_sandbox_does(private_tmp_path, launcher):
    got = {}
    for way, fn, kw in (("upstream", upstream_dispatch, {}),
                        ("drop-in", drop_in_dispatch, {"launcher": launcher})):
        log = []
        reg = registry(log)
        layout = prepare(private_tmp_path / way, reg)
        sandbox = LocalSandbox()
        r = run(fn(sandbox, HostToolRun(reg), layout, timeout=60, poll_interval=0.05, **kw))
        got[way] = (r.stdout, r.exit_code, log, sorted(os.listdir(layout.directory)))
        if way == "drop-in":
            assert sandbox.commands[1][:2] == [launcher, "run"]
            assert not any(c[0] in ("sh", "rm", "kill") for c in sandbox.commands)
    assert got["drop-in"] == got["upstream"]
    assert got["upstream"][0] == "5\nrefused: Error: 'nope' is not a registered host tool\nX\n"


def test_a_backend_failing_at_the_launch_surfaces_as_its_own_exception(private_tmp_path,
                                                                       launcher):
    raised = {}
    # The exec that starts the program raises: maf-sandbox's first exec, the drop-in's
    # second (its first asks `maf-launch --version`).
    for way, fn, kw, n in (("upstream", upstream_dispatch, {}, 1),
                           ("drop-in", drop_in_dispatch, {"launcher": launcher}, 2)):
        reg = registry([])
        layout = prepare(private_tmp_path / way, reg)
        with pytest.raises(Exception) as e:
            run(fn(Failing(n), HostToolRun(reg), layout, timeout=30, poll_interval=0.05, **kw))
        raised[way] = (type(e.value), str(e.value))
    assert raised["drop-in"] == raised["upstream"] == \
        (ConnectionResetError, "the sandbox's service went away")
