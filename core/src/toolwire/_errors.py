"""Every exception toolwire raises, in one tree.

::

    ToolwireError
    ├── UsageError (TypeError, ValueError)       toolwire was called with an argument it cannot take
    │   ├── UnsupportedSettingError              a setting the request's model cannot take
    │   └── MediaError                           an image, audio or file that cannot be carried
    ├── ProfileError (ValueError)                a model profile file or table is malformed
    ├── ToolDefinitionError (ValueError)         a tool or its metadata is malformed
    │   └── SchemaCompileError                   a schema cannot be compiled for a provider
    ├── ToolsetError (ValueError)                a toolset cannot be assembled
    │   └── NameCollisionError                   two tools want the same wire name
    ├── UnknownToolError (LookupError)           no tool of that name
    ├── InvalidToolConstraintError (ValueError)  requirement cannot be met by the availability
    ├── RequirementNotMetError (ValueError)      the model ignored the requirement
    ├── MismatchedToolNameError (ValueError)     a result built for the wrong tool
    ├── ExpectationError (ValueError)            expect_one / expect_at_most_one
    ├── CommitError (ValueError)                 a tool round cannot be committed
    │   ├── MissingToolResultError
    │   ├── DuplicateToolResultError
    │   ├── ExtraToolResultError
    │   ├── MismatchedToolCallNameError
    │   └── MismatchedToolCallArgumentsError
    ├── TranscriptError (ValueError)             a session is malformed or out of order
    ├── HookError (TypeError)                    a hook returned something that is not a decision
    ├── PluginError (RuntimeError)               a plugin failed to load, register or validate
    │   └── PolicyError                          a policy failed: tool execution is blocked
    ├── RoundLimitError (RuntimeError)           the agent loop ran out of rounds
    ├── OutputValidationError (ValueError)       the final answer does not match output_type
    ├── EventLoopError (RuntimeError)            a sync entry point was called inside a running loop
    ├── ToolExecutionError (RuntimeError)        raised by Executor.dispatch for a failed call
    ├── ToolTimeoutError (TimeoutError)          a tool ran past its timeout
    ├── ToolBackendError (RuntimeError)          an executor backend could not run a tool's body
    ├── ApprovalPendingError (RuntimeError)      an approver deferred; resume with the decisions
    ├── FetchError (OSError)                     a bounded fetch could not be made or read
    └── ProviderError                            a provider request failed
        ├── AuthenticationError (PermissionError)
        ├── PermissionDeniedError (PermissionError)
        ├── NotFoundError (LookupError)
        ├── RateLimitError                       transient, carries retry_after
        ├── OverloadedError                      transient, carries retry_after
        ├── ServerError                          transient (5xx)
        ├── ContextLengthError (ValueError)
        ├── BadRequestError (ValueError)         keeps the provider's message
        ├── ProviderConnectionError (ConnectionError)   transient
        ├── ProviderTimeoutError (TimeoutError)         transient
        │   └── DeadlineExceededError            the request's total deadline passed (not transient)
        ├── ResponseTooLargeError                the response is over the size limit
        └── StreamError                          a broken or truncated stream
"""

from __future__ import annotations

from typing import Any

from toolwire._exports import publish

__all__ = [
    "ApprovalPendingError",
    "AuthenticationError",
    "BadRequestError",
    "CommitError",
    "ContextLengthError",
    "MediaError",
    "ProfileError",
    "DeadlineExceededError",
    "DuplicateToolResultError",
    "EventLoopError",
    "ExpectationError",
    "ExtraToolResultError",
    "FetchError",
    "HookError",
    "InvalidToolConstraintError",
    "MismatchedToolCallArgumentsError",
    "MismatchedToolCallNameError",
    "MismatchedToolNameError",
    "MissingToolResultError",
    "NameCollisionError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "PluginError",
    "PolicyError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RequirementNotMetError",
    "ResponseTooLargeError",
    "OutputValidationError",
    "RoundLimitError",
    "SchemaCompileError",
    "ServerError",
    "StreamError",
    "ToolDefinitionError",
    "ToolBackendError",
    "ToolExecutionError",
    "ToolTimeoutError",
    "ToolsetError",
    "ToolwireError",
    "TranscriptError",
    "UnknownToolError",
    "UnsupportedSettingError",
    "UsageError",
]


class ToolwireError(Exception):
    """Root of every exception toolwire raises."""


class UsageError(ToolwireError, TypeError, ValueError):
    """toolwire was called with an argument of the wrong type or value.

    Raised where the application (not the model) passed something toolwire cannot take: a
    commit given something that is not a ToolResult, an Agent given something that is not a
    Provider. It is both a TypeError and a ValueError, so code that caught either still does.
    """


class UnsupportedSettingError(UsageError):
    """A model setting the request's model cannot take (by its profile), refused before the
    request: the message names the model, the setting and what the model takes instead."""


class ProfileError(ToolwireError, ValueError):
    """A model profile (a profiles file, a ``[[profiles]]`` table of toolwire.toml) is
    malformed; the message names the file and the key."""


class MediaError(UsageError):
    """Media that cannot be carried: bytes of another type than declared, a type that is
    not an image's (or audio's), a malformed data URL or base64, a file too big to read."""


class ToolDefinitionError(ToolwireError, ValueError):
    """A tool, its schema or its metadata is malformed (raised at definition time)."""


class SchemaCompileError(ToolDefinitionError):
    """A tool's schema cannot be compiled for a provider at all.

    Raised for a root that is not an object schema, a ``$ref`` that is not
    local or does not resolve, a ``false`` schema, or an unknown ``type``.
    """


class ToolsetError(ToolwireError, ValueError):
    """A toolset cannot be assembled."""


class NameCollisionError(ToolsetError):
    """Two tools resolve to the same wire name; the message names both sources."""


class UnknownToolError(ToolwireError, LookupError):
    """No tool with that name exists in the toolset."""

    def __init__(self, name: str, message: str | None = None) -> None:
        self.name = name
        super().__init__(message or f"tool `{name}` is not recognized in this toolset")


class InvalidToolConstraintError(ToolwireError, ValueError):
    """The requirement of a turn cannot be met by its resolved availability."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        super().__init__(
            f"invalid tool constraints: required tool `{tool}` is not in the available set"
        )


class RequirementNotMetError(ToolwireError, ValueError):
    """The provider ignored the turn's requirement (checked after decoding)."""


class MismatchedToolNameError(ToolwireError, ValueError):
    """A result was built with a tool whose name differs from the call's."""


class ExpectationError(ToolwireError, ValueError):
    """A round had a different number of calls than the caller expected."""


class CommitError(ToolwireError, ValueError):
    """A tool round cannot be committed; nothing was written.

    ``call_id`` names the call at fault.
    """

    def __init__(self, call_id: str, message: str) -> None:
        self.call_id = call_id
        super().__init__(message)


class MissingToolResultError(CommitError):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id, f"assistant turn references missing tool result `{call_id}`")


class DuplicateToolResultError(CommitError):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id, f"assistant turn received duplicate tool result `{call_id}`")


class ExtraToolResultError(CommitError):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id, f"assistant turn received extra tool result `{call_id}`")


class MismatchedToolCallNameError(CommitError):
    def __init__(self, call_id: str, expected: str, got: str) -> None:
        self.expected = expected
        self.got = got
        super().__init__(
            call_id,
            f"assistant turn tool call `{call_id}` expected tool name `{expected}`, got `{got}`",
        )


class MismatchedToolCallArgumentsError(CommitError):
    def __init__(self, call_id: str) -> None:
        super().__init__(
            call_id, f"assistant turn tool call `{call_id}` received mismatched arguments"
        )


class TranscriptError(ToolwireError, ValueError):
    """A session is malformed (bad JSON, unknown message kind) or out of order."""


class HookError(ToolwireError, TypeError):
    """A hook returned something other than a decision, or was used the wrong way."""


class PluginError(ToolwireError, RuntimeError):
    """A plugin failed to import, register or validate.

    ``plugin`` names the plugin (entry-point name), ``distribution`` its distribution.
    """

    def __init__(self, message: str, *, plugin: str = "", distribution: str = "") -> None:
        self.plugin = plugin
        self.distribution = distribution
        super().__init__(message)


class PolicyError(PluginError):
    """A policy plugin failed; tool execution is blocked until it is fixed."""


class EventLoopError(ToolwireError, RuntimeError):
    """A synchronous entry point (``Executor.execute_all``, ...) was called inside a running
    event loop; await its async twin instead."""


class RoundLimitError(ToolwireError, RuntimeError):
    """The agent loop reached its round limit without the model finishing."""


class OutputValidationError(ToolwireError, ValueError):
    """The model's final answer is not valid for the turn's ``output_type``.

    ``text`` is the answer as the model sent it, ``errors`` pydantic's error dicts
    (empty when the text is not JSON at all), ``feedback`` the message an agent
    sends back to the model to ask for a corrected answer.
    """

    def __init__(self, message: str, *, text: str = "", errors: tuple[Any, ...] = ()) -> None:
        self.text = text
        self.errors = errors
        super().__init__(message)

    @property
    def feedback(self) -> str:
        detail = str(self)
        if len(detail) > 2_000:
            detail = detail[:2_000] + " ..."
        return (
            f"Your answer was not accepted: {detail}\n"
            "Answer again with only the JSON the output schema asks for."
        )


class ToolExecutionError(ToolwireError, RuntimeError):
    """Raised by ``Executor.dispatch`` when a call ends in an error result.

    ``result`` is that error result (a ToolResult, or None when raised elsewhere).
    """

    def __init__(self, message: str, *, result: Any = None) -> None:
        self.result = result
        super().__init__(message)


class ToolTimeoutError(ToolwireError, TimeoutError):
    """A tool ran past its timeout. The executor ends the call with an error result
    ("timed out after N s"); an executor backend raises this for a remote body that
    ran too long, so the call ends the same way wherever the body ran."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"timed out after {float(seconds)!r} s")


class ToolBackendError(ToolwireError, RuntimeError):
    """An executor backend could not run a tool's body: its worker died, the input or
    the output could not be sent, the tool's code could not be imported there.

    ``kind`` says which (``worker_died``, ``unpicklable``, ``remote_import``,
    ``unavailable``, or the backend's own word); ``transient`` whether another attempt
    may succeed (the executor retries only idempotent tools with a retry hint, as for
    any failure). The message is what the model reads; a remote traceback belongs in
    the log, not here.
    """

    def __init__(self, message: str, *, kind: str = "error", transient: bool = False) -> None:
        self.kind = kind
        self.transient = transient
        super().__init__(message)


class FetchError(ToolwireError, OSError):
    """An outbound request's answer could not be had within its bounds: it was over its
    size limit as decompressed, encoded in a way that was not asked for, not in time, or
    the connection failed. The message says which, and names what was fetched; ``reason``
    says it for code: ``too_large``, ``encoding``, ``data``, ``timeout``, ``deadline`` or
    ``connection``."""

    def __init__(self, message: str, *, reason: str = "connection") -> None:
        self.reason = reason
        super().__init__(message)


class ApprovalPendingError(ToolwireError, RuntimeError):
    """An approver deferred its decision, so nothing was run.

    ``pending`` holds one ApprovalRequest per deferred call (with the
    fingerprint of the arguments to review); decide them and pass the
    decisions to ``Executor.resume`` (or ``execute``/``run_plan`` with
    ``approvals=``).
    """

    def __init__(self, pending: tuple[Any, ...]) -> None:
        self.pending = pending
        names = ", ".join(f"`{getattr(p, 'tool_name', '?')}`" for p in pending)
        super().__init__(
            f"{len(pending)} tool call(s) await approval ({names}); nothing was run. "
            f"Decide them and resume with executor.resume(plan, approvals)"
        )


class ProviderError(ToolwireError):
    """A provider request failed.

    Attributes: ``provider`` (adapter name), ``status`` (HTTP status or None),
    ``message`` (the provider's own message, kept verbatim), ``retry_after``
    (seconds, when the provider said), ``request_id`` (when the provider sent one).
    No attribute or message ever contains an API key.
    """

    transient: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
        body: str | None = None,
    ) -> None:
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        self.body = body
        parts = [p for p in (provider, str(status) if status is not None else "") if p]
        prefix = f"[{' '.join(parts)}] " if parts else ""
        super().__init__(prefix + message)


class AuthenticationError(ProviderError, PermissionError):
    """The API key is missing or was refused (HTTP 401)."""


class PermissionDeniedError(ProviderError, PermissionError):
    """The key may not use this resource (HTTP 403)."""


class NotFoundError(ProviderError, LookupError):
    """Unknown model or endpoint (HTTP 404)."""


class RateLimitError(ProviderError):
    """Too many requests (HTTP 429); ``retry_after`` holds the provider's hint."""

    transient = True


class OverloadedError(ProviderError):
    """The provider is overloaded (HTTP 529, or 503 with an overload message)."""

    transient = True


class ServerError(ProviderError):
    """The provider failed (HTTP 5xx)."""

    transient = True


class ContextLengthError(ProviderError, ValueError):
    """The request is longer than the model's context window."""


class BadRequestError(ProviderError, ValueError):
    """The provider rejected the request (HTTP 400/422); ``message`` is its own text."""


class ProviderConnectionError(ProviderError, ConnectionError):
    """The connection failed or was dropped before a response."""

    transient = True


class ProviderTimeoutError(ProviderError, TimeoutError):
    """The request timed out."""

    transient = True


class DeadlineExceededError(ProviderTimeoutError):
    """The request (every attempt, and the whole stream) ran past its total deadline.

    Not transient: the time the caller allowed is spent, so nothing retries it.
    """

    transient = False


class ResponseTooLargeError(ProviderError):
    """The response body (or the whole stream) is over the transport's size limit."""


class StreamError(ProviderError):
    """A stream broke off, was truncated, or carried malformed events; nothing was committed."""


publish(globals())
