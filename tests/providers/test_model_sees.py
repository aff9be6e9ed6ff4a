"""What the model reads for a rejected call, in every adapter: plain language and the
provider's error flag, never the machine marker; ``rejection_reason`` still reads the
transcript."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire as tw
from toolwire_anthropic import AnthropicProvider
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAIResponsesProvider


@tw.tool_fn
def delete_all(path: str) -> str:
    """Delete everything under a path."""
    return "gone"


def _session_with_a_rejection() -> tuple[tw.Session, tw.adapters.ResolvedTurn]:
    session = tw.Session().add_user("clean up")
    turn = tw.resolve_turn(tw.Toolset("t", [delete_all]), plugins=False)
    reply = tw.adapters.AssistantReply(
        "", (tw.ToolCall("call_1", "delete_all", '{"path": "/"}'),), "tool_calls"
    )
    outcome = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    call = outcome.round.calls[0]
    outcome.round.commit(
        [call.call.result(tw.adapters.rejection_content("policy says no"), is_error=True)]
    )
    return session, turn


PLAIN = "The call was rejected and did not run: policy says no"


def _result_part(name: str, body: dict[str, Any]) -> tuple[str, bool]:
    if name == "openai":
        (msg,) = [m for m in body["messages"] if m["role"] == "tool"]
        return msg["content"], False  # Chat Completions has no error flag
    if name == "responses":
        (item,) = [i for i in body["input"] if i.get("type") == "function_call_output"]
        return item["output"], False
    if name == "anthropic":
        (block,) = [
            b
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        return block["content"], block.get("is_error", False)
    (part,) = [p for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    response = part["functionResponse"]["response"]
    return response.get("error", response.get("output")), "error" in response


@pytest.mark.parametrize("name", ["openai", "responses", "anthropic", "gemini"])
def test_a_rejection_reads_as_plain_language_with_the_error_flag(name: str) -> None:
    session, turn = _session_with_a_rejection()
    provider: Any
    if name == "openai":
        provider = OpenAIChatProvider(api_key="k")
        body = provider.build_body(session, turn, stream=False)
    elif name == "responses":
        provider = OpenAIResponsesProvider(api_key="k")
        body = provider.build_body(session, turn, stream=False)
    elif name == "anthropic":
        provider = AnthropicProvider(api_key="k")
        body = provider.build_body(session, turn, stream=False)
    else:
        provider = GeminiProvider(api_key="k")
        body = provider.build_body(session, turn)
    text, flagged = _result_part(name, body)
    assert PLAIN == text
    assert tw.adapters.REJECTION_PREFIX not in json.dumps(body)
    if name in ("anthropic", "gemini"):
        assert flagged
    # The transcript keeps the marker: code still reads the reason back.
    results = session.last
    assert isinstance(results, tw.ToolResultsMessage)
    assert "policy says no" == tw.adapters.rejection_reason(results.results[0])
    provider.close()


def test_for_model_leaves_other_results_as_they_are() -> None:
    ok = tw.ToolResult("c", "t", "{}", "42")
    failed = tw.ToolResult("c", "t", "{}", "boom", True)
    assert ("42", False) == ok.for_model()
    assert ("boom", True) == failed.for_model()
