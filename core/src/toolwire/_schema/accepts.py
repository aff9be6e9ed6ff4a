"""A quick proof that arguments are valid under a tool's JSON schema, for the shapes most
tool schemas have, so the full validator runs only when the proof cannot be made.

The full validator (``jsonschema``'s Draft 2020-12) walks the schema anew on every call
and costs a raw tool's call several microseconds. :func:`compile_accepts` turns a schema
made only of the common keywords (``type``, ``properties``, ``required``,
``additionalProperties`` true or false, ``items``, ``enum`` and ``const`` of plain values,
lengths and bounds) into a function that answers True only for a value the full
validator accepts; False means "not proven" (the full validator then decides, and words
the errors). A schema with anything else (``$ref``, ``anyOf``, ``pattern``, ...) gets no
such function. The answer may be False where the full validator accepts (a float that is
a whole number for ``integer``): never True where it refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sized
from typing import Any, cast

__all__ = ["compile_accepts"]

#: Keywords that do not constrain a value (annotations, and ``format``, which Draft
#: 2020-12 only annotates unless a format checker is asked for).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "$schema",
        "$id",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "contentEncoding",
        "contentMediaType",
    }
)
_KNOWN = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
}
#: How deep a schema is compiled; a deeper one is left to the full validator.
MAX_DEPTH = 24

_Check = Callable[[Any], bool]


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_TYPES: dict[str, _Check] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,  # a whole float: not proven (the full one decides)
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}
_PLAIN = (str, int, float, bool, type(None))


def compile_accepts(schema: Any) -> _Check | None:
    """A function proving values valid under ``schema`` (True: valid; False: not proven),
    or None when the schema has a keyword it does not cover."""
    try:
        return _compile(schema, 0)
    except _Uncovered:
        return None


class _Uncovered(Exception):
    pass


def _compile(schema: Any, depth: int) -> _Check:
    if schema is True:
        return lambda v: True
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        raise _Uncovered
    if not set(schema) <= _KNOWN:
        raise _Uncovered
    checks: list[_Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
        if not isinstance(kinds, list) or not kinds or not all(k in _TYPES for k in kinds):
            raise _Uncovered
        tests = [_TYPES[k] for k in kinds]
        checks.append(tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests))
    if "enum" in schema:
        checks.append(_member(schema["enum"]))
    if "const" in schema:
        checks.append(_member([schema["const"]]))
    checks.extend(_bounds(schema))
    if {"properties", "required", "additionalProperties"} & set(schema):
        checks.append(_object(schema, depth))
    if "items" in schema:
        checks.append(_array(schema["items"], depth))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _member(values: Any) -> _Check:
    if not isinstance(values, list) or not all(type(v) in _PLAIN for v in values):
        raise _Uncovered
    # JSON Schema tells 1 from true and 1 from 1.0 only by value: type and value both match
    # here, and anything else is left to the full validator.
    allowed = frozenset((type(v), v) for v in values)
    return lambda v: type(v) in _PLAIN and (type(v), v) in allowed


def _bounds(schema: Mapping[str, Any]) -> list[_Check]:
    out: list[_Check] = []
    for key, kind in (("minLength", str), ("maxLength", str), ("minItems", list),
                      ("maxItems", list)):  # fmt: skip
        if key in schema:
            limit = schema[key]
            if type(limit) is not int or limit < 0:
                raise _Uncovered
            out.append(_length(kind, limit, at_least=key.startswith("min")))
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            limit = schema[key]
            if not _is_number(limit):
                raise _Uncovered
            out.append(_bound(key, limit))
    return out


def _length(kind: type, limit: int, *, at_least: bool) -> _Check:
    def check(value: Any) -> bool:
        if type(value) is not kind:
            return True  # a length applies to its own kind only
        size = len(cast("Sized", value))
        return size >= limit if at_least else size <= limit

    return check


def _bound(key: str, limit: float) -> _Check:
    def check(value: Any) -> bool:
        if not _is_number(value):
            return True  # a bound applies to numbers only
        if key == "minimum":
            return bool(value >= limit)
        if key == "maximum":
            return bool(value <= limit)
        if key == "exclusiveMinimum":
            return bool(value > limit)
        return bool(value < limit)

    return check


def _object(schema: Mapping[str, Any], depth: int) -> _Check:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not all(isinstance(k, str) for k in properties):
        raise _Uncovered
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        raise _Uncovered
    if extra is not True and extra is not False:
        raise _Uncovered
    each = {name: _compile(sub, depth + 1) for name, sub in properties.items()}
    needed = tuple(required)
    closed = extra is False

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True  # these keywords apply to objects only
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            test = each.get(name)
            if test is None:
                if closed:
                    return False
            elif not test(item):
                return False
        return True

    return check


def _array(items: Any, depth: int) -> _Check:
    test = _compile(items, depth + 1)
    return lambda v: type(v) is not list or all(test(item) for item in v)
