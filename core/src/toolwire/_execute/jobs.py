"""Per-tool and per-call state: what is decided once per tool (_PreparedTool), and one
call on its way through the executor (_Job).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from toolwire._calls import (
    ToolCall,
    ToolResult,
    TypedCall,
    rejection_content,
)
from toolwire._execute.attempts import _UNSHARED
from toolwire._exports import publish
from toolwire._hooks import HookContext
from toolwire._metadata import ToolEffect
from toolwire._sync import in_a_task
from toolwire._tools import Tool, tool_of

if TYPE_CHECKING:
    from toolwire._backends import ToolBackend
    from toolwire._execute.approval import ApprovalGate
    from toolwire._metadata import Capability


class _Settings(Protocol):
    """What a prepared tool reads of its executor (the Executor satisfies it; naming the
    class here would make jobs and executor import each other)."""

    _allowed: frozenset[Capability]
    _approver: Any
    _gate: ApprovalGate
    _availability: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]]
    _is_available: Callable[..., Any] | None
    _validators: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]]
    _validate: Callable[..., Any] | None
    _injected: dict[str, Any]
    backend: ToolBackend | None
    validate_output: bool


class _PreparedTool:
    """Everything about running one tool that does not depend on the call."""

    __slots__ = (
        "available",
        "blocking",
        "gated",
        "hint",
        "honours_cancellation",
        "injected",
        "is_async",
        "max_attempts",
        "missing",
        "name",
        "out_adapter",
        "out_str",
        "remote",
        "remote_options",
        "run_alone",
        "timeout",
        "tool",
        "validate",
        "violation",
    )

    def __init__(self, ex: _Settings, tool: Tool[Any, Any]) -> None:
        meta = tool.metadata
        name = tool.name
        self.tool = tool
        self.name = name
        fn = tool.fn
        self.is_async = tool.is_async or (
            fn is not None
            and not inspect.isfunction(fn)
            and inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        )
        self.blocking = meta.blocking and not self.is_async
        self.run_alone = meta.run_alone
        self.timeout = meta.timeout
        self.honours_cancellation = meta.honours_cancellation
        self.hint = meta.retry_hint
        self.max_attempts = meta.max_attempts
        missing_caps = meta.capabilities - ex._allowed
        self.violation = (
            f"sandbox violation: tool `{name}` requires "
            + ", ".join(sorted(c.value for c in missing_caps))
            if missing_caps
            else None
        )
        self.gated = ex._approver is not None and ex._gate.applies(meta.effect)
        self.available = [f for match, f in ex._availability if match(tool)]
        if ex._is_available is not None:
            self.available.insert(0, ex._is_available)
        self.validate = [f for match, f in ex._validators if match(tool)]
        if ex._validate is not None:
            self.validate.insert(0, ex._validate)
        self.injected = {k: ex._injected[k] for k in tool.injected if k in ex._injected}
        self.missing: str | None = None
        if fn is None:
            self.missing = (
                f"tool `{name}` has no implementation (it was declared with @tool_input); "
                f"run it in your own code and answer with call.complete(output)"
            )
        elif len(self.injected) != len(tool.injected):
            absent = [k for k in tool.injected if k not in ex._injected]
            self.missing = (
                f"tool `{name}` needs injected value(s) {', '.join(map(repr, absent))}; "
                f"pass them as Executor(injected={{...}})"
            )
        backend = ex.backend
        self.remote = None
        self.remote_options: Mapping[str, Any] = {}
        if backend is not None and backend.accepts(tool):
            self.remote = backend
            self.remote_options = meta.backend_options.get(backend.name, {})
        self.out_adapter = None
        self.out_str = False
        if ex.validate_output and tool.output_type is not None:
            if tool.output_type is str:
                self.out_str = True
            else:
                self.out_adapter = getattr(tool, "_output_adapter", None)


def _matcher(target: Any) -> Callable[[Tool[Any, Any]], bool]:
    if isinstance(target, str):
        return lambda tool: tool.name == target
    origin = tool_of(target).origin
    return lambda tool: tool.origin is origin


def _effect_of(job: _Job) -> ToolEffect | None:
    return job.plan.tool.metadata.effect if job.plan is not None else None


class _Job:
    """One call on its way through the executor (internal, mutable)."""

    __slots__ = (
        "abandoned",
        "approved",
        "attempt",
        "call",
        "context",
        "error_type",
        "plan",
        "raw",
        "result",
        "timing",
    )

    def __init__(self, raw: ToolCall, context: HookContext | None) -> None:
        self.raw = raw
        self.context = context
        self.call: TypedCall[Any] | None = None
        self.plan: _PreparedTool | None = None
        self.result: ToolResult | None = None
        self.error_type: str | None = None
        self.approved: str | None = None
        self.timing = _UNSHARED  # see attempts._Shared: its first attempt's deadline
        self.abandoned = False  # cut, and not waited for past the grace (see _ON_STUCK)
        #: The attempt running now (1, 2, ...), 0 between attempts: a cut attempt that
        #: ended (and a retry, or its backoff, that follows) is not a stuck tool.
        self.attempt = 0

    def refuse(self, reason: str, kind: str) -> None:
        self.result = self.raw.result(rejection_content(reason), is_error=True)
        self.error_type = kind


def _errors_text(exc: ValidationError, whole: str = "(arguments)") -> str:
    """pydantic's errors, one line each; ``whole`` names an error about the whole value."""
    lines = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in e["loc"]) or whole
        lines.append(f"- {loc}: {e['msg']}")
    return "\n".join(lines)


async def _maybe_await(value: Any) -> Any:
    """What a hook or a callback gave, awaited when it is awaitable (in a task: a call a
    bridge steps inline goes on in one first, toolwire._sync.in_a_task)."""
    if hasattr(value, "__await__"):
        await in_a_task()
        return await value
    return value


publish(globals())
