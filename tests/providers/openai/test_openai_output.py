"""Structured output and model settings through every OpenAI-shaped adapter, over real HTTP.

The answer's schema goes as ``response_format`` (Chat Completions) or ``text.format``
(Responses), strict where the schema compiles losslessly; the settings map onto each
API's own fields; every request body is checked against the openai SDK's types.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _openai_support import Adapter, validate_requests
from fakes import FakeOpenAI
from pydantic import BaseModel, Field

import toolwire as tw
from toolwire_openai._common import OpenAIBase


class City(BaseModel):
    """A city and how many people live there."""

    name: str
    population: int
    country: str = "unknown"


def _format(adapter: Adapter, body: dict[str, object]) -> dict[str, object]:
    if adapter.api == "chat":
        rf = body["response_format"]
        assert isinstance(rf, dict)
        assert rf["type"] == "json_schema"
        fmt = rf["json_schema"]
    else:
        text = body["text"]
        assert isinstance(text, dict)
        fmt = dict(text["format"])
        assert fmt.pop("type") == "json_schema"
    assert isinstance(fmt, dict)
    return fmt


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_agent_output_type_validates_the_answer(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    stream: bool,
) -> None:
    provider = make()
    adapter.enqueue_text(fake_openai, '{"name": "Paris", "population": 2100000}', stream=stream)
    agent = tw.Agent(provider, toolset, output_type=City, plugins=False)

    result = agent.run(tw.Session("Be brief."), "Biggest city in France?", stream=stream)

    assert City(name="Paris", population=2100000) == result.output
    (body,) = validate_requests(fake_openai, adapter)
    fmt = _format(adapter, body)
    assert "City" == fmt["name"]
    assert "A city and how many people live there." == fmt["description"]
    schema = fmt["schema"]
    assert isinstance(schema, dict)
    assert {"name", "population", "country"} == set(schema["properties"])
    if adapter.name in ("openai", "openai-responses"):
        # Lossless in strict form: strict is on, every field required, the object closed.
        assert fmt["strict"] is True
        assert schema["additionalProperties"] is False
        assert ["name", "population", "country"] == schema["required"]
    else:
        assert fmt.get("strict") in (None, False)  # servers that may not honour strict


def test_strict_nulls_are_taken_out_so_defaults_apply(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    """Strict mode makes an optional field required-and-nullable: the model's null means
    "left out", so the default applies (as for a tool's arguments)."""
    provider = make()
    text = '{"name": "Lyon", "population": 520000, "country": null}'
    adapter_text(fake_openai, provider, text)
    outcome = tw.run_turn(
        provider, tw.Session().add_user("Lyon?"), tw.resolve_turn(toolset, output_type=City)
    )
    assert isinstance(outcome, tw.Finished)
    if provider.name in ("openai", "openai-responses"):
        assert outcome.output_error is None
        assert "unknown" == outcome.output.country
        assert "null" not in outcome.message.text
    else:  # not strict: the null is the model's, and it is not a string
        assert outcome.output is None
        assert outcome.output_error is not None


def adapter_text(fake: FakeOpenAI, provider: OpenAIBase, text: str) -> None:
    from _openai_support import ADAPTERS

    ADAPTERS[provider.name].enqueue_text(fake, text, stream=False)


def test_invalid_answer_is_sent_back_then_retried(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    adapter.enqueue_text(fake_openai, "Paris, I think.", stream=False)
    adapter.enqueue_text(fake_openai, '{"name": "Paris"}', stream=False)
    adapter.enqueue_text(fake_openai, '{"name": "Paris", "population": 2}', stream=False)
    session = tw.Session()

    result = tw.Agent(provider, toolset, output_type=City, plugins=False).run(session, "City?")

    assert 2 == result.output.population
    bodies = validate_requests(fake_openai, adapter)
    assert 3 == len(bodies)
    # Each invalid answer stays in the transcript, answered by the errors as the user's turn.
    users = [m for m in session if isinstance(m, tw.UserMessage)]
    assert 3 == len(users)
    assert "is not JSON" in users[1].text
    assert "population: Field required" in users[2].text
    assert "Answer again with only the JSON" in users[2].text


def test_retries_are_bounded(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    for _ in range(2):
        adapter.enqueue_text(fake_openai, "[1, 2]", stream=False)
    agent = tw.Agent(provider, toolset, output_type=City, output_retries=1, plugins=False)

    with pytest.raises(tw.OutputValidationError) as info:
        agent.run(tw.Session(), "City?")

    assert "[1, 2]" == info.value.text
    assert info.value.errors  # pydantic's error dicts
    assert 2 == len(fake_openai.requests)


def test_lossy_output_schema_is_reported_and_sent_unstrict(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    class Code(BaseModel):
        value: str = Field(min_length=3)

    provider = make()
    turn = tw.resolve_turn(toolset, output_type=Code)
    body = provider.build_body(tw.Session().add_user("x"), turn, stream=False)
    if provider.name in ("openai", "openai-responses"):
        # "auto": the strict form would lose minLength, so the schema goes as it is.
        assert _format(_adapter(provider), body)["strict"] is False
    assert "minLength" in json.dumps(_format(_adapter(provider), body)["schema"])
    # Forced strict: sent strict, and the report says what was lost.
    forced = make(strict=True)
    compiled = forced.output_compiled(turn)
    assert compiled is not None
    assert compiled.strict is True
    lost = [c for c in compiled.report.changes if c.severity == "warning"]
    assert ["/properties/value"] == [c.path for c in lost]
    value = compiled.schema["properties"]["value"]
    assert "minLength" not in value
    assert "minLength: 3" in value["description"]


def _adapter(provider: OpenAIBase) -> Adapter:
    from _openai_support import ADAPTERS

    return ADAPTERS[provider.name]


def test_a_list_output_is_wrapped_and_unwrapped(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    adapter.enqueue_text(fake_openai, '{"result": [3, 1, 2]}', stream=False)
    result = tw.Agent(provider, toolset, output_type=list[int], plugins=False).run(
        tw.Session(), "Three numbers?"
    )
    assert [3, 1, 2] == result.output
    (body,) = validate_requests(fake_openai, adapter)
    schema = _format(adapter, body)["schema"]
    assert isinstance(schema, dict)
    assert ["result"] == list(schema["properties"])


# -- model settings ---------------------------------------------------------------------


SETTINGS = tw.ModelSettings(
    temperature=0.3,
    top_p=0.9,
    max_output_tokens=256,
    stop=["END"],
    seed=7,
    parallel_tool_calls=False,
    reasoning_effort="low",
)


def test_settings_map_onto_each_api(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    settings = SETTINGS
    if adapter.api == "responses":
        settings = tw.ModelSettings(**{**SETTINGS.given(), "stop": None, "seed": None})
    adapter.enqueue_text(fake_openai, "ok", stream=False)
    tw.Agent(provider, toolset, plugins=False, settings=settings).run(tw.Session(), "hi")

    (body,) = validate_requests(fake_openai, adapter)
    assert 0.3 == body["temperature"]
    assert 0.9 == body["top_p"]
    assert body["parallel_tool_calls"] is False
    if adapter.api == "responses":
        assert 256 == body["max_output_tokens"]
        assert {"effort": "low"} == body["reasoning"]
    else:
        assert ["END"] == body["stop"]
        assert 7 == body["seed"]
        field = "max_completion_tokens" if adapter.name == "openai" else "max_tokens"
        assert 256 == body[field]
        if adapter.name == "openrouter":
            assert {"effort": "low"} == body["reasoning"]
        else:
            assert "low" == body["reasoning_effort"]


def test_run_settings_go_on_top_of_the_agents(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    adapter_text(fake_openai, provider, "ok")
    agent = tw.Agent(
        provider,
        toolset,
        plugins=False,
        settings=tw.ModelSettings(temperature=0.1, top_p=0.5),
        turn=tw.Turn(settings=tw.ModelSettings(max_output_tokens=99, temperature=1.5)),
    )
    agent.run(tw.Session(), "hi", settings=tw.ModelSettings(temperature=0.7))
    body = fake_openai.requests[0].json
    assert 0.7 == body["temperature"]  # run > agent > turn
    assert 0.5 == body["top_p"]
    assert 99 in (
        body.get("max_output_tokens"),
        body.get("max_tokens"),
        body.get("max_completion_tokens"),
    )


def test_a_setting_the_api_has_no_field_for_is_refused_before_sending(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    turn = tw.resolve_turn(toolset, settings=tw.ModelSettings(seed=1, stop="x"))
    if provider.name == "openai-responses":
        with pytest.raises(tw.exceptions.UsageError, match=r"ModelSettings\.stop, \.seed"):
            tw.run_turn(provider, tw.Session().add_user("hi"), turn)
        assert [] == fake_openai.requests
        return
    # Chat Completions has both fields: sent as given.
    many = tw.resolve_turn(toolset, settings=tw.ModelSettings(seed=1, stop=list("abcde")))
    if provider.name == "openai":  # OpenAI itself takes at most four stop sequences
        with pytest.raises(tw.exceptions.UsageError, match="at most 4 stop"):
            tw.run_turn(provider, tw.Session().add_user("hi"), many)
        assert [] == fake_openai.requests
        return
    adapter_text(fake_openai, provider, "ok")
    tw.run_turn(provider, tw.Session().add_user("hi"), many)
    (request,) = fake_openai.requests
    assert (1, list("abcde")) == (request.json["seed"], request.json["stop"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": 3}, "between 0 and 2"),
        ({"temperature": float("nan")}, "between 0 and 2"),
        ({"temperature": "hot"}, "must be a number"),
        ({"top_p": 1.5}, "between 0 and 1"),
        ({"max_output_tokens": 0}, "int >= 1"),
        ({"max_output_tokens": True}, "int >= 1"),
        ({"stop": [""]}, "non-empty strings"),
        ({"stop": 5}, "a string or a list"),
        ({"seed": 1.5}, "must be an int"),
        ({"reasoning_effort": "max"}, "must be one of"),
        ({"parallel_tool_calls": "no"}, "must be a bool"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(tw.exceptions.UsageError, match=match):
        tw.ModelSettings(**kwargs)  # type: ignore[arg-type]
