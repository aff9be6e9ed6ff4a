"""What every adapter sends, side by side: the same session gives the same request content, each
body checked against the official SDK's request types.

A workspace test: it needs the three provider distributions installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fakes import validate

import toolwire as tw
from toolwire.adapters import ResolvedTurn
from toolwire_anthropic import AnthropicProvider
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAIResponsesProvider

BASE = "http://127.0.0.1:9"  # never contacted: only request bodies are built


def _chat(session: tw.Session, turn: ResolvedTurn) -> list[str]:
    with OpenAIChatProvider("m", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_openai_chat_request(body)
    return [m["content"] for m in body["messages"] if m["role"] == "system"]


def _responses(session: tw.Session, turn: ResolvedTurn) -> list[str]:
    with OpenAIResponsesProvider("m", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_openai_responses_request(body)
    return [i["content"] for i in body["input"] if i.get("role") == "system"]


def _anthropic(session: tw.Session, turn: ResolvedTurn) -> list[str]:
    with AnthropicProvider("m", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_anthropic_request(body)
    return [body["system"]] if "system" in body else []


def _gemini(session: tw.Session, turn: ResolvedTurn) -> list[str]:
    with GeminiProvider("m", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn)
    validate.validate_gemini_request(body)
    instruction = body.get("systemInstruction") or body.get("system_instruction")
    return [part["text"] for part in instruction["parts"]] if instruction else []


SYSTEMS: dict[str, Callable[[tw.Session, ResolvedTurn], list[str]]] = {
    "openai": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


@pytest.mark.parametrize("adapter", sorted(SYSTEMS))
def test_an_empty_system_message_is_sent_by_no_adapter(adapter: str) -> None:
    turn = tw.resolve_turn(tw.Toolset("app", []))
    system = SYSTEMS[adapter]
    assert [] == system(tw.Session("").add_user("hi"), turn)
    both = tw.Session("").add_system("Be brief.").add_user("hi")
    assert ["Be brief."] == system(both, turn)


def test_the_session_keeps_the_empty_system_message() -> None:
    # Nothing is lost: the transcript round-trips as written; only sending skips it.
    session = tw.Session("").add_user("hi")
    again = tw.Session.from_dict(session.to_dict())
    assert [("system", ""), ("user", "hi")] == [(m.role, m.text) for m in again]


@pytest.mark.parametrize(
    "cls", [OpenAIChatProvider, OpenAIResponsesProvider, AnthropicProvider, GeminiProvider]
)
def test_every_adapter_takes_a_deadline_and_a_size_limit(cls: Any) -> None:
    with cls("m", api_key="k", base_url=BASE, deadline=7.5, max_response_bytes=1234) as p:
        assert (7.5, 1234) == (p._transport._deadline, p._transport._max_bytes)
    with cls("m", api_key="k", base_url=BASE) as p:
        assert (900.0, 64 * 1024 * 1024) == (p._transport._deadline, p._transport._max_bytes)


def _sent_tools(provider: Any, turn: ResolvedTurn) -> Any:
    """The tool list inside the body as it is sent (shared, not copied)."""
    session = tw.Session().add_user("hi")
    if isinstance(provider, GeminiProvider):
        return provider._body(session, turn)["tools"][0]["functionDeclarations"]
    return provider._body(session, turn, stream=False)["tools"]


@pytest.mark.parametrize(
    "cls", [OpenAIChatProvider, OpenAIResponsesProvider, AnthropicProvider, GeminiProvider]
)
def test_every_adapter_renders_an_unchanged_turn_from_its_last_list(cls: Any) -> None:
    @tw.tool_fn
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    toolset = tw.Toolset("app", [ping])
    with cls("m", api_key="k", base_url=BASE) as p:
        first = _sent_tools(p, tw.resolve_turn(toolset))
        assert first is _sent_tools(p, tw.resolve_turn(toolset))
        changed = _sent_tools(p, tw.resolve_turn(toolset, description_overrides={"ping": "Ping!"}))
        assert changed is not first
        assert "Ping!" in str(changed)
        assert "Ping!" not in str(_sent_tools(p, tw.resolve_turn(toolset)))
