"""OpenTelemetry spans for tool execution and provider requests (gen_ai semantic conventions).

Optional: ``pip install "toolwire[otel]"``. Nothing here imports OpenTelemetry
until a :class:`Tracing` is created, so an application that does not trace
pays nothing (the executor and the agent loop check ``tracing is None``).

Spans:

- ``execute_tool {tool}`` (kind INTERNAL), one per executed call:
  ``gen_ai.operation.name=execute_tool``, ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.type=function``,
  ``toolwire.tool.effect``, ``toolwire.tool.duration_ms``, and on failure
  ``error.type`` plus an ERROR status. With ``record_content=True`` also
  ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``.
- ``chat {model}`` (kind CLIENT), one per provider request:
  ``gen_ai.operation.name=chat``, ``gen_ai.provider.name``,
  ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens`` and
  ``gen_ai.usage.output_tokens``. With ``record_content=True`` also
  ``gen_ai.output.messages`` (JSON).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolwire._calls import ToolCall, ToolResult
from toolwire._exports import publish
from toolwire._metadata import ToolEffect
from toolwire._version import __version__

if TYPE_CHECKING:
    from toolwire._provider import Provider
    from toolwire._round import AssistantReply

__all__ = ["ChatSpan", "ToolSpan", "Tracing"]

INSTALL_HINT = 'pip install "toolwire[otel]"'


class ChatSpan:
    """The span of one provider request; call :meth:`record` with the reply."""

    __slots__ = ("_record_content", "span")

    def __init__(self, span: Any, record_content: bool) -> None:
        self.span = span
        self._record_content = record_content

    def record(self, reply: AssistantReply) -> None:
        """Set the response attributes (model, finish reason, token usage) from a reply."""
        span = self.span
        if reply.model:
            span.set_attribute("gen_ai.response.model", reply.model)
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
        if reply.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", reply.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", reply.usage.output_tokens)
        if self._record_content:
            parts: list[dict[str, Any]] = []
            if reply.text:
                parts.append({"type": "text", "content": reply.text})
            for c in reply.tool_calls:
                parts.append(
                    {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
                )
            message = {"role": "assistant", "parts": parts, "finish_reason": reply.finish_reason}
            span.set_attribute("gen_ai.output.messages", json.dumps([message]))


class Tracing:
    """OpenTelemetry tracing for toolwire: pass it to ``Executor(tracing=...)`` and agents.

    ``tracer_provider`` defaults to the global one; ``record_content=True``
    records tool arguments and results and the model's output (off by
    default: they may hold personal data). Raises ImportError naming the
    install command when OpenTelemetry is not installed.
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        record_content: bool = False,
        tracer: Any = None,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError(
                f"toolwire tracing needs OpenTelemetry, which is not installed; "
                f"install the extra with: {INSTALL_HINT}"
            ) from exc
        self._trace = trace
        self.record_content = record_content
        self.tracer = tracer or trace.get_tracer(
            "toolwire", __version__, tracer_provider=tracer_provider
        )

    def __repr__(self) -> str:
        return f"<Tracing record_content={self.record_content}>"

    # -- provider requests ------------------------------------------------------------------

    @contextmanager
    def chat_span(self, provider: Provider, *, model: str | None = None) -> Iterator[ChatSpan]:
        """A ``chat {model}`` span around one provider request.

        The span is not made current (so it is safe across generator yields);
        an exception escaping the block sets ``error.type`` and an ERROR status.
        """
        model = model or provider.model
        span = self.tracer.start_span(
            f"chat {model}" if model else "chat",
            kind=self._trace.SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider.name or type(provider).__name__,
                "gen_ai.request.model": model or "",
            },
        )
        try:
            yield ChatSpan(span, self.record_content)
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(exc)))
            raise
        finally:
            span.end()

    # -- tool calls --------------------------------------------------------------------------

    @contextmanager
    def tool_span(self, call: ToolCall, effect: ToolEffect | None = None) -> Iterator[ToolSpan]:
        """An ``execute_tool {tool}`` span around one tool call, made current.

        Call :meth:`ToolSpan.record` with the call's result before the block ends; an
        exception escaping the block is recorded on the span (as OpenTelemetry does).
        Knows nothing of who runs the call: the executor uses it, and so can a loop of
        your own.
        """
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if effect is not None:
            attributes["toolwire.tool.effect"] = effect.value
        if self.record_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        with self.tracer.start_as_current_span(
            f"execute_tool {call.name}", kind=self._trace.SpanKind.INTERNAL, attributes=attributes
        ) as span:
            yield ToolSpan(span, self._trace, self.record_content)


class ToolSpan:
    """The span of one tool call; call :meth:`record` with its result."""

    __slots__ = ("_record_content", "_started", "_trace", "span")

    def __init__(self, span: Any, trace: Any, record_content: bool) -> None:
        self.span = span
        self._trace = trace
        self._record_content = record_content
        self._started = time.perf_counter()

    def record(self, result: ToolResult | None, error_type: str | None = None) -> None:
        """Set the duration and, from the result, the content and error attributes."""
        span = self.span
        span.set_attribute(
            "toolwire.tool.duration_ms", (time.perf_counter() - self._started) * 1000
        )
        if result is None:
            return
        if self._record_content:
            span.set_attribute("gen_ai.tool.call.result", result.content)
        if result.is_error:
            span.set_attribute("error.type", error_type or "_OTHER")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, result.content[:200]))


publish(globals())
