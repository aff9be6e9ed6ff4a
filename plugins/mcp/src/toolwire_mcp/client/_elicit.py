"""Answering a server's elicitation (``elicitation/create``): what the application says.

An MCP server may ask the client's user for input in the middle of a call (a form, or a
URL to open), as toolwire's own gateway asks for approval. The application answers
through one handler, :func:`set_elicitation_handler`; with none (the default, and what
a non-interactive run should keep) every request is declined, so nothing is given to a
server that nobody was asked about.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Union

import attrs

from toolwire.adapters import review_arguments, terminal_text
from toolwire_mcp.client._slot import Slot

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "elicitation_handler",
    "set_elicitation_handler",
]

logger = logging.getLogger("toolwire.mcp")

# -- a toolwire gateway's approval question, as it asks it and as its clients read it ------

#: The ``_meta`` key a toolwire gateway puts on an approval question, with the call it
#: is about (``{"tool": name, "arguments": {...}}``). Protocol 2026-07-28 carries no
#: ``_meta`` on a question returned in a result: the question's text says it too.
APPROVAL_META = "io.toolwire/approval"

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Run the tool call with the arguments shown",
        }
    },
    "required": ["approve"],
}

_QUESTION = re.compile(
    r"Allow the (?:mutating|destructive|read_only) tool `([^`\n]+)` to run with these "
    r"arguments\?\n(.*)",
    re.DOTALL,
)


def approval_question(effect: str, tool: str, arguments_json: str) -> str | None:
    """The approval question: every argument in full, as
    :func:`toolwire.adapters.review_arguments` shows them to a person; None when they are
    too long to show in full (the call is then not asked about)."""
    shown = review_arguments(arguments_json)
    if shown is None:
        return None
    name = terminal_text(tool, multiline=False)
    return f"Allow the {effect} tool `{name}` to run with these arguments?\n{shown}"


def approval_asked(message: Any, schema: Any, meta: Any) -> tuple[str, Any] | None:
    """``(tool, arguments)`` when a request is a toolwire gateway's approval question: from
    its ``_meta`` when there is one, else from its text (with the approval form)."""
    asked = meta.get(APPROVAL_META) if isinstance(meta, Mapping) else None
    if isinstance(asked, Mapping):
        tool = asked.get("tool")
        return (tool, asked.get("arguments")) if isinstance(tool, str) else None
    if schema != APPROVE_SCHEMA or not isinstance(message, str):
        return None
    match = _QUESTION.fullmatch(message)
    if match is None:
        return None
    try:
        return match.group(1), json.loads(match.group(2))
    except ValueError:
        return None


@attrs.frozen
class ElicitationRequest:
    """One question from a server: ``message`` to show; in form mode the answer's JSON
    ``schema``, in URL mode the ``url`` to open (the answer is only consent).

    A form's schema is a flat object whose fields are strings (``minLength``,
    ``maxLength``, a ``format``), numbers and integers (``minimum``, ``maximum``),
    booleans, single-select enums (``enum``, or titled options as ``oneOf`` of
    ``{"const", "title"}``) and multi-select arrays (``items.enum``, or titled
    ``items.anyOf``, with ``minItems``, ``maxItems``); any field may carry a ``default``.
    The handler's answer is checked against it before it is sent: an answer that lacks a
    required field with no default, or gives a value the field cannot take, is not sent
    (the server is told no, and an error names the field)."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: Mapping[str, Any] = attrs.field(factory=dict)
    url: str | None = None

    def defaults(self) -> dict[str, Any]:
        """The schema's default values, by field (SEP-1034): what a form starts with."""
        props = self.schema.get("properties") if isinstance(self.schema, Mapping) else None
        if not isinstance(props, Mapping):
            return {}
        return {
            name: spec["default"]
            for name, spec in props.items()
            if isinstance(spec, Mapping) and "default" in spec
        }


ElicitationAnswer = Union[Mapping[str, Any], bool, None]
"""A form's content (accepted; omitted fields take the schema's defaults, fields it does
not describe are dropped), True (accepted with the schema's defaults, as ``{}`` is; or
consent in URL mode), False or None (declined)."""

ElicitationHandler = Callable[
    [ElicitationRequest], Union[ElicitationAnswer, Awaitable[ElicitationAnswer]]
]
"""``handler(request)``: sync or async; raising cancels the request."""

_HANDLER: Slot[ElicitationHandler] = Slot("elicitation handler")


def set_elicitation_handler(handler: ElicitationHandler | None) -> None:
    """Answer every MCP server's elicitation with ``handler`` (None: decline them all)."""
    _HANDLER.set(handler)


def elicitation_handler() -> ElicitationHandler | None:
    """The handler in force (None: every request is declined)."""
    return _HANDLER.get()


async def answer(request: ElicitationRequest) -> tuple[str, dict[str, Any] | None]:
    """``(action, content)`` for the SDK: ``accept``, ``decline`` or ``cancel``."""
    handler = _HANDLER.get()
    if handler is None:
        logger.info("MCP server `%s` asked for input; no handler is set: declined", request.server)
        return "decline", None
    try:
        out: Any = handler(request)  # outside input: checked below
        if inspect.isawaitable(out):
            out = await out
    except Exception as exc:
        logger.warning(
            "the elicitation handler failed on a request from `%s`: %r", request.server, exc
        )
        return "cancel", None
    if out is None or out is False:
        return "decline", None
    if request.mode == "url":
        return ("accept", None) if out is True else ("decline", None)
    content = request.defaults()
    if isinstance(out, Mapping):
        content.update(out)
    elif out is not True:
        logger.warning(
            "the elicitation handler returned %s; expected a mapping, True, False or None: "
            "declined",
            type(out).__name__,
        )
        return "decline", None
    props = request.schema.get("properties")
    if isinstance(props, Mapping):
        content = {k: v for k, v in content.items() if k in props}
    problem = answer_problem(content, request.schema)
    if problem is not None:
        # The server would refuse it (-32602) and the call fail with a protocol error: it
        # is the application's mistake, said to it, and the server is told no.
        logger.error(
            "the elicitation handler's answer to `%s` does not fit its form (%s): declined",
            request.server,
            problem,
        )
        return "decline", None
    return "accept", content


def answer_problem(content: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """What is wrong with a form's answer, by the form's schema (the elicitation subset:
    strings with their lengths and formats aside, numbers and integers with their bounds,
    booleans, single-select enums (``enum``, titled ``oneOf``) and multi-select arrays
    (``items.enum``, titled ``items.anyOf``) with their sizes), naming the field; None
    when it fits. A field the schema does not describe is not checked."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required") if isinstance(schema, Mapping) else None
    for name in required if isinstance(required, list) else ():
        if isinstance(name, str) and name not in content:
            return f"`{name}` is required and has no default"
    for name, value in content.items():
        spec = props.get(name)
        if isinstance(spec, Mapping):
            wrong = _field_problem(value, spec)
            if wrong is not None:
                return f"`{name}` {wrong}"
    return None


def _choices(spec: Mapping[str, Any], titled: str) -> list[Any] | None:
    """The values a select allows: ``enum``, or the ``const`` of each titled option."""
    enum = spec.get("enum")
    if isinstance(enum, list):
        return enum
    options = spec.get(titled)
    if isinstance(options, list):
        return [o.get("const") for o in options if isinstance(o, Mapping) and "const" in o]
    return None


def _bounds(value: float, spec: Mapping[str, Any], low: str, high: str, what: str) -> str | None:
    least, most = spec.get(low), spec.get(high)
    if isinstance(least, (int, float)) and not isinstance(least, bool) and value < least:
        return f"must have {what} at least {least}"
    if isinstance(most, (int, float)) and not isinstance(most, bool) and value > most:
        return f"must have {what} at most {most}"
    return None


def _field_problem(value: Any, spec: Mapping[str, Any]) -> str | None:
    kind = spec.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return f"must be a string, not {type(value).__name__}"
        choices = _choices(spec, "oneOf")
        if choices is not None and value not in choices:
            return f"must be one of {', '.join(map(str, choices))}, not {value!r:.60}"
        return _bounds(len(value), spec, "minLength", "maxLength", "a length of")
    if kind in ("number", "integer"):
        number_ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number_ok or (kind == "integer" and not float(value).is_integer()):
            return f"must be {'an integer' if kind == 'integer' else 'a number'}"
        return _bounds(value, spec, "minimum", "maximum", "a value of")
    if kind == "boolean":
        return None if isinstance(value, bool) else "must be true or false"
    if kind == "array":
        if not isinstance(value, list):
            return f"must be a list, not {type(value).__name__}"
        items = spec.get("items")
        choices = _choices(items, "anyOf") if isinstance(items, Mapping) else None
        if choices is not None:
            for item in value:
                if item not in choices:
                    return f"may hold only {', '.join(map(str, choices))}, not {item!r:.60}"
        return _bounds(len(value), spec, "minItems", "maxItems", "a size of")
    return None
