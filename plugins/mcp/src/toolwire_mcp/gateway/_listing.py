"""How the gateway lists a served tool: its MCP ``Tool`` (annotations from its effect,
its output schema when MCP can carry it, whether it may or must run as a task), and the
facts about a tool the listing and the calls both need."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.inbound import X_MCP_HEADER_KEY

from toolwire_mcp.gateway._served_tasks import TASK_DURATION

__all__ = ["_advertised_output", "_declares_headers", "_is_task_tool", "_mcp_tool"]


def _annotations(tool: Any) -> types.ToolAnnotations:
    meta = tool.metadata
    effect = meta.effect.value
    return types.ToolAnnotations(
        read_only_hint=effect == "read_only",
        destructive_hint=effect == "destructive",
        idempotent_hint=bool(meta.idempotent),
        open_world_hint="network" in {c.value for c in meta.capabilities},
    )


def _advertised_output(tool: Any) -> bool:
    """Whether the tool's output schema is advertised: MCP output schemas describe an
    object (structuredContent is one)."""
    output = tool.output_schema
    return bool(output) and output.get("type") == "object"


def _declares_headers(schema: Any, depth: int = 0) -> bool:
    """Whether an input schema carries an ``x-mcp-header`` annotation anywhere (a property
    a 2026-07-28 client sends as an ``Mcp-Param-*`` header too)."""
    if depth > 32:
        return True  # too deep to tell cheaply: let the SDK look
    if isinstance(schema, Mapping):
        return X_MCP_HEADER_KEY in schema or any(
            _declares_headers(v, depth + 1) for v in schema.values()
        )
    if isinstance(schema, list):
        return any(_declares_headers(v, depth + 1) for v in schema)
    return False


def _mcp_tool(name: str, description: str, tool: Any, task_only: bool = False) -> types.Tool:
    output = tool.output_schema
    support = "required" if task_only else "optional" if _is_task_tool(tool) else None
    return types.Tool(
        name=name,
        description=description,
        input_schema=dict(tool.input_schema),
        # MCP output schemas describe an object (structuredContent is an object).
        output_schema=dict(output) if _advertised_output(tool) else None,
        annotations=_annotations(tool),
        # A long-running tool may run as a task (2025-11-25's tasks; the 2026-07-28
        # extension lets the server decide, call by call).
        execution=types.ToolExecution(task_support=support) if support else None,
    )


def _is_task_tool(tool: Any) -> bool:
    """A served tool that declares itself long-running (``typical_duration``)."""
    duration = getattr(getattr(tool, "metadata", None), "typical_duration", None)
    return duration is not None and duration >= TASK_DURATION
