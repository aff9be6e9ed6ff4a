"""Decoding replies into rounds, recoverable issues, commit validation, the hot path."""

from __future__ import annotations

import decimal
import enum
import inspect
import json
import typing
from typing import Any

import pydantic
import pytest
from _helpers import needs_tools, reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

import toolwire as tw
import toolwire._tools

OK = '{"city":"Oslo"}'


@pytest.fixture
def turn(toolset: tw.Toolset) -> tw.adapters.ResolvedTurn:
    return tw.resolve_turn(toolset, availability=tw.Availability.only("get_weather"))


# -- decoding -------------------------------------------------------------------------------


def test_reply_without_calls_is_finished_and_committed(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    out = tw.adapters.decode_reply(session, turn, reply(text="Hello."))
    assert (tw.Finished, "Hello.", "Hello.") == (type(out), out.text, session.messages[-1].text)  # type: ignore[union-attr]


def test_valid_call_is_typed(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK))
    assert ("Oslo", 1) == (rnd.expect_one().input.city, rnd.expect_one().input.days)


def test_nothing_is_written_before_commit(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    needs_tools(session, turn, ("c1", "get_weather", OK))
    assert 1 == len(session)


def test_tool_not_offered_is_not_available(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "search_docs", '{"query":"x"}'))
    assert (
        [tw.NotAvailable],
        "tool `search_docs` is not available in this round",
    ) == ([type(i) for i in rnd.issues], rnd.issues[0].reason)


def test_unknown_tool(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    rnd = needs_tools(session, turn, ("c1", "nope", "{}"))
    assert (
        [tw.UnknownTool],
        "tool `nope` is not recognized in this toolset or round",
    ) == ([type(i) for i in rnd.issues], rnd.issues[0].reason)


def test_all_availability_accepts_off_tools(session: tw.Session, toolset: tw.Toolset) -> None:
    turn = tw.resolve_turn(toolset, availability=tw.Availability.all())
    rnd = needs_tools(session, turn, ("c1", "search_docs", '{"query":"x"}'))
    assert (1, ()) == (len(rnd.calls), rnd.issues)


def test_argument_text_that_is_not_json(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    issue = needs_tools(session, turn, ("c1", "get_weather", "{city")).issues[0]
    assert (tw.InvalidArguments, "json_invalid") == (type(issue), issue.errors[0]["type"])  # type: ignore[union-attr]


def test_json_that_is_not_an_object(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    issue = needs_tools(session, turn, ("c1", "get_weather", "[1]")).issues[0]
    assert "model_type" == issue.errors[0]["type"]  # type: ignore[union-attr]


def test_wrong_types_keep_pydantic_detail(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    issue = needs_tools(session, turn, ("c1", "get_weather", '{"city":"x","days":"many"}')).issues[
        0
    ]
    assert [("days",), "int_parsing"] == [issue.errors[0]["loc"], issue.errors[0]["type"]]  # type: ignore[union-attr]


def test_invalid_arguments_rejection_carries_the_detail(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    issue = needs_tools(session, turn, ("c1", "get_weather", "{}")).issues[0]
    assert (
        "tool `get_weather` arguments did not match the expected schema:\n"
        "- city: Field required" == tw.adapters.rejection_reason(issue.rejection())
    )


def test_issues_set_the_continue_suggestion(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "nope", "{}"))
    assert tw.adapters.ContinueSuggestion.RECOVERABLE_TOOL_CALL_ISSUE == rnd.continue_suggestion


def test_valid_calls_suggest_running_tools(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK))
    assert tw.adapters.ContinueSuggestion.RUN_TOOLS == rnd.continue_suggestion


def test_duplicate_call_ids_are_dropped(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK), ("c1", "get_weather", "{}"))
    assert ([OK], ()) == ([c.arguments for c in rnd.tool_calls], rnd.issues)


def test_issues_are_kept_in_the_assistant_turn(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "nope", "{}"), ("c2", "get_weather", OK))
    assert (["c1", "c2"], ["c2"]) == ([c.id for c in rnd.tool_calls], [c.id for c in rnd.calls])


_texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "null", "[]", "{}", '{"city": 1}', '{"city":"x","days":1e400}', "[" * 5000]
    ),
)


@given(
    st.lists(
        st.tuples(st.sampled_from(["get_weather", "search_docs", "zz", ""]), _texts), max_size=5
    )
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_argument_text_never_raises(
    toolset: tw.Toolset, calls: list[tuple[str, str]]
) -> None:
    turn = tw.resolve_turn(toolset, availability=tw.Availability.only("get_weather"))
    raw = [(f"c{i}", name, args) for i, (name, args) in enumerate(calls)]
    out = tw.adapters.decode_reply(tw.Session(), turn, reply(*raw), enforce_requirement=False)
    decoded = 0 if isinstance(out, tw.Finished) else len(out.round.calls) + len(out.round.issues)
    assert len(calls) == decoded


def test_raw_tool_random_text_becomes_an_issue(session: tw.Session) -> None:
    ts = tw.Toolset("t", [tw.raw_tool("r", "d", {"properties": {"x": {"type": "array"}}})])
    rnd = needs_tools(session, tw.resolve_turn(ts), ("c1", "r", '{"x":' + "[" * 5000))
    assert [tw.InvalidArguments] == [type(i) for i in rnd.issues]


# -- requirement checked after decoding ---------------------------------------------------


def test_at_least_one_ignored_raises(session: tw.Session, toolset: tw.Toolset) -> None:
    turn = tw.resolve_turn(toolset, requirement=tw.Requirement.at_least_one())
    with pytest.raises(tw.exceptions.RequirementNotMetError) as info:
        tw.adapters.decode_reply(session, turn, reply(text="no"))
    assert "the turn requires at least one tool call, but the model answered without tools" == str(
        info.value
    )


def test_specific_ignored_raises_and_writes_nothing(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    turn = tw.resolve_turn(toolset, requirement=tw.Requirement.specific("get_weather"))
    with pytest.raises(tw.exceptions.RequirementNotMetError) as info:
        tw.adapters.decode_reply(session, turn, reply(("c1", "search_docs", '{"query":"x"}')))
    assert (
        "the turn requires a call to `get_weather`, but the model called `search_docs`",
        1,
    ) == (str(info.value), len(session))


# -- expect / discard ------------------------------------------------------------------------


def test_expect_one_counts_valid_calls_only(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK), ("c2", "nope", "{}"))
    assert "c1" == rnd.expect_one().id


def test_expect_one_with_two_calls(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK), ("c2", "get_weather", OK))
    with pytest.raises(tw.exceptions.ExpectationError) as info:
        rnd.expect_one()
    assert "expected exactly one tool call, got 2" == str(info.value)


def test_expect_at_most_one_with_none(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    assert None is needs_tools(session, turn, ("c1", "nope", "{}")).expect_at_most_one()


def test_expect_at_most_one_with_two(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK), ("c2", "get_weather", OK))
    with pytest.raises(tw.exceptions.ExpectationError) as info:
        rnd.expect_at_most_one()
    assert "expected at most one tool call, got 2" == str(info.value)


def test_discard_writes_nothing_and_closes_the_round(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "get_weather", OK))
    rnd.discard()
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        rnd.commit([])
    assert ("this tool round was already discarded", 1) == (str(info.value), len(session))


# -- rejections ----------------------------------------------------------------------------


def test_rejection_reason_reads_the_prefix_back() -> None:
    assert "no" == tw.adapters.rejection_reason(tw.adapters.rejection_content("no"))


def test_rejection_prefix_is_fixed() -> None:
    assert "__toolwire_rejected__: no" == tw.adapters.rejection_content("no")


def test_rejection_reason_of_ordinary_content_is_none() -> None:
    assert None is tw.adapters.rejection_reason("sunny")


# -- commit -----------------------------------------------------------------------------------


@pytest.fixture
def two(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> tw.ToolRound:
    return needs_tools(session, turn, ("c1", "get_weather", OK), ("c2", "get_weather", OK))


def test_commit_stores_results_in_assistant_order(session: tw.Session, two: tw.ToolRound) -> None:
    a, b = two.calls
    two.commit([b.complete("B"), a.complete("A")])
    last = session.messages[-1]
    assert ["A", "B"] == [r.content for r in last.results]  # type: ignore[union-attr]


def test_commit_appends_the_assistant_turn_and_results(
    session: tw.Session, two: tw.ToolRound
) -> None:
    two.commit([c.complete("x") for c in two.calls])
    assert ["system", "assistant", "tool"] == [m.role for m in session]


def test_commit_auto_rejects_issues(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> None:
    rnd = needs_tools(session, turn, ("c1", "nope", "{}"))
    rnd.commit([])
    result = session.messages[-1].results[0]  # type: ignore[union-attr]
    # The standard reason, then what the model can call instead.
    assert (
        True,
        "tool `nope` is not recognized in this toolset or round. "
        "The tools available this round: `get_weather`.",
    ) == (result.is_error, tw.adapters.rejection_reason(result))


def test_an_unknown_tool_rejection_suggests_the_closest_name_and_lists_the_offered() -> None:
    names = [*(f"tool_{i:02d}" for i in range(44)), "get_weather"]
    tools = [tw.tool_fn(lambda: "x", name=n, description="d") for n in names]
    turn = tw.resolve_turn(tw.Toolset("many", tools))
    session = tw.Session().add_user("go")
    rnd = needs_tools(session, turn, ("c1", "get_wether", "{}"))
    (issue,) = rnd.issues
    text = tw.adapters.rejection_reason(issue.rejection()) or ""
    assert "Did you mean `get_weather`?" in text
    assert "`tool_39` and 5 more." in text
    assert "`tool_40`" not in text
    empty = tw.resolve_turn(tw.Toolset("none", []))
    rnd = needs_tools(tw.Session().add_user("go"), empty, ("c1", "x", "{}"))
    assert "No tools are available this round." in (
        tw.adapters.rejection_reason(rnd.issues[0].rejection()) or ""
    )


def test_commit_keeps_the_callers_answer_to_an_issue(
    session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    rnd = needs_tools(session, turn, ("c1", "nope", "{}"))
    rnd.commit([rnd.tool_calls[0].result("handled by me")])
    assert "handled by me" == session.messages[-1].results[0].content  # type: ignore[union-attr]


def test_commit_missing_result(two: tw.ToolRound) -> None:
    with pytest.raises(tw.exceptions.MissingToolResultError) as info:
        two.commit([two.calls[0].complete("x")])
    assert ("c2", "assistant turn references missing tool result `c2`") == (
        info.value.call_id,
        str(info.value),
    )


def test_commit_duplicate_result(two: tw.ToolRound) -> None:
    a = two.calls[0].complete("x")
    with pytest.raises(tw.exceptions.DuplicateToolResultError) as info:
        two.commit([a, a, two.calls[1].complete("y")])
    assert "assistant turn received duplicate tool result `c1`" == str(info.value)


def test_commit_extra_result(two: tw.ToolRound) -> None:
    extra = tw.ToolResult("c9", "get_weather", OK, "x")
    with pytest.raises(tw.exceptions.ExtraToolResultError) as info:
        two.commit([*(c.complete("x") for c in two.calls), extra])
    assert "assistant turn received extra tool result `c9`" == str(info.value)


def test_commit_wrong_tool_name(two: tw.ToolRound) -> None:
    wrong = tw.ToolResult("c1", "search_docs", OK, "x")
    with pytest.raises(tw.exceptions.MismatchedToolCallNameError) as info:
        two.commit([wrong, two.calls[1].complete("y")])
    assert (
        "assistant turn tool call `c1` expected tool name `get_weather`, got `search_docs`"
        == str(info.value)
    )


def test_commit_different_argument_text(two: tw.ToolRound) -> None:
    wrong = tw.ToolResult("c1", "get_weather", '{"city": "Oslo"}', "x")
    with pytest.raises(tw.exceptions.MismatchedToolCallArgumentsError) as info:
        two.commit([wrong, two.calls[1].complete("y")])
    assert "assistant turn tool call `c1` received mismatched arguments" == str(info.value)


def test_commit_non_result_is_a_type_error(two: tw.ToolRound) -> None:
    with pytest.raises(TypeError) as info:
        two.commit(["x"])  # type: ignore[list-item]
    assert "commit takes ToolResult objects, got str" == str(info.value)


# Reproducer: a result with bytes content was committed (the session then failed to save:
# bytes are not JSON), and int or None content raised a bare AttributeError.
@pytest.mark.parametrize(
    ("content", "is_error", "got"),
    [
        (b"x", False, "bytes content and bool is_error"),
        (5, False, "int content and bool is_error"),
        (None, False, "NoneType content and bool is_error"),
        ("x", "yes", "str content and str is_error"),
        ("x", 1, "str content and int is_error"),
    ],
)
@pytest.mark.parametrize("in_order", [True, False])
def test_commit_refuses_results_the_session_could_not_save(
    session: tw.Session, two: tw.ToolRound, content: Any, is_error: Any, got: str, in_order: bool
) -> None:
    good = [c.complete("fine") for c in two.calls]
    bad = good[1]._replace(content=content, is_error=is_error)
    results = [good[0], bad] if in_order else [bad, good[0]]
    with pytest.raises(tw.exceptions.UsageError) as info:
        two.commit(results)
    assert (
        f"the result for tool call `c2` must carry text content and a bool is_error, got {got} "
        "(call.complete(output) serialises an output for you)"
    ) == str(info.value)
    assert 1 == len(session)  # nothing written; the round can still be committed
    two.commit(good)
    assert session == tw.Session.from_json(session.to_json())


def test_failed_commit_writes_nothing_and_can_be_retried(
    session: tw.Session, two: tw.ToolRound
) -> None:
    with pytest.raises(tw.CommitError):
        two.commit([])
    two.commit([c.complete("x") for c in two.calls])
    assert 3 == len(session)


def test_second_commit_is_refused(two: tw.ToolRound) -> None:
    two.commit([c.complete("x") for c in two.calls])
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        two.commit([c.complete("x") for c in two.calls])
    assert "this tool round was already committed" == str(info.value)


def test_commit_after_the_session_changed_is_refused(
    session: tw.Session, two: tw.ToolRound
) -> None:
    session.add_user("meanwhile")
    with pytest.raises(tw.exceptions.TranscriptError) as info:
        two.commit([c.complete("x") for c in two.calls])
    assert "the session changed after this round was decoded; decode a new turn" == str(info.value)


_IDS = ["c0", "c1", "c2", "c3"]


@given(
    n=st.integers(1, 4),
    picks=st.lists(st.sampled_from([*_IDS, "zz"]), max_size=7),
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_commit_succeeds_iff_the_results_match_exactly(
    toolset: tw.Toolset, n: int, picks: list[str]
) -> None:
    session = tw.Session("sys")
    turn = tw.resolve_turn(toolset)
    rnd = needs_tools(session, turn, *((i, "get_weather", OK) for i in _IDS[:n]))
    results = [tw.ToolResult(p, "get_weather", OK, p) for p in picks]
    exact = sorted(picks) == _IDS[:n]
    try:
        rnd.commit(results)
    except tw.CommitError:
        assert (False, 1) == (exact, len(session))
    else:
        stored = [r.call_id for r in session.messages[-1].results]  # type: ignore[union-attr]
        assert (True, _IDS[:n]) == (exact, stored)


# -- the hot path --------------------------------------------------------------------------


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("called on the hot path")


def test_decoding_does_not_introspect_or_rebuild_validators(
    monkeypatch: pytest.MonkeyPatch, session: tw.Session, toolset: tw.Toolset
) -> None:
    turn = tw.resolve_turn(toolset)
    weather = toolset.get("get_weather")
    assert weather is not None
    validator = weather.input_type.__pydantic_validator__
    monkeypatch.setattr(inspect, "signature", _raise)
    monkeypatch.setattr(typing, "get_type_hints", _raise)
    monkeypatch.setattr(toolwire._tools, "get_type_hints", _raise)
    monkeypatch.setattr(toolwire._tools, "create_model", _raise)
    monkeypatch.setattr(toolwire._tools, "TypeAdapter", _raise)
    for i in range(3):
        rnd = needs_tools(
            session, turn, ("c1", "get_weather", OK), ("c2", "search_docs", '{"query":"q"}')
        )
        rnd.commit([c.complete("x") for c in rnd.calls])
        session.add_user(f"again {i}")
    assert validator is weather.input_type.__pydantic_validator__


def test_adapter_validator_is_built_once() -> None:
    tool: tw.Tool[Any, Any] = tw.Tool(name="nums", description="", input_type=list[int])
    adapter = tool._adapter
    tool.validate_json("[1]")
    tool.validate_json("[2]")
    assert adapter is tool._adapter


def test_raw_tool_validator_is_built_once() -> None:
    tool = tw.raw_tool("r", "d", {"type": "object", "properties": {"a": {"type": "string"}}})
    tool.validate_json("{}")
    first = tool._raw
    with pytest.raises(ValueError, match="is not of type 'string'"):
        tool.validate_json('{"a": 1}')  # not proven valid: the full validator says why
    full = first._full if first is not None else None
    tool.validate_json('{"a": "x"}')
    assert (first, full) == (tool._raw, tool._raw._full if tool._raw else None)
    assert full is not None


def test_mismatch_names_what_keeps_a_result_from_answering_its_call() -> None:
    from toolwire._calls import mismatch

    call = tw.ToolCall("c1", "add", '{"a": 1}')
    assert mismatch(call, call.result("3")) is None
    assert call.result("3").answers(call)
    assert "id" == mismatch(call, tw.ToolResult("c2", "add", '{"a": 1}', "3"))
    assert "name" == mismatch(call, tw.ToolResult("c1", "sub", '{"a": 1}', "3"))
    # Argument text is compared as text: the same JSON spelled differently does not answer.
    assert "arguments" == mismatch(call, tw.ToolResult("c1", "add", '{"a":1}', "3"))
    assert not tw.ToolResult("c1", "add", '{"a":1}', "3").answers(call)


@tw.tool_input
class Measure(BaseModel):
    """Record a measurement (an application's own model: toolwire does not set its config)."""

    value: float


@tw.tool_fn
def record(value: float) -> str:
    """Record a value."""
    return "ok"


NON_FINITE = ['{"value": 1e400}', '{"value": NaN}', '{"value": -Infinity}', '{"value": 1E+999}']


@pytest.mark.parametrize("arguments", NON_FINITE)
@pytest.mark.parametrize("tool", [record, Measure, "raw"])
def test_non_finite_numbers_are_invalid_arguments(arguments: str, tool: Any) -> None:
    # Attack (#11.13): 1e400 and NaN decoded to inf/nan and were accepted; every later
    # request to Anthropic or Gemini then failed ("no NaN or infinity").
    if tool == "raw":
        tool = tw.raw_tool(
            "raw", "Raw.", {"type": "object", "properties": {"value": {"type": "number"}}}
        )
    t = tw.tool_of(tool)
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [t]))
    round_ = needs_tools(session, turn, ("c1", t.name, arguments))
    assert round_.calls == ()
    assert [type(i).__name__ for i in round_.issues] == ["InvalidArguments"]
    round_.commit([])
    tw.Session.from_json(session.to_json())  # the session still saves and loads


def test_finite_numbers_in_strings_are_fine() -> None:
    t = tw.tool_of(Measure)
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [t]))
    round_ = needs_tools(session, turn, ("c1", t.name, '{"value": 1e300}'))
    assert [c.input.value for c in round_.calls] == [1e300]


def test_arguments_object_never_hands_a_provider_a_non_finite_number() -> None:
    ao = tw.adapters.arguments_object
    assert ao('{"a": 1.5, "b": [1, 2]}') == {"a": 1.5, "b": [1, 2]}
    for bad in [*NON_FINITE, "[1]", "not json", "[" * 100_000 + "]" * 100_000]:
        assert ao(bad) == {}


def _sends(session: tw.Session) -> None:
    """The session saves as UTF-8, loads back, and every text encodes."""
    text = session.to_json()
    text.encode("utf-8")
    tw.Session.from_json(text)


def test_lone_surrogates_never_get_into_the_session() -> None:
    # Attack (#11.12): \ud800 escapes in a reply, an emoji's surrogate pair split across
    # two stream events, a tool output decoded with surrogateescape: committed as they
    # were, after which every request raised a bare ValueError and the session could not
    # be saved as UTF-8.
    @tw.tool_fn
    def annotate(value: float, note: str) -> str:
        """Annotate a value."""
        return note

    t = tw.tool_of(annotate)
    session = tw.Session().add_user("hi \udc80 there")  # user text too
    turn = tw.resolve_turn(tw.Toolset("t", [t]))
    pair = "\ud83d" + "\ude00"  # what two JSON-decoded stream fragments concatenate to
    reply = tw.adapters.AssistantReply(
        "lone \ud800 here",
        (tw.ToolCall("c1", "annotate", '{"value": 1.5, "note": "' + pair + '"}'),),
        "tool_calls",
    )
    out = tw.adapters.decode_reply(session, turn, reply, enforce_requirement=False)
    assert isinstance(out, tw.NeedsTools)
    round_ = out.round
    assert round_.message.text == "lone \ufffd here"
    assert "\U0001f600" in round_.message.tool_calls[0].arguments  # the pair is joined
    output = b"caf\xe9".decode("utf-8", "surrogateescape")  # a tool's bytes, badly decoded
    assert [c.input.note for c in round_.calls] == ["\U0001f600"]
    round_.commit([c.complete(output) for c in round_.calls])
    last = session.last
    assert isinstance(last, tw.ToolResultsMessage)
    assert last.results[0].content == "caf\ufffd"
    _sends(session)


def test_call_ids_names_and_provider_state_are_made_sendable_too() -> None:
    # Found by the decoder fuzz job: a lone surrogate in a tool call's id, or in a thinking
    # block and a NaN in the usage kept in provider_state, made every later request fail.
    @tw.tool_fn
    def ping() -> str:
        """Ping."""
        return "pong"

    session = tw.Session().add_user("hi")
    turn = tw.resolve_turn(tw.Toolset("t", [ping]), plugins=False)
    reply = tw.adapters.AssistantReply(
        "",
        (tw.ToolCall("c1\ud800", "ping", "{}"), tw.ToolCall("c2", "pi\udfffng", "{}")),
        "tool_calls",
        provider_state={"x": {"blocks": [{"thinking": "hm\ud800"}], "n": float("nan")}},
    )
    out = tw.adapters.decode_reply(session, turn, reply, enforce_requirement=False)
    assert isinstance(out, tw.NeedsTools)
    message = out.round.message
    assert [("c1\ufffd", "ping"), ("c2", "pi\ufffdng")] == [
        (c.id, c.name) for c in message.tool_calls
    ]
    assert {"x": {"blocks": [{"thinking": "hm\ufffd"}], "n": None}} == message.provider_state
    out.round.commit([c.complete("pong") for c in out.round.calls])
    _sends(session)
    json.dumps(session.to_dict(), allow_nan=False, ensure_ascii=False).encode("utf-8")


def test_sendable_values_are_returned_as_they_are() -> None:
    from toolwire._calls import sendable_value

    state = {"items": [{"type": "reasoning", "summary": ["caf\u00e9"]}], "n": 1.5}
    assert sendable_value(state) is state


def test_valid_text_is_not_touched() -> None:
    from toolwire._calls import sendable_text

    for text in ("plain", "caf\u00e9 \U0001f600", ""):
        assert sendable_text(text) is text


class Point(BaseModel):  # an application's model: its own config decides its floats
    x: float


@tw.tool_fn
def plot(point: Point) -> str:
    """Plot a point."""
    return "ok"


def test_non_finite_numbers_inside_a_nested_model_are_invalid_too() -> None:
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [plot]))
    round_ = needs_tools(session, turn, ("c1", "plot", '{"point": {"x": 1e400}}'))
    assert round_.calls == ()
    assert [type(i).__name__ for i in round_.issues] == ["InvalidArguments"]
    ok = needs_tools(tw.Session().add_user("go"), turn, ("c1", "plot", '{"point": {"x": 2}}'))
    assert [c.input.point.x for c in ok.calls] == [2.0]


class Tight(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)
    x: float


class Loose(BaseModel):
    x: typing.Annotated[float, Field(ge=0)] = 0.0


class Tree(BaseModel):  # recursive, and nothing in it can hold a float
    name: str
    children: list[Tree] = []


class Bag(BaseModel):
    value: Any = None


class Colour(enum.Enum):
    red = "red"


class Ratio(enum.Enum):
    half = 0.5


# Each: an input type that surely refuses NaN and 1e400 (no scan), or one that may not.
SAFE_INPUTS = [
    str,
    int,
    typing.Optional[int],  # noqa: UP045 (typing.Union, not types.UnionType)
    list[str],
    dict[str, int],
    tuple[int, ...],
    typing.Literal["a", "b"],
    Colour,
    Tree,
    Tight,
    list[Tight],
    typing.Annotated[int, Field(ge=0)],
]
OPEN_INPUTS = [
    float,
    float | None,
    list[float],
    dict[str, float],
    tuple[int, float],
    Loose,
    Bag,
    Ratio,
    Any,
    list,
    dict,
    decimal.Decimal,
    typing.Literal[0.5],
    typing.Annotated[float, Field(allow_inf_nan=True)],
]


@pytest.mark.parametrize("tp", SAFE_INPUTS)
def test_inputs_that_cannot_hold_a_non_finite_number_skip_the_scan(tp: Any) -> None:
    from toolwire._tools import _may_take_non_finite

    assert not _may_take_non_finite(tp, checked=False)


@pytest.mark.parametrize("tp", OPEN_INPUTS)
def test_inputs_that_may_hold_a_non_finite_number_are_scanned(tp: Any) -> None:
    from toolwire._tools import _may_take_non_finite

    assert _may_take_non_finite(tp, checked=False)


def test_toolwires_own_config_covers_the_float_fields_it_declares() -> None:
    from toolwire._tools import _may_take_non_finite

    assert not _may_take_non_finite(float, checked=True)
    assert not _may_take_non_finite(list[float], checked=True)
    # Field metadata that is not a plain constraint may loosen it.
    loose = typing.Annotated[float, Field(allow_inf_nan=True)]
    assert _may_take_non_finite(loose, checked=True)
    assert not _may_take_non_finite(typing.Annotated[float, Field(ge=0)], checked=True)


@pytest.mark.parametrize(
    ("annotation", "arguments"),
    [
        (Loose, '{"x": {"x": 1e400}}'),
        (Bag, '{"x": {"value": NaN}}'),
        (Any, '{"x": NaN}'),
        (list, '{"x": [1, Infinity]}'),
        (dict[str, Any], '{"x": {"a": -Infinity}}'),
        (Loose | None, '{"x": {"x": 1E+999}}'),
    ],
)
def test_a_non_finite_number_wherever_it_may_land_is_invalid(
    annotation: Any, arguments: str
) -> None:
    def take(x: Any) -> str:
        """Take x."""
        return "ok"

    take.__annotations__ = {"x": annotation, "return": str}
    t = tw.tool_fn(take)
    turn = tw.resolve_turn(tw.Toolset("t", [t]))
    round_ = needs_tools(tw.Session().add_user("go"), turn, ("c1", "take", arguments))
    assert round_.calls == ()
    assert [type(i).__name__ for i in round_.issues] == ["InvalidArguments"]


# -- run() on an async tool (#12) ------------------------------------------------------------


@tw.tool_fn
async def slow_echo(text: str) -> str:
    """Echo, asynchronously."""
    return f"echo {text}"


def _async_round() -> tw.ToolRound:
    session = tw.Session().add_user("hi")
    turn = tw.resolve_turn(tw.Toolset("t", [slow_echo]), plugins=False)
    reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", "slow_echo", '{"text": "a"}'),))
    out = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(out, tw.NeedsTools)
    return out.round


def test_run_on_an_async_tool_outside_a_loop_runs_it() -> None:
    # The reproducer: call.complete(call.run()) failed with "Unable to serialize unknown
    # type: coroutine" and a never-awaited warning (warnings are errors in this suite).
    round_ = _async_round()
    round_.commit([c.complete(c.run()) for c in round_.calls])
    assert "echo a" == round_.session.messages[-1].results[0].content  # type: ignore[union-attr]


async def test_run_on_an_async_tool_inside_a_loop_names_arun() -> None:
    round_ = _async_round()
    with pytest.raises(tw.UsageError, match=r"use `await call\.arun\(\)`"):
        round_.calls[0].run()
    assert "echo a" == await round_.calls[0].arun()


@pytest.mark.parametrize(
    "bad",
    [
        ("c1", "get_weather", '{"city": "Oslo"}'),  # a plain tuple, not a ToolCall
        tw.ToolCall("c1", "get_weather", {"city": "Oslo"}),  # type: ignore[arg-type]
        {"id": "c1", "name": "get_weather", "arguments": "{}"},
        None,
    ],
)
def test_a_reply_whose_calls_are_not_tool_call_records_is_refused(
    bad: Any, toolset: tw.Toolset
) -> None:
    # An adapter (a plugin's, maybe) built the reply: its mistake is named, nothing written.
    session = tw.Session().add_user("hi")
    reply = tw.adapters.AssistantReply("", (bad,), "tool_calls")
    with pytest.raises(tw.UsageError, match="ToolCall"):
        tw.adapters.decode_reply(session, tw.resolve_turn(toolset), reply)
    assert len(session) == 1


# Reproducers: an adapter's reply with bytes text, a set in its provider state, an int
# model or a str usage was decoded and committed, and the session could not be saved (or
# loaded again); other wrong fields raised a bare AttributeError or TypeError.
@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"text": b"hi"}, "text must be a string, got bytes"),
        ({"text": 5}, "text must be a string, got int"),
        ({"tool_calls": None}, "tool_calls must be a tuple of ToolCall records, got NoneType"),
        ({"provider_state": [1]}, "provider_state must be a mapping, got list"),
        (
            {"provider_state": {"x": {1, 2}}},
            "provider_state must be JSON data: Object of type set is not JSON serializable",
        ),
        ({"model": 5}, "model must be a string or None, got int"),
        ({"usage": "x"}, "usage must be a Usage or None, got str"),
        (
            {"text": 5, "model": 5},
            "text must be a string, got int; model must be a string or None, got int",
        ),
    ],
)
@pytest.mark.parametrize("with_calls", [True, False])
def test_a_malformed_reply_is_refused_before_anything_is_written(
    fields: dict[str, Any], error: str, with_calls: bool, toolset: tw.Toolset
) -> None:
    session = tw.Session().add_user("hi")
    calls = (tw.ToolCall("c1", "get_weather", OK),) if with_calls else ()
    reply = tw.adapters.AssistantReply(**{"tool_calls": calls, **fields})
    with pytest.raises(tw.UsageError) as info:
        tw.adapters.decode_reply(session, tw.resolve_turn(toolset), reply)
    assert f"a malformed provider reply (an adapter's bug): {error}" == str(info.value)
    assert len(session) == 1


def test_a_reply_with_sendable_fields_of_subclasses_is_taken(toolset: tw.Toolset) -> None:
    class Text(str):
        pass

    session = tw.Session().add_user("hi")
    reply = tw.adapters.AssistantReply(
        Text("ok"), [tw.ToolCall("c1", "get_weather", OK)], "tool_calls", model=Text("m\ud800")
    )
    out = tw.adapters.decode_reply(session, tw.resolve_turn(toolset), reply)
    assert isinstance(out, tw.NeedsTools)
    out.round.commit([c.complete("sunny") for c in out.round.calls])
    assert "m\ufffd" == session.messages[1].model  # type: ignore[union-attr]
    assert session == tw.Session.from_json(session.to_json())


def test_decode_reply_takes_an_assistant_reply(toolset: tw.Toolset) -> None:
    with pytest.raises(tw.UsageError, match="decode_reply takes an AssistantReply, got dict"):
        tw.adapters.decode_reply(tw.Session(), tw.resolve_turn(toolset), {"text": "hi"})  # type: ignore[arg-type]


# -- the common case's fast path hands over to the general one ------------------------------

_KINDS: dict[str, Any] = {
    "valid": ("c{i}", "scale", '{"x": 2}'),
    "invalid": ("c{i}", "scale", '{"x": "two"}'),
    "not json": ("c{i}", "scale", "{x"),
    "unknown": ("c{i}", "nope", "{}"),
    "not offered": ("c{i}", "hidden", "{}"),
    "duplicate id": ("c0", "scale", '{"x": 3}'),
    "non-ascii": ("c{i}", "scale", '{"x": 4, "_": "é"}'),
    "lone surrogate id": ("c{i}\ud800", "scale", '{"x": 5}'),
    "surrogate pair": ("c{i}", "scale", '{"x": 6, "_": "\ud83d\ude00"}'),
}


def _record(kind: str, i: int) -> tw.ToolCall:
    cid, name, arguments = _KINDS[kind]
    return tw.ToolCall(cid.format(i=i), name, arguments)


def _plain(
    out: tuple[tuple[tw.ToolCall, ...], tuple[tw.TypedCall[Any], ...], tuple[Any, ...]],
) -> tuple[Any, ...]:
    kept, typed, issues = out
    return (
        kept,
        [(c.call, c.tool.name, c.input.x, c.edited) for c in typed],
        [(type(i).__name__, i.call, getattr(i, "errors", None)) for i in issues],
    )


@given(st.lists(st.sampled_from(sorted(_KINDS)), max_size=5))
@settings(max_examples=300, deadline=None)
def test_decode_calls_is_the_general_path_whatever_call_breaks_the_common_case(
    kinds: list[str],
) -> None:
    # decode_calls runs calls of the common case (ASCII, new id, offered, valid) on a fast
    # path and hands the rest to the general one from the first call that is not: the
    # outcome must be what the general path alone gives, whichever call that is.
    from toolwire._decode import _decode_rest, decode_calls

    @tw.tool_fn
    def scale(x: int) -> int:
        """Scale."""
        return x

    @tw.tool_fn
    def hidden() -> str:
        """Hidden."""
        return ""

    turn = tw.resolve_turn(
        tw.Toolset("t", [scale, hidden]), availability=tw.Availability.only("scale"), plugins=False
    )
    calls = [_record(kind, i) for i, kind in enumerate(kinds)]
    assert _plain(decode_calls(turn, calls)) == _plain(
        _decode_rest(turn, tuple(calls), 0, [], set())
    )


@pytest.mark.parametrize(
    "bad",
    [
        tw.ToolCall("c9", "scale", b'{"x": 1}'),  # type: ignore[arg-type]
        tw.ToolCall(b"c9", "scale", '{"x": 1}'),  # type: ignore[arg-type]
        tw.ToolCall("c9", None, '{"x": 1}'),  # type: ignore[arg-type]
        tw.ToolCall("c9", ["scale"], '{"x": 1}'),  # type: ignore[arg-type]
        ("c9", "scale", '{"x": 1}'),
    ],
)
def test_a_bad_record_after_good_calls_is_named_not_decoded(bad: Any) -> None:
    # Bytes arguments pass bytes.isascii() and pydantic's validate_json: the fast path
    # must not take them (the session would hold bytes it cannot send).
    @tw.tool_fn
    def scale(x: int) -> int:
        """Scale."""
        return x

    session = tw.Session()
    turn = tw.resolve_turn(tw.Toolset("t", [scale]), plugins=False)
    good = tw.ToolCall("c1", "scale", '{"x": 1}')
    with pytest.raises(tw.UsageError, match="ToolCall"):
        tw.adapters.decode_reply(session, turn, reply_of(good, bad))
    assert len(session) == 0


def reply_of(*calls: Any) -> tw.adapters.AssistantReply:
    return tw.adapters.AssistantReply("", tuple(calls), "tool_calls")


_RUNS: list[int] = []


class _Checked(BaseModel):
    x: int

    @pydantic.field_validator("x")
    @classmethod
    def _count(cls, v: int) -> int:
        _RUNS.append(v)
        if v < 0:
            raise ValueError("negative")
        return v


def test_a_validator_runs_once_per_call_whichever_path_answers_it() -> None:
    @tw.tool_fn
    def check(arg: _Checked) -> int:
        """Check."""
        return arg.x

    _RUNS.clear()
    turn = tw.resolve_turn(tw.Toolset("t", [check]), plugins=False)
    calls = [
        tw.ToolCall(f"c{i}", "check", json.dumps({"arg": {"x": v}}))
        for i, v in enumerate([1, -2, 3, -4])
    ]
    out = tw.adapters.decode_reply(tw.Session(), turn, reply_of(*calls))
    assert isinstance(out, tw.NeedsTools)
    assert [c.id for c in out.round.calls] == ["c0", "c2"]
    assert [i.call.id for i in out.round.issues] == ["c1", "c3"]
    assert _RUNS == [1, -2, 3, -4]


def test_the_rounds_messages_made_without_attrs_init_are_the_ones_attrs_makes() -> None:
    # assistant_message / results_message / NeedsTools skip attrs' frozen __init__ on the
    # hot path; each sets every field by name. A field added to a class and not set there
    # would be missing from the object (asdict raises): this test says so first.
    import attrs

    from toolwire._round import NeedsTools, _new, _set_round
    from toolwire._transcript import (
        AssistantMessage,
        ToolResultsMessage,
        assistant_message,
        results_message,
    )

    calls = (tw.ToolCall("c1", "t", "{}"),)
    usage = tw.Usage(input_tokens=3, output_tokens=4)
    fast = assistant_message("hi", calls, {"a": {"b": 1}}, "m", usage)
    slow = AssistantMessage("hi", calls, {"a": {"b": 1}}, "m", usage)
    assert attrs.asdict(fast, recurse=False) == attrs.asdict(slow, recurse=False)
    assert fast == slow
    results = (tw.ToolResult("c1", "t", "{}", "ok"),)
    assert attrs.asdict(results_message(results), recurse=False) == attrs.asdict(
        ToolResultsMessage(results), recurse=False
    )
    rnd = needs_tools(tw.Session(id="s"), tw.resolve_turn(tw.Toolset("x")), ("c1", "t", "{}"))
    needs = _new(NeedsTools)
    _set_round(needs, rnd)
    assert attrs.asdict(needs, recurse=False) == attrs.asdict(NeedsTools(rnd), recurse=False)
