"""pydantic-ai's MCP client with tasks on (MCPToolset, FastMCP 4 with ``fastmcp-tasks``)
against the toolwire gateway: a call that waits for its approvers, asked for as a task
(``use_task=True``). Run in the clients' virtual environment; prints one JSON object of
what it saw; clients.py checks it (and approves the call meanwhile)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic_ai.mcp import MCPToolset


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    async with MCPToolset(url) as toolset:
        try:
            result = await toolset.direct_call_tool("wipe", {"target": "db"}, use_task=True)
            out["wipe"] = [False, result]
        except Exception as exc:  # an isError result is raised as an error
            out["wipe"] = [True, f"{type(exc).__name__}: {exc}"]
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
