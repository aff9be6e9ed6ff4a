"""Toolsets: nesting, off flags, selectors, wire names, collisions, prefixes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import toolwire as tw


def _tool(name: str) -> tw.Tool[Any, Any]:
    return tw.raw_tool(name, f"{name} tool", {})


def test_nesting_flattens_in_declaration_order() -> None:
    inner = tw.Toolset("inner", [_tool("b"), _tool("c")])
    outer = tw.Toolset("outer", [_tool("a"), inner, _tool("d")])
    assert ["a", "b", "c", "d"] == [t.name for t in outer.tools()]


def test_deep_nesting_flattens() -> None:
    deep = tw.Toolset("l3", [_tool("z")])
    outer = tw.Toolset("l1", [tw.Toolset("l2", [deep])])
    assert ("z", "l1/l2/l3") == (outer.tools()[0].name, outer.source("z"))


def test_off_tool_is_hidden_from_default_but_listed() -> None:
    ts = tw.Toolset("t").add(_tool("a")).add(_tool("b"), off=True)
    assert (["a"], ["a", "b"]) == (
        [t.name for t in ts.default_tools()],
        [t.name for t in ts.tools()],
    )


def test_off_group_hides_every_tool_inside() -> None:
    ts = tw.Toolset("t", [_tool("a")]).add(tw.Toolset("g", [_tool("b"), _tool("c")]), off=True)
    assert ["a"] == [t.name for t in ts.default_tools()]


def test_inner_off_flag_still_applies_in_an_on_group() -> None:
    inner = tw.Toolset("g").add(_tool("b")).add(_tool("c"), off=True)
    ts = tw.Toolset("t", [inner])
    assert (["b"], True) == ([t.name for t in ts.default_tools()], ts.is_off("c"))


def test_all_gives_selectors_for_every_tool_nested_included() -> None:
    ts = tw.Toolset("t", [_tool("a"), tw.Toolset("g", [_tool("b")])])
    assert (tw.Selector("a"), tw.Selector("b")) == ts.all()


def test_definitions_in_order() -> None:
    ts = tw.Toolset("t", [_tool("a"), tw.Toolset("g", [_tool("b")])])
    assert ["a", "b"] == [d.name for d in ts.definitions()]


def test_try_from_name_searches_nested() -> None:
    ts = tw.Toolset("t", [tw.Toolset("g", [_tool("b")])])
    assert tw.Selector("b") == ts.try_from_name("b")


def test_try_from_name_unknown_is_none() -> None:
    assert None is tw.Toolset("t", [_tool("a")]).try_from_name("zz")


def test_from_name_unknown_raises_unknown_tool() -> None:
    with pytest.raises(tw.UnknownToolError) as info:
        tw.Toolset("t", [_tool("a")]).from_name("zz")
    assert ("zz", "tool `zz` is not in toolset `t`") == (info.value.name, str(info.value))


def test_selector_serialises_as_the_tool_name() -> None:
    assert "a" == str(tw.Toolset("t", [_tool("a")]).from_name("a"))


def test_select_accepts_tool_class_function_and_name(search: type[BaseModel]) -> None:
    def plain(x: int) -> int:
        return x

    ts = tw.Toolset("t", [search, plain])
    search_tool = tw.tool_of(search)
    assert ["search_docs", "search_docs", "plain", "plain"] == [
        ts.select(s).name for s in (search, search_tool, plain, "plain")
    ]


def test_select_tool_not_in_the_toolset_raises() -> None:
    with pytest.raises(tw.UnknownToolError) as info:
        tw.Toolset("t", [_tool("a")]).select(_tool("b"))
    assert "tool `b` is not in toolset `t`" == str(info.value)


def test_collision_between_nested_toolsets_names_both_sources() -> None:
    ts = tw.Toolset("app", [tw.Toolset("fs", [_tool("read")]), tw.Toolset("web", [_tool("read")])])
    with pytest.raises(tw.exceptions.NameCollisionError) as info:
        ts.tools()
    message = str(info.value)
    assert ("`app/fs`", "`app/web`", "prefix") == tuple(
        part for part in ("`app/fs`", "`app/web`", "prefix") if part in message
    )


def test_same_tool_added_twice_is_a_collision() -> None:
    tool = _tool("a")
    ts = tw.Toolset("t", [tool, tool])
    with pytest.raises(tw.exceptions.NameCollisionError) as info:
        len(ts)
    assert "tool `a` is added twice to toolset `t` (from `t` and `t`)" in str(info.value)


def test_prefix_mount_resolves_a_collision() -> None:
    ts = tw.Toolset("app", [_tool("read")]).add(tw.Toolset("web", [_tool("read")]), prefix="web_")
    assert ["read", "web_read"] == [t.name for t in ts.tools()]


def test_prefixed_tool_keeps_its_origin() -> None:
    read = _tool("read")
    ts = tw.Toolset("app").add(tw.Toolset("web", [read]), prefix="web_")
    assert (read, tw.Selector("web_read")) == (ts.get("web_read").origin, ts.select(read))  # type: ignore[union-attr]


def test_adding_to_a_nested_toolset_is_seen_by_the_parent() -> None:
    inner = tw.Toolset("g", [_tool("a")])
    outer = tw.Toolset("t", [inner])
    outer.tools()
    inner.add(_tool("b"))
    assert ["a", "b"] == [t.name for t in outer.tools()]


def test_toolset_cannot_contain_itself() -> None:
    ts = tw.Toolset("t")
    with pytest.raises(tw.exceptions.ToolsetError) as info:
        ts.add(ts)
    assert "toolset `t` cannot contain itself" == str(info.value)


def test_nesting_cycle_is_detected() -> None:
    a = tw.Toolset("a")
    b = tw.Toolset("b", [a])
    a.add(b)
    with pytest.raises(tw.exceptions.ToolsetError) as info:
        a.tools()
    assert "toolset `a` is nested inside itself" in str(info.value)


def test_toolset_needs_a_name() -> None:
    with pytest.raises(tw.exceptions.ToolsetError) as info:
        tw.Toolset("")
    assert "a toolset needs a non-empty name, got ''" == str(info.value)


def test_toolset_tool_decorator_adds_a_function_tool() -> None:
    ts = tw.Toolset("t")

    @ts.tool(off=True)
    def ping() -> str:
        return "pong"

    assert (["ping"], True) == ([t.name for t in ts.tools()], ts.is_off("ping"))


def test_long_tool_name_is_shortened_on_the_wire() -> None:
    long = "a" * 100
    ts = tw.Toolset("t", [_tool(long)])
    assert [tw.adapters.wire_name(long)] == [t.name for t in ts.tools()]


def test_dotted_name_is_made_wire_safe() -> None:
    assert "fs_read" == tw.adapters.wire_name("fs.read")


def test_valid_name_is_unchanged() -> None:
    assert "get_weather-2" == tw.adapters.wire_name("get_weather-2")


def test_trailing_newline_is_not_a_valid_wire_name() -> None:
    assert "abc_" == tw.adapters.wire_name("abc\n")


_WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@given(st.text(max_size=200))
def test_wire_name_always_matches_the_provider_rule(name: str) -> None:
    assert _WIRE.fullmatch(tw.adapters.wire_name(name))


@given(st.text(max_size=200))
def test_wire_name_is_stable(name: str) -> None:
    assert tw.adapters.wire_name(name) == tw.adapters.wire_name(name)


@given(st.text(max_size=200))
def test_wire_name_is_idempotent(name: str) -> None:
    once = tw.adapters.wire_name(name)
    assert once == tw.adapters.wire_name(once)


_long_names = st.text(st.sampled_from("abcxyz_-."), min_size=65, max_size=120)


@given(_long_names, _long_names)
def test_wire_name_shortening_keeps_distinct_long_names_distinct(a: str, b: str) -> None:
    if a != b:
        assert tw.adapters.wire_name(a) != tw.adapters.wire_name(b)


@given(st.text(st.sampled_from("abc_-"), min_size=1, max_size=64), _long_names)
def test_shortened_names_never_equal_a_valid_name(valid: str, long: str) -> None:
    assert valid != tw.adapters.wire_name(long) or valid == long


def test_reset_replaces_every_member_at_once() -> None:
    a = tw.raw_tool("a", "A", {"type": "object"})
    b = tw.raw_tool("b", "B", {"type": "object"})
    inner = tw.Toolset("inner", [a])
    outer = tw.Toolset("outer").add(inner, prefix="x_")
    assert [t.name for t in outer.tools()] == ["x_a"]
    inner.reset([b, a])
    assert [t.name for t in outer.tools()] == ["x_b", "x_a"]
    assert inner.reset().tools() == ()


def test_reset_checks_the_new_members_before_swapping_any() -> None:
    a = tw.raw_tool("a", "A", {"type": "object"})
    ts = tw.Toolset("ts", [a])
    with pytest.raises(tw.ToolDefinitionError):
        ts.reset([tw.raw_tool("b", "B", {"type": "object"}), 42])
    assert [t.name for t in ts.tools()] == ["a"]
    with pytest.raises(tw.exceptions.ToolsetError, match="cannot contain itself"):
        ts.reset([ts])


def test_a_selector_serialises_as_its_tool_name() -> None:
    # Attack (#11.27): the docstring said a Selector serialises as its tool name;
    # json.dumps and pydantic both failed on one.
    import json
    import pickle

    from pydantic import BaseModel

    a = tw.raw_tool("a", "A", {"type": "object"})
    ts = tw.Toolset("ts", [a, tw.raw_tool("b", "B", {"type": "object"})])
    sel = ts.select(a)
    assert json.dumps({"tool": sel}) == '{"tool": "a"}'
    assert sel == "a"
    assert sel.name == "a"
    assert repr(sel) == "Selector('a')"
    assert pickle.loads(pickle.dumps(sel)) == sel

    class Choice(BaseModel):
        tool: tw.Selector

    choice = Choice.model_validate({"tool": "b"})
    assert isinstance(choice.tool, tw.Selector)
    assert choice.model_dump_json() == '{"tool":"b"}'
    assert ts.selector_schema() == {"type": "string", "enum": ["a", "b"]}
    with pytest.raises(tw.exceptions.UsageError):
        tw.Selector(5)  # type: ignore[arg-type]


def test_a_nested_toolset_can_be_mounted_with_only_some_of_its_tools(
    weather: tw.Tool[Any, Any], search: Any
) -> None:
    inner = tw.Toolset("inner", [weather, search])
    outer = tw.Toolset("outer").add(inner, prefix="x_", exclude=["search_docs"])
    assert ["x_get_weather"] == [t.name for t in outer.tools()]
    picked = tw.Toolset("outer").add(inner, only=["search_docs"])
    assert ["search_docs"] == [t.name for t in picked.tools()]
    with pytest.raises(tw.exceptions.ToolsetError, match="apply to a nested toolset"):
        tw.Toolset("t").add(weather, only=["get_weather"])
    with pytest.raises(tw.exceptions.ToolsetError, match="exclude must be a list of tool names"):
        tw.Toolset("t").add(inner, exclude="get_weather")
