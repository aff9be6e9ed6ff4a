"""Gemini's schema compiler: the OpenAPI subset of the ``parameters`` field, the JSON
Schema of ``parametersJsonSchema``, and the choice between them, with loss reports.

Sources: ``reference/wire-formats.md`` (Gemini's ``Schema`` proto history and rejected
keywords). Where a rule is not confirmed there, the constant that holds it says
**unverified**.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from toolwire.exceptions import UsageError
from toolwire.schema import (
    ALL_TYPE_KEYWORDS as _ALL_TYPE_KEYS,
)
from toolwire.schema import (
    ANNOTATION_KEYWORDS as _ANNOTATIONS,
)
from toolwire.schema import (
    JSON_TYPES as _JSON_TYPES,
)
from toolwire.schema import (
    SUBSCHEMA_KEYWORDS as _SUB_ONE,
)
from toolwire.schema import (
    SUBSCHEMA_MAP_KEYWORDS as _SUB_MAP,
)
from toolwire.schema import (
    ChangeLog as _Changes,
)
from toolwire.schema import (
    CompiledTool,
    CompileOptions,
    CompileReport,
    SchemaCompileError,
    SchemaCompiler,
    map_subschemas,
)
from toolwire.schema import (
    add_note as _add_note,
)
from toolwire.schema import (
    brief as _brief,
)
from toolwire.schema import (
    check_refs as _check_refs,
)
from toolwire.schema import (
    check_root as _check_root,
)
from toolwire.schema import (
    json_type as _json_type,
)
from toolwire.schema import (
    pointer_token as _tok,
)
from toolwire.schema import (
    resolve_ref as _resolve,
)
from toolwire.schema import (
    split_type_list as _split_type_list,
)

__all__ = [
    "COMPILER",
    "GEMINI_SCHEMA_KEYS",
    "choose_gemini_schema",
    "compile_gemini",
    "compile_gemini_json_schema",
]

Severity = Literal["info", "warning", "error"]
SchemaTarget = Literal["parameters", "parametersJsonSchema", "input_schema"]


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


# The string formats Gemini's JSON Schema subset (``parametersJsonSchema``,
# ``responseJsonSchema``) takes, per the Gemini API structured-output docs:
# kept as they are. Any other format moves into the description (a warning: the
# schema then accepts any string). **unverified** in the shared reference.
_JSON_SCHEMA_FORMATS = frozenset({"date-time", "date", "time"})


_MAX_INLINED_NODES = 20_000


def _infer_type(values: Iterable[Any]) -> str | None:
    types = {_json_type(v) for v in values if v is not None}
    if types == {"integer", "number"}:
        return "number"
    return types.pop() if len(types) == 1 else None


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
                f"(schema_target='parametersJsonSchema'), which keeps $ref"
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
                is_obj = isinstance(target, Mapping) and (
                    target.get("type") == "object" or "properties" in target
                )
                if is_obj:
                    # Cut short, it would be an OBJECT with no properties: a request
                    # Gemini refuses whole.
                    raise _no_properties(path, f"the recursive reference {ref!r}")
                self.warn(
                    path,
                    "cut_recursion",
                    f"the recursive reference {ref!r} cannot be inlined (Gemini's parameters "
                    f"have no $ref); below this point any value is accepted. Use "
                    f"parametersJsonSchema, which keeps recursion",
                )
                base: dict[str, Any] = {}
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
                    self.warn(
                        path,
                        "lost_constraint",
                        f"format {value!r} is not one Gemini supports for type {t!r}; it was "
                        f"moved into the description, so the schema accepts any {t or 'value'}",
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
        if not new_props and (path or extra not in (None, False)):
            # Only a root without arguments may go without properties (the adapter then
            # sends no parameters at all).
            what = (
                f"a map (additionalProperties {_brief(extra)})"
                if extra not in (None, False)
                else "an untyped or empty object"
            )
            raise _no_properties(path, what)
        if extra is False:
            self.warn(
                path,
                "open_object",
                "additionalProperties: false was removed (Gemini rejects the keyword): the "
                "schema now accepts extra keys, which the tool refuses",
            )
        elif extra is True or isinstance(extra, Mapping):
            value_desc = "any value" if extra is True or not extra else _brief(extra)
            notes.append(f"other keys allowed; each value: {value_desc}")
            self.warn(
                path,
                "free_form_map",
                f"the extra keys (additionalProperties {_brief(extra)}) cannot be expressed in "
                f"Gemini's parameters: their value type is only in the description. "
                f"parametersJsonSchema keeps it",
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


def _no_properties(path: str, what: str) -> SchemaCompileError:
    return SchemaCompileError(
        f"{what} at #{path} would reach Gemini's parameters as an OBJECT with no properties, "
        f'which Gemini refuses for the whole request ("properties: should be non-empty for '
        f'OBJECT type"). Send this tool as JSON Schema: schema_target "auto" (the default) '
        f'or "parametersJsonSchema"'
    )


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
    remain. Anything that widens what the schema accepts (a dropped
    ``additionalProperties: false``, a format moved into the description) is a
    warning.

    Raises :class:`SchemaCompileError` for a schema that would contain an
    OBJECT with no properties below the root (a map, an untyped object, a
    recursion cut short): Gemini refuses such a request whole, so it is never
    sent. Such tools go as ``parametersJsonSchema``.
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


def _map_schema(node: Any, path: str, fn: Callable[[dict[str, Any], str], dict[str, Any]]) -> Any:
    """Apply ``fn`` to every schema object, children first, keeping property names intact."""
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping):
        raise SchemaCompileError(
            f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
        )
    out = map_subschemas(node, lambda sub, pointer: _map_schema(sub, pointer, fn), path)
    return fn(out, path)


def compile_gemini_json_schema(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "gemini"
) -> tuple[dict[str, Any], CompileReport]:
    """Compile for Gemini's ``parametersJsonSchema`` field (ordinary JSON Schema).

    Keeps ``$ref``/``$defs``, ``anyOf``, ``additionalProperties``, null types,
    ``prefixItems`` (Google's structured-output post) and the string formats
    ``date-time``, ``date`` and ``time``. Following pydantic-ai: removes
    ``$schema``, ``title``, ``discriminator`` and ``examples``; turns ``const``
    into a one-value enum and other string formats into description text (a
    warning: the schema then accepts any string); rewrites
    ``exclusiveMinimum``/``exclusiveMaximum``. Which other keywords this field
    ignores or rejects is **unverified** (undocumented).
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
        fmt = node.get("format")
        if isinstance(fmt, str) and t in ("string", None) and fmt not in _JSON_SCHEMA_FORMATS:
            notes.append(f"format: {node.pop('format')}")
            changes.add(
                path,
                "lost_constraint",
                "warning",
                f"format {fmt!r} is not one Gemini's JSON Schema takes (date-time, date, "
                f"time); it was moved into the description, so the schema accepts any string",
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
        try:
            sub, sub_report = compile_gemini(schema, tool=tool, provider=provider)
        except SchemaCompileError:  # parameters cannot carry it at all
            return "parametersJsonSchema", js, js_report
        if sub_report.lossless or len(sub_report.warnings) < len(js_report.warnings):
            return "parameters", sub, sub_report
        return "parametersJsonSchema", js, js_report
    sub, sub_report = compile_gemini(schema, tool=tool, provider=provider)
    return "parameters", sub, sub_report


def _compile(schema: Mapping[str, Any], tool: str, options: CompileOptions) -> CompiledTool:
    field: SchemaTarget
    if options.target == "parameters":
        field = "parameters"
        out, report = compile_gemini(schema, tool=tool)
    elif options.target == "parametersJsonSchema":
        field = "parametersJsonSchema"
        out, report = compile_gemini_json_schema(schema, tool=tool)
    elif options.target == "auto":
        field, out, report = choose_gemini_schema(schema, tool=tool)
    else:
        raise UsageError(
            f'CompileOptions.target for gemini must be "auto", "parameters" or '
            f'"parametersJsonSchema", got {options.target!r}'
        )
    return CompiledTool(tool, out, None, report, field, schema)


#: Gemini's compiler: ``options.target`` picks the request field (``"auto"``
#: prefers ``parametersJsonSchema``; ``"parameters"`` for the Live API).
COMPILER = SchemaCompiler("gemini", _compile)
