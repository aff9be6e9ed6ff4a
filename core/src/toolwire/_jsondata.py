"""Reading saved JSON data back (sessions, paused rounds): one validator for both.

Every read names the path of the bad value (``messages[2].tool_calls[0].id``) and what
it should have been, and raises :class:`~toolwire.exceptions.TranscriptError`: saved data
is outside input, and a malformed blob must fail loudly and lose nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from toolwire._errors import TranscriptError
from toolwire._exports import publish

__all__ = ["as_object", "field", "is_kind", "loads", "objects", "optional"]

_MISSING: Any = object()
_KINDS: Mapping[type, str] = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    list: "a list",
    Mapping: "an object",
}


def is_kind(value: Any, kind: type) -> bool:
    """Is ``value`` a ``kind`` as saved data means it (an int is not a bool)?"""
    if kind is int and isinstance(value, bool):
        return False
    return isinstance(value, kind)


def _got(value: Any) -> str:
    return "nothing (the key is missing)" if value is _MISSING else type(value).__name__


def field(d: Mapping[str, Any], key: str, where: str, kind: type, default: Any = _MISSING) -> Any:
    """``d[key]``, which must be a ``kind`` (``str``, ``int`` (not bool), ``bool``, ``list``
    or ``Mapping``); ``default`` when the key is absent, if given."""
    value = d.get(key, _MISSING)
    if value is _MISSING and default is not _MISSING:
        return default
    if not is_kind(value, kind):
        raise TranscriptError(f"{where}.{key} must be {_KINDS[kind]}, got {_got(value)}")
    return value


def optional(d: Mapping[str, Any], key: str, where: str, kind: type) -> Any:
    """``d[key]`` when present and not null (then it must be a ``kind``), else None."""
    value = d.get(key)
    return None if value is None else field(d, key, where, kind)


def as_object(value: Any, where: str) -> Mapping[str, Any]:
    """``value``, which must be a JSON object."""
    if not isinstance(value, Mapping):
        raise TranscriptError(f"{where} must be an object, got {_got(value)}")
    return value


def objects(
    d: Mapping[str, Any], key: str, where: str, default: Any = _MISSING
) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Each entry of the list ``d[key]`` with its path; every entry must be an object."""
    for i, entry in enumerate(field(d, key, where, list, default)):
        path = f"{where}.{key}[{i}]"
        yield as_object(entry, path), path


def loads(text: str | bytes, what: str) -> Any:
    """Parse JSON text; invalid text is a TranscriptError naming ``what`` it was."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TranscriptError(f"{what} must be text or bytes, got {type(text).__name__}")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TranscriptError(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise TranscriptError(f"{what} nests arrays or objects too deeply to read") from None


publish(globals())
