"""mafhost.run takes maf-sandbox's HostToolRegistry as its tools: the registry is served as
maf-sandbox serves it (its dispatch, its cap, its sentences, its observer), and the program
gets a shim that is maf-sandbox's module to it (HostToolError a RuntimeError, the wrappers
maf-sandbox would generate, unicode names included), over the launcher's channel. On this
machine, as root, through mafhost's LocalSandbox."""
import contextlib
import warnings

import pytest

from maf_sandbox import HostToolRegistry, HostToolRun

import mafhost
from conftest import run

PROGRAM = r"""
import maf_host_tools as m
from maf_host_tools import HostToolError, call
print("issubclass", issubclass(HostToolError, RuntimeError))
print("add", m.add(left=2, right=3), "búsqueda", m.búsqueda(q="x"))
for name in ("nope", "with space"):
    try:
        print("value", call(name, q="y"))
    except HostToolError as e:
        print("refused", e)
try:
    call("add", left=1, right=1)
except HostToolError as e:
    print("refused", e)
"""


def make_registry(seen):
    def add(left: int, right: int) -> int:
        return left + right

    def search(q: str) -> str:
        return q.upper()

    def observer(_run, name):
        seen.append(name)
        return contextlib.nullcontext()

    r = HostToolRegistry(max_dispatches_per_run=4, dispatch_observer=observer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r.register(add)
        r.register(search, name="búsqueda")
        r.register(search, name="with space")
    return r


@pytest.mark.parametrize("as_run", [False, True])
def test_run_serves_a_host_tool_registry(launcher, as_run):
    seen = []
    reg = make_registry(seen)
    tools = HostToolRun(reg) if as_run else reg
    result = run(mafhost.run(mafhost.LocalSandbox(launcher_path=launcher), PROGRAM,
                             tools=tools, timeout=60))
    assert result.status == "exited" and result.exit_code == 0, result
    assert result.output.splitlines() == [
        "issubclass True",
        "add 5 búsqueda X",
        "refused Error: 'nope' is not a registered host tool",
        "value Y",
        "refused Error: this run's host-tool dispatch cap (4) is exhausted — finish with the "
        "results already delivered and report what remains undone",
    ]
    assert seen == ["add", "búsqueda", "nope", "with space", "add"]
    assert result.record is not None and result.record.calls == 5


def test_limits_do_not_apply_to_a_registry(launcher):
    with pytest.raises(mafhost.ConfigError, match="response_limits"):
        run(mafhost.run(mafhost.LocalSandbox(launcher_path=launcher), PROGRAM,
                        tools=make_registry([]), limits=mafhost.Limits(), timeout=10))
