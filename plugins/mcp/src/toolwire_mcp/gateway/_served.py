"""Resources and prompts an application serves through the gateway, beside its tools.

``@resource("docs://guide")`` makes a function that returns ``str`` (text) or ``bytes``
(binary) a resource; a URI with ``{name}`` parts (an RFC 6570 template) makes it a
resource template, the parts passed as keyword arguments. ``@prompt`` makes a function
whose parameters are the prompt's arguments (strings; one without a default is required)
a prompt: it returns the text of one user message, or a list of messages (a string, a
``(role, content)`` pair, an SDK ``PromptMessage`` or its JSON). Sync or async either way.

``serve_mcp(tools, resources=[...], prompts=[...])`` (and ``toolwire mcp serve
--resources MODULE:ATTR --prompts MODULE:ATTR``) serves them.
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import mcp_types as types

from toolwire.exceptions import ToolDefinitionError

__all__ = ["Prompt", "Resource", "prompt", "resource", "resource_updated"]

#: The most a served resource or prompt may give (characters of text, bytes of binary).
MAX_SERVED = 16 << 20
_NAME = re.compile(r"^[A-Za-z0-9_.\-/]{1,128}$")


#: The gateways serving an application's resources (their catalogues), for
#: :func:`resource_updated`; held weakly: a server that is gone is not told.
_SERVING: weakref.WeakSet[Any] = weakref.WeakSet()


def resource_updated(uri: str) -> int:
    """Tell the clients subscribed to ``uri`` (one of the application's own resources, or
    a URI its template matches) that it changed: every gateway serving it sends
    ``notifications/resources/updated`` (2026-07-28 clients get it on their listen
    stream). Call it from any thread, after the change; the number of gateways serving
    ``uri`` comes back (0: nobody serves it, nothing is sent)."""
    if not isinstance(uri, str) or not uri:
        raise ToolDefinitionError(f"resource_updated takes a resource's URI, got {uri!r}")
    return sum(1 for catalogue in list(_SERVING) if catalogue.own_updated(uri))


@attrs.frozen
class Resource:
    """A resource (or, when ``uri`` has ``{name}`` parts, a resource template).
    :meth:`updated` tells its subscribers it changed."""

    uri: str
    read: Callable[..., Any]
    name: str
    description: str = ""
    mime_type: str | None = None

    @property
    def is_template(self) -> bool:
        return _template(self.uri) is not None

    def updated(self, uri: str | None = None) -> int:
        """This resource changed (a template's: the resource at ``uri``): see
        :func:`resource_updated`."""
        if uri is None:
            if self.is_template:
                raise ToolDefinitionError(
                    f"resource template {self.uri!r}: updated() takes the URI that changed"
                )
            uri = self.uri
        elif self.match(uri) is None:
            raise ToolDefinitionError(f"{uri!r} is not resource {self.uri!r}")
        return resource_updated(uri)

    def match(self, uri: str) -> dict[str, Any] | None:
        """The template's parts in ``uri`` (``{}`` for the resource's own URI), or None."""
        template = _template(self.uri)
        if template is None:
            return {} if uri == self.uri else None
        found: dict[str, Any] | None = template.match(uri)
        return found

    async def contents(self, uri: str, parts: Mapping[str, Any]) -> types.ReadResourceResult:
        value = self.read(**parts)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, str):
            _check_size(len(value), uri)
            mime = self.mime_type or "text/plain"
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=value)]
            )
        if isinstance(value, (bytes, bytearray)):
            import base64

            _check_size(len(value), uri)
            mime = self.mime_type or "application/octet-stream"
            blob = base64.b64encode(bytes(value)).decode("ascii")
            return types.ReadResourceResult(
                contents=[types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)]
            )
        raise TypeError(
            f"resource {self.uri!r} returned {type(value).__name__}; expected str or bytes"
        )

    def listed(self) -> types.Resource:
        return types.Resource(
            uri=self.uri,
            name=self.name,
            description=self.description or None,
            mime_type=self.mime_type,
        )

    def listed_template(self) -> types.ResourceTemplate:
        return types.ResourceTemplate(
            uri_template=self.uri,
            name=self.name,
            description=self.description or None,
            mime_type=self.mime_type,
        )


@attrs.frozen
class Prompt:
    """A prompt: ``render(**arguments)`` gives its messages."""

    name: str
    render: Callable[..., Any]
    description: str = ""
    arguments: tuple[types.PromptArgument, ...] = ()
    #: Values offered for an argument by ``completion/complete`` (filtered by what the
    #: user typed so far).
    choices: Mapping[str, Sequence[str]] = attrs.field(factory=dict)

    def listed(self, name: str | None = None) -> types.Prompt:
        return types.Prompt(
            name=name or self.name,
            description=self.description or None,
            arguments=list(self.arguments) or None,
        )

    async def messages(self, arguments: Mapping[str, str]) -> types.GetPromptResult:
        known = {a.name for a in self.arguments}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise ValueError(f"prompt `{self.name}` has no argument {', '.join(unknown)}")
        missing = [a.name for a in self.arguments if a.required and a.name not in arguments]
        if missing:
            raise ValueError(f"prompt `{self.name}` needs the argument {', '.join(missing)}")
        value = self.render(**arguments)
        if inspect.isawaitable(value):
            value = await value
        items = [value] if isinstance(value, (str, tuple)) else list(value)
        messages = [_message(self.name, item) for item in items]
        return types.GetPromptResult(description=self.description or None, messages=messages)


def _message(prompt: str, item: Any) -> types.PromptMessage:
    if isinstance(item, types.PromptMessage):
        return item
    if isinstance(item, str):
        return types.PromptMessage(role="user", content=types.TextContent(type="text", text=item))
    if isinstance(item, tuple) and len(item) == 2 and item[0] in ("user", "assistant"):
        role, content = item
        if isinstance(content, str):
            content = types.TextContent(type="text", text=content)
        return types.PromptMessage(role=role, content=content)
    if isinstance(item, Mapping):
        return types.PromptMessage.model_validate(item)
    raise TypeError(
        f"prompt `{prompt}` gave a {type(item).__name__}; a message is a string, a "
        f"(role, content) pair or a PromptMessage"
    )


def _check_size(size: int, uri: str) -> None:
    if size > MAX_SERVED:
        raise ValueError(f"resource {uri!r} is {size:,} long; at most {MAX_SERVED:,} is served")


def _template(uri: str) -> Any:
    from mcp.shared.uri_template import UriTemplate

    if not UriTemplate.is_template(uri):
        return None
    return UriTemplate.parse(uri)


def _first_line(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n", 1)[0].strip()


def resource(
    uri: str,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Callable[..., Any]], Resource]:
    """Serve the decorated function as the resource at ``uri`` (a template when ``uri``
    has ``{name}`` parts: the function takes them as keyword arguments)."""
    if not isinstance(uri, str) or "://" not in uri:
        raise ToolDefinitionError(f"a resource needs a URI with a scheme, got {uri!r}")
    try:
        template = _template(uri)
    except ValueError as exc:
        raise ToolDefinitionError(f"resource {uri!r}: {exc}") from None

    def wrap(fn: Callable[..., Any]) -> Resource:
        if template is not None:
            params = set(inspect.signature(fn).parameters)
            needed = set(template.variable_names)
            if needed - params:
                raise ToolDefinitionError(
                    f"resource template {uri!r}: `{fn.__name__}` takes no parameter "
                    f"{', '.join(sorted(needed - params))}"
                )
        return Resource(
            uri,
            fn,
            name or fn.__name__,
            _first_line(fn) if description is None else description,
            mime_type,
        )

    return wrap


def prompt(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
) -> Any:
    """Serve the decorated function as a prompt (``@prompt`` or ``@prompt(name=...)``)."""

    def wrap(f: Callable[..., Any]) -> Prompt:
        called = name or f.__name__
        if not _NAME.match(called):
            raise ToolDefinitionError(f"a prompt name is 1-128 of A-Z a-z 0-9 _ . - /: {called!r}")
        arguments = []
        for p in inspect.signature(f).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"prompt `{called}`: *args and **kwargs are not arguments"
                )
            arguments.append(
                types.PromptArgument(name=p.name, required=p.default is inspect.Parameter.empty)
            )
        return Prompt(
            called,
            f,
            _first_line(f) if description is None else description,
            tuple(arguments),
            dict(choices or {}),
        )

    return wrap(fn) if fn is not None else wrap


def check_served(
    resources: Iterable[Any], prompts: Iterable[Any]
) -> tuple[list[Resource], list[Prompt]]:
    """The application's resources and prompts, checked (outside input: a plugin's or a
    module's objects)."""
    rs = list(resources)
    ps = list(prompts)
    for r in rs:
        if not isinstance(r, Resource):
            raise TypeError(f"resources must be toolwire_mcp.Resource, got {type(r).__name__}")
    for p in ps:
        if not isinstance(p, Prompt):
            raise TypeError(f"prompts must be toolwire_mcp.Prompt, got {type(p).__name__}")
    seen: set[str] = set()
    for r in rs:
        if r.uri in seen:
            raise ValueError(f"the resource {r.uri!r} is given twice")
        seen.add(r.uri)
    names = [p.name for p in ps]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"the prompt {', '.join(twice)} is given twice")
    return rs, ps
