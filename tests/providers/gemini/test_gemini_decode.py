"""Decoding without HTTP: finish reasons, usage, fragmentation and garbage (hypothesis);
and the entry-point smoke test."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from _gemini_support import decode_stream_bytes, sse_bytes
from fakes import gemini, validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._errors import ProviderError
from toolwire_gemini import GeminiProvider


@pytest.fixture(scope="module")
def provider() -> Iterator[GeminiProvider]:
    p = GeminiProvider("gemini-fake", api_key="unused-key", base_url="http://127.0.0.1:9")
    yield p
    p.close()


@pytest.fixture(scope="module")
def turn() -> tw.adapters.ResolvedTurn:
    @tw.tool_fn
    def get_weather(city: str) -> str:
        """Weather.

        Args:
            city: The city.
        """
        return city

    return tw.resolve_turn(tw.Toolset("t", [get_weather]))


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "other"),
        ("OTHER", "other"),
    ],
)
def test_finish_reasons_are_normalised(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn, reason: str, expected: str
) -> None:
    data = gemini.response([gemini.text_part("x")], finish_reason=reason)
    validate.parse_gemini_response(data)

    reply = provider.decode(data, turn)

    assert expected == reply.finish_reason


def test_stop_with_calls_is_tool_calls(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn
) -> None:
    data = gemini.response([gemini.function_call_part("get_weather", {"city": "Oslo"})])

    assert "tool_calls" == provider.decode(data, turn).finish_reason


def test_malformed_function_call_keeps_the_finish_message(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn
) -> None:
    data = gemini.response([], finish_reason="MALFORMED_FUNCTION_CALL")
    data["candidates"][0]["finishMessage"] = "Malformed function call: get_weather(city=)"
    data["candidates"][0].pop("content")
    validate.parse_gemini_response(data)

    reply = provider.decode(data, turn)

    assert "other" == reply.finish_reason
    assert {
        "parts": [],
        "finish_reason": "MALFORMED_FUNCTION_CALL",
        "finish_message": "Malformed function call: get_weather(city=)",
    } == reply.provider_state["gemini"]


def test_usage_is_recorded(provider: GeminiProvider, turn: tw.adapters.ResolvedTurn) -> None:
    usage = gemini.usage_metadata(prompt=100, candidates=20, thoughts=30)
    usage["cachedContentTokenCount"] = 40
    data = gemini.response([gemini.text_part("x")], usage=usage)
    validate.parse_gemini_response(data)

    reply = provider.decode(data, turn)

    assert tw.Usage(100, 50, 40, 30) == reply.usage
    assert "gemini-fake-001" == reply.model


def test_thought_text_is_not_reply_text(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn
) -> None:
    data = gemini.response([gemini.thought_part("hmm"), gemini.text_part("Answer.")])

    reply = provider.decode(data, turn)

    assert "Answer." == reply.text
    assert [{"text": "hmm", "thought": True}, {"text": "Answer."}] == reply.provider_state[
        "gemini"
    ]["parts"]


PARTS: list[dict[str, Any]] = [
    gemini.thought_part("Thinking…"),
    gemini.text_part("Les prévisions — ☀️ pour Paris. ", thought_signature="c2ln"),
    gemini.function_call_part("get_weather", {"city": "Zürich"}),
    gemini.function_call_part("get_weather", {"city": "Zürich"}),
    gemini.function_call_part("get_weather", {"city": "東京"}, id="fc_9"),
]
STREAM = sse_bytes(gemini.stream_chunks(PARTS, size=4))


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted({p % (len(data) + 1) for p in points}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def test_whole_stream_decodes(provider: GeminiProvider, turn: tw.adapters.ResolvedTurn) -> None:
    _, reply = decode_stream_bytes(provider, turn, [STREAM])

    assert "Les prévisions — ☀️ pour Paris. " == reply.text
    assert 3 == len({c.id for c in reply.tool_calls})
    assert "fc_9" == reply.tool_calls[2].id
    assert PARTS == reply.provider_state["gemini"]["parts"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(points=st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=40))
def test_any_fragmentation_decodes_identically(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn, points: list[int]
) -> None:
    expected = decode_stream_bytes(provider, turn, [STREAM])

    assert expected == decode_stream_bytes(provider, turn, _cuts(STREAM, points))


JSONish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "candidates",
                    "content",
                    "parts",
                    "text",
                    "functionCall",
                    "name",
                    "args",
                    "id",
                    "finishReason",
                    "usageMetadata",
                    "promptFeedback",
                    "blockReason",
                    "error",
                    "thought",
                    "thoughtSignature",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunks=st.lists(
        st.one_of(
            st.binary(max_size=40),
            JSONish.map(lambda v: f"data: {json.dumps(v)}\n\n".encode()),
        ),
        max_size=6,
    )
)
def test_garbage_raises_only_typed_errors(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn, chunks: list[bytes]
) -> None:
    with contextlib.suppress(ProviderError):
        decode_stream_bytes(provider, turn, chunks)


TOP_KEYS = ["candidates", "promptFeedback", "usageMetadata", "modelVersion", "error"]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.sampled_from(TOP_KEYS), JSONish, max_size=4))
def test_garbage_response_raises_only_typed_errors(
    provider: GeminiProvider, turn: tw.adapters.ResolvedTurn, data: dict[str, Any]
) -> None:
    with contextlib.suppress(ProviderError):
        provider.decode(data, turn)


def test_host_discovers_gemini_through_its_entry_point() -> None:
    host = tw.PluginHost(autoload=True, allow=["gemini"])

    provider = host.provider("gemini", model="gemini-fake", api_key="k-test")
    try:
        assert isinstance(provider, GeminiProvider)
        assert "gemini-fake" == provider.model
    finally:
        provider.close()
    record = next(r for r in host.plugins if r.name == "gemini" and r.kind == "provider")
    assert "toolwire-gemini" == record.distribution
    assert "loaded" == record.status
    assert "gemini" in host.providers()
