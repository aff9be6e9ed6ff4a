"""Clean JSON schemas: no noise titles, descriptions on documented fields, $defs kept correct."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

import toolwire as tw
from toolwire._schema.neutral import clean_schema, model_schema


class Address(BaseModel):
    """A postal address."""

    street: str
    title: str = "Mr"


class Order(BaseModel):
    """An order."""

    title: str = Field(description="The order title.")
    ship_to: Address
    bill_to: Address | None = None
    kind: Literal["a", "b"] = "a"


def test_model_schema_has_no_titles_anywhere() -> None:
    schema = model_schema(Order)
    assert "Order" not in repr(schema)
    assert "'title': 'Title'" not in repr(schema)


def test_model_schema_keeps_a_property_named_title() -> None:
    assert {"description": "The order title.", "type": "string"} == model_schema(Order)[
        "properties"
    ]["title"]


def test_model_schema_keeps_defs_and_refs_consistent() -> None:
    schema = model_schema(Order)
    assert ({"Address"}, "#/$defs/Address") == (
        set(schema["$defs"]),
        schema["properties"]["ship_to"]["$ref"],
    )


def test_model_schema_nested_model_keeps_its_property_named_title() -> None:
    assert ["street", "title"] == list(model_schema(Order)["$defs"]["Address"]["properties"])


def test_model_schema_drops_the_top_level_description() -> None:
    assert "description" not in model_schema(Order)


def test_model_schema_fills_missing_descriptions_from_docstrings() -> None:
    schema = model_schema(Order, descriptions={"kind": "The kind.", "title": "ignored"})
    props = schema["properties"]
    assert ("The kind.", "The order title.") == (
        props["kind"]["description"],
        props["title"]["description"],
    )


def test_model_schema_of_an_empty_model_has_empty_properties() -> None:
    class Empty(BaseModel):
        pass

    assert {"properties": {}, "type": "object"} == model_schema(Empty)


def test_clean_schema_adds_properties_to_bare_objects() -> None:
    assert {"type": "object", "properties": {}} == clean_schema({"type": "object"})


def test_clean_schema_leaves_maps_without_properties() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert schema == clean_schema(schema)


def test_clean_schema_removes_titles_inside_combinators() -> None:
    schema = {"anyOf": [{"type": "string", "title": "S"}, {"type": "null", "title": "N"}]}
    assert {"anyOf": [{"type": "string"}, {"type": "null"}]} == clean_schema(schema)


def test_clean_schema_does_not_touch_defaults_and_examples() -> None:
    schema = {"type": "string", "default": {"title": "kept"}, "examples": [{"title": "kept"}]}
    assert schema == clean_schema(schema)


def test_clean_schema_returns_a_new_dict() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    clean_schema(schema)["properties"]["a"]["type"] = "integer"
    assert "string" == schema["properties"]["a"]["type"]


def test_tool_fn_nested_models_keep_defs() -> None:
    @tw.tool_fn
    def ship(order: Order) -> str:
        return ""

    schema = ship.input_schema
    assert ({"Address", "Order"}, "#/$defs/Order") == (
        set(schema["$defs"]),
        schema["properties"]["order"]["$ref"],
    )


_names = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8)
_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer"])}, optional={"title": _names}
)
_schemas = st.recursive(
    _leaf,
    lambda inner: st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(st.one_of(st.just("title"), _names), inner, max_size=4),
        },
        optional={"title": _names},
    ),
    max_leaves=12,
)


def _property_names(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    out: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        out.append(name)
        out.extend(_property_names(sub))
    return out


def _title_keywords(schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    own = 1 if isinstance(schema.get("title"), str) else 0
    return own + sum(_title_keywords(s) for s in schema.get("properties", {}).values())


@given(_schemas)
def test_clean_schema_never_drops_a_property_named_title(schema: dict[str, Any]) -> None:
    assert _property_names(schema) == _property_names(clean_schema(schema))


@given(_schemas)
def test_clean_schema_removes_every_title_keyword(schema: dict[str, Any]) -> None:
    assert 0 == _title_keywords(clean_schema(schema))


def test_subschemas_names_every_position_with_an_escaped_pointer() -> None:
    from toolwire.schema import subschemas

    node = {
        "type": "object",
        "properties": {"a/b": {"type": "string"}, "c~d": True},
        "anyOf": [{"type": "object"}, False],
        "items": {"type": "integer"},
        "enum": [{"not": "a schema"}],
        "description": "kept",
    }
    assert list(subschemas(node, "/x")) == [
        ("/x/properties/a~1b", {"type": "string"}),
        ("/x/properties/c~0d", True),
        ("/x/anyOf/0", {"type": "object"}),
        ("/x/anyOf/1", False),
        ("/x/items", {"type": "integer"}),
    ]


def test_child_schemas_are_subschemas_without_their_pointers() -> None:
    from toolwire.schema import child_schemas, subschemas

    node = {
        "$defs": {"D": {"type": "string"}},
        "properties": {"a/b": {"type": "string"}, "c~d": True},
        "anyOf": [{"type": "object"}, False],
        "items": {"type": "integer"},
        "definitions": {"E": {"type": "null"}},
        "enum": [{"not": "a schema"}],
        "oneOf": {"not": "a list"},
        "patternProperties": ["not", "a", "map"],
    }
    assert child_schemas(node) == [sub for _, sub in subschemas(node)]
    assert child_schemas(node, definitions=False) == [
        {"type": "string"},
        True,
        {"type": "object"},
        False,
        {"type": "integer"},
    ]
    assert child_schemas({"description": "no subschemas"}) == []


def test_map_subschemas_rewrites_only_subschemas_and_keeps_order() -> None:
    from toolwire.schema import map_subschemas

    node = {
        "title": "T",
        "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
        "const": {"properties": "not a schema"},
        "allOf": [{"type": "object"}],
        "not": {"type": "null"},
    }
    seen: list[str] = []

    def mark(sub: Any, pointer: str) -> Any:
        seen.append(pointer)
        return {"at": pointer}

    out = map_subschemas(node, mark)
    assert list(out) == list(node)
    assert out["title"] == "T"
    assert out["const"] == {"properties": "not a schema"}
    assert out["properties"] == {"title": {"at": "/properties/title"}, "n": {"at": "/properties/n"}}
    assert out["allOf"] == [{"at": "/allOf/0"}]
    assert out["not"] == {"at": "/not"}
    assert seen == ["/properties/title", "/properties/n", "/allOf/0", "/not"]
    assert node["properties"]["n"] == {"type": "integer"}  # the input is not touched


def test_a_list_keyword_that_is_not_a_list_is_not_walked() -> None:
    from toolwire.schema import map_subschemas, subschemas

    node = {"anyOf": {"type": "string"}, "properties": ["not", "a", "map"]}
    assert list(subschemas(node)) == []
    assert map_subschemas(node, lambda sub, _: 1 / 0) == node


@pytest.mark.parametrize("key", ["parameters", "input_schema", "inputSchema"])
def test_a_wrapped_definition_is_refused_not_taken_as_an_empty_schema(key: str) -> None:
    # Attack (#11.28): {"parameters": {...}} was accepted as a tool with no parameters,
    # rendered strict so the model could only send {}, validated as "anything goes", and
    # reported lossless.
    wrapped = {key: {"type": "object", "properties": {"q": {"type": "string"}}}}
    with pytest.raises(tw.ToolDefinitionError, match=rf"wraps its schema under `{key}`"):
        tw.raw_tool("search", "Search.", wrapped)


def test_a_property_named_parameters_is_fine() -> None:
    schema = {"type": "object", "properties": {"parameters": {"type": "object"}}}
    assert tw.raw_tool("t", "T.", schema).input_schema["properties"]["parameters"]


# -- decimals: the schema accepts no string or number the tool refuses ------------------------


def price(
    any_amount: Decimal,
    money: Annotated[Decimal, Field(max_digits=5, decimal_places=2)],
    capped: Annotated[Decimal, Field(ge=0, le=10)],
) -> str:
    """Decimals."""
    return ""


def _decimal_tool() -> tw.Tool[Any, Any]:
    return tw.tool_fn(price)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("any_amount", "abc"),  # pydantic's own schema takes any string here
        ("any_amount", ""),
        ("money", "1234.5"),  # four integer digits
        ("money", "1.234"),  # three places
        ("money", "1E+9"),  # an exponent, whatever the digits
        ("money", 1234.5),
        ("money", 0.001),
        ("capped", "50"),  # the string branch had no bounds
        ("capped", 11),
    ],
)
def test_a_decimal_schema_refuses_what_the_tool_refuses(field: str, value: Any) -> None:
    tool = _decimal_tool()
    args = {"any_amount": "1.5", "money": "123.45", "capped": 5, field: value}
    with pytest.raises(ValidationError):
        tool.validate_python(args)
    assert not jsonschema.Draft202012Validator(tool.input_schema).is_valid(args)


@pytest.mark.parametrize(
    ("field", "value"),
    [("any_amount", "-1.5e3"), ("any_amount", ".5"), ("money", "00123.450"), ("money", 999.99)],
)
def test_a_decimal_schema_still_takes_what_the_tool_takes(field: str, value: Any) -> None:
    tool = _decimal_tool()
    args = {"any_amount": "1.5", "money": "123.45", "capped": 5, field: value}
    tool.validate_python(args)
    assert jsonschema.Draft202012Validator(tool.input_schema).is_valid(args)
