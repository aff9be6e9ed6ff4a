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

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union
from urllib.parse import unquote

import attrs

from toolwire._errors import SchemaCompileError, UsageError
from toolwire._exports import publish
from toolwire._schema import _SCHEMA_KEYS, _SCHEMA_LIST_KEYS, _SCHEMA_MAP_KEYS
from toolwire._tools import Tool, ToolDef
from toolwire._turn import ResolvedTool

__all__ = [
    "ALL_TYPE_KEYWORDS",
    "ANNOTATION_KEYWORDS",
    "JSON_TYPES",
    "SUBSCHEMA_KEYWORDS",
    "SUBSCHEMA_LIST_KEYWORDS",
    "SUBSCHEMA_MAP_KEYWORDS",
    "TYPE_KEYWORDS",
    "ChangeLog",
    "CompileOptions",
    "CompileReport",
    "CompiledTool",
    "OpenAIStrictLimits",
    "SchemaChange",
    "SchemaCompileError",
    "SchemaCompiler",
    "add_note",
    "brief",
    "check_refs",
    "check_root",
    "check_tools",
    "compile_tool",
    "format_report",
    "json_type",
    "matches_type",
    "pointer_token",
    "resolve_ref",
    "safe_cleanup",
    "split_type_list",
]

Severity = Literal["info", "warning", "error"]
StrictMode = Literal["auto", True, False]
SchemaTarget = Literal["parameters", "parametersJsonSchema", "input_schema"]
GeminiTarget = Literal["auto", "parameters", "parametersJsonSchema"]


# -- records ------------------------------------------------------------------------------


@attrs.frozen
class SchemaChange:
    """One change a compiler made: where (a JSON pointer), what kind, how bad, and why."""

    path: str
    kind: str
    severity: Severity
    message: str

    def __str__(self) -> str:
        return f"{self.severity} #{self.path} {self.kind}: {self.message}"


@attrs.frozen
class CompileReport:
    """What compiling one tool's schema for one provider changed or lost.

    ``target`` is the request field the schema goes into (``parameters``,
    ``parametersJsonSchema``, ``input_schema``); ``strict`` is the strict flag
    to send (None when the provider has none). ``strict_blockers`` lists what
    strict mode would have lost when it was not used.
    """

    tool: str
    provider: str
    target: str = "parameters"
    changes: tuple[SchemaChange, ...] = ()
    strict: bool | None = None
    strict_blockers: tuple[SchemaChange, ...] = ()

    @property
    def lossless(self) -> bool:
        """True when every change is ``info``: the compiled schema means what the tool expects."""
        return all(c.severity == "info" for c in self.changes)

    @property
    def warnings(self) -> tuple[SchemaChange, ...]:
        return tuple(c for c in self.changes if c.severity != "info")

    @property
    def infos(self) -> tuple[SchemaChange, ...]:
        return tuple(c for c in self.changes if c.severity == "info")


@attrs.frozen(eq=False)
class CompiledTool:
    """A tool's schema compiled for one provider (cached on the tool; do not mutate ``schema``).

    When the compiler changed what the model's arguments look like (OpenAI strict makes
    optional fields required and nullable), it supplies ``restore``: pass the model's
    argument object through :meth:`restore_arguments` before validation so that
    omitted-means-default fields get their defaults back.
    """

    name: str
    schema: dict[str, Any]
    strict: bool | None
    report: CompileReport
    target: SchemaTarget = "parameters"
    original_schema: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    restore: Callable[[dict[str, Any]], dict[str, Any]] | None = attrs.field(
        default=None, repr=False
    )

    @property
    def restores_defaults(self) -> bool:
        """True when the model's arguments need :meth:`restore_arguments` before validation."""
        return self.restore is not None

    def restore_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The model's arguments as the tool expects them (unchanged when nothing to restore)."""
        return arguments if self.restore is None else self.restore(arguments)


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


# -- keyword tables ------------------------------------------------------------------------


# Annotations: removing them changes no validation.
ANNOTATION_KEYWORDS = frozenset(
    {
        "title",
        "$schema",
        "$id",
        "$comment",
        "$anchor",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "discriminator",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)

JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}
    ),
    "array": frozenset(
        {
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
            "additionalItems",
        }
    ),
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
            "propertyOrdering",
        }
    ),
}
TYPE_KEYWORDS = {**TYPE_KEYWORDS, "integer": TYPE_KEYWORDS["number"]}
ALL_TYPE_KEYWORDS = frozenset().union(*TYPE_KEYWORDS.values())

# Where sub-schemas live (keyword -> one schema / list of schemas / name -> schema map):
# the one table, shared with the neutral schema cleaner.
SUBSCHEMA_KEYWORDS = _SCHEMA_KEYS
SUBSCHEMA_LIST_KEYWORDS = _SCHEMA_LIST_KEYS
SUBSCHEMA_MAP_KEYWORDS = _SCHEMA_MAP_KEYS


# -- small helpers ------------------------------------------------------------------------


def pointer_token(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def brief(value: Any, limit: int = 120) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def matches_type(value: Any, t: str) -> bool:
    jt = json_type(value)
    if jt == t:
        return True
    if t == "number" and jt == "integer":
        return True
    return t == "integer" and isinstance(value, float) and value.is_integer()


def add_note(out: dict[str, Any], notes: list[str]) -> None:
    if not notes:
        return
    text = "(" + "; ".join(notes) + ")"
    desc = out.get("description")
    out["description"] = f"{desc} {text}" if isinstance(desc, str) and desc else text


class ChangeLog:
    """Collects changes, each once (a definition inlined twice reports once)."""

    __slots__ = ("items", "seen")

    def __init__(self) -> None:
        self.items: list[SchemaChange] = []
        self.seen: set[tuple[str, str, str]] = set()

    def add(self, path: str, kind: str, severity: Severity, message: str) -> None:
        key = (path, kind, message)
        if key not in self.seen:
            self.seen.add(key)
            self.items.append(SchemaChange(path, kind, severity, message))

    def warnings(self) -> list[SchemaChange]:
        return [c for c in self.items if c.severity != "info"]


def resolve_ref(doc: Mapping[str, Any], ref: Any, path: str) -> tuple[Any, str]:
    """The target of a local ``$ref`` and its JSON pointer; SchemaCompileError otherwise."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        raise SchemaCompileError(
            f"$ref {ref!r} at #{path} is not a local reference; only references inside the "
            f'schema ("#/$defs/Name") can be compiled: inline the remote schema first'
        )
    node: Any = doc
    pointer = ""
    for raw in ref[2:].split("/") if ref != "#" else ():
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        pointer += "/" + pointer_token(token)
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise SchemaCompileError(
                f"$ref {ref!r} at #{path} does not resolve: nothing at {pointer!r}; "
                f"check the name under $defs"
            )
    if not isinstance(node, (Mapping, bool)):
        raise SchemaCompileError(
            f"$ref {ref!r} at #{path} points at a {type(node).__name__}, not a schema"
        )
    return node, pointer


def split_type_list(node: Mapping[str, Any]) -> dict[str, Any]:
    """``{"type": [A, B], ...}`` as ``{"anyOf": [{"type": A, ...A's keys}, ...], ...rest}``."""
    types = [t for t in node["type"] if isinstance(t, str)]
    enum = node.get("enum") if isinstance(node.get("enum"), list) else None
    outer = {
        k: v for k, v in node.items() if k not in ALL_TYPE_KEYWORDS and k not in ("type", "enum")
    }
    has_const = "const" in outer
    const = outer.pop("const", None)
    branches: list[dict[str, Any]] = []
    for t in dict.fromkeys(types):
        branch: dict[str, Any] = {"type": t}
        for k in TYPE_KEYWORDS.get(t, ()):
            if k in node:
                branch[k] = node[k]
        if enum is not None:
            values = [v for v in enum if matches_type(v, t)]
            if not values:
                continue
            if t != "null":
                branch["enum"] = values
        if has_const:
            if not matches_type(const, t):
                continue
            branch["const"] = const
        branches.append(branch)
    if not branches:
        return {**outer, "enum": []}
    if len(branches) == 1:
        return {**outer, **branches[0]}
    existing = outer.pop("anyOf", None)
    if isinstance(existing, list):
        return {**outer, "allOf": [{"anyOf": branches}, {"anyOf": existing}]}
    return {**outer, "anyOf": branches}


def check_root(schema: Any, provider: str, changes: ChangeLog) -> dict[str, Any]:
    """The root as an object schema with ``type`` and ``properties``; ``$ref`` roots inlined."""
    if not isinstance(schema, Mapping):
        raise SchemaCompileError(
            f"a tool's input schema must be a JSON object (dict), got {type(schema).__name__}"
        )
    root = dict(schema)
    if "$ref" in root:
        target, pointer = resolve_ref(root, root["$ref"], "")
        if not isinstance(target, Mapping) or target is schema:
            raise SchemaCompileError(
                f"the root $ref {root['$ref']!r} must point at an object schema under $defs"
            )
        siblings = {
            k: v
            for k, v in root.items()
            if k != "$ref" and not (k == "properties" and v == {} and "properties" in target)
        }
        root = {**target, **siblings}
        changes.add(
            "",
            "inlined_ref",
            "info",
            f"the root was a reference to {pointer!r}; {provider} needs the object schema "
            f"itself at the root, so it was copied there",
        )
    t = root.get("type")
    if t is None:
        if any(k in root for k in ("anyOf", "oneOf", "allOf", "enum", "const")):
            raise SchemaCompileError(
                f'{provider} needs an object schema at the root ("type": "object"), got a '
                f"schema without a type "
                f"({', '.join(sorted(k for k in root if k in SUBSCHEMA_LIST_KEYWORDS))}"
                f"); wrap the union in a property of an object"
            )
        root["type"] = "object"
        changes.add("", "added_type", "info", 'the root had no type; "type": "object" was added')
    elif t != "object":
        raise SchemaCompileError(
            f'{provider} needs an object schema at the root ("type": "object"), got type '
            f"{t!r}; make the tool's input a model (or a dict schema) with named properties"
        )
    if "properties" not in root:
        root["properties"] = {}
        changes.add(
            "", "added_properties", "info", 'the root had no "properties"; an empty map was added'
        )
    return root


# -- cleanups every compiler may apply ----------------------------------------------------


def safe_cleanup(root: dict[str, Any], changes: ChangeLog) -> dict[str, Any]:
    out = dict(root)
    if "$schema" in out:
        del out["$schema"]
        changes.add("", "removed_keyword", "info", '"$schema" was removed from the root')
    check_refs(out)
    return out


def check_refs(doc: Mapping[str, Any]) -> None:
    """Raise SchemaCompileError for any $ref that is not local or does not resolve."""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, bool):
            return
        if not isinstance(node, Mapping):
            raise SchemaCompileError(
                f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
            )
        if "$ref" in node:
            resolve_ref(doc, node["$ref"], path)
        for key, value in node.items():
            if key in SUBSCHEMA_MAP_KEYWORDS and isinstance(value, Mapping):
                for name, sub in value.items():
                    walk(sub, f"{path}/{key}/{pointer_token(name)}")
            elif key in SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
                for i, sub in enumerate(value):
                    walk(sub, f"{path}/{key}/{i}")
            elif key in SUBSCHEMA_KEYWORDS:
                walk(value, f"{path}/{key}")

    walk(doc, "")


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


def format_report(reports: Iterable[CompileReport], *, verbose: bool = False) -> str:
    """Human-readable text for ``toolwire check``: warnings and errors always, ``info``
    changes when ``verbose``, why strict mode is off, and a summary line."""
    reports = list(reports)
    lines: list[str] = []
    lossless = failed = 0
    for r in reports:
        errors = [c for c in r.changes if c.severity == "error"]
        warnings = [c for c in r.changes if c.severity == "warning"]
        infos = [c for c in r.changes if c.severity == "info"]
        if errors:
            failed += 1
            status = "cannot be compiled"
        elif warnings:
            status = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
        else:
            lossless += 1
            status = "lossless"
        extra = [r.target]
        if r.strict is not None:
            extra.append(f"strict: {'on' if r.strict else 'off'}")
        detail = f" ({', '.join(extra)})" if extra else ""
        lines.append(f"tool `{r.tool}` for {r.provider}{detail}: {status}")
        shown = [*errors, *warnings, *(infos if verbose else ())]
        for c in shown:
            lines.append(f"  {c.severity:<7} #{c.path} {c.kind}: {c.message}")
        if infos and not verbose:
            lines.append(f"  ({len(infos)} lossless change{'s' if len(infos) != 1 else ''})")
        if r.strict is False and r.strict_blockers:
            lines.append("  strict mode is off because strict mode would lose:")
            for c in r.strict_blockers:
                lines.append(f"    #{c.path} {c.kind}: {c.message}")
    n = len(reports)
    providers = sorted({r.provider for r in reports})
    lines.append(
        f"{n} tool{'s' if n != 1 else ''} checked for {', '.join(providers) or '-'}: "
        f"{lossless} lossless, {n - lossless - failed} with warnings, {failed} failed"
    )
    return "\n".join(lines)


publish(globals())
