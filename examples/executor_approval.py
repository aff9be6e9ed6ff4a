"""Approval by effect with the executor: read-only tools run, mutating ones wait for a human.

The approver defers; the round is neither run nor committed until the
decisions come back. Each decision is bound to the fingerprint of the exact
arguments that were reviewed.
"""

from toolwire import (
    Defer,
    Executor,
    Session,
    ToolCall,
    ToolEffect,
    Toolset,
    resolve_turn,
    tool_fn,
)
from toolwire.adapters import AssistantReply, decode_reply, rejection_reason

NOTES = {"todo": "buy milk"}


@tool_fn
def read_note(name: str) -> str:
    """Read a note.

    Args:
        name: The note's name.
    """
    return NOTES.get(name, "(no such note)")


@tool_fn(effect=ToolEffect.MUTATING)
def write_note(name: str, text: str) -> str:
    """Replace a note's text.

    Args:
        name: The note's name.
        text: The new text.
    """
    NOTES[name] = text
    return f"saved {name}"


@tool_fn(effect=ToolEffect.DESTRUCTIVE)
def delete_note(name: str) -> str:
    """Delete a note.

    Args:
        name: The note's name.
    """
    NOTES.pop(name, None)
    return f"deleted {name}"


def main() -> None:
    tools = Toolset("notes", [read_note, write_note, delete_note])
    executor = Executor(
        tools=tools,
        approval=lambda request: Defer("ask the user"),
        approval_gate="mutating_and_above",
    )

    session = Session().add_user("Tidy my notes.")
    reply = AssistantReply(
        tool_calls=(
            ToolCall("1", "read_note", '{"name": "todo"}'),
            ToolCall("2", "write_note", '{"name": "todo", "text": "buy oat milk"}'),
            ToolCall("3", "delete_note", '{"name": "todo"}'),
        )
    )
    plan = decode_reply(session, resolve_turn(tools), reply).round.apply_hooks()

    run = executor.execute_and_commit(plan)
    print(f"pending approval: {len(run.pending)} call(s); committed: {run.committed}")
    for request in run.pending:
        print(f"  {request.call_id} {request.tool_name} ({request.effect.value})")
        print(f"     arguments   {request.arguments_json}")
        print(f"     fingerprint {request.fingerprint[:16]}...")

    # The human allows the write and denies the delete.
    decisions = [
        request.allow() if request.tool_name == "write_note" else request.deny("keep it")
        for request in run.pending
    ]
    done = executor.resume(run, decisions)
    print(f"resumed; committed: {done.committed}")
    for result in session.last.results:
        reason = rejection_reason(result)
        print(f"  {result.call_id} {result.tool_name}: {reason or result.content}")
    print(f"notes now: {NOTES}")


if __name__ == "__main__":
    main()
