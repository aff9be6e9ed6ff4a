"""Walking JSON Schema: the keyword tables (where subschemas live, which keywords go with
which type), JSON pointers, ``$ref`` resolution, and the root checks and safe cleanups
every compiler shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from toolwire._errors import SchemaCompileError
from toolwire._exports import publish
from toolwire._schema.reports import SchemaChange, Severity

# Keys whose value is one sub-schema, a list of sub-schemas, or a name -> sub-schema map.
SUBSCHEMA_KEYWORDS = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "additionalItems",
        "contentSchema",
    }
)
#: ``isinstance(x, MAPPING)``: a dict is recognised without the Mapping ABC's (slower)
#: instance check; any other Mapping still is one.
MAPPING = (dict, Mapping)

SUBSCHEMA_LIST_KEYWORDS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
SUBSCHEMA_MAP_KEYWORDS = frozenset(
    {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
)
#: Every keyword that may hold subschemas: most keys of a node are none of them.
SUBSCHEMA_ANY_KEYWORDS = SUBSCHEMA_KEYWORDS | SUBSCHEMA_LIST_KEYWORDS | SUBSCHEMA_MAP_KEYWORDS


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


# -- small helpers ------------------------------------------------------------------------


def pointer_token(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def subschemas(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """Each subschema directly under ``node``, with its JSON pointer (``path`` is the node's).

    The one definition of where subschemas live, used by every traversal in core and in
    the provider compilers: a name -> schema map (``properties``, ``$defs``, ...) yields
    each entry, a list keyword (``anyOf``, ``prefixItems``, ...) each element, and a
    one-schema keyword (``items``, ``not``, ...) its value as it is (which may be malformed:
    the caller decides what to do with a value that is not a schema).
    """
    for key, value in node.items():
        if key in SUBSCHEMA_MAP_KEYWORDS and isinstance(value, MAPPING):
            for name, sub in value.items():
                yield f"{path}/{key}/{pointer_token(name)}", sub
        elif key in SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
            for i, sub in enumerate(value):
                yield f"{path}/{key}/{i}", sub
        elif key in SUBSCHEMA_KEYWORDS:
            yield f"{path}/{key}", value


def child_schemas(node: Mapping[str, Any], *, definitions: bool = True) -> list[Any]:
    """The subschemas directly under ``node``, in :func:`subschemas`' order, without their
    pointers: for traversals that need no paths (a list, not a generator, and no pointer
    strings made). ``definitions=False`` leaves out the ``$defs`` and ``definitions`` maps
    (what a traversal that follows ``$ref`` instead wants)."""
    out: list[Any] = []
    for key, value in node.items():
        if key not in SUBSCHEMA_ANY_KEYWORDS:
            continue
        if key in SUBSCHEMA_MAP_KEYWORDS and isinstance(value, MAPPING):
            if definitions or (key != "$defs" and key != "definitions"):
                out.extend(value.values())
        elif key in SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
            out.extend(value)
        elif key in SUBSCHEMA_KEYWORDS:
            out.append(value)
    return out


def map_subschemas(
    node: Mapping[str, Any], fn: Callable[[Any, str], Any], path: str = ""
) -> dict[str, Any]:
    """A copy of ``node`` with each direct subschema replaced by ``fn(subschema, pointer)``.

    The same positions as :func:`subschemas`; every other keyword (and the names in a
    ``properties`` map) is kept as it is, in its order. Recursion is the caller's: ``fn``
    usually calls back into the transform that called this.
    """
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in SUBSCHEMA_MAP_KEYWORDS and isinstance(value, MAPPING):
            out[key] = {
                name: fn(sub, f"{path}/{key}/{pointer_token(name)}") for name, sub in value.items()
            }
        elif key in SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
            out[key] = [fn(sub, f"{path}/{key}/{i}") for i, sub in enumerate(value)]
        elif key in SUBSCHEMA_KEYWORDS:
            out[key] = fn(value, f"{path}/{key}")
        else:
            out[key] = value
    return out


#: brief's encoder, made once (json.dumps with options makes one per call).
_BRIEF_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str).encode


def brief(value: Any, limit: int = 120) -> str:
    try:
        text = _BRIEF_JSON(value)
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
        if isinstance(node, MAPPING) and token in node:
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
    if not isinstance(schema, MAPPING):
        raise SchemaCompileError(
            f"a tool's input schema must be a JSON object (dict), got {type(schema).__name__}"
        )
    root = dict(schema)
    if "$ref" in root:
        target, pointer = resolve_ref(root, root["$ref"], "")
        if not isinstance(target, MAPPING) or target is schema:
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
    if _refs_resolve(doc):
        return  # the common case, found without a pointer string per node

    # Something is wrong: walk again with pointers, to name the first problem.
    def walk(node: Any, path: str) -> None:
        if isinstance(node, bool):
            return
        if not isinstance(node, MAPPING):
            raise SchemaCompileError(
                f"the schema at #{path} must be an object or a boolean, got {type(node).__name__}"
            )
        if "$ref" in node:
            resolve_ref(doc, node["$ref"], path)
        for pointer, sub in subschemas(node, path):
            walk(sub, pointer)

    walk(doc, "")


def _refs_resolve(doc: Mapping[str, Any]) -> bool:
    """True when check_refs has nothing to say about ``doc``: every subschema (in the same
    positions) a mapping or a boolean, every $ref local and resolving."""
    todo: list[Any] = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, MAPPING):
            return False
        if "$ref" in node:
            try:
                resolve_ref(doc, node["$ref"], "")
            except SchemaCompileError:
                return False
        todo.extend(child_schemas(node))
    return True


publish(globals())
