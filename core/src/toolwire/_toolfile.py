"""A raw-schema tool from a JSON definition file (bounded, checked)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolwire._errors import ToolDefinitionError
from toolwire._exports import publish
from toolwire._tools import Tool, raw_tool

MAX_TOOL_FILE_BYTES = 1024 * 1024


def raw_tool_from_file(
    path: str | Path,
    fn: Callable[..., Any] | None = None,
    **options: Any,
) -> Tool[dict[str, Any], Any]:
    """A raw tool from a JSON file holding ``{"name", "description", "parameters"}``.

    (``input_schema`` is accepted in place of ``parameters``, and an OpenAI
    ``{"type": "function", "function": {...}}`` wrapper is unwrapped.)
    """
    p = Path(path)
    try:
        with p.open("rb") as f:  # read no more than the limit: the path may be a device
            raw = f.read(MAX_TOOL_FILE_BYTES + 1)
    except OSError as exc:
        raise ToolDefinitionError(f"cannot read tool file {str(p)!r}: {exc.strerror}") from None
    if len(raw) > MAX_TOOL_FILE_BYTES:
        raise ToolDefinitionError(
            f"tool file {str(p)!r} is over {MAX_TOOL_FILE_BYTES} bytes; a tool definition "
            f"is far smaller"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise ToolDefinitionError(f"tool file {str(p)!r} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and data.get("type") == "function" and "function" in data:
        data = data["function"]
    if not isinstance(data, dict):
        raise ToolDefinitionError(
            f"tool file {str(p)!r} must hold a JSON object, got {type(data).__name__}"
        )
    missing = [k for k in ("name", "description") if not isinstance(data.get(k), str)]
    schema = data.get("parameters", data.get("input_schema"))
    if schema is None:
        missing.append("parameters")
    if missing or schema is None:
        raise ToolDefinitionError(
            f"tool file {str(p)!r} is missing {', '.join(missing)} "
            f"(expected keys: name, description, parameters)"
        )
    return raw_tool(data["name"], data["description"], schema, fn, **options)


publish(globals())
