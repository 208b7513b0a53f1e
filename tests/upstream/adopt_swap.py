"""A pytest plugin (`-p adopt_swap`) that makes maf-sandbox-codeact serve its host tools
through the drop-in: the one name its kind imports from maf_sandbox, dispatch_over_exec, is
replaced by mafhost.maf_sandbox's in maf_sandbox_codeact._tool, as a host's one-line switch
would replace it. Each run is counted by how the drop-in served it (maf-launch, or
maf-sandbox's own transport where the sandbox has no maf-launch); the counts are written as
JSON to $MAF_ADOPT_REPORT at the end of the session."""
import json
import logging
import os

import maf_sandbox_codeact._tool as codeact_tool

import mafhost.maf_sandbox as drop_in

COUNTS = {"maf-launch": 0, "maf-sandbox's own transport": 0}


class _Served(logging.Handler):
    def emit(self, record):
        if "served by maf-sandbox's own transport" in record.getMessage():
            COUNTS["maf-sandbox's own transport"] += 1


async def _counting(sandbox, run, layout, **kw):
    before = COUNTS["maf-sandbox's own transport"]
    result = await drop_in.dispatch_over_exec(sandbox, run, layout, **kw)
    if COUNTS["maf-sandbox's own transport"] == before:
        COUNTS["maf-launch"] += 1
    return result


def pytest_configure(config):
    logging.getLogger("mafhost").addHandler(_Served())
    logging.getLogger("mafhost").setLevel(logging.INFO)
    codeact_tool.dispatch_over_exec = _counting


def pytest_unconfigure(config):
    report = os.environ.get("MAF_ADOPT_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump(COUNTS, f)
