"""Approval through the queue (``[approvals]``): a call that needs approval spends an
approval a named approver gave to exactly this call, or is filed as a request and refused
for now, saying where it waits."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwire import HookContext, Principal, TypedCall
from toolwire.adapters import review_arguments
from toolwire.approvals import ApprovalError, ApprovalQueue, ApprovalRequest, default_queue_path
from toolwire_policy._approval import Verdict, approval_key
from toolwire_policy._config import ApprovalsConfig, PolicyFileError, env_secret
from toolwire_policy._notify import Webhook

if TYPE_CHECKING:
    from toolwire_policy._policy import Policy

__all__ = ["file_or_spend", "local_approver", "open_queue", "open_webhook", "queued_approval"]


def open_queue(config: ApprovalsConfig, source: Path) -> ApprovalQueue:
    """The queue ``[approvals]`` names (a ``postgresql://`` database, or a file relative to
    the policy file), else the default."""
    path: Path | str
    if config.queue is None:
        path = default_queue_path()
    elif config.queue.startswith(("postgresql://", "postgres://")):
        path = config.queue
    else:
        path = Path(config.queue).expanduser()
        if not path.is_absolute():
            base = source.parent if source.name != "<string>" else Path.cwd()
            path = base / path
    try:
        return ApprovalQueue(path)
    except ApprovalError as exc:
        raise PolicyFileError(source, [("approvals.queue", str(exc))]) from None


def queued_approval(
    policy: Policy, queue: ApprovalQueue, call: TypedCall[Any], context: HookContext, reason: str
) -> Verdict:
    """The verdict on a call that needs approval, by the queue alone (the caller's own
    approver and approval keys count for nothing: the policy names who answers)."""
    config = policy.config.approvals
    assert config is not None
    from toolwire_policy._policy import call_arguments, revealed_arguments

    def again(edited: TypedCall[Any]) -> str | None:  # the policy's constraints hold
        return policy.constraint_violation(edited, revealed_arguments(edited), context.principal)

    return file_or_spend(
        queue,
        call,
        context,
        reason,
        approvers=config.approvers,
        lifetime=config.expires,
        self_approve=config.self_approve,
        version=policy.version,
        shown=policy.redact_arguments(call.tool, call_arguments(call)),
        again=again,
        on_new=policy.webhook.send if policy.webhook is not None else None,
    )


def file_or_spend(
    queue: ApprovalQueue,
    call: TypedCall[Any],
    context: HookContext,
    reason: str,
    *,
    approvers: Sequence[str],
    lifetime: float,
    shown: Any,
    again: Callable[[TypedCall[Any]], str | None],
    self_approve: bool = False,
    version: str = "",
    on_new: Callable[[ApprovalRequest], Any] | None = None,
) -> Verdict:
    """The verdict on a call a policy engine sends to the approvers it names: the
    approval given to exactly this call spent (the call as it is, or with the arguments
    the approver approved instead, which ``again(edited)`` decides: a reason refuses), or
    the call filed as a request (its arguments ``shown`` as the engine redacts them) and
    refused for now, naming where it waits. Shared by toolwire-policy and toolwire-cedar."""
    key = approval_key(call)
    try:
        spent = queue.spend(key, context.principal)
        if spent is not None:
            return _approved(queue, call, spent, again)
        text = review_arguments(shown)
        if text is None:
            return Verdict(
                False,
                f"{reason}; its arguments are too long to show an approver in full, so it "
                "was not filed for approval",
            )
        request = queue.submit(
            key=key,
            tool=call.name,
            arguments=text,
            reason=reason,
            principal=context.principal,
            approvers=approvers,
            lifetime=lifetime,
            policy=version,
            self_approve=self_approve,
            schema=call.tool.input_schema,
            on_new=on_new,
        )
    except ApprovalError as exc:
        return Verdict(False, f"{reason}; the approval queue cannot take it now ({exc})")
    if request.state() == "denied":
        why = f": {request.answer}" if request.answer else ""
        return Verdict(False, f"{reason}; {request.answered_by} denied it{why}")
    until = datetime.fromtimestamp(request.expires, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Verdict(
        False,
        f"{reason}: it waits for {', '.join(request.approvers)} as approval request "
        f"{request.id} (until {until}); once approved, the same call runs, once",
    )


def _approved(
    queue: ApprovalQueue,
    call: TypedCall[Any],
    spent: ApprovalRequest,
    again: Callable[[TypedCall[Any]], str | None],
) -> Verdict:
    """The verdict of an approval spent: the call as it is, or with the arguments the
    approver approved instead, checked against the tool and decided again. Either way the
    executor's own approval gate hears that the call is approved (the queue vouches)."""
    how = f"queue:{spent.id} by {spent.answered_by}"
    if spent.edited is None:
        queue.vouch(spent, call)
        return Verdict(True, approval=how)
    from toolwire_policy._policy import REDACTED

    if REDACTED in spent.edited:  # a value the approver never saw cannot be approved
        return Verdict(
            False,
            f"the arguments {spent.answered_by} approved keep a redacted value ({REDACTED}); "
            "an edit must give every value it approves",
        )
    try:
        edited_input = call.tool.validate_json(spent.edited)
    except Exception as exc:
        return Verdict(
            False, f"the arguments {spent.answered_by} approved do not fit `{call.name}`: {exc}"
        )
    edited = call.with_input(edited_input)
    broken = again(edited)
    if broken is not None:
        return Verdict(False, f"the arguments {spent.answered_by} approved are refused: {broken}")
    queue.vouch(spent, edited)
    return Verdict(True, approval=how + " (arguments edited)", input=edited_input)


def open_webhook(config: ApprovalsConfig, source: Path) -> Webhook | None:
    """The webhook ``[approvals]`` names, its secret read from the environment."""
    if config.webhook is None:
        return None
    secret = None
    if config.webhook_secret_env is not None:
        where = "approvals.webhook_secret_env"
        secret = env_secret(config.webhook_secret_env, source, where).encode("utf-8")
    return Webhook(config.webhook, secret=secret, link=config.console_url)


def local_approver() -> Principal:
    """Who answers from this machine's command line: its user, with their operating-system
    groups (``method`` ``local``)."""
    import getpass

    groups: set[str] = set()
    try:
        import grp

        groups = {grp.getgrgid(g).gr_name for g in os.getgroups()}
    except (ImportError, KeyError, OSError):  # pragma: no cover - no groups to read
        pass
    return Principal(getpass.getuser(), groups=frozenset(groups), method="local")
