"""The hostile-guest suite's hands in its bubblewrap sandbox, what `docker cp` and `docker
exec` are for the container: files written and commands run there through
mafhost.local.EnteredSandbox (the backend the runs use, so that nothing is reached outside
the sandbox's root), in a process of its own (under make asan the library needs the
sanitizer's runtime preloaded, which the suite's own process has not). Its argument is a
JSON object: python_path, library, pid, and ops, each {"write": PATH, "from": FILE,
"mode": "0755"} (FILE's bytes at PATH, then its mode set there) or {"exec": ARGV,
"timeout": S}. Prints what each exec printed on stdout; exits 1 at the first op that
fails, saying why on stderr."""
import asyncio
import json
import os
import sys

# Preloaded (make asan) for this interpreter only: not for the processes it starts.
os.environ.pop("LD_PRELOAD", None)


async def main(cfg):
    sys.path.insert(0, cfg["python_path"])
    import mafhost
    from mafhost.local import EnteredSandbox

    mafhost.load(cfg["library"])
    sb = EnteredSandbox(cfg["pid"], launcher_path="maf-launch")
    try:
        for op in cfg["ops"]:
            if "write" in op:
                with open(op["from"], "rb") as f:
                    await sb.write_file(op["write"], f.read())
                r = await sb.exec(["chmod", op["mode"], op["write"]], timeout=30)
            else:
                r = await sb.exec(op["exec"], timeout=op.get("timeout", 60))
                sys.stdout.write(r.stdout)
            if r.exit_code != 0:
                sys.stderr.write(f"{op}: exit code {r.exit_code}: {r.stderr[-1000:]}\n")
                return 1
    finally:
        await sb.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(json.loads(sys.argv[1]))))
