"""Approval through the client: a gateway call that needs approval asks the client's user
(MCP form elicitation) and runs only on an explicit yes; a question too long to show in
full, no answer within the deadline, or a client that cannot ask is a no."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types

from toolwire import Allow, ApprovalRequest, Deny
from toolwire.adapters import MAX_REVIEW_CHARS
from toolwire_mcp.client._elicit import APPROVAL_META, approval_question
from toolwire_mcp.client._elicit import APPROVE_SCHEMA as _APPROVE_SCHEMA

__all__ = [
    "APPROVE_KEY",
    "MAX_QUESTION_CHARS",
    "approval_of",
    "approval_request",
    "ask_approval",
    "can_elicit",
    "too_long_to_ask",
]

logger = logging.getLogger("toolwire.mcp.server")


def can_elicit(ctx: Any) -> bool:
    """Whether the client said it can ask its user (form elicitation)."""
    session = getattr(ctx, "session", None)
    caps = getattr(session, "client_capabilities", None)
    elicitation = getattr(caps, "elicitation", None)
    if elicitation is None:
        return False
    # An empty elicitation capability means form mode (the spec's backward compatibility).
    return elicitation.form is not None or elicitation.url is None


APPROVE_KEY = "toolwire_approval"


#: The longest review of a call's arguments sent: a call whose arguments do not fit is
#: denied rather than shown in part (a prefix could hide the argument that matters).
MAX_QUESTION_CHARS = MAX_REVIEW_CHARS


def _question(request: ApprovalRequest) -> str | None:
    return approval_question(request.effect.value, request.tool_name, request.arguments_json)


def too_long_to_ask(request: ApprovalRequest) -> Deny | None:
    if _question(request) is not None:
        return None
    return Deny(
        f"the arguments of `{request.tool_name}` are too long to show in full for approval "
        f"(at most {MAX_QUESTION_CHARS:,} characters), so the call was not run"
    )


def approval_request(request: ApprovalRequest) -> types.ElicitRequest:
    question = _question(request)
    if question is None:  # a caller's bug: too_long_to_ask decides before any question
        raise ValueError(f"the arguments of `{request.tool_name}` are too long to ask about")
    try:
        arguments: Any = json.loads(request.arguments_json)
    except ValueError:
        arguments = None
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=question,
            requested_schema=_APPROVE_SCHEMA,
            _meta={APPROVAL_META: {"tool": request.tool_name, "arguments": arguments}},
        )
    )


def approval_of(answer: Any, request: ApprovalRequest) -> Allow | Deny:
    """The user's answer: anything but an explicit yes is a no."""
    action = getattr(answer, "action", None)
    content = getattr(answer, "content", None)
    if action == "accept" and isinstance(content, dict) and content.get("approve") is True:
        return Allow()
    said = "declined" if action in ("accept", "decline") else "cancelled"
    return Deny(f"the user {said} `{request.tool_name}` when asked through the MCP client")


async def ask_approval(ctx: Any, request: ApprovalRequest, timeout: float) -> Allow | Deny:
    """Ask the client's user now, over the back-channel, within ``timeout`` seconds."""
    import anyio
    from mcp.shared.message import ServerMessageMetadata

    try:
        with anyio.fail_after(timeout):
            answer = await ctx.session.send_request(
                approval_request(request),
                types.ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=getattr(ctx, "request_id", None)),
            )
    except TimeoutError:
        return Deny(
            f"no answer to the approval request for `{request.tool_name}` within {timeout:g} s"
        )
    except Exception as exc:  # the client failed to ask: fail closed
        logger.warning("MCP elicitation for %s failed: %r", request.tool_name, exc)
        return Deny(f"the client could not ask for approval of `{request.tool_name}`")
    return approval_of(answer, request)
