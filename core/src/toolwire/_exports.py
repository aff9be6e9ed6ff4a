"""The public names of every public module, and the module that defines each.

The one source of truth for ``toolwire``, ``toolwire.adapters``, ``toolwire.schema`` and
``toolwire.exceptions``: each module's lazy table and ``__all__`` come from here (a test
checks that the type-checking imports agree), and :func:`publish` gives every public
object the ``__module__`` of the public module that exports it, so reprs, docs and pickles
name ``toolwire.Toolset``, never ``toolwire._toolset.Toolset``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from types import FunctionType
from typing import Any

__all__ = ["ADAPTERS", "EXCEPTIONS", "MOVED", "SCHEMA", "SUBMODULES", "TOPLEVEL", "publish"]

TOPLEVEL: Mapping[str, str] = {
    "REJECTION_PREFIX": "toolwire._calls",
    "Agent": "toolwire._agent",
    "AgentEvent": "toolwire._agent",
    "AgentFinished": "toolwire._agent",
    "AgentResult": "toolwire._agent",
    "Allow": "toolwire._execute",
    "Approval": "toolwire._execute",
    "ApprovalDecision": "toolwire._execute",
    "ApprovalGate": "toolwire._execute",
    "ApprovalNeeded": "toolwire._agent",
    "ApprovalPendingError": "toolwire._errors",
    "ApprovalRequest": "toolwire._execute",
    "AssistantMessage": "toolwire._transcript",
    "Availability": "toolwire._turn",
    "Capability": "toolwire._tools",
    "CommitError": "toolwire._errors",
    "Complete": "toolwire._hooks",
    "ContinueSuggestion": "toolwire._round",
    "Defer": "toolwire._execute",
    "Deny": "toolwire._execute",
    "Executor": "toolwire._execute",
    "Finished": "toolwire._round",
    "FunctionTool": "toolwire._tools",
    "HandledCall": "toolwire._calls",
    "HookContext": "toolwire._hooks",
    "HookSet": "toolwire._hooks",
    "Injected": "toolwire._tools",
    "Interceptor": "toolwire._execute",
    "InvalidArguments": "toolwire._round",
    "LoggingInterceptor": "toolwire._execute",
    "Message": "toolwire._transcript",
    "Modify": "toolwire._execute",
    "NeedsTools": "toolwire._round",
    "NotAvailable": "toolwire._round",
    "PluginHost": "toolwire._plugins",
    "PluginRecord": "toolwire._plugins",
    "PolicyError": "toolwire._errors",
    "Provider": "toolwire._provider",
    "ProviderError": "toolwire._errors",
    "RateLimitInterceptor": "toolwire._execute",
    "Reject": "toolwire._hooks",
    "RejectedCall": "toolwire._calls",
    "Requirement": "toolwire._turn",
    "ResolvedTurn": "toolwire._turn",
    "RetryHint": "toolwire._tools",
    "RoundCommitted": "toolwire._agent",
    "RoundExecution": "toolwire._execute",
    "RoundLimitError": "toolwire._errors",
    "RunNormally": "toolwire._hooks",
    "Selector": "toolwire._tools",
    "Session": "toolwire._transcript",
    "SystemMessage": "toolwire._transcript",
    "TimeoutInterceptor": "toolwire._execute",
    "Tool": "toolwire._tools",
    "ToolCall": "toolwire._calls",
    "ToolCallDecided": "toolwire._agent",
    "ToolCallIssue": "toolwire._round",
    "ToolDecision": "toolwire._hooks",
    "ToolDef": "toolwire._tools",
    "ToolDefinitionError": "toolwire._errors",
    "ToolEffect": "toolwire._tools",
    "ToolExecutionError": "toolwire._errors",
    "ToolMetadata": "toolwire._tools",
    "ToolRequest": "toolwire._execute",
    "ToolResult": "toolwire._calls",
    "ToolResultReady": "toolwire._agent",
    "ToolResultsMessage": "toolwire._transcript",
    "ToolRound": "toolwire._round",
    "ToolRoundPlan": "toolwire._round",
    "Toolset": "toolwire._toolset",
    "ToolwireError": "toolwire._errors",
    "Tracing": "toolwire._otel",
    "Turn": "toolwire._turn",
    "TypedCall": "toolwire._calls",
    "UnknownTool": "toolwire._round",
    "UnknownToolError": "toolwire._errors",
    "Usage": "toolwire._transcript",
    "UsageError": "toolwire._errors",
    "UserMessage": "toolwire._transcript",
    "arun_agent": "toolwire._agent",
    "arun_turn": "toolwire._provider",
    "call_fingerprint": "toolwire._execute",
    "get_host": "toolwire._plugins",
    "hookimpl": "toolwire.hookspecs",
    "raw_tool": "toolwire._tools",
    "raw_tool_from_file": "toolwire._tools",
    "rejection_reason": "toolwire._calls",
    "resolve_turn": "toolwire._turn",
    "run_agent": "toolwire._agent",
    "run_turn": "toolwire._provider",
    "tool_fn": "toolwire._tools",
    "tool_input": "toolwire._tools",
    "tool_of": "toolwire._tools",
}
"""``toolwire``: what an application author uses."""

ADAPTERS: Mapping[str, str] = {
    "ApiKey": "toolwire._http",
    "AssistantReply": "toolwire._round",
    "AuthStyle": "toolwire._http",
    "ChatSpan": "toolwire._otel",
    "HttpProvider": "toolwire._adapter",
    "Provider": "toolwire._provider",
    "ReplyCompleted": "toolwire._provider",
    "ResolvedTool": "toolwire._turn",
    "ResolvedTurn": "toolwire._turn",
    "RetryPolicy": "toolwire._http",
    "SSEEvent": "toolwire._http",
    "StreamEvent": "toolwire._provider",
    "TextDelta": "toolwire._provider",
    "ToolCallAssembler": "toolwire._assemble",
    "ToolCallDelta": "toolwire._provider",
    "ToolCallStarted": "toolwire._provider",
    "ToolChoice": "toolwire._turn",
    "ToolSpan": "toolwire._otel",
    "Transport": "toolwire._http",
    "cached_wire": "toolwire._adapter",
    "decode_reply": "toolwire._round",
    "lazy_exports": "toolwire._lazy",
    "malformed": "toolwire._adapter",
    "rejection_content": "toolwire._calls",
    "resolve_api_key": "toolwire._http",
    "synthesize_call_id": "toolwire._assemble",
    "wire_name": "toolwire._toolset",
}
"""``toolwire.adapters``: what a provider adapter's author needs beyond the top level."""

SCHEMA: Mapping[str, str] = {
    "CompileOptions": "toolwire._compile",
    "CompileReport": "toolwire._compile",
    "CompiledTool": "toolwire._compile",
    "SchemaChange": "toolwire._compile",
    "check_tools": "toolwire._compile",
    "compile_tool": "toolwire._compile",
    "format_report": "toolwire._compile",
    "parse_docstring": "toolwire._schema",
}
"""``toolwire.schema``: schema compilation, checks and loss reports."""

EXCEPTIONS: Mapping[str, str] = {
    "ApprovalPendingError": "toolwire._errors",
    "AuthenticationError": "toolwire._errors",
    "BadRequestError": "toolwire._errors",
    "CommitError": "toolwire._errors",
    "ContextLengthError": "toolwire._errors",
    "DuplicateToolResultError": "toolwire._errors",
    "EventLoopError": "toolwire._errors",
    "ExpectationError": "toolwire._errors",
    "ExtraToolResultError": "toolwire._errors",
    "HookError": "toolwire._errors",
    "InvalidToolConstraintError": "toolwire._errors",
    "MismatchedToolCallArgumentsError": "toolwire._errors",
    "MismatchedToolCallNameError": "toolwire._errors",
    "MismatchedToolNameError": "toolwire._errors",
    "MissingToolResultError": "toolwire._errors",
    "NameCollisionError": "toolwire._errors",
    "NotFoundError": "toolwire._errors",
    "OverloadedError": "toolwire._errors",
    "PermissionDeniedError": "toolwire._errors",
    "PluginError": "toolwire._errors",
    "PolicyError": "toolwire._errors",
    "ProviderConnectionError": "toolwire._errors",
    "ProviderError": "toolwire._errors",
    "ProviderTimeoutError": "toolwire._errors",
    "RateLimitError": "toolwire._errors",
    "RequirementNotMetError": "toolwire._errors",
    "RoundLimitError": "toolwire._errors",
    "ServerError": "toolwire._errors",
    "StreamError": "toolwire._errors",
    "ToolDefinitionError": "toolwire._errors",
    "ToolExecutionError": "toolwire._errors",
    "ToolsetError": "toolwire._errors",
    "ToolwireError": "toolwire._errors",
    "TranscriptError": "toolwire._errors",
    "UnknownToolError": "toolwire._errors",
    "UsageError": "toolwire._errors",
    "is_transient": "toolwire._execute",
}
"""``toolwire.exceptions``: the whole exception tree."""

MOVED: Mapping[str, str] = {
    "ApiKey": "toolwire.adapters",
    "AssistantReply": "toolwire.adapters",
    "AuthenticationError": "toolwire.exceptions",
    "BadRequestError": "toolwire.exceptions",
    "ChatSpan": "toolwire.adapters",
    "CompileOptions": "toolwire.schema",
    "CompileReport": "toolwire.schema",
    "CompiledTool": "toolwire.schema",
    "ContextLengthError": "toolwire.exceptions",
    "DuplicateToolResultError": "toolwire.exceptions",
    "ExpectationError": "toolwire.exceptions",
    "ExtraToolResultError": "toolwire.exceptions",
    "HookError": "toolwire.exceptions",
    "HttpProvider": "toolwire.adapters",
    "InvalidToolConstraintError": "toolwire.exceptions",
    "MismatchedToolCallArgumentsError": "toolwire.exceptions",
    "MismatchedToolCallNameError": "toolwire.exceptions",
    "MismatchedToolNameError": "toolwire.exceptions",
    "MissingToolResultError": "toolwire.exceptions",
    "NameCollisionError": "toolwire.exceptions",
    "NotFoundError": "toolwire.exceptions",
    "OverloadedError": "toolwire.exceptions",
    "PermissionDeniedError": "toolwire.exceptions",
    "PlanRun": "toolwire:RoundExecution",
    "PluginError": "toolwire.exceptions",
    "ProviderConnectionError": "toolwire.exceptions",
    "ProviderTimeoutError": "toolwire.exceptions",
    "RateLimitError": "toolwire.exceptions",
    "ReplyCompleted": "toolwire.adapters",
    "RequirementNotMetError": "toolwire.exceptions",
    "ResolvedTool": "toolwire.adapters",
    "RetryPolicy": "toolwire.adapters",
    "SchemaChange": "toolwire.schema",
    "ServerError": "toolwire.exceptions",
    "StreamError": "toolwire.exceptions",
    "StreamEvent": "toolwire.adapters",
    "TextDelta": "toolwire.adapters",
    "ToolCallDelta": "toolwire.adapters",
    "ToolCallStarted": "toolwire.adapters",
    "ToolChoice": "toolwire.adapters",
    "ToolsetError": "toolwire.exceptions",
    "TranscriptError": "toolwire.exceptions",
    "check_tools": "toolwire.schema",
    "compile_tool": "toolwire.schema",
    "decode_reply": "toolwire.adapters",
    "format_report": "toolwire.schema",
    "is_transient": "toolwire.exceptions",
    "parse_docstring": "toolwire.schema",
    "rejection_content": "toolwire.adapters",
    "wire_name": "toolwire.adapters",
}
"""Names that left the top level in 0.2 -> the public module that has them now
(``module:NewName`` where the name changed too). Reading one from ``toolwire`` still works
for one release, with a DeprecationWarning."""

SUBMODULES = frozenset({"adapters", "exceptions", "hookspecs", "schema"})
"""The public submodules, reachable as attributes of ``toolwire`` (imported on first read)."""

_FACES: tuple[tuple[str, Mapping[str, str]], ...] = (
    ("toolwire", TOPLEVEL),
    ("toolwire.adapters", ADAPTERS),
    ("toolwire.schema", SCHEMA),
    ("toolwire.exceptions", EXCEPTIONS),
)


def publish(namespace: MutableMapping[str, Any]) -> None:
    """Give the public classes and functions of a private module their public ``__module__``.

    Called at the bottom of each private module with ``globals()``. The first public module
    (in the order of ``_FACES``) that exports a name is the one it reports.
    """
    here = namespace["__name__"]
    for face, table in _FACES:
        for name, defined_in in table.items():
            obj = namespace.get(name) if defined_in == here else None
            if isinstance(obj, (type, FunctionType)) and obj.__module__ == here:
                obj.__module__ = face
