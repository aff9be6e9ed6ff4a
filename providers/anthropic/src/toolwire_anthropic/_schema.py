"""Anthropic's schema compiler: ``input_schema`` is JSON Schema with an object root."""

from __future__ import annotations

import json
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
    add_note as _add_note,
)
from toolwire.schema import (
    check_root as _check_root,
)
from toolwire.schema import (
    map_subschemas as _map_subschemas,
)
from toolwire.schema import (
    safe_cleanup as _safe_cleanup,
)

__all__ = ["COMPILER", "OUTPUT_COMPILER", "compile_anthropic", "compile_anthropic_output"]


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


# -- structured output (``output_config.format``) ---------------------------------------------


def is_recursive(schema: Mapping[str, Any]) -> bool:
    """Whether a ``$ref`` in ``schema`` reaches back to a schema that encloses it (a tree, a
    linked list): Anthropic's structured outputs take no recursive schema (its structured
    outputs guide, "JSON Schema limitations"), so such an answer goes through the output
    tool instead."""

    def refs(node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            for value in node.values():
                found |= refs(value)
        elif isinstance(node, list):
            for value in node:
                found |= refs(value)
        return found

    def target(ref: str) -> Any:
        node: Any = schema
        for raw in ref[2:].split("/") if ref.startswith("#/") else ():
            token = raw.replace("~1", "/").replace("~0", "~")
            node = node.get(token) if isinstance(node, Mapping) else None
        return node if ref.startswith("#") else None

    seen: set[str] = set()
    todo = list(refs({k: v for k, v in schema.items() if k not in ("$defs", "definitions")}))
    path_refs: dict[str, set[str]] = {}
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        path_refs[ref] = refs(target(ref)) if ref != "#" else {"#"}
        todo.extend(path_refs[ref])
    if "#" in seen:
        return True

    def cycle(ref: str, stack: tuple[str, ...]) -> bool:
        if ref in stack:
            return True
        return any(cycle(r, (*stack, ref)) for r in path_refs.get(ref, ()))

    return any(cycle(r, ()) for r in path_refs)


#: String formats the structured-output grammar supports (Anthropic's structured outputs
#: guide, "JSON Schema limitations"); another format is moved into the description.
OUTPUT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
#: Keywords the grammar does not enforce: kept as prose in the description, reported.
_DESCRIBED = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "patternProperties",
    # What the anthropic SDK's own schema transform moves into the description too.
    "discriminator",
    "prefixItems",
)


def compile_anthropic_output(
    schema: Mapping[str, Any], *, name: str = "", provider: str = "anthropic"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile an output schema for ``output_config.format`` (structured outputs).

    Every object is closed (``additionalProperties: false``, which the API requires),
    ``oneOf`` becomes ``anyOf``, and what the grammar cannot enforce (numeric and
    length bounds, ``maxItems``, ``minItems`` above 1, unsupported string formats) is
    moved into the description, each reported: an info for an object that did not
    say, a warning where meaning is lost.
    """
    changes = _Changes()
    root = _safe_cleanup(_check_root(schema, provider, changes), changes)

    def walk(node: Any, path: str) -> Any:
        if not isinstance(node, Mapping):
            return node
        out = _map_subschemas(node, lambda sub, p: walk(sub, p), path)
        notes: list[str] = []
        for key in _DESCRIBED:
            if key in out:
                notes.append(f"{key}: {json.dumps(out.pop(key))}")
                changes.add(
                    path,
                    "described_keyword",
                    "warning",
                    f"{key} is not enforced: moved to the description",
                )
        if isinstance(out.get("minItems"), int) and out["minItems"] > 1:
            notes.append(f"minItems: {out.pop('minItems')}")
            changes.add(
                path,
                "described_keyword",
                "warning",
                "minItems above 1 is not enforced: moved to the description",
            )
        fmt = out.get("format")
        if isinstance(fmt, str) and fmt not in OUTPUT_FORMATS:
            notes.append(f"format: {out.pop('format')}")
            changes.add(
                path,
                "described_keyword",
                "warning",
                f'format "{fmt}" is not supported: moved to the description',
            )
        if "oneOf" in out and "anyOf" not in out:
            out["anyOf"] = out.pop("oneOf")
            changes.add(
                path,
                "rewrote_union",
                "warning",
                "oneOf became anyOf (more than one branch may match)",
            )
        is_object = out.get("type") == "object" or "properties" in out
        if is_object and out.get("additionalProperties") is not False:
            extra = out.get("additionalProperties")
            out["additionalProperties"] = False
            if extra is None:
                changes.add(
                    path,
                    "closed_object",
                    "info",
                    "the object was closed (additionalProperties: false)",
                )
            else:
                changes.add(
                    path,
                    "closed_object",
                    "warning",
                    "additionalProperties was dropped: only the listed properties are accepted",
                )
        _add_note(out, notes)
        return out

    out = walk(root, "")
    return out, CompileReport(name, provider, "output_config.format", tuple(changes.items))


def _compile_output(schema: Mapping[str, Any], name: str, options: CompileOptions) -> CompiledTool:
    out, report = compile_anthropic_output(schema, name=name)
    return CompiledTool(name, out, True, report, "output_config.format", schema)


#: The compiler for a structured answer under ``output_config.format``.
OUTPUT_COMPILER = SchemaCompiler("anthropic-output", _compile_output)
