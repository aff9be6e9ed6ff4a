"""Retry policy for provider requests: bounded backoff that honours the Retry-After."""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import (
    Callable,
    Mapping,
)
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import httpx

from toolwire._backoff import backoff
from toolwire._errors import (
    UsageError,
)
from toolwire._exports import publish

if TYPE_CHECKING:
    pass


# -------------------------------------------------------------------------- retry


class RandomSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1), such as :class:`random.Random`."""

    def random(self) -> float: ...


def _non_negative(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"RetryPolicy.{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}")

    return check


def _check_max_retries(_instance: Any, _attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"RetryPolicy.max_retries must be an int, got {type(value).__name__}")
    if value < 0:
        raise UsageError(f"RetryPolicy.max_retries must be >= 0 (extra attempts), got {value}")


def _check_jitter(_instance: Any, _attribute: Any, value: Any) -> None:
    _non_negative("jitter")(_instance, _attribute, value)
    if value > 1:
        raise UsageError(f"RetryPolicy.jitter must be a fraction between 0 and 1, got {value!r}")


@attrs.frozen
class RetryPolicy:
    """How transient provider errors are retried.

    ``max_retries`` counts *extra* attempts (2 means up to 3 requests). The delay
    before retry ``n`` (from 0) is ``min(initial_backoff * 2**n, max_backoff)``
    reduced by a random fraction of up to ``jitter``, so it never exceeds
    ``max_backoff``. When the provider sends Retry-After and
    ``respect_retry_after`` is on, that value replaces the computed delay,
    capped at ``max_retry_after``.
    """

    max_retries: int = attrs.field(default=2, validator=_check_max_retries)
    initial_backoff: float = attrs.field(default=0.5, validator=_non_negative("initial_backoff"))
    max_backoff: float = attrs.field(default=8.0, validator=_non_negative("max_backoff"))
    jitter: float = attrs.field(default=0.25, validator=_check_jitter)
    respect_retry_after: bool = True
    max_retry_after: float = attrs.field(default=60.0, validator=_non_negative("max_retry_after"))

    def __attrs_post_init__(self) -> None:
        if self.max_backoff < self.initial_backoff:
            raise UsageError(
                "RetryPolicy.max_backoff must be >= initial_backoff, got "
                f"max_backoff={self.max_backoff!r} < initial_backoff={self.initial_backoff!r}"
            )

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_retries=0)

    def delay(
        self, attempt: int, retry_after: float | None = None, rng: RandomSource | None = None
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (0 for the first retry)."""
        if attempt < 0:
            raise UsageError(f"attempt must be >= 0 (0 is the first retry), got {attempt}")
        if (
            self.respect_retry_after
            and retry_after is not None
            and not math.isnan(retry_after)
            and retry_after >= 0
        ):
            return min(float(retry_after), self.max_retry_after)
        return backoff(
            attempt,
            initial=self.initial_backoff,
            maximum=self.max_backoff,
            jitter=self.jitter,
            fraction=(rng or random).random() if self.jitter else 0.0,
        )


def _header_lookup(headers: Mapping[str, str] | httpx.Headers, name: str) -> str | None:
    if isinstance(headers, httpx.Headers):
        found: str | None = headers.get(name)
        return found
    value = headers.get(name)
    if value is not None:
        return value
    for key, item in headers.items():
        if key.lower() == name:
            return item
    return None


def parse_retry_after(
    headers: Mapping[str, str] | httpx.Headers, *, now: float | None = None
) -> float | None:
    """Seconds the provider asked to wait, or ``None``.

    Reads ``retry-after-ms`` (milliseconds, OpenAI) first, then ``retry-after`` as
    seconds (``"3"``, ``"1.5"``) or an HTTP date (relative to ``now``, a Unix time,
    default the current time; a date in the past gives ``0.0``). Garbage,
    negative and non-finite values give ``None``; this function never raises.
    """
    try:
        raw_ms = _header_lookup(headers, "retry-after-ms")
        if raw_ms is not None:
            ms = _parse_seconds(raw_ms)
            if ms is not None:
                return ms / 1000.0
        raw = _header_lookup(headers, "retry-after")
        if raw is None:
            return None
        seconds = _parse_seconds(raw)
        if seconds is not None:
            return seconds
        when = email.utils.parsedate_to_datetime(raw.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        reference = time.time() if now is None else now
        return max(0.0, when.timestamp() - reference)
    except Exception:
        return None


def _parse_seconds(text: str) -> float | None:
    text = text.strip()
    if not text or not (text[0].isdigit() or text[0] == "."):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


publish(globals())
