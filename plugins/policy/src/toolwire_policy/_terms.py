"""The words a policy reads a call in: the names a tool is matched by, its arguments as
the policy sees them (and, for constraints alone, with secrets revealed), globs, and the
texts a policy answers with."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic_core
from pydantic import BaseModel, SecretBytes, SecretStr

from toolwire import Tool, TypedCall

__all__ = [
    "FRAMEWORK",
    "REDACTED",
    "UNKNOWN_EFFECT_SOURCE",
    "UNRECORDED",
    "call_arguments",
    "revealed_arguments",
]

#: ``ToolMetadata.source`` of a bridge's tool whose effect nobody declared
#: (``toolwire.bridges.UNKNOWN_EFFECT_SOURCE``, by its value).
UNKNOWN_EFFECT_SOURCE = "bridge:unknown-effect"
#: ``HookContext.extra`` key a framework bridge names its framework by
#: (``toolwire.bridges.FRAMEWORK``; read by its value so older cores load this plugin).
FRAMEWORK = "toolwire.framework"

REDACTED = "[REDACTED]"
#: What a call whose result could not be written to the audit log answers (the tool ran).
UNRECORDED = (
    "the tool ran, but the organisation policy could not record its result in the audit "
    "log, so the result is withheld; tell the operator"
)


def _globs(patterns: Iterable[str], *, fold: bool = False) -> re.Pattern[str] | None:
    """One regex matching any of the fnmatch globs (None when there are none)."""
    parts = [fnmatch.translate(p.lower() if fold else p) for p in patterns]
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


def _matches(rx: re.Pattern[str] | None, names: Iterable[str]) -> bool:
    return rx is not None and any(rx.match(n) for n in names)


def _names(tool: Tool[Any, Any]) -> tuple[str, ...]:
    # Every name the tool is known by: the wire name, the full mounted name (a long one is
    # shortened on the wire), the name it was defined with, and SOURCE/NAME
    # (``mcp:git/status``) for a tool whose maker named its source.
    source = tool.metadata.source
    if source is None:
        return tool.names
    return (*tool.names, f"{source}/{tool.origin.name}")


def call_arguments(call: TypedCall[Any]) -> dict[str, Any]:
    """The call's effective arguments (as edited by earlier hooks) as a JSON object."""
    try:
        value = json.loads(call.tool.dump_input(call.input))
    except (TypeError, ValueError):
        value = json.loads(call.arguments)
    return value if isinstance(value, dict) else {"input": value}


def revealed_arguments(call: TypedCall[Any]) -> dict[str, Any]:
    """The call's effective arguments with every secret field's real value, for the
    argument constraints (never logged, never audited: :func:`call_arguments` is what the
    log sees)."""
    value = _reveal(call.input)
    try:
        plain = pydantic_core.to_jsonable_python(value)
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        plain = json.loads(call.arguments)
    return plain if isinstance(plain, dict) else {"input": plain}


def _reveal(value: Any) -> Any:
    if isinstance(value, (SecretStr, SecretBytes)):
        raw = value.get_secret_value()
        return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    if isinstance(value, BaseModel):
        return {
            info.serialization_alias or info.alias or name: _reveal(getattr(value, name))
            for name, info in type(value).model_fields.items()
        }
    if isinstance(value, Mapping):
        return {str(k): _reveal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_reveal(v) for v in value]
    return value


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
