"""The per-call decision pipeline: a call through every decision hook that matches its
tool, in order (policies first), each held to its time budget, sync or async; the chains
of hooks per tool cached per hook-set combination."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, Union

import pydantic_core

from toolwire._calls import HandledCall, RejectedCall, TypedCall, rejection_content
from toolwire._hooks import (
    _UNCHANGED,
    Complete,
    HookContext,
    HookSet,
    Reject,
    RunNormally,
    _call_hook,
    _close,
    _Hook,
)
from toolwire._tools import Tool

__all__ = [
    "HookCache",
    "Outcome",
    "arun_hooks",
    "chain_cache",
    "run_hooks",
    "run_hooks_all",
    "split_outcomes",
]

logger = logging.getLogger("toolwire.tool_hook")

_clock = time.perf_counter


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

    from toolwire._sync import in_a_task

    await in_a_task()  # a call a bridge steps inline: in a task first
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
                    from toolwire._sync import in_a_task

                    await in_a_task()  # a call a bridge steps inline: in a task first
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
) -> tuple[list[TypedCall[Any]], list[HandledCall], list[RejectedCall]]:
    """:func:`run_hooks` for each call, in order: the calls to run (as the hooks left
    them), the calls a hook answered, and the calls a hook refused."""
    outcomes: list[Outcome] = []
    debug = logger.isEnabledFor(logging.DEBUG)  # read once for the round
    for c in calls:  # _decide, inline: a round's calls share the frame
        chain = cache.get(c._tool) if cache is not None else None
        if chain is None:
            chain = _hooks_cached(sets, c._tool, cache)
        if not chain[0]:
            outcomes.append(c)
            continue
        timed = chain[2]
        o = _timed_pass(c, timed, ctx) if timed is not None else _decide(c, sets, ctx, cache)
        if o is None:  # (a chain with hooks always answers)
            outcomes.append(c)
            continue
        if debug:
            _log(c, o)
        outcomes.append(o)
    return split_outcomes(outcomes)


def split_outcomes(
    outcomes: Iterable[Outcome],
) -> tuple[list[TypedCall[Any]], list[HandledCall], list[RejectedCall]]:
    """The calls to run, the calls a hook answered, and the calls a hook refused."""
    pending: list[TypedCall[Any]] = []
    handled: list[HandledCall] = []
    rejected: list[RejectedCall] = []
    for o in outcomes:
        if isinstance(o, TypedCall):
            pending.append(o)
        elif isinstance(o, HandledCall):
            handled.append(o)
        else:
            rejected.append(o)
    return pending, handled, rejected


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
