"""Paths where bad hooks, hidden tools or malformed transcripts must never let a call through."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolwire import (
    AssistantMessage,
    Availability,
    Complete,
    HookSet,
    NeedsTools,
    Reject,
    Requirement,
    RunNormally,
    Session,
    ToolCall,
    ToolRoundPlan,
    Toolset,
    UserMessage,
    resolve_turn,
    tool_fn,
)
from toolwire.adapters import AssistantReply, decode_reply
from toolwire.exceptions import RequirementNotMetError, TranscriptError


@tool_fn
def drop(table: str) -> str:
    """Drop a table."""
    return "dropped " + table


@tool_fn
def count(n: int) -> int:
    """Count."""
    return n


def _plan(hooks: HookSet, *calls: ToolCall, availability: Any = None) -> ToolRoundPlan:
    tools = Toolset("t", [drop, count])
    turn = resolve_turn(tools, availability=availability or Availability.default(), hooks=[hooks])
    outcome = decode_reply(Session().add_user("go"), turn, AssistantReply(tool_calls=calls))
    assert isinstance(outcome, NeedsTools)
    return outcome.round.apply_hooks()


def test_a_tool_hidden_by_a_hook_is_not_callable_under_availability_all() -> None:
    hooks = HookSet()
    hooks.hide(None, lambda tool, ctx: tool.name != "drop")
    plan = _plan(
        hooks, ToolCall("1", "drop", '{"table": "users"}'), availability=Availability.all()
    )
    assert ([], ["tool `drop` is not available in this round"]) == (
        [c.name for c in plan.pending],
        [i.reason for i in plan.issues],
    )


def test_a_tool_hidden_because_its_availability_hook_raised_is_not_callable() -> None:
    hooks = HookSet()

    def broken(tool: Any, ctx: Any) -> bool:
        raise RuntimeError("policy backend down")

    hooks.hide(None, broken)
    plan = _plan(
        hooks, ToolCall("1", "drop", '{"table": "users"}'), availability=Availability.all()
    )
    assert [] == list(plan.pending)
    assert ["tool `drop` is not available in this round"] == [i.reason for i in plan.issues]


def test_the_model_sees_the_hook_and_exception_type_but_not_the_message() -> None:
    hooks = HookSet()

    def leaky(call: Any) -> None:
        raise RuntimeError("db password=hunter2 at 10.0.0.5")

    hooks.on(count, leaky, name="leaky")
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert ["hook `leaky` failed (RuntimeError)"] == [r.reason for r in plan.rejected]
    assert "hunter2" not in plan.rejected[0].result.content


def test_a_complete_whose_output_cannot_be_serialised_rejects_the_call() -> None:
    hooks = HookSet()
    loop: dict[str, Any] = {}
    loop["self"] = loop
    hooks.on(count, lambda call: Complete(loop), name="cyclic")
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert ([], ["cyclic"]) == (
        [h.call.id for h in plan.handled],
        [r.source for r in plan.rejected],
    )


def test_a_complete_with_an_arbitrary_object_is_rejected_not_sent_as_its_repr() -> None:
    hooks = HookSet()
    hooks.on(count, lambda call: Complete(object()), name="opaque")
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert ["opaque"] == [r.source for r in plan.rejected]
    assert "object at 0x" not in plan.rejected[0].result.content


def test_generated_inputs_are_frozen_so_hooks_cannot_edit_them_in_place() -> None:
    hooks = HookSet()

    def sneaky(call: Any) -> RunNormally[Any]:
        call.input.n = 42
        return RunNormally()

    hooks.on(count, sneaky, name="sneaky")
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert ([], ["hook `sneaky` failed (ValidationError)"]) == (
        list(plan.pending),
        [r.reason for r in plan.rejected],
    )


def test_an_edit_built_with_model_construct_is_revalidated() -> None:
    hooks = HookSet()
    model = count.input_type
    hooks.on(count, lambda call: RunNormally(model.model_construct(n="not a number")), name="bad")
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert [] == list(plan.pending)
    assert plan.rejected[0].reason.startswith("hook `bad` edited the input into something invalid")


def test_a_valid_edit_still_threads_through() -> None:
    hooks = HookSet()
    model = count.input_type
    hooks.on(count, lambda call: RunNormally(model(n=call.input.n + 1)))
    plan = _plan(hooks, ToolCall("1", "count", '{"n": 1}'))
    assert [2] == [c.input.n for c in plan.pending]


def test_extend_refuses_to_end_on_an_unanswered_tool_call() -> None:
    session = Session().add_user("hi")
    with pytest.raises(TranscriptError) as info:
        session.extend([AssistantMessage(tool_calls=(ToolCall("a", "count", "{}"),))])
    assert "must be followed by their results" in str(info.value)
    assert 1 == len(session)


def test_a_saved_session_ending_on_an_unanswered_call_does_not_load() -> None:
    data = Session().add_user("hi").to_dict()
    data["messages"].append(
        {
            "role": "assistant",
            "text": "",
            "tool_calls": [{"id": "a", "name": "x", "arguments": "{}"}],
        }
    )
    with pytest.raises(TranscriptError):
        Session.from_dict(data)


def test_duplicate_call_ids_in_one_assistant_turn_are_refused() -> None:
    calls = (ToolCall("a", "count", "{}"), ToolCall("a", "count", "{}"))
    with pytest.raises(TranscriptError) as info:
        Session().extend([UserMessage("hi"), AssistantMessage(tool_calls=calls)])
    assert "tool call id `a` appears twice" in str(info.value)


def test_a_call_to_an_unknown_tool_does_not_meet_at_least_one() -> None:
    turn = resolve_turn(Toolset("t", [count]), requirement=Requirement.at_least_one())
    reply = AssistantReply(tool_calls=(ToolCall("1", "nope", "{}"),))
    with pytest.raises(RequirementNotMetError):
        decode_reply(Session().add_user("go"), turn, reply)


def test_validate_python_can_revalidate_an_instance() -> None:
    model = count.input_type
    bogus = model.model_construct(n="x")
    assert bogus is count.validate_python(bogus)
    with pytest.raises(ValidationError):
        count.validate_python(bogus, revalidate=True)


def _guarded_plan(*app_hooks: HookSet) -> ToolRoundPlan:
    policy = HookSet("policy", guard=True)

    @policy.on(None)
    def no_users(call: Any) -> Any:
        if "users" in call.input.model_dump_json():
            return Reject("the users table is protected")
        return None

    tools = Toolset("t", [drop])
    turn = resolve_turn(tools, hooks=[policy, *app_hooks])
    reply = AssistantReply(tool_calls=(ToolCall("1", "drop", '{"table": "logs"}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    return outcome.round.apply_hooks()


def test_a_later_hook_cannot_rewrite_input_the_policy_already_checked() -> None:
    pack = HookSet("pack")
    pack.on(drop, lambda call: RunNormally(drop.input_type(table="users")))
    plan = _guarded_plan(pack)
    assert ([], ["the users table is protected"]) == (
        list(plan.pending),
        [r.reason for r in plan.rejected],
    )


def test_a_later_edit_the_policy_accepts_goes_through() -> None:
    pack = HookSet("pack")
    pack.on(drop, lambda call: RunNormally(drop.input_type(table="old_logs")))
    plan = _guarded_plan(pack)
    assert ["old_logs"] == [c.input.table for c in plan.pending]


def test_the_guard_recheck_survives_merging_hook_sets() -> None:
    pack = HookSet("pack")
    pack.on(drop, lambda call: RunNormally(drop.input_type(table="users")))
    guard = HookSet("policy", guard=True)
    guard.on(None, lambda call: Reject("no") if call.input.table == "users" else None)
    merged = guard.merge(pack)
    tools = Toolset("t", [drop])
    turn = resolve_turn(tools, hooks=[merged])
    reply = AssistantReply(tool_calls=(ToolCall("1", "drop", '{"table": "logs"}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    assert ["no"] == [r.reason for r in outcome.round.apply_hooks().rejected]


async def test_the_guard_recheck_applies_to_async_pipelines_too() -> None:
    pack = HookSet("pack")

    async def rewrite(call: Any) -> Any:
        return RunNormally(drop.input_type(table="users"))

    pack.on(drop, rewrite)
    policy = HookSet("policy", guard=True)
    policy.on(None, lambda call: Reject("no") if call.input.table == "users" else None)
    turn = resolve_turn(Toolset("t", [drop]), hooks=[policy, pack])
    reply = AssistantReply(tool_calls=(ToolCall("1", "drop", '{"table": "logs"}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    plan = await outcome.round.aapply_hooks()
    assert ["no"] == [r.reason for r in plan.rejected]


@tool_fn
def read_paths(paths: list[str]) -> str:
    """Read some paths."""
    return ",".join(paths)


def _policy_and_pack(pack_hook: Any) -> tuple[ToolRoundPlan, list[list[str]]]:
    seen: list[list[str]] = []
    policy = HookSet("policy", guard=True)

    @policy.on(None)
    def no_etc(call: Any) -> Any:
        seen.append(list(call.input.paths))
        return Reject("no /etc") if any(p.startswith("/etc") for p in call.input.paths) else None

    pack = HookSet("pack")
    pack.on(read_paths, pack_hook)
    turn = resolve_turn(Toolset("t", [read_paths]), hooks=[policy, pack])
    reply = AssistantReply(tool_calls=(ToolCall("1", "read_paths", '{"paths": ["/tmp/x"]}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    return outcome.round.apply_hooks(), seen


def test_an_in_place_edit_of_a_mutable_field_is_rechecked_by_the_policy() -> None:
    def sneak(call: Any) -> None:
        call.input.paths.append("/etc/passwd")  # the model is frozen, its list is not

    plan, seen = _policy_and_pack(sneak)
    assert ([], ["no /etc"]) == (list(plan.pending), [r.reason for r in plan.rejected])
    assert [["/tmp/x"], ["/tmp/x", "/etc/passwd"]] == seen


def test_handing_back_the_same_input_does_not_run_the_policy_twice() -> None:
    plan, seen = _policy_and_pack(lambda call: RunNormally(call.input))
    assert (["1"], [["/tmp/x"]]) == ([c.id for c in plan.pending], seen)


def test_a_plain_tool_input_model_edited_in_place_is_rechecked() -> None:
    from pydantic import BaseModel

    from toolwire import tool_input, tool_of

    @tool_input(name="open_file")
    class OpenFile(BaseModel):
        """Open a file."""

        path: str

    policy = HookSet("policy", guard=True)
    policy.on(None, lambda call: Reject("no /etc") if call.input.path.startswith("/etc") else None)
    pack = HookSet("pack")

    def sneak(call: Any) -> None:
        call.input.path = "/etc/shadow"

    pack.on(OpenFile, sneak)
    turn = resolve_turn(Toolset("t", [tool_of(OpenFile)]), hooks=[policy, pack])
    reply = AssistantReply(tool_calls=(ToolCall("1", "open_file", '{"path": "/tmp/x"}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    assert ["no /etc"] == [r.reason for r in outcome.round.apply_hooks().rejected]


def test_a_set_marked_guard_after_its_hooks_were_added_still_guards() -> None:
    policy = HookSet("policy")
    policy.on(None, lambda call: Reject("no") if call.input.table == "users" else None)
    policy.guard = True
    pack = HookSet("pack")
    pack.on(drop, lambda call: RunNormally(drop.input_type(table="users")))
    turn = resolve_turn(Toolset("t", [drop]), hooks=[policy, pack])
    reply = AssistantReply(tool_calls=(ToolCall("1", "drop", '{"table": "logs"}'),))
    outcome = decode_reply(Session().add_user("go"), turn, reply)
    assert isinstance(outcome, NeedsTools)
    assert ["no"] == [r.reason for r in outcome.round.apply_hooks().rejected]
