"""The neutral schema: pydantic's JSON Schema, cleaned, and checks of raw JSON Schemas.

Per-provider schema compilers (OpenAI strict, Gemini, Anthropic) live with the provider
adapters; this module produces the neutral, clean schema they start from."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from toolwire._errors import ToolDefinitionError
from toolwire._exports import publish
from toolwire._schema.walk import (
    MAPPING,
    SUBSCHEMA_ANY_KEYWORDS,
    SUBSCHEMA_KEYWORDS,
    SUBSCHEMA_LIST_KEYWORDS,
    SUBSCHEMA_MAP_KEYWORDS,
)

_NO_STRING = "(?!)"  # a pattern no string matches


# pydantic's validation-mode decimal pattern ends with the exponent forms, which it
# accepts whatever max_digits and decimal_places say: cut off for constrained decimals.
_DECIMAL_EXPONENT_FORMS = "|(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)[eE][+-]?[0-9]+)$"


class _CleanJsonSchema(GenerateJsonSchema):
    """pydantic's generator without the noise (no titles on fields), and decimals whose
    schema accepts no string the tool refuses."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def get_decimal_pattern(self, schema: core_schema.DecimalSchema) -> str | None:
        pattern = self.build_decimal_pattern(schema)
        if schema.get("max_digits") is None and schema.get("decimal_places") is None:
            return pattern
        if pattern.endswith(_DECIMAL_EXPONENT_FORMS):
            return pattern[: -len(_DECIMAL_EXPONENT_FORMS)] + ")$"
        return _NO_STRING  # a pattern we cannot vouch for: decimal_schema drops the branch

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        """A Decimal is a number or a decimal string. pydantic puts bounds and
        ``multipleOf`` on the number only and ``max_digits``/``decimal_places`` on
        neither; here the number carries what it can (``decimal_places`` as
        ``multipleOf``, the integer digits as bounds), and the string is offered only
        where its pattern says everything (no bounds, no ``multipleOf``)."""
        out = super().decimal_schema(schema)
        branches = out.get("anyOf") if self.mode == "validation" else None
        if not isinstance(branches, list) or len(branches) != 2:
            return out
        number, string = dict(branches[0]), branches[1]
        places, digits = schema.get("decimal_places"), schema.get("max_digits")
        if places is not None and "multipleOf" not in number:
            number["multipleOf"] = float(Decimal(1).scaleb(-places))
        if digits is not None:
            limit = 10 ** (digits - (places or 0))
            if "maximum" not in number and "exclusiveMaximum" not in number:
                number["exclusiveMaximum"] = limit
            if "minimum" not in number and "exclusiveMinimum" not in number:
                number["exclusiveMinimum"] = -limit
        bounded = any(schema.get(k) is not None for k in ("gt", "ge", "lt", "le", "multiple_of"))
        if bounded or string.get("pattern") == _NO_STRING:
            return number
        return {**out, "anyOf": [number, string]}

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        return clean_schema(super().generate(schema, mode))


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Strip ``title`` keywords (never properties named "title") and give every
    object schema a ``properties`` map; returns a new dict."""
    cleaned: dict[str, Any] = _clean(schema)
    return cleaned


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(x) for x in node]
    if not isinstance(node, Mapping):
        return node
    # map_subschemas' positions, without the pointer string it makes for each subschema.
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k not in SUBSCHEMA_ANY_KEYWORDS:
            if not (k == "title" and isinstance(v, str)):
                out[k] = v
        elif k in SUBSCHEMA_MAP_KEYWORDS and isinstance(v, MAPPING):
            out[k] = {name: _clean(sub) for name, sub in v.items()}
        elif k in SUBSCHEMA_LIST_KEYWORDS and isinstance(v, list):
            out[k] = [_clean(sub) for sub in v]
        elif k in SUBSCHEMA_KEYWORDS:
            out[k] = _clean(v)
        else:
            out[k] = v
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "$ref" not in out
        and out.get("additionalProperties", False) is False
    ):
        out["properties"] = {}
    return out


def model_schema(
    model: type[BaseModel],
    *,
    descriptions: Mapping[str, str] | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """The clean input schema of a pydantic model.

    ``descriptions`` fills property descriptions the model itself does not
    give (from docstrings); ``description`` replaces the top-level one (the
    tool's description is sent separately, so by default it is removed).
    """
    schema = model.model_json_schema(schema_generator=_CleanJsonSchema)
    schema.pop("description", None)
    if description:
        schema["description"] = description
    props = schema.get("properties")
    if descriptions and isinstance(props, dict):
        for name, text in descriptions.items():
            prop = props.get(name)
            if isinstance(prop, dict) and "description" not in prop and text:
                props[name] = {"description": text, **prop}
    schema.setdefault("properties", {})
    return schema


_WRAPPER_KEYS = ("parameters", "input_schema", "inputSchema", "parametersJsonSchema", "schema")
_OBJECT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "patternProperties",
        "$defs",
        "definitions",
        "not",
        "if",
    }
)


def check_raw_schema(schema: Any, *, tool: str) -> dict[str, Any]:
    """Validate a raw tool's JSON schema at definition time; returns a clean copy.

    Raises ToolDefinitionError naming the tool when the schema is not a JSON
    object schema or is not a valid JSON Schema (Draft 2020-12).
    """

    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(
            f"tool `{tool}`: the input schema must be a JSON object (dict), "
            f"got {type(schema).__name__}"
        )
    wrapper = next((k for k in _WRAPPER_KEYS if isinstance(schema.get(k), Mapping)), None)
    if wrapper is not None and not any(k in schema for k in _OBJECT_KEYWORDS):
        # {"parameters": {...}} is a tool definition, not a schema: taken as a schema it
        # would be a tool with no parameters that accepts anything.
        raise ToolDefinitionError(
            f"tool `{tool}`: the input schema looks like a tool definition that wraps its "
            f"schema under `{wrapper}`; pass that schema itself (schema[{wrapper!r}])"
        )
    if schema.get("type", "object") != "object":
        raise ToolDefinitionError(
            f"tool `{tool}`: the input schema must describe an object "
            f'("type": "object"), got type {schema.get("type")!r}'
        )
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise ToolDefinitionError(
            f"tool `{tool}`: the input schema is not valid JSON Schema: {exc.message}"
        ) from None
    out = clean_schema(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


publish(globals())
