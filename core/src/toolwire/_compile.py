"""What every provider's schema compiler shares: records, loss reports, the keyword
tables and helpers a compiler is written with, and the driver (compile, cache, check).

A tool's neutral input schema (pydantic's JSON Schema, cleaned by ``_schema``) is
compiled into what one provider accepts by that provider's :class:`SchemaCompiler`,
which lives in the provider's own distribution (toolwire-openai, -gemini, -anthropic)
and is registered with the provider. Every compiler returns the new schema *and* a
:class:`CompileReport` listing each change, so ``toolwire check`` can warn at
registration time instead of the provider failing at run time.

Severities:

- ``info``: nothing the tool relies on was lost (a keyword reformatted, an
  annotation removed, a default moved into the description);
- ``warning``: meaning was lost: the model may now send something the tool
  rejects, or no longer sees a constraint as schema (it may be in prose);
- ``error``: only in :func:`check_tools`, for a tool that cannot be compiled
  at all (the compile functions raise :class:`SchemaCompileError` instead).

Change kinds: ``added_type``, ``added_properties``, ``closed_object``,
``compile_error``, ``cut_recursion``, ``described_keyword``, ``dropped_default``,
``empty_parameters``, ``free_form_map``, ``inlined_ref``, ``limit_exceeded``,
``lost_constraint``, ``made_required``, ``made_required_nullable``,
``merged_allof``, ``removed_keyword``, ``rewrote_const``, ``rewrote_enum``,
``rewrote_bound``, ``rewrote_nullable``, ``rewrote_union``, ``untyped_schema``, ``wrapped_ref``.

Paths are JSON pointers into the *neutral* schema (``""`` is the root; a
change inside a definition is reported once, at ``/$defs/Name/...``).

Sources: ``reference/wire-formats.md`` (OpenAI "Supported schemas", Gemini's
``Schema`` proto history and rejected keywords, pydantic-ai and the openai
SDK's transforms). Where a rule is not confirmed there, the constant that
holds it says **unverified**.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union

import attrs

from toolwire._errors import SchemaCompileError, UsageError
from toolwire._exports import publish
from toolwire._schema.reports import CompiledTool, CompileReport, SchemaChange
from toolwire._tools import Tool, ToolDef
from toolwire._turn import ResolvedTool

__all__ = [
    "CompileOptions",
    "OpenAIStrictLimits",
    "SchemaCompiler",
    "check_tools",
    "compile_tool",
]

StrictMode = Literal["auto", True, False]
GeminiTarget = Literal["auto", "parameters", "parametersJsonSchema"]


@attrs.frozen(cache_hash=True)
class OpenAIStrictLimits:
    """OpenAI Structured Outputs limits (current guide; older copies said 100 / 5 / 15,000 /
    500 / 7,500). How OpenAI counts nesting is **unverified**: here, nested object schemas
    along any path, following ``$ref`` (root = 1)."""

    max_properties: int = 5000
    max_depth: int = 10
    max_total_chars: int = 120_000
    max_enum_values: int = 1000
    large_enum_size: int = 250
    max_large_enum_chars: int = 15_000


@attrs.frozen(cache_hash=True)
class CompileOptions:
    """Options that change what a compiler produces (part of the cache key).

    ``strict_mode``: ``"auto"`` sends ``strict: true`` only when the strict
    schema is lossless; ``True`` forces it and reports losses; ``False`` sends
    ``strict: false`` with only the safe cleanups; None means the provider's
    default (``"auto"`` for OpenAI, ``False`` for OpenRouter and
    OpenAI-compatible servers, which may not honour strict: pydantic-ai #1561).
    ``gemini_target``: which Gemini field to fill; ``"auto"`` prefers
    ``parametersJsonSchema`` (set ``"parameters"`` for the Live API).
    """

    strict_mode: StrictMode | None = None
    gemini_target: GeminiTarget = "auto"
    openai_limits: OpenAIStrictLimits = OpenAIStrictLimits()


# -- the driver ------------------------------------------------------------------------------


@attrs.frozen
class SchemaCompiler:
    """A provider's schema compiler: ``compiler(schema, tool_name, options) -> CompiledTool``.

    ``provider`` is the name its reports carry; ``compile`` does the work. A provider
    adapter owns its compiler and registers it with the provider
    (``register(name, factory, schema_compiler=...)``), so ``toolwire check`` finds it.
    Compilers are compared by value: the same provider and function is the same compiler
    (compiled schemas are cached per compiler).
    """

    provider: str
    compile: Callable[[Mapping[str, Any], str, CompileOptions], CompiledTool]

    def __call__(
        self, schema: Mapping[str, Any], tool: str, options: CompileOptions
    ) -> CompiledTool:
        return self.compile(schema, tool, options)


_CACHE_TAG = "toolwire.compile"
_DEFAULT_OPTIONS = CompileOptions()
ToolLike = Union[Tool[Any, Any], ToolDef, ResolvedTool]


def compile_tool(
    tool: ToolLike, compiler: SchemaCompiler, *, options: CompileOptions | None = None
) -> CompiledTool:
    """Compile a tool's input schema with ``compiler``.

    Accepts a Tool (the result is cached in ``tool.cache``, keyed by compiler and
    options, so a renamed view compiles under its own name), a ToolDef (not cached) or
    a ResolvedTool (its tool's cache is used). Raises SchemaCompileError when the schema
    cannot be compiled at all.
    """
    options = options or _DEFAULT_OPTIONS
    if not isinstance(options, CompileOptions):
        raise UsageError(f"options must be a CompileOptions, got {type(options).__name__}")
    if not isinstance(compiler, SchemaCompiler):
        raise UsageError(
            f"compiler must be a toolwire.schema.SchemaCompiler, got {type(compiler).__name__}; "
            f"a provider's is registered with it (PluginHost.schema_compiler(name))"
        )
    if isinstance(tool, ResolvedTool):
        tool = tool.tool
    if isinstance(tool, Tool):
        key = (_CACHE_TAG, compiler, options)
        cached = tool.cache.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        compiled = compiler(tool.input_schema, tool.name, options)
        tool.cache[key] = compiled
        return compiled
    if isinstance(tool, ToolDef):
        return compiler(tool.input_schema, tool.name, options)
    raise UsageError(
        f"compile_tool() takes a Tool, ToolDef or ResolvedTool, got {tool!r} "
        f"({type(tool).__name__}); for a function, wrap it with tool_fn first"
    )


def check_tools(
    tools: Iterable[ToolLike], compiler: SchemaCompiler, *, options: CompileOptions | None = None
) -> list[CompileReport]:
    """Compile every tool with ``compiler`` and return the reports, in order.

    A tool that cannot be compiled gets a report with one ``error`` change
    instead of stopping the check.
    """
    reports: list[CompileReport] = []
    for tool in tools:
        try:
            reports.append(compile_tool(tool, compiler, options=options).report)
        except SchemaCompileError as exc:
            name = getattr(tool, "name", None) or repr(tool)
            reports.append(
                CompileReport(
                    str(name),
                    compiler.provider,
                    "parameters",
                    (SchemaChange("", "compile_error", "error", str(exc)),),
                )
            )
    return reports


publish(globals())
