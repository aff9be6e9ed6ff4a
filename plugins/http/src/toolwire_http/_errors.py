"""The errors of the HTTP tools: each reads well as a tool error the model sees."""

from __future__ import annotations

__all__ = ["HttpConfigError", "HttpDenied", "HttpError"]


class HttpError(Exception):
    """A request the HTTP tools could not make or complete."""


class HttpDenied(HttpError):
    """The URL, the method or the address is not allowed (nothing was sent)."""


class HttpConfigError(HttpError, ValueError):
    """The allow-list configuration (file or environment) is malformed."""
