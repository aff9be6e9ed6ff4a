"""Strict reading of JSON text: numbers must be finite (NaN, infinity and 1e400 are
refused, as no provider accepts them back), arrays and objects nest at most so deep,
and whether a type's validation already refuses non-finite numbers or needs the guard.
One job beside ``_jsondata`` (JSON data once parsed); used by tools and adapters.
"""

from __future__ import annotations

import collections.abc
import datetime
import enum
import json
import math
import re
import types
import uuid
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import pydantic_core
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from toolwire._exports import publish


class _NotFinite(ValueError):
    """NaN, infinity or an out-of-range number in JSON text (raised inside ``json.loads``)."""


def _no_constant(name: str) -> Any:
    raise _NotFinite(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"{text} is out of range for a JSON number")
    return value


#: One decoder for every strict parse (json.loads would build one per call for these
#: options); shared across threads as json.loads' own default decoder is.
_FINITE_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def _loads_finite(text: str | bytes) -> Any:
    """``json.loads(text)``, refusing NaN, infinity and numbers out of a float's range."""
    if not isinstance(text, str) or text.startswith("\ufeff"):
        # Bytes (decoded as json.loads decodes them) and the BOM error: json.loads itself.
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    return _FINITE_DECODER.decode(text)


#: How deep a raw-schema tool's arguments may nest arrays and objects (pydantic's JSON
#: parser stops typed inputs at about the same depth).
MAX_RAW_NESTING = 200

# A string (skipped whole) or a bracket.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _nested_deeper(text: str | bytes, limit: int) -> bool:
    """Does JSON ``text`` nest arrays and objects deeper than ``limit`` (brackets inside
    strings do not count)? Two counts for the usual text; a scan only past ``limit``
    brackets. Bytes are scanned byte by byte (as Latin-1: each byte one character)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("latin-1")
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > limit:
                return True
        elif token == "]" or token == "}":
            depth -= 1
    return False


_MAYBE_NON_FINITE = re.compile(r"NaN|Infinity|[eE]\+?\d{3}")


#: Types whose JSON validation refuses NaN, infinity and 1e400 whatever the config says.
_FINITE_ONLY: frozenset[type] = frozenset(
    {
        str,
        int,
        bool,
        bytes,
        type(None),
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        uuid.UUID,
    }
)
#: Generic origins whose arguments are what gets validated.
_CONTAINERS: frozenset[Any] = frozenset(
    {
        Union,
        types.UnionType,
        list,
        tuple,
        set,
        frozenset,
        dict,
        collections.abc.Sequence,
        collections.abc.Mapping,
        collections.abc.Set,
        collections.abc.MutableSequence,
        collections.abc.MutableMapping,
        collections.abc.MutableSet,
    }
)


def _loosens(metadata: Iterable[Any]) -> bool:
    """Field metadata that could let a float through that the config refuses: anything but
    plain constraints (``ge``, ``max_length``...) without ``allow_inf_nan=True``."""
    return any(
        _loosens(m.metadata)
        if isinstance(m, FieldInfo)
        else not isinstance(m, annotated_types.BaseMetadata) or getattr(m, "allow_inf_nan", None)
        for m in metadata
    )


def _may_take_non_finite(tp: Any, *, checked: bool, seen: frozenset[int] = frozenset()) -> bool:
    """True unless validating JSON into ``tp`` surely refuses NaN, infinity and 1e400.

    ``checked``: the enclosing model's config refuses them (``allow_inf_nan=False``), which
    pydantic applies to that model's own fields but not to the models inside it.
    Conservative: what it does not know (a custom type, ``Any``, ``Decimal``, a dataclass,
    an unparameterised container, a validator in the metadata) counts as open.
    """
    if isinstance(tp, type):
        if tp in _FINITE_ONLY:
            return False
        if tp is float:
            return not checked
        if issubclass(tp, enum.Enum):
            return any(isinstance(m.value, float) for m in tp)
        if issubclass(tp, BaseModel):
            if id(tp) in seen:
                return False  # a recursive model: its fields are being looked at already
            inner = tp.model_config.get("allow_inf_nan", True) is False
            return any(
                _may_take_non_finite(
                    f.annotation,
                    checked=inner and not _loosens(f.metadata),
                    seen=seen | {id(tp)},
                )
                for f in tp.model_fields.values()
            )
        if get_origin(tp) is None:
            return True  # dataclasses, TypedDicts, Decimal, custom classes: not looked into
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Literal:
        return any(isinstance(v, float) for v in args)
    if origin is Annotated:
        return _may_take_non_finite(
            args[0], checked=checked and not _loosens(tp.__metadata__), seen=seen
        )
    if origin in _CONTAINERS and args:
        if origin is tuple and Ellipsis in args and len(args) != 2:
            return True
        return any(
            a is not Ellipsis and _may_take_non_finite(a, checked=checked, seen=seen) for a in args
        )
    return True  # Any, TypeVars, forward references, bare or unknown generics


def _finite_guard(
    name: str, validate: Callable[[str | bytes], Any]
) -> Callable[[str | bytes], Any]:
    """``validate``, then a refusal of NaN, infinity and numbers like 1e400 in the text.

    For validators toolwire does not configure (an application's own model, a type
    adapter): a cheap scan first, and a full parse only when the text could hold one.
    """

    def checked(text: str | bytes) -> Any:
        value = validate(text)
        raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if _MAYBE_NON_FINITE.search(raw):
            try:
                _loads_finite(raw)
            except ValueError as exc:
                raise _validation_error(
                    name, "finite_number", f"Invalid JSON: {exc}", (), text
                ) from None
            except RecursionError:
                raise _validation_error(
                    name, "json_invalid", "Invalid JSON: nested too deeply", (), text
                ) from None
        return value

    return checked


def _validation_error(
    title: str, kind: str, msg: str, loc: tuple[Any, ...], value: Any
) -> ValidationError:
    return _validation_error_many(title, [{"type": kind, "loc": loc, "msg": msg, "input": value}])


def _validation_error_many(title: str, details: list[dict[str, Any]]) -> ValidationError:
    line_errors: list[Any] = []
    for d in details:
        line_errors.append(
            {
                "type": pydantic_core.PydanticCustomError(d["type"], "{msg}", {"msg": d["msg"]}),
                "loc": d["loc"],
                "input": d["input"],
            }
        )
    return ValidationError.from_exception_data(title, line_errors)


publish(globals())
