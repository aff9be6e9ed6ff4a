"""Property tests for the stream decoder (no HTTP): fragmentation never changes the
result, and garbage only ever raises toolwire's typed errors."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from _anthropic_support import decode_stream_bytes, sse_bytes
from fakes import anthropic_messages, validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire_anthropic import AnthropicProvider

M = anthropic_messages
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_block = st.one_of(
    _text.filter(bool).map(M.text_block),
    st.dictionaries(_text, _json_value, max_size=4).map(lambda i: M.tool_use_block("t", i)),
    st.builds(M.thinking_block, _text, _text.filter(bool)),
    st.builds(M.redacted_thinking_block, _text.filter(bool)),
)


@pytest.fixture(scope="module")
def provider() -> Any:
    p = AnthropicProvider("m", api_key="k", base_url="http://127.0.0.1:9")
    yield p
    p.close()


def _with_ids(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**b, "id": f"toolu_{i}"} if b["type"] == "tool_use" else b for i, b in enumerate(blocks)
    ]


def _cut(data: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@SETTINGS
@given(
    blocks=st.lists(_block, min_size=1, max_size=4),
    size=st.integers(1, 7),
    points=st.lists(st.integers(0, 10**6), max_size=12),
)
def test_fragmentation_never_changes_the_decoded_reply(
    provider: AnthropicProvider, blocks: list[dict[str, Any]], size: int, points: list[int]
) -> None:
    blocks = _with_ids(blocks)
    whole = M.stream_events(blocks, size=10**6, empty_first_fragment=False)
    split = M.stream_events(blocks, size=size)
    for event in split:
        validate.parse_anthropic_event(event)
    _, expected = decode_stream_bytes(provider, [sse_bytes(whole)])
    events, reply = decode_stream_bytes(provider, _cut(sse_bytes(split), points))

    assert expected == reply
    assert reply == provider._decode(M.message(blocks))  # the JSON path agrees
    text = "".join(e.text for e in events if isinstance(e, tw.adapters.TextDelta))
    assert reply.text == text
    fragments: dict[int, str] = {}
    for e in events:
        if isinstance(e, tw.adapters.ToolCallDelta):
            fragments[e.index] = fragments.get(e.index, "") + e.fragment
    for index, call in enumerate(reply.tool_calls):
        streamed = fragments.get(index, "") or "{}"
        assert json.loads(streamed) == json.loads(call.arguments)


_garbage_event = st.one_of(
    st.binary(max_size=40),
    _text.map(lambda t: f"data: {t}\n\n".encode()),
    st.sampled_from(
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "error",
            "ping",
        ]
    ).flatmap(
        lambda kind: st.dictionaries(
            st.sampled_from(["index", "delta", "content_block", "message", "type", "usage"]),
            _json_value,
            max_size=4,
        ).map(lambda d: sse_bytes([{**d, "type": kind}]))
    ),
)


@SETTINGS
@given(prefix=st.integers(0, 12), garbage=st.lists(_garbage_event, max_size=6))
def test_garbage_only_raises_typed_errors(
    provider: AnthropicProvider, prefix: int, garbage: list[bytes]
) -> None:
    valid = sse_bytes(M.stream_events([M.text_block("hi"), M.tool_use_block("t", {"a": 1})]))
    head = valid.split(b"\n\n")[:prefix]
    data = b"".join(part + b"\n\n" for part in head) + b"".join(garbage)
    # StreamError is a ProviderError; anything else (KeyError, TypeError...) fails the test.
    with contextlib.suppress(tw.ProviderError):
        decode_stream_bytes(provider, [data])
