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

import toolwire as tw
from toolwire_mcp import close_all, mcp_toolset, set_elicitation_handler


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


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    # A user who accepts every form as it comes (the schema's defaults filled in).
    set_elicitation_handler(lambda request: True)
    tools = mcp_toolset("conformance", url, annotations="trust", timeout=20)
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
