"""The error this adapter adds to toolwire's tree, and how Gemini's error bodies read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from toolwire import ProviderError
from toolwire.adapters import (
    DEFAULT_CONTEXT_LENGTH_MARKERS,
    ErrorDetail,
    ErrorMapper,
    extract_error_detail,
)

__all__ = ["GEMINI_ERRORS", "PromptBlockedError", "gemini_error_detail"]


class PromptBlockedError(ProviderError, ValueError):
    """Gemini refused the prompt itself (``promptFeedback.blockReason``): no candidate came back.

    ``block_reason`` is Gemini's reason (``SAFETY``, ``BLOCKLIST``,
    ``PROHIBITED_CONTENT``, ``OTHER``...); ``safety_ratings`` its ratings as sent.
    Sending the same prompt again gives the same answer, so it is not transient.
    """

    def __init__(
        self,
        message: str,
        *,
        block_reason: str,
        safety_ratings: tuple[Mapping[str, Any], ...] = (),
        provider: str = "gemini",
    ) -> None:
        self.block_reason = block_reason
        self.safety_ratings = safety_ratings
        super().__init__(message, provider=provider)

    @classmethod
    def from_feedback(cls, feedback: Mapping[str, Any], *, provider: str) -> PromptBlockedError:
        reason = str(feedback.get("blockReason"))
        ratings = feedback.get("safetyRatings")
        flagged = []
        if isinstance(ratings, list):
            flagged = [
                str(r.get("category"))
                for r in ratings
                if isinstance(r, Mapping) and r.get("blocked")
            ]
        detail = feedback.get("blockReasonMessage")
        message = f"the prompt was blocked by Gemini (blockReason {reason}"
        if flagged:
            message += f"; categories {', '.join(flagged)}"
        message += ")"
        if isinstance(detail, str) and detail:
            message += f": {detail}"
        message += "; nothing was generated. Rephrase the prompt or adjust safetySettings"
        return cls(
            message,
            block_reason=reason,
            safety_ratings=tuple(r for r in ratings or () if isinstance(r, Mapping)),
            provider=provider,
        )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")


def _details(details: object) -> tuple[str | None, float | None]:
    """``ErrorInfo.reason`` and ``RetryInfo.retryDelay`` (seconds) from Gemini's details."""
    reason: str | None = None
    retry_after: float | None = None
    if isinstance(details, list):
        for item in details:
            if not isinstance(item, dict):
                continue
            if reason is None and isinstance(item.get("reason"), str):
                reason = item["reason"]
            delay = item.get("retryDelay")
            if retry_after is None and isinstance(delay, str):
                match = _DURATION.match(delay)
                if match:
                    retry_after = float(match.group(1))
    return reason, retry_after


def gemini_error_detail(payload: object, text: str) -> ErrorDetail | None:
    """The generic error detail, plus Gemini's ``details``: the ``ErrorInfo`` reason
    (``API_KEY_INVALID``...) and the ``RetryInfo`` delay a 429 carries."""
    detail = extract_error_detail(payload, text)
    obj = payload[0] if isinstance(payload, list) and payload else payload
    error = obj.get("error") if isinstance(obj, dict) else None
    if detail is None or not isinstance(error, dict):
        return detail
    reason, retry_after = _details(error.get("details"))
    if reason is None and retry_after is None:
        return detail
    return attrs.evolve(detail, reason=reason, retry_after=retry_after)


#: Gemini's error bodies: google.rpc statuses, its context-length wording, and the 400 it
#: answers a bad API key with.
GEMINI_ERRORS = ErrorMapper(
    extract=gemini_error_detail,
    context_length_markers=(
        *DEFAULT_CONTEXT_LENGTH_MARKERS,
        "exceeds the maximum number of tokens",  # "The input token count (N) exceeds ..."
    ),
    kind_status={
        "invalid_argument": 400,
        "failed_precondition": 400,
        "out_of_range": 400,
        "unauthenticated": 401,
        "permission_denied": 403,
        "not_found": 404,
        "aborted": 409,
        "resource_exhausted": 429,
        "internal": 500,
        "unavailable": 503,
        "deadline_exceeded": 504,
    },
    auth_failure_markers=("API_KEY_INVALID", "api key not valid"),
)
