"""The tools the TypeScript SDK's task client calls through the gateway (#44): both long
running, so the tool list says they may run as tasks (2025-11-25)."""

from __future__ import annotations

import asyncio
from typing import Any

import toolwire as tw

OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def crunch(rounds: int, mcp: Any = None) -> str:
    """Crunches numbers for a while, saying how far it got."""
    for n in range(rounds):
        await mcp.progress(n + 1, rounds, f"round {n + 1} of {rounds}")
        await asyncio.sleep(0.3)
    return f"crunched {rounds}"


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def tidy(folder: str, mcp: Any = None) -> str:
    """Tidies a folder, asking first."""
    answer = await mcp.elicit(f"Tidy {folder}?", OK)
    return f"tidied {folder}" if answer.accepted and (answer.content or {}).get("ok") else "kept"


tools = tw.Toolset("jobs", [crunch, tidy])
