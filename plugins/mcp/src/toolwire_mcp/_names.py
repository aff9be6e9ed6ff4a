"""MCP tool names -> provider-safe tool names, reversibly.

MCP allows 1-128 characters from ``[A-Za-z0-9_.-]``, unique per server only; providers
allow ``^[a-zA-Z0-9_-]{1,64}$``. Each tool gets toolwire's wire name for its MCP name
(dots become ``_``, a long name keeps its head and a hash); where two MCP names of one
server would meet, the later gets a hash of its exact name appended. The toolset keeps
the exact MCP name behind each tool, so a call goes back to the exact tool; names
across servers are kept apart by each server's prefix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from toolwire.adapters import wire_name

__all__ = ["MAX_NAME", "local_names"]

MAX_NAME = 64


def _hashed(name: str, base: str) -> str:
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return f"{base[: MAX_NAME - 9]}_{digest}"


def local_names(mcp_names: Iterable[str]) -> dict[str, str]:
    """``{mcp_name: tool_name}``: provider-safe, unique, stable for the same list."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in mcp_names:
        local = wire_name(name)
        if local in taken:
            local = _hashed(name, local)
            n = 0
            while local in taken:  # a hash collision among one server's names: vanishingly rare
                n += 1
                local = _hashed(f"{name}#{n}", wire_name(name))
        taken.add(local)
        out[name] = local
    return out
