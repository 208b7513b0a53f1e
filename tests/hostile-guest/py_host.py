"""The Python host of the hostile-guest suite, in a process of its own so that its memory is
measured alone: one mafhost.run over LocalSandbox, DockerSandbox or EnteredSandbox (the local
backend in a bubblewrap sandbox), with one tool, rec, that records the arguments it is
called with. Its argument is a JSON object: python_path,
library, backend ("local", "docker:CONTAINER" or "enter:PID"), launcher (the hostile one),
real (the sandbox's own maf-launch), tmpdir, program (Python source), timeout, transport.

Prints one JSON line: the RunResult's fields, the tool's calls (each its arguments, as
JSON), base_kb (VmRSS just before the run, the peak reset there) and peak_kb (VmHWM after
it). An exception out of mafhost.run is printed as `exception` (its traceback) with exit
code 1: the host is never to raise on what a guest does."""
import asyncio
import json
import os
import sys
import traceback

# Preloaded (make asan) for this interpreter only: not for the processes it starts.
os.environ.pop("LD_PRELOAD", None)


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    """VmHWM from now on (clear_refs 5 resets the peak resident set)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


async def main(cfg):
    sys.path.insert(0, cfg["python_path"])
    import mafhost
    mafhost.load(cfg["library"])
    seen = []

    def rec(**arguments):
        seen.append(json.dumps(arguments, ensure_ascii=True))
        return True

    tool = mafhost.Tool(rec, name="rec", description="Records its arguments.")
    limits = mafhost.Limits(max_calls=64)
    if cfg["backend"] == "local":
        sb = mafhost.LocalSandbox(launcher_path=cfg["real"], tmpdir=cfg["tmpdir"])
    elif cfg["backend"].startswith("enter:"):
        from mafhost.local import EnteredSandbox
        sb = EnteredSandbox(int(cfg["backend"].split(":", 1)[1]), launcher_path=cfg["real"])
    else:
        sb = mafhost.DockerSandbox(cfg["backend"].split(":", 1)[1])
        await sb.check()
    out = {"tool_calls": seen}
    try:
        base = status_kb("VmRSS")
        reset_peak()
        try:
            r = await mafhost.run(sb, cfg["program"], tools=[tool], limits=limits,
                                  timeout=cfg["timeout"], launcher=cfg["launcher"],
                                  transport=cfg["transport"],
                                  ending_timeout=cfg.get("ending"), check=False)
        except BaseException:
            out.update(exception=traceback.format_exc(), peak_kb=status_kb("VmHWM"),
                       base_kb=base)
            return out
        out.update(peak_kb=status_kb("VmHWM"), base_kb=base)
    finally:
        if cfg["backend"].startswith("docker:"):
            await sb.close()
        elif cfg["backend"] != "local":
            await sb.aclose()
    rec_ = r.record
    out.update(status=r.status, exit_code=r.exit_code, verified=r.verified,
               errors=r.errors, calls=r.calls, refusals=r.refusals,
               transport=r.transport, output=r.output[:2000],
               record=None if rec_ is None else {"status": rec_.status,
                                                  "exit_code": rec_.exit_code})
    return out


if __name__ == "__main__":
    result = asyncio.run(main(json.loads(sys.argv[1])))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.exit(1 if "exception" in result else 0)
