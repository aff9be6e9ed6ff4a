"""The tools bench.ray_backend runs (a module, so Ray workers import them by name)."""

from __future__ import annotations

import time

import toolwire as tw

WORK_S = 0.050  # the CPU-bound tool's work, seconds


@tw.tool_fn(timeout=None)
def burn() -> int:
    """Spin the CPU for WORK_S seconds (no sleeping: the work holds a core)."""
    end = time.perf_counter() + WORK_S
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


@tw.tool_fn(timeout=None)
def ping() -> str:
    """Nothing: the per-call overhead."""
    return "pong"
