"""Serving a maf-sandbox HostToolRegistry as maf-sandbox's supervisor serves it.

The library's run is a pass-through (mafh_registry_set_pass_through): it hands each request
file's bytes here, as the program wrote them, and writes back the bytes this returns. What
happens in between is maf-sandbox's contract, kept to the letter: the request is read only
if it is within the registry's per-file cap, decoded strictly as UTF-8, parsed as JSON, must
be an object; an abandoned marker is stepped over; everything else goes to
HostToolRun.dispatch (unknown names, calls past the cap and all), whose result is framed as
{"value": V} or {"refusal": S}; and past max_dispatches_per_run + 1 requests nothing more is
read. The sentences below are maf-sandbox's own, so the program reads what it would have read.

Only the bounds that keep this host safe are mafhost's own (HOST_*): a registry whose caps
are larger than these is held to these."""
from __future__ import annotations

import json
import logging
import posixpath
from typing import TYPE_CHECKING, Any, Optional, Tuple, cast

from . import _abi
from ._tools import Limits

if TYPE_CHECKING:
    # maf-sandbox's (an Any where it is not installed); _run imports this module.
    from maf_sandbox import HostToolRegistry, HostToolRun

    from ._run import _Sandbox

log = logging.getLogger("mafhost")

#: The most this host holds of one request, of one response, and of the program's output,
#: whatever the registry allows.
HOST_MAX_REQUEST = 16 << 20
HOST_MAX_RESPONSE = 16 << 20
HOST_MAX_OUTPUT = 32 << 20

# maf-sandbox's framing and sentences (maf_sandbox._host_tools_over_exec), which the program
# reads: the contract, not an implementation detail.
_FRAME_OPEN = '{"value": '
_FRAME_CLOSE = "}"
FRAMING_BYTES = len(_FRAME_OPEN.encode("utf-8")) + len(_FRAME_CLOSE.encode("utf-8"))
_NOT_JSON = "Error: this host-tool request is not valid JSON"
_TOO_LARGE = ("Error: this host-tool request is larger than the host will read — pass less, "
              "or write what you have to a file instead")
_NOT_OBJECT = "Error: a host-tool request must be a JSON object"
OUTPUT_TOO_LARGE = ("the program's output was larger than the host will read and was not "
                    "returned; have the program write what it needs to a file the run "
                    "collects instead")


def _is(obj: object, name: str) -> bool:
    return any(t.__name__ == name and t.__module__.split(".")[0] == "maf_sandbox"
               for t in type(obj).__mro__)


def served_registry(tools: object) -> Optional[HostToolRun]:
    """The HostToolRun to serve when tools is maf-sandbox's (a HostToolRegistry, for which
    a fresh run is made, or a HostToolRun), else None."""
    if _is(tools, "HostToolRun"):
        return cast("HostToolRun", tools)     # _is looked at its class, by name
    if _is(tools, "HostToolRegistry"):
        from maf_sandbox import HostToolRun
        return HostToolRun(cast("HostToolRegistry", tools))
    return None


def limits_for(run: HostToolRun) -> Limits:
    """The library's limits for serving run: its registry's caps, within the host's."""
    rl = run.registry.response_limits
    return Limits(max_calls=999999,
                  max_response_bytes=min(rl.max_bytes_per_file + 256, HOST_MAX_RESPONSE),
                  max_total_response_bytes=1 << 50,
                  max_request_bytes=max(1, min(rl.max_bytes_per_file, HOST_MAX_REQUEST)),
                  max_output_bytes=max(1, min(rl.max_total_bytes, HOST_MAX_OUTPUT)))


class Answerer:
    """Answers a pass-through run's requests for one HostToolRun, in order."""

    run: HostToolRun
    served: int
    allowance: int

    def __init__(self, run: HostToolRun) -> None:
        self.run = run
        self.served = 0
        # One more than the cap: the request past it gets the registry's own refusal.
        self.allowance = run.registry.max_dispatches_per_run + 1

    async def __call__(self, flags: int, data: bytes,
                       size: int) -> Tuple[int, Optional[bytes]]:
        if self.served >= self.allowance:
            return _abi.RAW_HOLD, None
        if flags & _abi.CALL_UNREADABLE:
            return _abi.RAW_LOOK_AGAIN, None     # not a file (yet), as maf-sandbox sees it
        if flags & _abi.CALL_OVERSIZED:
            log.warning("host tools: a request is %d bytes against a %d cap, refusing to "
                        "read it", size, self.run.registry.response_limits.max_bytes_per_file)
            self.served += 1
            return _abi.RAW_RESPOND, json.dumps({"refusal": _TOO_LARGE}).encode()
        if not data:
            return _abi.RAW_LOOK_AGAIN, None     # an empty file has not arrived yet
        answer = await self.answer(data)
        self.served += 1
        if answer is None:
            return _abi.RAW_STEP_OVER, None
        return _abi.RAW_RESPOND, answer.encode("utf-8")

    async def answer(self, data: bytes) -> Optional[str]:
        """The response text for one request's bytes, or None for an abandoned one."""
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError as e:
            log.warning("host tools: a request is not UTF-8: %s", e)
            return json.dumps({"refusal": _NOT_JSON})
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return json.dumps({"refusal": _NOT_JSON})
        if not isinstance(parsed, dict):
            return json.dumps({"refusal": _NOT_OBJECT})
        if parsed.get("abandoned") is True:
            return None
        # The guest's JSON, whatever it is: dispatch checks name and arguments.
        name: Any = parsed.get("name")
        result = await self.run.dispatch(name, parsed.get("arguments"),
                                         framing_bytes=FRAMING_BYTES)
        if not result.ok:
            return json.dumps({"refusal": result.refusal})
        return _FRAME_OPEN + (result.value_json or "null") + _FRAME_CLOSE

    async def write_shim(self, sandbox: _Sandbox, run_dir: str) -> None:
        """Writes the shim for the registry's names into run_dir (mafhost.run with a
        registry and a program)."""
        from maf_sandbox import host_tool_shim

        from ._compat_shim import for_registry
        # None only if host_tool_shim's text stopped matching the shim it is read as: then,
        # as before, None.encode below raises AttributeError.
        text = cast(str, for_registry(self.run.registry.names(), host_tool_shim))
        path = posixpath.join(run_dir, "host_tools", "maf_host_tools.py")
        sandbox.count("write_file")
        await sandbox.sb.write_file(path.lstrip("/"), text.encode(), working_directory="/")
