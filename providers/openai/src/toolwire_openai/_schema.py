"""OpenAI's schema compiler: strict mode (Structured Outputs) with its loss report, and the
restoration of omitted-means-default arguments that strict mode needs.

Sources: ``reference/wire-formats.md`` (OpenAI "Supported schemas", pydantic-ai and the
openai SDK's transforms). Where a rule is not confirmed there, the constant that holds it
says **unverified**.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from toolwire.exceptions import UsageError
from toolwire.schema import (
    ANNOTATION_KEYWORDS as _ANNOTATIONS,
)
from toolwire.schema import (
    JSON_TYPES as _JSON_TYPES,
)
from toolwire.schema import (
    MAPPING as _MAPPING,
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
)
from toolwire.schema import (
    add_note as _add_note,
)
from toolwire.schema import (
    brief as _brief,
)
from toolwire.schema import (
    check_root as _check_root,
)
from toolwire.schema import (
    child_schemas as _children,
)
from toolwire.schema import (
    pointer_token as _tok,
)
from toolwire.schema import (
    resolve_ref as _resolve,
)
from toolwire.schema import (
    safe_cleanup as _safe_cleanup,
)
from toolwire.schema import (
    split_type_list as _split_type_list,
)

__all__ = [
    "OpenAIStrictLimits",
    "COMPILERS",
    "compiler_for",
    "OPENAI_STRICT_FORMATS",
    "compile_openai",
    "compile_openai_strict",
    "strip_strict_nulls",
]

StrictMode = Literal["auto", True, False]


@attrs.frozen(cache_hash=True)
class OpenAIStrictLimits:
    """OpenAI Structured Outputs limits (current guide; older copies said 100 / 5 / 15,000 /
    500 / 7,500), passed as ``CompileOptions(limits=...)``. How OpenAI counts nesting is
    **unverified**: here, nested object schemas along any path, following ``$ref``
    (root = 1)."""

    max_properties: int = 5000
    max_depth: int = 10
    max_total_chars: int = 120_000
    max_enum_values: int = 1000
    large_enum_size: int = 250
    max_large_enum_chars: int = 15_000


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


_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})


def _accepts_null(node: Any, doc: Mapping[str, Any], hops: int = 0) -> bool:
    """Does ``node`` accept ``null``? (Unresolvable references count as yes: keep the value.)"""
    if node is True:
        return True
    if not isinstance(node, _MAPPING) or hops > 32:
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
        if not isinstance(node, _MAPPING):
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
            if defs is not None and isinstance(defs, _MAPPING):
                out[key] = {
                    name: self.node(sub, f"{path}/{key}/{_tok(name)}") for name, sub in defs.items()
                }
        if not (
            "type" in out or "anyOf" in out or "$ref" in out or "enum" in out or "const" in out
        ):
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
                shown = _brief(default)
                notes.append(f"default: {shown}")
                self.info(
                    path,
                    "dropped_default",
                    f"default {shown} was moved into the description (strict mode has no "
                    f"default keyword)",
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
        if not isinstance(first, _MAPPING):
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
        if not isinstance(props, _MAPPING):
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
                    has_default = isinstance(sub, _MAPPING) and "default" in sub
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
        elif extra is True or (isinstance(extra, _MAPPING) and not extra):
            notes.append("free-form object: any keys")
            self.warn(
                path,
                "free_form_map",
                "this object accepts any extra keys, which strict mode cannot express "
                "(additionalProperties must be false): the model can send only the listed "
                "properties. Use a model with named fields, or a list of key/value pairs",
            )
        elif isinstance(extra, _MAPPING):
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
    n_objects = 0  # nodes _max_depth counts as a level: no path has more of them
    chars = 0
    def_refs_only = True  # every $ref names a definition of the root, no other node
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, _MAPPING):
            chars += sum(len(k) for k in defs)

    # Every node once, in document order (a stack, not recursion: no closure call per node).
    todo: list[Any] = [schema]
    pop, extend = todo.pop, todo.extend
    while todo:
        node = pop()
        if type(node) is not dict:
            if isinstance(node, list):
                extend(reversed(node))
                continue
            if not isinstance(node, _MAPPING):
                continue
        if "properties" in node or node.get("type") == "object":
            n_objects += 1
            props = node.get("properties")
            if isinstance(props, _MAPPING):
                n_props += len(props)
                chars += sum(map(len, props))
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
        const = node.get("const")
        if isinstance(const, str):
            chars += len(const)
        ref = node.get("$ref")
        if ref is not None and def_refs_only:
            def_refs_only = _names_definition(ref)
        extend(reversed(_children(node)))
    # Along any path _max_depth follows, each level is a different node of the document
    # (a definition already on the path counts nothing): when every reference names a
    # definition, no path is longer than this count of levels, and the walk is skipped.
    bounded = n_objects <= limits.max_depth and def_refs_only
    depth = n_objects if bounded else _max_depth(schema)
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


def _names_definition(ref: Any) -> bool:
    """Whether ``ref`` is ``#/$defs/NAME`` (or ``#/definitions/NAME``): a node the limits
    walk visits and _max_depth enters only through references. (``#`` is not: the root is
    entered once without one, so a path can count its levels twice.)"""
    if not isinstance(ref, str):
        return False
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return "/" not in ref[len(prefix) :]
    return False


def _max_depth(doc: Mapping[str, Any]) -> int:
    """Nested object levels from the root, following $ref (a cycle counts once)."""
    memo: dict[str, int] = {}

    def depth(node: Any, stack: tuple[str, ...]) -> int:
        if isinstance(node, list):
            return max((depth(x, stack) for x in node), default=0)
        if not isinstance(node, _MAPPING):
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
        for sub in _children(node, definitions=False):
            d = depth(sub, stack)
            if d > below:
                below = d
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


def compile_openai(
    schema: Mapping[str, Any], *, tool: str = "", provider: str = "openai"
) -> tuple[dict[str, Any], CompileReport]:
    """The safe cleanups only (no strict): what :func:`compile_openai_strict` sends with
    ``strict_mode=False``."""
    return compile_openai_strict(schema, strict_mode=False, tool=tool, provider=provider)


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
        if not (isinstance(node, _MAPPING) and isinstance(node.get("$ref"), str)):
            return node
        try:
            node, _ptr = _resolve(doc, node["$ref"], "")
        except SchemaCompileError:
            return None
    return None


def _object_schemas(node: Any, doc: Mapping[str, Any], hops: int = 0) -> list[Mapping[str, Any]]:
    node = _deref(node, doc)
    if not isinstance(node, _MAPPING) or hops > 16:
        return []
    found: list[Mapping[str, Any]] = []
    if isinstance(node.get("properties"), _MAPPING):
        found.append(node)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for b in branches:
                found.extend(_object_schemas(b, doc, hops + 1))
    return found


def _array_items(node: Any, doc: Mapping[str, Any], hops: int = 0) -> Any:
    node = _deref(node, doc)
    if not isinstance(node, _MAPPING) or hops > 16:
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


def _openai_compiler(provider: str, default_strict: StrictMode) -> SchemaCompiler:
    def compile_(schema: Mapping[str, Any], tool: str, options: CompileOptions) -> CompiledTool:
        mode = default_strict if options.strict is None else options.strict
        limits = options.limits
        if limits is not None and not isinstance(limits, OpenAIStrictLimits):
            raise UsageError(
                f"CompileOptions.limits for {provider} must be a "
                f"toolwire_openai.OpenAIStrictLimits, got {type(limits).__name__}"
            )
        out, report = compile_openai_strict(
            schema, strict_mode=mode, tool=tool, provider=provider, limits=limits
        )
        restores = bool(report.strict) and any(
            c.kind == "made_required_nullable" for c in report.changes
        )
        restore = _restorer(schema) if restores else None
        return CompiledTool(tool, out, report.strict, report, "parameters", schema, restore)

    compile_.__qualname__ = compile_.__name__ = f"compile_{provider.replace('-', '_')}"
    return SchemaCompiler(provider, compile_)


def _restorer(original_schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The argument restoration strict mode needs: :func:`strip_strict_nulls`, memoised."""
    memo: dict[Any, Any] = {}

    def restore(arguments: dict[str, Any]) -> dict[str, Any]:
        result = _strip(arguments, original_schema, original_schema, 0, memo)
        return result if isinstance(result, dict) else dict(arguments)

    return restore


def compiler_for(provider: str) -> SchemaCompiler:
    """The compiler for an OpenAI-shaped provider; a name of a subclass's own gets the
    OpenAI-compatible rules (strict off by default) under that name."""
    found = COMPILERS.get(provider)
    if found is None:
        found = _EXTRA.get(provider)
        if found is None:
            found = _EXTRA[provider] = _openai_compiler(provider, False)
    return found


_EXTRA: dict[str, SchemaCompiler] = {}

#: The compilers of the four OpenAI-shaped providers. OpenRouter and OpenAI-compatible
#: servers may not honour strict mode (pydantic-ai #1561), so they default to strict off.
COMPILERS: Mapping[str, SchemaCompiler] = {
    "openai": _openai_compiler("openai", "auto"),
    "openai-responses": _openai_compiler("openai-responses", "auto"),
    "openrouter": _openai_compiler("openrouter", False),
    "openai-compatible": _openai_compiler("openai-compatible", False),
}
