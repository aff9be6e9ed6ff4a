"""Structured output in core: OutputSpec, resolve_turn(output_type=...), Finished.output,
the agent's bounded retries, and ModelSettings layering (no provider needed)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import toolwire as tw
from toolwire.providers.test import TestProvider


class City(BaseModel):
    """A city."""

    name: str
    population: int = Field(ge=0)


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


def test_spec_of_a_model_carries_its_schema_name_and_description() -> None:
    spec = tw.adapters.output_spec(City)
    assert "City" == spec.name
    assert "A city." == spec.description
    assert not spec.wrapped
    assert {"name", "population"} == set(spec.schema["properties"])
    assert "description" not in spec.schema  # sent as the output's description
    assert spec is tw.adapters.output_spec(City)  # shared: adapters cache their rendering on it
    assert spec is tw.adapters.output_spec(spec)


@pytest.mark.parametrize(
    ("tp", "text", "value"),
    [
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (Pair, '{"left": "a", "right": "b"}', {"left": "a", "right": "b"}),
        (list[int], '{"result": [1, 2]}', [1, 2]),
        (int, '{"result": 7}', 7),
        (dict[str, int], '{"result": {"a": 1}}', {"a": 1}),
    ],
)
def test_types_pydantic_validates(tp: Any, text: str, value: Any) -> None:
    spec = tw.adapters.output_spec(tp)
    assert value == spec.parse(text)
    assert value == spec.parse(spec.dump(value))


def test_non_object_types_are_wrapped_in_result() -> None:
    spec = tw.adapters.output_spec(list[City])
    assert spec.wrapped
    assert ["result"] == spec.schema["required"]
    assert "$defs" in spec.schema  # the definitions stay at the root
    with pytest.raises(tw.OutputValidationError, match='key "result"'):
        spec.parse("[]")


def test_a_fenced_answer_is_accepted() -> None:
    spec = tw.adapters.output_spec(City)
    fenced = '```json\n{"name": "Oslo", "population": 1}\n```'
    assert "Oslo" == spec.parse(fenced).name
    assert "Oslo" == spec.parse('```{"name": "Oslo", "population": 1}```').name


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Oslo, I think", "is not JSON"),
        ("", "is not JSON"),
        ('{"name": "Oslo"}', "population: Field required"),
        ('{"name": "Oslo", "population": -1}', "population: Input should be greater"),
        ("[" * 100_000, "nested too deep|is not JSON"),
        ('{"name": "Oslo", "population": NaN}', "population"),
    ],
)
def test_malformed_answers_are_errors_with_feedback(text: str, match: str) -> None:
    spec = tw.adapters.output_spec(City)
    with pytest.raises(tw.OutputValidationError, match=match) as info:
        spec.parse(text)
    assert text == info.value.text
    assert "Answer again with only the JSON" in info.value.feedback
    assert len(info.value.feedback) < 2_200


def test_name_is_sanitised_and_bad_types_are_refused() -> None:
    assert "my_answer_" == tw.adapters.output_spec(City, name="my answer!").name
    with pytest.raises(tw.exceptions.UsageError, match="not a type pydantic"):
        tw.adapters.output_spec(object())
    with pytest.raises(tw.exceptions.UsageError, match="got None"):
        tw.adapters.output_spec(None)
    with pytest.raises(tw.exceptions.UsageError, match="non-empty"):
        tw.adapters.output_spec(City, name="")


def test_resolve_turn_and_finished_output() -> None:
    tools = tw.Toolset("t", [])
    provider = TestProvider(script=[{"text": '{"name": "Rome", "population": 3}'}])
    turn = tw.resolve_turn(tools, output_type=City)
    assert turn.output is tw.adapters.output_spec(City)
    outcome = tw.run_turn(provider, tw.Session().add_user("?"), turn)
    assert isinstance(outcome, tw.Finished)
    assert City(name="Rome", population=3) == outcome.output
    assert outcome.output_error is None


def test_finished_keeps_the_answer_and_the_error() -> None:
    provider = TestProvider(script=[{"text": "Rome"}])
    session = tw.Session().add_user("?")
    outcome = tw.run_turn(provider, session, tw.resolve_turn(tw.Toolset("t", []), output_type=City))
    assert isinstance(outcome, tw.Finished)
    assert outcome.output is None
    assert outcome.output_error is not None
    assert "Rome" == session.last.text  # the answer is in the session, as always


def test_the_offline_provider_answers_with_valid_json() -> None:
    result = tw.Agent(TestProvider(), tw.Toolset("t", []), output_type=City, plugins=False).run(
        tw.Session(), "Tell me about 'Oslo'"
    )
    assert "Oslo" == result.output.name


def test_agent_retries_then_raises() -> None:
    script = [{"text": "no"}, {"text": '{"name": 1}'}, {"text": "still no"}]
    provider = TestProvider(script=script)
    agent = tw.Agent(provider, tw.Toolset("t", []), output_type=City, plugins=False)
    session = tw.Session()
    with pytest.raises(tw.OutputValidationError):
        agent.run(session, "?")
    assert 3 == len(provider.requests)
    # prompt, answer, feedback, answer, feedback, answer: a valid transcript to go on with.
    roles = [type(m).__name__ for m in session]
    assert ["UserMessage", "AssistantMessage"] * 3 == roles


def test_retries_zero_raises_at_once() -> None:
    provider = TestProvider(script=[{"text": "no"}])
    agent = tw.Agent(
        provider, tw.Toolset("t", []), output_type=City, output_retries=0, plugins=False
    )
    with pytest.raises(tw.OutputValidationError):
        agent.run(tw.Session(), "?")


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_output_retries_must_be_an_int(bad: Any) -> None:
    with pytest.raises(tw.exceptions.UsageError, match="output_retries"):
        tw.Agent(TestProvider(), tw.Toolset("t", []), output_retries=bad)


def test_output_after_a_tool_round() -> None:
    @tw.tool_fn
    def population(city: str) -> int:
        """How many people live in a city."""
        return 42

    script = [
        {"tool_calls": [{"name": "population", "arguments": {"city": "Oslo"}}]},
        {"text": '{"name": "Oslo", "population": 42}'},
    ]
    provider = TestProvider(script=script)
    result = tw.Agent(provider, tw.Toolset("t", [population]), output_type=City, plugins=False).run(
        tw.Session(), "Oslo?"
    )
    assert 42 == result.output.population
    assert 1 == result.rounds
    assert all(turn.output is tw.adapters.output_spec(City) for _, turn in provider.requests)


async def test_async_agent_output() -> None:
    provider = TestProvider(script=[{"text": "x"}, {"text": '{"name": "A", "population": 1}'}])
    agent = tw.Agent(provider, tw.Toolset("t", []), output_type=City, plugins=False)
    result = await agent.arun(tw.Session(), "?")
    assert "A" == result.output.name


# -- settings ---------------------------------------------------------------------------


def test_settings_layer_turn_agent_run() -> None:
    provider = TestProvider(script=[{"text": "ok"}])
    agent = tw.Agent(
        provider,
        tw.Toolset("t", []),
        plugins=False,
        settings=tw.ModelSettings(temperature=0.1, seed=1),
        turn=tw.Turn(settings=tw.ModelSettings(top_p=0.5, temperature=0.9)),
    )
    agent.run(tw.Session(), "hi", settings=tw.ModelSettings(seed=2))
    ((_, turn),) = provider.requests
    assert tw.ModelSettings(temperature=0.1, top_p=0.5, seed=2) == turn.settings


def test_parallel_setting_wins_over_the_turns() -> None:
    tools = tw.Toolset("t", [])
    turn = tw.resolve_turn(
        tools, parallel_calls=True, settings=tw.ModelSettings(parallel_tool_calls=False)
    )
    assert turn.parallel is False
    assert tw.resolve_turn(tools, parallel_calls=True).parallel is True


def test_settings_must_be_model_settings() -> None:
    with pytest.raises(tw.exceptions.UsageError, match="ModelSettings"):
        tw.resolve_turn(tw.Toolset("t", []), settings={"temperature": 1})  # type: ignore[arg-type]
    agent = tw.Agent(TestProvider(), tw.Toolset("t", []), plugins=False)
    with pytest.raises(tw.exceptions.UsageError, match="ModelSettings"):
        agent.run(tw.Session(), "x", settings={"seed": 1})  # type: ignore[arg-type]
    with pytest.raises(tw.exceptions.UsageError, match="ModelSettings"):
        tw.ModelSettings().merged({"seed": 1})  # type: ignore[arg-type]


def test_given_lists_only_set_fields() -> None:
    s = tw.ModelSettings(stop="x", seed=3)
    assert {"stop": ("x",), "seed": 3} == s.given()
    assert json.dumps(list(s.given()))
