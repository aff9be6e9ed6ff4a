"""Decision hooks, description and availability hooks, hook sets, and the per-call pipeline."""

from __future__ import annotations

import inspect
import itertools
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, NoReturn, TypeVar, Union, overload

import attrs
import pydantic_core

from toolwire._calls import (
    HandledCall,
    RejectedCall,
    TypedCall,
    rejection_content,
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
        "policies_off",  # a policy was turned off by an explicit switch
    }
)


@attrs.frozen
class AuditEvent:
    """One thing toolwire answered without asking a decision hook, for the audit log.

    ``kind`` is one of ``unknown_tool``, ``not_offered``, ``hidden``,
    ``invalid_arguments``, ``withheld`` or ``policies_off``. ``tool``, ``call_id`` and
    ``arguments`` (the raw argument text the model sent: hash it, never log it) are
    empty for ``policies_off``; ``reason`` says what happened; ``source`` names who
    decided (``toolwire``, or the plugin that hid the tool, or the switch).
    """

    kind: AuditKind
    reason: str
    tool: str = ""
    call_id: str = ""
    arguments: str = attrs.field(default="", repr=False)
    source: str = "toolwire"


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
    Callable[[Tool[Any, Any]], bool],
    Callable[[Tool[Any, Any], HookContext], bool],
]
"""An availability hook: ``fn(tool, context)`` (context optional); False hides the tool."""

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


_STAMPS = itertools.count()
_clock = time.perf_counter


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


def _over_budget(label: str, elapsed: float, budget: float) -> Reject:
    return Reject(
        f"hook `{label}` took {elapsed:.3g} s, over its {budget:g} s budget "
        f"(TOOLWIRE_HOOK_TIMEOUT); the call was not run"
    )


def _timed_call(h: _Hook, budget: float, call: TypedCall[Any], ctx: HookContext) -> Any:
    """A timed hook's answer, or the over-budget rejection when its call took too long
    (an awaitable it returned is left to the pass: awaited within the budget, or closed)."""
    start = _clock()
    decision = h.fn(call, ctx)
    elapsed = _clock() - start
    return _late(h, decision, elapsed, budget) if elapsed > budget else decision


def _late(h: _Hook, decision: Any, elapsed: float, budget: float) -> Reject:
    """The rejection for a hook that answered past its budget (what it said is dropped)."""
    if inspect.isawaitable(decision):
        _close(decision)
    return _over_budget(h.name, elapsed, budget)


async def _await_within(aw: Awaitable[Any], label: str, budget: float) -> Any:
    """The hook's answer if it comes within ``budget``, else a rejection.

    Not ``asyncio.wait_for``: on Python 3.11 it waits for the cancelled hook to finish and
    returns its answer, so a hook that swallows cancellation would be obeyed after its
    budget. Past the budget the call is rejected, whatever the hook answers later; the
    hook's task is cancelled and left to end on its own.
    """
    import asyncio  # here, not at the top: a sync loop needs no event loop

    task = asyncio.ensure_future(aw)
    done, _ = await asyncio.wait((task,), timeout=budget)
    if task in done:
        return task.result()
    task.cancel()
    task.add_done_callback(_consume)
    return _over_budget(label, budget, budget)


def _consume(task: Any) -> None:
    """Read a late hook task's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


# -- availability and descriptions (used by resolve_turn) ---------------------------


def visible_tools(
    sets: Sequence[HookSet],
    tools: list[Tool[Any, Any]],
    ctx: HookContext,
    hidden: dict[str, str] | None = None,
) -> list[Tool[Any, Any]]:
    """The tools no availability hook hides; ``hidden`` (when given) gets, for each tool
    hidden, the name of the hook that hid it."""
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


# -- the decision pipeline -------------------------------------------------------------

Outcome = Union[TypedCall[Any], HandledCall, RejectedCall]


class _Timed(list[_Hook]):
    """The hooks of a chain that are all timed (see _timed_pass); ``budget``: the smallest
    of their budgets; ``exact``: time each hook on its own (set once the chain was slow)."""

    __slots__ = ("budget", "exact")

    def __init__(self, hooks: list[_Hook]) -> None:
        super().__init__(hooks)
        self.budget: float = min((h.budget for h in hooks if h.budget is not None), default=0.0)
        self.exact = False


#: A tool's decision hooks: the (hook, is_guard) pairs; the index of the last guard hook
#: that a non-guard hook follows (-1: none), after which the input is fingerprinted; and
#: the hooks alone when every one is timed (a plugin's) and nothing is fingerprinted, for
#: the pipeline's fast pass (else None).
_Chain = tuple[list[tuple[_Hook, bool]], int, "_Timed | None"]


def _hooks_for(sets: Sequence[HookSet], tool: Tool[Any, Any]) -> _Chain:
    """The chain of a tool's decision hooks in these sets (see _Chain)."""
    out: list[tuple[_Hook, bool]] = []
    for s in sets:
        if s._decision:
            out.extend((h, h.guard or s.guard) for h in s.decision_hooks(tool))
    snap = -1
    for i, (_, guard) in enumerate(out):
        if guard and any(not g for _, g in out[i + 1 :]):
            snap = i
    timed = snap == -1 and all(h.budget is not None for h, _ in out)
    return out, snap, _Timed([h for h, _ in out]) if timed else None


def _fingerprint(value: Any) -> bytes:
    # What the guards approved, by value: an in-place edit of a mutable field (a list in
    # a frozen model, a plain @tool_input model) changes this even when the object is the same.
    return pydantic_core.to_json(value, fallback=repr)


def _reject(call: TypedCall[Any], reason: str, source: str) -> RejectedCall:
    return RejectedCall(
        call.call, reason, source, call.call.result(rejection_content(reason), is_error=True)
    )


def _failed(call: TypedCall[Any], h: _Hook, exc: BaseException) -> RejectedCall:
    # The model sees the hook and the exception type; the message (which may hold
    # internal detail: hosts, credentials) goes only to the log.
    reason = f"hook `{h.name}` failed ({type(exc).__name__})"
    logger.warning(
        "tool %s call %s rejected: hook %s failed: %s: %s",
        call.name,
        call.id,
        h.name,
        type(exc).__name__,
        exc,
    )
    return _reject(call, reason, h.name)


def _interpret(
    call: TypedCall[Any], start: TypedCall[Any], h: _Hook, decision: Any
) -> Outcome | None:
    """None means: continue with ``call`` (possibly edited by the caller)."""
    if decision is None:
        return None
    if isinstance(decision, RunNormally):
        return None
    if isinstance(decision, Complete):
        # The handled call carries the input as it was before this pass.
        try:
            result = start.complete(decision.output)
            return HandledCall(start, decision.output, result, h.name)
        except Exception as exc:  # an output that cannot be serialised: fail closed
            return _failed(call, h, exc)
    if isinstance(decision, Reject):
        return _reject(call, _reason_text(decision.reason, h.name), h.name)
    return _reject(
        call,
        f"hook `{h.name}` returned {type(decision).__name__}; expected RunNormally, "
        f"Complete, Reject or None",
        h.name,
    )


def _is_plain_hook(target: Any) -> bool:
    """True for a function that is a hook, not a tool (the 0.1 ``hide(fn)`` form)."""
    if target is None or isinstance(target, (str, type, Tool)) or not callable(target):
        return False
    try:
        tool_of(target)
    except Exception:
        return True
    return False


def _reason_text(reason: Any, hook: str) -> str:
    """A Reject's reason as text; a reason that cannot be shown still rejects the call."""
    if isinstance(reason, str):
        return reason
    try:
        return str(reason)
    except Exception as exc:
        return (
            f"hook `{hook}` rejected the call (its reason could not be shown: {type(exc).__name__})"
        )


def _thread(call: TypedCall[Any], h: _Hook, decision: Any) -> TypedCall[Any] | RejectedCall:
    if isinstance(decision, RunNormally) and decision.input is not _UNCHANGED:
        try:
            # Revalidated even when it is an instance of the input model: an instance may
            # have been built with model_construct or changed after it was validated.
            value = call.tool.validate_python(decision.input, revalidate=True)
        except Exception as exc:
            return _reject(
                call,
                f"hook `{h.name}` edited the input into something invalid for `{call.name}`: {exc}",
                h.name,
            )
        return call.with_input(value)
    return call


def _log(call: TypedCall[Any], outcome: Outcome) -> None:
    if isinstance(outcome, TypedCall):
        # Argument values are not logged (a policy may redact them, and logs outlive the
        # call): whether a hook edited the input is what a reader needs here.
        edited = " (input edited by a hook)" if outcome.edited else ""
        logger.debug("tool=%s call=%s decision=run%s", call.name, call.id, edited)
    elif isinstance(outcome, HandledCall):
        logger.debug("tool=%s call=%s decision=complete", call.name, call.id)
    else:
        logger.debug(
            "tool=%s call=%s decision=reject source=%s reason=%s",
            call.name,
            call.id,
            outcome.source,
            outcome.reason,
        )


def _step(
    call: TypedCall[Any], start: TypedCall[Any], h: _Hook, decision: Any
) -> tuple[TypedCall[Any], Outcome | None]:
    """Apply one hook's decision: the (maybe edited) call, and an outcome if it ends here."""
    outcome = _interpret(call, start, h, decision)
    if outcome is not None:
        return call, outcome
    threaded = _thread(call, h, decision)
    if isinstance(threaded, RejectedCall):
        return call, threaded
    return threaded, None


def _sync_pass(
    call: TypedCall[Any], chain: _Chain, ctx: HookContext
) -> tuple[Outcome, bytes | None]:
    """One pass of the pipeline: the outcome, and the fingerprint of the input as the
    guards approved it (None when no non-guard hook follows a guard)."""
    hooks, snap_at, timed = chain
    if timed is not None:
        return _timed_pass(call, timed, ctx), None
    start = call
    approved: bytes | None = None
    for i, (h, _guard) in enumerate(hooks):
        budget = h.budget
        try:
            if budget is not None:  # _timed_call, inlined
                started = _clock()
                decision = h.fn(call, ctx)
                elapsed = _clock() - started
                if elapsed > budget:
                    decision = _late(h, decision, elapsed, budget)
            else:
                decision = h.fn(call, ctx) if h.arity == 2 else _call_hook(h, call, ctx)
        except (Exception, SystemExit, GeneratorExit) as exc:  # a hook cannot end the program
            return _failed(call, h, exc), approved
        if decision is not None:  # None, the common case: no opinion, nothing to interpret
            call, outcome = _sync_step(call, start, h, decision)
            if outcome is not None:
                return outcome, approved
        if i == snap_at:
            approved = _fingerprint(call.input)
    return call, approved


def _sync_step(
    call: TypedCall[Any], start: TypedCall[Any], h: _Hook, decision: Any
) -> tuple[TypedCall[Any], Outcome | None]:
    """_step in a sync pass: an awaitable (an async hook) cannot be waited for there."""
    if inspect.isawaitable(decision):
        _close(decision)
        reason = f"hook `{h.name}` is async; use `await round.aapply_hooks(...)`"
        return call, _reject(call, reason, h.name)
    return _step(call, start, h, decision)


def _timed_pass(call: TypedCall[Any], hooks: _Timed, ctx: HookContext) -> Outcome:
    """_sync_pass for a chain of plugin hooks only (each timed, none fingerprinted): the
    same steps without the general pass's bookkeeping.

    The clock is read where the chain starts, where a hook answers, and where it ends: a
    stretch of hooks that had no opinion and took no longer than the smallest budget among
    them kept every budget (none of them can have taken longer than all of them together).
    A stretch that took longer cannot say which hook was slow, so the call is refused (a
    hook over its budget is never let through) and from then on the chain is timed hook by
    hook (_exact_pass), as a chain that is slow once will be again. Hooks take microseconds
    and budgets seconds: reading the clock once per hook was most of a hook's cost."""
    if hooks.exact:
        return _exact_pass(call, hooks, ctx)
    start = call
    mark = _clock()
    first = 0  # the first hook of the stretch since `mark`
    for i, h in enumerate(hooks):
        try:
            decision = h.fn(call, ctx)
        except (Exception, SystemExit, GeneratorExit) as exc:  # a hook cannot end the program
            return _failed(call, h, exc)
        if decision is not None:
            late = _stretch_late(hooks, first, i, _clock() - mark)
            if late is not None:
                if inspect.isawaitable(decision):
                    _close(decision)
                decision = Reject(late)  # what the hook said is dropped
            call, outcome = _sync_step(call, start, h, decision)
            if outcome is not None:
                return outcome
            mark = _clock()  # what followed is not the next hook's time
            first = i + 1
    elapsed = _clock() - mark
    if elapsed <= hooks.budget:  # _stretch_late's common case, inlined: every pass ends here
        return call
    late = _stretch_late(hooks, first, len(hooks) - 1, elapsed)
    if late is None:
        return call
    return _sync_step(call, start, hooks[-1], Reject(late))[1] or call


def _stretch_late(hooks: _Timed, first: int, last: int, elapsed: float) -> str | None:
    """Why hooks ``first..last``, which took ``elapsed`` together, refuse the call; None
    when they kept their budgets."""
    if first > last or elapsed <= hooks.budget:
        return None  # the common case: within the smallest budget of all
    stretch = hooks[first : last + 1]
    tightest = min(stretch, key=lambda h: h.budget or 0.0)
    budget = tightest.budget or 0.0  # every hook here is timed
    if elapsed <= budget:
        return None
    if len(stretch) == 1:
        return _over_budget(tightest.name, elapsed, budget).reason
    hooks.exact = True
    names = ", ".join(f"`{h.name}`" for h in stretch)
    return (
        f"hooks {names} took {elapsed:.3g} s together, over the {budget:g} s budget of "
        f"`{tightest.name}` (TOOLWIRE_HOOK_TIMEOUT); the call was not run, and these hooks "
        f"are timed one by one from now on"
    )


def _exact_pass(call: TypedCall[Any], hooks: _Timed, ctx: HookContext) -> Outcome:
    """_timed_pass with the clock read after every hook: each hook against its own
    budget. One hook's end is the next one's start."""
    start = call
    mark = _clock()
    for h in hooks:
        try:
            decision = h.fn(call, ctx)
        except (Exception, SystemExit, GeneratorExit) as exc:  # a hook cannot end the program
            return _failed(call, h, exc)
        now = _clock()
        budget: float = h.budget  # type: ignore[assignment]  # every hook here is timed
        if now - mark > budget:
            decision = _late(h, decision, now - mark, budget)
        if decision is not None:
            call, outcome = _sync_step(call, start, h, decision)
            if outcome is not None:
                return outcome
            now = _clock()  # what followed is not the next hook's time
        mark = now
    return call


async def _async_pass(
    call: TypedCall[Any], chain: _Chain, ctx: HookContext
) -> tuple[Outcome, bytes | None]:
    hooks, snap_at, _ = chain
    start = call
    approved: bytes | None = None
    for i, (h, _guard) in enumerate(hooks):
        budget = h.budget
        try:
            if budget is not None:
                decision = _timed_call(h, budget, call, ctx)
                if inspect.isawaitable(decision):
                    decision = await _await_within(decision, h.name, budget)
            else:
                decision = _call_hook(h, call, ctx)
                if inspect.isawaitable(decision):
                    decision = await decision
        except (Exception, SystemExit) as exc:  # a hook cannot end the program
            return _failed(call, h, exc), approved
        call, outcome = _step(call, start, h, decision)
        if outcome is not None:
            return outcome, approved
        if i == snap_at:
            approved = _fingerprint(call.input)
    return call, approved


def _guards_missed(outcome: Outcome, approved: bytes | None) -> bool:
    # A later hook changed the input (a new one, or the same object edited in place)
    # after the guards (policies) approved it.
    return (
        approved is not None
        and isinstance(outcome, TypedCall)
        and _fingerprint(outcome.input) != approved
    )


def _guards_only(chain: _Chain) -> _Chain:
    return [p for p in chain[0] if p[1]], -1, None


HookCache = dict[Tool[Any, Any], _Chain]

#: Chain caches by the stamps (and guard flags) of the sets they were built from: a round
#: reuses the chains earlier rounds built for the same, unchanged sets. Bounded.
_CHAINS: dict[tuple[tuple[int, bool], ...], HookCache] = {}
_CHAINS_MAX = 256
_CHAIN_TOOLS_MAX = 4096


def chain_cache(sets: Sequence[HookSet]) -> HookCache:
    """The chain cache for these sets as they are now (a change to one gives a new cache)."""
    key = tuple([(s._stamp, s.guard) for s in sets])
    got = _CHAINS.get(key)
    if got is None:
        if len(_CHAINS) >= _CHAINS_MAX:
            _CHAINS.pop(next(iter(_CHAINS)), None)
        got = _CHAINS[key] = {}
    return got


def _hooks_cached(sets: Sequence[HookSet], tool: Tool[Any, Any], cache: HookCache | None) -> _Chain:
    if cache is None:
        return _hooks_for(sets, tool)
    hooks = cache.get(tool)
    if hooks is None:
        if len(cache) >= _CHAIN_TOOLS_MAX:
            cache.clear()
        hooks = cache[tool] = _hooks_for(sets, tool)
    return hooks


def run_hooks(
    call: TypedCall[Any],
    sets: Sequence[HookSet],
    ctx: HookContext,
    cache: HookCache | None = None,
) -> Outcome:
    """Run the decision pipeline for one call (sync hooks only).

    If a hook edits the input after the guard sets (policies) ran, the guard
    hooks run again on the final input: a tool pack cannot rewrite arguments
    a policy has already checked. ``cache`` (from :func:`chain_cache`: shared by every
    round over the same, unchanged sets) keeps each tool's hook list between calls.
    """
    outcome = _decide(call, sets, ctx, cache)
    if outcome is None:
        return call
    if logger.isEnabledFor(logging.DEBUG):
        _log(call, outcome)
    return outcome


def run_hooks_all(
    calls: Sequence[TypedCall[Any]],
    sets: Sequence[HookSet],
    ctx: HookContext,
    cache: HookCache | None = None,
) -> list[Outcome]:
    """:func:`run_hooks` for each call, in order (the log level read once for them all)."""
    decided = [_decide(c, sets, ctx, cache) for c in calls]
    if logger.isEnabledFor(logging.DEBUG):
        for c, o in zip(calls, decided, strict=True):
            if o is not None:
                _log(c, o)
    return [c if o is None else o for c, o in zip(calls, decided, strict=True)]


def _decide(
    call: TypedCall[Any], sets: Sequence[HookSet], ctx: HookContext, cache: HookCache | None
) -> Outcome | None:
    """The pipeline's outcome for ``call``; None when no decision hook applies to its tool."""
    chain = cache.get(call._tool) if cache is not None else None
    if chain is None:
        chain = _hooks_cached(sets, call._tool, cache)
    if not chain[0]:
        return None
    timed = chain[2]
    if timed is not None:  # _sync_pass's fast case, without its frame (every call's path)
        return _timed_pass(call, timed, ctx)
    outcome, approved = _sync_pass(call, chain, ctx)
    if approved is not None and _guards_missed(outcome, approved):
        assert isinstance(outcome, TypedCall)
        outcome, _ = _sync_pass(outcome, _guards_only(chain), ctx)
    return outcome


async def arun_hooks(
    call: TypedCall[Any],
    sets: Sequence[HookSet],
    ctx: HookContext,
    cache: HookCache | None = None,
) -> Outcome:
    """Run the decision pipeline for one call, awaiting async hooks (see run_hooks)."""
    chain = _hooks_cached(sets, call.tool, cache)
    if not chain[0]:
        return call
    outcome, approved = await _async_pass(call, chain, ctx)
    if _guards_missed(outcome, approved):
        assert isinstance(outcome, TypedCall)
        outcome, _ = await _async_pass(outcome, _guards_only(chain), ctx)
    if logger.isEnabledFor(logging.DEBUG):
        _log(call, outcome)
    return outcome


publish(globals())
