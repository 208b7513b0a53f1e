"""Host tools: Python callables, plain or async, with the parameters they declare, and the
limits of a run; turned into a libmafhost registry for each run."""
import asyncio
import ctypes
import inspect
import json
import traceback
import typing
from dataclasses import dataclass, fields
from typing import (Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Set,
                    Tuple, Union, overload)

from . import _abi
from .errors import ConfigError, Refusal

#: The JSON types a parameter may declare (the library's, _abi.JSON_TYPES).
JsonType = Literal["any", "string", "number", "integer", "boolean", "object", "array", "null"]

# Python annotations and the JSON types they declare.
_ANNOTATION_TYPES: Dict[object, JsonType] = {
    str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
    list: "array", type(None): "null", Any: "any"}


@dataclass(frozen=True)
class Param:
    """A declared parameter: its JSON type ("string", "number", "integer", "boolean",
    "object", "array", "null", "any") and whether a call must give it."""
    type: JsonType = "any"
    required: bool = True


def _annotation_type(ann: Any, where: str) -> JsonType:
    origin = typing.get_origin(ann) or ann
    if origin in _ANNOTATION_TYPES:
        return _ANNOTATION_TYPES[origin]
    if origin is typing.Union:
        # Optional[X]: X, not required when it has a default
        kinds = {_annotation_type(a, where) for a in typing.get_args(ann) if a is not type(None)}
        return kinds.pop() if len(kinds) == 1 else "any"
    raise ConfigError(f"{where}: cannot declare a JSON type for the annotation {ann!r} "
                      "(give params= explicitly)")


def _params_from_signature(fn: Callable[..., Any], name: str) -> Optional[Dict[str, Param]]:
    """The parameters a function declares: each keyword-capable parameter, typed by its
    annotation (none: any), required unless it has a default. None when it takes **kwargs
    (then any arguments are passed)."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    params: Dict[str, Param] = {}
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL):
            raise ConfigError(f"the tool {name!r}: its parameter {p.name!r} cannot be given "
                              "by name (tools are called with keyword arguments)")
        ann = hints.get(p.name, Any)
        params[p.name] = Param(_annotation_type(ann, f"the tool {name!r}, parameter "
                                                     f"{p.name!r}"),
                               p.default is p.empty)
    return params


#: What Tool.invoke returns: (value_json, None, None) or (None, refusal, note or None).
Answer = Union[Tuple[str, None, None], Tuple[None, str, Optional[str]]]


class Tool:
    """A host tool: fn called with the call's arguments as keyword arguments; its return
    value (anything json.dumps takes) is the program's answer. fn may be async. A plain fn
    runs in a worker thread (so a slow tool does not stall other runs), unless inline=True.
    Raising Refusal refuses the call with its message; any other exception refuses it
    naming the tool, and the traceback goes to the operator (the event's detail), never to
    the program.

    params: {name: Param | type name} to declare parameters; default: from fn's signature
    and annotations (str, int, float, bool, dict, list, Optional[...], Any). A tool declaring
    none takes any JSON object."""

    fn: Callable[..., Any]
    name: str
    description: Optional[str]
    params: Dict[str, Param]
    is_async: bool
    inline: bool

    def __init__(self, fn: Callable[..., Any], *, name: Optional[str] = None,
                 description: Optional[str] = None,
                 params: Optional[Mapping[str, Union[Param, JsonType]]] = None,
                 inline: bool = False) -> None:
        if not callable(fn):
            raise ConfigError(f"a tool must be callable, not {type(fn).__name__}")
        self.fn = fn
        named: Optional[str] = name or getattr(fn, "__name__", None)
        if not named:
            raise ConfigError("a tool needs a name (name=...)")
        self.name = named
        self.description = description if description is not None else \
            (inspect.getdoc(fn) or "").split("\n\n")[0] or None
        if params is None:
            params = _params_from_signature(fn, self.name)
        self.params = {k: (v if isinstance(v, Param) else Param(v))
                       for k, v in (params or {}).items()}
        self.is_async = inspect.iscoroutinefunction(fn) or \
            inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        self.inline = inline

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    async def invoke(self, arguments: Mapping[str, Any]) -> Answer:
        """(value_json, refusal, note): exactly one of value_json and refusal is set."""
        try:
            if self.is_async:
                value = await self.fn(**arguments)
            elif self.inline:
                value = self.fn(**arguments)
            else:
                value = await asyncio.to_thread(self.fn, **arguments)
        except Refusal as e:
            return None, str(e) or f"the host tool '{self.name}' refused the call", None
        except Exception as e:  # a tool's failure is the program's refusal, never ours
            what = str(e) or type(e).__name__
            return (None, f"the host tool '{self.name}' failed: {what}", _traceback(e))
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False), None, None
        except (TypeError, ValueError) as e:
            return (None, f"the host tool '{self.name}' gave an answer that is not JSON",
                    f"{type(e).__name__}: {e}: {value!r:.2000}")


def _traceback(e: BaseException) -> str:
    """The traceback of a tool's exception, from the tool's own frames on (not this
    package's, asyncio's or the worker thread's)."""
    skip = (__file__, asyncio.__file__.rsplit("/", 1)[0], "/concurrent/futures/")
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not any(f.filename.startswith(s) or s in f.filename for s in skip)]
    return "".join(["Traceback (most recent call last):\n"] +
                   traceback.format_list(frames) +
                   traceback.format_exception_only(type(e), e))


@overload
def tool(fn: Callable[..., Any], *, name: Optional[str] = ...,
         description: Optional[str] = ...,
         params: Optional[Mapping[str, Union[Param, JsonType]]] = ...,
         inline: bool = ...) -> Tool: ...


@overload
def tool(fn: None = ..., *, name: Optional[str] = ..., description: Optional[str] = ...,
         params: Optional[Mapping[str, Union[Param, JsonType]]] = ...,
         inline: bool = ...) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Optional[Callable[..., Any]] = None,
         **kw: Any) -> Union[Tool, Callable[[Callable[..., Any]], Tool]]:
    """Decorator: @tool or @tool(name=..., description=..., params=..., inline=...) makes
    a Tool of a function."""
    if fn is None:
        return lambda f: Tool(f, **kw)
    return Tool(fn, **kw)


#: A host tool as given: a Tool, or a callable made one.
ToolLike = Union[Tool, Callable[..., Any]]
#: What as_tools takes: none, a dict of names to tools, or tools (each named by itself).
ToolsArg = Union[None, Dict[str, ToolLike], Iterable[ToolLike]]


def _named(t: ToolLike, name: str) -> Tool:
    """t (a Tool or a callable) as a Tool of that name."""
    if not isinstance(t, Tool):
        return Tool(t, name=name)
    if t.name == name:
        return t
    return Tool(t.fn, name=name, description=t.description, params=t.params, inline=t.inline)


# Two overloads, so that a dict display of tools and callables is read as the first (mypy
# infers it as Dict[str, object] against the whole union).
@overload
def as_tools(tools: Optional[Dict[str, ToolLike]]) -> List[Tool]: ...


@overload
def as_tools(tools: Iterable[ToolLike]) -> List[Tool]: ...


def as_tools(tools: ToolsArg) -> List[Tool]:
    """tools as a list of Tool: a Tool, a callable, or a mapping of names to either."""
    if tools is None:
        return []
    if isinstance(tools, dict):
        items = [_named(t, n) for n, t in tools.items()]
    else:
        items = [t if isinstance(t, Tool) else Tool(t) for t in tools]
    seen: Set[str] = set()
    for t in items:
        if t.name in seen:
            raise ConfigError(f"two tools are named {t.name!r}")
        seen.add(t.name)
    return items


@dataclass(frozen=True)
class Limits:
    """What a run may take: answers (refusals included), bytes of one answer and of all,
    bytes of one request, and bytes of the program's output read back."""
    max_calls: int = 16
    max_response_bytes: int = 8 << 20
    max_total_response_bytes: int = 64 << 20
    max_request_bytes: int = 1 << 20
    max_output_bytes: int = 1 << 20


def _error_text(lib: _abi.Library, rc: int, err: _abi.Error) -> str:
    message: bytes = err.message
    return message.decode(errors="replace") or lib.strerror_text(rc)


def build_registry(lib: _abi.Library, tools: Iterable[Tool], limits: Limits,
                   pass_through: bool = False) -> ctypes.c_void_p:
    """A registry (the library's handle) with tools and limits, or (pass_through) one that
    hands every request to the driver as it is; the caller frees it. ConfigError with the
    library's sentence for a bad tool or limit."""
    reg = ctypes.c_void_p()
    if lib.registry_new(ctypes.byref(reg)) < 0:
        raise MemoryError("libmafhost: out of memory")
    try:
        if pass_through:
            err = _abi.Error()
            rc = lib.registry_set_pass_through(reg, None, None, ctypes.byref(err))
            if rc < 0:
                raise ConfigError(_error_text(lib, rc, err), rc)
        for t in tools:
            _add(lib, reg, t)
        lim = _abi.Limits()
        lib.limits_init(ctypes.byref(lim))
        for f in fields(Limits):
            setattr(lim, f.name, getattr(limits, f.name))
        err = _abi.Error()
        rc = lib.registry_set_limits(reg, ctypes.byref(lim), ctypes.byref(err))
        if rc < 0:
            raise ConfigError(_error_text(lib, rc, err), rc)
    except BaseException:
        lib.registry_free(reg)
        raise
    return reg


def _add(lib: _abi.Library, reg: ctypes.c_void_p, t: Tool) -> None:
    params = (_abi.Param * max(1, len(t.params)))()
    for i, (pname, p) in enumerate(t.params.items()):
        code = ctypes.c_int()
        if lib.json_type_from_name(p.type.encode(), ctypes.byref(code)) < 0:
            raise ConfigError(f"the tool {t.name!r}: its parameter {pname!r} has the "
                              f"unknown type {p.type!r} (one of {', '.join(_abi.JSON_TYPES)})")
        params[i] = _abi.Param(pname.encode(), code.value, int(p.required))
    spec = _abi.Tool(size=ctypes.sizeof(_abi.Tool), name=t.name.encode(),
                     description=t.description.encode() if t.description else None,
                     params=params, n_params=len(t.params))
    err = _abi.Error()
    rc = lib.registry_add(reg, ctypes.byref(spec), ctypes.byref(err))
    if rc < 0:
        raise ConfigError(_error_text(lib, rc, err), rc)
