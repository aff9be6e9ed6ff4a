"""The policy-only view of a plugin host (``plugins=False``: tool packs drop out, the policies
keep deciding, hiding, redacting and auditing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolwire._calls import ToolResult, TypedCall
from toolwire._errors import UsageError
from toolwire._exports import publish
from toolwire._hooks import AuditEvent, HookContext, HookSet
from toolwire._plugins.wrappers import (
    _ResultHook,
)
from toolwire._tools import Tool
from toolwire._toolset import Toolset

if TYPE_CHECKING:
    from toolwire._audit_trail import AuditTrail
    from toolwire._plugins.host import PluginHost

_NO_PACKS = HookSet("plugins:toolsets")


class PolicyHost:
    """A :class:`PluginHost` seen without its tool packs and their hooks: the policies'
    decision, availability, description, result and audit hooks only.

    ``plugins=False`` (in ``resolve_turn``, ``Agent``, ``Executor``) means this view of
    the default host: dropping tool packs never drops a policy.
    """

    __slots__ = ("_policies", "_seen", "host")

    def __init__(self, host: PluginHost) -> None:
        self.host = host
        self._seen: tuple[_ResultHook, ...] | None = None
        self._policies: tuple[_ResultHook, ...] = ()

    def __repr__(self) -> str:
        return f"<PolicyHost of {self.host!r}>"

    @property
    def blocked(self) -> tuple[str, ...]:
        return self.host.blocked

    @property
    def blocked_notices(self) -> tuple[str, ...]:
        return self.host.blocked_notices

    def hook_sets(self) -> tuple[HookSet, HookSet]:
        """``(policies, an empty set)``."""
        return self.host.policy_set(), _NO_PACKS

    def policy_set(self) -> HookSet:
        return self.host.policy_set()

    def assemble(self, toolset: Toolset | None = None) -> Toolset:
        """``toolset`` as it is: no tool pack joins it."""
        if toolset is None:
            return Toolset("tools")
        if not isinstance(toolset, Toolset):
            raise UsageError(f"assemble() takes a Toolset, got {type(toolset).__name__}")
        return toolset

    def _result_pipeline(self) -> tuple[_ResultHook, ...]:
        # Asked for every result: the policies' part worked out again only when the host's
        # pipeline changed (a plugin registered or unregistered makes a new one).
        full = self.host._result_pipeline()
        if full is not self._seen:
            self._policies = tuple(h for h in full if h.policy)
            self._seen = full
        return self._policies

    def tool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """The policies' result hooks over ``result`` (see :meth:`PluginHost.tool_result`)."""
        return self.host._results(self._result_pipeline(), call, result, context)

    async def atool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`tool_result`, awaiting async implementations."""
        return await self.host._aresults(self._result_pipeline(), call, result, context)

    def audit(self, event: AuditEvent, context: HookContext | None = None) -> None:
        self.host.audit(event, context)

    def audit_trails(self) -> list[AuditTrail]:
        """The policies' audit trails (see :meth:`PluginHost.audit_trails`)."""
        return self.host.audit_trails()

    def redact_arguments(
        self, tool: Tool[Any, Any], arguments: Mapping[str, Any], context: HookContext | None = None
    ) -> dict[str, Any] | None:
        """The policies' redaction of ``arguments`` (see :meth:`PluginHost.redact_arguments`)."""
        return self.host.redact_arguments(tool, arguments, context, policies_only=True)

    def backend(self, name: str, **options: Any) -> Any:
        return self.host.backend(name, **options)


publish(globals())
