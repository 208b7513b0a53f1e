"""maf-sandbox's own supervisor, dispatch_over_exec, serving its own HostToolRegistry, with
maf-launch in place of its shell launcher, on this machine as root, over a run directory
below pytest's tmp_path (whose parent no other uid may pass): the same program gives the same
output, exit code and tool calls as under the shell launcher, and runs under an identity of
its own."""
import json
import os
import sys
from pathlib import Path

from maf_sandbox import HostToolRegistry, HostToolRun, dispatch_over_exec, guest_run_layout
from maf_sandbox import host_tool_shim

from conftest import run
from local_sandbox import LocalSandbox
from swap import Swapped

PROGRAM = r"""
import json, os
from maf_host_tools import HostToolError, call, add
print(add(left=2, right=3))
print(call("add", left=40, right=2))
for name, args in (("nope", {}), ("add", {"left": "x", "right": 1})):
    try:
        call(name, **args)
    except HostToolError as e:
        print("refused:", e)
print(json.dumps(sorted(os.listdir("."))))
open("whoami", "w").write(str(os.getuid()))
raise SystemExit(3)
"""


def registry_with_log():
    log = []

    def add(left: int, right: int) -> int:
        log.append((left, right))
        if not isinstance(left, int):
            raise ValueError("left is not a number")
        return left + right

    registry = HostToolRegistry()
    registry.register(add)
    return registry, log


async def serve(sandbox, directory):
    registry, log = registry_with_log()
    layout = guest_run_layout(directory)
    await sandbox.write_file(layout.program, PROGRAM, working_directory=layout.directory)
    await sandbox.write_file(layout.shim, host_tool_shim(registry.names()),
                             working_directory=layout.directory)
    result = await dispatch_over_exec(sandbox, HostToolRun(registry), layout, timeout=60,
                                      poll_interval=0.02, interpreter=sys.executable)
    return layout, result, log


def test_the_registry_is_served_below_a_private_tmp_path_as_by_the_shell(private_tmp_path,
                                                                         launcher):
    shell = LocalSandbox()
    ours = Swapped(LocalSandbox(), launcher)

    s_layout, s_result, s_log = run(serve(shell, str(private_tmp_path / "shell")))
    m_layout, m_result, m_log = run(serve(ours, str(private_tmp_path / "ours")))

    # The shell launcher ran where it always does; maf-launch in its place.
    assert shell.commands[0] == ["sh", "-c", f"sh '{s_layout.launcher}'"]
    assert ours.commands[0] == [launcher, "run", "--run-dir", m_layout.directory, "--",
                                sys.executable, m_layout.program]
    # The same answers, the same refusals (the registry's sentences), the same tool calls.
    assert m_result.exit_code == s_result.exit_code == 3
    assert m_result.stdout == s_result.stdout
    lines = m_result.stdout.splitlines()
    assert lines[:2] == ["5", "42"]
    assert lines[2].startswith("refused:") and "nope" in lines[2]
    assert m_log == s_log == [(2, 3), (40, 2), ("x", 1)]
    assert json.loads(lines[-1]) == []
    # The transport's own files are removed (through maf-launch reclaim: no shell used);
    # the work directory is the caller's.
    assert not Path(m_layout.shim).parent.exists()
    assert not Path(s_layout.shim).parent.exists()
    assert any(c[:2] == [launcher, "reclaim"] for c in ours.commands)
    # The program ran under an identity of the run's own, not root's.
    assert (Path(s_layout.work) / "whoami").read_text() == "0"
    assert (1 << 20) <= int((Path(m_layout.work) / "whoami").read_text()) < (1 << 21)


def test_a_timeout_stops_the_program_through_maf_launch(private_tmp_path, launcher):
    from maf_sandbox import SandboxProgramTimeout

    sandbox = Swapped(LocalSandbox(), launcher)
    registry, _ = registry_with_log()
    layout = guest_run_layout(str(private_tmp_path / "slow"))

    async def go():
        await sandbox.write_file(layout.program,
                                 "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
                                 working_directory=layout.directory)
        await sandbox.write_file(layout.shim, host_tool_shim(registry.names()),
                                 working_directory=layout.directory)
        return await dispatch_over_exec(sandbox, HostToolRun(registry), layout, timeout=2,
                                        poll_interval=0.05, interpreter=sys.executable)

    try:
        run(go())
    except SandboxProgramTimeout as e:
        expired = e
    else:
        raise AssertionError("the run did not time out")
    assert "did not finish within 2s" in str(expired)
    assert "started" in str(expired)
    assert any(c[:2] == [launcher, "stop"] for c in sandbox.commands)
    # Nothing of the run is left running.
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert layout.program.encode() not in cmd, f"process {pid} is still running"
