"""The current maf-sandbox release line, installed as published (the pins of requirements.txt,
in the Debian 13 root's /opt/maf-current, made by .ci/upstream-venv), with this checkout's
mafhost over this build's library beside it. make upstream-current runs these in that root."""
import os
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
PINS = HERE / "requirements.txt"

sys.path.insert(0, str(ROOT / "host" / "python"))
os.environ.setdefault("MAFHOST_LIBRARY", str(BUILD / "libmafhost.so"))

# What the channel's tests acquire: maf-sandbox-codeact's capabilities, host tools included.
CAPABILITIES = ("exec", "files_in", "files_out", "host_tools")


async def on_acquired(backend, agent, use, **spec):
    """use(backend, sandbox) on a sandbox backend (with_maf_launch's) acquires for a spec of
    kind maf-launch with CAPABILITIES and the spec's other fields given, disposed of after."""
    from maf_sandbox import Capability, ProgramRequirements, SandboxKey, SandboxSpec

    key = SandboxKey(scope=f"maf-launch-{uuid.uuid4().hex[:8]}", thread_id="t",
                     agent_id=agent)
    spec = SandboxSpec(kind="maf-launch", program=ProgramRequirements(),
                       requires=frozenset(Capability(c) for c in CAPABILITIES), **spec)
    sandbox = await backend.acquire(key, spec)
    try:
        return await use(backend, sandbox)
    finally:
        await backend.dispose(key, kind=spec.kind)
