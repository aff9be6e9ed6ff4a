"""Per-provider schema compilers with loss reports.

A tool's neutral input schema (pydantic's JSON Schema, cleaned by ``_schema``)
is compiled into what each provider accepts. Every compiler returns the new
schema *and* a :class:`CompileReport` listing each change, so ``toolwire check``
can warn at registration time instead of the provider failing at run time.

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
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Union
from urllib.parse import unquote

import attrs

from toolwire._errors import ToolDefinitionError, ToolwireError, UsageError
from toolwire._exports import publish
from toolwire._schema import _SCHEMA_KEYS, _SCHEMA_LIST_KEYS, _SCHEMA_MAP_KEYS
from toolwire._tools import Tool, ToolDef

if TYPE_CHECKING:
    from toolwire._turn import ResolvedTool

__all__ = [
    "GEMINI_SCHEMA_KEYS",
    "OPENAI_STRICT_FORMATS",
    "CompileOptions",
    "CompileReport",
    "CompiledTool",
    "OpenAIStrictLimits",
    "SchemaChange",
    "SchemaCompileError",
    "SchemaCompiler",
    "UnknownSchemaCompilerError",
    "check_tools",
    "choose_gemini_schema",
    "compile_anthropic",
    "compile_gemini",
    "compile_gemini_json_schema",
    "compile_openai",
    "compile_openai_strict",
    "compile_tool",
    "format_report",
    "register_schema_compiler",
    "schema_compiler",
    "schema_compilers",
    "strip_strict_nulls",
]

Severity = Literal["info", "warning", "error"]
StrictMode = Literal["auto", True, False]
SchemaTarget = Literal["parameters", "parametersJsonSchema", "input_schema"]
GeminiTarget = Literal["auto", "parameters", "parametersJsonSchema"]


# -- errors (belong in _errors.py; kept here while that module is being edited) ------------


class SchemaCompileError(ToolDefinitionError):
    """A tool's schema cannot be compiled for a provider at all.

    Raised for a root that is not an object schema, a ``$ref`` that is not
    local or does not resolve, a ``false`` schema, or an unknown ``type``.
    """


class UnknownSchemaCompilerError(ToolwireError, LookupError):
    """No schema compiler is registered under that provider name."""


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

    When ``restores_defaults`` is true (OpenAI strict made optional fields
    required and nullable), pass the model's argument object through
    :meth:`restore_arguments` before validation so omitted-means-default
    fields get their defaults back.
    """

    name: str
    schema: dict[str, Any]
    strict: bool | None
    report: CompileReport
    target: SchemaTarget = "parameters"
    original_schema: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    restores_defaults: bool = False
    _memo: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    def restore_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The model's arguments with strict-mode nulls removed (see :func:`strip_strict_nulls`)."""
        if not self.restores_defaults:
            return arguments
        doc = self.original_schema
        result = _strip(arguments, doc, doc, 0, self._memo)
        return result if isinstance(result, dict) else dict(arguments)


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


# -- provider rules -------------------------------------------------------------------------

#: String formats OpenAI strict mode accepts (Structured Outputs guide, "Supported schemas").
OPENAI_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

# Keywords strict mode does not support and that constrain values: moved into the
# description (pydantic-ai's list plus the guide's "Not supported"). minLength/maxLength are
# **unverified**: the guide does not list them as supported, pydantic-ai treats them as
# unsupported, so do we.
_STRICT_UNSUPPORTED = frozenset(
    {
        "minLength",
        "maxLength",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "additionalItems",
    }
)
_STRICT_KEEP = frozenset(
    {
        "description",
        "title",  # not in the guide's list; the openai SDK sends pydantic titles in strict mode
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
        "enum",
        "const",
    }
)
_REGEX_UNSUPPORTED = re.compile(r"\(\?<?[=!]|\\[1-9]")

#: Keys the Gemini ``parameters`` field (OpenAPI ``Schema`` proto) accepts, per the 2024 proto
#: plus the later additions (``minimum``, ``maximum``, ``anyOf``, ``propertyOrdering``). ``title``
#: and ``default`` were added too but are dropped on purpose (python-genai#1732, litellm#6459).
#: ``minLength``/``maxLength``/``pattern`` appear in google-genai's ``Schema`` model but not in
#: the proto history we have: **unverified**, so they are moved into the description.
GEMINI_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
    }
)
# Gemini's documented formats per type (Gemini API ``Schema`` reference; **unverified** in the
# shared reference, which does not list formats).
_GEMINI_FORMATS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"enum", "date-time"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}

# Annotations: removing them changes no validation.
_ANNOTATIONS = frozenset(
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
# Formats pydantic emits that no validator checks (pure annotation).
_ANNOTATION_FORMATS = frozenset({"path", "password", "binary"})

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_TYPE_KEYS: Mapping[str, frozenset[str]] = {
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
_TYPE_KEYS = {**_TYPE_KEYS, "integer": _TYPE_KEYS["number"]}
_ALL_TYPE_KEYS = frozenset().union(*_TYPE_KEYS.values())

# Where sub-schemas live (keyword -> one schema / list of schemas / name -> schema map):
# the one table, shared with the neutral schema cleaner.
_SUB_ONE = _SCHEMA_KEYS
_SUB_LIST = _SCHEMA_LIST_KEYS
_SUB_MAP = _SCHEMA_MAP_KEYS

_MAX_INLINED_NODES = 20_000


# -- small helpers ------------------------------------------------------------------------


def _tok(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _brief(value: Any, limit: int = 120) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type(value: Any) -> str:
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


def _matches_type(value: Any, t: str) -> bool:
    jt = _json_type(value)
    if jt == t:
        return True
    if t == "number" and jt == "integer":
        return True
    return t == "integer" and isinstance(value, float) and value.is_integer()


def _infer_type(values: Iterable[Any]) -> str | None:
    types = {_json_type(v) for v in values if v is not None}
    if types == {"integer", "number"}:
        return "number"
    return types.pop() if len(types) == 1 else None


def _add_note(out: dict[str, Any], notes: list[str]) -> None:
    if not notes:
        return
    text = "(" + "; ".join(notes) + ")"
    desc = out.get("description")
    out["description"] = f"{desc} {text}" if isinstance(desc, str) and desc else text


class _Changes:
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


def _resolve(doc: Mapping[str, Any], ref: Any, path: str) -> tuple[Any, str]:
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
        pointer += "/" + _tok(token)
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


def _accepts_null(node: Any, doc: Mapping[str, Any], hops: int = 0) -> bool:
    """Does ``node`` accept ``null``? (Unresolvable references count as yes: keep the value.)"""
    if node is True:
        return True
    if not isinstance(node, Mapping) or hops > 32:
        return node is not False
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t) or node.get("nullable") is True:
        return True
    if "enum" in node:
        return isinstance(node["enum"], list) and None in node["enum"]
    if "const" in node:
        return node["const"] is None
    if "$ref" in node:
        try:
            target, _ = _resolve(doc, node["$ref"], "")
        except SchemaCompileError:
            return True
        return _accepts_null(target, doc, hops + 1)
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            return any(_accepts_null(b, doc, hops + 1) for b in branches)
    branches = node.get("allOf")
    if isinstance(branches, list) and branches:
        return all(_accepts_null(b, doc, hops + 1) for b in branches)
    return t is None


def _split_type_list(node: Mapping[str, Any]) -> dict[str, Any]:
    """``{"type": [A, B], ...}`` as ``{"anyOf": [{"type": A, ...A's keys}, ...], ...rest}``."""
    types = [t for t in node["type"] if isinstance(t, str)]
    enum = node.get("enum") if isinstance(node.get("enum"), list) else None
    outer = {k: v for k, v in node.items() if k not in _ALL_TYPE_KEYS and k not in ("type", "enum")}
    has_const = "const" in outer
    const = outer.pop("const", None)
    branches: list[dict[str, Any]] = []
    for t in dict.fromkeys(types):
        branch: dict[str, Any] = {"type": t}
        for k in _TYPE_KEYS.get(t, ()):
            if k in node:
                branch[k] = node[k]
        if enum is not None:
            values = [v for v in enum if _matches_type(v, t)]
            if not values:
                continue
            if t != "null":
                branch["enum"] = values
        if has_const:
            if not _matches_type(const, t):
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


def _check_root(schema: Any, provider: str, changes: _Changes) -> dict[str, Any]:
    """The root as an object schema with ``type`` and ``properties``; ``$ref`` roots inlined."""
    if not isinstance(schema, Mapping):
        raise SchemaCompileError(
            f"a tool's input schema must be a JSON object (dict), got {type(schema).__name__}"
        )
    root = dict(schema)
    if "$ref" in root:
        target, pointer = _resolve(root, root["$ref"], "")
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
                f"schema without a type ({', '.join(sorted(k for k in root if k in _SUB_LIST))}"
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


# -- OpenAI strict ---------------------------------------------------------------------------


class _Strict:
    def __init__(
        self, doc: Mapping[str, Any], root: dict[str, Any], changes: _Changes, force: bool
    ) -> None:
        self.doc = doc
        self.root = root
        self.changes = changes
        self.force = force

    def run(self) -> dict[str, Any]:
        return self.node(self.root, "", is_root=True)

    def warn(self, path: str, kind: str, message: str) -> None:
        self.changes.add(path, kind, "warning", message)

    def info(self, path: str, kind: str, message: str) -> None:
        self.changes.add(path, kind, "info", message)

    def node(self, node: Any, path: str, *, is_root: bool = False) -> dict[str, Any]:
        if node is True:
            node = {}
        if node is False:
            raise SchemaCompileError(f"the schema at #{path} is `false` (nothing is valid)")
        if not isinstance(node, Mapping):
            raise SchemaCompileError(
                f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
            )
        node = dict(node)
        if node.get("nullable") is True:
            del node["nullable"]
            t = node.get("type")
            if isinstance(t, str):
                node["type"] = [t, "null"]
            elif "enum" in node or "anyOf" in node or "$ref" in node:
                node = {"anyOf": [node, {"type": "null"}]}
            self.info(path, "rewrote_nullable", '"nullable: true" became a union with null')
        elif "nullable" in node:
            del node["nullable"]
        t = node.get("type")
        if isinstance(t, list):
            non_null = [x for x in t if x != "null"]
            simple = (
                len(non_null) == 1
                and non_null[0] in _PRIMITIVES
                and "enum" not in node
                and "const" not in node
            )
            if len(t) == 1:
                node["type"] = t[0]
            elif not simple:
                node = _split_type_list(node)
                self.info(path, "rewrote_union", "a list of types became an anyOf of one type each")
        out: dict[str, Any] = {}
        notes: list[str] = []
        self.annotations(node, out, notes, path)

        if "$ref" in node:
            ref = node["$ref"]
            _resolve(self.doc, ref, path)
            leftover = [k for k in node if k != "$ref" and k not in _ANNOTATIONS and k != "default"]
            leftover = [k for k in leftover if k != "description"]
            if leftover:
                self.warn(
                    path,
                    "lost_constraint",
                    f"keywords next to $ref ({', '.join(sorted(leftover))}) were dropped; strict "
                    f"mode takes a reference alone: move them into the referenced definition",
                )
            _add_note(out, notes)
            if out:
                self.info(
                    path,
                    "wrapped_ref",
                    "a $ref with sibling keywords was wrapped as anyOf: [{$ref}] so the "
                    "description stays (strict mode does not allow keywords beside $ref)",
                )
                return {"anyOf": [{"$ref": ref}], **out}
            return {"$ref": ref}

        if "allOf" in node:
            node = self.merge_all_of(node, path)
            if "$ref" in node:
                return self.node(node, path)

        for key in ("anyOf", "oneOf"):
            if key in node and isinstance(node[key], list):
                branches = [self.node(b, f"{path}/{key}/{i}") for i, b in enumerate(node[key])]
                if key == "oneOf":
                    if "discriminator" in node:
                        self.info(
                            path,
                            "rewrote_union",
                            "oneOf became anyOf (strict mode has no oneOf); the branches are "
                            "told apart by their discriminator, so nothing is lost",
                        )
                    else:
                        self.warn(
                            path,
                            "rewrote_union",
                            "oneOf became anyOf (strict mode has no oneOf): a value matching "
                            "several branches is now accepted by the schema",
                        )
                out.setdefault("anyOf", []).extend(branches)

        t = node.get("type")
        if t is not None and not isinstance(t, (str, list)):
            raise SchemaCompileError(f"the type at #{path} must be a string, got {t!r}")
        types = [t] if isinstance(t, str) else list(t or [])
        for x in types:
            if x not in _JSON_TYPES:
                raise SchemaCompileError(
                    f"unknown type {x!r} at #{path}; JSON Schema types are "
                    f"{', '.join(sorted(_JSON_TYPES))}"
                )
        if t is not None:
            out["type"] = t
        is_object = "object" in types or (
            t is None and ("properties" in node or "additionalProperties" in node)
        )
        if is_object and t is None:
            out["type"] = "object"
            self.info(path, "added_type", 'a schema with properties got "type": "object"')
        is_array = "array" in types or (t is None and ("items" in node or "prefixItems" in node))
        if is_array and t is None:
            out["type"] = "array"
            self.info(path, "added_type", 'a schema with items got "type": "array"')

        if is_object:
            self.object(node, out, notes, path, is_root)
        if is_array:
            self.array(node, out, notes, path)

        for key, value in node.items():
            if key in out or key in ("type", "anyOf", "oneOf", "allOf", "$defs", "definitions"):
                continue
            if key in ("default", "nullable") or key in _ANNOTATIONS:
                continue
            if is_object and key in ("properties", "required", "additionalProperties"):
                continue
            if is_array and key in ("items", "prefixItems"):
                continue
            if key == "format":
                if value in OPENAI_STRICT_FORMATS:
                    out[key] = value
                else:
                    notes.append(f"format: {value}")
                    self.info(
                        path,
                        "described_keyword",
                        f"format {value!r} is not one strict mode supports "
                        f"({', '.join(sorted(OPENAI_STRICT_FORMATS))}); it was moved into the "
                        f"description",
                    )
            elif key == "pattern":
                if isinstance(value, str) and _REGEX_UNSUPPORTED.search(value):
                    notes.append(f"pattern: {value}")
                    self.warn(
                        path,
                        "lost_constraint",
                        f"pattern {value!r} uses lookaround or back-references, which strict "
                        f"mode's regex engine does not support; it was moved into the "
                        f"description and is no longer enforced",
                    )
                else:
                    out[key] = value
            elif key in _STRICT_KEEP:
                out[key] = value
            elif key in _STRICT_UNSUPPORTED or key in _SUB_ONE or key in _SUB_MAP:
                notes.append(f"{key}: {_brief(value)}")
                self.warn(
                    path,
                    "lost_constraint",
                    f"{key} is not supported in strict mode; it was moved into the description, "
                    f"so the model is told but a value breaking it can still be sent",
                )
            else:
                self.info(
                    path,
                    "removed_keyword",
                    f"unknown keyword {key!r} was removed (strict mode accepts only the "
                    f"documented keywords)",
                )

        for key in ("$defs", "definitions"):
            defs = node.get(key)
            if isinstance(defs, Mapping):
                out[key] = {
                    name: self.node(sub, f"{path}/{key}/{_tok(name)}") for name, sub in defs.items()
                }
        if not any(k in out for k in ("type", "anyOf", "$ref", "enum", "const")):
            self.warn(
                path,
                "untyped_schema",
                "this schema accepts any value, which strict mode cannot express (every schema "
                "needs a type); give it a type"
                + (
                    ": it is sent as string | number | boolean | null"
                    if self.force
                    else ". Without strict it is sent as is"
                ),
            )
            out["anyOf"] = [
                {"type": "string"},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "null"},
            ]
        _add_note(out, notes)
        return out

    def annotations(
        self, node: Mapping[str, Any], out: dict[str, Any], notes: list[str], path: str
    ) -> None:
        desc = node.get("description")
        if isinstance(desc, str):
            out["description"] = desc
        if "title" in node and isinstance(node["title"], str):
            out["title"] = node["title"]
        for key in node:
            if key in _ANNOTATIONS and key != "title":
                self.info(path, "removed_keyword", f"annotation {key!r} was removed")
        if "default" in node:
            default = node["default"]
            if default is None:
                self.info(
                    path,
                    "dropped_default",
                    "default null was removed (strict mode has no default); the field is "
                    "nullable, so sending null means the same",
                )
            else:
                notes.append(f"default: {_brief(default)}")
                self.info(
                    path,
                    "dropped_default",
                    f"default {_brief(default)} was moved into the description (strict mode "
                    f"has no default keyword)",
                )

    def merge_all_of(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        parts = node.pop("allOf")
        if not isinstance(parts, list) or not parts:
            return node
        if len(parts) > 1:
            self.warn(
                path,
                "lost_constraint",
                f"allOf with {len(parts)} parts is not supported in strict mode; only the first "
                f"part was kept: merge them into one model",
            )
        first = parts[0]
        if first is True:
            return node
        if not isinstance(first, Mapping):
            raise SchemaCompileError(f"allOf[0] at #{path} is not a schema")
        self.info(path, "merged_allof", "allOf with one part was merged into the schema")
        return {**first, **node}

    def object(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        notes: list[str],
        path: str,
        is_root: bool,
    ) -> None:
        props = node.get("properties") or {}
        if not isinstance(props, Mapping):
            raise SchemaCompileError(f"properties at #{path} must be an object")
        required_in = node.get("required") or []
        required = {r for r in required_in if isinstance(r, str)}
        unknown = sorted(required - set(props))
        if unknown:
            self.info(
                path,
                "removed_keyword",
                f"required names without a property ({', '.join(unknown)}) were removed",
            )
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            sub_path = f"{path}/properties/{_tok(name)}"
            compiled = self.node(sub, sub_path)
            if name not in required:
                if _accepts_null(sub, self.doc):
                    self.info(
                        sub_path,
                        "made_required",
                        f"optional property {name!r} is listed in required (strict mode needs "
                        f"every property there); it already accepts null, so the model sends "
                        f"null instead of leaving it out",
                    )
                else:
                    compiled = _strict_nullable(compiled)
                    has_default = isinstance(sub, Mapping) and "default" in sub
                    self.info(
                        sub_path,
                        "made_required_nullable",
                        f"optional property {name!r} became required and nullable (strict mode "
                        f"needs every property in required); the model sends null instead of "
                        f"leaving it out, and strip_strict_nulls() removes that null before "
                        f"validation" + (" so the default applies" if has_default else ""),
                    )
            new_props[name] = compiled
        out["properties"] = new_props
        out["required"] = list(new_props)
        extra = node.get("additionalProperties", None)
        if "additionalProperties" not in node:
            if not is_root:
                self.info(
                    path,
                    "closed_object",
                    "additionalProperties was not set; strict mode needs it false, so the "
                    "model can send only the listed properties",
                )
        elif extra is True or (isinstance(extra, Mapping) and not extra):
            notes.append("free-form object: any keys")
            self.warn(
                path,
                "free_form_map",
                "this object accepts any extra keys, which strict mode cannot express "
                "(additionalProperties must be false): the model can send only the listed "
                "properties. Use a model with named fields, or a list of key/value pairs",
            )
        elif isinstance(extra, Mapping):
            notes.append(f"free-form object; each value: {_brief(extra)}")
            self.warn(
                path,
                "free_form_map",
                f"a map (additionalProperties {_brief(extra)}) cannot be expressed in strict "
                f"mode, which requires additionalProperties false: the model can only send an "
                f"empty object here. Use a model with named fields, or a list of key/value "
                f"pairs; or leave strict off for this tool",
            )
        out["additionalProperties"] = False

    def array(
        self, node: Mapping[str, Any], out: dict[str, Any], notes: list[str], path: str
    ) -> None:
        if "prefixItems" in node and isinstance(node["prefixItems"], list):
            branches = [
                self.node(b, f"{path}/prefixItems/{i}") for i, b in enumerate(node["prefixItems"])
            ]
            notes.append(f"positions: {_brief(node['prefixItems'])}")
            self.warn(
                path,
                "lost_constraint",
                "prefixItems (a tuple) is not supported in strict mode; each position may now "
                "hold any of the tuple's types (the per-position types are in the description)",
            )
            unique = [b for i, b in enumerate(branches) if b not in branches[:i]]
            out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
            n = len(branches)
            if "minItems" not in node:
                out["minItems"] = n
            if "maxItems" not in node and node.get("items") is False:
                out["maxItems"] = n
            return
        items = node.get("items")
        if items is None:
            items = {}
        out["items"] = self.node(items, f"{path}/items")


def _strict_nullable(compiled: dict[str, Any]) -> dict[str, Any]:
    t = compiled.get("type")
    if "anyOf" in compiled and "type" not in compiled:
        return {**compiled, "anyOf": [*compiled["anyOf"], {"type": "null"}]}
    if (
        isinstance(t, str)
        and t in _PRIMITIVES
        and "enum" not in compiled
        and "const" not in compiled
    ):
        return {**compiled, "type": [t, "null"]}
    outer: dict[str, Any] = {k: compiled[k] for k in ("description", "title") if k in compiled}
    inner = {k: v for k, v in compiled.items() if k not in outer}
    return {"anyOf": [inner, {"type": "null"}], **outer}


def _strict_limits(
    schema: Mapping[str, Any], limits: OpenAIStrictLimits, changes: _Changes
) -> None:
    n_props = 0
    n_enum = 0
    chars = 0
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, Mapping):
            chars += sum(len(k) for k in defs)

    def walk(node: Any) -> None:
        nonlocal n_props, n_enum, chars
        if isinstance(node, list):
            for x in node:
                walk(x)
            return
        if not isinstance(node, Mapping):
            return
        props = node.get("properties")
        if isinstance(props, Mapping):
            n_props += len(props)
            chars += sum(len(k) for k in props)
        enum = node.get("enum")
        if isinstance(enum, list):
            n_enum += len(enum)
            enum_chars = sum(len(v) for v in enum if isinstance(v, str))
            chars += enum_chars
            if len(enum) > limits.large_enum_size and enum_chars > limits.max_large_enum_chars:
                changes.add(
                    "",
                    "limit_exceeded",
                    "warning",
                    f"a string enum with {len(enum)} values totals {enum_chars} characters; "
                    f"OpenAI allows at most {limits.max_large_enum_chars} for an enum with more "
                    f"than {limits.large_enum_size} values",
                )
        if isinstance(node.get("const"), str):
            chars += len(node["const"])
        for key, value in node.items():
            if key in _SUB_MAP and isinstance(value, Mapping):
                for sub in value.values():
                    walk(sub)
            elif key in _SUB_LIST or key in _SUB_ONE:
                walk(value)

    walk(schema)
    depth = _max_depth(schema)
    checks = (
        (n_props, limits.max_properties, "object properties in total"),
        (depth, limits.max_depth, "levels of object nesting"),
        (chars, limits.max_total_chars, "characters of property, definition and enum names"),
        (n_enum, limits.max_enum_values, "enum values in total"),
    )
    for value, limit, what in checks:
        if value > limit:
            changes.add(
                "",
                "limit_exceeded",
                "warning",
                f"{value} {what} exceeds OpenAI's strict-mode limit of {limit}; the request "
                f"would be rejected: split the tool or simplify its input",
            )


def _max_depth(doc: Mapping[str, Any]) -> int:
    """Nested object levels from the root, following $ref (a cycle counts once)."""
    memo: dict[str, int] = {}

    def depth(node: Any, stack: tuple[str, ...]) -> int:
        if isinstance(node, list):
            return max((depth(x, stack) for x in node), default=0)
        if not isinstance(node, Mapping):
            return 0
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in stack:
                return 0
            if ref in memo:
                return memo[ref]
            try:
                target, _ = _resolve(doc, ref, "")
            except SchemaCompileError:
                return 0
            d = depth(target, (*stack, ref))
            if not stack or all(r != ref for r in stack):
                memo[ref] = d
            return d
        below = 0
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key in _SUB_MAP and isinstance(value, Mapping):
                below = max(below, *(depth(s, stack) for s in value.values()), 0)
            elif key in _SUB_LIST or key in _SUB_ONE:
                below = max(below, depth(value, stack))
        is_object = node.get("type") == "object" or "properties" in node
        return below + (1 if is_object else 0)

    return depth(doc, ())


def compile_openai_strict(
    schema: Mapping[str, Any],
    *,
    strict_mode: StrictMode = "auto",
    tool: str = "",
    provider: str = "openai",
    limits: OpenAIStrictLimits | None = None,
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for OpenAI function calling, in strict mode when it can be.

    Strict rules (Structured Outputs guide): every object gets
    ``additionalProperties: false`` and lists every property in ``required``,
    optional ones made nullable (see :func:`strip_strict_nulls` for getting
    their defaults back); ``default`` and other unsupported keywords are
    removed (constraints moved into the description); ``$ref``/``$defs`` and
    recursion are kept; the limits are checked.

    ``strict_mode="auto"`` uses strict only when that is lossless and
    otherwise sends the schema with the safe cleanups and ``strict: false``
    (the reasons are in ``report.strict_blockers``); ``True`` forces strict
    and reports the losses; ``False`` never uses it.
    """
    if strict_mode not in ("auto", True, False):
        raise UsageError(f'strict_mode must be "auto", True or False, got {strict_mode!r}')
    limits = limits or OpenAIStrictLimits()
    safe_changes = _Changes()
    root = _check_root(schema, provider, safe_changes)
    safe = _safe_cleanup(root, safe_changes)
    strict_changes = _Changes()
    strict_changes.items.extend(safe_changes.items)
    strict_changes.seen.update(safe_changes.seen)
    strict_out = _Strict(root, root, strict_changes, force=strict_mode is True).run()
    _strict_limits(strict_out, limits, strict_changes)
    blockers = tuple(strict_changes.warnings())
    use_strict = strict_mode is True or (strict_mode == "auto" and not blockers)
    if use_strict:
        report = CompileReport(tool, provider, "parameters", tuple(strict_changes.items), True)
        return strict_out, report
    report = CompileReport(tool, provider, "parameters", tuple(safe_changes.items), False, blockers)
    return safe, report


def _safe_cleanup(root: dict[str, Any], changes: _Changes) -> dict[str, Any]:
    out = dict(root)
    if "$schema" in out:
        del out["$schema"]
        changes.add("", "removed_keyword", "info", '"$schema" was removed from the root')
    _check_refs(out)
    return out


def _check_refs(doc: Mapping[str, Any]) -> None:
    """Raise SchemaCompileError for any $ref that is not local or does not resolve."""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, bool):
            return
        if not isinstance(node, Mapping):
            raise SchemaCompileError(
                f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
            )
        if "$ref" in node:
            _resolve(doc, node["$ref"], path)
        for key, value in node.items():
            if key in _SUB_MAP and isinstance(value, Mapping):
                for name, sub in value.items():
                    walk(sub, f"{path}/{key}/{_tok(name)}")
            elif key in _SUB_LIST and isinstance(value, list):
                for i, sub in enumerate(value):
                    walk(sub, f"{path}/{key}/{i}")
            elif key in _SUB_ONE:
                walk(value, f"{path}/{key}")

    walk(doc, "")


def compile_openai(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "openai"
) -> tuple[dict[str, Any], CompileReport]:
    """The safe cleanups only (no strict): what :func:`compile_openai_strict` sends with
    ``strict_mode=False``."""
    return compile_openai_strict(schema, strict_mode=False, tool=tool, provider=provider)


# -- strict nulls -----------------------------------------------------------------------------


def strip_strict_nulls(
    arguments: Mapping[str, Any], original_schema: Mapping[str, Any]
) -> dict[str, Any]:
    """Undo strict mode's "optional means nullable" on the model's arguments.

    Strict mode makes every property required, so an optional field is sent
    as ``null`` where the model would have left it out. This removes each
    ``null`` whose property was optional in ``original_schema`` and does not
    accept null there, so validation applies the default again. Nested
    objects, arrays and ``$ref`` are followed; nothing else is touched. A
    new dict is returned; ``arguments`` is not modified.
    """
    result = _strip(arguments, original_schema, original_schema, 0, {})
    return result if isinstance(result, dict) else dict(arguments)


def _deref(node: Any, doc: Mapping[str, Any]) -> Any:
    for _ in range(32):
        if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
            return node
        try:
            node, _ptr = _resolve(doc, node["$ref"], "")
        except SchemaCompileError:
            return None
    return None


def _object_schemas(node: Any, doc: Mapping[str, Any], hops: int = 0) -> list[Mapping[str, Any]]:
    node = _deref(node, doc)
    if not isinstance(node, Mapping) or hops > 16:
        return []
    found: list[Mapping[str, Any]] = []
    if isinstance(node.get("properties"), Mapping):
        found.append(node)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for b in branches:
                found.extend(_object_schemas(b, doc, hops + 1))
    return found


def _array_items(node: Any, doc: Mapping[str, Any], hops: int = 0) -> Any:
    node = _deref(node, doc)
    if not isinstance(node, Mapping) or hops > 16:
        return None
    if "items" in node:
        return node["items"]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for b in branches:
                items = _array_items(b, doc, hops + 1)
                if items is not None:
                    return items
    return None


def _strip(
    value: Any, schema: Any, doc: Mapping[str, Any], depth: int, memo: dict[Any, Any]
) -> Any:
    # ``memo`` maps id(schema node) to what was worked out for it; the nodes belong to
    # ``doc``, which outlives the memo (per call, or held by the CompiledTool).
    if depth > 200:
        return value
    if isinstance(value, dict):
        key = ("o", id(schema))
        candidates = memo.get(key)
        if candidates is None:
            candidates = memo[key] = _object_schemas(schema, doc)
        if not candidates:
            return dict(value)
        chosen = next((c for c in candidates if value.keys() <= c["properties"].keys()), None)
        chosen = candidates[0] if chosen is None else chosen
        props: Mapping[str, Any] = chosen["properties"]
        required = chosen.get("required") or ()
        out: dict[str, Any] = {}
        for name, item in value.items():
            sub = props.get(name)
            if sub is None:
                out[name] = item
            elif item is None:
                nkey = ("n", id(chosen), name)
                keep = memo.get(nkey)
                if keep is None:
                    keep = memo[nkey] = name in required or _accepts_null(sub, doc)
                if keep:
                    out[name] = None
            elif isinstance(item, (dict, list)):
                out[name] = _strip(item, sub, doc, depth + 1, memo)
            else:
                out[name] = item
        return out
    if isinstance(value, list):
        ikey = ("i", id(schema))
        if ikey not in memo:
            memo[ikey] = _array_items(schema, doc)
        items = memo[ikey]
        if items is None:
            return value
        return [_strip(x, items, doc, depth + 1, memo) for x in value]
    return value


# -- Gemini (parameters: the OpenAPI subset) -----------------------------------------------------


class _Gemini:
    def __init__(self, doc: Mapping[str, Any], changes: _Changes) -> None:
        self.doc = doc
        self.changes = changes
        self.count = 0

    def warn(self, path: str, kind: str, message: str) -> None:
        self.changes.add(path, kind, "warning", message)

    def info(self, path: str, kind: str, message: str) -> None:
        self.changes.add(path, kind, "info", message)

    def node(self, node: Any, path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        self.count += 1
        if self.count > _MAX_INLINED_NODES:
            raise SchemaCompileError(
                f"inlining $defs for Gemini's parameters produces more than "
                f"{_MAX_INLINED_NODES} schemas; send parametersJsonSchema instead "
                f"(gemini_target='parametersJsonSchema'), which keeps $ref"
            )
        if node is True:
            node = {}
        if node is False:
            raise SchemaCompileError(f"the schema at #{path} is `false` (nothing is valid)")
        if not isinstance(node, Mapping):
            raise SchemaCompileError(
                f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
            )
        node = dict(node)

        if "$ref" in node:
            ref = node.pop("$ref")
            target, pointer = _resolve(self.doc, ref, path)
            rest = self.node(node, path, stack) if node else {}
            if pointer in stack:
                self.warn(
                    path,
                    "cut_recursion",
                    f"the recursive reference {ref!r} cannot be inlined (Gemini's parameters "
                    f"have no $ref); below this point any object is accepted. Use "
                    f"parametersJsonSchema, which keeps recursion",
                )
                is_obj = isinstance(target, Mapping) and (
                    target.get("type") == "object" or "properties" in target
                )
                base: dict[str, Any] = {"type": "object"} if is_obj else {}
                _add_note(base, ["recursive: same structure as its parent"])
            else:
                self.info(
                    path,
                    "inlined_ref",
                    f"the reference {ref!r} was inlined (Gemini's parameters have no $ref)",
                )
                base = self.node(target, pointer, (*stack, pointer))
            return _overlay(base, rest)

        if "allOf" in node:
            parts = node.pop("allOf")
            if isinstance(parts, list) and parts:
                if len(parts) > 1:
                    self.warn(
                        path,
                        "lost_constraint",
                        f"allOf with {len(parts)} parts is not supported by Gemini; only the "
                        f"first part was kept: merge them into one model",
                    )
                else:
                    self.info(path, "merged_allof", "allOf with one part was merged")
                base = self.node(parts[0], f"{path}/allOf/0", stack)
                rest = self.node(node, path, stack) if node else {}
                return _overlay(base, rest)

        t = node.get("type")
        if isinstance(t, list):
            if len(t) == 1:
                node["type"] = t[0]
            else:
                node = _split_type_list(node)
                if set(t) != {"null"} and len([x for x in t if x != "null"]) > 1:
                    self.info(path, "rewrote_union", "a list of types became anyOf")

        for key in ("anyOf", "oneOf"):
            if key in node and isinstance(node[key], list):
                return self.union(node, key, path, stack)

        out: dict[str, Any] = {}
        notes: list[str] = []
        t = node.get("type")
        if t is not None and (not isinstance(t, str) or t not in _JSON_TYPES):
            raise SchemaCompileError(
                f"unknown type {t!r} at #{path}; JSON Schema types are "
                f"{', '.join(sorted(_JSON_TYPES))}"
            )
        if t is None:
            if "properties" in node or "additionalProperties" in node:
                t = "object"
                self.info(path, "added_type", 'a schema with properties got "type": "object"')
            elif "items" in node or "prefixItems" in node:
                t = "array"
                self.info(path, "added_type", 'a schema with items got "type": "array"')
        if t == "null":
            out["nullable"] = True
            notes.append("always null")
            self.warn(
                path,
                "lost_constraint",
                'Gemini has no "null" type; this null-only schema became an untyped nullable one',
            )
            t = None
        if t is not None:
            out["type"] = t

        desc = node.get("description")
        if isinstance(desc, str):
            out["description"] = desc

        if "const" in node:
            value = node.pop("const")
            if "enum" not in node:
                node["enum"] = [value]
                self.info(path, "rewrote_const", "const became a one-value enum")
        if "enum" in node:
            self.enum(node["enum"], node, out, notes, path)

        if t == "object":
            self.object(node, out, notes, path, stack)
        elif t == "array":
            self.array(node, out, notes, path, stack)

        for key, value in node.items():
            if key in ("type", "description", "enum", "const", "$defs", "definitions"):
                continue
            if t == "object" and key in (
                "properties",
                "required",
                "additionalProperties",
                "propertyOrdering",
            ):
                continue
            if t == "array" and key in ("items", "prefixItems", "minItems", "maxItems"):
                continue
            if key == "nullable":
                if value is True:
                    out["nullable"] = True
            elif key == "default":
                if value is not None:
                    notes.append(f"default: {_brief(value)}")
                self.info(
                    path,
                    "dropped_default",
                    "default was removed (litellm#6459: Gemini rejects it)"
                    + (" and moved into the description" if value is not None else ""),
                )
            elif key == "format":
                allowed = _GEMINI_FORMATS.get(t or "", frozenset())
                if value in allowed:
                    out["format"] = value
                else:
                    notes.append(f"format: {value}")
                    self.info(
                        path,
                        "described_keyword",
                        f"format {value!r} is not one Gemini supports for type {t!r}; it was "
                        f"moved into the description",
                    )
            elif key in ("minimum", "maximum") and t in ("number", "integer", None):
                out[key] = value
            elif key in ("exclusiveMinimum", "exclusiveMaximum"):
                self.exclusive(key, value, t, out, notes, path)
            elif key in _ANNOTATIONS:
                self.info(path, "removed_keyword", f"annotation {key!r} was removed")
            elif (
                key in _ALL_TYPE_KEYS
                or key in _SUB_ONE
                or key in _SUB_MAP
                or key
                in (
                    "not",
                    "dependentRequired",
                )
            ):
                notes.append(f"{key}: {_brief(value)}")
                self.warn(
                    path,
                    "lost_constraint",
                    f"{key} is not part of Gemini's parameters schema; it was moved into the "
                    f"description, so the model is told but a value breaking it can be sent",
                )
            else:
                self.info(path, "removed_keyword", f"unknown keyword {key!r} was removed")
        _add_note(out, notes)
        return out

    def union(
        self, node: dict[str, Any], key: str, path: str, stack: tuple[str, ...]
    ) -> dict[str, Any]:
        branches = node.pop(key)
        if key == "oneOf":
            severity: Severity = "info" if "discriminator" in node else "warning"
            self.changes.add(path, "rewrote_union", severity, "oneOf became anyOf")
        nulls = [b for b in branches if _is_null_schema(b)]
        others = [(i, b) for i, b in enumerate(branches) if not _is_null_schema(b)]
        rest = self.node(node, path, stack) if node else {}
        compiled = [self.node(b, f"{path}/{key}/{i}", stack) for i, b in others]
        if nulls:
            self.info(
                path,
                "rewrote_nullable",
                "the union with null became nullable: true (Gemini's parameters have no null "
                "type); the other branch keeps all its properties",
            )
        if not compiled:
            return _overlay({"nullable": True} if nulls else {}, rest)
        if len(compiled) == 1:
            base = compiled[0]
            if nulls:
                base = {**base, "nullable": True}
            return _overlay(base, rest)
        if nulls:
            compiled = [{**b, "nullable": True} for b in compiled]
        return _overlay({"anyOf": compiled}, rest)

    def enum(
        self,
        values: Any,
        node: Mapping[str, Any],
        out: dict[str, Any],
        notes: list[str],
        path: str,
    ) -> None:
        if not isinstance(values, list):
            return
        if None in values:
            out["nullable"] = True
            values = [v for v in values if v is not None]
        if values and all(isinstance(v, str) for v in values):
            out["enum"] = values
            if out.get("type") is None:
                out["type"] = "string"
            return
        if not values:
            return
        notes.append("one of: " + ", ".join(_brief(v, 40) for v in values))
        if out.get("type") is None:
            inferred = _infer_type(values)
            if inferred is not None:
                out["type"] = inferred
        self.warn(
            path,
            "rewrote_enum",
            f"Gemini takes enum values only as strings; the allowed values {_brief(values)} "
            f"were moved into the description, so the model may send another value",
        )

    def exclusive(
        self,
        key: str,
        value: Any,
        t: str | None,
        out: dict[str, Any],
        notes: list[str],
        path: str,
    ) -> None:
        bound = "minimum" if key == "exclusiveMinimum" else "maximum"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.info(path, "removed_keyword", f"{key} {value!r} is not a number; removed")
            return
        if t == "integer" and float(value).is_integer():
            step = 1 if bound == "minimum" else -1
            new = int(value) + step
            current = out.get(bound)
            if current is None or (new > current if bound == "minimum" else new < current):
                out[bound] = new
            self.info(
                path,
                "rewrote_bound",
                f"{key} {value} became {bound} {new} (exact for integers; Gemini rejects {key})",
            )
            return
        out.setdefault(bound, value)
        notes.append(f"{key}: {value}")
        self.warn(
            path,
            "lost_constraint",
            f"{key} {value} became {bound} {value} (Gemini rejects {key}); the bound itself "
            f"is now allowed by the schema and is only excluded in the description",
        )

    def object(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        notes: list[str],
        path: str,
        stack: tuple[str, ...],
    ) -> None:
        props = node.get("properties") or {}
        if not isinstance(props, Mapping):
            raise SchemaCompileError(f"properties at #{path} must be an object")
        new_props = {
            name: self.node(sub, f"{path}/properties/{_tok(name)}", stack)
            for name, sub in props.items()
        }
        if new_props:
            out["properties"] = new_props
            required = [r for r in node.get("required") or () if r in new_props]
            if required:
                out["required"] = list(dict.fromkeys(required))
            order = node.get("propertyOrdering")
            if isinstance(order, list) and all(o in new_props for o in order):
                out["propertyOrdering"] = order
        extra = node.get("additionalProperties", None)
        if extra is False:
            self.info(
                path,
                "removed_keyword",
                "additionalProperties: false was removed (Gemini rejects the keyword); the "
                "model is not told that extra keys are refused",
            )
        elif extra is True or isinstance(extra, Mapping):
            value_desc = "any value" if extra is True or not extra else _brief(extra)
            notes.append(f"free-form object; each value: {value_desc}")
            self.warn(
                path,
                "free_form_map",
                f"a map (additionalProperties {_brief(extra)}) cannot be expressed in Gemini's "
                f"parameters: the schema now shows an object with no properties and the value "
                f"type is only in the description. parametersJsonSchema keeps it",
            )

    def array(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        notes: list[str],
        path: str,
        stack: tuple[str, ...],
    ) -> None:
        for key in ("minItems", "maxItems"):
            if key in node:
                out[key] = node[key]
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            compiled = [
                self.node(b, f"{path}/prefixItems/{i}", stack) for i, b in enumerate(prefix)
            ]
            unique = [b for i, b in enumerate(compiled) if b not in compiled[:i]]
            out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
            out.setdefault("minItems", len(prefix))
            if node.get("items") is False:
                out.setdefault("maxItems", len(prefix))
            notes.append(f"positions: {_brief(prefix)}")
            self.warn(
                path,
                "lost_constraint",
                "prefixItems (a tuple) became items: anyOf of its types; which type goes at "
                "which position is only in the description",
            )
            return
        items = node.get("items")
        out["items"] = self.node({} if items is None else items, f"{path}/items", stack)


def _is_null_schema(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if node.get("type") == "null":
        return True
    if "const" in node and node["const"] is None:
        return True
    enum = node.get("enum")
    return isinstance(enum, list) and enum == [None]


def _overlay(base: dict[str, Any], rest: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with the keys of the referring schema on top (its description wins)."""
    if not rest:
        return base
    out = dict(base)
    for key, value in rest.items():
        if key == "nullable":
            out["nullable"] = bool(out.get("nullable")) or bool(value)
        elif key == "type" and "type" in out and out["type"] != value:
            continue
        else:
            out[key] = value
    return out


def compile_gemini(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "gemini"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for Gemini's ``parameters`` field (its OpenAPI ``Schema`` subset).

    ``$ref``/``$defs`` are inlined (recursion is cut and reported),
    ``anyOf`` with null becomes ``nullable: true`` keeping every property of
    the other branch, ``const`` becomes a one-value string ``enum``,
    non-string enums move into the description, ``additionalProperties``,
    ``default``, ``title`` and ``$schema`` are dropped, unsupported formats and
    constraints move into the description. Only :data:`GEMINI_SCHEMA_KEYS`
    remain.
    """
    changes = _Changes()
    root = _check_root(schema, provider, changes)
    _check_refs(root)
    compiler = _Gemini(root, changes)
    body = {k: v for k, v in root.items() if k not in ("$defs", "definitions")}
    for key in ("$defs", "definitions"):
        if key in root:
            changes.add(
                "",
                "inlined_ref",
                "info",
                f"{key} was removed: every reference was inlined (Gemini's parameters have no "
                f"$ref)",
            )
    out = compiler.node(body, "", ("",))
    out["type"] = "object"
    out.pop("nullable", None)
    if not out.get("properties"):
        out.pop("properties", None)
        changes.add(
            "",
            "empty_parameters",
            "info",
            "the tool takes no arguments; Gemini rejects an empty properties map, so an adapter "
            "may leave parameters out of the declaration (unverified)",
        )
    return out, CompileReport(tool, provider, "parameters", tuple(changes.items))


# -- Gemini (parametersJsonSchema) and Anthropic: JSON Schema with light edits --------------------


def _map_schema(node: Any, path: str, fn: Callable[[dict[str, Any], str], dict[str, Any]]) -> Any:
    """Apply ``fn`` to every schema object, children first, keeping property names intact."""
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping):
        raise SchemaCompileError(
            f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
        )
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SUB_MAP and isinstance(value, Mapping):
            out[key] = {
                name: _map_schema(sub, f"{path}/{key}/{_tok(name)}", fn)
                for name, sub in value.items()
            }
        elif key in _SUB_LIST and isinstance(value, list):
            out[key] = [_map_schema(sub, f"{path}/{key}/{i}", fn) for i, sub in enumerate(value)]
        elif key in _SUB_ONE:
            out[key] = _map_schema(value, f"{path}/{key}", fn)
        else:
            out[key] = value
    return fn(out, path)


def compile_gemini_json_schema(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "gemini"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for Gemini's ``parametersJsonSchema`` field (ordinary JSON Schema).

    Keeps ``$ref``/``$defs``, ``anyOf``, ``additionalProperties``, null types and
    ``prefixItems`` (Google's structured-output post). Following pydantic-ai:
    removes ``$schema``, ``title``, ``discriminator`` and ``examples``; turns
    ``const`` into a one-value enum and string ``format`` into description
    text; rewrites ``exclusiveMinimum``/``exclusiveMaximum``. Which other
    keywords this field ignores or rejects is **unverified** (undocumented).
    """
    changes = _Changes()
    root = _check_root(schema, provider, changes)
    _check_refs(root)

    def edit(node: dict[str, Any], path: str) -> dict[str, Any]:
        notes: list[str] = []
        for key in ("$schema", "title", "discriminator", "examples"):
            if key in node and (key != "title" or isinstance(node[key], str)):
                del node[key]
                changes.add(path, "removed_keyword", "info", f"annotation {key!r} was removed")
        if "const" in node:
            value = node.pop("const")
            if "enum" not in node:
                node["enum"] = [value]
                inferred = _infer_type([value]) if value is not None else "null"
                if "type" not in node and inferred is not None:
                    node["type"] = inferred
            changes.add(path, "rewrote_const", "info", "const became a one-value enum")
        t = node.get("type")
        if isinstance(node.get("format"), str) and t in ("string", None):
            notes.append(f"format: {node.pop('format')}")
            changes.add(
                path,
                "described_keyword",
                "info",
                "the string format was moved into the description (as pydantic-ai does)",
            )
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            if key not in node:
                continue
            value = node.pop(key)
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                changes.add(path, "removed_keyword", "info", f"{key} {value!r} was removed")
            elif t == "integer" and float(value).is_integer():
                node.setdefault(bound, int(value) + (1 if bound == "minimum" else -1))
                changes.add(path, "rewrote_bound", "info", f"{key} {value} became {bound} (exact)")
            else:
                node.setdefault(bound, value)
                notes.append(f"{key}: {value}")
                changes.add(
                    path,
                    "lost_constraint",
                    "warning",
                    f"{key} {value} became {bound} {value}; the bound itself is excluded only "
                    f"in the description",
                )
        _add_note(node, notes)
        return node

    out = _map_schema(root, "", edit)
    return out, CompileReport(tool, provider, "parametersJsonSchema", tuple(changes.items))


def choose_gemini_schema(
    schema: Mapping[str, Any],
    *,
    json_schema_supported: bool = True,
    tool: str = "",
    provider: str = "gemini",
) -> tuple[Literal["parameters", "parametersJsonSchema"], dict[str, Any], CompileReport]:
    """Pick the Gemini field: ``parametersJsonSchema`` when the API takes it and it is
    lossless (or at least no worse than ``parameters``), else ``parameters``."""
    if json_schema_supported:
        js, js_report = compile_gemini_json_schema(schema, tool=tool, provider=provider)
        if js_report.lossless:
            return "parametersJsonSchema", js, js_report
        sub, sub_report = compile_gemini(schema, tool=tool, provider=provider)
        if sub_report.lossless or len(sub_report.warnings) < len(js_report.warnings):
            return "parameters", sub, sub_report
        return "parametersJsonSchema", js, js_report
    sub, sub_report = compile_gemini(schema, tool=tool, provider=provider)
    return "parameters", sub, sub_report


def compile_anthropic(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "anthropic"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for Anthropic's ``input_schema`` (JSON Schema): the root must be
    ``type: object`` with ``properties``; ``$schema`` is removed; the rest is kept."""
    changes = _Changes()
    root = _check_root(schema, provider, changes)
    out = _safe_cleanup(root, changes)
    return out, CompileReport(tool, provider, "input_schema", tuple(changes.items))


# -- registry --------------------------------------------------------------------------------

SchemaCompiler = Callable[[Mapping[str, Any], str, CompileOptions], CompiledTool]
"""A provider's compiler: (neutral schema, tool name, options) -> CompiledTool."""


def _openai_compiler(provider: str, default_strict: StrictMode) -> SchemaCompiler:
    def compile_(schema: Mapping[str, Any], tool: str, options: CompileOptions) -> CompiledTool:
        mode = default_strict if options.strict_mode is None else options.strict_mode
        out, report = compile_openai_strict(
            schema, strict_mode=mode, tool=tool, provider=provider, limits=options.openai_limits
        )
        restores = bool(report.strict) and any(
            c.kind == "made_required_nullable" for c in report.changes
        )
        return CompiledTool(
            tool, out, report.strict, report, "parameters", schema, restores_defaults=restores
        )

    compile_.__qualname__ = compile_.__name__ = f"compile_{provider.replace('-', '_')}"
    return compile_


def _gemini_compiler(schema: Mapping[str, Any], tool: str, options: CompileOptions) -> CompiledTool:
    target = options.gemini_target
    if target == "parameters":
        out, report = compile_gemini(schema, tool=tool)
    elif target == "parametersJsonSchema":
        out, report = compile_gemini_json_schema(schema, tool=tool)
    else:
        target, out, report = choose_gemini_schema(schema, tool=tool)
    return CompiledTool(tool, out, None, report, target, schema)


def _anthropic_compiler(
    schema: Mapping[str, Any], tool: str, options: CompileOptions
) -> CompiledTool:
    out, report = compile_anthropic(schema, tool=tool)
    return CompiledTool(tool, out, None, report, "input_schema", schema)


_COMPILERS: dict[str, SchemaCompiler] = {
    "openai": _openai_compiler("openai", "auto"),
    "openai-responses": _openai_compiler("openai-responses", "auto"),
    "openrouter": _openai_compiler("openrouter", False),
    "openai-compatible": _openai_compiler("openai-compatible", False),
    "anthropic": _anthropic_compiler,
    "gemini": _gemini_compiler,
}


def schema_compilers() -> Mapping[str, SchemaCompiler]:
    """The registered compilers by provider name (read-only view)."""
    return MappingProxyType(_COMPILERS)


def schema_compiler(provider: str) -> SchemaCompiler:
    """The compiler registered for ``provider``; UnknownSchemaCompilerError names the known ones."""
    try:
        return _COMPILERS[provider]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_COMPILERS))
        raise UnknownSchemaCompilerError(
            f"no schema compiler for provider {provider!r}; known providers: {known}. A provider "
            f"plugin registers its own with register_schema_compiler()"
        ) from None


def register_schema_compiler(
    provider: str, compiler: SchemaCompiler, *, replace: bool = False
) -> None:
    """Register ``compiler`` under ``provider`` (for provider plugins).

    Replacing an existing one needs ``replace=True``. Cached compilations
    keyed on the old compiler are not reused.
    """
    if not isinstance(provider, str) or not provider:
        raise UsageError(f"provider must be a non-empty string, got {provider!r}")
    if not callable(compiler):
        raise UsageError(f"compiler must be callable, got {type(compiler).__name__}")
    if provider in _COMPILERS and not replace and _COMPILERS[provider] is not compiler:
        raise UsageError(
            f"a schema compiler for {provider!r} is already registered "
            f"({getattr(_COMPILERS[provider], '__qualname__', _COMPILERS[provider])}); pass "
            f"replace=True to override it"
        )
    _COMPILERS[provider] = compiler


_CACHE_TAG = "toolwire.compile"
_DEFAULT_OPTIONS = CompileOptions()
ToolLike = Union[Tool[Any, Any], ToolDef, "ResolvedTool"]


def compile_tool(
    tool: ToolLike, provider: str, *, options: CompileOptions | None = None
) -> CompiledTool:
    """Compile a tool's input schema for ``provider``.

    Accepts a Tool (the result is cached in ``tool.cache``, keyed by provider,
    options and compiler, so a renamed view compiles under its own name), a
    ToolDef (not cached) or a ResolvedTool (its tool's cache is used).
    Raises SchemaCompileError when the schema cannot be compiled at all.
    """
    options = options or _DEFAULT_OPTIONS
    if not isinstance(options, CompileOptions):
        raise UsageError(f"options must be a CompileOptions, got {type(options).__name__}")
    compiler = schema_compiler(provider)
    if not isinstance(tool, (Tool, ToolDef)) and isinstance(getattr(tool, "tool", None), Tool):
        tool = tool.tool
    if isinstance(tool, Tool):
        key = (_CACHE_TAG, provider, options, compiler)
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
    tools: Iterable[ToolLike], provider: str, *, options: CompileOptions | None = None
) -> list[CompileReport]:
    """Compile every tool for ``provider`` and return the reports, in order.

    A tool that cannot be compiled gets a report with one ``error`` change
    instead of stopping the check.
    """
    schema_compiler(provider)  # fail fast on an unknown provider, before any tool
    reports: list[CompileReport] = []
    for tool in tools:
        try:
            reports.append(compile_tool(tool, provider, options=options).report)
        except SchemaCompileError as exc:
            name = getattr(tool, "name", None) or repr(tool)
            reports.append(
                CompileReport(
                    str(name),
                    provider,
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
