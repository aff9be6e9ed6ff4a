"""The toolwire-cedar plugin (entry point ``cedar`` in ``toolwire.policies``).

Importing this module loads the Cedar policy named by ``TOOLWIRE_CEDAR_POLICY`` (validated
against ``TOOLWIRE_CEDAR_SCHEMA`` when set). A policy that does not parse or validate
raises here, so the host marks the plugin failed and blocks every tool call (fail closed).
Unset, the plugin is inert.
"""

from __future__ import annotations

from typing import Any

from toolwire import Tool
from toolwire_cedar._plugin import CedarPlugin

__all__ = ["lint", "status", "toolwire_audit_trails", "toolwire_tool_decision"]

PLUGIN: CedarPlugin = CedarPlugin.from_env()

#: With no policy every hook answers None: the host leaves the plugin's hooks out.
toolwire_inert: bool = PLUGIN.toolwire_inert

#: The sync hooks only compute and append to the audit log: what could wait (a shared quota
#: store, a person's approval) is handed back as an awaitable, off the event loop. A
#: server need not warn that they stall it.
toolwire_nonblocking: bool = True
toolwire_tool_decision = PLUGIN.toolwire_tool_decision
toolwire_audit_trails = PLUGIN.toolwire_audit_trails


def status() -> str:
    """One line for ``toolwire plugins``."""
    return PLUGIN.status()


def lint(tools: list[Tool[Any, Any]]) -> list[str]:
    """The policies' tools and toolsets that name nothing in ``tools`` (the catalogue)."""
    return PLUGIN.lint(tools)
