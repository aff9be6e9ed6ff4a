"""How the plugin host calls its plugins' hooks: resolved once into core hook sets (policies
first), the result pipeline, the audit hooks, and argument redaction for records kept
outside the policies' audit."""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolwire._calls import ToolResult, TypedCall
from toolwire._errors import UsageError
from toolwire._exports import publish
from toolwire._hooks import AuditEvent, HookContext, HookSet, _close
from toolwire._plugins.entrypoints import (
    _describe,
)
from toolwire._plugins.loading import _inert
from toolwire._plugins.registries import _Registries
from toolwire._plugins.wrappers import (
    _availability_hook,
    _blocker,
    _decision_hook,
    _description_hook,
    _ResultHook,
    _withheld,
)
from toolwire._tools import Tool

if TYPE_CHECKING:
    from toolwire._audit_trail import AuditTrail

logger = logging.getLogger("toolwire.plugins")


class _Calling(_Registries):
    """The hooks, as the host calls them (a part of PluginHost)."""

    # -- hooks -----------------------------------------------------------------------

    def hook_sets(self) -> tuple[HookSet, HookSet]:
        """``(policies, plugins)``: pass both first to ``resolve_turn(hooks=...)``.

        The policy set holds every policy plugin's decision, description and
        availability hooks (and, for a policy that failed to load, a hook that
        rejects every call); the other set holds the tool packs' and other
        plugins'. Both are empty (and cost nothing) when no plugin implements
        a hook. Tool packs are imported here (the first time).
        """
        sets = self._sets
        if sets is not None:
            return sets
        with self._lock:
            self._ensure_toolsets()
            if self._sets is None:
                self._sets = self._build_sets()
            return self._sets

    def policy_set(self) -> HookSet:
        """The policies' hook set alone (``hook_sets()[0]``, the same object), without
        importing the tool packs: what a turn needs to hide denied tools and decide calls."""
        found = self._policy_set
        if found is not None:
            return found
        with self._lock:
            self.discover()
            if self._policy_set is None:
                self._policy_set = self._build_set(policies=True)
            return self._policy_set

    def _build_sets(self) -> tuple[HookSet, HookSet]:
        if self._policy_set is None:
            self._policy_set = self._build_set(policies=True)
        return self._policy_set, self._build_set(policies=False)

    def _build_set(self, *, policies: bool) -> HookSet:
        """The policies' set (a guard set: if a later hook, a tool pack's or the
        application's, edits an input after the policies approved it, the policies see
        the edited input too), or the other plugins' set."""
        target = (
            HookSet("plugins:policies", guard=True) if policies else HookSet("plugins:toolsets")
        )
        if policies:
            for name, notice in self._notices.items():
                target.on(None, _blocker(notice), name=f"plugin:{name}")

        def mine(impl: Any) -> bool:
            return (self._kind.get(impl.plugin_name) == "policy") == policies

        budget = self.hook_timeout
        for impl in self._live_impls("toolwire_tool_decision"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                target._on_timed(_decision_hook(impl.function, impl.argnames), label, budget)
        for impl in self._live_impls("toolwire_tool_description"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                target.describe(
                    None, _description_hook(impl.function, impl.argnames, label), name=label
                )
        for impl in self._live_impls("toolwire_tool_availability"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                owns = None if policies else functools.partial(self._owns, impl.plugin_name)
                hook = _availability_hook(impl.function, impl.argnames, owns)
                target.hide(None, hook, name=label)
        return target

    def _owns(self, plugin_name: str, tool: Tool[Any, Any]) -> bool:
        """True when ``tool`` is one of the tools the plugin registered."""
        group = self._toolsets.get(plugin_name)
        if group is None:
            return False
        origin = tool.origin
        return any(t.origin is origin for t in group.tools())

    def _result_pipeline(self) -> tuple[_ResultHook, ...]:
        hooks = self._result_hooks
        if hooks is not None:
            return hooks
        with self._lock:
            self._ensure_toolsets()
            impls = self._live_impls("toolwire_tool_result")
            packs = [i for i in impls if self._kind.get(i.plugin_name) != "policy"]
            policies = [i for i in impls if self._kind.get(i.plugin_name) == "policy"]
            self._result_hooks = tuple(
                _ResultHook(i.function, i.argnames, i.plugin_name, policy)
                for policy, group in ((False, packs), (True, policies))
                for i in group
            )
            return self._result_hooks

    def tool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """Run ``toolwire_tool_result`` over a result (sync implementations only).

        Tool packs first, then policies. An async implementation is skipped
        with a warning (a policy's withholds the result): use :meth:`atool_result`.
        """
        return self._results(self._result_pipeline(), call, result, context)

    def _results(
        self,
        hooks: tuple[_ResultHook, ...],
        call: TypedCall[Any],
        result: ToolResult,
        context: HookContext | None,
    ) -> ToolResult:
        if self._notices:
            return self._withhold(call, context)
        ctx = context or HookContext()
        for h in hooks:
            result = h.run(call, result, ctx, self.hook_timeout)
        return result

    async def _aresults(
        self,
        hooks: tuple[_ResultHook, ...],
        call: TypedCall[Any],
        result: ToolResult,
        context: HookContext | None,
    ) -> ToolResult:
        if self._notices:
            return self._withhold(call, context)
        ctx = context or HookContext()
        for h in hooks:
            result = await h.arun(call, result, ctx, self.hook_timeout)
        return result

    def _withhold(self, call: TypedCall[Any], context: HookContext | None) -> ToolResult:
        """The result of a call made while a policy failed to load: withheld, and audited."""
        notice = next(iter(self._notices.values()))
        event = AuditEvent("withheld", notice, call.name, call.id, call.arguments)
        self.audit(event, context)
        return _withheld(call, notice)

    async def atool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`tool_result`, awaiting async implementations (each within the budget)."""
        return await self._aresults(self._result_pipeline(), call, result, context)

    def sync_policy_hooks(self) -> tuple[str, ...]:
        """``plugin:hook`` for every sync decision or result hook of a policy in force.

        A sync hook is held to its budget only when it returns, and it stalls the
        event loop while it runs: a server (``toolwire mcp serve``) warns about them. A
        plugin that sets ``toolwire_nonblocking = True`` says its sync hooks only compute
        (what could wait, a store across the network or a person, it hands back as an
        awaitable): no warning is given for it that its user could not act on."""
        with self._lock:
            self.discover()
            found = []
            for hook in ("toolwire_tool_decision", "toolwire_tool_result"):
                for impl in self._live_impls(hook):
                    if self._kind.get(impl.plugin_name) != "policy":
                        continue
                    if getattr(impl.plugin, "toolwire_nonblocking", False) is True:
                        continue
                    if not inspect.iscoroutinefunction(impl.function):
                        found.append(f"{impl.plugin_name}:{hook}")
            return tuple(found)

    # -- audit ---------------------------------------------------------------------

    def audit(self, event: AuditEvent, context: HookContext | None = None) -> None:
        """Send ``event`` to every ``toolwire_audit`` implementation (switched-off
        policies included); one that fails or is async is logged, never raised."""
        if not isinstance(event, AuditEvent):
            raise UsageError(f"audit() takes an AuditEvent, got {type(event).__name__}")
        ctx = context or HookContext()
        with self._lock:
            impls = [i for i in self._impls("toolwire_audit") if not _inert(i.plugin)]
        for impl in impls:
            args = {"event": event, "context": ctx}
            try:
                out = impl.function(**{a: args[a] for a in impl.argnames})
            except Exception as exc:
                logger.error(
                    "audit hook of plugin `%s` failed on event `%s`: %s",
                    impl.plugin_name,
                    event.kind,
                    _describe(exc),
                )
                continue
            if inspect.isawaitable(out):
                _close(out)
                logger.error("audit hook of plugin `%s` must be sync", impl.plugin_name)
            elif out is not None:
                logger.warning(
                    "audit hook of plugin `%s` returned %s; it returns None",
                    impl.plugin_name,
                    type(out).__name__,
                )

    def audit_trails(self) -> list[AuditTrail]:
        """The audit trails the loaded policies offer to be read (``toolwire_audit_trails``):
        what the approval console shows. Only policy plugins are asked (a tool pack cannot
        pass a log of its own off as the organisation's). One that fails, is async, or
        registers something that is not an :class:`toolwire.approvals.AuditTrail` is
        logged and left out; the others are returned."""
        from toolwire._audit_trail import AuditTrail

        with self._lock:
            self.discover()
            impls = [
                i
                for i in self._impls("toolwire_audit_trails")
                if self._kind.get(i.plugin_name) == "policy" and not _inert(i.plugin)
            ]
        found: list[AuditTrail] = []
        for impl in impls:
            mine: list[AuditTrail] = []

            def register(trail: AuditTrail, _mine: list[AuditTrail] = mine) -> None:
                if not isinstance(trail, AuditTrail):
                    raise UsageError(
                        f"register() takes a toolwire.approvals.AuditTrail, "
                        f"got {type(trail).__name__}"
                    )
                _mine.append(trail)

            try:
                out = impl.function(**dict.fromkeys(impl.argnames, register))
                if inspect.isawaitable(out):
                    _close(out)
                    raise UsageError("toolwire_audit_trails must be sync")
            except Exception as exc:
                logger.error(
                    "plugin `%s` failed to offer its audit trails: %s",
                    impl.plugin_name,
                    _describe(exc),
                )
                continue
            found.extend(mine)
        return found

    # -- records kept outside the policies' audit ------------------------------------

    def redact_arguments(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any],
        context: HookContext | None = None,
        *,
        policies_only: bool = False,
    ) -> dict[str, Any] | None:
        """``arguments`` as a record outside the policies' audit may keep them: through
        every ``toolwire_redact_arguments`` (tool packs, then policies). None when a hook
        failed (raised, async, over its budget, not a dict): keep no arguments at all."""
        with self._lock:
            self._ensure_toolsets()
            impls = self._live_impls("toolwire_redact_arguments")
        if self._notices:
            return None  # a policy that failed to load cannot say what it would redact
        kinds = [False, True]
        ordered = [
            i
            for policy in kinds
            for i in impls
            if (self._kind.get(i.plugin_name) == "policy") == policy
            and (policy or not policies_only)
        ]
        ctx = context or HookContext()
        current: dict[str, Any] = dict(arguments)
        for impl in ordered:
            args = {"tool": tool, "arguments": dict(current), "context": ctx}
            started = time.monotonic()
            try:
                out = impl.function(**{a: args[a] for a in impl.argnames})
            except Exception as exc:
                logger.error(
                    "redact hook of plugin `%s` failed: %s", impl.plugin_name, _describe(exc)
                )
                return None
            if inspect.isawaitable(out):
                _close(out)
                logger.error("redact hook of plugin `%s` must be sync", impl.plugin_name)
                return None
            if time.monotonic() - started > self.hook_timeout:
                logger.error(
                    "redact hook of plugin `%s` took over %g s", impl.plugin_name, self.hook_timeout
                )
                return None
            if out is None:
                continue
            if not isinstance(out, dict):
                logger.error(
                    "redact hook of plugin `%s` returned %s; it returns a dict or None",
                    impl.plugin_name,
                    type(out).__name__,
                )
                return None
            current = out
        return current


publish(globals())
