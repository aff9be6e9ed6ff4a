"""The one backoff formula, used by tool retries (RetryHint) and HTTP retries (RetryPolicy).

``retry`` counts retries from 0: the wait before the first retry (after the first attempt
failed) is ``initial``. Each retry doubles it, up to ``maximum``. Jitter is *subtracted*:
``fraction`` in [0, 1) takes off up to ``jitter`` (a share of the delay), so a delay is
in ``[base * (1 - jitter), base]`` and never exceeds ``maximum``; many clients that
failed together spread out instead of waking in step.
"""

from __future__ import annotations

__all__ = ["backoff"]


def backoff(retry: int, *, initial: float, maximum: float, jitter: float, fraction: float) -> float:
    """Seconds to wait before retry number ``retry`` (0 is the first retry)."""
    base = min(initial * 2.0 ** min(retry, 64), maximum)
    return base * (1.0 - jitter * fraction) if jitter else base
