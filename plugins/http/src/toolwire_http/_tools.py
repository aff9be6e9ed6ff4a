"""The HTTP tools, ``fetch`` and ``http_request``, and their toolset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from toolwire import Capability, Toolset, tool_fn
from toolwire_http._fetch import Resolver, describe, fetch, system_resolver
from toolwire_http._policy import HttpPolicy, policy_from_env

if TYPE_CHECKING:
    import httpx  # imported where a request is made (see toolwire_http._fetch)

__all__ = ["MAX_CHARS", "http_toolset", "http_toolset_from_env"]

#: Characters of converted text a tool answers with (the bytes read are bounded apart).
MAX_CHARS = 40_000


def http_toolset(
    policy: HttpPolicy | None = None,
    *,
    resolver: Resolver = system_resolver,
    transport: httpx.BaseTransport | None = None,
) -> Toolset:
    """The ``http`` toolset under ``policy`` (default: none configured, so any public
    URL for GET and HEAD). ``fetch`` is read-only; ``http_request`` (the other methods,
    only where an allow-list rule grants them) is mutating and off by default: a turn
    must ask for it. ``resolver`` and ``transport`` are for tests."""
    rules = policy if policy is not None else HttpPolicy()
    budget = rules.timeout + 5.0

    @tool_fn(
        effect="read_only",
        capabilities=[Capability.NETWORK],
        timeout=budget,
        blocking=True,
        idempotent=True,
    )
    def fetch_url(
        url: Annotated[str, Field(max_length=4096)],
        method: Literal["GET", "HEAD"] = "GET",
    ) -> str:
        """Fetch a web page or an API response over HTTP(S) and return its text.

        HTML comes back as plain text and JSON pretty-printed; large bodies are cut.
        Private and internal addresses cannot be reached.

        Args:
            url: The absolute http or https URL.
            method: GET (the default) or HEAD (the status and headers only).
        """
        result = fetch(url, method, rules, resolver=resolver, transport=transport)
        return describe(result, max_chars=MAX_CHARS)

    @tool_fn(
        effect="mutating",
        capabilities=[Capability.NETWORK],
        timeout=budget,
        blocking=True,
    )
    def http_request(
        url: Annotated[str, Field(max_length=4096)],
        method: Literal["POST", "PUT", "PATCH", "DELETE"],
        body: Annotated[str, Field(max_length=1_000_000)] = "",
        content_type: str = "application/json",
    ) -> str:
        """Send a request that changes something (POST, PUT, PATCH, DELETE) to an
        allow-listed URL, and return the response's text.

        Args:
            url: The absolute http or https URL.
            method: The HTTP method; only those the allow-list grants for the URL.
            body: The request body.
            content_type: The body's media type.
        """
        result = fetch(
            url,
            method,
            rules,
            body=body.encode("utf-8") if body else None,
            content_type=content_type if body else None,
            resolver=resolver,
            transport=transport,
        )
        return describe(result, max_chars=MAX_CHARS)

    tools = Toolset("http", [fetch_url])
    tools.add(http_request, off=True)
    return tools


def http_toolset_from_env() -> Toolset:
    """:func:`http_toolset` with the policy from the environment (``TOOLWIRE_HTTP_*``)."""
    return http_toolset(policy_from_env())
