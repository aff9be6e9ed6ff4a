"""Words the benchmark's rows share (a module of its own: the scenarios and the MCP rows
both say them, and neither imports the other for them)."""

from __future__ import annotations

__all__ = ["BOUND_ONLY"]

#: Why a bound row has no peer library's figure.
BOUND_ONLY = "a bound for toolwire's target, measured for toolwire only"
