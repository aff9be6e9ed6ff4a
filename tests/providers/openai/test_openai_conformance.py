"""Requests the real API accepts: encrypted reasoning only where the model reasons.

The fake answers as the API does: 400 "Encrypted content is not supported with
this model" when a model that does not reason is asked for encrypted reasoning,
and 404 when, with ``store`` false, a reasoning item comes back without its
encrypted content (nothing was stored for it to refer to). Every request the
adapter sent is checked against the openai SDK's request types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _openai_support import ADAPTERS, enqueue_response, validate_requests
from fakes import Call, FakeOpenAI, openai_responses

import toolwire as tw
from toolwire.exceptions import BadRequestError
from toolwire_openai import OpenAIResponsesProvider, is_reasoning_model

W = Call.of("get_weather", {"city": "Paris"}, id="call_w")


@pytest.fixture
def build(fake_openai: FakeOpenAI) -> Iterator[Any]:
    made: list[OpenAIResponsesProvider] = []

    def make(model: str | None = None, **options: Any) -> OpenAIResponsesProvider:
        provider = OpenAIResponsesProvider(
            model, api_key=fake_openai.default_api_key, base_url=fake_openai.base_url, **options
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def _loop(
    fake: FakeOpenAI,
    provider: OpenAIResponsesProvider,
    toolset: tw.Toolset,
    session: tw.Session,
    reasoning: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """One tool round and a final answer; returns the two request bodies."""
    first = openai_responses.tool_calls_response(W)
    if reasoning is not None:
        first["output"].insert(0, reasoning)
    enqueue_response(fake, first)
    enqueue_response(fake, openai_responses.text_response("Sunny."))
    outcome = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(outcome, tw.NeedsTools)
    results = [t.call.complete(t.tool, "sunny") for t in outcome.round.calls]
    outcome.round.commit(results)
    final = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(final, tw.Finished)
    return validate_requests(fake, ADAPTERS["openai-responses"])


def test_the_default_model_is_not_asked_for_encrypted_reasoning(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = build()
    assert "gpt-4.1" == provider.model
    bodies = _loop(fake_openai, provider, toolset, session, None)
    assert [(False, None), (False, None)] == [(b["store"], b.get("include")) for b in bodies]


@pytest.mark.parametrize("model", ["o4-mini", "o3", "gpt-5", "gpt-5-mini-2025-08-07"])
def test_a_reasoning_model_gets_its_reasoning_back_encrypted(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session, model: str
) -> None:
    item = openai_responses.reasoning_item(summary=["Look it up."])
    bodies = _loop(fake_openai, build(model), toolset, session, item)
    assert [["reasoning.encrypted_content"]] * 2 == [b["include"] for b in bodies]
    replayed = [i for i in bodies[1]["input"] if i.get("type") == "reasoning"]
    assert [item["encrypted_content"]] == [i["encrypted_content"] for i in replayed]


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest"])
def test_forcing_encrypted_reasoning_on_a_model_that_does_not_reason_is_the_apis_400(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session, model: str
) -> None:
    # The reproducer: what the adapter sent by default before the rule.
    provider = build(model, include_encrypted_reasoning=True)
    with pytest.raises(BadRequestError, match="Encrypted content is not supported"):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert ["reasoning.encrypted_content"] == fake_openai.requests[0].json["include"]


def test_a_reasoning_item_without_encrypted_content_is_not_sent_back_when_nothing_is_stored(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = build("o4-mini", include_encrypted_reasoning=False)
    bare = openai_responses.reasoning_item(encrypted_content=None)
    bodies = _loop(fake_openai, provider, toolset, session, bare)
    assert [None, None] == [b.get("include") for b in bodies]
    assert "reasoning" not in [i.get("type") for i in bodies[1]["input"]]


def test_with_store_the_reasoning_item_is_sent_back_by_id(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session
) -> None:
    bare = openai_responses.reasoning_item(encrypted_content=None, id="rs_kept")
    bodies = _loop(fake_openai, build("o4-mini", store=True), toolset, session, bare)
    assert [(True, None)] * 2 == [(b["store"], b.get("include")) for b in bodies]
    assert ["rs_kept"] == [i["id"] for i in bodies[1]["input"] if i.get("type") == "reasoning"]


def test_the_rule_follows_a_model_changed_after_construction(
    fake_openai: FakeOpenAI, build: Any, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = build("gpt-4.1")
    provider.model = "o3"
    enqueue_response(fake_openai, openai_responses.text_response("hi"))
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert ["reasoning.encrypted_content"] == fake_openai.requests[0].json["include"]


@pytest.mark.parametrize(
    ("model", "reasons"),
    [
        ("o1", True),
        ("o3-mini", True),
        ("o3-pro", True),
        ("o4-mini-2025-04-16", True),
        ("gpt-5", True),
        ("gpt-5.1", True),
        ("gpt-5-codex", True),
        ("codex-mini-latest", True),
        ("gpt-oss-120b", True),
        ("openai/o3", True),
        ("ft:o4-mini-2025-04-16:acme::abc123", True),
        ("gpt-5-chat-latest", False),
        ("gpt-4.1", False),
        ("gpt-4o-mini", False),
        ("chatgpt-4o-latest", False),
        ("omni-moderation-latest", False),
        ("gpt-50", False),
        ("o", False),
        ("", False),
    ],
)
def test_is_reasoning_model(model: str, reasons: bool) -> None:
    assert reasons is is_reasoning_model(model)
