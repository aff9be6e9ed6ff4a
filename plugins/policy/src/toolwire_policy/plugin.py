"""The toolwire-policy plugin (entry point ``policy`` in ``toolwire.policies``).

Importing this module loads the policy named by ``TOOLWIRE_POLICY`` (or found
in ``$XDG_CONFIG_HOME/toolwire/policy.toml``, then ``./toolwire-policy.toml`` once the
user trusted it: ``toolwire-policy trust``). A
malformed policy raises :class:`toolwire_policy.PolicyFileError` here, so the
host marks the policy failed and blocks tool execution; should the hooks be
called anyway, they reject every call and hide every tool. With no policy
file at all the plugin is inert (see :func:`status`), unless
``TOOLWIRE_POLICY_REQUIRED=1``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from toolwire import Hidden, HookContext, Tool, ToolDecision, ToolResult, TypedCall
from toolwire.adapters import AuditEvent
from toolwire.hookspecs import hookimpl
from toolwire_policy._plugin import PolicyPlugin

__all__ = [
    "lint",
    "status",
    "toolwire_audit",
    "toolwire_audit_trails",
    "toolwire_redact_arguments",
    "toolwire_tool_availability",
    "toolwire_tool_decision",
    "toolwire_tool_result",
]

PLUGIN: PolicyPlugin = PolicyPlugin.from_env()
PLUGIN.raise_if_failed()

#: With no policy file every hook answers None: the host then leaves the decision and
#: availability hooks out (so a loop pays nothing for a policy that decides nothing).
toolwire_inert: bool = PLUGIN.toolwire_inert

#: The sync hooks only compute and append to the audit log: what could wait (a shared quota
#: store, a person's approval) is handed back as an awaitable, off the event loop. A
#: server need not warn that they stall it.
toolwire_nonblocking: bool = True


def status() -> str:
    """One line saying which policy file is in force, or that there is none."""
    return PLUGIN.status()


def lint(tools: list[Tool[Any, Any]]) -> list[str]:
    """The policy's rules that name nothing in ``tools`` (the assembled catalogue)."""
    return PLUGIN.lint(tools)


@hookimpl(tryfirst=True)
def toolwire_tool_decision(
    call: TypedCall[Any], context: HookContext
) -> ToolDecision | Awaitable[ToolDecision | None] | None:
    """Reject calls the policy denies, breaks a constraint of, or that need approval."""
    return PLUGIN.toolwire_tool_decision(call, context)


@hookimpl(tryfirst=True)
def toolwire_tool_availability(tool: Tool[Any, Any], context: HookContext) -> Hidden | bool | None:
    """Hide the tools the policy denies, saying why."""
    return PLUGIN.toolwire_tool_availability(tool, context)


@hookimpl(trylast=True)
def toolwire_tool_result(
    call: TypedCall[Any], result: ToolResult, context: HookContext
) -> ToolResult | Awaitable[ToolResult | None] | None:
    """Audit every result; redact its content by the policy's result patterns."""
    return PLUGIN.toolwire_tool_result(call, result, context)


@hookimpl(trylast=True)
def toolwire_redact_arguments(tool: Tool[Any, Any], arguments: dict[str, Any]) -> Any:
    """Redact, in records kept outside the audit log, what the audit log redacts."""
    return PLUGIN.toolwire_redact_arguments(tool, arguments)


@hookimpl
def toolwire_audit(event: AuditEvent, context: HookContext) -> None:
    """Audit the attempts no decision hook saw, and a policy switched off."""
    PLUGIN.toolwire_audit(event, context)


@hookimpl
def toolwire_audit_trails(register: Callable[[Any], None]) -> None:
    """Offer the policy's audit log to the readers it names (the approval console)."""
    PLUGIN.toolwire_audit_trails(register)
