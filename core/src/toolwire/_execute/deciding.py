"""How an executor decides a call before it runs: the lookup and checks (an unknown tool,
a sandbox violation, availability, the schema, custom validators), approval (an
approver's Allow, Deny, Modify or Defer, or an approval given back on resume, spent once
and bound to the input's fingerprint), the policies on input they have not seen, and a
bare round's hooks.

The :class:`_Deciding` methods are the Executor's (it inherits them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolwire._calls import HandledCall, RejectedCall, ToolCall, TypedCall
from toolwire._decisions import _async_pass, _guards_only, _hooks_cached, _reason_text, chain_cache
from toolwire._execute.approval import (
    Allow,
    Approval,
    ApprovalRequest,
    Defer,
    Deny,
    Modify,
    _take_vouched,
    call_fingerprint,
)
from toolwire._execute.jobs import _errors_text, _Job, _maybe_await, _PreparedTool
from toolwire._hooks import _EMPTY_CONTEXT, HookContext, HookSet
from toolwire._round import ToolRound, ToolRoundPlan
from toolwire._tools import Tool
from toolwire._toolset import Toolset

logger = logging.getLogger("toolwire.execute")


class _Deciding:
    """The executor's checks, approval and policy-check methods (a mixin of Executor)."""

    if TYPE_CHECKING:
        _host: Any
        _approver: Any
        _tools: dict[str, Tool[Any, Any]]
        _toolset: Toolset | None

        def _prepare(self, tool: Tool[Any, Any]) -> _PreparedTool: ...

    # -- lookup and checks ------------------------------------------------------------------

    def _lookup(self, name: str) -> Tool[Any, Any] | None:
        tool = self._tools.get(name)
        if tool is None and self._toolset is not None:
            tool = self._toolset.get(name)
        return tool

    def _check(self, job: _Job, call: TypedCall[Any] | ToolCall) -> bool:
        """Lookup, capability, availability and schema validation.

        A refusal sets ``job.result``. Returns True when custom validators
        are left to run (they may be async).
        """
        if isinstance(call, TypedCall):
            tool = call.tool
            typed: TypedCall[Any] | None = call
        else:
            found = self._lookup(call.name)
            if found is None:
                job.refuse(f"unknown tool `{call.name}`", "unknown_tool")
                return False
            tool, typed = found, None
        plan = job.plan = self._prepare(tool)
        if plan.violation is not None:
            job.refuse(plan.violation, "sandbox_violation")
            return False
        if plan.available and not self._is_tool_available(plan, tool):
            job.refuse(f"tool `{tool.name}` is currently unavailable", "unavailable")
            return False
        if typed is None:
            try:
                value = tool.validate_json(job.raw.arguments)
            except ValidationError as exc:
                job.refuse(
                    f"tool `{tool.name}` arguments did not match the expected schema:\n"
                    + _errors_text(exc),
                    "invalid_arguments",
                )
                return False
            typed = TypedCall(job.raw, tool, value)
        job.call = typed
        return bool(plan.validate)

    def _is_tool_available(self, plan: _PreparedTool, tool: Tool[Any, Any]) -> bool:
        for check in plan.available:
            try:
                if not check(tool):
                    return False
            except Exception as exc:
                logger.warning("availability check for tool %s failed: %r", tool.name, exc)
                return False
        return True

    async def _run_validators(self, job: _Job, plan: _PreparedTool, call: TypedCall[Any]) -> None:
        for check in plan.validate:
            try:
                verdict = await _maybe_await(check(call))
            except (ValueError, TypeError) as exc:
                verdict = str(exc) or type(exc).__name__
            except Exception as exc:
                verdict = f"validator failed: {type(exc).__name__}: {exc}"
            if verdict is None or verdict is True:
                continue
            reason = verdict if isinstance(verdict, str) else "validation failed"
            job.refuse(f"tool `{call.name}` arguments were refused: {reason}", "validation_failed")
            return

    async def _approve(
        self, jobs: Sequence[_Job], approvals: Mapping[str, Approval]
    ) -> list[ApprovalRequest]:
        pending: list[ApprovalRequest] = []
        for job in jobs:
            call, plan = job.call, job.plan
            if job.result is not None or call is None or plan is None:
                continue
            given = approvals.get(call.id)
            if given is not None:
                current = call_fingerprint(call)
                if current != given.fingerprint:
                    job.refuse(
                        f"the arguments of tool `{call.name}` changed after they were approved; "
                        f"the call was not run",
                        "approval_mismatch",
                    )
                    continue
                if not given._spend():
                    job.refuse(
                        f"the approval of call `{call.id}` (tool `{call.name}`) was used "
                        f"already; an approval is spent once, so the call was not run",
                        "approval_reused",
                    )
                    continue
                decision: Any = given.decision
                request = ApprovalRequest(call, current, job.context)
            elif not plan.gated:
                continue
            else:
                current = call_fingerprint(call)
                principal = job.context.principal if job.context is not None else None
                if _take_vouched(current, principal):  # the policy's approvers approved it
                    job.approved = current
                    continue
                request = ApprovalRequest(call, current, job.context)
                assert self._approver is not None
                try:
                    decision = await _maybe_await(self._approver(request))
                except Exception as exc:
                    decision = Deny(f"approver failed: {type(exc).__name__}: {exc}")
            await self._apply_decision(job, request, decision, pending)
        return pending

    async def _decided(self, plan: ToolRoundPlan | ToolRound) -> ToolRoundPlan | ToolRound:
        """A bare round whose hooks or installed policies must decide its calls, as the
        plan they make (this executor's own policies too, when they are other ones)."""
        if not isinstance(plan, ToolRound) or plan._guard is None:
            return plan
        policies = self._host.hook_sets()[0] if self._host is not None else None
        extra = (policies,) if policies and all(policies is not s for s in plan._guard.sets) else ()
        return await plan.aapply_hooks(*extra)

    async def _policies_on(
        self,
        call: TypedCall[Any],
        context: HookContext | None,
        guards: Sequence[HookSet] = (),
    ) -> str | TypedCall[Any]:
        """The guard hooks on input they have not seen as it is (an approver rewrote it; a
        restored round's data says they let it through): the host's policies, and the
        guard hooks among ``guards``. Why not when they refuse it, else the call to run:
        ``call``, or the input a policy rewrote it to (a constraint that edits rather than
        refuses), never dropped."""
        policies = self._host.hook_sets()[0] if self._host is not None else None
        sets: list[HookSet] = [policies] if policies else []
        sets.extend(s for s in guards if all(s is not p for p in sets))
        if not sets:
            return call
        # The shared chain cache: renewed when a set changes, as the rounds' is.
        hooks, _, _ = _guards_only(_hooks_cached(sets, call.tool, chain_cache(sets)))
        if not hooks:
            return call
        outcome, _ = await _async_pass(call, (hooks, -1, None), context or _EMPTY_CONTEXT)
        if isinstance(outcome, RejectedCall):
            return outcome.reason
        if isinstance(outcome, HandledCall):
            return "a policy answered the call instead of letting it run"
        return outcome

    async def _apply_decision(
        self, job: _Job, request: ApprovalRequest, decision: Any, pending: list[ApprovalRequest]
    ) -> None:
        call = request.call
        if isinstance(decision, Allow):
            job.approved = request.fingerprint
        elif isinstance(decision, Deny):
            reason = _reason_text(decision.reason, "approver")
            job.refuse(f"approval denied for tool `{call.name}`: {reason}", "denied")
        elif isinstance(decision, Defer):
            pending.append(request)
        elif isinstance(decision, Modify):
            args = decision.arguments
            try:
                if isinstance(args, (str, bytes)):
                    value = call.tool.validate_json(args)
                else:
                    value = call.tool.validate_python(args)
            except ValidationError as exc:
                job.refuse(
                    f"the approver's arguments for tool `{call.name}` did not match the "
                    f"expected schema:\n" + _errors_text(exc),
                    "invalid_arguments",
                )
                return
            modified = call.with_input(value)
            refusal = await self._policies_on(modified, job.context)
            if isinstance(refusal, TypedCall) and refusal.input != modified.input:
                # What runs must be what the approver approved: a policy that rewrites it
                # again refuses it.
                refusal = "a policy rewrote the arguments the approver approved"
            if isinstance(refusal, str):
                job.refuse(
                    f"the approver's arguments for tool `{call.name}` were rejected: {refusal}",
                    "policy_rejected",
                )
                return
            job.call = modified
            assert job.plan is not None
            if job.plan.validate:
                await self._run_validators(job, job.plan, modified)
                if job.result is not None:
                    return
            job.approved = call_fingerprint(modified)
        else:
            job.refuse(
                f"the approver returned {type(decision).__name__} for tool `{call.name}`; "
                f"expected Allow, Deny, Modify or Defer",
                "denied",
            )
