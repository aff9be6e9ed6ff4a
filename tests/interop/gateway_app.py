"""What tests/interop/clients.py serves through `toolwire mcp serve` to MCP clients nobody
here wrote: a tool with structured output, a destructive tool the user approves through
elicitation, one the organisation's policy denies, a resource and a prompt."""

from __future__ import annotations

from pydantic import BaseModel

import toolwire as tw
from toolwire_mcp import prompt, resource


class Total(BaseModel):
    total: int


@tw.tool_fn
def add(a: int, b: int) -> Total:
    """Add two integers."""
    return Total(total=a + b)


@tw.tool_fn(effect="destructive")
def wipe(target: str) -> str:
    """Wipe a target (asks the user first)."""
    return f"wiped {target}"


@tw.tool_fn(effect="destructive")
def shred(target: str) -> str:
    """Shred a target (the policy denies it)."""
    return f"shredded {target}"


tools = tw.Toolset("interop", [add, wipe, shred])


@resource("app://readme", mime_type="text/plain")
def readme() -> str:
    """The readme."""
    return "read me first"


@prompt
def greet(who: str) -> str:
    """Greet someone."""
    return f"Say hello to {who}"


resources = [readme]
prompts = [greet]
