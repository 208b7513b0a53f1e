"""The shim mafhost writes in place of maf-sandbox's generated one is the same module to a
program: for every shim host_tool_shim writes (names of every kind, the call timeout as an
int or a float), it is recognised, and the module it becomes has the same top-level names,
the same wrappers (same names, same docstrings), the same HostToolError (a RuntimeError),
the same call signature and the same timeout value. A shim a caller wrote itself is not
recognised, so it is served as written."""
import importlib.util
import inspect
import sys

import pytest

from maf_sandbox import host_tool_shim

from mafhost.maf_sandbox import guest_api as _compat_shim

NAMES = [
    (),
    ("add",),
    ("add", "búsqueda", "ｌｏｏｋｕｐ", "lookup", "x" * 129, "with space", "class", "call",
     "json", "socket", "_bind", "_channel", "match", "ｃall"),
]


def load(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def public(mod):
    return {n for n in vars(mod) if not n.startswith("__")}


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("call_timeout", [300.0, 60, 2.5])
def test_a_generated_shim_becomes_the_same_module(tmp_path, monkeypatch, names, call_timeout):
    monkeypatch.delenv("MAF_HOST_TOOLS_FD", raising=False)
    monkeypatch.delenv("MAF_HOST_TOOLS_SOCKET", raising=False)
    theirs_text = host_tool_shim(frozenset(names), call_timeout=call_timeout)
    ours_text = _compat_shim.compatible(theirs_text, host_tool_shim)
    assert ours_text is not None
    theirs = load(tmp_path, "theirs", theirs_text)
    ours = load(tmp_path, "ours", ours_text)
    assert public(ours) == public(theirs)
    assert issubclass(ours.HostToolError, RuntimeError)
    assert inspect.signature(ours.call) == inspect.signature(theirs.call)
    assert ours.call.__doc__ == theirs.call.__doc__ and ours.call.__name__ == "call"
    assert ours._TIMEOUT == theirs._TIMEOUT and type(ours._TIMEOUT) is type(theirs._TIMEOUT)
    for name in public(theirs):
        a, b = getattr(theirs, name), getattr(ours, name)
        if inspect.isfunction(a) and a.__module__ == "theirs" and name not in (
                "call", "_claim", "_publish"):
            assert b.__doc__ == a.__doc__ and b.__name__ == a.__name__, name
    sys.modules.pop("theirs", None)
    sys.modules.pop("ours", None)


@pytest.mark.parametrize("text", [
    "",
    "from maf_sandbox import nothing\n",
    host_tool_shim(frozenset({"add"})) + "\nprint('mine')\n",
    host_tool_shim(frozenset({"add"})).replace("_POLL = 0.05", "_POLL = 0.5"),
])
def test_a_shim_the_caller_wrote_is_served_as_written(text):
    assert _compat_shim.compatible(text, host_tool_shim) is None
