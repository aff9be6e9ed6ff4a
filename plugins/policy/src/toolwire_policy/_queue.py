"""Approval through the queue (``[approvals]``): a call that needs approval spends an
approval a named approver gave to exactly this call, or is filed as a request and refused
for now, saying where it waits."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwire import HookContext, Principal, TypedCall
from toolwire.adapters import review_arguments
from toolwire.approvals import ApprovalError, ApprovalQueue, ApprovalRequest, default_queue_path
from toolwire_policy._approval import Verdict, approval_key
from toolwire_policy._config import ApprovalsConfig, PolicyFileError
from toolwire_policy._notify import Webhook

if TYPE_CHECKING:
    from toolwire_policy._policy import Policy

__all__ = ["local_approver", "open_queue", "open_webhook", "queued_approval"]


def open_queue(config: ApprovalsConfig, source: Path) -> ApprovalQueue:
    """The queue ``[approvals]`` names (relative to the policy file), else the default."""
    if config.queue is None:
        path = default_queue_path()
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
    key = approval_key(call)
    try:
        spent = queue.spend(key, context.principal)
        if spent is not None:
            return _approved(policy, call, context, spent)
        from toolwire_policy._policy import call_arguments

        shown = review_arguments(policy.redact_arguments(call.tool, call_arguments(call)))
        if shown is None:
            return Verdict(
                False,
                f"{reason}; its arguments are too long to show an approver in full, so it "
                "was not filed for approval",
            )
        request = queue.submit(
            key=key,
            tool=call.name,
            arguments=shown,
            reason=reason,
            principal=context.principal,
            approvers=config.approvers,
            lifetime=config.expires,
            policy=policy.version,
            self_approve=config.self_approve,
            schema=call.tool.input_schema,
            on_new=policy.webhook.send if policy.webhook is not None else None,
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
    policy: Policy, call: TypedCall[Any], context: HookContext, spent: ApprovalRequest
) -> Verdict:
    """The verdict of an approval spent: the call as it is, or with the arguments the
    approver approved instead, checked against the tool and decided again (the policy's
    constraints hold for them as for any)."""
    how = f"queue:{spent.id} by {spent.answered_by}"
    if spent.edited is None:
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
    from toolwire_policy._policy import revealed_arguments

    broken = policy.constraint_violation(edited, revealed_arguments(edited), context.principal)
    if broken is not None:
        return Verdict(False, f"the arguments {spent.answered_by} approved are refused: {broken}")
    return Verdict(True, approval=how + " (arguments edited)", input=edited_input)


def open_webhook(config: ApprovalsConfig, source: Path) -> Webhook | None:
    """The webhook ``[approvals]`` names, its secret read from the environment."""
    if config.webhook is None:
        return None
    secret = None
    if config.webhook_secret_env is not None:
        value = os.environ.get(config.webhook_secret_env)
        if not value:
            raise PolicyFileError(
                source,
                [
                    (
                        "approvals.webhook_secret_env",
                        f"the environment variable {config.webhook_secret_env} is not set",
                    )
                ],
            )
        secret = value.encode("utf-8")
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
