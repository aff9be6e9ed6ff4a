"""Cedar as a toolwire policy engine: one authorization request per tool call.

The request:

- **principal**: ``Toolwire::User::"<subject>"``, its groups as parent
  ``Toolwire::Group::"<group>"`` entities; a call made for nobody is
  ``Toolwire::Anonymous::"anonymous"``;
- **action**: ``Toolwire::Action::"<the tool's mounted name>"`` (the name the model calls it
  by: a nested toolset's prefix or an MCP server's name is part of it, so it is stable);
- **resource**: ``Toolwire::Toolset::"<where it comes from>"``: the tool's source
  (``mcp:git``) when its maker named one, else ``app``;
- **context**: ``input`` (the validated arguments), ``effect``, ``idempotent``, ``source``,
  and the call's ``app``, ``session`` and ``transport`` (its provider).

Cedar answers allow or deny, with the ids of the policies that decided (``@id("...")``, or
Cedar's ``policyN``). A permitting policy annotated ``@approval("reason")`` makes the call
need a person's approval (asked, and spent once, as toolwire-policy asks).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import cedarpy

from toolwire import HookContext, Principal, Tool, TypedCall

__all__ = ["CedarDecision", "CedarPolicy", "CedarPolicyError", "schema_for"]

#: The most bytes a policy or schema file may have.
MAX_BYTES = 4_000_000
NAMESPACE = "Toolwire"
#: The most principals whose parsed entities one policy keeps.
MAX_PRINCIPALS = 1024


class CedarPolicyError(Exception):
    """A Cedar policy or schema that cannot be used (the plugin then blocks every call)."""


@attrs.frozen
class CedarDecision:
    """Cedar's answer for one call: ``allowed``, the ``policies`` (ids) that decided, and
    ``approval`` (the reason) when a permitting policy asks for a person; ``approvers``,
    who answers through the approval queue when the asking policies name them
    (``@approvers("group:finance, user:carol")``), and ``expires``, how long their
    request waits (``@expires("3600")``, seconds; the shortest of them)."""

    allowed: bool
    policies: tuple[str, ...]
    approval: str | None = None
    approvers: tuple[str, ...] = ()
    expires: float = 3600.0

    @property
    def reason(self) -> str:
        ids = ", ".join(self.policies)
        if not self.allowed:
            if not ids:
                return "no Cedar policy permits it"
            return f"forbidden by Cedar policy {ids}"
        return f"permitted by Cedar policy {ids}"


def _read(path: Path, what: str) -> str:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CedarPolicyError(f"{what} {path}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise CedarPolicyError(f"{what} {path}: over {MAX_BYTES:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CedarPolicyError(f"{what} {path}: not UTF-8") from None


class CedarPolicy:
    """A parsed Cedar policy set (and the schema it was validated against, if any)."""

    def __init__(self, text: str, *, source: str = "<string>", schema: Any = None) -> None:
        self.source = source
        try:
            self._set = cedarpy.PolicySet.from_str(text)
            listed = json.loads(cedarpy.policies_to_json_str(text))
        except ValueError as exc:
            line = _failing_line(text)
            where = f"{source}:{line}" if line else source
            raise CedarPolicyError(f"Cedar policy {where}: {exc}") from None
        if not listed.get("staticPolicies") and not listed.get("templates"):
            raise CedarPolicyError(f"Cedar policy {source}: no policy in it (nothing is permitted)")
        self._annotations: dict[str, dict[str, str]] = {
            pid: dict(p.get("annotations") or {}) for pid, p in listed["staticPolicies"].items()
        }
        #: (policy id, "action" or "resource", the tool or toolset it names), for :meth:`lint`.
        self._names: list[tuple[str, str, str]] = [
            (self.ids(pid), scope, name)
            for pid, p in listed["staticPolicies"].items()
            for scope, kind in (("action", "Action"), ("resource", "Toolset"))
            for name in _named(p.get(scope), kind)
        ]
        self.schema = schema
        #: The schema parsed once (Cedar re-parses a schema given as JSON on every request).
        self._schema: Any = None
        #: Each principal's entities parsed once: (subject, groups) -> a Cedar handle.
        self._entities: dict[tuple[str, tuple[str, ...]] | None, Any] = {}
        if schema is not None:
            try:
                self._schema = cedarpy.Schema.from_json_str(json.dumps(schema))
            except ValueError as exc:
                raise CedarPolicyError(f"Cedar schema for {source}: {exc}") from None
            result = cedarpy.validate_policies(text, self._schema)
            if not result.validation_passed:
                lines = {f"policy{k}": line for k, (line, _) in enumerate(_statements(text))}
                errors = "; ".join(
                    f"{source}:{lines[e.policy_id]}: {e}" if e.policy_id in lines else str(e)
                    for e in result.errors
                )
                raise CedarPolicyError(
                    f"Cedar policy {source} does not validate against its schema: "
                    f"{errors or 'invalid'}"
                )

    @classmethod
    def from_files(cls, policy: Path, schema: Path | None = None) -> CedarPolicy:
        text = _read(policy, "Cedar policy")
        parsed = None
        if schema is not None:
            try:
                parsed = json.loads(_read(schema, "Cedar schema"))
            except ValueError as exc:
                raise CedarPolicyError(f"Cedar schema {schema}: not JSON: {exc}") from None
        return cls(text, source=str(policy), schema=parsed)

    def approvers(self) -> list[str]:
        """Everyone an ``@approvers`` annotation of the set names."""
        return _approvers(self._annotations.values())

    def ids(self, policy: str) -> str:
        """A policy's name: its ``@id``, else Cedar's own."""
        return self._annotations.get(policy, {}).get("id", policy)

    def _entities_of(self, principal: Principal | None) -> Any:
        """The principal's entities, parsed once per principal (a turn's calls, and every
        later call for the same principal and groups, reuse them); at most
        ``MAX_PRINCIPALS`` are kept."""
        key = None if principal is None else (principal.subject, tuple(sorted(principal.groups)))
        handle = self._entities.get(key)
        if handle is None:
            handle = cedarpy.Entities.from_json_str(json.dumps(_entities(principal)))
            if len(self._entities) >= MAX_PRINCIPALS:
                self._entities.clear()  # bounded: a burst of principals starts it over
            self._entities[key] = handle
        return handle

    def lint(self, tools: Iterable[Tool[Any, Any]]) -> list[str]:
        """The policies' actions (tools) and resources (toolsets) that name nothing in
        ``tools`` (the assembled catalogue), each with the nearest real names: a policy
        about a renamed tool stops applying without a word (a forbid no longer forbids)."""
        listed = list(tools)
        real = {
            "action": sorted({t.name for t in listed}),
            "resource": sorted({t.metadata.source or "app" for t in listed}),
        }
        found = []
        for pid, scope, name in self._names:
            if name in real[scope]:
                continue
            near = difflib.get_close_matches(name, real[scope], n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            what = "tool" if scope == "action" else "toolset"
            found.append(f"policy {pid}: {scope} {name!r} names no {what}{hint}")
        return found

    def decide(self, call: TypedCall[Any], context: HookContext) -> CedarDecision:
        request = _request(call, context)
        entities = self._entities_of(context.principal)
        result = cedarpy.is_authorized(request, self._set, entities, self._schema)
        if result.diagnostics.errors:
            errors = "; ".join(str(e) for e in result.diagnostics.errors)
            # A policy that errored on this request is skipped by Cedar: said, fail closed.
            return CedarDecision(False, (f"(evaluation error: {errors})",))
        decided = tuple(self.ids(p) for p in result.diagnostics.reasons)
        if not result.allowed:
            return CedarDecision(False, decided)
        asks = [
            self._annotations.get(p, {}).get("approval")
            for p in result.diagnostics.reasons
            if "approval" in self._annotations.get(p, {})
        ]
        approval = "; ".join(a for a in asks if a) if asks else None
        if asks and not approval:
            approval = "a Cedar policy asks for a person's approval"
        asking = [
            self._annotations.get(p, {})
            for p in result.diagnostics.reasons
            if "approval" in self._annotations.get(p, {})
        ]
        approvers = _approvers(asking)
        lives = [_seconds(a["expires"]) for a in asking if "expires" in a]
        expires = min(lives) if lives else 3600.0
        return CedarDecision(True, decided, approval, tuple(approvers), expires)


def _approvers(annotations: Iterable[Mapping[str, str]]) -> list[str]:
    """The people ``@approvers`` annotations name, each once, sorted."""
    return sorted(
        {name.strip() for a in annotations for name in a.get("approvers", "").split(",")} - {""}
    )


def _seconds(text: str) -> float:
    """An ``@expires`` annotation's seconds (a number above 0, at most 30 days); one that is
    not is as short as can be (the request expires at once: refused, fail closed)."""
    try:
        value = float(text)
    except ValueError:
        return 0.001
    return min(value, 30 * 86400.0) if value > 0 else 0.001


def _named(scope: Any, kind: str) -> list[str]:
    """The ids of the ``kind`` entities a policy's scope names (``==`` or ``in``)."""
    if not isinstance(scope, Mapping):
        return []
    entities = [scope["entity"]] if "entity" in scope else list(scope.get("entities") or ())
    full = f"{NAMESPACE}::{kind}"
    return [str(e["id"]) for e in entities if isinstance(e, Mapping) and e.get("type") == full]


def _statements(text: str) -> list[tuple[int, str]]:
    """The policies of a Cedar text in order, each as (the line it starts on, its text):
    split at each ``;`` outside a string and a ``//`` comment (Cedar's ``policyN`` is the
    N-th). Text after the last ``;`` is a statement too (an unfinished policy)."""
    found: list[tuple[int, str]] = []
    start, line, first = 0, 1, 0  # where the statement began, the line now, its first line
    i, n, quoted = 0, len(text), False
    while i < n:
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == ";":
            found.append((first, text[start : i + 1]))
            start, first = i + 1, 0
            i += 1
            continue
        if c == "\n":
            line += 1
        elif not first and not c.isspace():
            first = line
        i += 1
    if text[start:].strip() and first:
        found.append((first, text[start:]))
    return found


def _failing_line(text: str) -> int | None:
    """The line of the first policy that does not parse on its own, if one does not."""
    for line, statement in _statements(text):
        try:
            cedarpy.PolicySet.from_str(statement)
        except ValueError:
            return line
    return None


def _entity(kind: str, name: str) -> dict[str, str]:
    # The JSON form, not Cedar's surface syntax: any string is an id as it is (a subject
    # "josé" written as Cedar text would need Cedar's escapes, not JSON's).
    return {"type": f"{NAMESPACE}::{kind}", "id": name}


def _request(call: TypedCall[Any], context: HookContext) -> dict[str, Any]:
    principal: Principal | None = context.principal
    who = (
        _entity("Anonymous", "anonymous")
        if principal is None
        else _entity("User", principal.subject)
    )
    meta = call.tool.metadata
    source = meta.source or "app"
    arguments = json.loads(call.tool.dump_input(call.input))
    return {
        "principal": who,
        "action": _entity("Action", call.name),
        "resource": _entity("Toolset", source),
        "context": {
            "input": arguments if isinstance(arguments, dict) else {},
            "effect": meta.effect.value,
            "idempotent": bool(meta.idempotent),
            "source": source,
            "app": context.app,
            "session": context.session_id,
            "transport": context.provider,
        },
    }


def _entities(principal: Principal | None) -> list[dict[str, Any]]:
    """The entities of a request: its principal, and the principal's groups."""
    if principal is None:
        return [_record("Anonymous", "anonymous", ())]
    groups = sorted(principal.groups)
    return [
        _record("User", principal.subject, groups),
        *(_record("Group", g, ()) for g in groups),
    ]


def _record(kind: str, name: str, groups: Iterable[str]) -> dict[str, Any]:
    return {
        "uid": {"type": f"{NAMESPACE}::{kind}", "id": name},
        "attrs": {},
        "parents": [{"type": f"{NAMESPACE}::Group", "id": g} for g in groups],
    }


def _cedar_type(schema: Mapping[str, Any], path: str, untyped: list[str]) -> dict[str, Any] | None:
    """A JSON Schema as a Cedar type; None (and ``path`` in ``untyped``) when Cedar has
    none for it (a number that is not an integer, a union, a null)."""
    kind = schema.get("type")
    if kind == "string":
        return {"type": "String"}
    if kind == "integer":
        return {"type": "Long"}
    if kind == "boolean":
        return {"type": "Boolean"}
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        element = _cedar_type(schema["items"], f"{path}[]", untyped)
        return {"type": "Set", "element": element} if element is not None else None
    if kind == "object":
        required = set(schema.get("required", ()))
        attributes: dict[str, Any] = {}
        for name, sub in (schema.get("properties") or {}).items():
            typed = _cedar_type(sub, f"{path}.{name}" if path else name, untyped)
            if typed is not None:
                attributes[name] = {**typed, "required": name in required}
        return {"type": "Record", "attributes": attributes}
    untyped.append(path or "(the input)")
    return None


def schema_for(tools: Iterable[Tool[Any, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The Cedar schema (JSON) for a catalogue: the entity types, and an action per tool
    whose ``context.input`` is typed from the tool's JSON Schema; and what Cedar could not
    type (``tool: argument``), left out of the schema."""
    untyped: list[str] = []
    actions: dict[str, Any] = {}
    for tool in tools:
        lost: list[str] = []
        typed = _cedar_type(tool.input_schema, "", lost) or {"type": "Record", "attributes": {}}
        untyped.extend(f"{tool.name}: {p}" for p in lost)
        actions[tool.name] = {
            "appliesTo": {
                "principalTypes": ["User", "Anonymous"],
                "resourceTypes": ["Toolset"],
                "context": {
                    "type": "Record",
                    "attributes": {
                        "input": typed,
                        "effect": {"type": "String"},
                        "idempotent": {"type": "Boolean"},
                        "source": {"type": "String"},
                        "app": {"type": "String"},
                        "session": {"type": "String"},
                        "transport": {"type": "String"},
                    },
                },
            }
        }
    schema = {
        NAMESPACE: {
            "entityTypes": {
                "User": {"memberOfTypes": ["Group"]},
                "Group": {},
                "Anonymous": {},
                "Toolset": {},
            },
            "actions": actions,
        }
    }
    return schema, untyped
