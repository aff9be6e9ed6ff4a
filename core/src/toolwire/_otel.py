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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolwire._exports import publish

if TYPE_CHECKING:
    from toolwire._execute import Executor, _Job
    from toolwire._provider import Provider
    from toolwire._round import AssistantReply

__all__ = ["ChatSpan", "Tracing"]

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
        from toolwire import __version__

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

    # -- tool calls (used by the executor) --------------------------------------------------

    def _tool_attributes(self, job: _Job) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": job.raw.name,
            "gen_ai.tool.call.id": job.raw.id,
            "gen_ai.tool.type": "function",
        }
        if job.plan is not None:
            attrs["toolwire.tool.effect"] = job.plan.tool.metadata.effect.value
        if self.record_content:
            attrs["gen_ai.tool.call.arguments"] = job.raw.arguments
        return attrs

    def _finish_tool(self, span: Any, job: _Job, started: float) -> None:
        span.set_attribute("toolwire.tool.duration_ms", (time.perf_counter() - started) * 1000)
        result = job.result
        if result is None:
            return
        if self.record_content:
            span.set_attribute("gen_ai.tool.call.result", result.content)
        if result.is_error:
            span.set_attribute("error.type", job.error_type or "_OTHER")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, result.content[:200]))

    async def _traced_job(self, executor: Executor, job: _Job) -> None:
        with self.tracer.start_as_current_span(
            f"execute_tool {job.raw.name}",
            kind=self._trace.SpanKind.INTERNAL,
            attributes=self._tool_attributes(job),
        ) as span:
            started = time.perf_counter()
            await executor._run_job(job)
            self._finish_tool(span, job, started)

    def _refused_jobs(self, jobs: Sequence[_Job]) -> None:
        """Spans for calls refused before running (unknown, sandbox, invalid, denied...)."""
        for job in jobs:
            if job.result is None:
                continue
            span = self.tracer.start_span(
                f"execute_tool {job.raw.name}",
                kind=self._trace.SpanKind.INTERNAL,
                attributes=self._tool_attributes(job),
            )
            self._finish_tool(span, job, time.perf_counter())
            span.end()


publish(globals())
