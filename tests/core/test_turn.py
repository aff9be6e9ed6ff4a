"""One turn: availability, requirement, description overrides, constraint errors."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire as tw


def _tool(name: str) -> tw.Tool[Any, Any]:
    return tw.raw_tool(name, f"{name} tool", {})


@pytest.fixture
def ts() -> tw.Toolset:
    return (
        tw.Toolset("t", [_tool("a")])
        .add(_tool("b"), off=True)
        .add(tw.Toolset("g", [_tool("c"), _tool("d")]), off=True)
    )


def _names(turn: tw.adapters.ResolvedTurn) -> list[str]:
    return [t.name for t in turn.tools]


def test_default_availability_leaves_out_off_tools_and_groups(ts: tw.Toolset) -> None:
    assert ["a"] == _names(tw.resolve_turn(ts))


def test_all_availability_is_everything_in_declaration_order(ts: tw.Toolset) -> None:
    assert ["a", "b", "c", "d"] == _names(tw.resolve_turn(ts, availability=tw.Availability.all()))


def test_only_is_exactly_the_list_in_its_order(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, availability=tw.Availability.only("d", "a", "d"))
    assert ["d", "a"] == _names(turn)


def test_default_plus_appends_missing_extras(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, availability=tw.Availability.default_plus("c", "a"))
    assert ["a", "c"] == _names(turn)


def test_only_with_an_unknown_tool_raises_unknown_tool(ts: tw.Toolset) -> None:
    with pytest.raises(tw.UnknownToolError) as info:
        tw.resolve_turn(ts, availability=tw.Availability.only("zz"))
    assert "tool `zz` is not in toolset `t`" == str(info.value)


def test_optional_is_auto(ts: tw.Toolset) -> None:
    assert tw.adapters.ToolChoice("auto") == tw.resolve_turn(ts).tool_choice


def test_at_least_one_is_required(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, requirement=tw.Requirement.at_least_one())
    assert tw.adapters.ToolChoice("required") == turn.tool_choice


def test_specific_is_the_named_tool(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, requirement=tw.Requirement.specific("a"))
    assert (tw.adapters.ToolChoice("specific", "a"), "a") == (turn.tool_choice, turn.required_tool)


def test_specific_by_tool_object(ts: tw.Toolset) -> None:
    tool = ts.get("a")
    assert tool is not None
    turn = tw.resolve_turn(ts, requirement=tw.Requirement.specific(tool))
    assert "a" == turn.required_tool


def test_specific_outside_the_available_set_raises_the_seed_error(ts: tw.Toolset) -> None:
    with pytest.raises(tw.exceptions.InvalidToolConstraintError) as info:
        tw.resolve_turn(ts, requirement=tw.Requirement.specific("b"))
    assert "invalid tool constraints: required tool `b` is not in the available set" == str(
        info.value
    )


def test_specific_unknown_name_raises_the_constraint_error(ts: tw.Toolset) -> None:
    with pytest.raises(tw.exceptions.InvalidToolConstraintError) as info:
        tw.resolve_turn(ts, requirement=tw.Requirement.specific("x"))
    assert "invalid tool constraints: required tool `x` is not in the available set" == str(
        info.value
    )


def test_specific_tool_object_outside_the_toolset_raises_the_constraint_error(
    ts: tw.Toolset,
) -> None:
    with pytest.raises(tw.exceptions.InvalidToolConstraintError) as info:
        tw.resolve_turn(ts, requirement=tw.Requirement.specific(_tool("x")))
    assert "x" == info.value.tool


def test_at_least_one_with_nothing_available_raises_the_seed_error() -> None:
    ts = tw.Toolset("t").add(_tool("a"), off=True)
    with pytest.raises(tw.exceptions.InvalidToolConstraintError) as info:
        tw.resolve_turn(ts, requirement=tw.Requirement.at_least_one())
    assert (
        "invalid tool constraints: required tool `(none available)` is not in the available set"
        == str(info.value)
    )


def test_specific_with_nothing_available_names_the_tool() -> None:
    ts = tw.Toolset("t").add(_tool("a"), off=True)
    with pytest.raises(tw.exceptions.InvalidToolConstraintError) as info:
        tw.resolve_turn(ts, requirement=tw.Requirement.specific("a"))
    assert "a" == info.value.tool


def test_optional_with_nothing_available_sends_no_tools() -> None:
    turn = tw.resolve_turn(tw.Toolset("t"))
    assert ((), tw.adapters.ToolChoice("none")) == (turn.tools, turn.tool_choice)


def test_description_override_applies(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, description_overrides=[("a", "New.")])
    assert ("New.", "New.") == (turn.tools[0].description, turn.definitions()[0].description)


def test_description_overrides_last_write_wins(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, description_overrides=[("a", "First."), ("a", "Second.")])
    assert "Second." == turn.tools[0].description


def test_description_override_as_mapping(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, description_overrides={tw.Selector("a"): "Mapped."})
    assert "Mapped." == turn.tools[0].description


def test_description_override_for_an_unknown_tool_raises(ts: tw.Toolset) -> None:
    with pytest.raises(tw.UnknownToolError):
        tw.resolve_turn(ts, description_overrides=[("zz", "x")])


def test_description_override_must_be_text(ts: tw.Toolset) -> None:
    with pytest.raises(TypeError) as info:
        tw.resolve_turn(ts, description_overrides=[("a", 3)])  # type: ignore[list-item]
    assert "description override for `a` must be a string, got int" == str(info.value)


def test_description_override_leaves_the_static_definition_alone(ts: tw.Toolset) -> None:
    tw.resolve_turn(ts, description_overrides=[("a", "New.")])
    assert "a tool" == ts.get("a").definition.description  # type: ignore[union-attr]


def test_all_allows_any_toolset_tool(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts, availability=tw.Availability.all())
    assert (True, False) == (turn.allows("b"), turn.allows("zz"))


def test_default_allows_only_offered_tools(ts: tw.Toolset) -> None:
    turn = tw.resolve_turn(ts)
    assert (True, False) == (turn.allows("a"), turn.allows("b"))


def test_turn_object_resolves_the_same(ts: tw.Toolset) -> None:
    turn = tw.Turn(availability=tw.Availability.only("c"), parallel_calls=False).resolve(ts)
    assert (["c"], False) == (_names(turn), turn.parallel_calls)


def test_resolve_rejects_a_non_toolset() -> None:
    with pytest.raises(tw.exceptions.ToolsetError) as info:
        tw.resolve_turn([])  # type: ignore[arg-type]
    assert "expected a Toolset, got list" == str(info.value)


def test_resolve_rejects_a_bad_requirement(ts: tw.Toolset) -> None:
    with pytest.raises(TypeError) as info:
        tw.resolve_turn(ts, requirement="required")  # type: ignore[arg-type]
    assert "requirement must be a Requirement, got str" == str(info.value)


def test_a_turn_without_hooks_or_overrides_reuses_the_resolved_tools() -> None:
    from toolwire import Toolset, resolve_turn, tool_fn

    @tool_fn
    def a() -> str:
        """A."""
        return "a"

    tools = Toolset("t", [a])
    assert resolve_turn(tools).tools is resolve_turn(tools).tools


def test_the_reused_tools_follow_changes_to_the_toolset() -> None:
    from toolwire import Toolset, resolve_turn, tool_fn

    @tool_fn
    def a() -> str:
        """A."""
        return "a"

    @tool_fn
    def b() -> str:
        """B."""
        return "b"

    inner = Toolset("inner", [a])
    tools = Toolset("t").add(inner)
    assert ["a"] == [t.name for t in resolve_turn(tools).tools]
    inner.add(b)
    assert ["a", "b"] == [t.name for t in resolve_turn(tools).tools]


def test_overrides_are_not_cached_into_later_turns() -> None:
    from toolwire import Toolset, resolve_turn, tool_fn

    @tool_fn
    def a() -> str:
        """A."""
        return "a"

    tools = Toolset("t", [a])
    assert (
        "Say a." == resolve_turn(tools, description_overrides={"a": "Say a."}).tools[0].description
    )
    assert "A." == resolve_turn(tools).tools[0].description
