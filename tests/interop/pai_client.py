"""pydantic-ai's MCP client (MCPToolset, on FastMCP) against the toolwire gateway: run in a
virtual environment of its own (its dependencies are not toolwire's). Prints one JSON
object of what it saw; clients.py checks it."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic_ai.mcp import MCPToolset

ASKED: list[str] = []


async def approve(message: str, response_type: Any, params: Any, context: Any) -> Any:
    ASKED.append(message)
    return {"approve": True}


async def main(url: str) -> None:
    toolset = MCPToolset(url, elicitation_handler=approve)
    async with toolset:
        tools = await toolset.list_tools()
        out: dict[str, Any] = {"tools": [[t.name, bool(t.output_schema)] for t in tools]}
        out["add"] = [False, await toolset.direct_call_tool("add", {"a": 2, "b": 3})]
        for name in ("wipe", "shred"):
            try:
                out[name] = [False, await toolset.direct_call_tool(name, {"target": "db"})]
            except Exception as exc:  # an isError result is raised as an error
                out[name] = [True, str(exc)]
        out["asked"] = len(ASKED)
        snap = await toolset.direct_call_tool("snapshot", {"caption": "hi"})
        items = snap if isinstance(snap, list) else [snap]
        out["snapshot"] = [
            [
                type(i).__name__,
                getattr(i, "media_type", None),
                len(getattr(i, "data", b"") or str(i)),
            ]
            for i in items
        ]
        contents = await toolset.read_resource("app://readme")
        out["resource"] = contents if isinstance(contents, str) else str(contents)
        prompt = await toolset.get_prompt("greet", {"who": "Ada"})
        content = prompt.messages[0].content
        out["prompt"] = getattr(content, "text", None) or getattr(content, "content", None)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
