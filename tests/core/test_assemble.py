"""The shared streamed tool-call assembler."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import ToolCall
from toolwire._assemble import ToolCallAssembler, synthesize_call_id
from toolwire.adapters import ToolCallDelta, ToolCallStarted
from toolwire.exceptions import StreamError


def test_ids_only_on_first_fragment() -> None:
    asm = ToolCallAssembler()
    asm.fragment(0, id="a", name="f", arguments='{"x"')
    asm.fragment(0, arguments=": 1}")
    assert (ToolCall("a", "f", '{"x": 1}'),) == asm.calls()


def test_parallel_calls_on_separate_indexes_keep_their_order() -> None:
    asm = ToolCallAssembler()
    asm.fragment(0, id="a", name="f", arguments="{")
    asm.fragment(1, id="b", name="g", arguments="{")
    asm.fragment(0, arguments="}")
    asm.fragment(1, arguments="}")
    assert (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}")) == asm.calls()


def test_calls_sharing_an_index_with_different_ids_stay_apart() -> None:
    asm = ToolCallAssembler()
    asm.fragment(0, id="a", name="f", arguments='{"q": 1}')
    asm.fragment(0, id="b", name="g", arguments='{"q": 2}')
    assert (ToolCall("a", "f", '{"q": 1}'), ToolCall("b", "g", '{"q": 2}')) == asm.calls()


def test_events_report_start_and_fragments() -> None:
    asm = ToolCallAssembler()
    events = asm.fragment(0, id="a", name="f", arguments="{}")
    assert [ToolCallStarted(0, "a", "f"), ToolCallDelta(0, "{}")] == events


def test_missing_arguments_become_an_empty_object() -> None:
    asm = ToolCallAssembler()
    asm.fragment("k", id="a", name="f")
    assert (ToolCall("a", "f", "{}"),) == asm.calls()


def test_missing_ids_are_synthesised_deterministically() -> None:
    first, second = ToolCallAssembler(), ToolCallAssembler()
    for asm in (first, second):
        asm.fragment(0, name="f", arguments="{}")
        asm.fragment(1, name="f", arguments="{}")
    ids = [c.id for c in first.calls()]
    assert ids == [c.id for c in second.calls()]
    assert ids[0] != ids[1]
    assert synthesize_call_id("f", "{}", 0) == ids[0]


def test_a_fragment_before_the_name_is_a_stream_error() -> None:
    asm = ToolCallAssembler(provider="openai")
    with pytest.raises(StreamError) as info:
        asm.fragment(3, arguments="{")
    assert "before the call's name" in str(info.value)


@given(
    st.lists(
        st.tuples(st.sampled_from(["f", "g", "h"]), st.text(max_size=20)), min_size=1, max_size=5
    ),
    st.data(),
)
def test_any_fragmentation_gives_the_same_calls(
    calls: list[tuple[str, str]], data: st.DataObject
) -> None:
    whole = ToolCallAssembler()
    for i, (name, args) in enumerate(calls):
        whole.fragment(i, id=f"id{i}", name=name, arguments=args)
    pieces = ToolCallAssembler()
    for i, (name, args) in enumerate(calls):
        cuts = sorted(data.draw(st.lists(st.integers(0, len(args)), max_size=4)))
        bounds = [0, *cuts, len(args)]
        for j in range(len(bounds) - 1):
            first = j == 0
            pieces.fragment(
                i,
                id=f"id{i}" if first else None,
                name=name if first else None,
                arguments=args[bounds[j] : bounds[j + 1]],
            )
    assert whole.calls() == pieces.calls()
