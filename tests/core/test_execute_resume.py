"""Saving a round whose approval is pending (RoundExecution.to_dict) and resuming it elsewhere."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from _helpers import needs_tools
from pydantic import SecretStr

import toolwire as tw
from toolwire import hookimpl
from toolwire._calls import rejection_reason
from toolwire._plugins import PluginHost
from toolwire.providers.test import TestProvider

ran: list[str] = []


@tw.tool_fn
def read(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return f"contents of {path}"


@tw.tool_fn(effect="mutating")
def write(path: str, text: str) -> str:
    """Write a file."""
    ran.append(f"write {path} {text}")
    return f"wrote {len(text)} to {path}"


@tw.tool_fn
def lookup(key: str) -> str:
    """Look a key up."""
    ran.append(f"lookup {key}")
    return f"value of {key}"


@tw.tool_fn(effect="mutating")
def login(user: str, password: SecretStr) -> str:
    """Log in."""
    ran.append(f"login {user}")
    return "ok"


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    ran.clear()


def tools() -> tw.Toolset:
    return tw.Toolset("files", [read, write])


def deferring() -> tw.Executor:
    return tw.Executor(approval=lambda r: tw.Defer(), approval_gate="mutating_and_above")


CALLS = (
    ("1", "read", '{"path": "a"}'),
    ("2", "write", '{"path": "b", "text": "hi"}'),
    ("3", "nope", "{}"),
    ("4", "read", '{"path": "secret"}'),
    ("5", "read", '{"path": "cached"}'),
    ("6", "write", '{"path": "c", "text": "x"}'),
)


def hooks(seen: list[str]) -> tw.HookSet:
    """Rejects `secret`, answers `cached`, edits call 6's text (and records each call seen)."""
    hs = tw.HookSet()

    @hs.on(read)
    def guard(call: tw.TypedCall[Any]) -> Any:
        seen.append(call.id)
        if call.input.path == "secret":
            return tw.Reject("no secrets")
        if call.input.path == "cached":
            return tw.Complete("cached contents")
        return None

    @hs.on(write)
    def shout(call: tw.TypedCall[Any]) -> Any:
        seen.append(call.id)
        if call.id == "6":
            return tw.RunNormally(call.input.model_copy(update={"text": "X!"}))
        return None

    return hs


def no_secrets(checked: list[str] | None = None) -> tw.HookSet:
    """A policy (a guard set): rejects reading `secret`, records each call it sees."""
    policy = tw.HookSet("policy", guard=True)

    @policy.on(None)
    def no_secret(call: tw.TypedCall[Any]) -> Any:
        if checked is not None:
            checked.append(call.id)
        if call.name == "read" and call.input.path == "secret":
            return tw.Reject("no secrets")
        return None

    return policy


def paused(seen: list[str] | None = None) -> tuple[tw.Session, tw.RoundExecution]:
    session = tw.Session("sys").add_user("go")
    round_ = needs_tools(session, tw.resolve_turn(tools()), *CALLS)
    run = deferring().execute_and_commit(round_.apply_hooks(hooks([] if seen is None else seen)))
    assert run.is_pending
    assert not ran
    return session, run


def saved(seen: list[str] | None = None) -> dict[str, Any]:
    session, run = paused(seen)
    blob = json.dumps({"session": session.to_dict(), "pending": run.to_dict()})
    return dict(json.loads(blob))


def restored(blob: dict[str, Any]) -> tuple[tw.Session, tw.RoundExecution]:
    session = tw.Session.from_dict(blob["session"])
    return session, tw.RoundExecution.from_dict(blob["pending"], session, tools())


# -- the format ----------------------------------------------------------------------------


def test_to_dict_holds_what_a_resume_needs() -> None:
    data = saved()["pending"]
    assert data["format"] == "toolwire.pending/1"
    assert data["session_length"] == 2
    assert [c["id"] for c in data["message"]["tool_calls"]] == ["1", "2", "3", "4", "5", "6"]
    assert data["calls"] == [
        {"call_id": "1"},
        {"call_id": "2"},
        {"call_id": "6", "input": {"path": "c", "text": "X!"}},
    ]
    assert [a["call_id"] for a in data["approvals"]] == ["2", "6"]
    assert data["handled"][0]["call_id"] == "5"
    assert data["handled"][0]["result"] == {"content": "cached contents", "is_error": False}
    assert data["handled"][0]["source"].endswith("guard")
    [rej] = data["rejected"]
    assert (rej["call_id"], rej["reason"]) == ("4", "no secrets")
    assert rej["source"].endswith("guard")
    assert rej["result"]["is_error"]
    assert data["issues"] == [{"call_id": "3", "kind": "unknown_tool"}]


def test_json_round_trip_is_stable() -> None:
    session, run = paused()
    text = json.dumps(run.to_dict())
    again = tw.RoundExecution.from_dict(
        json.loads(text), tw.Session.from_json(session.to_json()), tools()
    )
    assert json.dumps(again.to_dict()) == text
    assert again.is_pending
    assert not again.committed
    assert [(r.call_id, r.fingerprint) for r in again.pending] == [
        (r.call_id, r.fingerprint) for r in run.pending
    ]
    assert [r.arguments_json for r in again.pending] == [r.arguments_json for r in run.pending]


def test_only_a_pending_run_can_be_saved() -> None:
    session = tw.Session().add_user("go")
    round_ = needs_tools(session, tw.resolve_turn(tools()), ("1", "read", '{"path": "a"}'))
    run = tw.Executor().execute_and_commit(round_.apply_hooks())
    with pytest.raises(ValueError, match="approval is pending"):
        run.to_dict()


# -- resuming ------------------------------------------------------------------------------


def test_resume_restored_matches_resume_in_memory() -> None:
    session_a, run_a = paused()
    blob = json.loads(json.dumps({"session": session_a.to_dict(), "pending": run_a.to_dict()}))
    deferring().resume(run_a, [r.allow() for r in run_a.pending])
    ran_in_memory = list(ran)
    ran.clear()

    seen: list[str] = []
    checked: list[str] = []
    session_b = tw.Session.from_dict(blob["session"])
    turn = tw.resolve_turn(tools(), hooks=[no_secrets(checked), hooks(seen)])
    run_b = tw.RoundExecution.from_dict(blob["pending"], session_b, turn)
    done = deferring().resume(run_b, [r.allow() for r in run_b.pending])
    assert done.committed
    assert not seen  # the turn's other hooks do not run again: what they decided is kept
    assert checked == ["1", "2", "6"]  # its guard hooks do, on the calls pending execution
    assert ran == ran_in_memory == ["read a", "write b hi", "write c X!"]
    assert session_b == session_a
    results = {r.call_id: r for r in session_b.last.results}  # type: ignore[union-attr]
    assert results["5"].content == "cached contents"
    assert rejection_reason(results["4"]) == "no secrets"
    assert rejection_reason(results["3"]) is not None


def test_resume_with_deny_and_modify_after_restore() -> None:
    session, run = restored(saved())
    two, six = run.pending
    done = deferring().resume(run, [two.deny("not now"), six.modify({"path": "c", "text": "y"})])
    assert done.committed
    assert ran == ["read a", "write c y"]
    results = {r.call_id: r for r in session.last.results}  # type: ignore[union-attr]
    assert rejection_reason(results["2"]) == "approval denied for tool `write`: not now"


@pytest.fixture
def blob() -> dict[str, Any]:
    return saved()


async def test_aresume_restored(blob: dict[str, Any]) -> None:
    session, run = restored(blob)
    done = await deferring().aresume(run, [r.allow() for r in run.pending])
    assert done.committed
    assert len(session) == 4


def test_changed_arguments_do_not_match_the_stored_fingerprint() -> None:
    blob = saved()
    blob["pending"]["message"]["tool_calls"][1]["arguments"] = '{"path": "b", "text": "rm"}'
    with pytest.raises(
        tw.exceptions.TranscriptError, match=r"approvals\[0\]\.fingerprint.*call `2`"
    ):
        restored(blob)


def test_a_forged_fingerprint_is_an_error() -> None:
    blob = saved()
    blob["pending"]["approvals"][1]["fingerprint"] = "0" * 64
    with pytest.raises(
        tw.exceptions.TranscriptError, match=r"approvals\[1\]\.fingerprint.*`write`"
    ):
        restored(blob)


def test_approval_is_bound_to_the_reviewed_arguments() -> None:
    blob = saved()
    stored = blob["pending"]["approvals"]
    reviewed = [tw.Approval(a["call_id"], a["fingerprint"], tw.Allow()) for a in stored]
    # The stored call's arguments are changed after review, and its fingerprint with them.
    args = '{"path": "b", "text": "rm"}'
    blob["pending"]["message"]["tool_calls"][1]["arguments"] = args
    forged = tw.TypedCall(tw.ToolCall("2", "write", args), write, write.validate_json(args))
    stored[0]["fingerprint"] = tw.call_fingerprint(forged)
    session, run = restored(blob)
    deferring().resume(run, reviewed)
    assert "write b rm" not in ran
    assert ran == ["read a", "write c X!"]
    result = session.last.results[1]  # type: ignore[union-attr]
    assert "changed after they were approved" in (rejection_reason(result) or "")


def test_undecided_calls_go_to_the_approver_again() -> None:
    session, run = restored(saved())
    again = deferring().resume(run, [run.pending[0].allow()])
    assert again.is_pending
    assert [r.call_id for r in again.pending] == ["6"]
    assert not ran
    assert len(session) == 2
    done = deferring().resume(again, [run.pending[0].allow(), again.pending[0].allow()])
    assert done.committed
    assert ran == ["read a", "write b hi", "write c X!"]


# -- the agent -----------------------------------------------------------------------------


def script() -> list[dict[str, Any]]:
    return [
        {
            "tool_calls": [
                {"id": "w", "name": "write", "arguments": {"path": "todo", "text": "hi"}},
                {"id": "r", "name": "read", "arguments": {"path": "todo"}},
            ]
        },
        {"text": "Done."},
    ]


def test_agent_pause_save_restore_resume_continue() -> None:
    # Worker 1: the run pauses for approval; everything is saved as JSON.
    agent = tw.Agent(TestProvider(script=script()), tools(), executor=deferring(), plugins=False)
    session = tw.Session("Be brief.")
    result = agent.run(session, "note hi")
    assert result.status == "approval_pending"
    assert result.pending is not None
    assert not ran
    assert len(session) == 2
    blob = json.dumps({"session": session.to_dict(), "pending": result.pending.to_dict()})
    reviewed = [(r.call_id, r.fingerprint, r.tool_name) for r in result.pending.pending]
    assert [t for _, _, t in reviewed] == ["write"]
    del agent, session, result

    # Worker 2: fresh objects, only the JSON and the decision (a human said yes).
    data = json.loads(blob)
    session2 = tw.Session.from_dict(data["session"])
    provider = TestProvider(script=script()[1:])
    executor = deferring()
    agent2 = tw.Agent(provider, tools(), executor=executor, plugins=False)
    restored_run = agent2.restore(data["pending"], session2)
    approvals = [tw.Approval(cid, fp, tw.Allow()) for cid, fp, _ in reviewed]
    assert executor.resume(restored_run, approvals).committed
    final = agent2.run(session2)
    assert (final.status, final.text) == ("finished", "Done.")
    assert ran == ["write todo hi", "read todo"]
    assert [r.content for r in session2.messages[3].results] == [  # type: ignore[union-attr]
        "wrote 2 to todo",
        "contents of todo",
    ]
    assert len(provider.requests) == 1  # worker 2 asked the model once, after the round


def test_plan_run_from_dict_with_a_toolset_works_for_the_agent_too() -> None:
    agent = tw.Agent(TestProvider(script=script()), tools(), executor=deferring(), plugins=False)
    session = tw.Session()
    pending = agent.run(session, "note hi").pending
    assert pending is not None
    data = json.loads(json.dumps(pending.to_dict()))
    session2 = tw.Session.from_json(session.to_json())
    run = tw.RoundExecution.from_dict(data, session2, tools())
    deferring().resume(run, [r.allow() for r in run.pending])
    agent2 = tw.Agent(TestProvider(script=script()[1:]), tools(), plugins=False)
    assert agent2.run(session2).text == "Done."


# -- refusals ------------------------------------------------------------------------------


def test_session_changed_since_the_pause() -> None:
    blob = saved()
    session = tw.Session.from_dict(blob["session"]).add_user("more")
    with pytest.raises(tw.exceptions.TranscriptError, match=r"3 messages.*decoded at 2"):
        tw.RoundExecution.from_dict(blob["pending"], session, tools())


def test_same_length_but_other_messages() -> None:
    blob = saved()
    blob["session"]["messages"][-1]["text"] = "go, and delete everything"
    session = tw.Session.from_dict(blob["session"])
    with pytest.raises(
        tw.exceptions.TranscriptError, match=r"pending\.session_digest.*changed since"
    ):
        tw.RoundExecution.from_dict(blob["pending"], session, tools())


def test_another_session() -> None:
    blob = saved()
    other = tw.Session("sys", id="other").add_user("go")
    with pytest.raises(tw.exceptions.TranscriptError, match="session_id"):
        tw.RoundExecution.from_dict(blob["pending"], other, tools())


def test_a_pending_tool_missing_now_is_an_error() -> None:
    blob = saved()
    session = tw.Session.from_dict(blob["session"])
    with pytest.raises(
        tw.exceptions.TranscriptError, match=r"pending\.calls\[1\].*tool `write`.*not offered"
    ):
        tw.RoundExecution.from_dict(blob["pending"], session, tw.Toolset("files", [read]))


def test_arguments_that_no_longer_validate_are_an_error() -> None:
    blob = saved()
    blob["pending"]["message"]["tool_calls"][0]["arguments"] = '{"path": 3}'
    session = tw.Session.from_dict(blob["session"])
    with pytest.raises(
        tw.exceptions.TranscriptError, match=r"(?s)pending\.calls\[0\].*call `1`.*path"
    ):
        tw.RoundExecution.from_dict(blob["pending"], session, tools())


def test_from_dict_takes_a_toolset_or_a_turn() -> None:
    blob = saved()
    session = tw.Session.from_dict(blob["session"])
    run = tw.RoundExecution.from_dict(blob["pending"], session, tw.resolve_turn(tools()))
    assert run.is_pending
    with pytest.raises(TypeError, match="Toolset or a ResolvedTurn"):
        tw.RoundExecution.from_dict(blob["pending"], session, [read, write])  # type: ignore[arg-type]


def _swap(key: str, i: int, j: int) -> Any:
    """A mutation of the saved data: swap two entries of the list ``key``."""

    def apply(data: dict[str, Any]) -> None:
        items = data[key]
        items[i], items[j] = items[j], items[i]

    return apply


def _set(path: str, value: Any) -> Any:
    """A mutation of the saved data: set ``path`` (dotted, with list indexes) to ``value``."""

    def apply(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return apply


_DELETE = object()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.clear(), "unknown pending round format"),
        (_set("format", "toolwire.pending/9"), "unknown pending round format"),
        (_set("session_length", True), r"pending\.session_length must be an integer"),
        (_set("session_id", _DELETE), r"pending\.session_id must be a string"),
        (_set("message", _DELETE), r"pending\.message must be an object"),
        (_set("message.role", "user"), "pending.message must be an assistant message"),
        (_set("message.tool_calls.0.id", 1), r"pending\.message\.tool_calls\[0\]\.id"),
        (_set("message.tool_calls.1.id", "1"), "appears twice"),
        (_set("calls", {}), r"pending\.calls must be a list"),
        (_set("calls.0", "1"), r"pending\.calls\[0\] must be an object"),
        (_set("calls.0.call_id", "zz"), r"pending\.calls\[0\]\.call_id 'zz' is not a call"),
        (_set("calls.0.call_id", "2"), r"pending\.calls\[1\]\.call_id '2' is recorded twice"),
        (_set("calls.2.input", {"path": "c"}), r"(?s)pending\.calls\[2\]\.input.*text"),
        (_set("calls.2.input", {"path": float("nan"), "text": "x"}), r"pending\.calls\[2\]"),
        (_set("handled", _DELETE), r"pending\.handled must be a list"),
        (_set("handled.0.result.content", None), r"pending\.handled\[0\]\.result\.content"),
        (_set("rejected.0.result", "x"), r"pending\.rejected\[0\]\.result must be an object"),
        (_set("rejected.0.reason", 5), r"pending\.rejected\[0\]\.reason must be a string"),
        (_set("issues.0.kind", "odd"), r"pending\.issues\[0\]\.kind must be"),
        (_set("issues", []), r"call\(s\) '3' of pending\.message are not recorded"),
        (_set("approvals", []), "nothing to resume"),
        (_set("approvals.0.call_id", "5"), r"pending\.approvals\[0\]\.call_id '5' is not a call"),
        (_set("approvals.0.fingerprint", None), r"approvals\[0\]\.fingerprint must be a string"),
        (_set("session_digest", _DELETE), r"pending\.session_digest must be a string"),
        (_set("session_digest", "0" * 64), r"pending\.session_digest"),
        (_swap("calls", 0, 1), r"pending\.calls\[1\]\.call_id '1' is out of order"),
        (_swap("calls", 1, 2), r"pending\.calls\[2\]\.call_id '2' is out of order"),
        (_swap("approvals", 0, 1), r"pending\.approvals\[1\]\.call_id '2' is repeated or out"),
        (_set("approvals.1.call_id", "2"), r"pending\.approvals\[1\]\.call_id '2' is repeated"),
    ],
)
def test_malformed_data_names_the_bad_path(mutate: Any, message: str) -> None:
    blob = saved()
    session = tw.Session.from_dict(blob["session"])
    data = copy.deepcopy(blob["pending"])
    mutate(data)
    with pytest.raises(tw.exceptions.TranscriptError, match=message):
        tw.RoundExecution.from_dict(data, session, tools())


def test_not_an_object() -> None:
    with pytest.raises(
        tw.exceptions.TranscriptError, match="a pending round must be an object, got list"
    ):
        tw.RoundExecution.from_dict([], tw.Session(), tools())


def test_invalid_arguments_issue_round_trips() -> None:
    session = tw.Session().add_user("go")
    round_ = needs_tools(
        session,
        tw.resolve_turn(tools()),
        ("1", "write", '{"path": "b", "text": "hi"}'),
        ("2", "read", '{"path": 1}'),
    )
    run = deferring().execute_and_commit(round_.apply_hooks())
    data = json.loads(json.dumps(run.to_dict()))
    assert data["issues"][0]["kind"] == "invalid_arguments"
    session2 = tw.Session.from_json(session.to_json())
    again = tw.RoundExecution.from_dict(data, session2, tools())
    assert again.to_dict() == data
    deferring().resume(again, [again.pending[0].allow()])
    [_, bad] = session2.last.results  # type: ignore[union-attr]
    assert "did not match the expected schema" in (rejection_reason(bad) or "")
    assert "path" in bad.content


# -- failing closed without trusting the data ----------------------------------------------


def test_a_rejected_call_moved_into_calls_is_rejected_again() -> None:
    blob = saved()
    data = blob["pending"]
    [rejected] = data.pop("rejected")
    data["rejected"] = []
    data["calls"].insert(2, {"call_id": rejected["call_id"]})  # call 4, in the message's order
    session = tw.Session.from_dict(blob["session"])
    turn = tw.resolve_turn(tools(), hooks=[no_secrets()])
    run = tw.RoundExecution.from_dict(data, session, turn)
    assert [c.id for c in run.plan.pending] == ["1", "2", "4", "6"]  # type: ignore[union-attr]
    done = deferring().resume(run, [r.allow() for r in run.pending])
    assert done.committed
    assert "read secret" not in ran
    assert ran == ["read a", "write b hi", "write c X!"]
    result = {r.call_id: r for r in session.last.results}["4"]  # type: ignore[union-attr]
    assert result.is_error
    assert rejection_reason(result) == (
        "tool `read` was rejected when its paused round was resumed: no secrets"
    )


def test_a_policy_runs_again_when_the_plan_is_run_directly() -> None:
    blob = saved()
    session = tw.Session.from_dict(blob["session"])
    checked: list[str] = []
    run = tw.RoundExecution.from_dict(
        blob["pending"], session, tw.resolve_turn(tools(), hooks=[no_secrets(checked)])
    )
    approvals = [r.allow() for r in run.pending]
    deferring().run_plan(run.plan, approvals=approvals)
    assert checked == ["1", "2", "6"]


def test_an_edit_that_does_not_survive_json_cannot_be_saved() -> None:
    hs = tw.HookSet()

    @hs.on(login)
    def real_password(call: tw.TypedCall[Any]) -> Any:
        return tw.RunNormally(call.input.model_copy(update={"password": SecretStr("hunter2")}))

    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("auth", [login]))
    round_ = needs_tools(session, turn, ("1", "login", '{"user": "ann", "password": "x"}'))
    run = deferring().execute_and_commit(round_.apply_hooks(hs))
    assert run.is_pending
    with pytest.raises(ValueError, match=r"call `1` \(tool `login`\).*does not survive JSON"):
        run.to_dict()


def test_an_unedited_secret_can_be_saved() -> None:
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("auth", [login]))
    round_ = needs_tools(session, turn, ("1", "login", '{"user": "ann", "password": "x"}'))
    run = deferring().execute_and_commit(round_.apply_hooks())
    data = json.loads(json.dumps(run.to_dict()))
    again = tw.RoundExecution.from_dict(data, tw.Session.from_json(session.to_json()), turn.toolset)
    assert again.pending[0].input.password.get_secret_value() == "x"


def test_a_handled_call_does_not_need_its_tool_any_more() -> None:
    hs = tw.HookSet()
    hs.on(lookup, lambda call: tw.Complete("from cache"))
    session = tw.Session().add_user("go")
    full = tw.resolve_turn(tw.Toolset("files", [write, lookup]))
    round_ = needs_tools(
        session,
        full,
        ("1", "lookup", '{"key": "k"}'),
        ("2", "write", '{"path": "b", "text": "hi"}'),
    )
    run = deferring().execute_and_commit(round_.apply_hooks(hs))
    data = json.loads(json.dumps(run.to_dict()))
    session2 = tw.Session.from_json(session.to_json())
    again = tw.RoundExecution.from_dict(data, session2, tw.Toolset("files", [write]))
    plan = again.plan
    assert isinstance(plan, tw.ToolRoundPlan)
    [handled] = plan.handled
    assert (handled.call.name, handled.call.input) == ("lookup", {"key": "k"})
    assert again.to_dict() == data
    done = deferring().resume(again, [r.allow() for r in again.pending])
    assert done.committed
    assert ran == ["write b hi"]
    results = session2.last.results  # type: ignore[union-attr]
    assert [r.content for r in results] == ["from cache", "wrote 2 to b"]


class NoWrites:
    @hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
        return tw.Reject("writes are frozen") if call.name == "write" else None


def test_agent_restore_runs_the_host_policies_again() -> None:
    agent = tw.Agent(TestProvider(script=script()), tools(), executor=deferring(), plugins=False)
    session = tw.Session()
    result = agent.run(session, "note hi")
    assert result.pending is not None
    data = json.loads(
        json.dumps({"session": session.to_dict(), "pending": result.pending.to_dict()})
    )

    # Since the pause, the organisation's policy freezes writes.
    host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)
    host.register(NoWrites(), "corp", kind="policy")
    session2 = tw.Session.from_dict(data["session"])
    executor = tw.Executor(
        approval=lambda r: tw.Defer(), approval_gate="mutating_and_above", plugins=False
    )
    agent2 = tw.Agent(TestProvider(script=script()[1:]), tools(), executor=executor, plugins=host)
    run = agent2.restore(data["pending"], session2)
    done = executor.resume(run, [r.allow() for r in run.pending])
    assert done.committed
    assert ran == ["read todo"]
    written = session2.last.results[0]  # type: ignore[union-attr]
    assert rejection_reason(written) == (
        "tool `write` was rejected when its paused round was resumed: writes are frozen"
    )


def test_a_hooks_media_answer_survives_the_save_and_the_resume() -> None:
    # A hook answered a call with an image (#27): the paused round saves it as the session
    # does (base64, type, size), and the resumed round commits the very same parts.
    png = b"\x89PNG\r\n\x1a\n" + bytes(24)
    hs = tw.HookSet()

    @hs.on(read)
    def cached(call: tw.TypedCall[Any]) -> Any:
        return tw.Complete(["cached chart", tw.Image(png)]) if call.input.path == "c" else None

    session = tw.Session("sys").add_user("go")
    round_ = needs_tools(
        session,
        tw.resolve_turn(tools()),
        ("1", "read", '{"path": "c"}'),
        ("2", "write", '{"path": "b", "text": "hi"}'),
    )
    run = deferring().execute_and_commit(round_.apply_hooks(hs))
    assert run.is_pending
    blob = json.loads(json.dumps({"session": session.to_dict(), "pending": run.to_dict()}))
    assert base64.b64encode(png).decode() in json.dumps(blob["pending"])  # the parts, saved
    session_b = tw.Session.from_dict(blob["session"])
    run_b = tw.RoundExecution.from_dict(blob["pending"], session_b, tools())
    done = deferring().resume(run_b, [r.allow() for r in run_b.pending])
    assert done.committed
    first = session_b.last.results[0]  # type: ignore[union-attr]
    assert first.parts == (tw.media.Text("cached chart"), tw.Image(png))
