"""The built-in offline test provider: generated arguments, requirement, finishing, scripts."""

from __future__ import annotations

import datetime
import json
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _by_path import load
from pydantic import BaseModel, Field

import toolwire as tw
from toolwire.providers.test import TestProvider, example_arguments


def _fixture_tools() -> ModuleType:
    return load("toolwire_fixture_tools", Path("bench/fixture_tools.py"))


FIXTURE = _fixture_tools()
FIXTURE_TOOLS = [tw.tool_fn(f) for f in FIXTURE.TOOL_FUNCTIONS]


def test_fixture_has_fifty_tools() -> None:
    assert 50 == len(FIXTURE_TOOLS)


@pytest.mark.parametrize("tool", FIXTURE_TOOLS, ids=lambda t: t.name)
def test_generated_arguments_validate_for_every_fixture_tool(tool: tw.Tool[Any, Any]) -> None:
    text = json.dumps(example_arguments(tool.input_schema))
    assert isinstance(tool.validate_json(text), tool.input_type)


def test_generated_arguments_for_formats_tuples_and_bounds() -> None:
    @tw.tool_fn
    def book(
        when: datetime.datetime,
        day: datetime.date,
        ref: uuid.UUID,
        pair: tuple[int, str],
        small: int = Field(lt=0),
        ratio: float = Field(gt=0, lt=1),
        count: int = Field(gt=5, multiple_of=4),
    ) -> str:
        return ""

    text = json.dumps(example_arguments(book.input_schema))
    assert isinstance(book.validate_json(text), book.input_type)


def _run(
    provider: TestProvider, ts: tw.Toolset, prompt: str, **turn_args: Any
) -> tw.Finished | tw.NeedsTools:
    session = tw.Session().add_user(prompt)
    return tw.run_turn(provider, session, tw.resolve_turn(ts, **turn_args))


def test_calls_the_tool_the_prompt_names(toolset: tw.Toolset) -> None:
    out = _run(TestProvider(), toolset, "What is the weather in 'Oslo'?")
    assert isinstance(out, tw.NeedsTools)
    assert ["get_weather"] == [c.name for c in out.round.calls]


def test_quoted_prompt_text_fills_string_arguments(toolset: tw.Toolset) -> None:
    out = _run(TestProvider(), toolset, "What is the weather in 'Oslo'?")
    assert isinstance(out, tw.NeedsTools)
    assert "Oslo" == out.round.expect_one().input.city


def test_answers_directly_when_no_tool_matches(toolset: tw.Toolset) -> None:
    out = _run(TestProvider(), toolset, "hello")
    assert isinstance(out, tw.Finished)
    assert "(offline test provider) You said: hello" == out.text


def test_respects_a_specific_requirement(toolset: tw.Toolset) -> None:
    out = _run(
        TestProvider(),
        toolset,
        "weather please",
        requirement=tw.Requirement.specific("search_docs"),
    )
    assert isinstance(out, tw.NeedsTools)
    assert ["search_docs"] == [c.name for c in out.round.calls]


def test_respects_at_least_one(toolset: tw.Toolset) -> None:
    out = _run(TestProvider(), toolset, "hello", requirement=tw.Requirement.at_least_one())
    assert isinstance(out, tw.NeedsTools)
    assert 1 == len(out.round.calls)


@tw.tool_fn
def read_file(path: str) -> str:
    """Read a file."""
    return ""


@tw.tool_fn(effect="mutating")
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return ""


@tw.tool_fn(effect="destructive")
def drop_table(name: str) -> str:
    """Drop a table."""
    return ""


FILES = tw.Toolset("files", [write_file, read_file, drop_table])


@pytest.mark.parametrize(
    ("prompt", "called"),
    [
        ("delete_file 'victim.txt'", ["read_file"]),  # #40.11: it called write_file
        ("overwrite the file 'victim.txt'", ["read_file"]),
        ("write file 'notes.txt'", ["write_file"]),
        ("please drop_table 'users'", ["drop_table"]),
        ("drop 'users'", []),
    ],
)
def test_a_tool_that_changes_anything_is_called_only_when_the_prompt_names_it(
    prompt: str, called: list[str]
) -> None:
    out = _run(TestProvider(), FILES, prompt)
    names = [c.name for c in out.round.calls] if isinstance(out, tw.NeedsTools) else []
    assert called == names


def test_at_least_one_picks_a_read_only_tool() -> None:
    out = _run(TestProvider(), FILES, "hello", requirement=tw.Requirement.at_least_one())
    assert isinstance(out, tw.NeedsTools)
    assert ["read_file"] == [c.name for c in out.round.calls]


def test_respects_parallel_calls_false() -> None:
    ts = tw.Toolset("t", FIXTURE_TOOLS)
    prompt = "get weather and search docs"
    parallel = _run(TestProvider(), ts, prompt)
    single = _run(TestProvider(), ts, prompt, parallel_calls=False)
    assert isinstance(parallel, tw.NeedsTools)
    assert isinstance(single, tw.NeedsTools)
    assert (True, 1) == (len(parallel.round.calls) > 1, len(single.round.calls))


def test_every_fixture_tool_call_decodes_without_issues() -> None:
    ts = tw.Toolset("t", FIXTURE_TOOLS)
    for tool in FIXTURE_TOOLS:
        out = _run(TestProvider(), ts, "go", requirement=tw.Requirement.specific(tool.name))
        assert isinstance(out, tw.NeedsTools)
        assert ((), 1) == (out.round.issues, len(out.round.calls))


def test_finishes_with_text_that_uses_the_results(toolset: tw.Toolset) -> None:
    provider = TestProvider()
    session = tw.Session().add_user("What is the weather in 'Oslo'?")
    turn = tw.resolve_turn(toolset)
    out = tw.run_turn(provider, session, turn)
    assert isinstance(out, tw.NeedsTools)
    call = out.round.expect_one()
    out.round.commit([call.complete(call.run())])
    final = tw.run_turn(provider, session, turn)
    assert isinstance(final, tw.Finished)
    assert "Here is what I found. get_weather returned: sunny in Oslo for 1 days." == final.text


def test_final_text_reports_rejections(toolset: tw.Toolset) -> None:
    provider = TestProvider()
    session = tw.Session().add_user("weather?")
    turn = tw.resolve_turn(toolset)
    out = tw.run_turn(provider, session, turn)
    assert isinstance(out, tw.NeedsTools)
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.Reject("policy"))
    out.round.apply_hooks(hooks).commit()
    final = tw.run_turn(provider, session, turn)
    assert isinstance(final, tw.Finished)
    assert "Here is what I found. get_weather was rejected (policy)." == final.text


def test_scripted_mode_replays_replies_in_order(toolset: tw.Toolset) -> None:
    provider = TestProvider(
        script=[
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a"}]},
            {"text": "Done."},
        ]
    )
    session = tw.Session().add_user("x")
    turn = tw.resolve_turn(toolset)
    first = tw.run_turn(provider, session, turn)
    assert isinstance(first, tw.NeedsTools)
    call = first.round.expect_one()
    first.round.commit([call.complete("ok")])
    second = tw.run_turn(provider, session, turn)
    assert (("a", "Rome"), "Done.") == ((call.id, call.input.city), second.text)  # type: ignore[union-attr]


def test_scripted_mode_errors_clearly_when_exhausted(toolset: tw.Toolset) -> None:
    provider = TestProvider(script=[{"text": "one"}])
    session = tw.Session().add_user("x")
    turn = tw.resolve_turn(toolset)
    tw.run_turn(provider, session, turn)
    session.add_user("again")
    with pytest.raises(tw.ProviderError) as info:
        tw.run_turn(provider, session, turn)
    assert (
        "[test] the scripted test provider has no replies left (request 2; give one reply "
        "per request in script=[...])" == str(info.value)
    )


def test_scripted_reply_must_be_a_reply_or_dict() -> None:
    with pytest.raises(TypeError) as info:
        TestProvider(script=["hi"])  # type: ignore[list-item]
    assert "script[0] must be an AssistantReply or a dict, got str" == str(info.value)


def test_scripted_call_without_a_name_is_named() -> None:
    with pytest.raises(TypeError) as info:
        TestProvider(script=[{"tool_calls": [{"arguments": {}}]}])
    assert (
        "script[0].tool_calls[0] must be a dict with a string 'name', got {'arguments': {}}"
        == str(info.value)
    )


def test_scripted_raw_argument_text_is_kept(toolset: tw.Toolset) -> None:
    provider = TestProvider(script=[{"tool_calls": [{"name": "get_weather", "arguments": "{bad"}]}])
    out = tw.run_turn(provider, tw.Session().add_user("x"), tw.resolve_turn(toolset))
    assert isinstance(out, tw.NeedsTools)
    assert [tw.InvalidArguments] == [type(i) for i in out.round.issues]


def test_streaming_yields_events_and_the_same_result(toolset: tw.Toolset) -> None:
    events: list[tw.adapters.StreamEvent] = []
    session = tw.Session().add_user("weather in 'Oslo'")
    out = tw.run_turn(TestProvider(), session, tw.resolve_turn(toolset), on_event=events.append)
    assert isinstance(out, tw.NeedsTools)
    assert [tw.adapters.ToolCallStarted, tw.adapters.ToolCallDelta, tw.adapters.ReplyCompleted] == [
        type(e) for e in events
    ]


async def test_async_turn(toolset: tw.Toolset) -> None:
    session = tw.Session().add_user("hello")
    out = await tw.arun_turn(TestProvider(), session, tw.resolve_turn(toolset))
    assert isinstance(out, tw.Finished)


def test_tool_input_model_arguments(search: type[BaseModel]) -> None:
    tool = tw.tool_of(search)
    assert {"query": "example"} == example_arguments(tool.input_schema)


def test_the_answer_quotes_long_results_in_one_short_line() -> None:
    from toolwire.providers.test import _gist

    listing = "\n".join(f"file_{i:03d}.txt" for i in range(100))
    text = _gist(listing)
    assert text.startswith("file_000.txt; file_001.txt; ")
    assert text.endswith("\u2026 (100 lines)")
    assert 160 + len(" (100 lines)") == len(text)


def test_a_short_result_is_quoted_as_it_is() -> None:
    from toolwire.providers.test import _gist

    assert "short" == _gist("short")
