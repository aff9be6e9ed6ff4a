"""What tests/interop/clients.py serves through `toolwire mcp serve` to MCP clients nobody
here wrote: a tool with structured output, a destructive tool the user approves through
elicitation, one the organisation's policy denies, one returning an image, a resource and
a prompt."""

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


# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082"
)


@tw.tool_fn
def snapshot(caption: str) -> list[str | tw.Image]:
    """A caption and an image (a media result, #27)."""
    return [caption, tw.Image(PNG)]


tools = tw.Toolset("interop", [add, wipe, shred, snapshot])


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
