"""Decision hooks, description and availability hooks, and hook sets; the per-call
decision pipeline that runs them is ``_decisions``."""

from __future__ import annotations

import inspect
import itertools
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, NoReturn, TypeVar, Union, overload

import attrs

from toolwire._calls import (
    ToolCall,
    TypedCall,
)
from toolwire._errors import HookError, UsageError
from toolwire._exports import publish
from toolwire._tools import Selector, Tool, tool_of

__all__ = [
    "AuditEvent",
    "Complete",
    "AvailabilityHook",
    "DecisionHook",
    "DecisionResult",
    "DescriptionHook",
    "Hidden",
    "HookContext",
    "HookSet",
    "Reject",
    "RunNormally",
    "ToolDecision",
]

logger = logging.getLogger("toolwire.tool_hook")

InT = TypeVar("InT")
_UNCHANGED: Any = object()


@attrs.frozen
class RunNormally(Generic[InT]):
    """Continue with the call, optionally with an edited input (threaded to later hooks)."""

    input: InT = _UNCHANGED


@attrs.frozen
class Complete:
    """Stop: answer the call with this output; the tool is not run."""

    output: Any


@attrs.frozen
class Reject:
    """Stop: answer the call with a rejection carrying this reason."""

    reason: str


ToolDecision = Union[RunNormally[Any], Complete, Reject]


@attrs.frozen
class Hidden:
    """An availability hook's answer that hides a tool and says why: a call the model
    makes to it anyway is answered with the reason (and audited with it). False also
    hides; this is False with a reason."""

    reason: str = attrs.field(validator=attrs.validators.instance_of(str))

    def __bool__(self) -> bool:
        return False


def _principal_text(what: str) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if not isinstance(value, str) or "\x00" in value or len(value) > 512:
            raise UsageError(
                f"Principal.{what} must be text of at most 512 characters, got {value!r:.80}"
            )

    return check


def _groups(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise UsageError(f"Principal.groups must be a list of names, got the string {value!r}")
    groups = frozenset(value)
    bad = [g for g in groups if not isinstance(g, str) or not g or len(g) > 512]
    if bad:
        raise UsageError(f"Principal.groups must be non-empty names, got {bad[0]!r:.80}")
    return groups


@attrs.frozen
class Principal:
    """Who a call is made for.

    ``subject`` identifies them (a user or service id: a token's ``sub``); ``name`` is
    for people to read; ``groups`` their groups or roles; ``client`` the application
    calling on their behalf; ``method`` how the principal was established: ``app`` (the
    application says so), ``cli`` (asserted on the command line with ``--as``),
    ``token`` or ``oauth`` (a gateway checked a credential). A policy may refuse a
    method (toolwire-policy's ``principal_methods``).
    """

    subject: str = attrs.field(validator=_principal_text("subject"))
    name: str = attrs.field(default="", validator=_principal_text("name"))
    groups: frozenset[str] = attrs.field(default=frozenset(), converter=_groups)
    client: str = attrs.field(default="", validator=_principal_text("client"))
    method: str = attrs.field(default="app", validator=_principal_text("method"))

    def __attrs_post_init__(self) -> None:
        if not self.subject:
            raise UsageError("a Principal needs a subject (who the calls are made for)")

    def to_dict(self) -> dict[str, Any]:
        """As audit records and logs keep it (groups sorted)."""
        return {
            "subject": self.subject,
            "name": self.name,
            "groups": sorted(self.groups),
            "client": self.client,
            "method": self.method,
        }


@attrs.frozen
class HookContext:
    """What every hook may know about the turn, without globals.

    ``extra`` is the application's own mapping (user id, tenant, environment);
    ``principal`` who the calls are made for (None: anonymous).
    """

    app: str = ""
    session_id: str = ""
    provider: str = ""
    model: str = ""
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    principal: Principal | None = attrs.field(default=None)

    @principal.validator
    def _check_principal(self, attribute: Any, value: Any) -> None:
        if value is not None and not isinstance(value, Principal):
            raise UsageError(
                f"HookContext.principal must be a toolwire.Principal or None, "
                f"got {type(value).__name__}"
            )


AuditKind = str
"""One of :data:`AUDIT_KINDS`."""

#: What an :class:`AuditEvent` records: an attempt no decision hook saw, or a switch.
AUDIT_KINDS = frozenset(
    {
        "unknown_tool",  # the model called a tool that does not exist
        "not_offered",  # the tool exists but was not offered this round
        "hidden",  # an availability hook (a policy's, a tool pack's) hid the tool
        "invalid_arguments",  # the arguments were not JSON, or not valid for the schema
        "withheld",  # a policy that failed to load withheld a result
        "cancelled",  # a call allowed to run ended with no result (cancelled while it ran)
        "refused",  # a decision hook, an approver or a check refused a call: it never ran
        "policies_off",  # a policy was turned off by an explicit switch
    }
)


@attrs.frozen
class AuditEvent:
    """One thing toolwire answered without asking a decision hook, for the audit log.

    ``kind`` is one of ``unknown_tool``, ``not_offered``, ``hidden``,
    ``invalid_arguments``, ``withheld``, ``cancelled``, ``refused`` or ``policies_off``. ``tool``,
    ``call_id`` and ``arguments`` (the raw argument text the model sent: hash it, never
    log it) are empty for ``policies_off``; ``reason`` says what happened; ``source``
    names who decided (``toolwire``, or the plugin that hid the tool, or the switch).

    ``cancelled``: a call the decision hooks let run ended with no result (the caller
    was cancelled while it ran or waited to run), so no result hook will see it;
    ``refused``: a call was refused before it ran, by a decision hook, an approver or a
    check after the hooks (a policy that let it through hears that it never ran). For
    both, ``call`` is the model's call itself, so a policy can free what it holds for
    that call (a concurrency slot) however the call ended.
    """

    kind: AuditKind
    reason: str
    tool: str = ""
    call_id: str = ""
    arguments: str = attrs.field(default="", repr=False)
    source: str = "toolwire"
    call: ToolCall | None = attrs.field(default=None, repr=False, eq=False)


#: The context of a round whose turn gave none: shared (one per round cost as much as a
#: hook), so its ``extra`` is read-only: an empty context is not a scratchpad.
_EMPTY_CONTEXT = HookContext(extra=MappingProxyType({}))

DecisionResult = Union[ToolDecision, None, Awaitable[Union[ToolDecision, None]]]
"""What a decision hook returns: a decision, None (run unchanged), or an awaitable of either."""

DecisionHook = Union[
    Callable[[TypedCall[InT]], DecisionResult],
    Callable[[TypedCall[InT], HookContext], DecisionResult],
]
"""A decision hook for calls whose input is ``InT``: ``fn(call)`` or ``fn(call, context)``."""

DescriptionHook = Union[
    Callable[[Tool[Any, Any]], Union[str, None]],
    Callable[[Tool[Any, Any], str], Union[str, None]],
    Callable[[Tool[Any, Any], str, HookContext], Union[str, None]],
]
"""A description hook: ``fn(tool, current_description, context)`` (trailing arguments optional)."""

AvailabilityHook = Union[
    Callable[[Tool[Any, Any]], Union[bool, Hidden]],
    Callable[[Tool[Any, Any], HookContext], Union[bool, Hidden]],
]
"""An availability hook: ``fn(tool, context)`` (context optional); False, or
:class:`Hidden` with a reason, hides the tool."""

NameTarget = Union[Selector, str, None]
"""A hook key by name: a wire name, a Selector, or None for every tool."""

HookTarget = Union[Selector, str, Tool[Any, Any], type, Callable[..., Any], None]
"""What a hook is keyed by: a tool, a @tool_input class or input type, a wire name, a
Selector, a tool's function, or None for every tool."""

_DecisionT = TypeVar("_DecisionT", bound=DecisionHook[Any])
_DescriptionT = TypeVar("_DescriptionT", bound=DescriptionHook)
_AvailabilityT = TypeVar("_AvailabilityT", bound=AvailabilityHook)


@attrs.frozen
class _Hook:
    fn: Callable[..., Any]
    name: str
    target: Any  # None (every tool), a type, a Tool (by origin), or a wire name
    arity: int
    guard: bool = False  # registered in a guard set: re-run on inputs edited after it
    #: Seconds the hook may take (a plugin's, TOOLWIRE_HOOK_TIMEOUT): the pipeline times it
    #: and rejects the call past it; None: untimed (an application's own hooks).
    budget: float | None = None

    def matches(self, tool: Tool[Any, Any]) -> bool:
        t = self.target
        if t is None:
            return True
        if isinstance(t, str):
            # The wire name, or the tool's own name before a prefix mount renamed it: a hook
            # set written for a tool pack keeps applying wherever the pack is mounted.
            return tool.name == t or tool.origin.name == t
        if isinstance(t, Tool):
            return tool.origin is t.origin
        if isinstance(t, type):
            return bool(tool.input_type is t)
        # A plain function: the tool a toolset built from it.
        return tool.fn is t


def _hook_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else str(name)


def _arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments a hook takes (read once, at registration)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 99
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 99
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _normalise_target(target: Any) -> Any:
    if target is None:
        return None
    if isinstance(target, Selector):
        return target.name
    if isinstance(target, str):
        return target
    if isinstance(target, Tool):
        return target
    if isinstance(target, type):
        found = getattr(target, "__toolwire_tool__", None)
        return found if isinstance(found, Tool) else target
    if inspect.isfunction(target) or inspect.ismethod(target):
        # Matched by identity against the tool's implementation (see _Hook.matches).
        return target
    return tool_of(target)


def _is_plain_hook(target: Any) -> bool:
    """True for a function that is a hook, not a tool (the 0.1 ``hide(fn)`` form)."""
    if target is None or isinstance(target, (str, type, Tool)) or not callable(target):
        return False
    try:
        tool_of(target)
    except Exception:
        return True
    return False


_STAMPS = itertools.count()


class HookSet:
    """Hooks for a toolset: per-tool decision hooks, description hooks, availability hooks.

    Key hooks by a tool, a @tool_input class, an input type, a wire name or a
    Selector; ``None`` means every tool. A decision hook is ``fn(call)`` or
    ``fn(call, context)``, sync or async, returning RunNormally / Complete /
    Reject (None means RunNormally unchanged). Sets merge (``merge``) and nest
    with toolsets (``Toolset(hooks=...)``).
    """

    __slots__ = ("_cache", "_decision", "_description", "_stamp", "_visibility", "guard", "name")

    def __init__(self, name: str = "hooks", *, guard: bool = False) -> None:
        self.name = name
        #: Hooks registered in a guard set (an organisation policy's) see the final input:
        #: if a later hook edits the input, they run again on the edit (merging keeps this).
        self.guard = guard
        self._decision: list[_Hook] = []
        self._description: list[_Hook] = []
        self._visibility: list[_Hook] = []
        self._cache: dict[tuple[str, Tool[Any, Any]], tuple[_Hook, ...]] = {}
        #: Unique among every set's stamps, renewed on each change: what the chain cache
        #: (``chain_cache``) is keyed by, so it never holds the set itself.
        self._stamp = next(_STAMPS)

    def __repr__(self) -> str:
        return (
            f"<HookSet {self.name!r}: {len(self._decision)} decision, "
            f"{len(self._description)} description, {len(self._visibility)} availability>"
        )

    def __bool__(self) -> bool:
        return bool(self._decision or self._description or self._visibility)

    def _add(
        self,
        bucket: list[_Hook],
        target: HookTarget,
        fn: object,
        name: str | None,
        budget: float | None = None,
    ) -> None:
        if not callable(fn):
            raise HookError(f"a hook must be callable, got {fn!r} ({type(fn).__name__})")
        bucket.append(
            _Hook(
                fn,
                name or _hook_name(fn),
                _normalise_target(target),
                _arity(fn),
                self.guard,
                budget,
            )
        )
        self._cache.clear()
        self._stamp = next(_STAMPS)

    def _on_timed(self, fn: Callable[..., Any], name: str, budget: float) -> None:
        """A decision hook for every tool, called ``fn(call, context)`` and held to
        ``budget`` seconds by the pipeline (for the plugin host: a hookimpl, sync or async).

        Timed in the pipeline rather than by a wrapper: one frame less per hook and call.
        """
        self._add(self._decision, None, fn, name, budget)

    # Keyed by a tool or an input type, the hook is typed by that input (the first two
    # overloads). Keyed by a name, a Selector or None, it takes any hook. Keyed by a tool's
    # function (a class is callable too), only a hook for any input (TypedCall[Any]) is
    # accepted, so a hook written for another input type is still caught.
    @overload
    def on(  # type: ignore[overload-overlap]
        self, target: Tool[InT, Any] | type[InT], fn: None = None, *, name: str | None = None
    ) -> Callable[[DecisionHook[InT]], DecisionHook[InT]]: ...
    @overload
    def on(
        self, target: Tool[InT, Any] | type[InT], fn: DecisionHook[InT], *, name: str | None = None
    ) -> DecisionHook[InT]: ...
    @overload
    def on(
        self, target: NameTarget = None, fn: None = None, *, name: str | None = None
    ) -> Callable[[_DecisionT], _DecisionT]: ...
    @overload
    def on(self, target: NameTarget, fn: _DecisionT, *, name: str | None = None) -> _DecisionT: ...
    @overload
    def on(
        self, target: Callable[..., Any], fn: None = None, *, name: str | None = None
    ) -> Callable[[DecisionHook[NoReturn]], DecisionHook[NoReturn]]: ...
    @overload
    def on(
        self, target: Callable[..., Any], fn: DecisionHook[NoReturn], *, name: str | None = None
    ) -> DecisionHook[NoReturn]: ...
    def on(
        self,
        target: HookTarget = None,
        fn: DecisionHook[Any] | None = None,
        *,
        name: str | None = None,
    ) -> Any:
        """Register a decision hook for ``target`` (None: every tool). Usable as a decorator.

        Keyed by an input type (``on(WeatherArgs, fn)``) or a tool, ``fn`` is typed to take
        ``TypedCall[WeatherArgs]``; mypy rejects a hook written for another input type.
        """
        if fn is None:

            def deco(f: _DecisionT) -> _DecisionT:
                self._add(self._decision, target, f, name)
                return f

            return deco
        self._add(self._decision, target, fn, name)
        return fn

    @overload
    def describe(
        self, target: HookTarget = None, fn: None = None, *, name: str | None = None
    ) -> Callable[[_DescriptionT], _DescriptionT]: ...
    @overload
    def describe(
        self, target: HookTarget, fn: _DescriptionT, *, name: str | None = None
    ) -> _DescriptionT: ...
    def describe(
        self,
        target: HookTarget = None,
        fn: DescriptionHook | None = None,
        *,
        name: str | None = None,
    ) -> Any:
        """Register a description hook: ``fn(tool, current_description, context) -> str | None``."""
        if fn is None:

            def deco(f: _DescriptionT) -> _DescriptionT:
                self._add(self._description, target, f, name)
                return f

            return deco
        self._add(self._description, target, fn, name)
        return fn

    @overload
    def hide(
        self, target: HookTarget = None, fn: None = None, *, name: str | None = None
    ) -> Callable[[_AvailabilityT], _AvailabilityT]: ...
    @overload
    def hide(
        self, target: HookTarget, fn: _AvailabilityT, *, name: str | None = None
    ) -> _AvailabilityT: ...
    def hide(
        self,
        target: HookTarget = None,
        fn: AvailabilityHook | None = None,
        *,
        name: str | None = None,
    ) -> Any:
        """Register an availability hook: ``fn(tool, context) -> bool``; False hides the tool.

        The same argument order as :meth:`on` and :meth:`describe`: ``hide(target, fn)``,
        ``hide(None, fn)`` for every tool, or ``@hide(target)`` as a decorator. The 0.1
        form ``hide(fn)`` (a plain function, not a tool, as the only argument) still
        registers ``fn`` for every tool, with a DeprecationWarning.
        """
        if fn is None and _is_plain_hook(target):
            warnings.warn(
                "HookSet.hide(fn) is deprecated: write hide(None, fn) (every tool) or "
                "hide(target, fn), the argument order of on() and describe()",
                DeprecationWarning,
                stacklevel=2,
            )
            self._add(self._visibility, None, target, name)
            return target
        if fn is None:

            def deco(f: _AvailabilityT) -> _AvailabilityT:
                self._add(self._visibility, target, f, name)
                return f

            return deco
        self._add(self._visibility, target, fn, name)
        return fn

    def extend(self, other: HookSet) -> HookSet:
        """Append another set's hooks to this one; returns self."""
        self._decision.extend(other._decision)
        self._description.extend(other._description)
        self._visibility.extend(other._visibility)
        self._cache.clear()
        self._stamp = next(_STAMPS)
        return self

    def merge(self, other: HookSet) -> HookSet:
        """A new set: this set's hooks, then ``other``'s."""
        out = HookSet(f"{self.name}+{other.name}")
        out.extend(self)
        out.extend(other)
        return out

    def decision_hooks(self, tool: Tool[Any, Any]) -> tuple[_Hook, ...]:
        """The decision hooks that apply to ``tool``, in order (cached per tool)."""
        # Whether a hook matches depends only on the wire name and the tool it was built from.
        key = (tool.name, tool.origin)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        found = tuple(h for h in self._decision if h.matches(tool))
        self._cache[key] = found
        return found


def _call_hook(h: _Hook, *args: Any) -> Any:
    return h.fn(*args[: h.arity]) if h.arity < len(args) else h.fn(*args)


# -- availability and descriptions (used by resolve_turn) ---------------------------


def visible_tools(
    sets: Sequence[HookSet],
    tools: list[Tool[Any, Any]],
    ctx: HookContext,
    hidden: dict[str, str] | None = None,
    why: dict[str, str] | None = None,
) -> list[Tool[Any, Any]]:
    """The tools no availability hook hides; ``hidden`` (when given) gets, for each tool
    hidden, the name of the hook that hid it, and ``why`` the reason it gave
    (:class:`Hidden`), if any."""
    hooks = [h for s in sets for h in s._visibility]
    if not hooks:
        return tools
    out = []
    for tool in tools:
        shown = True
        for h in hooks:
            if not h.matches(tool):
                continue
            try:
                verdict = _call_hook(h, tool, ctx)
            except Exception as exc:
                # Fail closed: a broken availability hook hides the tool.
                logger.warning("availability hook %s failed for %s: %r", h.name, tool.name, exc)
                verdict = False
            if inspect.isawaitable(verdict):
                _close(verdict)
                raise HookError(f"availability hook `{h.name}` is async; it must be sync")
            if not verdict:
                shown = False
                if hidden is not None:
                    hidden[tool.name] = h.name
                if why is not None and isinstance(verdict, Hidden) and verdict.reason:
                    why[tool.name] = verdict.reason
                break
        if shown:
            out.append(tool)
    return out


def describe_tools(
    sets: Sequence[HookSet],
    tools: list[Tool[Any, Any]],
    descriptions: dict[str, str],
    ctx: HookContext,
) -> dict[str, str]:
    hooks = [h for s in sets for h in s._description]
    if not hooks:
        return descriptions
    for tool in tools:
        current = descriptions[tool.name]
        for h in hooks:
            if not h.matches(tool):
                continue
            try:
                new = _call_hook(h, tool, current, ctx)
            except Exception as exc:
                # A broken description hook leaves the description as it was (and says so).
                logger.warning("description hook %s failed for %s: %r", h.name, tool.name, exc)
                continue
            if inspect.isawaitable(new):
                _close(new)
                raise HookError(f"description hook `{h.name}` is async; it must be sync")
            if new is not None:
                if not isinstance(new, str):
                    raise HookError(
                        f"description hook `{h.name}` returned {type(new).__name__} for "
                        f"`{tool.name}`; expected a string or None"
                    )
                current = new
        descriptions[tool.name] = current
    return descriptions


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        close()


publish(globals())
