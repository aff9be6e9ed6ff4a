"""Anthropic's schema compiler: ``input_schema`` is JSON Schema with an object root."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.schema import (
    ChangeLog as _Changes,
)
from toolwire.schema import (
    CompiledTool,
    CompileOptions,
    CompileReport,
    SchemaCompiler,
)
from toolwire.schema import (
    check_root as _check_root,
)
from toolwire.schema import (
    safe_cleanup as _safe_cleanup,
)

__all__ = ["COMPILER", "compile_anthropic"]


def compile_anthropic(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "anthropic"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for Anthropic's ``input_schema`` (JSON Schema): the root must be
    ``type: object`` with ``properties``; ``$schema`` is removed; the rest is kept."""
    changes = _Changes()
    root = _check_root(schema, provider, changes)
    out = _safe_cleanup(root, changes)
    return out, CompileReport(tool, provider, "input_schema", tuple(changes.items))


def _compile(schema: Mapping[str, Any], tool: str, options: CompileOptions) -> CompiledTool:
    out, report = compile_anthropic(schema, tool=tool)
    return CompiledTool(tool, out, None, report, "input_schema", schema)


#: Anthropic's compiler: ``input_schema`` takes JSON Schema almost as it is.
COMPILER = SchemaCompiler("anthropic", _compile)
