"""Waiting for the people a policy names (the approval queue): a call a policy refused
because it waits in the queue is held until an approver answers, the request expires, or
the executor's ``approval_wait`` passes; an answered call is decided again, so an approval
runs it once and a denial's reason is what it answers."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from toolwire._approvals import PENDING, ApprovalError, ApprovalRequest, filed_request
from toolwire._calls import HandledCall, RejectedCall, ToolResult
from toolwire._decisions import arun_hooks
from toolwire._exports import publish
from toolwire._round import ToolRoundPlan, audit_refused

__all__ = ["ApprovalWaiting", "wait_for_approvers", "wait_in_plan"]

#: ``fn(request, seconds waited)``: called when a wait begins and every ``REPORT_EVERY``
#: seconds after (a gateway's progress notification, a terminal's line); may be async.
ApprovalWaiting = Callable[[ApprovalRequest, float], Any]

logger = logging.getLogger("toolwire.approvals")

#: Seconds between two reports of a wait.
REPORT_EVERY = 5.0


async def wait_for_approvers(
    jobs: Sequence[Any],
    wait: float,
    report: ApprovalWaiting | None,
    again: Callable[[Any], Awaitable[ToolResult]],
) -> None:
    """For each job refused while its request waits in a queue this process filed it in:
    wait (at most ``wait`` seconds, and no longer than the request lives), then, once it
    is answered, ``again(job)`` decides (and runs) the call anew; its result replaces the
    refusal. A request still waiting keeps the refusal (it names the request: the call
    can be made again later)."""
    waiting = [j for j in jobs if j.result is not None and j.error_type == "policy_rejected"]
    if not waiting:
        return
    # Each waits at once (an answer to the second is not held up by the first), then
    # each answered call is decided again, in order.
    answered = await asyncio.gather(
        *(_answered(j.result, j.raw.name, wait, report) for j in waiting)
    )
    for job, was in zip(waiting, answered, strict=True):
        if was:
            job.result = await again(job)


async def wait_in_plan(
    plan: ToolRoundPlan, wait: float, report: ApprovalWaiting | None
) -> ToolRoundPlan:
    """A round's plan, its calls refused while their requests wait in a queue decided
    again (by the hooks that refused them: the policies first) once answered: an approved
    call becomes pending (the approval spent), a denied one is refused with the answer."""
    round_ = plan.round
    guard = round_._guard
    if guard is None or not plan.rejected:
        return plan
    pending, handled = list(plan.pending), list(plan.handled)
    rejected: list[RejectedCall] = []
    changed = False
    typed_of = {c.id: c for c in round_.calls}

    async def answered(refused: RejectedCall) -> bool:
        typed = typed_of.get(refused.call.id)
        return typed is not None and await _answered(refused.result, typed.name, wait, report)

    # Each waits at once; then each answered call is decided again, in the round's order.
    answers = await asyncio.gather(*(answered(r) for r in plan.rejected))
    for refused, was in zip(plan.rejected, answers, strict=True):
        typed = typed_of.get(refused.call.id)
        if typed is None or not was:
            rejected.append(refused)
            continue
        changed = True
        decided = await arun_hooks(typed, guard.sets, plan.context)
        guard.record((decided,))
        if isinstance(decided, RejectedCall):
            audit_refused(round_.turn.plugins, (decided,), plan.context)
            rejected.append(decided)
        elif isinstance(decided, HandledCall):
            handled.append(decided)
        else:
            pending.append(decided)
    if not changed:
        return plan
    return ToolRoundPlan(round_, tuple(pending), tuple(handled), tuple(rejected), plan.context)


async def _answered(
    result: ToolResult, tool: str, wait: float, report: ApprovalWaiting | None
) -> bool:
    """Whether the request a refusal names (filed in this process, for this tool) was
    answered (approved or denied) within ``wait``."""
    found = filed_request(result.content, tool)
    if found is None:
        return False
    queue, held = found
    try:
        answered = await _watch(queue, held.id, wait, report)
    except ApprovalError as exc:  # the queue cannot be read: the refusal stands
        logger.error("waiting on approval request %s: %s", held.id, exc)
        return False
    return answered is not None and answered.state() in ("approved", "denied")


async def _watch(
    queue: Any, request_id: str, wait: float, report: ApprovalWaiting | None
) -> ApprovalRequest | None:
    started = time.monotonic()
    request: ApprovalRequest | None = queue.get(request_id)
    first = True
    while request is not None and request.state() == PENDING:
        waited = 0.0 if first else time.monotonic() - started  # 0: the wait begins
        first = False
        left = min(wait - waited, request.expires - time.time())
        if left <= 0:
            break
        if report is not None:
            said = report(request, waited)
            if inspect.isawaitable(said):
                await said
        request = await queue.await_answer(request_id, min(REPORT_EVERY, left))
    return request


publish(globals())
