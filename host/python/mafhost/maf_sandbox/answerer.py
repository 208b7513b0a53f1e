"""The answerer both maf-sandbox lines share: a maf-sandbox run's requests, served as
maf-sandbox's supervisor serves them.

The library's run is a pass-through (mafh_registry_set_pass_through): it hands each request
file's bytes here, as the program wrote them, and writes back the bytes this returns. What
happens in between is maf-sandbox's contract, kept to the letter: the request is read only
if it is within the registry's per-file cap, decoded strictly as UTF-8, parsed as JSON, must
be an object; an abandoned marker is stepped over; everything else goes through maf-sandbox's
own door (unknown names, calls past the cap and all), whose result is framed as
{"value": V} or {"refusal": S}; and past the cap + 1 requests nothing more is read. The
sentences below are maf-sandbox's own, so the program reads what it would have read.

The door is the line's:
- 0.21 (legacy.py): HostToolRun.dispatch, whose result is written back at once
  (DispatchDoor);
- the current line (channel.py): the live HostToolPolicy.call(..., publish=), whose publish
  callback returns only once the transport has accepted the whole response: the library
  reports it (MAFH_EVENT_CALL_SERVED or _REFUSED for the call, which each transport reports
  at its acceptance: the response file written, the relay that carried it returned, serve's
  accepted line), and PolicyDoor resolves the callback then (PolicyDoor).

Only the bounds that keep this host safe are mafhost's own (HOST_*): a registry whose caps
are larger than these is held to these."""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union, cast

from .. import _abi
from .._tools import Limits

if TYPE_CHECKING:
    # maf-sandbox's (each an Any where it is not installed).
    from maf_sandbox import HostToolRegistry, HostToolRun

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


# A call's bound that expires this close to the run's deadline is the deadline's: the run's
# own timeout, not the call's failure.
_AT_THE_DEADLINE_S = 0.05

# maf-sandbox's ceiling on one refusal envelope, and what replaces one past it (current line).
_REFUSAL_CEILING = 1024
_REFUSAL_TOO_LONG = ("Error: this host-tool request was refused, and the reason did not fit "
                     "the response ceiling")


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


class DispatchDoor:
    """maf-sandbox 0.21's door: HostToolRun.dispatch, answered at once."""

    def __init__(self, run: HostToolRun) -> None:
        self.run = run
        limits = run.registry.response_limits
        self.max_calls: int = run.registry.max_dispatches_per_run
        self.per_file: int = limits.max_bytes_per_file
        self.total: int = limits.max_total_bytes
        self.names = frozenset(run.registry.names())

    def refusal(self, sentence: str) -> str:
        return json.dumps({"refusal": sentence})

    async def __call__(self, name: Any, arguments: Any, call_id: int) -> Optional[str]:
        result = await self.run.dispatch(name, arguments, framing_bytes=FRAMING_BYTES)
        if not result.ok:
            return self.refusal(result.refusal)
        return _FRAME_OPEN + (result.value_json or "null") + _FRAME_CLOSE

    def accepted(self, call_id: int) -> None:
        """0.21 asks for no confirmation."""

    async def settle(self, why: BaseException) -> None:
        """Nothing is pending on 0.21."""


class PolicyDoor:
    """The current line's door: the live HostToolPolicy.call(..., publish=). Calls go
    through it one at a time, in order, as maf-sandbox's supervisor makes them.

    A call runs as a task of its own: when the policy publishes, the framed response goes
    back to the library at once (the answerer returns it), while publish waits for the
    transport's acceptance (accepted(call_id), from the library's event) before it returns,
    so that HostToolCalled says "delivered" only for a response the guest's launcher took.
    A call that ends without publishing (its bound expired, the policy was closed) is the
    run's failure, as it is upstream's: failed() is told, the request is held unanswered,
    and the caller stops the run and raises what the policy raised. So is one that fails
    after publishing, before the run's deadline: its bound expired while the transport had
    not accepted the response (upstream awaits its publication inline, and raises there)."""

    def __init__(self, policy: Any, failed: Optional[Callable[[BaseException], None]] = None
                 ) -> None:
        self.policy = policy
        surface = policy.surface
        self.max_calls: int = surface.max_host_tool_calls_per_run
        self.per_file: int = surface.response_limits.max_bytes_per_file
        self.total: int = surface.response_limits.max_total_bytes
        self.names = frozenset(surface.names)
        self.failed = failed
        self.failure: Optional[BaseException] = None
        self.previous: Optional[asyncio.Task[Any]] = None
        self.awaiting: Dict[int, asyncio.Future[None]] = {}
        self.settled = False

    def refusal(self, sentence: str) -> str:
        envelope = json.dumps({"refusal": sentence})
        if len(envelope.encode("utf-8")) <= _REFUSAL_CEILING:
            return envelope
        log.warning("host tools: a refusal did not fit %s bytes and was replaced",
                    _REFUSAL_CEILING)
        return json.dumps({"refusal": _REFUSAL_TOO_LONG})

    async def _after_previous(self) -> None:
        if self.previous is not None and not self.previous.done():
            await asyncio.wait({self.previous})

    async def __call__(self, name: Any, arguments: Any, call_id: int) -> Optional[str]:
        await self._after_previous()
        if self.failure is not None:
            return None
        loop = asyncio.get_running_loop()
        response: asyncio.Future[str] = loop.create_future()
        accepted: asyncio.Future[None] = loop.create_future()

        async def publish(result: Any) -> None:
            text = (self.refusal(cast(str, result.refusal)) if not result.ok
                    else _FRAME_OPEN + (result.value_json or "null") + _FRAME_CLOSE)
            self.awaiting[call_id] = accepted
            response.set_result(text)
            try:
                await accepted
            finally:
                self.awaiting.pop(call_id, None)

        task = asyncio.ensure_future(self.policy.call(name, arguments, publish=publish,
                                                      framing_bytes=FRAMING_BYTES))
        self.previous = task
        try:
            await asyncio.wait({task, response}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if response.done():
            task.add_done_callback(self._after_publication)
            return response.result()
        exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
        self.failure = exc or RuntimeError("the host-tool call ended without a response")
        if self.failed is not None:
            self.failed(self.failure)
        return None

    def _after_publication(self, task: asyncio.Task[Any]) -> None:
        """A call whose response went to the transport has ended: one that failed awaiting
        the transport's acceptance fails the run, unless the run's end (settle) or its
        deadline failed it (the run's own timeout is the verdict there)."""
        if task.cancelled() or self.settled or self.failure is not None:
            return
        exc = task.exception()
        deadline = getattr(self.policy, "deadline", None)
        if exc is None or (isinstance(deadline, (int, float)) and
                           time.monotonic() >= deadline - _AT_THE_DEADLINE_S):
            return
        self.failure = exc
        if self.failed is not None:
            self.failed(exc)

    def accepted(self, call_id: int) -> None:
        """The library says the transport accepted call_id's response."""
        waiting = self.awaiting.get(call_id)
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    async def settle(self, why: BaseException) -> None:
        """At the run's end: a response the transport never accepted is not delivered
        (publish raises why, and the policy records delivery_uncertain and closes), and the
        last call is waited for."""
        self.settled = True
        for waiting in list(self.awaiting.values()):
            if not waiting.done():
                waiting.set_exception(why)
        if self.previous is not None:
            if not self.previous.done():
                await asyncio.wait({self.previous})
            if not self.previous.cancelled():
                self.previous.exception()    # retrieved: it is the failure, or a settled one


Door = Union[DispatchDoor, PolicyDoor]


def limits_for(door: Door) -> Limits:
    """The library's limits for serving through door: its registry's caps, within the
    host's."""
    return Limits(max_calls=999999,
                  max_response_bytes=min(door.per_file + 256, HOST_MAX_RESPONSE),
                  max_total_response_bytes=1 << 50,
                  max_request_bytes=max(1, min(door.per_file, HOST_MAX_REQUEST)),
                  max_output_bytes=max(1, min(door.total, HOST_MAX_OUTPUT)))


class Answerer:
    """Answers a pass-through run's requests through one door, in order."""

    door: Door
    served: int
    allowance: int

    def __init__(self, door: Door, call_timeout: float = 300.0) -> None:
        self.door = door
        # The guest API's patience for one call (host_tool_shim's call_timeout).
        self.call_timeout = call_timeout
        self.served = 0
        # One more than the cap: the request past it gets the registry's own refusal.
        self.allowance = door.max_calls + 1

    async def __call__(self, flags: int, data: bytes, size: int,
                       call_id: int = 0) -> Tuple[int, Optional[bytes]]:
        if self.served >= self.allowance:
            return _abi.RAW_HOLD, None
        if flags & _abi.CALL_UNREADABLE:
            return _abi.RAW_LOOK_AGAIN, None     # not a file (yet), as maf-sandbox sees it
        if flags & _abi.CALL_OVERSIZED:
            log.warning("host tools: a request is %d bytes against a %d cap, refusing to "
                        "read it", size, self.door.per_file)
            self.served += 1
            return _abi.RAW_RESPOND, self.door.refusal(_TOO_LARGE).encode()
        if not data:
            return _abi.RAW_LOOK_AGAIN, None     # an empty file has not arrived yet
        answer, step_over = await self.answer(data, call_id)
        self.served += 1
        if step_over:
            return _abi.RAW_STEP_OVER, None
        if answer is None:
            return _abi.RAW_HOLD, None           # the door failed: the run is being stopped
        return _abi.RAW_RESPOND, answer.encode("utf-8")

    async def answer(self, data: bytes, call_id: int = 0) -> Tuple[Optional[str], bool]:
        """The response text for one request's bytes, and whether it is an abandoned one
        (stepped over)."""
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError as e:
            log.warning("host tools: a request is not UTF-8: %s", e)
            return self.door.refusal(_NOT_JSON), False
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return self.door.refusal(_NOT_JSON), False
        if not isinstance(parsed, dict):
            return self.door.refusal(_NOT_OBJECT), False
        if parsed.get("abandoned") is True:
            return None, True
        # The guest's JSON, whatever it is: the door checks name and arguments.
        return await self.door(parsed.get("name"), parsed.get("arguments"), call_id), False

    def accepted(self, call_id: int) -> None:
        self.door.accepted(call_id)

    def shim(self) -> bytes:
        """The guest API module for the registry's names: the run puts it in
        R/host_tools/maf_host_tools.py beside the program (mafh_run_options.shim)."""
        from maf_sandbox import host_tool_shim

        from .guest_api import for_registry
        # None only if host_tool_shim's text stopped matching the shim it is read as: then,
        # as before, None.encode below raises AttributeError.
        text = cast(str, for_registry(self.door.names, host_tool_shim, self.call_timeout))
        return text.encode()


def door_for(run: Any, failed: Optional[Callable[[BaseException], None]] = None) -> Door:
    """The door of the installed line for a maf-sandbox run (a HostToolRun, or on the
    current line any HostToolPolicy)."""
    if callable(getattr(run, "dispatch", None)):
        return DispatchDoor(run)
    return PolicyDoor(run, failed)
