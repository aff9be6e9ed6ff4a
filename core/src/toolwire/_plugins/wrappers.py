"""Timed hook wrappers: each hookimpl becomes a plain function for the core pipeline,
held to its time budget; a result hook's output is checked before it replaces a result."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolwire._calls import ToolResult, TypedCall, rejection_content
from toolwire._exports import publish
from toolwire._hooks import Hidden, HookContext, Reject, _close
from toolwire._tools import Tool

if TYPE_CHECKING:
    from toolwire._hooks import ToolDecision

from toolwire._plugins.entrypoints import _describe

logger = logging.getLogger("toolwire.plugins")

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


def _decision_hook(fn: Callable[..., Any], argnames: Sequence[str]) -> Callable[..., Any]:
    """A hookimpl as the core pipeline calls it: ``f(call, context)``. The pipeline times
    it against the host's budget (see ``HookSet._on_timed``), sync or async."""
    return _caller(fn, argnames, ("call", "context"))


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


def _verdict(answer: Any) -> bool | Hidden:
    """An availability implementation's answer: False, or a :class:`Hidden` with its
    reason, hides the tool; anything else (None: no opinion) leaves it offered."""
    if isinstance(answer, Hidden):
        return answer if answer.reason.strip() else False
    return answer is not False


def _availability_hook(
    fn: Callable[..., Any],
    argnames: Sequence[str],
    owns: Callable[[Tool[Any, Any]], bool] | None = None,
) -> Callable[[Tool[Any, Any], HookContext], bool | Hidden]:
    """A plain availability function. A policy's (``owns`` None) lets an exception
    propagate, so core hides the tool (fail closed). A tool pack's failure is its own
    problem: it hides the pack's own tools (``owns``) and is ignored for everyone else's."""
    f = _caller(fn, argnames, ("tool", "context"))

    if owns is None:

        def available(tool: Tool[Any, Any], context: HookContext) -> bool | Hidden:
            # None is "no opinion"; an exception propagates and core hides the tool.
            return _verdict(f(tool, context))

        return available

    def pack_available(tool: Tool[Any, Any], context: HookContext) -> bool | Hidden:
        try:
            return _verdict(f(tool, context))
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
        import asyncio  # here, not at the top: a sync loop needs no event loop

        start = time.perf_counter()
        try:
            out = self.fn(call, result, ctx)
            if inspect.isawaitable(out):
                from toolwire._sync import in_a_task

                await in_a_task()  # a call a bridge steps inline: in a task first
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
