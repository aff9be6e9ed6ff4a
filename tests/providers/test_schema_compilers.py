"""The providers' schema compilers: OpenAI strict, Gemini (parameters and parametersJsonSchema),
Anthropic; the loss reports, strict-null restoring, and the core driver's cache.

A workspace test: it needs the three provider distributions installed."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from _by_path import load
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter

from toolwire import ToolDefinitionError, raw_tool, tool_fn
from toolwire._tools import Tool
from toolwire._turn import ResolvedTool
from toolwire.exceptions import SchemaCompileError, UsageError
from toolwire.schema import (
    CompiledTool,
    CompileOptions,
    CompileReport,
    SchemaChange,
    SchemaCompiler,
    check_tools,
    compile_tool,
    format_report,
)
from toolwire_anthropic._schema import COMPILER as ANTHROPIC
from toolwire_anthropic._schema import compile_anthropic
from toolwire_gemini._schema import COMPILER as GEMINI
from toolwire_gemini._schema import (
    GEMINI_SCHEMA_KEYS,
    choose_gemini_schema,
    compile_gemini,
    compile_gemini_json_schema,
)
from toolwire_openai import OpenAIStrictLimits
from toolwire_openai._schema import COMPILERS as OPENAI
from toolwire_openai._schema import (
    OPENAI_STRICT_FORMATS,
    compile_openai,
    compile_openai_strict,
    strip_strict_nulls,
)

COMPILERS: dict[str, SchemaCompiler] = {**OPENAI, "gemini": GEMINI, "anthropic": ANTHROPIC}


def compile_for(tool: Any, provider: str, *, options: CompileOptions | None = None) -> CompiledTool:
    """compile_tool with the compiler the provider of that name registers."""
    return compile_tool(tool, COMPILERS[provider], options=options)


def check_for(
    tools: Any, provider: str, *, options: CompileOptions | None = None
) -> list[CompileReport]:
    return check_tools(tools, COMPILERS[provider], options=options)


# -- the bench fixture ----------------------------------------------------------------------


def _load_fixture() -> ModuleType:
    return load("_compile_fixture_tools", Path("bench/fixture_tools.py"))


FIXTURE = _load_fixture()
FIXTURE_FUNCTIONS: list[Any] = list(FIXTURE.TOOL_FUNCTIONS)
FIXTURE_IDS = [f.__name__ for f in FIXTURE_FUNCTIONS]
PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini", "openrouter", "openai-compatible"]


# -- checkers -------------------------------------------------------------------------------

_STRICT_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "title",
        "$ref",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def assert_openai_strict_valid(schema: dict[str, Any]) -> None:
    """The Structured Outputs "Supported schemas" rules, walked over the whole schema."""
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema.get("type") == "object", "the root must be an object"
    assert "anyOf" not in schema, "the root must not be an anyOf"

    def walk(node: Any, path: str) -> None:
        assert isinstance(node, dict), f"{path}: a schema must be an object, got {node!r}"
        extra = set(node) - _STRICT_KEYS
        assert not extra, f"{path}: keywords strict mode does not support: {sorted(extra)}"
        if path and ("$defs" in node or "definitions" in node):
            pass
        if "$ref" in node:
            assert set(node) == {"$ref"}, f"{path}: $ref must stand alone, got {sorted(node)}"
            ref = node["$ref"]
            assert ref == "#" or ref.startswith("#/"), ref
            target: Any = schema
            for tok in ref[2:].split("/") if ref != "#" else []:
                target = target[tok.replace("~1", "/").replace("~0", "~")]
            return
        assert any(k in node for k in ("type", "anyOf", "enum", "const")), (
            f"{path}: every schema needs a type (or anyOf/enum/const): {node}"
        )
        t = node.get("type")
        types = [t] if isinstance(t, str) else list(t or [])
        assert set(types) <= _STRICT_TYPES, f"{path}: {types}"
        if "object" in types:
            assert node.get("additionalProperties") is False, f"{path}: additionalProperties"
            props = node.get("properties")
            assert isinstance(props, dict), f"{path}: properties"
            assert sorted(node.get("required", [])) == sorted(props), f"{path}: required"
            for name, sub in props.items():
                walk(sub, f"{path}/properties/{name}")
        if "array" in types:
            assert "items" in node, f"{path}: an array needs items"
            walk(node["items"], f"{path}/items")
        if "format" in node:
            assert node["format"] in OPENAI_STRICT_FORMATS, f"{path}: format {node['format']}"
        assert "default" not in node
        for i, branch in enumerate(node.get("anyOf", [])):
            walk(branch, f"{path}/anyOf/{i}")
        for key in ("$defs", "definitions"):
            for name, sub in node.get(key, {}).items():
                walk(sub, f"{path}/{key}/{name}")

    walk(schema, "")


_GEMINI_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "number": {"float", "double"},
    "integer": {"int32", "int64"},
}


def assert_gemini_subset(schema: dict[str, Any]) -> None:
    """Only the keys Gemini's ``parameters`` Schema takes, with the values it takes."""
    assert schema.get("type") == "object", "the root must be an object"

    def walk(node: Any, path: str) -> None:
        assert isinstance(node, dict), f"{path}: {node!r}"
        extra = set(node) - GEMINI_SCHEMA_KEYS
        assert not extra, f"{path}: keys Gemini rejects: {sorted(extra)}"
        t = node.get("type")
        if t is not None:
            assert t in _GEMINI_TYPES, f"{path}: type {t!r}"
        if "enum" in node:
            assert t == "string", f"{path}: enum needs type string"
            assert all(isinstance(v, str) for v in node["enum"]), f"{path}: {node['enum']}"
        if "nullable" in node:
            assert isinstance(node["nullable"], bool)
        if "format" in node:
            assert node["format"] in _GEMINI_FORMATS.get(t or "", set()), f"{path}: format"
        props = node.get("properties")
        if t == "object" and path:
            assert props, f"{path}: Gemini rejects an OBJECT with no properties"
        if props is not None:
            assert t == "object", f"{path}: properties on a non-object"
            assert isinstance(props, dict), f"{path}: properties"
            assert props, f"{path}: Gemini rejects an empty properties map"
            for name, sub in props.items():
                walk(sub, f"{path}/properties/{name}")
        if "required" in node:
            assert set(node["required"]) <= set(props or {}), f"{path}: required"
        if "propertyOrdering" in node:
            assert set(node["propertyOrdering"]) <= set(props or {})
        if "items" in node:
            assert t == "array"
            walk(node["items"], f"{path}/items")
        for i, branch in enumerate(node.get("anyOf", [])):
            walk(branch, f"{path}/anyOf/{i}")

    walk(schema, "")


def kinds(report: CompileReport) -> set[tuple[str, str, str]]:
    return {(c.path, c.kind, c.severity) for c in report.changes}


def change(report: CompileReport, path: str, kind: str) -> SchemaChange:
    found = [c for c in report.changes if c.path == path and c.kind == kind]
    assert found, f"no {kind} at {path!r}; changes: {[str(c) for c in report.changes]}"
    return found[0]


def example_instance(schema: dict[str, Any], node: Any = None) -> Any:
    """A small value valid for a strict schema; nullable fields get null."""
    node = schema if node is None else node
    if "$ref" in node:
        target: Any = schema
        for tok in node["$ref"][2:].split("/"):
            target = target[tok]
        return example_instance(schema, target)
    if "anyOf" in node:
        branches = node["anyOf"]
        if any(b.get("type") == "null" for b in branches):
            return None
        return example_instance(schema, branches[0])
    if "enum" in node:
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    t = node["type"]
    if isinstance(t, list):
        return None if "null" in t else example_instance(schema, {**node, "type": t[0]})
    if t == "object":
        return {k: example_instance(schema, v) for k, v in node["properties"].items()}
    return {"string": "x", "integer": 1, "number": 0.5, "boolean": True, "array": []}[t]


# -- shared models ----------------------------------------------------------------------------


class Color(str, enum.Enum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str
    city: str
    postcode: str | None = None


class Window(BaseModel):
    start: str
    inclusive: bool = True


class Node(BaseModel):
    value: int
    children: list[Node] = []
    parent: Node | None = None


class Keywords(BaseModel):
    """Properties named like JSON Schema keywords."""

    title: str
    default: int = 3
    properties: list[str] = []
    type: str | None = None


def _tool(fn: Any) -> Tool[Any, Any]:
    return tool_fn(fn)


def t_nested(where: Address, when: Window | None = None, color: Color = Color.red) -> str:
    """Nested models, an optional nested model and an enum with a default."""
    return ""


def t_defaults(
    query: str,
    verbose: bool = False,
    limit: int = 10,
    note: str | None = None,
    level: int | None = 5,
    order: Literal["asc", "desc"] = "asc",
) -> str:
    """Optionals with defaults."""
    return ""


def t_map(weights: dict[str, int]) -> str:
    """A free-form map."""
    return ""


def t_tree(root: Node) -> str:
    """A recursive model."""
    return ""


def t_keywords(k: Keywords, title: str, default: int = 1) -> str:
    """Keyword-named properties at two levels."""
    return ""


def t_empty() -> str:
    """No arguments."""
    return ""


def t_literal_int(mode: Literal[1, 2, 3], flag: Literal[True] = True) -> str:
    """Non-string enums and const."""
    return ""


def t_constraints(
    name: Annotated[str, Field(min_length=2, pattern=r"^[a-z]+$")],
    count: Annotated[int, Field(gt=0, le=10)],
    ratio: Annotated[float, Field(gt=0.0)],
    url: Annotated[str, Field(json_schema_extra={"format": "uri"})],
    when: Annotated[str, Field(json_schema_extra={"format": "date-time"})],
    tags: Annotated[set[str], Field(default_factory=set)],
) -> str:
    """Constraints."""
    return ""


# -- the 50 fixture tools ---------------------------------------------------------------------


@pytest.mark.parametrize("fn", FIXTURE_FUNCTIONS, ids=FIXTURE_IDS)
def test_fixture_tools_compile_for_every_provider(fn: Any) -> None:
    tool = tool_fn(fn)
    forced, forced_report = compile_openai_strict(tool.input_schema, strict_mode=True)
    assert_openai_strict_valid(forced)
    assert forced_report.strict is True
    if "weights" in tool.input_schema["properties"]:  # a map: refused under parameters
        with pytest.raises(SchemaCompileError, match="OBJECT with no properties"):
            compile_gemini(tool.input_schema)
    else:
        gemini, _ = compile_gemini(tool.input_schema)
        assert_gemini_subset(gemini)
    js, _ = compile_gemini_json_schema(tool.input_schema)
    jsonschema.Draft202012Validator.check_schema(js)
    anthropic, anthropic_report = compile_anthropic(tool.input_schema)
    assert anthropic_report.lossless
    assert {"type": "object"}.items() <= anthropic.items()
    for provider in PROVIDERS:
        compiled = compile_for(tool, provider)
        if compiled.strict:
            assert_openai_strict_valid(compiled.schema)


@pytest.mark.parametrize("fn", FIXTURE_FUNCTIONS, ids=FIXTURE_IDS)
def test_fixture_auto_strict_is_on_exactly_when_there_is_no_map(fn: Any) -> None:
    tool = tool_fn(fn)
    has_map = "weights" in tool.input_schema["properties"]
    compiled = compile_for(tool, "openai")
    assert (not has_map) == compiled.strict
    assert compiled.report.lossless
    if has_map:
        assert [("/properties/weights", "free_form_map")] == [
            (c.path, c.kind) for c in compiled.report.strict_blockers
        ]
        assert compiled.schema == tool.input_schema


@pytest.mark.parametrize("fn", FIXTURE_FUNCTIONS, ids=FIXTURE_IDS)
def test_fixture_strict_nulls_restore_every_default(fn: Any) -> None:
    tool = tool_fn(fn)
    compiled = compile_for(tool, "openai", options=CompileOptions(strict=True))
    sent = example_instance(compiled.schema)
    jsonschema.validate(sent, compiled.schema)
    restored = compiled.restore_arguments(sent)
    value = tool.validate_python(restored)
    for name, field in type(value).model_fields.items():
        if not field.is_required():
            assert field.get_default(call_default_factory=True) == getattr(value, name)


def test_fixture_gemini_prefers_json_schema_and_falls_back_for_maps() -> None:
    tools = [tool_fn(f) for f in FIXTURE_FUNCTIONS]
    for tool in tools:
        compiled = compile_for(tool, "gemini")
        assert "parametersJsonSchema" == compiled.target
        assert compiled.report.lossless
    read_file = next(t for t in tools if t.name == "read_file")
    with pytest.raises(SchemaCompileError, match=r"a map .* at #/properties/weights"):
        compile_gemini(read_file.input_schema)
    [report] = check_for([read_file], "gemini", options=CompileOptions(target="parameters"))
    assert [("", "compile_error", "error")] == [
        (c.path, c.kind, c.severity) for c in report.changes
    ]


# -- OpenAI strict -----------------------------------------------------------------------------


def test_strict_optional_with_default_is_required_nullable_and_documented() -> None:
    schema, report = compile_openai_strict(_tool(t_defaults).input_schema)
    assert report.strict is True
    assert report.lossless
    verbose = schema["properties"]["verbose"]
    assert {"type": ["boolean", "null"]}.items() <= verbose.items()
    assert "(default: false)" in verbose["description"]
    assert "default" not in verbose
    assert [
        "query",
        "verbose",
        "limit",
        "note",
        "level",
        "order",
    ] == schema["required"]
    assert "info" == change(report, "/properties/verbose", "made_required_nullable").severity
    assert (
        "strip_strict_nulls"
        in change(report, "/properties/verbose", "made_required_nullable").message
    )
    # already nullable: only listed in required
    assert ("/properties/note", "made_required", "info") in kinds(report)
    assert {"anyOf": [{"type": "string"}, {"type": "null"}]}.items() <= schema["properties"][
        "note"
    ].items()


def test_strict_nullable_enum_keeps_null_valid() -> None:
    schema, _ = compile_openai_strict(_tool(t_defaults).input_schema)
    order = schema["properties"]["order"]
    jsonschema.validate(None, order)
    jsonschema.validate("asc", order)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate("up", order)


def test_strip_strict_nulls_restores_defaults() -> None:
    tool = _tool(t_defaults)
    args = {
        "query": "q",
        "verbose": None,
        "limit": None,
        "note": None,
        "level": None,
        "order": None,
    }
    stripped = strip_strict_nulls(args, tool.input_schema)
    assert {"query": "q", "note": None, "level": None} == stripped
    value = tool.validate_python(stripped)
    assert (False, 10, None, None, "asc") == (
        value.verbose,
        value.limit,
        value.note,
        value.level,
        value.order,
    )
    assert "verbose" in args  # the input is not modified


def test_strip_strict_nulls_follows_refs_arrays_and_keeps_required_nulls() -> None:
    def f(windows: list[Window], when: Window, where: Window | None = None) -> str:
        return ""

    tool = tool_fn(f)
    args = {
        "windows": [{"start": "a", "inclusive": None}],
        "when": {"start": None, "inclusive": None},
        "where": None,
    }
    assert {
        "windows": [{"start": "a"}],
        "when": {"start": None},
        "where": None,
    } == strip_strict_nulls(args, tool.input_schema)


def test_optional_with_non_null_default_keeps_explicit_null() -> None:
    # level: Optional[int] = 5: null is a real value there, so it stays null;
    # the default is in the description for the model to send.
    schema, report = compile_openai_strict(_tool(t_defaults).input_schema)
    assert "(default: 5)" in schema["properties"]["level"]["description"]
    assert ("/properties/level", "made_required", "info") in kinds(report)


def test_strict_map_is_a_reported_loss_and_auto_turns_strict_off() -> None:
    tool = _tool(t_map)
    auto, auto_report = compile_openai_strict(tool.input_schema)
    assert auto_report.strict is False
    assert auto == tool.input_schema
    assert auto_report.lossless
    assert ["free_form_map"] == [c.kind for c in auto_report.strict_blockers]
    forced, forced_report = compile_openai_strict(tool.input_schema, strict_mode=True)
    assert_openai_strict_valid(forced)
    assert not forced_report.lossless
    weights = forced["properties"]["weights"]
    assert {"properties": {}, "required": [], "additionalProperties": False}.items() <= (
        weights.items()
    )
    message = change(forced_report, "/properties/weights", "free_form_map").message
    assert "empty object" in message
    assert "named fields" in message


def test_strict_false_sends_only_the_safe_cleanups() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_tool(t_map).input_schema,
    }
    out, report = compile_openai_strict(schema, strict_mode=False)
    assert report.strict is False
    assert {k: v for k, v in schema.items() if k != "$schema"} == out
    assert [("", "removed_keyword")] == [(c.path, c.kind) for c in report.changes]
    assert (out, report) == compile_openai(schema)


def test_strict_keeps_refs_and_recursion() -> None:
    schema, report = compile_openai_strict(_tool(t_tree).input_schema)
    assert report.strict is True
    assert_openai_strict_valid(schema)
    node = schema["$defs"]["Node"]
    children = node["properties"]["children"]
    assert [{"type": "array", "items": {"$ref": "#/$defs/Node"}}, {"type": "null"}] == (
        children["anyOf"]
    )
    assert "(default: [])" == children["description"]
    assert {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]} == node["properties"]["parent"]


def test_strict_ref_with_description_is_wrapped() -> None:
    schema, report = compile_openai_strict(_tool(t_nested).input_schema)
    where = schema["properties"]["where"]
    assert {"anyOf": [{"$ref": "#/$defs/Address"}]}.items() <= where.items() or where == {
        "$ref": "#/$defs/Address"
    }
    when = schema["properties"]["when"]
    assert {"$ref": "#/$defs/Window"} in when["anyOf"]
    assert {"type": "null"} in when["anyOf"]
    assert_openai_strict_valid(schema)
    assert report.strict is True


def test_strict_unsupported_keywords_move_into_the_description() -> None:
    tool = _tool(t_constraints)
    _auto, auto_report = compile_openai_strict(tool.input_schema)
    assert auto_report.strict is False
    blockers = {(c.path, c.kind) for c in auto_report.strict_blockers}
    assert ("/properties/name", "lost_constraint") in blockers  # minLength, unverified
    assert ("/properties/tags", "lost_constraint") in blockers  # uniqueItems
    forced, report = compile_openai_strict(tool.input_schema, strict_mode=True)
    assert_openai_strict_valid(forced)
    name = forced["properties"]["name"]
    assert "minLength: 2" in name["description"]
    assert r"^[a-z]+$" == name["pattern"]  # supported, kept
    assert 0 == forced["properties"]["count"]["exclusiveMinimum"]  # supported, kept
    assert "format: uri" in forced["properties"]["url"]["description"]
    assert "info" == change(report, "/properties/url", "described_keyword").severity
    assert "date-time" == forced["properties"]["when"]["format"]


def test_strict_lookaround_pattern_is_a_loss() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?!x)"}}}
    out, report = compile_openai_strict(schema, strict_mode=True)
    assert "pattern" not in out["properties"]["p"]
    assert "lookaround" in change(report, "/properties/p", "lost_constraint").message


def test_strict_untyped_schema_is_a_loss() -> None:
    schema = {"type": "object", "properties": {"anything": {}}, "required": ["anything"]}
    _, auto_report = compile_openai_strict(schema)
    assert auto_report.strict is False
    out, report = compile_openai_strict(schema, strict_mode=True)
    assert_openai_strict_valid(out)
    assert "warning" == change(report, "/properties/anything", "untyped_schema").severity


def test_strict_oneof_with_discriminator_is_lossless() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pet": {
                "oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "cat"}}},
                    {"type": "object", "properties": {"kind": {"const": "dog"}}},
                ],
                "discriminator": {"propertyName": "kind"},
            }
        },
        "required": ["pet"],
    }
    out, report = compile_openai_strict(schema)
    assert report.strict is True
    assert_openai_strict_valid(out)
    assert 2 == len(out["properties"]["pet"]["anyOf"])
    _, no_disc = compile_openai_strict(
        {**schema, "properties": {"pet": {"oneOf": schema["properties"]["pet"]["oneOf"]}}}
    )
    assert no_disc.strict is False


def test_strict_type_lists_and_openapi_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": ["string", "integer"]},
            "c": {"type": "string", "nullable": True},
        },
        "required": ["a", "b", "c"],
    }
    out, report = compile_openai_strict(schema)
    assert_openai_strict_valid(out)
    assert {"type": ["string", "null"]} == out["properties"]["a"]
    assert [{"type": "string"}, {"type": "integer"}] == out["properties"]["b"]["anyOf"]
    assert {"type": ["string", "null"]} == out["properties"]["c"]
    assert ("/properties/c", "rewrote_nullable", "info") in kinds(report)


def test_strict_empty_object_tool() -> None:
    out, report = compile_openai_strict(_tool(t_empty).input_schema)
    assert {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    } == out
    assert report.strict is True
    bare, _ = compile_openai_strict({"type": "object"})
    assert {"type": "object", "properties": {}, "required": [], "additionalProperties": False} == (
        bare
    )


def test_strict_limits_are_checked() -> None:
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "enum": ["a", "b", "c"]} for i in range(6)},
    }
    limits = OpenAIStrictLimits(max_properties=5, max_enum_values=10)
    _, report = compile_openai_strict(schema, limits=limits)
    messages = [c.message for c in report.strict_blockers if c.kind == "limit_exceeded"]
    assert any("6 object properties" in m for m in messages)
    assert any("18 enum values" in m for m in messages)
    assert report.strict is False


def test_strict_limits_count_every_node_once_and_depth_follows_refs() -> None:
    # Counted over the whole compiled document ($defs, anyOf branches, items); the depth
    # goes through each $ref (not into $defs on its own) and counts a cycle once.
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x" * 40] * 3}},
            "either": {"anyOf": [{"type": "string", "const": "c" * 50}, {"type": "integer"}]},
        },
        "required": ["tree", "tags", "either"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "leaf": {"$ref": "#/$defs/Leaf"},
                },
                "required": ["kids", "leaf"],
            },
            "Leaf": {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]},
            # Never referenced: its nesting is not the document's, its names still count.
            "Deep": {
                "type": "object",
                "properties": {
                    "d": {
                        "type": "object",
                        "properties": {
                            "e": {"type": "object", "properties": {"f": {"type": "integer"}}}
                        },
                    }
                },
            },
        },
    }
    tight = OpenAIStrictLimits(
        max_properties=8, max_depth=2, max_total_chars=207, max_enum_values=2
    )
    _, report = compile_openai_strict(schema, limits=tight)
    messages = sorted(c.message for c in report.strict_blockers if c.kind == "limit_exceeded")
    # Properties: 3 (root) + 2 (Node) + 1 (Leaf) + 3 (Deep) = 9. Nesting: root -> Node ->
    # Leaf = 3. Names: tree tags either kids leaf v d e f (4+4+6+4+4+1+1+1+1 = 26) and the
    # definitions Node Leaf Deep (12), 3 enum values of 40 and the const's 50: 208.
    assert [m.split(" exceeds")[0] for m in messages] == [
        "208 characters of property, definition and enum names",
        "3 enum values in total",
        "3 levels of object nesting",
        "9 object properties in total",
    ]
    _, roomy = compile_openai_strict(
        schema,
        limits=OpenAIStrictLimits(
            max_properties=9, max_depth=3, max_total_chars=208, max_enum_values=3
        ),
    )
    assert roomy.strict is True, roomy.strict_blockers


def test_strict_large_enum_warnings_come_in_document_order() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "enum": [f"a{i:03d}" for i in range(6)]},
            "b": {"anyOf": [{"type": "string", "enum": [f"bb{i:03d}" for i in range(7)]}]},
        },
        "required": ["a", "b"],
    }
    limits = OpenAIStrictLimits(large_enum_size=5, max_large_enum_chars=10)
    _, report = compile_openai_strict(schema, limits=limits)
    enums = [c.message for c in report.strict_blockers if "string enum" in c.message]
    assert [m.split(" values")[0] for m in enums] == [
        "a string enum with 6",
        "a string enum with 7",
    ]


def test_strict_nesting_limit() -> None:
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        inner = {"type": "object", "properties": {"x": inner}, "required": ["x"]}
    _, report = compile_openai_strict(inner)
    assert any("11 levels" in c.message for c in report.strict_blockers)
    _, ok = compile_openai_strict(inner, limits=OpenAIStrictLimits(max_depth=11))
    assert ok.strict is True


@pytest.mark.parametrize(
    ("schema", "limit", "levels"),
    [
        # The root entered again through "#": two object nodes, four levels deep.
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "properties": {"a": {"$ref": "#"}}}},
            },
            2,
            4,
        ),
        # A reference to a node that is not a definition, on the path to itself: two
        # object nodes, three levels.
        (
            {
                "type": "object",
                "properties": {
                    "x": {"type": "object", "properties": {"y": {"$ref": "#/properties/x"}}}
                },
            },
            2,
            3,
        ),
    ],
)
def test_strict_depth_is_walked_whenever_the_node_count_cannot_bound_it(
    schema: dict[str, Any], limit: int, levels: int
) -> None:
    # The depth walk is skipped only when no path can be longer than the count of object
    # nodes (every $ref names a root definition). Each schema here has no more object
    # nodes than the limit and a path longer than it: only the walk finds it.
    _, report = compile_openai_strict(schema, limits=OpenAIStrictLimits(max_depth=limit))
    depth = [c.message for c in report.strict_blockers if "levels of object nesting" in c.message]
    assert [m.split(" levels")[0] for m in depth] == [str(levels)]


def test_strict_depth_through_definitions_is_bounded_without_the_walk() -> None:
    # Definitions reached by reference, the deepest path within the count: within the
    # limit when the count is, over it when the path is.
    leaf = {"type": "object", "properties": {"v": {"type": "integer"}}}
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"type": "object", "properties": {"l": {"$ref": "#/$defs/L"}}}, "L": leaf},
    }
    _, within = compile_openai_strict(schema, limits=OpenAIStrictLimits(max_depth=3))
    assert within.strict is True, within.strict_blockers
    _, over = compile_openai_strict(schema, limits=OpenAIStrictLimits(max_depth=2))
    assert any("3 levels of object nesting" in c.message for c in over.strict_blockers)


def test_strict_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="strict_mode must be"):
        compile_openai_strict({"type": "object"}, strict_mode="yes")  # type: ignore[arg-type]


# -- Gemini parameters ------------------------------------------------------------------------


def test_gemini_inlines_refs_and_keeps_nullable_object_properties() -> None:
    # litellm#19029: the properties of an Optional[Model] must survive.
    out, report = compile_gemini(_tool(t_nested).input_schema)
    assert_gemini_subset(out)
    when = out["properties"]["when"]
    assert when["nullable"] is True
    assert "object" == when["type"]
    assert {"start", "inclusive"} == set(when["properties"])
    assert ["start"] == when["required"]
    assert {"type": "string", "enum": ["red", "green"]}.items() <= out["properties"][
        "color"
    ].items()
    assert ("/properties/when", "rewrote_nullable", "info") in kinds(report)
    assert ("/properties/when/anyOf/0", "inlined_ref", "info") in kinds(report)
    # The only loss: the root's additionalProperties: false (extra keys now pass).
    assert [("", "open_object")] == [(c.path, c.kind) for c in report.warnings]


def test_gemini_refuses_a_recursive_model_it_would_cut_into_an_empty_object() -> None:
    # Cut short, the recursion was an OBJECT with no properties: Gemini refuses the request.
    with pytest.raises(SchemaCompileError, match="parametersJsonSchema") as caught:
        compile_gemini(_tool(t_tree).input_schema)
    assert "#/$defs/Node/properties/children/items" in str(caught.value)


def test_gemini_cuts_a_recursion_that_is_not_an_object() -> None:
    schema = {
        "type": "object",
        "properties": {"nested": {"$ref": "#/$defs/L"}},
        "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}},
    }
    out, report = compile_gemini(schema)
    assert_gemini_subset(out)
    assert "array" == out["properties"]["nested"]["type"]
    cut = change(report, "/$defs/L/items", "cut_recursion")
    assert "warning" == cut.severity
    assert "parametersJsonSchema" in cut.message


@pytest.mark.parametrize(
    "sub",
    [
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": "object", "additionalProperties": True},
        {"type": "object"},
        {"type": "object", "properties": {}, "additionalProperties": False},
    ],
    ids=["map", "any-map", "untyped-object", "empty-model"],
)
def test_gemini_parameters_never_holds_an_object_without_properties(sub: Any) -> None:
    with pytest.raises(SchemaCompileError, match="OBJECT with no properties"):
        compile_gemini({"type": "object", "properties": {"x": sub}})
    if sub.get("additionalProperties") in (None, False):
        out, _ = compile_gemini(sub)  # a root without arguments is a tool without parameters
        assert "properties" not in out
    else:
        with pytest.raises(SchemaCompileError, match="OBJECT with no properties"):
            compile_gemini(sub)


def test_gemini_drops_what_it_rejects() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "T",
        "additionalProperties": False,
        "properties": {
            "k": {"const": "fixed", "title": "K"},
            "n": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2, "default": 4},
            "s": {"type": "string", "format": "email", "minLength": 1},
            "d": {"type": "string", "format": "date-time"},
        },
    }
    out, report = compile_gemini(schema)
    assert_gemini_subset(out)
    assert {"type": "string", "enum": ["fixed"]} == out["properties"]["k"]
    n = out["properties"]["n"]
    assert 1 == n["minimum"]
    assert "default: 4" in n["description"]
    assert "multipleOf: 2" in n["description"]
    assert "format: email" in out["properties"]["s"]["description"]
    assert "date-time" == out["properties"]["d"]["format"]
    assert ("/properties/s", "lost_constraint", "warning") in kinds(report)  # minLength
    email = [c for c in report.changes if c.path == "/properties/s" and "email" in c.message]
    assert ["warning"] == [c.severity for c in email]  # widens: any string passes
    assert ("", "open_object", "warning") in kinds(report)
    assert ("/properties/n", "rewrote_bound", "info") in kinds(report)


def test_gemini_non_string_enums_move_to_the_description() -> None:
    out, report = compile_gemini(_tool(t_literal_int).input_schema)
    assert_gemini_subset(out)
    mode = out["properties"]["mode"]
    assert "integer" == mode["type"]
    assert "one of: 1, 2, 3" in mode["description"]
    assert "warning" == change(report, "/properties/mode", "rewrote_enum").severity


def test_gemini_type_list_and_union() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "c": {"enum": ["x", None]},
        },
    }
    out, _ = compile_gemini(schema)
    assert_gemini_subset(out)
    assert {"type": "string", "nullable": True} == out["properties"]["a"]
    assert [
        {"type": "string", "nullable": True},
        {"type": "integer", "nullable": True},
    ] == out["properties"]["b"]["anyOf"]
    assert {"type": "string", "enum": ["x"], "nullable": True} == out["properties"]["c"]


def test_gemini_empty_tool_has_no_empty_properties() -> None:
    out, report = compile_gemini(_tool(t_empty).input_schema)
    assert {"type": "object"} == out
    assert ("", "empty_parameters", "info") in kinds(report)


def test_gemini_tuple_becomes_items_any_of() -> None:
    def f(pair: tuple[int, str]) -> str:
        return ""

    out, report = compile_gemini(tool_fn(f).input_schema)
    assert_gemini_subset(out)
    pair = out["properties"]["pair"]
    assert [{"type": "integer"}, {"type": "string"}] == pair["items"]["anyOf"]
    assert (2, 2) == (pair["minItems"], pair["maxItems"])
    assert "warning" == change(report, "/properties/pair", "lost_constraint").severity


# -- Gemini parametersJsonSchema and the chooser ----------------------------------------------


def test_gemini_json_schema_keeps_refs_maps_and_recursion() -> None:
    for fn in (t_tree, t_map, t_nested):
        schema = _tool(fn).input_schema
        out, report = compile_gemini_json_schema(schema)
        assert report.lossless
        assert "parametersJsonSchema" == report.target
        assert schema == out
    out, report = compile_gemini_json_schema(_tool(t_literal_int).input_schema)
    assert {"enum": [True], "type": "boolean"}.items() <= out["properties"]["flag"].items()
    assert ("/properties/flag", "rewrote_const", "info") in kinds(report)


def test_gemini_json_schema_strips_what_pydantic_ai_strips() -> None:
    schema = {
        "$schema": "x",
        "type": "object",
        "title": "T",
        "properties": {
            "title": {"type": "string", "title": "Title", "format": "email", "examples": ["a"]},
            "n": {"type": "number", "exclusiveMaximum": 1.5},
        },
    }
    out, report = compile_gemini_json_schema(schema)
    assert {"type": "string", "description": "(format: email)"} == out["properties"]["title"]
    assert "$schema" not in out
    assert "title" not in out
    assert 1.5 == out["properties"]["n"]["maximum"]
    assert "warning" == change(report, "/properties/n", "lost_constraint").severity


def test_chooser() -> None:
    tree = _tool(t_tree).input_schema
    assert "parametersJsonSchema" == choose_gemini_schema(tree)[0]
    with pytest.raises(SchemaCompileError):
        choose_gemini_schema(tree, json_schema_supported=False)
    nested = _tool(t_nested).input_schema
    target, out, report = choose_gemini_schema(nested, json_schema_supported=False)
    assert "parameters" == target
    assert_gemini_subset(out)
    assert not report.lossless
    lossy_js = {"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 0}}}
    target, _, report = choose_gemini_schema(lossy_js)
    assert "parametersJsonSchema" == target  # both lose the bound; JSON Schema is preferred
    # JSON Schema is lossy and parameters cannot carry the map at all: JSON Schema it is.
    lossy_map = {
        "type": "object",
        "properties": {
            "n": {"type": "number", "exclusiveMinimum": 0},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    }
    assert "parametersJsonSchema" == choose_gemini_schema(lossy_map)[0]
    compiled = compile_for(_tool(t_nested), "gemini", options=CompileOptions(target="parameters"))
    assert "parameters" == compiled.target
    assert_gemini_subset(compiled.schema)
    with pytest.raises(SchemaCompileError):
        compile_for(_tool(t_tree), "gemini", options=CompileOptions(target="parameters"))


# -- Anthropic ----------------------------------------------------------------------------


def test_anthropic_is_json_schema_with_an_object_root() -> None:
    schema = _tool(t_tree).input_schema
    _out, report = compile_anthropic(schema)
    assert report.lossless
    assert "input_schema" == report.target
    assert {"type": "object", "properties": {}} == compile_anthropic({})[0]
    with_schema, r = compile_anthropic({"$schema": "x", "properties": {"a": {"type": "string"}}})
    assert {"type": "object", "properties": {"a": {"type": "string"}}} == with_schema
    assert {"removed_keyword", "added_type"} == {c.kind for c in r.changes}


def test_root_ref_is_inlined_and_keeps_properties() -> None:
    # pydantic's schema for a recursive root model: {"$defs": ..., "$ref": ..., "properties": {}}
    schema = tool_fn_for_model(Node)
    assert "$ref" in schema
    for compile_ in (compile_anthropic, compile_gemini_json_schema):
        out, report = compile_(schema)
        assert {"value", "children", "parent"} == set(out["properties"])
        assert ("", "inlined_ref", "info") in kinds(report)
    strict, _ = compile_openai_strict(schema)
    assert_openai_strict_valid(strict)
    assert {"value", "children", "parent"} == set(strict["properties"])


def tool_fn_for_model(model: type[BaseModel]) -> dict[str, Any]:
    from toolwire._schema.neutral import model_schema

    return model_schema(model)


# -- every compiler keeps keyword-named properties ------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_keyword_named_properties_survive(provider: str) -> None:
    tool = _tool(t_keywords)
    for target in ("parameters", "parametersJsonSchema"):
        compiled = compile_for(tool, provider, options=CompileOptions(target=target))
        schema = compiled.schema
        assert {"k", "title", "default"} == set(schema["properties"])
        k = schema["properties"]["k"]
        if "$ref" in json.dumps(k):
            k = schema["$defs"]["Keywords"]
        assert {"title", "default", "properties", "type"} == set(k["properties"])
        if provider == "gemini" and target == "parameters":
            assert_gemini_subset(schema)
        if compiled.strict:
            assert_openai_strict_valid(schema)


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string"}, "needs an object schema at the root"),
        ({"anyOf": [{"type": "object"}]}, "wrap the union in a property"),
        ({"type": "object", "properties": {"a": {"$ref": "other.json"}}}, "not a local reference"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, "does not resolve"),
        ({"type": "object", "properties": {"a": False}}, "is `false`"),
        ({"type": "object", "properties": {"a": {"type": "text"}}}, "unknown type 'text'"),
        (["not", "a", "dict"], "must be a JSON object"),
    ],
)
def test_uncompilable_schemas_raise_a_documented_error(schema: Any, message: str) -> None:
    for compile_ in (compile_openai_strict, compile_gemini):
        with pytest.raises(SchemaCompileError, match=message) as info:
            compile_(schema)
        assert isinstance(info.value, ToolDefinitionError)
    if "type" not in message and "false" not in message:
        with pytest.raises(SchemaCompileError, match=message):
            compile_gemini_json_schema(schema)


def test_the_first_bad_reference_in_document_order_is_the_one_named() -> None:
    # References are checked on a walk without pointers first; when it finds a problem,
    # the walk with pointers names the first one, in every compiler (here: under `not`,
    # which strict mode does not walk into, before a bad one under a later property).
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"not": {"$ref": "#/$defs/Missing"}},
            "c": {"$ref": "remote.json"},
            "d": 7,
        },
    }
    expected = "$ref '#/$defs/Missing' at #/properties/b/not does not resolve"
    for compile_ in (compile_openai_strict, compile_gemini, compile_gemini_json_schema):
        with pytest.raises(SchemaCompileError) as info:
            compile_(schema)
        assert str(info.value).startswith(expected), (compile_, info.value)
    del schema["properties"]["b"]  # type: ignore[attr-defined]
    with pytest.raises(SchemaCompileError, match=r"\$ref 'remote.json' at #/properties/c is not"):
        compile_openai_strict(schema)


def test_check_tools_reports_a_failed_tool_and_goes_on() -> None:
    bad = raw_tool("bad", "d", {"type": "object", "properties": {"a": {"$ref": "#/$defs/X"}}})
    good = _tool(t_defaults)
    reports = check_for([bad, good], "openai")
    assert ["bad", "t_defaults"] == [r.tool for r in reports]
    assert "compile_error" == reports[0].changes[0].kind
    assert "error" == reports[0].changes[0].severity
    assert not reports[0].lossless
    assert reports[1].lossless


# -- registry and cache ---------------------------------------------------------------------------


def test_every_provider_registers_its_compiler() -> None:
    from toolwire import PluginHost

    host = PluginHost()
    registered = host.schema_compilers()
    assert {name: COMPILERS[name] for name in PROVIDERS} == {
        name: registered[name] for name in PROVIDERS
    }
    assert GEMINI is host.schema_compiler("gemini")


def test_compile_tool_takes_a_compiler_not_a_name() -> None:
    with pytest.raises(UsageError, match=r"must be a toolwire\.schema\.SchemaCompiler, got str"):
        compile_tool(_tool(t_empty), "openai")  # type: ignore[arg-type]


def test_a_compiler_of_ones_own_is_used_as_is() -> None:
    def mine(schema: Any, tool: str, options: CompileOptions) -> CompiledTool:
        return CompiledTool(tool, dict(schema), None, CompileReport(tool, "mine"))

    compiler = SchemaCompiler("mine", mine)
    assert "mine" == compile_tool(_tool(t_empty), compiler).report.provider
    assert compile_tool(_tool(t_empty), compiler) is not compile_for(_tool(t_empty), "openai")


def test_compile_tool_caches_per_provider_and_options() -> None:
    tool = _tool(t_map)
    first = compile_for(tool, "openai")
    assert first is compile_for(tool, "openai")
    forced = compile_for(tool, "openai", options=CompileOptions(strict=True))
    assert forced is not first
    assert (False, True) == (first.strict, forced.strict)
    assert compile_for(tool, "openai-responses") is not first
    assert 3 == len(tool.cache)


def test_renamed_view_has_its_own_cache_and_name() -> None:
    tool = _tool(t_defaults)
    compile_for(tool, "openai")
    view = tool.renamed("ns_t_defaults")
    compiled = compile_for(view, "openai")
    assert "ns_t_defaults" == compiled.report.tool == compiled.name
    assert "t_defaults" == compile_for(tool, "openai").report.tool
    assert 1 == len(view.cache)


def test_compile_tool_accepts_defs_and_resolved_tools() -> None:
    tool = _tool(t_defaults)
    from_def = compile_for(tool.definition, "anthropic")
    from_resolved = compile_for(ResolvedTool(tool, "other description"), "anthropic")
    assert from_def.schema == from_resolved.schema
    assert from_resolved is compile_for(tool, "anthropic")
    with pytest.raises(TypeError, match="wrap it with tool_fn"):
        compile_for(t_defaults, "openai")  # type: ignore[arg-type]


def test_openai_compatible_providers_default_to_no_strict() -> None:
    tool = _tool(t_defaults)
    assert compile_for(tool, "openai").strict is True
    for provider in ("openrouter", "openai-compatible"):
        compiled = compile_for(tool, provider)
        assert compiled.strict is False
        assert compiled.schema == tool.input_schema
        assert compile_for(tool, provider, options=CompileOptions(strict="auto")).strict


def test_restore_arguments_only_when_strict_made_fields_nullable() -> None:
    tool = _tool(t_defaults)
    strict = compile_for(tool, "openai")
    assert strict.restores_defaults
    assert {"query": "q"} == strict.restore_arguments({"query": "q", "verbose": None})
    loose = compile_for(tool, "openrouter")
    assert not loose.restores_defaults
    args = {"query": "q", "verbose": None}
    assert args is loose.restore_arguments(args)


def test_format_report() -> None:
    reports = check_for([_tool(t_map), _tool(t_defaults)], "openai")
    text = format_report(reports)
    assert "tool `t_map` for openai (parameters, strict: off): lossless" in text
    assert "strict mode is off because strict mode would lose:" in text
    assert "#/properties/weights free_form_map:" in text
    assert "tool `t_defaults` for openai (parameters, strict: on): lossless" in text
    assert "made_required_nullable" not in text
    assert "made_required_nullable" in format_report(reports, verbose=True)
    assert text.endswith("2 tools checked for openai: 2 lossless, 0 with warnings, 0 failed")
    gemini = format_report(
        check_for([_tool(t_tree)], "gemini", options=CompileOptions(target="parameters"))
    )
    assert "tool `t_tree` for gemini (parameters): cannot be compiled" in gemini
    assert "OBJECT with no properties" in gemini
    assert gemini.endswith("1 tool checked for gemini: 0 lossless, 0 with warnings, 1 failed")


# -- property-based: random schemas from a small grammar ------------------------------------------

_NAMES = st.sampled_from(["a", "b", "title", "default", "properties", "type", "$ref", "x/y"])
_PRIMITIVE = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {},
        {"type": "string", "minLength": 1, "maxLength": 5},
        {"type": "string", "pattern": "^a"},
        {"type": "string", "format": "uri"},
        {"type": "string", "format": "date-time"},
        {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
        {"type": "number", "exclusiveMinimum": 0.5, "multipleOf": 0.5},
        {"type": "string", "enum": ["a", "b"]},
        {"enum": [1, 2, None]},
        {"const": "c"},
        {"const": 3},
        {"type": ["string", "null"]},
        {"type": ["integer", "string"]},
        {"type": "string", "nullable": True},
        {"$ref": "#/$defs/D"},
        {"$ref": "#"},
        {"type": "string", "default": "d", "title": "T", "examples": ["e"]},
    ]
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    props = st.dictionaries(_NAMES, children, max_size=4)

    @st.composite
    def obj(draw: st.DrawFn) -> dict[str, Any]:
        p = draw(props)
        node: dict[str, Any] = {"type": "object", "properties": p}
        node["required"] = draw(st.lists(st.sampled_from(sorted(p) or ["a"]), unique=True))
        extra = draw(st.sampled_from([None, False, True, {"type": "integer"}]))
        if extra is not None:
            node["additionalProperties"] = extra
        if draw(st.booleans()):
            node["description"] = "an object"
        return node

    return st.one_of(
        obj(),
        st.builds(lambda c: {"type": "array", "items": c}, children),
        st.builds(lambda c: {"type": "array", "items": c, "uniqueItems": True}, children),
        st.builds(lambda a, b: {"type": "array", "prefixItems": [a, b]}, children, children),
        st.builds(lambda c: {"anyOf": [c, {"type": "null"}], "default": None}, children),
        st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
        st.builds(lambda a, b: {"oneOf": [a, b]}, children, children),
        st.builds(lambda c: {"allOf": [c], "description": "d"}, children),
        st.builds(lambda c: {"$ref": "#/$defs/D", "description": "ref", "default": {}}, children),
    )


_SCHEMA = st.recursive(_PRIMITIVE, _extend, max_leaves=12)


@st.composite
def root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(_NAMES, _SCHEMA, max_size=5))
    definition = draw(_SCHEMA)
    root: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": draw(st.lists(st.sampled_from(sorted(props) or ["a"]), unique=True)),
        "$defs": {"D": definition},
    }
    if draw(st.booleans()):
        root["additionalProperties"] = False
    return root


@settings(max_examples=200, deadline=None)
@given(root_schemas())
def test_random_schemas_compile_into_valid_subsets(schema: dict[str, Any]) -> None:
    before = json.dumps(schema, sort_keys=True)
    try:
        forced, forced_report = compile_openai_strict(schema, strict_mode=True)
    except SchemaCompileError:
        return
    assert_openai_strict_valid(forced)
    auto, auto_report = compile_openai_strict(schema)
    if auto_report.strict:
        assert_openai_strict_valid(auto)
        assert auto_report.lossless
    else:
        assert auto_report.strict_blockers
    try:
        gemini, gemini_report = compile_gemini(schema)
    except SchemaCompileError as exc:
        refused = str(exc)  # only for an object Gemini would refuse without properties
        gemini_report = forced_report
    else:
        refused = "OBJECT with no properties"
        assert_gemini_subset(gemini)
    assert "OBJECT with no properties" in refused
    js, _ = compile_gemini_json_schema(schema)
    jsonschema.Draft202012Validator.check_schema(js)
    anthropic, anthropic_report = compile_anthropic(schema)
    assert anthropic_report.lossless
    assert "object" == anthropic["type"]
    for report in (forced_report, gemini_report):
        for c in report.changes:
            assert c.severity in ("info", "warning")
            assert c.message
    assert before == json.dumps(schema, sort_keys=True), "the input schema was modified"


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=3),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(_NAMES, c, max_size=3),
        max_leaves=10,
    )
)
def test_strip_strict_nulls_never_raises(value: Any) -> None:
    schema = _tool(t_nested).input_schema
    args = value if isinstance(value, dict) else {"where": value}
    out = strip_strict_nulls(args, schema)
    assert isinstance(out, dict)
    assert set(out) <= set(args)


# -- official SDK types (the provider-tests dependency group) -------------------------------------


def _sdk_tools() -> list[Tool[Any, Any]]:
    extra = [t_nested, t_defaults, t_map, t_tree, t_keywords, t_empty, t_literal_int, t_constraints]
    return [tool_fn(f) for f in (*FIXTURE_FUNCTIONS, *extra)]


def test_openai_sdk_accepts_the_tool_params() -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.responses import FunctionToolParam

    chat = TypeAdapter(ChatCompletionToolParam)
    responses = TypeAdapter(FunctionToolParam)
    for tool in _sdk_tools():
        for strict_mode in ("auto", True):
            compiled = compile_for(tool, "openai", options=CompileOptions(strict=strict_mode))
            function = {
                "name": tool.name,
                "description": tool.description,
                "parameters": compiled.schema,
                "strict": compiled.strict,
            }
            chat.validate_python({"type": "function", "function": function})
            responses.validate_python({"type": "function", **function})


def test_google_genai_sdk_accepts_the_declarations() -> None:
    pytest.importorskip("google.genai")
    from google.genai import types

    for tool in _sdk_tools():
        try:
            params, _ = compile_gemini(tool.input_schema)
        except SchemaCompileError:
            pass  # refused: it would be a request Gemini rejects
        else:
            declaration = types.FunctionDeclaration.model_validate(
                {"name": tool.name, "description": tool.description, "parameters": params}
            )
            assert declaration.parameters is not None
        js, _ = compile_gemini_json_schema(tool.input_schema)
        types.FunctionDeclaration.model_validate(
            {"name": tool.name, "description": tool.description, "parametersJsonSchema": js}
        )


def test_google_genai_sdk_rejects_what_the_subset_checker_rejects() -> None:
    pytest.importorskip("google.genai")
    import pydantic
    from google.genai import types

    with pytest.raises(pydantic.ValidationError):
        types.Schema.model_validate({"type": "object", "$defs": {}})


def test_anthropic_sdk_accepts_the_tool_params() -> None:
    pytest.importorskip("anthropic")
    from anthropic.types import ToolParam

    adapter = TypeAdapter(ToolParam)
    for tool in _sdk_tools():
        compiled = compile_for(tool, "anthropic")
        adapter.validate_python(
            {"name": tool.name, "description": tool.description, "input_schema": compiled.schema}
        )


def test_compile_options_are_provider_neutral_and_read_the_0_1_names_with_a_warning() -> None:
    assert CompileOptions() == CompileOptions(None, "auto", None)
    with pytest.warns(DeprecationWarning, match=r"strict_mode=\.\.\.\) is deprecated; use strict="):
        CompileOptions(strict_mode=True)
    with pytest.warns(DeprecationWarning, match="is deprecated") as caught:
        old = CompileOptions(strict_mode=True, gemini_target="parameters")
    assert len(caught) == 2
    assert old == CompileOptions(strict=True, target="parameters")
    with pytest.warns(DeprecationWarning, match=r"read \.target"):
        assert old.gemini_target == "parameters"
    with pytest.raises(UsageError, match="unexpected keyword argument 'strictt'"):
        CompileOptions(strictt=True)
    with pytest.raises(UsageError, match="strict must be"):
        CompileOptions(strict="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="limits must be hashable"):
        CompileOptions(limits={"max_depth": 3})  # type: ignore[arg-type]


def test_each_compiler_checks_the_options_it_reads() -> None:
    tool = raw_tool("t", "", {"type": "object", "properties": {"a": {"type": "string"}}})
    with pytest.raises(UsageError, match="OpenAIStrictLimits, got tuple"):
        compile_for(tool, "openai", options=CompileOptions(limits=(1, 2)))
    with pytest.raises(UsageError, match="target for gemini must be"):
        compile_for(tool, "gemini", options=CompileOptions(target="input_schema"))
    limited = compile_for(
        tool,
        "openai",
        options=CompileOptions(strict=True, limits=OpenAIStrictLimits(max_properties=0)),
    )
    assert [c.kind for c in limited.report.changes if c.kind == "limit_exceeded"]
