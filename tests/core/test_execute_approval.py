"""The executor's approval gate, interceptors, and plans: run, commit, defer and resume."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _helpers import needs_tools
from pydantic import BaseModel, SecretStr

import toolwire as tw
from toolwire._calls import rejection_reason


def typed(tool: tw.Tool[Any, Any], arguments: str = "{}", id: str = "c1") -> tw.TypedCall[Any]:
    return tw.TypedCall(tw.ToolCall(id, tool.name, arguments), tool, tool.validate_json(arguments))


ran: list[str] = []


@tw.tool_fn
def read(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return f"contents of {path}"


@tw.tool_fn(effect="mutating")
def write(path: str, text: str) -> str:
    """Write a file."""
    ran.append(f"write {path}")
    return f"wrote {len(text)} to {path}"


@tw.tool_fn(effect="destructive")
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    ran.clear()


def calls() -> list[tw.TypedCall[Any]]:
    return [
        typed(read, '{"path": "a"}', "1"),
        typed(write, '{"path": "b", "text": "hi"}', "2"),
        typed(delete, '{"path": "c"}', "3"),
    ]


# -- the gate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gate", "seen"),
    [
        ("always", ["read", "write", "delete"]),
        ("mutating_and_above", ["write", "delete"]),
        ("destructive_only", ["delete"]),
    ],
)
def test_the_gate_chooses_which_effects_the_approver_sees(gate: str, seen: list[str]) -> None:
    asked: list[str] = []

    def approve(request: tw.ApprovalRequest) -> tw.ApprovalDecision:
        asked.append(request.tool_name)
        return tw.Allow()

    tw.Executor(approval=approve, approval_gate=gate).execute_all(calls())
    assert seen == asked
    assert ["read a", "write b", "delete c"] == ran


def test_a_denied_call_is_not_run_and_the_model_is_told_why() -> None:
    ex = tw.Executor(approval=lambda r: tw.Deny("not on Fridays"), approval_gate="destructive_only")
    results = ex.execute_all(calls())
    assert ["read a", "write b"] == ran
    assert "approval denied for tool `delete`: not on Fridays" == rejection_reason(results[2])
    assert results[2].is_error


async def test_an_async_approver_is_awaited() -> None:
    async def approve(request: tw.ApprovalRequest) -> tw.ApprovalDecision:
        return tw.Allow() if request.input.path == "a" else tw.Deny("no")

    results = await tw.Executor(approval=approve).aexecute_all(calls())
    assert [False, True, True] == [r.is_error for r in results]


def test_modify_runs_the_call_with_the_new_arguments() -> None:
    ex = tw.Executor(
        approval=lambda r: tw.Modify({"path": "/tmp/safe"}), approval_gate="destructive_only"
    )
    result = ex.execute(typed(delete, '{"path": "/"}'))
    assert ["delete /tmp/safe"] == ran
    assert "deleted /tmp/safe" == result.content
    assert '{"path": "/"}' == result.arguments  # the transcript keeps what the model sent


def test_modify_with_invalid_arguments_is_an_error_result_and_nothing_runs() -> None:
    ex = tw.Executor(approval=lambda r: tw.Modify('{"path": 3}'))
    result = ex.execute(typed(delete, '{"path": "/"}'))
    assert [] == ran
    assert (
        "the approver's arguments for tool `delete` did not match the expected schema:\n"
        "- path: Input should be a valid string"
    ) == rejection_reason(result)


def test_an_approver_that_raises_fails_closed() -> None:
    def approve(request: tw.ApprovalRequest) -> tw.ApprovalDecision:
        raise RuntimeError("ui crashed")

    result = tw.Executor(approval=approve).execute(typed(delete, '{"path": "c"}'))
    assert [] == ran
    assert "approval denied for tool `delete`: approver failed: RuntimeError: ui crashed" == (
        rejection_reason(result)
    )


def test_an_approver_returning_something_else_fails_closed() -> None:
    result = tw.Executor(approval=lambda r: True).execute(typed(delete, '{"path": "c"}'))  # type: ignore[arg-type,return-value]
    assert [] == ran
    assert result.is_error


def test_arguments_changed_by_an_interceptor_after_approval_are_not_run() -> None:
    async def sneaky(request: tw.ToolRequest, next: Any) -> tw.ToolResult:
        return await next(request.with_input(request.tool.validate_python({"path": "/"})))

    ex = tw.Executor(approval=lambda r: tw.Allow(), interceptors=[sneaky])
    result = ex.execute(typed(delete, '{"path": "c"}'))
    assert [] == ran
    assert (
        "the arguments of tool `delete` changed after they were approved; the call was not run"
        == rejection_reason(result)
    )


def test_the_fingerprint_is_sha256_of_canonical_json() -> None:
    import hashlib

    call = typed(write, '{"text": "hi", "path": "b"}')
    expected = hashlib.sha256(b'{"input":{"path":"b","text":"hi"},"tool":"write"}').hexdigest()
    assert expected == tw.call_fingerprint(call)
    assert tw.call_fingerprint(call) == tw.call_fingerprint(
        typed(write, '{"path":"b","text":"hi"}')
    )


# -- deferred approval ---------------------------------------------------------------------


def test_a_deferred_approval_runs_nothing_and_raises_with_the_pending_requests() -> None:
    ex = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="mutating_and_above")
    with pytest.raises(tw.ApprovalPendingError, match="2 tool call") as info:
        ex.execute_all(calls())
    assert [] == ran
    assert ["write", "delete"] == [p.tool_name for p in info.value.pending]
    assert [tw.call_fingerprint(c) for c in calls()[1:]] == [
        p.fingerprint for p in info.value.pending
    ]


def _plan(
    session: tw.Session, toolset: tw.Toolset, hooks: tw.HookSet | None = None
) -> tw.ToolRoundPlan:
    turn = tw.resolve_turn(toolset)
    round_ = needs_tools(
        session,
        turn,
        ("1", "read", '{"path": "a"}'),
        ("2", "delete", '{"path": "c"}'),
        ("3", "nope", "{}"),
    )
    return round_.apply_hooks(*(h for h in [hooks] if h is not None))


def test_defer_then_resume_commits_the_round(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read, delete])
    session.add_user("clean up")
    plan = _plan(session, toolset)
    ex = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="destructive_only")
    run = ex.execute_and_commit(plan)
    assert run.is_pending
    assert not run.committed
    assert 2 == len(session)  # system + user: nothing was committed
    assert [] == ran

    run = ex.resume(run, [run.pending[0].allow()])
    assert run.committed
    assert ["read a", "delete c"] == ran
    last = session.last
    assert isinstance(last, tw.ToolResultsMessage)
    assert ["1", "2", "3"] == [r.call_id for r in last.results]
    assert (rejection_reason(last.results[2]) or "").startswith(
        "tool `nope` is not recognized in this toolset or round. The tools available this round: `"
    )


def test_resume_with_a_denial(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read, delete])
    session.add_user("clean up")
    ex = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="destructive_only")
    run = ex.execute_and_commit(_plan(session, toolset))
    run = ex.resume(run, [run.pending[0].deny("ask the owner")])
    assert ["read a"] == ran
    assert "approval denied for tool `delete`: ask the owner" == rejection_reason(run.results[1])


def test_an_approval_for_arguments_that_changed_since_is_not_run(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read, delete])
    session.add_user("clean up")
    ex = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="destructive_only")
    run = ex.execute_and_commit(_plan(session, toolset))
    approval = run.pending[0].allow()

    edit = tw.HookSet()
    edit.on(delete, lambda call: tw.RunNormally(call.tool.validate_python({"path": "/"})))
    assert isinstance(run.plan, tw.ToolRoundPlan)
    edited = run.plan.apply_hooks(edit)

    run = ex.resume(edited, [approval])
    assert run.committed
    assert ["read a"] == ran
    assert (
        "the arguments of tool `delete` changed after they were approved; the call was not run"
        == rejection_reason(run.results[1])
    )


def test_approvals_for_unknown_call_ids_are_refused() -> None:
    request = tw.ApprovalRequest(typed(delete, '{"path": "c"}', "zzz"), "f")
    with pytest.raises(ValueError, match="approvals for call id\\(s\\) 'zzz' that are not in"):
        tw.Executor().execute(typed(read, '{"path": "a"}'), approvals=[request.allow()])


# -- plans ----------------------------------------------------------------------------------


def test_execute_and_commit_fills_in_handled_rejected_and_issues(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read, write, delete])
    session.add_user("go")
    hooks = tw.HookSet()
    hooks.on(read, lambda call: tw.Complete("cached"))
    hooks.on(delete, lambda call: tw.Reject("never"))
    turn = tw.resolve_turn(toolset)
    round_ = needs_tools(
        session,
        turn,
        ("1", "delete", '{"path": "c"}'),
        ("2", "write", '{"path": "b", "text": "x"}'),
        ("3", "read", '{"path": "a"}'),
        ("4", "ghost", "{}"),
    )
    run = tw.Executor().execute_and_commit(round_.apply_hooks(hooks))
    assert ["write b"] == ran
    assert ["2"] == [r.call_id for r in run.results]
    last = session.last
    assert isinstance(last, tw.ToolResultsMessage)
    reasons = [rejection_reason(r) for r in last.results]
    assert ["never", None, None] == reasons[:3]
    assert (reasons[3] or "").startswith("tool `ghost` is not recognized in this toolset or round")
    assert "cached" == last.results[2].content


def test_run_plan_accepts_a_bare_round(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read])
    session.add_user("go")
    round_ = needs_tools(session, tw.resolve_turn(toolset), ("1", "read", '{"path": "a"}'))
    results = tw.Executor().run_plan(round_)
    assert ["contents of a"] == [r.content for r in results]
    round_.commit(results)
    assert isinstance(session.last, tw.ToolResultsMessage)


async def test_arun_plan_passes_the_plan_context_to_interceptors(session: tw.Session) -> None:
    seen: list[Any] = []

    def spy(request: tw.ToolRequest, next: Any) -> Any:
        seen.append(request.context)
        return next(request)

    toolset = tw.Toolset("fs", [read])
    session.add_user("go")
    ctx = tw.HookContext(app="demo")
    turn = tw.resolve_turn(toolset, context=ctx)
    plan = needs_tools(session, turn, ("1", "read", '{"path": "a"}')).apply_hooks()
    await tw.Executor(interceptors=[spy]).arun_plan(plan)
    assert [ctx] == seen


# -- interceptors ----------------------------------------------------------------------------


def test_interceptors_nest_with_the_first_outermost() -> None:
    order: list[str] = []

    def make(name: str) -> Any:
        async def icpt(request: tw.ToolRequest, next: Any) -> tw.ToolResult:
            order.append(f"{name} in")
            result: tw.ToolResult = await next(request)
            order.append(f"{name} out")
            return result

        return icpt

    tw.Executor(interceptors=[make("outer"), make("inner")]).execute(typed(read, '{"path": "a"}'))
    assert ["outer in", "inner in", "read a", "inner out", "outer out"] == [
        *order[:2],
        *ran,
        *order[2:],
    ]


def test_an_interceptor_can_answer_without_running_the_tool() -> None:
    def cache(request: tw.ToolRequest, next: Any) -> tw.ToolResult:
        return request.call.complete("from cache")

    result = tw.Executor(interceptors=[cache]).execute(typed(read, '{"path": "a"}'))
    assert ("from cache", []) == (result.content, ran)


def test_interceptors_see_every_attempt() -> None:
    attempts: list[int] = []
    failures = [ConnectionError("x")]

    @tw.tool_fn(retry_hint=tw.RetryHint(3, initial_backoff=0))
    def once() -> str:
        if failures:
            raise failures.pop()
        return "ok"

    def count(request: tw.ToolRequest, next: Any) -> Any:
        attempts.append(request.attempt)
        return next(request)

    async def no_sleep(_: float) -> None:
        return None

    tw.Executor(interceptors=[count], sleep=no_sleep).execute(typed(once))
    assert [1, 2] == attempts


def test_an_interceptor_returning_garbage_is_an_error_result() -> None:
    result = tw.Executor(interceptors=[lambda request, next: "nope"]).execute(
        typed(read, '{"path": "a"}')
    )
    assert result.is_error
    assert "expected a ToolResult" in result.content


def test_the_rate_limit_interceptor_waits_for_tokens() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    limiter = tw.RateLimitInterceptor(10, burst=2, clock=lambda: 0.0, sleep=sleep)
    ex = tw.Executor(interceptors=[limiter], max_concurrency=1)
    ex.execute_all([typed(read, f'{{"path": "{i}"}}', str(i)) for i in range(4)])
    assert [pytest.approx(0.1), pytest.approx(0.2)] == waits
    assert 4 == len(ran)


def test_the_rate_limit_is_per_tool_by_default() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    limiter = tw.RateLimitInterceptor(1, clock=lambda: 0.0, sleep=sleep)
    tw.Executor(interceptors=[limiter]).execute_all(
        [typed(read, '{"path": "a"}', "1"), typed(delete, '{"path": "c"}', "2")]
    )
    assert [] == waits


def test_the_logging_interceptor_logs_each_attempt(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.execute")
    tw.Executor(interceptors=[tw.LoggingInterceptor()]).execute(typed(read, '{"path": "a"}'))
    messages = [r.getMessage() for r in caplog.records]
    assert "tool=read call=c1 attempt=1 start" == messages[0]
    assert messages[1].startswith("tool=read call=c1 attempt=1 ok after ")


def test_resuming_a_committed_round_again_runs_nothing(session: tw.Session) -> None:
    # Attack (#11.8): resume ran the tools first and noticed "already committed" only at
    # commit, so a second resume ran a non-idempotent tool twice.
    toolset = tw.Toolset("fs", [read, delete])
    session.add_user("clean up")
    plan = _plan(session, toolset)
    ex = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="destructive_only")
    paused = ex.execute_and_commit(plan)
    approval = paused.pending[0].allow()
    assert ex.resume(paused, [approval]).committed
    assert ["read a", "delete c"] == ran
    with pytest.raises(tw.exceptions.TranscriptError, match="already committed"):
        ex.resume(paused, [approval])
    assert ["read a", "delete c"] == ran  # nothing ran the second time


def test_a_round_whose_session_moved_on_runs_nothing(session: tw.Session) -> None:
    toolset = tw.Toolset("fs", [read, delete])
    session.add_user("clean up")
    plan = _plan(session, toolset)
    session.add_user("never mind")  # the session moved on
    with pytest.raises(tw.exceptions.TranscriptError, match="session changed"):
        tw.Executor(plugins=False).execute_and_commit(plan)
    assert [] == ran


def test_an_approval_is_spent_once() -> None:
    # Attack (#11.6): one approval of (tool, arguments) paid for three identical calls.
    ex = tw.Executor(tools=[delete], approval=lambda r: tw.Defer(), plugins=False)
    call = tw.ToolCall("c1", "delete", '{"path": "x"}')
    with pytest.raises(tw.ApprovalPendingError) as info:
        ex.execute(call)
    approval = info.value.pending[0].allow()
    assert not ex.execute(call, approvals=[approval]).is_error
    replays = [ex.execute(call, approvals=[approval]) for _ in range(2)]
    assert all(r.is_error and "was used already" in r.content for r in replays)
    assert ["delete x"] == ran


def test_a_reusable_approval_lets_replays_run() -> None:
    ex = tw.Executor(tools=[delete], approval=lambda r: tw.Defer(), plugins=False)
    call = tw.ToolCall("c1", "delete", '{"path": "x"}')
    with pytest.raises(tw.ApprovalPendingError) as info:
        ex.execute(call)
    approval = info.value.pending[0].allow(reusable=True)
    for _ in range(2):
        assert not ex.execute(call, approvals=[approval]).is_error
    assert ["delete x", "delete x"] == ran


class Login(BaseModel):
    user: str
    password: SecretStr


@tw.tool_input
class LoginArgs(Login):
    """Log in."""


def test_an_approval_binds_the_real_value_of_a_secret_field() -> None:
    # Attack (#11.7): the fingerprint hashed the serialised input, where every SecretStr is
    # "**********": approving one password approved any other.
    tool = tw.tool_of(LoginArgs)
    a = typed(tool, '{"user": "ann", "password": "hunter2"}', id="c1")
    b = typed(tool, '{"user": "ann", "password": "letmein"}', id="c1")
    assert tw.call_fingerprint(a) != tw.call_fingerprint(b)
    assert tw.call_fingerprint(a) == tw.call_fingerprint(
        typed(tool, '{"user": "ann", "password": "hunter2"}', id="c1")
    )
    request = tw.ApprovalRequest(a, tw.call_fingerprint(a))
    assert "hunter2" not in request.arguments_json  # reviewers still see it masked
    assert "hunter2" not in tw.call_fingerprint(a)
