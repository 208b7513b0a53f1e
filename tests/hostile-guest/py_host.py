"""The Python host of the hostile-guest tests, in a process of its own so that its memory is
measured alone: mafhost.run over LocalSandbox or DockerSandbox with one tool, record, which
appends its arguments to a log. Prints one JSON line: the result, and the process's RSS
before the run and its peak (KiB)."""
import asyncio
import json
import resource
import sys
import time


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def main(cfg):
    sys.path.insert(0, cfg["python_path"])
    import mafhost
    mafhost.load(cfg["library"])
    log = cfg["log"]

    def record(who: str):
        arguments = {"who": who}
        with open(log, "a") as f:
            f.write(json.dumps(arguments) + "\n")
        return 1

    tool = mafhost.tool(record, name="record", description="Records its arguments.")
    if cfg["backend"] == "local":
        sb = mafhost.LocalSandbox()
    else:
        sb = mafhost.DockerSandbox(cfg["backend"].split(":", 1)[1])
    base = rss_kb()
    t = time.monotonic()
    r = await mafhost.run(sb, cfg["program"], tools=[tool], timeout=cfg["timeout"],
                          launcher=cfg["launcher"], transport=cfg["transport"], check=False)
    wall = time.monotonic() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"status": r.status, "exit_code": r.exit_code, "verified": r.verified,
                      "errors": r.errors, "calls": r.calls, "output": r.output[:2000],
                      "wall_s": wall, "base_kb": base, "peak_kb": peak}))


asyncio.run(main(json.loads(sys.argv[1])))
