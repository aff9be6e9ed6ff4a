"""The neutral Session: ordering rules, JSON round trip, malformed data named by path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire as tw

CALL = tw.ToolCall("c1", "get_weather", '{"city":"Oslo"}')
RESULT = CALL.result("sunny")
_RESULT_DICT = {
    "call_id": "c1",
    "tool_name": "get_weather",
    "arguments": CALL.arguments,
    "content": "sunny",
    "is_error": False,
}


def _full_session() -> tw.Session:
    s = tw.Session("sys", id="s1", metadata={"user": "u1"})
    s.add_user("weather?")
    s.extend(
        [
            tw.AssistantMessage(
                "", (CALL,), {"anthropic": {"thinking": "x"}}, "m1", tw.Usage(10, 2)
            ),
            tw.ToolResultsMessage((RESULT,)),
        ]
    )
    s.add_assistant("It is sunny.")
    return s


def test_session_round_trips_through_json() -> None:
    s = _full_session()
    assert s == tw.Session.from_json(s.to_json())


def test_session_json_names_its_format() -> None:
    assert "toolwire.session/1" == json.loads(_full_session().to_json())["format"]


def test_system_text_joins_system_messages() -> None:
    s = tw.Session("one").add_system("two")
    assert "one\n\ntwo" == s.system_text()


def test_unanswered_tool_calls_block_the_next_message() -> None:
    s = tw.Session()
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        s.extend([tw.AssistantMessage("", (CALL,)), tw.UserMessage("hi")])
    assert (
        "message 1 (user) follows an assistant turn whose tool calls `c1` have no results; "
        "commit the tool round first" == str(info.value)
    )


def test_failed_extend_writes_nothing() -> None:
    s = tw.Session("sys")
    with pytest.raises(tw.exceptions.TranscriptError):
        s.extend([tw.AssistantMessage("", (CALL,)), tw.UserMessage("hi")])
    assert 1 == len(s)


def test_results_must_follow_tool_calls() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().extend([tw.ToolResultsMessage((RESULT,))])
    assert "message 0: tool results must follow an assistant turn with tool calls" == str(
        info.value
    )


def test_results_count_must_match_calls() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().extend([tw.AssistantMessage("", (CALL,)), tw.ToolResultsMessage(())])
    assert "1 tool calls but 0 results: calls ['c1'], results []" == str(info.value)


def test_results_must_be_in_call_order() -> None:
    other = tw.ToolCall("c2", "get_weather", "{}")
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().extend(
            [
                tw.AssistantMessage("", (CALL, other)),
                tw.ToolResultsMessage((other.result("x"), RESULT)),
            ]
        )
    assert "result `c2` (get_weather) does not answer call `c1` (get_weather)" in str(info.value)


def test_results_must_carry_the_call_arguments() -> None:
    wrong = tw.ToolResult("c1", "get_weather", "{}", "x")
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().extend([tw.AssistantMessage("", (CALL,)), tw.ToolResultsMessage((wrong,))])
    assert "result `c1` carries arguments that differ from its call's" == str(info.value)


def test_text_must_be_a_string() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().add_user(3)  # type: ignore[arg-type]
    assert "user text must be a string, got int" == str(info.value)


def test_extend_rejects_non_messages() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session().extend(["hi"])  # type: ignore[list-item]
    assert "not a message: 'hi' (str)" == str(info.value)


# Reproducers: extend() took messages whose fields the session could not save (bytes
# content: to_json raised TypeError) or load again (an int text, a str is_error), and text
# with lone surrogates, which no request can be encoded with.
@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([tw.UserMessage(5)], "message 0.text must be a string, got int"),  # type: ignore[arg-type]
        ([tw.SystemMessage(None)], "message 0.text must be a string, got NoneType"),  # type: ignore[arg-type]
        (
            [
                tw.AssistantMessage("", (CALL,)),
                tw.ToolResultsMessage((RESULT._replace(content=b"x"),)),
            ],
            "message 1.results[0].content must be a string, got bytes",
        ),
        (
            [
                tw.AssistantMessage("", (CALL,)),
                tw.ToolResultsMessage((RESULT._replace(is_error="yes"),)),
            ],
            "message 1.results[0].is_error must be a boolean, got str",
        ),
        (
            [tw.AssistantMessage("", (tw.ToolCall("c1", 7, "{}"),))],  # type: ignore[arg-type]
            "message 0.tool_calls[0].name must be a string, got int",
        ),
        (
            [tw.AssistantMessage("", ("c1", "t", "{}"))],  # type: ignore[arg-type]
            "message 0.tool_calls must be a tuple of ToolCall records, got ('c1', 't', '{}')",
        ),
        (
            [tw.AssistantMessage("", (), {"openai": {1, 2}})],
            "message 0.provider_state must be JSON data: Object of type set is not JSON "
            "serializable",
        ),
        ([tw.AssistantMessage("", (), [])], "message 0.provider_state must be a mapping, got list"),  # type: ignore[arg-type]
        ([tw.AssistantMessage("", (), {}, 3)], "message 0.model must be a string, got int"),  # type: ignore[arg-type]
        (
            [tw.AssistantMessage("", (), {}, None, "10 tokens")],  # type: ignore[arg-type]
            "message 0.usage must be a Usage, got '10 tokens'",
        ),
        (
            [tw.AssistantMessage("", (CALL,)), tw.ToolResultsMessage([RESULT, "x"])],  # type: ignore[arg-type]
            "message 1.results must be a tuple of ToolResult records, got [ToolResult(",
        ),
    ],
)
def test_extend_refuses_fields_the_session_could_not_save_or_send(
    messages: list[Any], error: str
) -> None:
    s = tw.Session("sys")
    s.add_user("hi")
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        s.extend(messages)
    message = str(info.value)
    assert message.startswith(
        error.replace("message 0", "message 2").replace("message 1", "message 3")
    )
    assert 2 == len(s)  # nothing written
    assert s == tw.Session.from_json(s.to_json())


@pytest.mark.parametrize("count", ["10", 1.5, True, None])
def test_usage_counts_are_integers(count: Any) -> None:
    # Reproducer: Usage("10") was made, committed with a round, and the saved session
    # could not be loaded again (messages[..].usage.input_tokens must be an integer).
    with pytest.raises(tw.exceptions.UsageError) as info:
        tw.Usage(output_tokens=count)
    assert f"Usage.output_tokens must be an integer, got {type(count).__name__}" == str(info.value)


def test_extend_repairs_lone_surrogates_so_the_session_can_be_sent() -> None:
    broken = tw.ToolCall("c1", "get_weather", '{"city":"\ud800"}')
    s = tw.Session().extend(
        [
            tw.UserMessage("a\ud800b"),
            tw.AssistantMessage("x\udc00", (broken,), {"k\ud800": "v"}, "m\ud800"),
            tw.ToolResultsMessage((broken.result("r\udfff"),)),
        ]
    )
    text = s.to_json()
    text.encode("utf-8")  # would raise UnicodeEncodeError on a lone surrogate
    user, assistant, results = s.messages
    assert "a\ufffdb" == user.text
    assert '{"city":"\ufffd"}' == assistant.tool_calls[0].arguments
    assert {"k\ufffd": "v"} == dict(assistant.provider_state)
    assert ("x\ufffd", "m\ufffd") == (assistant.text, assistant.model)
    assert "r\ufffd" == results.results[0].content
    assert results.results[0].arguments == assistant.tool_calls[0].arguments
    assert s == tw.Session.from_json(text)


def test_from_json_repairs_escaped_lone_surrogates() -> None:
    data = _full_session().to_dict()
    data["messages"][1]["text"] = "\ud83d"  # half an emoji, as a JSON escape would give it
    s = tw.Session.from_dict(data)
    assert "\ufffd" == s.messages[1].text
    s.to_json().encode("utf-8")


def test_extend_keeps_sendable_messages_as_they_are() -> None:
    msgs = [
        tw.UserMessage("héllo ✓"),
        tw.AssistantMessage("", (CALL,), {"anthropic": {"thinking": "x"}}, "m1", tw.Usage(1, 2)),
        tw.ToolResultsMessage((RESULT,)),
    ]
    s = tw.Session().extend(msgs)
    assert all(a is b for a, b in zip(s.messages, msgs, strict=True))


# Reproducers: Session(id=5) was saved and then refused by from_json; metadata holding a
# set made to_json raise TypeError; a list of pairs raised a bare TypeError.
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"id": 5}, "a session id must be a string, got int"),
        ({"metadata": [("a", 1)]}, "session metadata must be a mapping, got list"),
        (
            {"metadata": {"a": {1}}},
            "session metadata must be JSON data: Object of type set is not JSON serializable",
        ),
        (
            {"metadata": {"a": float("nan")}},
            "session metadata must be JSON data: Out of range float values are not JSON compliant",
        ),
    ],
)
def test_a_session_takes_only_what_it_can_save(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session(**kwargs)
    assert str(info.value).startswith(error)


def test_from_json_not_json() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session.from_json("{nope")
    assert str(info.value).startswith("session JSON is not valid JSON: ")


def test_from_json_too_deep_is_a_transcript_error() -> None:
    # Reproducer: a bare RecursionError escaped from json.loads.
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session.from_json("[" * 100_000 + "]" * 100_000)
    assert "session JSON nests arrays or objects too deeply to read" == str(info.value)


def test_from_json_of_something_that_is_not_text() -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session.from_json(None)  # type: ignore[arg-type]
    assert "session JSON must be text or bytes, got NoneType" == str(info.value)


def _dump(**changes: Any) -> dict[str, Any]:
    data = _full_session().to_dict()
    data.update(changes)
    return data


def _message(i: int, **changes: Any) -> dict[str, Any]:
    data = _full_session().to_dict()
    data["messages"][i].update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a session must be an object, got list"),
        (_dump(format="v0"), "unknown session format 'v0'; expected 'toolwire.session/1'"),
        (_dump(id=""), "session.id must be a non-empty string"),
        (_dump(metadata=[]), "session.metadata must be an object, got list"),
        (_dump(messages={}), "session.messages must be a list, got dict"),
        (_dump(messages=[1]), "messages[0] must be an object, got int"),
        (
            _message(0, role="robot"),
            "messages[0].role must be one of 'system', 'user', 'assistant', 'tool'; got 'robot'",
        ),
        (_message(1, text=None), "messages[1].text must be a string, got NoneType"),
        (_message(2, tool_calls={}), "messages[2].tool_calls must be a list, got dict"),
        (_message(2, tool_calls=[3]), "messages[2].tool_calls[0] must be an object, got int"),
        (
            _message(2, tool_calls=[{"id": "c1", "name": "n"}]),
            "messages[2].tool_calls[0].arguments must be a string, "
            "got nothing (the key is missing)",
        ),
        (_message(2, provider_state=[]), "messages[2].provider_state must be an object, got list"),
        (_message(2, usage=[1]), "messages[2].usage must be an object, got list"),
        (
            _message(2, usage={"input_tokens": "x"}),
            "messages[2].usage.input_tokens must be an integer, got str",
        ),
        (_message(2, model=3), "messages[2].model must be a string, got int"),
        (_message(3, results={}), "messages[3].results must be a list, got dict"),
        (_message(3, results=["x"]), "messages[3].results[0] must be an object, got str"),
        (
            _message(3, results=[{**_RESULT_DICT, "is_error": "no"}]),
            "messages[3].results[0].is_error must be a boolean, got str",
        ),
        (
            _message(3, results=[{"call_id": "c1", "tool_name": "get_weather"}]),
            "messages[3].results[0].arguments must be a string, got nothing (the key is missing)",
        ),
    ],
)
def test_from_dict_names_the_bad_path(data: Any, message: str) -> None:
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session.from_dict(data)
    assert message == str(info.value)


def test_from_dict_rejects_an_out_of_order_transcript() -> None:
    data = _full_session().to_dict()
    del data["messages"][3]
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        tw.Session.from_dict(data)
    assert str(info.value).startswith("session s1: message 3 (assistant) follows an assistant")


_text = st.text(max_size=20)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _sessions(draw: st.DrawFn) -> tw.Session:
    s = tw.Session(draw(st.none() | _text), id=draw(st.text(min_size=1, max_size=10)))
    s.metadata.update(draw(st.dictionaries(_text, _json_value, max_size=3)))
    for turn in range(draw(st.integers(0, 4))):
        s.add_user(draw(_text))
        n = draw(st.integers(0, 3))
        calls = tuple(tw.ToolCall(f"c{turn}_{i}", draw(_text), draw(_text)) for i in range(n))
        usage = draw(st.none() | st.builds(tw.Usage, st.integers(0, 99), st.integers(0, 99)))
        state = draw(st.dictionaries(_text, _json_value, max_size=2))
        msgs: list[tw.Message] = [
            tw.AssistantMessage(draw(_text), calls, state, draw(st.none() | _text), usage)
        ]
        if calls:
            msgs.append(
                tw.ToolResultsMessage(
                    tuple(c.result(draw(_text), is_error=draw(st.booleans())) for c in calls)
                )
            )
        s.extend(msgs)
    return s


@given(_sessions())
def test_any_valid_session_round_trips(session: tw.Session) -> None:
    assert session == tw.Session.from_json(session.to_json())


def test_lone_surrogates_in_metadata_are_repaired_on_load() -> None:
    # #25.18: lone surrogates in metadata keys or values loaded without repair, and
    # to_json() could then not be written as UTF-8.
    text = '{"format": "%s", "id": "s1", "metadata": {"k\\ud800": "v\\udfff"}, "messages": []}'
    session = tw.Session.from_json(text % tw.Session().to_dict()["format"])
    assert {"k\ufffd": "v\ufffd"} == session.metadata
    session.to_json().encode("utf-8")  # writable
    made = tw.Session(metadata={"a": ["\ud83d\ude00", "\ud83d"]})
    assert {"a": ["\U0001f600", "\ufffd"]} == made.metadata
