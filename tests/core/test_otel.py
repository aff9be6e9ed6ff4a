"""OpenTelemetry spans (gen_ai conventions), checked with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import toolwire as tw
from toolwire.providers.test import TestProvider


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


@tw.tool_fn(effect="mutating")
def save(key: str) -> str:
    """Save a key."""
    return f"saved {key}"


@tw.tool_fn
def fail() -> str:
    raise ValueError("disk full")


def typed(tool: tw.Tool[Any, Any], arguments: str = "{}", id: str = "c1") -> tw.TypedCall[Any]:
    return tw.TypedCall(tw.ToolCall(id, tool.name, arguments), tool, tool.validate_json(arguments))


def test_an_execute_tool_span_carries_the_gen_ai_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    ex = tw.Executor(tracing=tw.Tracing(provider))
    ex.execute(typed(save, '{"key": "k"}'))
    (span,) = exporter.get_finished_spans()
    assert "execute_tool save" == span.name
    assert SpanKind.INTERNAL == span.kind
    attrs = dict(span.attributes or {})
    duration = attrs.pop("toolwire.tool.duration_ms")
    assert isinstance(duration, float)
    assert {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "save",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "toolwire.tool.effect": "mutating",
    } == attrs
    assert StatusCode.UNSET == span.status.status_code


def test_a_failed_call_sets_error_type_and_status(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tw.Executor(tracing=tw.Tracing(provider)).execute(typed(fail))
    (span,) = exporter.get_finished_spans()
    assert "ValueError" == (span.attributes or {})["error.type"]
    assert StatusCode.ERROR == span.status.status_code


def test_a_refused_call_gets_a_span_too(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    ex = tw.Executor(tools=[save], tracing=tw.Tracing(provider))
    ex.execute(tw.ToolCall("c9", "ghost", "{}"))
    (span,) = exporter.get_finished_spans()
    assert ("execute_tool ghost", "unknown_tool") == (
        span.name,
        (span.attributes or {})["error.type"],
    )


def test_content_is_recorded_only_when_asked(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tw.Executor(tracing=tw.Tracing(provider)).execute(typed(save, '{"key": "k"}'))
    tw.Executor(tracing=tw.Tracing(provider, record_content=True)).execute(
        typed(save, '{"key": "k"}')
    )
    quiet, loud = (dict(s.attributes or {}) for s in exporter.get_finished_spans())
    assert "gen_ai.tool.call.arguments" not in quiet
    assert "gen_ai.tool.call.result" not in quiet
    assert ('{"key": "k"}', "saved k") == (
        loud["gen_ai.tool.call.arguments"],
        loud["gen_ai.tool.call.result"],
    )


async def test_parallel_calls_each_get_a_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    ex = tw.Executor(tracing=tw.Tracing(provider))
    await ex.aexecute_all([typed(save, f'{{"key": "{i}"}}', f"c{i}") for i in range(3)])
    ids = sorted((s.attributes or {})["gen_ai.tool.call.id"] for s in exporter.get_finished_spans())
    assert ["c0", "c1", "c2"] == ids


def test_the_agent_records_a_chat_span_per_request(
    provider: TracerProvider, exporter: InMemorySpanExporter, session: tw.Session
) -> None:
    usage = tw.Usage(input_tokens=12, output_tokens=3)
    script = [
        tw.adapters.AssistantReply(
            "", (tw.ToolCall("a", "save", '{"key":"k"}'),), "tool_calls", usage, model="m-1"
        ),
        tw.adapters.AssistantReply("saved", (), "stop", usage, model="m-1"),
    ]
    tracing = tw.Tracing(provider, record_content=True)
    tw.run_agent(
        TestProvider("m-1", script=script),
        tw.Toolset("t", [save]),
        session,
        "save k",
        tracing=tracing,
    )
    spans = exporter.get_finished_spans()
    assert ["chat m-1", "execute_tool save", "chat m-1"] == [s.name for s in spans]
    chat = spans[0]
    assert SpanKind.CLIENT == chat.kind
    attrs = dict(chat.attributes or {})
    assert {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "test",
        "gen_ai.request.model": "m-1",
        "gen_ai.response.model": "m-1",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
    } == {k: v for k, v in attrs.items() if k != "gen_ai.output.messages"}
    assert '"name": "save"' in str(attrs["gen_ai.output.messages"])


def test_a_failed_request_marks_the_chat_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, session: tw.Session
) -> None:
    with pytest.raises(tw.ProviderError):
        tw.run_agent(
            TestProvider(script=[]),
            tw.Toolset("t", [save]),
            session,
            "hi",
            tracing=tw.Tracing(provider),
        )
    (span,) = exporter.get_finished_spans()
    assert "ProviderError" == (span.attributes or {})["error.type"]
    assert StatusCode.ERROR == span.status.status_code


def test_without_opentelemetry_tracing_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r'pip install "toolwire\[otel\]"'):
        tw.Tracing()


def test_importing_toolwire_does_not_import_opentelemetry() -> None:
    code = "import sys, toolwire; toolwire.Executor(); print('opentelemetry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "False" == out.stdout.strip()
