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

import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Literal, Union

import attrs

from toolwire._errors import SchemaCompileError, UsageError
from toolwire._exports import publish
from toolwire._schema.reports import CompiledTool, CompileReport, SchemaChange
from toolwire._tools import Tool, ToolDef
from toolwire._turn import ResolvedTool

__all__ = [
    "CompileOptions",
    "SchemaCompiler",
    "check_tools",
    "compile_tool",
]

StrictMode = Literal["auto", True, False]


_LEGACY = {"strict_mode": "strict", "gemini_target": "target", "openai_limits": "limits"}


@attrs.frozen(init=False)
class CompileOptions:
    """Options that change what a compiler produces (part of the cache key).

    Provider-neutral; each compiler reads what applies to it and ignores the rest.

    - ``strict``: for providers with a strict schema mode. ``"auto"`` sends ``strict: true``
      only when the strict schema is lossless, ``True`` forces it and reports the losses,
      ``False`` sends ``strict: false`` with only the safe cleanups; None is the provider's
      default (OpenAI: ``"auto"``; OpenRouter and OpenAI-compatible servers: ``False``,
      as they may not honour strict: pydantic-ai #1561).
    - ``target``: which request field the schema goes into, for providers with more than
      one (Gemini: ``"parameters"`` or ``"parametersJsonSchema"``); ``"auto"`` lets the
      compiler choose.
    - ``limits``: a provider's own limits object, hashable (OpenAI:
      ``toolwire_openai.OpenAIStrictLimits``); None is the provider's defaults.

    The 0.1 names ``strict_mode``, ``gemini_target`` and ``openai_limits`` are still
    accepted (and readable), with a DeprecationWarning.
    """

    strict: StrictMode | None
    target: str
    limits: Hashable | None

    def __init__(
        self,
        strict: StrictMode | None = None,
        target: str = "auto",
        limits: Hashable | None = None,
        **legacy: Any,
    ) -> None:
        values: dict[str, Any] = {"strict": strict, "target": target, "limits": limits}
        for old, value in legacy.items():
            new = _LEGACY.get(old)
            if new is None:
                raise UsageError(f"CompileOptions() got an unexpected keyword argument {old!r}")
            warnings.warn(
                f"CompileOptions({old}=...) is deprecated; use {new}=",
                DeprecationWarning,
                stacklevel=2,
            )
            values[new] = value
        if values["strict"] not in (None, "auto", True, False):
            raise UsageError(f'strict must be "auto", True, False or None, got {strict!r}')
        if not isinstance(values["target"], str):
            raise UsageError(f"target must be a string, got {type(values['target']).__name__}")
        try:
            hash(values["limits"])
        except TypeError:
            raise UsageError(
                f"limits must be hashable (it is part of the cache key), got "
                f"{type(values['limits']).__name__}"
            ) from None
        self.__attrs_init__(**values)

    def __getattr__(self, name: str) -> Any:
        new = _LEGACY.get(name)
        if new is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(
            f"CompileOptions.{name} is deprecated; read .{new}", DeprecationWarning, stacklevel=2
        )
        return getattr(self, new)


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
