"""The one error this adapter adds to toolwire's tree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire import ProviderError

__all__ = ["PromptBlockedError"]


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
