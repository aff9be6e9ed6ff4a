"""Structured results (#44): the model reads the text, applications read the value.

A tool returns :class:`toolwire.Structured` (an MCP server's result with ``structuredContent``
reaches a toolwire tool so): ``ToolResult.content`` is what the model reads and
``ToolResult.structured`` the typed value; a copy whose text changes drops the value unless
it is given too, so a redaction never leaves the unredacted value behind.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from _helpers import needs_tools

import toolwire as tw

FILE_TEXT = 'line "one"\nline two \\ with a backslash'


class Forecast(pydantic.BaseModel):
    city: str
    celsius: float


@tw.tool_fn
def read_text_file(path: str) -> tw.Structured:
    """Reads a file (as server-filesystem's tool answers: the text, and the same as a value)."""
    return tw.Structured({"content": FILE_TEXT}, text=FILE_TEXT)


@tw.tool_fn
def tree(path: str) -> tw.Structured:
    """A value and no text: the model reads it as JSON, once."""
    return tw.Structured({"content": FILE_TEXT, "children": [{"name": "a"}]})


@tw.tool_fn
def forecast(city: str) -> tw.Structured:
    """A pydantic model as the value: applications get its JSON values."""
    return tw.Structured(Forecast(city=city, celsius=21.5), text=f"21.5 °C in {city}")


@tw.tool_fn
def broken(path: str) -> tw.Structured:
    """A value that is not JSON."""
    return tw.Structured({"handle": object()}, text="ok")


@tw.tool_fn
def pictured(path: str) -> tw.Structured:
    """Text and an image for the model, a value for the application."""
    return tw.Structured({"size": 5}, text=["a picture:", tw.Image(PNG)])


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082"
)


def _run(tool: Any, arguments: str = '{"path": "x"}') -> tw.ToolResult:
    executor = tw.Executor(tools=[tool], plugins=False)  # no policy: what a tool gives
    try:
        return executor.execute(tw.ToolCall("c1", tool.name, arguments))
    finally:
        executor.close()


def test_the_model_reads_the_text_and_the_application_gets_the_value() -> None:
    result = _run(read_text_file)
    assert (FILE_TEXT, {"content": FILE_TEXT}, False) == (
        result.content,
        result.structured,
        result.is_error,
    )
    assert (FILE_TEXT, False) == result.for_model()


def test_a_value_without_text_is_json_once_never_escaped_twice() -> None:
    result = _run(tree)
    assert (
        json.loads(result.content)
        == result.structured
        == {
            "content": FILE_TEXT,
            "children": [{"name": "a"}],
        }
    )
    assert '\\\\"' not in result.content  # one level of escaping, not two


def test_a_pydantic_value_is_its_json_values() -> None:
    result = _run(forecast, '{"city": "Paris"}')
    assert ("21.5 °C in Paris", {"city": "Paris", "celsius": 21.5}) == (
        result.content,
        result.structured,
    )


def test_a_value_that_is_not_json_is_an_error_result_that_says_so() -> None:
    result = _run(broken)
    assert result.is_error
    assert result.structured is None
    assert "structured value" in result.content


def test_text_with_media_keeps_the_parts_and_the_value() -> None:
    result = _run(pictured)
    assert [type(p).__name__ for p in result.parts] == ["Text", "Image"]
    assert {"size": 5} == result.structured


def test_changing_the_text_drops_the_value_unless_it_is_given() -> None:
    result = _run(read_text_file)
    assert result.replace(content="[REDACTED]").structured is None
    kept = result.replace(content="[REDACTED]", structured={"content": "[REDACTED]"})
    assert {"content": "[REDACTED]"} == kept.structured
    assert result.replace(is_error=True).structured == {"content": FILE_TEXT}
    pictured_result = _run(pictured)
    assert pictured_result.with_parts(["no picture"]).structured is None


def test_a_hook_may_complete_a_call_with_a_structured_value_and_commit_keeps_it() -> None:
    session = tw.Session()
    session.add_user("read two")
    rnd = needs_tools(
        session,
        tw.resolve_turn(tw.Toolset("fs", [read_text_file])),
        ("c1", "read_text_file", '{"path": "a"}'),
        ("c2", "read_text_file", '{"path": "b"}'),
    )
    hooks = tw.HookSet()
    cached = tw.Structured({"cached": True}, text="cached")
    hooks.on(None, lambda call: tw.Complete(cached) if call.input.path == "b" else None)
    executor = tw.Executor(plugins=False)  # no policy: what the hook and the tool give
    try:
        executor.execute_and_commit(rnd.apply_hooks(hooks))
    finally:
        executor.close()
    last = session.last
    assert isinstance(last, tw.ToolResultsMessage)
    assert [(FILE_TEXT, {"content": FILE_TEXT}), ("cached", {"cached": True})] == [
        (r.content, r.structured) for r in last.results
    ]


def test_a_result_made_by_hand_may_carry_a_value() -> None:
    call = tw.ToolCall("c1", "read_text_file", '{"path": "x"}')
    result = call.complete(read_text_file, tw.Structured([1, 2], text="two numbers"))
    assert ("two numbers", [1, 2]) == (result.content, result.structured)


def test_the_session_keeps_the_value_and_its_json_round_trip_does_too() -> None:
    call = tw.ToolCall("c1", "read_text_file", '{"path": "x"}')
    session = tw.Session()
    session.add_user("read it")
    session.extend(
        [
            tw.AssistantMessage("", (call,)),
            tw.ToolResultsMessage((_run(read_text_file),)),
        ]
    )
    kept = session.messages[-1].results[0]
    assert {"content": FILE_TEXT} == kept.structured
    data = json.loads(json.dumps(session.to_dict()))
    assert data["messages"][-1]["results"][0]["structured"] == {"content": FILE_TEXT}
    back = tw.Session.from_dict(data)
    assert {"content": FILE_TEXT} == back.messages[-1].results[0].structured
    # A session without one reads back without one (older files too).
    del data["messages"][-1]["results"][0]["structured"]
    assert tw.Session.from_dict(data).messages[-1].results[0].structured is None


@pytest.mark.parametrize("text", [42, {"not": "parts"}])
def test_text_that_is_neither_text_nor_parts_is_an_error_result(text: Any) -> None:
    @tw.tool_fn
    def odd(path: str) -> tw.Structured:
        """Text that is no text."""
        return tw.Structured({"a": 1}, text=text)

    result = _run(odd)
    assert result.is_error
    assert result.structured is None


def test_structured_of_a_type_gives_the_tool_that_types_output_schema() -> None:
    @tw.tool_fn
    def typed_forecast(city: str) -> tw.Structured[Forecast]:
        """A forecast."""
        return tw.Structured(Forecast(city=city, celsius=3.0), text="cold")

    schema = typed_forecast.output_schema
    assert schema is not None
    assert ["celsius", "city"] == sorted(schema["properties"])
    assert read_text_file.output_schema is None  # a bare Structured says no shape
    result = _run(typed_forecast, '{"city": "Oslo"}')
    assert ("cold", {"city": "Oslo", "celsius": 3.0}) == (result.content, result.structured)


def test_a_value_not_of_the_declared_type_is_an_error_result() -> None:
    @tw.tool_fn
    def wrong(city: str) -> tw.Structured[Forecast]:
        """A forecast without its number."""
        return tw.Structured({"city": city}, text="no number")

    result = _run(wrong, '{"city": "Oslo"}')
    assert result.is_error
    assert "celsius" in result.content
    assert result.structured is None
