"""Small builders shared by the core tests."""

from __future__ import annotations

from collections.abc import Sequence

import toolwire as tw


def reply(*calls: tuple[str, str, str], text: str = "") -> tw.adapters.AssistantReply:
    """An assistant reply with (id, name, arguments) calls."""
    return tw.adapters.AssistantReply(
        text, tuple(tw.ToolCall(*c) for c in calls), "tool_calls" if calls else "stop"
    )


def needs_tools(
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
    *calls: tuple[str, str, str],
) -> tw.ToolRound:
    out = tw.adapters.decode_reply(session, turn, reply(*calls))
    assert isinstance(out, tw.NeedsTools)
    return out.round


def ids(results: Sequence[tw.ToolResult]) -> list[str]:
    return [r.call_id for r in results]
