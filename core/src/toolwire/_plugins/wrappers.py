"""Timed hook wrappers: each hookimpl becomes a plain function for the core pipeline,
held to its time budget; a result hook's output is checked before it replaces a result."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

from toolwire._calls import ToolResult, TypedCall, rejection_content
from toolwire._exports import publish
from toolwire._hooks import Complete, HookContext, Reject, RunNormally, _close
from toolwire._tools import Tool

if TYPE_CHECKING:
    from toolwire._hooks import ToolDecision

from toolwire._plugins.discovery import _describe

logger = logging.getLogger("toolwire.plugins")

_DECISIONS = frozenset({RunNormally, Complete, Reject, type(None)})

_ASYNC_OK = frozenset({"toolwire_tool_decision", "toolwire_tool_result"})


def _caller(
    fn: Callable[..., Any], argnames: Sequence[str], names: Sequence[str]
) -> Callable[..., Any]:
    """``fn`` called positionally with the hook's arguments, for impls taking a subset."""
    if tuple(argnames) == tuple(names):
        return fn
    index = [names.index(a) for a in argnames]

    def call(*args: Any) -> Any:
        return fn(**{argnames[i]: args[j] for i, j in enumerate(index)})

    return call


def _blocker(reason: str) -> Callable[[TypedCall[Any], HookContext], ToolDecision]:
    def blocked(call: TypedCall[Any], context: HookContext) -> ToolDecision:
        return Reject(reason)

    return blocked


def _over_budget(label: str, elapsed: float, budget: float) -> Reject:
    return Reject(
        f"hook `{label}` took {elapsed:.3g} s, over its {budget:g} s budget "
        f"(TOOLWIRE_HOOK_TIMEOUT); the call was not run"
    )


async def _await_within(aw: Awaitable[Any], label: str, budget: float) -> Any:
    """The hook's answer if it comes within ``budget``, else a rejection.

    Not ``asyncio.wait_for``: on Python 3.11 it waits for the cancelled hook to finish and
    returns its answer, so a hook that swallows cancellation would be obeyed after its
    budget. Past the budget the call is rejected, whatever the hook answers later; the
    hook's task is cancelled and left to end on its own.
    """
    import asyncio  # here, not at the top: assembling a toolset needs no event loop

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


class _Bounded:
    """The awaitable a sync hookimpl returned, to be awaited within the hook's budget.

    Awaiting it awaits the hookimpl's awaitable under ``asyncio.wait_for``.
    ``close()`` (what the sync pipeline calls on an awaitable it cannot await)
    closes the hookimpl's awaitable itself, so an unawaited coroutine does not
    warn "was never awaited".
    """

    __slots__ = ("aw", "budget", "label")

    def __init__(self, aw: Awaitable[Any], label: str, budget: float) -> None:
        self.aw = aw
        self.label = label
        self.budget = budget

    def __await__(self) -> Generator[Any, None, Any]:
        return _await_within(self.aw, self.label, self.budget).__await__()

    def close(self) -> None:
        _close(self.aw)


def _decision_hook(
    fn: Callable[..., Any], argnames: Sequence[str], label: str, budget: float
) -> Callable[[TypedCall[Any], HookContext], Any]:
    """A plain function for the core pipeline: the impl, within its time budget."""
    f = _caller(fn, argnames, ("call", "context"))
    clock = time.perf_counter
    decisions = _DECISIONS
    if inspect.iscoroutinefunction(fn):

        async def decide_async(call: TypedCall[Any], context: HookContext) -> Any:
            return await _await_within(f(call, context), label, budget)

        return decide_async

    def decide(call: TypedCall[Any], context: HookContext) -> Any:
        start = clock()
        decision = f(call, context)
        elapsed = clock() - start
        if elapsed > budget:
            if inspect.isawaitable(decision):
                _close(decision)
            return _over_budget(label, elapsed, budget)
        if decision is None or decision.__class__ in decisions:
            return decision
        if not inspect.isawaitable(decision):
            return decision
        return _Bounded(decision, label, budget)

    return decide


def _description_hook(
    fn: Callable[..., Any], argnames: Sequence[str], label: str
) -> Callable[[Tool[Any, Any], str, HookContext], str | None]:
    f = _caller(fn, argnames, ("tool", "description", "context"))

    def describe(tool: Tool[Any, Any], description: str, context: HookContext) -> str | None:
        try:
            out = f(tool, description, context)
        except Exception as exc:
            logger.warning("description hook %s failed for %s: %r", label, tool.name, exc)
            return None
        if out is not None and not isinstance(out, str):
            logger.warning(
                "description hook %s returned %s for %s; expected a string or None",
                label,
                type(out).__name__,
                tool.name,
            )
            return None
        return out

    return describe


def _availability_hook(
    fn: Callable[..., Any],
    argnames: Sequence[str],
    owns: Callable[[Tool[Any, Any]], bool] | None = None,
) -> Callable[[Tool[Any, Any], HookContext], bool]:
    """A plain availability function. A policy's (``owns`` None) lets an exception
    propagate, so core hides the tool (fail closed). A tool pack's failure is its own
    problem: it hides the pack's own tools (``owns``) and is ignored for everyone else's."""
    f = _caller(fn, argnames, ("tool", "context"))

    if owns is None:

        def available(tool: Tool[Any, Any], context: HookContext) -> bool:
            # None is "no opinion"; an exception propagates and core hides the tool.
            return f(tool, context) is not False

        return available

    def pack_available(tool: Tool[Any, Any], context: HookContext) -> bool:
        try:
            return f(tool, context) is not False
        except Exception as exc:
            if owns(tool):
                raise
            logger.warning(
                "a tool pack's availability hook failed on `%s`, which is not its tool; "
                "the failure is ignored for it: %r",
                tool.name,
                exc,
            )
            return True

    return pack_available


def _withheld(call: TypedCall[Any], reason: str) -> ToolResult:
    return call.call.result(rejection_content(reason), is_error=True)


class _ResultHook:
    __slots__ = ("fn", "label", "plugin", "policy")

    def __init__(
        self, fn: Callable[..., Any], argnames: Sequence[str], plugin: str, policy: bool
    ) -> None:
        self.fn = _caller(fn, argnames, ("call", "result", "context"))
        self.plugin = plugin
        self.label = f"plugin:{plugin}"
        self.policy = policy

    def _bad(
        self, call: TypedCall[Any], result: ToolResult, problem: str, detail: str = ""
    ) -> ToolResult:
        """``problem`` may reach the model (a policy's withheld result says it); ``detail``
        (an exception's text, which may hold hosts, paths or credentials) goes only to the
        log."""
        logged = f"{problem}: {detail}" if detail else problem
        if self.policy:
            reason = f"policy `{self.plugin}` {problem}; the result was withheld"
            logger.warning(
                "tool %s call %s: policy `%s` %s; the result was withheld",
                call.name, call.id, self.plugin, logged,
            )  # fmt: skip
            return _withheld(call, reason)
        logger.warning(
            "tool %s call %s: result hook `%s` %s; ignored", call.name, call.id, self.label, logged
        )
        return result

    def _check(self, call: TypedCall[Any], result: ToolResult, out: Any) -> ToolResult:
        if out is None:
            return result
        if not isinstance(out, ToolResult):
            return self._bad(
                call, result, f"returned {type(out).__name__}; expected a ToolResult or None"
            )
        if (out.call_id, out.tool_name, out.arguments) != (call.id, call.name, call.arguments):
            return self._bad(
                call,
                result,
                f"returned a result for call `{out.call_id}` of `{out.tool_name}`, "
                f"not for call `{call.id}` of `{call.name}` with the same arguments",
            )
        return out

    def run(
        self, call: TypedCall[Any], result: ToolResult, ctx: HookContext, budget: float
    ) -> ToolResult:
        start = time.perf_counter()
        try:
            out = self.fn(call, result, ctx)
        except Exception as exc:
            return self._bad(call, result, f"failed ({type(exc).__name__})", _describe(exc))
        elapsed = time.perf_counter() - start
        if inspect.isawaitable(out):
            _close(out)
            return self._bad(call, result, "is async; use `await host.atool_result(...)`")
        if elapsed > budget:
            return self._bad(call, result, f"took {elapsed:.3g} s, over its {budget:g} s budget")
        return self._check(call, result, out)

    async def arun(
        self, call: TypedCall[Any], result: ToolResult, ctx: HookContext, budget: float
    ) -> ToolResult:
        import asyncio  # see _await_within

        start = time.perf_counter()
        try:
            out = self.fn(call, result, ctx)
            if inspect.isawaitable(out):
                out = await asyncio.wait_for(out, budget)
        except TimeoutError:
            return self._bad(call, result, f"took over its {budget:g} s budget")
        except Exception as exc:
            return self._bad(call, result, f"failed ({type(exc).__name__})", _describe(exc))
        elapsed = time.perf_counter() - start
        if elapsed > budget:
            return self._bad(call, result, f"took {elapsed:.3g} s, over its {budget:g} s budget")
        return self._check(call, result, out)


publish(globals())
