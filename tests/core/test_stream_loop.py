"""The one I/O-free core of every stream loop (run_turn, arun_turn and the agent's)."""

from __future__ import annotations

import pytest

from toolwire._provider import ReplyCollector
from toolwire.adapters import AssistantReply, ReplyCompleted, TextDelta
from toolwire.exceptions import StreamError


def test_the_reply_is_complete_at_reply_completed() -> None:
    collector = ReplyCollector()
    reply = AssistantReply("hi")
    assert [False, False, True] == [
        collector.feed(e) for e in (TextDelta("h"), TextDelta("i"), ReplyCompleted(reply))
    ]
    assert reply is collector.result()


def test_a_stream_cut_short_has_no_reply() -> None:
    collector = ReplyCollector()
    collector.feed(TextDelta("h"))
    with pytest.raises(StreamError, match="the stream ended without a completed reply"):
        collector.result()
