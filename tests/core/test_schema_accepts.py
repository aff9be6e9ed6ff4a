"""The quick proof of validity (toolwire._schema.accepts) never accepts what the full
JSON Schema validator refuses, and a raw tool's validation is the full one's."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._schema.accepts import MAX_DEPTH, compile_accepts

PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.0, 1.0, -1.5, 2.5, 1e300]),
    st.sampled_from(["", "a", "ab", "abc", "é", "1"]),
)
JSON = st.recursive(
    PLAIN,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=3),
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["a", "b", "c", "d"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])


def _schemas() -> st.SearchStrategy[Any]:
    def node(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries(
            {},
            optional={
                "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
                "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                "required": st.lists(
                    st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True
                ),
                "additionalProperties": st.booleans(),
                "items": inner,
                "enum": st.lists(PLAIN, min_size=1, max_size=4),
                "const": PLAIN,
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "minItems": st.integers(0, 3),
                "maxItems": st.integers(0, 3),
                "minimum": st.sampled_from([0, 1, -1.5, 2.5]),
                "maximum": st.sampled_from([0, 1, -1.5, 2.5]),
                "exclusiveMinimum": st.sampled_from([0, 1, -1.5]),
                "exclusiveMaximum": st.sampled_from([0, 1, 2.5]),
                "description": st.just("annotation only"),
                "format": st.just("date-time"),
            },
        )

    return st.recursive(st.one_of(st.just(True), node(st.just(True))), node, max_leaves=6)


@settings(max_examples=3000, deadline=None)
@given(schema=_schemas(), value=JSON)
@example(schema={"type": "integer"}, value=2.5)
@example(schema={"type": "integer"}, value=True)
@example(schema={"type": "number"}, value=False)
@example(schema={"type": "string"}, value=1)
@example(schema={"type": ["string", "null"]}, value=0)
@example(schema={"enum": [1]}, value=True)
@example(schema={"enum": [True]}, value=1)
@example(schema={"const": 0}, value=False)
@example(schema={"minLength": 2}, value="é")
@example(schema={"maxItems": 1}, value=[1, 2])
@example(schema={"minimum": 1}, value=0.5)
@example(schema={"exclusiveMaximum": 1}, value=1)
@example(schema={"required": ["a"]}, value={"b": 1})
@example(schema={"properties": {"a": {"type": "string"}}}, value={"a": 1})
@example(schema={"additionalProperties": False, "properties": {"a": True}}, value={"b": 1})
@example(schema={"items": {"type": "string"}}, value=["a", 1])
def test_what_it_accepts_the_full_validator_accepts(schema: Any, value: Any) -> None:
    accepts = compile_accepts(schema)
    assert accepts is not None  # every keyword drawn is one it covers
    if accepts(value):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


@settings(max_examples=500, deadline=None)
@given(value=JSON)
def test_the_common_tool_schema_is_proven_for_what_it_allows(value: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
        "required": ["text"],
        "additionalProperties": False,
    }
    accepts = compile_accepts(schema)
    assert accepts is not None
    full = jsonschema.Draft202012Validator(schema).is_valid(value)
    if accepts(value):
        assert full
    # The proof is made for every plain valid call (only whole floats are left to the
    # full validator).
    if full and not isinstance(value.get("n"), float):
        assert accepts(value)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "string", "pattern": "^a"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": False}},
        {"type": "array", "items": [{"type": "string"}]},
        {"enum": [{"a": 1}]},
        {"type": "decimal"},
        {"type": []},
        {"minLength": -1},
        {"minimum": "1"},
        {"required": "a"},
        False,
        "not a schema",
    ],
)
def test_a_schema_with_anything_else_is_left_to_the_full_validator(schema: Any) -> None:
    assert compile_accepts(schema) is None


def test_a_schema_too_deep_is_left_to_the_full_validator() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_DEPTH + 2):
        schema = {"type": "object", "properties": {"a": schema}}
    assert compile_accepts(schema) is None


def test_what_it_cannot_prove_the_full_validator_decides() -> None:
    integer = compile_accepts({"type": "integer"})
    assert integer is not None
    assert (True, False, False) == (integer(1), integer(1.0), integer(True))
    choice = compile_accepts({"enum": [1, "a", None]})
    assert choice is not None
    assert (True, True, False, False) == (choice(1), choice(None), choice(True), choice(1.0))


def test_a_raw_tool_accepts_and_refuses_as_the_full_validator_says() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }

    def body(**arguments: Any) -> str:
        return "ok"

    tool = tw.raw_tool("count", "Count.", schema, body)
    assert {"name": "x", "count": 2} == tool.validate_json('{"name": "x", "count": 2}')
    # Not proven by the quick check (a whole float), valid all the same.
    assert {"name": "x", "count": 2.0} == tool.validate_json('{"name": "x", "count": 2.0}')
    with pytest.raises(Exception, match="'name' is a required property"):
        tool.validate_json('{"count": 2}')
    with pytest.raises(Exception, match="Additional properties are not allowed"):
        tool.validate_json('{"name": "x", "other": 1}')


WIDE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


def _either(check: Any, how: str, text: str) -> Any:
    try:
        return ("ok", getattr(check, how)(text))
    except Exception as exc:
        return ("refused", str(exc))


@settings(max_examples=1000, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=3), WIDE, max_size=4))
@example(arguments={"a": float("nan")})
@example(arguments={"a": float("-inf")})
@example(arguments={"a": 10**40, "b": -(10**40), "c": 1e308, "d": 5e-324})
@example(arguments={"a": ["x"] * 3, "b": {"c": {"d": '\u00e9\U0001f600\n"\\'}}})
@example(arguments={"deep": [[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]})
def test_arguments_toolwire_wrote_are_read_as_the_strict_parse_reads_them(
    arguments: dict[str, Any],
) -> None:
    # A bridge's mapping, written with to_json, is read by the quicker parser
    # (RawCheck.written): the same value, the same refusal, the same words.
    import pydantic_core

    from toolwire._schema.raw import RawCheck

    text = pydantic_core.to_json(arguments).decode()
    check = RawCheck("t", {"type": "object"})
    assert _either(check, "text", text) == _either(check, "written", text)


@pytest.mark.parametrize("depth", [200, 201, 260])
def test_arguments_toolwire_wrote_nested_past_the_limit_are_refused_as_the_models_are(
    depth: int,
) -> None:
    from toolwire._schema.raw import RawCheck

    text = '{"a": ' + "[" * depth + "]" * depth + "}"
    check = RawCheck("t", {"type": "object"})
    assert _either(check, "text", text) == _either(check, "written", text)
