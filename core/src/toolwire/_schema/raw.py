"""A raw tool's arguments (a tool made from a JSON schema: an MCP server's, another
framework's) checked against its schema: the model's text parsed strictly, proven valid
quickly where it can be (:mod:`toolwire._schema.accepts`), else walked by the full
Draft 2020-12 validator, whose errors the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pydantic_core

from toolwire._schema.accepts import compile_accepts
from toolwire._strictjson import (
    MAX_RAW_NESTING,
    _loads_finite,
    _nested_deeper,
    _validation_error,
    _validation_error_many,
)

__all__ = ["RawCheck"]

_UNSET: Any = object()


class RawCheck:
    """One raw tool's argument check (``name`` titles its errors); made on first use."""

    __slots__ = ("_accepts", "_full", "name", "schema")

    def __init__(self, name: str, schema: Mapping[str, Any]) -> None:
        self.name = name
        self.schema = schema
        self._accepts: Any = _UNSET
        self._full: Any = None

    def text(self, text: str | bytes) -> dict[str, Any]:
        """The arguments the model's ``text`` holds, when valid; else pydantic's
        ValidationError saying what is wrong."""
        if _nested_deeper(text, MAX_RAW_NESTING):
            # Deterministic, as pydantic's parser is for typed inputs: a structure this deep
            # would otherwise pass here and break later (a fingerprint, a receipt, a hook),
            # wherever the stack happens to be deeper.
            raise _validation_error(
                self.name,
                "json_invalid",
                f"Invalid JSON: arrays and objects nested more than {MAX_RAW_NESTING} deep",
                (),
                text,
            )
        try:
            value = _loads_finite(text)
        except (ValueError, TypeError) as exc:
            raise _validation_error(
                self.name, "json_invalid", f"Invalid JSON: {exc}", (), text
            ) from None
        except RecursionError:
            # Bad model output is data: nesting too deep for the parser is invalid JSON here.
            raise _validation_error(
                self.name, "json_invalid", "Invalid JSON: nested too deeply", (), text
            ) from None
        return self.value(value)

    def written(self, text: str) -> dict[str, Any]:
        """:meth:`text` for arguments toolwire wrote itself from a mapping (a framework
        gave them: ``pydantic_core.to_json``, which writes no duplicate key, no number
        out of a float's range, and non-finite numbers as the constants refused here):
        parsed by pydantic's parser, quicker than the strict one, and checked the same.
        Whatever it refuses is parsed again as the model's text is, for the same error."""
        if not _nested_deeper(text, MAX_RAW_NESTING):
            try:
                value = pydantic_core.from_json(text, allow_inf_nan=False)
            except ValueError:
                pass
            else:
                return self.value(value)
        return self.text(text)

    def value(self, value: Any) -> dict[str, Any]:
        """``value`` when it is valid arguments; else the ValidationError."""
        if self._accepts is _UNSET:
            self._accepts = compile_accepts(self.schema)
        if self._accepts is not None and self._accepts(value):
            return cast("dict[str, Any]", value)  # proven valid: the full walk is not needed
        if self._full is None:
            import jsonschema

            self._full = jsonschema.Draft202012Validator(dict(self.schema))
        try:
            if self._full.is_valid(value):
                return cast("dict[str, Any]", value)
            errors = sorted(self._full.iter_errors(value), key=lambda e: [str(p) for p in e.path])
        except RecursionError:
            raise _validation_error(
                self.name, "json_schema", "arguments are nested too deeply", (), value
            ) from None
        if errors:
            details = [
                {
                    "type": "json_schema",
                    "loc": tuple(e.absolute_path),
                    "msg": e.message,
                    "input": e.instance,
                }
                for e in errors
            ]
            raise _validation_error_many(self.name, details)
        return cast("dict[str, Any]", value)
