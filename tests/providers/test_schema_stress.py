"""Schema stress: a schema ``toolwire check`` calls lossless accepts what the tool accepts.

For every provider and target, every tool of the benchmark fixture and a set of
hard shapes (maps, recursion, unions, discriminated unions, tuples, sets,
formats, bounds, Decimal) is compiled; then a sample of arguments (a canonical
valid instance built from the tool's own schema, and single-point mutations of
it: wrong types, values past each bound, bad formats, extra and missing keys,
duplicates, swapped tuple positions) is judged twice, by the compiled schema
(what the provider constrains the model to) and by the tool (what it accepts).

When the report is lossless:

- nothing the compiled schema accepts is refused by the tool (the schema did
  not widen), and
- every canonical valid instance is accepted by the compiled schema (with the
  nulls OpenAI strict mode asks for in place of omitted optional fields).

Gemini's ``parameters`` schemas (an OpenAPI subset) are judged after turning
``nullable`` back into JSON Schema. A target that cannot carry a tool must
refuse it (``SchemaCompileError``), never report it lossless.

A workspace test: it needs the three provider distributions installed.
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import re
import uuid
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from _by_path import load
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolwire import raw_tool, tool_fn
from toolwire._tools import Tool
from toolwire.exceptions import SchemaCompileError
from toolwire.schema import CompiledTool, CompileOptions, check_tools, compile_tool, resolve_ref
from toolwire_anthropic._schema import COMPILER as ANTHROPIC
from toolwire_gemini._schema import COMPILER as GEMINI
from toolwire_openai._schema import COMPILERS as OPENAI

# -- the hard shapes --------------------------------------------------------------------------


class Color(str, enum.Enum):
    red = "red"
    green = "green"


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: Annotated[int, Field(ge=1, le=9)]


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=2, max_length=8, pattern=r"^[a-z]+$")]
    note: str | None = None


class Point(BaseModel):
    x: float
    y: float


class Label(BaseModel):
    text: str


def maps(weights: dict[str, int], nested: dict[str, Point] | None = None) -> str:
    """Maps, with scalar and model values."""
    return ""


def tree(root: Node, depth: int = 1) -> str:
    """A recursive model."""
    return ""


def unions(value: int | str, shape: Point | Label, maybe: float | None = None) -> str:
    """Plain unions and an optional."""
    return ""


def pets(
    pet: Annotated[Cat | Dog, Field(discriminator="kind")], many: tuple[Cat | Dog, ...] = ()
) -> str:
    """A discriminated union, and a plain union in a list."""
    return ""


def shapes(
    pair: tuple[int, str], coords: tuple[float, ...], tags: set[str], ids: frozenset[int]
) -> str:
    """Tuples and sets."""
    return ""


def formats(
    when: dt.datetime, day: dt.date, at: dt.time, key: uuid.UUID, span: dt.timedelta | None = None
) -> str:
    """String formats."""
    return ""


def bounds(
    count: Annotated[int, Field(ge=1, le=10)],
    ratio: Annotated[float, Field(gt=0.0, lt=1.0)],
    step: Annotated[int, Field(multiple_of=5)],
    word: Annotated[str, Field(min_length=2, max_length=5)],
    items: Annotated[list[int], Field(min_length=1, max_length=3)],
    strict: Strict,
    level: Literal[1, 2, 3] = 1,
    color: Color = Color.red,
) -> str:
    """Bounds, lengths, a pattern, integer literals and an enum."""
    return ""


def money(amount: Decimal, price: Annotated[Decimal, Field(max_digits=5, decimal_places=2)]) -> str:
    """Decimals."""
    return ""


HARD = [maps, tree, unions, pets, shapes, formats, bounds, money]


def _fixture_functions() -> list[Any]:
    return list(load("_stress_fixture_tools", Path("bench/fixture_tools.py")).TOOL_FUNCTIONS)


def _open(tool: Tool[Any, Any]) -> Tool[Any, Any]:
    """The same shape as a raw tool that takes extra keys at the root (Gemini's
    ``parameters`` cannot refuse them, so only such a tool can compile losslessly there)."""
    schema = {k: v for k, v in tool.input_schema.items() if k != "additionalProperties"}
    return raw_tool(f"{tool.name}_open", tool.description, schema)


TOOLS: list[Tool[Any, Any]] = [tool_fn(f) for f in (*HARD, *_fixture_functions())]
TOOLS += [_open(t) for t in TOOLS[: len(HARD)]]

# Every provider and target: (id, compiler, options).
TARGETS = [
    *(
        (f"{name}-strict-{strict}", compiler, CompileOptions(strict=strict))
        for name, compiler in sorted(OPENAI.items())
        for strict in ("auto", True, False)
    ),
    ("anthropic", ANTHROPIC, CompileOptions()),
    *(
        (f"gemini-{target}", GEMINI, CompileOptions(target=target))
        for target in ("auto", "parameters", "parametersJsonSchema")
    ),
]


# -- judging with a JSON Schema validator ------------------------------------------------------

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(
    r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$"
)
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    dt.datetime.fromisoformat(value.replace("z", "+00:00").replace("Z", "+00:00"))
    return True


_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@FORMATS.checks("time", raises=ValueError)
def _is_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _TIME.match(value):
        return False
    dt.time.fromisoformat(value.replace("z", "+00:00").replace("Z", "+00:00"))
    return True


@FORMATS.checks("duration")
def _is_duration(value: object) -> bool:
    return not isinstance(value, str) or _DURATION.match(value) is not None


def _from_openapi(node: Any) -> Any:
    """Gemini's ``parameters`` schema as JSON Schema: ``nullable`` becomes a null branch."""
    if isinstance(node, list):
        return [_from_openapi(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out = {
        k: _from_openapi(v) for k, v in node.items() if k not in ("nullable", "propertyOrdering")
    }
    if out.get("format") == "enum":
        del out["format"]
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def validator(compiled: CompiledTool) -> jsonschema.protocols.Validator:
    gemini_subset = compiled.target == "parameters" and compiled.report.provider == "gemini"
    schema = _from_openapi(compiled.schema) if gemini_subset else compiled.schema
    return jsonschema.Draft202012Validator(schema, format_checker=FORMATS)


def tool_accepts(tool: Tool[Any, Any], args: Any) -> bool:
    if not isinstance(args, dict):
        return False
    try:
        tool.validate_python(args)
    except ValidationError:
        return False
    return True


# -- samples -------------------------------------------------------------------------------------


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with its ``$ref`` followed (toolwire's own resolver), siblings on top."""
    for _ in range(50):
        if "$ref" not in node:
            break
        target, _pointer = resolve_ref(root, node["$ref"], "")
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


_STRINGS = ["abc", "a", "hello", "A1", "x-y", "2024-05-06", "hello world", "123", ""]
_FORMAT_VALUES = {
    "date-time": ("2024-05-06T07:08:09Z", "yesterday at noon"),
    "date": ("2024-05-06", "2024-13-45"),
    "time": ("07:08:09Z", "25:99"),
    "uuid": ("12345678-1234-5678-1234-567812345678", "not-a-uuid"),
    "duration": ("P1DT2H", "two days"),
}


def _string(node: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    fmt = node.get("format")
    if fmt in _FORMAT_VALUES:
        good, bad = _FORMAT_VALUES[fmt]
        return good, [bad, "", 5]
    lo, hi = node.get("minLength", 0), node.get("maxLength", 10_000)
    pattern = node.get("pattern")
    fits = [
        s for s in _STRINGS if lo <= len(s) <= hi and (pattern is None or re.search(pattern, s))
    ]
    base = fits[0] if fits else "a" * max(lo, 1)
    others = ["", "a" * (hi + 1) if hi < 10_000 else "b" * 300, "ABC-1", 5, None, ["x"]]
    if lo:
        others.append("a" * (lo - 1))
    return base, others


def _number(node: Mapping[str, Any], integer: bool) -> tuple[Any, list[Any]]:
    step = node.get("multipleOf")
    lo = node.get("minimum", node.get("exclusiveMinimum"))
    hi = node.get("maximum", node.get("exclusiveMaximum"))
    if lo is not None:
        base = lo if "minimum" in node else lo + (1 if integer else (((hi or lo + 1) - lo) / 2))
    elif hi is not None:
        base = hi if "maximum" in node else hi - 1
    else:
        base = 3 if integer else 0.5
    if step:
        base = step * max(1, round(base / step))
    others: list[Any] = [0, -1, 0.5, 10**12, "7", True, None]
    for bound in (lo, hi):
        if bound is not None:
            others += [bound, bound - 1, bound + 1, bound - 0.5, bound + 0.5]
    if step:
        others += [base + 1, base + step]
    if integer:
        base = int(base)
    return base, others


def _array(root: Mapping[str, Any], node: Mapping[str, Any], depth: int) -> tuple[Any, list[Any]]:
    prefix = node.get("prefixItems")
    if isinstance(prefix, list):
        base = [canonical(root, p, depth + 1) for p in prefix]
        return base, [base[::-1], base[:-1], [*base, base[-1]], []]
    item_schema = node.get("items") if isinstance(node.get("items"), Mapping) else {}
    item = canonical(root, item_schema, depth + 1)
    lo = node.get("minItems", 1 if depth < 3 else 0)
    hi = node.get("maxItems")
    count = min(max(lo, 1 if depth < 3 else 0), hi if hi is not None else 2)
    base = (
        _distinct(root, item_schema, item, count, depth)
        if node.get("uniqueItems")
        else [item] * count
    )
    others: list[Any] = [[], [item, item], [item] * ((hi or 3) + 1), "x", [None], {"a": item}]
    return base, others


def _distinct(
    root: Mapping[str, Any], node: Mapping[str, Any], item: Any, count: int, depth: int
) -> list[Any]:
    pool = [item, *(v for v in alternatives(root, node, depth + 1) if v != item)]
    out: list[Any] = []
    for value in pool:
        if len(out) == count:
            break
        if value not in out and type(value) is type(item):
            out.append(value)
    return out


def _object(root: Mapping[str, Any], node: Mapping[str, Any], depth: int) -> tuple[Any, list[Any]]:
    props: Mapping[str, Any] = node.get("properties") or {}
    required = list(node.get("required") or ())
    extra = node.get("additionalProperties")
    base = {
        name: canonical(root, sub, depth + 1)
        for name, sub in props.items()
        if name in required or depth < 3
    }
    if not props and isinstance(extra, Mapping):
        base = {"k": canonical(root, extra, depth + 1)}
    others: list[Any] = [{}, "x", [], None, {**base, "zz_extra": 1}, {**base, "zz_extra": "v"}]
    if required:
        others.append({k: v for k, v in base.items() if k != required[0]})
    return base, others


def _candidates(root: Mapping[str, Any], node: Any, depth: int) -> tuple[Any, list[Any]]:
    """A canonical (likely valid) value for ``node`` and alternatives to mutate it to."""
    if not isinstance(node, Mapping) or not node:
        return "any", [None, 1, {}, []]
    node = _resolve(root, node)
    if "const" in node:
        return node["const"], ["zz-other", None]
    if "enum" in node:
        return node["enum"][0], [*node["enum"][1:], "zz-not-in-enum", None, 99]
    for key in ("anyOf", "oneOf"):
        if key in node:
            branches = [b for b in node[key] if _resolve(root, b).get("type") != "null"] or node[
                key
            ]
            base = canonical(root, branches[0], depth)
            others = [canonical(root, b, depth) for b in node[key][1:]]
            for b in node[key]:
                others += alternatives(root, b, depth)
            return base, others
    if "allOf" in node:
        return _candidates(
            root, {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}, depth
        )
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((t for t in kind if t != "null"), "null")
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        return _number(node, kind == "integer")
    if kind == "boolean":
        return True, ["true", 1, None]
    if kind == "null":
        return None, [0, ""]
    if kind == "array":
        return _array(root, node, depth)
    if kind == "object" or "properties" in node:
        return _object(root, node, depth)
    return "any", [None, 1, {}, []]


def canonical(root: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    return _candidates(root, node, depth)[0]


def alternatives(root: Mapping[str, Any], node: Any, depth: int = 0) -> list[Any]:
    return _candidates(root, node, depth)[1] if depth < 6 else []


def _paths(
    root: Mapping[str, Any], node: Any, value: Any, depth: int = 0
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Each position in ``value`` with the schema that governs it."""
    yield (), node
    if depth > 4 or not isinstance(node, Mapping):
        return
    node = _resolve(root, node)
    for key in ("anyOf", "oneOf"):
        if key in node:
            for branch in node[key]:
                if _fits_branch(root, branch, value):
                    yield from ((p, n) for p, n in _paths(root, branch, value, depth + 1) if p)
                    break
            return
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for name, sub in value.items():
            schema = props.get(name, extra if isinstance(extra, Mapping) else None)
            if schema is not None:
                for p, n in _paths(root, schema, sub, depth + 1):
                    yield (name, *p), n
    elif isinstance(value, list):
        prefix = node.get("prefixItems")
        for i, sub in enumerate(value):
            schema = (
                prefix[i] if isinstance(prefix, list) and i < len(prefix) else node.get("items")
            )
            if isinstance(schema, Mapping):
                for p, n in _paths(root, schema, sub, depth + 1):
                    yield (i, *p), n


def _fits_branch(root: Mapping[str, Any], branch: Any, value: Any) -> bool:
    try:
        return jsonschema.Draft202012Validator({**root, **branch}).is_valid(value)
    except Exception:
        return False


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return out


def samples(tool: Tool[Any, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """(canonical valid instances, all samples): the tool's own schema drives both."""
    root = tool.input_schema
    full = canonical(root, root)
    minimal = {k: v for k, v in full.items() if k in (root.get("required") or ())}
    valid = [s for s in (full, minimal) if tool_accepts(tool, s)]
    assert valid, f"{tool.name}: the harness built no valid instance from {full!r}"
    out: list[Any] = [full, minimal]
    for path, node in _paths(root, root, full):
        for alt in alternatives(root, node, len(path)):
            out.append(_set(full, path, alt))
    return valid, out


# -- OpenAI strict: the nulls that stand for omitted optional fields ------------------------------


def with_strict_nulls(schema: Mapping[str, Any], node: Any, value: Any, depth: int = 0) -> Any:
    if depth > 20 or not isinstance(node, Mapping):
        return value
    node = _resolve(schema, node)
    for key in ("anyOf", "oneOf"):
        if key in node:
            for branch in node[key]:
                filled = with_strict_nulls(schema, branch, value, depth + 1)
                if jsonschema.Draft202012Validator({**schema, **branch}).is_valid(filled):
                    return filled
            return value
    if isinstance(value, dict):
        props = node.get("properties") or {}
        out = {k: with_strict_nulls(schema, props.get(k), v, depth + 1) for k, v in value.items()}
        for name in node.get("required") or ():
            if name not in out and name in props:
                out[name] = None
        return out
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [with_strict_nulls(schema, node["items"], v, depth + 1) for v in value]
    return value


# -- the test ------------------------------------------------------------------------------------


def judge(tool: Tool[Any, Any], compiled: CompiledTool) -> tuple[list[str], list[str]]:
    """(widenings, narrowings) of the compiled schema against the tool, over the samples."""
    check = validator(compiled)
    valid, every = samples(tool)
    widened = [
        repr(s)
        for s in every
        if check.is_valid(s)
        and not tool_accepts(tool, compiled.restore_arguments(s) if isinstance(s, dict) else s)
    ]
    narrowed = []
    for s in valid:
        sent = with_strict_nulls(compiled.schema, compiled.schema, s) if compiled.strict else s
        if not check.is_valid(sent):
            narrowed.append(repr(sent))
    return widened, narrowed


@pytest.mark.parametrize(("target", "compiler", "options"), TARGETS, ids=[t[0] for t in TARGETS])
def test_a_lossless_schema_accepts_exactly_what_the_tool_accepts(
    target: str, compiler: Any, options: CompileOptions
) -> None:
    problems: list[str] = []
    lossless = 0
    for tool in TOOLS:
        try:
            compiled = compile_tool(tool, compiler, options=options)
        except SchemaCompileError:
            [report] = check_tools([tool], compiler, options=options)
            assert not report.lossless, f"{tool.name}: refused but reported lossless"
            continue
        if not compiled.report.lossless:
            continue
        lossless += 1
        widened, narrowed = judge(tool, compiled)
        for s in widened[:3]:
            problems.append(f"{tool.name}: the schema accepts {s}, the tool refuses it")
        for s in narrowed[:3]:
            problems.append(f"{tool.name}: the tool accepts {s}, the schema refuses it")
    assert not problems, f"{target}: " + "\n".join(problems)
    assert lossless, f"{target}: no tool compiled losslessly: the test judged nothing"


def test_the_harness_catches_a_widening_reported_as_lossless() -> None:
    # What the Gemini compiler did before: a format moved into the description, called info.
    tool = tool_fn(formats)
    compiled = compile_tool(tool, ANTHROPIC)
    assert "uuid" == compiled.schema["properties"]["key"]["format"]
    widened_schema = copy.deepcopy(compiled.schema)
    widened_schema["properties"]["key"].pop("format")
    fake = CompiledTool(
        tool.name, widened_schema, None, compiled.report, compiled.target, tool.input_schema
    )
    widened, _ = judge(tool, fake)
    assert any("not-a-uuid" in s for s in widened)
    # And Gemini's JSON Schema compile, which does move it, reports that loss.
    gemini = compile_tool(tool, GEMINI, options=CompileOptions(target="parametersJsonSchema"))
    assert "format" not in gemini.schema["properties"]["key"]
    assert any("uuid" in c.message and c.severity == "warning" for c in gemini.report.changes)


def test_the_harness_catches_a_dropped_additional_properties_false() -> None:
    tool = tool_fn(bounds)
    compiled = compile_tool(tool, ANTHROPIC)
    opened = copy.deepcopy(compiled.schema)
    opened.pop("additionalProperties")
    fake = CompiledTool(
        tool.name, opened, None, compiled.report, compiled.target, tool.input_schema
    )
    widened, _ = judge(tool, fake)
    assert any("zz_extra" in s for s in widened)
