"""The Cedar policy plugin: a :class:`CedarPolicy` deciding every call through toolwire's
decision hook, asking for approval where a permitting policy says so, and recording each
decision (with the policy ids that made it) in a hash-chained audit log."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from toolwire import HookContext, Reject, RunNormally, Tool, ToolDecision, TypedCall
from toolwire.hookspecs import hookimpl
from toolwire_cedar._engine import CedarDecision, CedarPolicy, CedarPolicyError
from toolwire_policy import AuditLog, AuditLogTrail, Verdict, fingerprint
from toolwire_policy._approval import Deferred, ask_approval
from toolwire_policy._audit import utc_now

__all__ = ["AUDIT_ENV", "MODE_ENV", "POLICY_ENV", "READERS_ENV", "SCHEMA_ENV", "CedarPlugin"]

logger = logging.getLogger("toolwire.cedar")

#: The Cedar policy file (unset: the plugin decides nothing).
POLICY_ENV = "TOOLWIRE_CEDAR_POLICY"
#: The Cedar schema (JSON) the policies are validated against when they load.
SCHEMA_ENV = "TOOLWIRE_CEDAR_SCHEMA"
#: Where decisions are recorded (toolwire-policy's hash-chained audit log format).
AUDIT_ENV = "TOOLWIRE_CEDAR_AUDIT"
#: ``observe`` (shadow mode): decide and record every call, enforce nothing.
MODE_ENV = "TOOLWIRE_CEDAR_MODE"
#: Who may read the audit log in the approval console (``group:NAME``, ``user:NAME``, comma
#: separated); unset: everyone an ``@approvers`` annotation names.
READERS_ENV = "TOOLWIRE_CEDAR_AUDIT_READERS"


class CedarPlugin:
    """Hooks over one Cedar policy set (``policy`` None: inert)."""

    def __init__(
        self, policy: CedarPolicy | None, audit: AuditLog | None = None, *, observe: bool = False
    ) -> None:
        self.policy = policy
        self.audit = audit
        self.observe = observe
        self.toolwire_inert = policy is None
        #: The approval queue, opened when a policy first names approvers.
        self._queue: Any = None

    @classmethod
    def from_env(cls) -> CedarPlugin:
        """The plugin for the environment; raises CedarPolicyError for a policy or schema
        that cannot be used (the host then blocks every call)."""
        path = os.environ.get(POLICY_ENV)
        if not path:
            return cls(None)
        mode = os.environ.get(MODE_ENV, "enforce")
        if mode not in ("enforce", "observe"):
            raise CedarPolicyError(f"{MODE_ENV} is enforce or observe, got {mode!r}")
        schema = os.environ.get(SCHEMA_ENV)
        policy = CedarPolicy.from_files(Path(path), Path(schema) if schema else None)
        audit = None
        if os.environ.get(AUDIT_ENV):
            audit = AuditLog(Path(os.environ[AUDIT_ENV]))
            try:
                audit.check()
            except OSError as exc:
                raise CedarPolicyError(f"the Cedar audit log cannot be written: {exc}") from None
        return cls(policy, audit, observe=mode == "observe")

    def status(self) -> str:
        if self.policy is None:
            return f"inert: {POLICY_ENV} is not set"
        audit = f", audit log {self.audit.path}" if self.audit else ""
        if self.observe:
            return f"observing, not enforcing ({MODE_ENV}=observe): {self.policy.source}{audit}"
        return f"active: {self.policy.source}{audit}"

    def lint(self, tools: list[Tool[Any, Any]]) -> list[str]:
        """The policies' tools and toolsets that are not in ``tools`` (the catalogue)."""
        if self.policy is None:
            return []
        return [f"{self.policy.source}: {line}" for line in self.policy.lint(tools)]

    @hookimpl(tryfirst=True)
    def toolwire_tool_decision(
        self, call: TypedCall[Any], context: HookContext
    ) -> ToolDecision | Awaitable[ToolDecision | None] | None:
        if self.policy is None:
            return None
        try:
            decision = self.policy.decide(call, context)
        except Exception as exc:  # fail closed
            logger.exception("toolwire-cedar failed on call %s (%s)", call.id, call.name)
            return Reject(f"the Cedar policy failed on this call ({type(exc).__name__})")
        if not decision.allowed:
            return self._conclude(call, context, decision, Verdict(False, decision.reason))
        if decision.approval is None:
            return self._conclude(call, context, decision, Verdict(True))
        if self.observe:  # would ask: nobody is asked in shadow mode
            reason = f"requires approval: {decision.approval}"
            return self._conclude(call, context, decision, Verdict(False, reason))
        if decision.approvers:  # the people the policy names answer, through the queue
            return self._conclude(call, context, decision, self._queued(call, context, decision))
        verdict = ask_approval(call, context, f"requires approval: {decision.approval}")
        if isinstance(verdict, Deferred):
            pending = verdict

            async def later() -> ToolDecision | None:
                return self._conclude(call, context, decision, await pending)

            return Deferred(later)
        return self._conclude(call, context, decision, verdict)  # type: ignore[arg-type]

    def _queued(
        self, call: TypedCall[Any], context: HookContext, decision: CedarDecision
    ) -> Verdict:
        """The approval queue's verdict (the default queue, that every approver's tool
        reads): the approval given to this call spent, or the call filed and refused."""
        from toolwire.approvals import ApprovalError, ApprovalQueue
        from toolwire_policy._queue import file_or_spend

        assert self.policy is not None
        policy = self.policy
        if self._queue is None:
            try:
                self._queue = ApprovalQueue()
            except ApprovalError as exc:
                return Verdict(False, f"requires approval; the approval queue cannot open ({exc})")

        def again(edited: TypedCall[Any]) -> str | None:  # Cedar decides the edited call too
            redecided = policy.decide(edited, context)
            return None if redecided.allowed else redecided.reason

        return file_or_spend(
            self._queue,
            call,
            context,
            f"requires approval: {decision.approval}",
            approvers=decision.approvers,
            lifetime=decision.expires,
            shown=call.tool.dump_input(call.input),
            again=again,
            version=f"cedar:{policy.source}",
        )

    @hookimpl
    def toolwire_audit_trails(self, register: Callable[[Any], None]) -> None:
        """Offer the Cedar audit log to the approval console's readers (``READERS_ENV``,
        else the people the policies' ``@approvers`` name)."""
        if self.policy is None or self.audit is None:
            return
        given = os.environ.get(READERS_ENV)
        if given is not None:
            readers = [r.strip() for r in given.split(",") if r.strip()]
        else:
            readers = self.policy.approvers()
        register(AuditLogTrail(self.audit.path, readers, plugin="cedar"))

    def _conclude(
        self, call: TypedCall[Any], context: HookContext, decision: CedarDecision, verdict: Verdict
    ) -> ToolDecision | None:
        reason = verdict.reason
        if not verdict.allowed and decision.policies and "Cedar policy" not in reason:
            reason = f"{reason} ({decision.reason})"
        if self.audit is not None:
            record = {
                "time": utc_now(),
                "event": "decision",
                "call_id": call.id or None,
                "tool": call.name,
                "decision": "allow" if verdict.allowed else "reject",
                "plugin": "cedar",
                "fingerprint": fingerprint(call.tool.dump_input(call.input)),
                "reason": reason or None,
                "policies": list(decision.policies),
                **_shadow(self.observe, verdict),
                "approval": verdict.approval,
                "principal": context.principal.to_dict() if context.principal else None,
            }
            try:
                self.audit.write(record)
            except OSError as exc:
                logger.error("cannot write the Cedar audit log %s: %s", self.audit.path, exc)
                return Reject("the Cedar policy cannot write its audit log, so no tool may run")
        if verdict.allowed and verdict.input is not None and not self.observe:
            return RunNormally(verdict.input)  # an approver's edit, decided again
        if verdict.allowed or self.observe:
            return None  # in shadow mode recorded as "would reject" or "would ask", and run
        return Reject(reason)


def _shadow(observe: bool, verdict: Verdict) -> dict[str, str]:
    """A shadow-mode record's fields: allowed, and what the policy would have done."""
    if not observe:
        return {}
    would = "allow" if verdict.allowed else "reject"
    if not verdict.allowed and verdict.reason.startswith("requires approval"):
        would = "ask"
    return {"decision": "allow", "mode": "observe", "would": would}
