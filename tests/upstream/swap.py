"""maf-launch in place of maf-sandbox's shell launcher, wherever upstream's code executes that
launcher for real: the swap the upstream tests are run with.

maf-sandbox writes `launcher_script(layout, interpreter)` to `layout.launcher` and runs
`sh LAUNCHER`. Every script launcher_script makes in this process is recorded with the layout
and interpreter it was made for, and an execution of `sh FILE` whose FILE holds such a script
runs `maf-launch run --run-dir DIR -- INTERPRETER PROGRAM` instead:

- as a pytest plugin (`-p swap`, with MAF_SWAP_LAUNCHER naming maf-launch), for upstream's own
  suite, which runs its launcher with subprocess (every Popen, asyncio's included);
- as `Swapped(sandbox, launcher)`, a sandbox object with maf-sandbox's surface for
  dispatch_over_exec, whose exec also turns the supervisor's other two shell commands into
  maf-launch's (`kill -KILL -SESSION` into `stop`, `rm -rf DIR` into `reclaim`): an image
  with no shell has nothing else to run them.

Nothing of maf-sandbox is copied or changed: its functions are wrapped, their results kept."""
import os
import posixpath
import re
import shlex
import subprocess

_recorded = {}  # script text -> (layout, interpreter)


def _record(real):
    def launcher_script(layout, interpreter="python3"):
        text = real(layout, interpreter)
        _recorded[text] = (layout, interpreter)
        return text

    launcher_script.__wrapped__ = real
    launcher_script.__doc__ = real.__doc__
    return launcher_script


def install_recorder():
    """Wraps maf_sandbox's launcher_script (the module's and the package's name) so that each
    script it makes is known. Idempotent."""
    import maf_sandbox
    from maf_sandbox import _host_tools_over_exec as over_exec

    if not hasattr(over_exec.launcher_script, "__wrapped__"):
        over_exec.launcher_script = _record(over_exec.launcher_script)
    maf_sandbox.launcher_script = over_exec.launcher_script


def run_argv(launcher, script_text):
    """maf-launch run's argv for a script launcher_script made, or None."""
    made = _recorded.get(script_text)
    if made is None:
        return None
    layout, interpreter = made
    return [launcher, "run", "--run-dir", layout.directory, "--", interpreter, layout.program]


def _script_at(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return None


def swapped_argv(launcher, args):
    """args with `sh FILE` of a recorded script replaced by maf-launch run, else args."""
    if isinstance(args, (list, tuple)) and len(args) == 2 and \
            posixpath.basename(str(args[0])) == "sh":
        text = _script_at(os.fspath(args[1]))
        argv = run_argv(launcher, text) if text is not None else None
        if argv is not None:
            return argv
    return args


def install_subprocess_swap(launcher):
    real_init = subprocess.Popen.__init__
    if getattr(real_init, "_maf_swap", False):
        return

    def __init__(self, args, *rest, **kw):
        real_init(self, swapped_argv(launcher, args), *rest, **kw)

    __init__._maf_swap = True
    subprocess.Popen.__init__ = __init__


def pytest_configure(config):
    launcher = os.environ.get("MAF_SWAP_LAUNCHER")
    if not launcher:
        raise RuntimeError("the swap plugin needs MAF_SWAP_LAUNCHER, the maf-launch to run")
    install_recorder()
    install_subprocess_swap(launcher)


_SUPERVISOR = re.compile(r'"supervisor_pid":(\d+)')


class Swapped:
    """A sandbox object (maf-sandbox's surface) over another, with maf-launch in place of the
    shell launcher and of the shell commands the supervisor runs. `commands` lists what it
    ran, as argv."""

    def __init__(self, sandbox, launcher="/usr/local/bin/maf-launch"):
        self._sandbox = sandbox
        self._launcher = launcher
        self._supervisors = {}  # run directory -> supervisor pid, from the launch line
        self.commands = []

    def __getattr__(self, name):
        return getattr(self._sandbox, name)

    async def write_file(self, path, content, *, working_directory):
        return await self._sandbox.write_file(path, content, working_directory=working_directory)

    async def read_file(self, path, *, working_directory, max_bytes):
        return await self._sandbox.read_file(path, working_directory=working_directory,
                                             max_bytes=max_bytes)

    async def stat_file(self, path, *, working_directory):
        return await self._sandbox.stat_file(path, working_directory=working_directory)

    def _translate(self, command):
        words = shlex.split(command) if isinstance(command, str) else list(command)
        if len(words) == 2 and words[0] == "sh":
            argv = None
            for text, (layout, _) in _recorded.items():
                if layout.launcher == words[1]:
                    argv = run_argv(self._launcher, text)
            if argv is not None:
                return "run", argv
        if words[:2] == ["kill", "-KILL"] and len(words) >= 3 and self._supervisors:
            # The run this object launched last: the supervisor stops one run at a time.
            run_dir, pid = list(self._supervisors.items())[-1]
            return "stop", [self._launcher, "stop", "--run-dir", run_dir,
                            "--supervisor-pid", str(pid)]
        if words[:2] == ["rm", "-rf"] and len(words) == 3:
            return "reclaim", [self._launcher, "reclaim", "--run-dir", words[2]]
        return None, command

    async def exec(self, command, *, working_directory, timeout):
        kind, argv = self._translate(command)
        self.commands.append(argv)
        result = await self._sandbox.exec(argv, working_directory=working_directory,
                                          timeout=timeout)
        if kind == "run" and result.exit_code == 0:
            found = _SUPERVISOR.search(result.stdout or "")
            if found:
                self._supervisors[argv[3]] = int(found.group(1))
        return result
