"""A toolwire MCP client for the conformance suite's client scenarios.

The suite starts a test server for the scenario named in ``MCP_CONFORMANCE_SCENARIO``
and runs this program with the server's URL as the last argument. It connects the way
an application does (``mcp_toolset``), lists the tools, and calls each one through the
executor with arguments made from its input schema.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2

import toolwire as tw
from toolwire_mcp import (
    ServerSpec,
    close_all,
    discover_authorization_server,
    mcp_toolset,
    set_elicitation_handler,
    set_login_handler,
)


def example(schema: Any) -> Any:
    """A small valid value for a JSON Schema (enough for the suite's tools)."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        needed = schema.get("required") or list(props)
        return {name: example(props.get(name)) for name in needed}
    if kind == "array":
        return []
    if kind == "integer":
        return 2
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "string":
        return "x"
    return None


async def headless_login(server: str, url: str) -> tuple[str, str | None] | None:
    """A user who logs in at once: the suite's authorization endpoint answers with the
    redirect to our callback; its code and state are what the browser would bring."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=20) as http:
        answer = await http.get(url)
    target = answer.headers.get("location")
    if not target:
        return None
    query = parse_qs(urlsplit(target).query)
    code = query.get("code", [None])[0]
    return (code, query.get("state", [None])[0]) if code else None


def spec_for(url: str, scenario: str) -> ServerSpec:
    if not scenario.startswith("auth/"):
        return ServerSpec("conformance", url=url, annotations="trust", timeout=20)
    set_login_handler(headless_login)
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    extra: dict[str, Any] = {}
    if context.get("client_id"):  # a client registered beforehand
        extra["oauth_client_id"] = context["client_id"]
        if context.get("client_secret"):
            os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            extra["oauth_client_secret_env"] = "CONFORMANCE_CLIENT_SECRET"
    if scenario.startswith("auth/client-credentials-"):  # a service, no user
        extra["oauth_client_id"] = context["client_id"]
        if context.get("private_key_pem"):
            os.environ["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
            extra["oauth_private_key_env"] = "CONFORMANCE_PRIVATE_KEY"
            extra["oauth_signing_algorithm"] = context.get("signing_algorithm", "RS256")
            extra.pop("oauth_client_secret_env", None)
        return ServerSpec(
            "conformance",
            url=url,
            annotations="trust",
            timeout=20,
            auth="client_credentials",
            **extra,
        )
    if scenario == "auth/cross-app-access-complete-flow":  # enterprise-managed (SEP-990)
        # The administrator's configuration: the authorization server this client is
        # provisioned for (looked up once from the server's resource metadata with
        # toolwire's own helper, and pinned), the identity provider, and the user's ID
        # token from it.
        os.environ["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        return ServerSpec(
            "conformance",
            url=url,
            annotations="trust",
            timeout=20,
            auth="cross_app",
            oauth_issuer=discover_authorization_server(url),
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
            idp_id_token_env="CONFORMANCE_ID_TOKEN",
            **extra,
        )
    if scenario == "auth/basic-cimd":  # an application that hosts its metadata document
        extra["oauth_client_metadata_url"] = "https://conformance-test.local/client-metadata.json"
    return ServerSpec(
        "conformance", url=url, annotations="trust", timeout=20, auth="oauth", **extra
    )


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    # A user who accepts every form as it comes (the schema's defaults filled in).
    set_elicitation_handler(lambda request: True)
    tools = mcp_toolset("conformance", spec_for(url, scenario))
    print(f"scenario {scenario}: {len(tools.tools())} tools")
    if scenario != "initialize":
        executor = tw.Executor(tools=tools, plugins=False, approval=lambda request: tw.Allow())
        for i, tool in enumerate(tools.tools()):
            arguments = json.dumps(example(tool.input_schema) or {})
            result = executor.execute(tw.ToolCall(f"c{i}", tool.name, arguments))
            print(f"{tool.name}: {'error' if result.is_error else 'ok'}: {result.content[:200]}")
        executor.close()
    close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
