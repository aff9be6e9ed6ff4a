"""What an executor takes from a plan and its approvals: the calls and their context, the
guards they still pass, the approvals by call id, and the audit record of a call it
refused before any hook saw it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolwire._calls import TypedCall, rejection_reason
from toolwire._errors import UsageError
from toolwire._execute.approval import Approval
from toolwire._execute.jobs import _Job
from toolwire._execute.paused import _guards_of
from toolwire._hooks import AuditEvent, HookContext, HookSet
from toolwire._round import ToolRound, ToolRoundPlan

_AUDITED = {"unknown_tool": "unknown_tool", "invalid_arguments": "invalid_arguments"}


def _audit_refusal(host: Any, job: _Job, context: HookContext | None) -> None:
    """A call the executor refused before any decision hook saw it, for the audit hooks."""
    audit = getattr(host, "audit", None)
    if audit is None:
        return
    raw = job.raw
    assert job.error_type is not None
    assert job.result is not None
    audit(
        AuditEvent(
            _AUDITED[job.error_type],
            rejection_reason(job.result) or job.result.content,
            tool=raw.name,
            call_id=raw.id,
            arguments=raw.arguments,
        ),
        context,
    )


def _approval_map(
    approvals: Iterable[Approval] | Mapping[str, Approval], jobs: Sequence[_Job]
) -> dict[str, Approval]:
    if isinstance(approvals, Mapping):
        given = dict(approvals)
    else:
        given = {}
        for a in approvals:
            if not isinstance(a, Approval):
                raise UsageError(
                    f"approvals must be Approval records (from ApprovalRequest.allow(), "
                    f".deny() or .modify()), got {type(a).__name__}"
                )
            given[a.call_id] = a
    if given:
        known = {j.raw.id for j in jobs}
        unknown = sorted(set(given) - known)
        if unknown:
            raise UsageError(
                f"approvals for call id(s) {', '.join(map(repr, unknown))} that are not in "
                f"these calls ({', '.join(map(repr, sorted(known)))})"
            )
    return given


def _guards_for(plan: ToolRoundPlan | ToolRound) -> tuple[HookSet, ...] | None:
    """The guards a plan's calls pass before they run: a restored plan's recorded hook
    sets; none more for a plan whose hooks ran; the host's policies for a bare round,
    whose calls no hook has seen."""
    if isinstance(plan, ToolRound):
        return ()
    return _guards_of(plan)


def _plan_calls(
    plan: ToolRoundPlan | ToolRound,
) -> tuple[tuple[TypedCall[Any], ...], HookContext | None]:
    if isinstance(plan, ToolRoundPlan):
        return plan.pending, plan.context
    if isinstance(plan, ToolRound):
        return plan.calls, plan.turn.context
    raise UsageError(f"expected a ToolRoundPlan or a ToolRound, got {type(plan).__name__}")
