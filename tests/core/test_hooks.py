"""Decision hooks, hook sets, the pipeline, ToolRoundPlan, description and availability hooks."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _helpers import needs_tools
from pydantic import BaseModel

import toolwire as tw

OK = '{"city":"Oslo"}'


def _round(session: tw.Session, toolset: tw.Toolset, *calls: tuple[str, str, str]) -> tw.ToolRound:
    return needs_tools(session, tw.resolve_turn(toolset), *calls)


def _one(session: tw.Session, toolset: tw.Toolset) -> tw.ToolRound:
    return _round(session, toolset, ("c1", "get_weather", OK))


def _edit(city: str) -> Any:
    def hook(call: tw.TypedCall[Any]) -> tw.RunNormally[Any]:
        return tw.RunNormally(call.input.model_copy(update={"city": city}))

    return hook


def test_no_hooks_leaves_the_call_untouched(session: tw.Session, toolset: tw.Toolset) -> None:
    rnd = _one(session, toolset)
    plan = rnd.apply_hooks()
    assert (rnd.calls, (), ()) == (plan.pending, plan.handled, plan.rejected)


def test_run_normally_threads_the_edited_input(session: tw.Session, toolset: tw.Toolset) -> None:
    seen: list[str] = []
    hooks = tw.HookSet()
    hooks.on("get_weather", _edit("Rome"))
    hooks.on("get_weather", lambda call: seen.append(call.input.city))
    plan = _one(session, toolset).apply_hooks(hooks)
    assert (["Rome"], "Rome", OK) == (seen, plan.pending[0].input.city, plan.pending[0].arguments)


def test_first_complete_stops_the_pipeline(session: tw.Session, toolset: tw.Toolset) -> None:
    later: list[str] = []
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.Complete("cached"))
    hooks.on(None, lambda call: later.append("ran"))
    plan = _one(session, toolset).apply_hooks(hooks)
    assert ([], "cached", ()) == (later, plan.handled[0].result.content, plan.pending)


def test_complete_keeps_the_input_from_before_the_pass(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    hooks = tw.HookSet()
    hooks.on(None, _edit("Rome"))
    hooks.on(None, lambda call: tw.Complete("x"))
    plan = _one(session, toolset).apply_hooks(hooks)
    assert "Oslo" == plan.handled[0].call.input.city


def test_reject_gives_a_rejection_result(session: tw.Session, toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.Reject("not today"), name="policy")
    rejected = _one(session, toolset).apply_hooks(hooks).rejected[0]
    assert ("policy", "not today", True) == (
        rejected.source,
        tw.adapters.rejection_reason(rejected.result),
        rejected.result.is_error,
    )


def test_hook_that_raises_rejects_naming_the_hook(session: tw.Session, toolset: tw.Toolset) -> None:
    def broken(call: tw.TypedCall[Any]) -> None:
        raise RuntimeError("db down")

    hooks = tw.HookSet()
    hooks.on(None, broken, name="audit")
    rejected = _one(session, toolset).apply_hooks(hooks).rejected[0]
    assert "hook `audit` failed (RuntimeError)" == rejected.reason


def test_hook_returning_junk_rejects(session: tw.Session, toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.on(None, lambda call: 42, name="junk")
    rejected = _one(session, toolset).apply_hooks(hooks).rejected[0]
    assert (
        "hook `junk` returned int; expected RunNormally, Complete, Reject or None"
        == rejected.reason
    )


def test_hook_editing_into_an_invalid_input_rejects(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.RunNormally({"city": 3}), name="bad")
    rejected = _one(session, toolset).apply_hooks(hooks).rejected[0]
    assert rejected.reason.startswith("hook `bad` edited the input into something invalid")


def test_hook_editing_a_raw_tool_input_is_validated(session: tw.Session) -> None:
    raw = tw.raw_tool("r", "d", {"properties": {"x": {"type": "integer"}}})
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.RunNormally({"x": "nope"}), name="bad")
    rnd = _round(session, tw.Toolset("t", [raw]), ("c1", "r", '{"x":1}'))
    assert 1 == len(rnd.apply_hooks(hooks).rejected)


def test_hook_with_context_parameter_receives_the_context(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    seen: list[str] = []
    hooks = tw.HookSet()
    hooks.on(None, lambda call, ctx: seen.append(ctx.extra["user"]))
    _one(session, toolset).apply_hooks(hooks, context=tw.HookContext(extra={"user": "u1"}))
    assert ["u1"] == seen


def test_async_hook_in_the_sync_pipeline_rejects(session: tw.Session, toolset: tw.Toolset) -> None:
    async def hook(call: tw.TypedCall[Any]) -> tw.ToolDecision:
        return tw.RunNormally()

    hooks = tw.HookSet()
    hooks.on(None, hook, name="ah")
    rejected = _one(session, toolset).apply_hooks(hooks).rejected[0]
    assert "hook `ah` is async; use `await round.aapply_hooks(...)`" == rejected.reason


async def test_async_hooks_are_awaited(session: tw.Session, toolset: tw.Toolset) -> None:
    async def hook(call: tw.TypedCall[Any]) -> tw.ToolDecision:
        return tw.Reject("async no")

    hooks = tw.HookSet()
    hooks.on(None, hook)
    plan = await _one(session, toolset).aapply_hooks(hooks)
    assert "async no" == plan.rejected[0].reason


async def test_async_hook_that_raises_rejects(session: tw.Session, toolset: tw.Toolset) -> None:
    async def hook(call: tw.TypedCall[Any]) -> tw.ToolDecision:
        raise ValueError("bad")

    hooks = tw.HookSet()
    hooks.on(None, hook, name="ah")
    plan = await _one(session, toolset).aapply_hooks(hooks)
    assert "hook `ah` failed (ValueError)" == plan.rejected[0].reason


def test_hooks_keyed_by_input_type_apply_only_to_that_tool(
    session: tw.Session, toolset: tw.Toolset, search: type[BaseModel]
) -> None:
    hooks = tw.HookSet()
    hooks.on(search, lambda call: tw.Reject("no search"))
    rnd = _round(
        session, toolset, ("c1", "get_weather", OK), ("c2", "search_docs", '{"query":"q"}')
    )
    plan = rnd.apply_hooks(hooks)
    assert (["c1"], ["c2"]) == ([c.id for c in plan.pending], [r.call.id for r in plan.rejected])


def test_hooks_keyed_by_selector(session: tw.Session, toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.on(toolset.from_name("get_weather"), lambda call: tw.Reject("no"))
    assert 1 == len(_one(session, toolset).apply_hooks(hooks).rejected)


def test_hooks_keyed_by_a_plain_function(session: tw.Session) -> None:
    def lookup(key: str) -> str:
        return key

    hooks = tw.HookSet()
    hooks.on(lookup, lambda call: tw.Reject("no"))
    rnd = _round(session, tw.Toolset("t", [lookup]), ("c1", "lookup", '{"key":"k"}'))
    assert 1 == len(rnd.apply_hooks(hooks).rejected)


def test_hook_cache_does_not_mix_tools_with_the_same_name(session: tw.Session) -> None:
    class A(BaseModel):
        q: str

    class B(BaseModel):
        q: str

    tool_a = tw.tool_of(tw.tool_input(name="search")(A))
    tool_b = tw.tool_of(tw.tool_input(name="search")(B))
    hooks = tw.HookSet()
    hooks.on(A, lambda call: tw.Reject("no A"))
    hooks.decision_hooks(tool_b)
    assert 1 == len(hooks.decision_hooks(tool_a))


def test_merge_keeps_order(session: tw.Session, toolset: tw.Toolset) -> None:
    order: list[str] = []
    first, second = tw.HookSet("a"), tw.HookSet("b")
    first.on(None, lambda call: order.append("a"))
    second.on(None, lambda call: order.append("b"))
    _one(session, toolset).apply_hooks(second.merge(first))
    assert ["b", "a"] == order


def test_toolset_hooks_run_first(session: tw.Session, weather: tw.Tool[Any, Any]) -> None:
    order: list[str] = []
    inner_hooks, app_hooks = tw.HookSet(), tw.HookSet()
    inner_hooks.on(None, lambda call: order.append("inner"))
    app_hooks.on(None, lambda call: order.append("app"))
    ts = tw.Toolset("app", [tw.Toolset("pack", [weather], hooks=inner_hooks)])
    _round(session, ts, ("c1", "get_weather", OK)).apply_hooks(app_hooks)
    assert ["inner", "app"] == order


def test_hook_must_be_callable() -> None:
    with pytest.raises(tw.exceptions.HookError) as info:
        tw.HookSet().on(None, 3)
    assert "a hook must be callable, got 3 (int)" == str(info.value)


def test_decisions_are_logged(
    session: tw.Session, toolset: tw.Toolset, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.Reject("no"), name="p")
    with caplog.at_level(logging.DEBUG, logger="toolwire.tool_hook"):
        _one(session, toolset).apply_hooks(hooks)
    assert [
        ("toolwire.tool_hook", "tool=get_weather call=c1 decision=reject source=p reason=no")
    ] == [(r.name, r.getMessage()) for r in caplog.records]


# -- the plan -------------------------------------------------------------------------------


def test_plan_commit_fills_handled_rejected_and_issues_in_assistant_order(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    hooks = tw.HookSet()
    hooks.on("search_docs", lambda call: tw.Complete(["doc"]))
    rnd = _round(
        session,
        toolset,
        ("c1", "nope", "{}"),
        ("c2", "search_docs", '{"query":"q"}'),
        ("c3", "get_weather", OK),
    )
    plan = rnd.apply_hooks(hooks)
    plan.commit([plan.pending[0].complete("sunny")])
    results = session.messages[-1].results  # type: ignore[union-attr]
    assert (["c1", "c2", "c3"], '["doc"]') == ([r.call_id for r in results], results[1].content)


def test_plan_apply_hooks_again_rehooks_only_pending(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    seen: list[str] = []
    first, second = tw.HookSet(), tw.HookSet()
    first.on("search_docs", lambda call: tw.Complete([]))
    second.on(None, lambda call: seen.append(call.id))
    rnd = _round(
        session, toolset, ("c1", "search_docs", '{"query":"q"}'), ("c2", "get_weather", OK)
    )
    plan = rnd.apply_hooks(first).apply_hooks(second)
    assert (["c2"], 1) == (seen, len(plan.handled))


def test_plan_continue_suggestion_commit_when_nothing_pending(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    hooks = tw.HookSet()
    hooks.on(None, lambda call: tw.Reject("no"))
    assert (
        tw.adapters.ContinueSuggestion.COMMIT
        == _one(session, toolset).apply_hooks(hooks).continue_suggestion
    )


def test_plan_issues_come_from_the_round(session: tw.Session, toolset: tw.Toolset) -> None:
    rnd = _round(session, toolset, ("c1", "nope", "{}"))
    assert rnd.issues == rnd.apply_hooks().issues


def test_plan_commit_missing_pending_result_is_a_commit_error(
    session: tw.Session, toolset: tw.Toolset
) -> None:
    with pytest.raises(tw.exceptions.MissingToolResultError):
        _one(session, toolset).apply_hooks().commit()


def test_plan_discard(session: tw.Session, toolset: tw.Toolset) -> None:
    _one(session, toolset).apply_hooks().discard()
    assert 1 == len(session)


# -- description and availability hooks -----------------------------------------------------


def test_description_hooks_thread(toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.describe("get_weather", lambda tool, text, ctx: text + " One.")
    hooks.describe("get_weather", lambda tool, text, ctx: text + " Two.")
    turn = tw.resolve_turn(toolset, hooks=[hooks])
    assert "Get the weather. One. Two." == turn.tools[0].description


def test_description_override_applies_after_hooks(toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.describe(None, lambda tool, text, ctx: "hooked")
    turn = tw.resolve_turn(toolset, hooks=[hooks], description_overrides=[("get_weather", "mine")])
    assert ["mine", "hooked"] == [t.description for t in turn.tools]


def test_description_hook_returning_junk_raises(toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.describe(None, lambda tool, text, ctx: 3, name="d")
    with pytest.raises(tw.exceptions.HookError) as info:
        tw.resolve_turn(toolset, hooks=[hooks])
    assert "description hook `d` returned int for `get_weather`; expected a string or None" == str(
        info.value
    )


def test_availability_hook_hides_a_tool(toolset: tw.Toolset) -> None:
    hooks = tw.HookSet()
    hooks.hide(None, lambda tool, ctx: tool.name != "search_docs")
    assert ["get_weather"] == [t.name for t in tw.resolve_turn(toolset, hooks=[hooks]).tools]


def test_broken_availability_hook_hides_the_tool(toolset: tw.Toolset) -> None:
    def broken(tool: Any, ctx: Any) -> bool:
        raise RuntimeError("x")

    hooks = tw.HookSet()
    hooks.hide(None, broken)
    assert () == tw.resolve_turn(toolset, hooks=[hooks]).tools


def test_a_hook_that_hides_a_tool_saying_why_answers_its_call_with_the_reason(
    toolset: tw.Toolset,
) -> None:
    from toolwire.adapters import AssistantReply, decode_reply

    hooks = tw.HookSet()
    hooks.hide(
        None,
        lambda tool, ctx: (
            tw.Hidden("docs are closed today") if tool.name == "search_docs" else True
        ),
    )
    turn = tw.resolve_turn(toolset, hooks=[hooks], availability=tw.Availability.all())
    assert ["get_weather"] == [t.name for t in turn.tools]
    assert {"search_docs": "docs are closed today"} == dict(turn.hidden_why)
    call = tw.ToolCall("1", "search_docs", '{"query": "x"}')
    outcome = decode_reply(tw.Session().add_user("go"), turn, AssistantReply(tool_calls=(call,)))
    (issue,) = outcome.round.issues
    assert "not available in this round (docs are closed today)" in issue.reason
    # Hidden is falsy: code that reads a verdict as a bool hides it too; its reason is text.
    assert not tw.Hidden("x")
    with pytest.raises(TypeError):
        tw.Hidden(5)  # type: ignore[arg-type]


def test_a_hook_keyed_by_name_still_applies_under_a_prefix_mount() -> None:
    from toolwire import HookSet, Reject, Session, ToolCall, Toolset, resolve_turn, tool_fn
    from toolwire.adapters import AssistantReply, decode_reply

    @tool_fn
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    pack_hooks = HookSet()
    pack_hooks.on("fetch", lambda call: Reject("no fetching"))
    app = Toolset("app").add(Toolset("pack", [fetch], hooks=pack_hooks), prefix="web_")
    reply = AssistantReply(tool_calls=(ToolCall("1", "web_fetch", '{"url": "x"}'),))
    outcome = decode_reply(Session().add_user("go"), resolve_turn(app), reply)
    plan = outcome.round.apply_hooks()
    assert ["no fetching"] == [r.reason for r in plan.rejected]


def test_a_description_hook_that_raises_keeps_the_description() -> None:
    from toolwire import HookSet, Toolset, resolve_turn, tool_fn

    @tool_fn
    def ping() -> str:
        """Ping."""
        return "pong"

    hooks = HookSet()

    def broken(tool, description, ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    hooks.describe(ping, broken)
    turn = resolve_turn(Toolset("t", [ping]), hooks=[hooks])
    assert "Ping." == turn.tools[0].description


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def test_a_reject_whose_reason_cannot_be_text_still_rejects() -> None:
    # Attack (#11.11): a Reject whose reason could not be turned into text crashed the turn.
    @tw.tool_fn
    def act(x: int) -> str:
        """Act."""
        return "ran"

    hooks = tw.HookSet()
    hooks.on(act, lambda call: tw.Reject(_Unprintable()))  # type: ignore[arg-type]
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [act], hooks=hooks))
    plan = needs_tools(session, turn, ("c1", "act", '{"x": 1}')).apply_hooks()
    assert len(plan.rejected) == 1
    assert "its reason could not be shown: RuntimeError" in plan.rejected[0].reason
    plan.commit()
    tw.Session.from_json(session.to_json())


def test_a_denial_whose_reason_cannot_be_text_still_denies() -> None:
    @tw.tool_fn(effect="destructive")
    def wipe(x: int) -> str:
        """Wipe."""
        return "wiped"

    deny = tw.Deny(_Unprintable())  # type: ignore[arg-type]
    ex = tw.Executor(tools=[wipe], approval=lambda r: deny, plugins=False)
    result = ex.execute(tw.ToolCall("c1", "wipe", '{"x": 1}'))
    assert result.is_error
    assert "its reason could not be shown" in result.content


def test_hide_takes_its_arguments_in_the_order_of_on_and_describe() -> None:
    # Attack (#11.29): hide(fn, *, target) was the opposite order of on(target, fn); written
    # like the others it registered the tool as the hook, which failed and (fail closed)
    # hid every tool.
    @tw.tool_fn
    def keep(x: int) -> str:
        """Keep."""
        return "k"

    @tw.tool_fn
    def drop(x: int) -> str:
        """Drop."""
        return "d"

    hooks = tw.HookSet()
    hooks.hide(drop, lambda tool, ctx: False)
    turn = tw.resolve_turn(tw.Toolset("t", [keep, drop], hooks=hooks))
    assert [t.name for t in turn.tools] == ["keep"]


def test_the_0_1_hide_fn_form_still_works_with_a_warning() -> None:
    @tw.tool_fn
    def keep(x: int) -> str:
        """Keep."""
        return "k"

    hooks = tw.HookSet()
    with pytest.warns(DeprecationWarning, match=r"hide\(fn\) is deprecated"):
        hooks.hide(lambda tool, ctx: False)
    assert tw.resolve_turn(tw.Toolset("t", [keep], hooks=hooks)).tools == ()


@pytest.mark.parametrize("exc", [SystemExit(2), GeneratorExit()])
def test_a_hook_raising_system_exit_rejects_the_call(exc: BaseException) -> None:
    @tw.tool_fn
    def act(x: int) -> str:
        """Act."""
        return "ran"

    def hook(call: Any) -> None:
        raise exc

    hooks = tw.HookSet()
    hooks.on(act, hook)
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [act], hooks=hooks))
    plan = needs_tools(session, turn, ("c1", "act", '{"x": 1}')).apply_hooks()
    assert len(plan.rejected) == 1
    assert f"failed ({type(exc).__name__})" in plan.rejected[0].reason


def test_the_debug_log_never_holds_argument_values(caplog: pytest.LogCaptureFixture) -> None:
    # Attack (#11.25): the toolwire.tool_hook DEBUG log wrote input=... with arguments a
    # policy redacts.
    import logging

    @tw.tool_fn
    def login(password: str) -> str:
        """Log in."""
        return "ok"

    hooks = tw.HookSet()
    hooks.on(login, lambda call: None)
    caplog.set_level(logging.DEBUG, logger="toolwire.tool_hook")
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [login], hooks=hooks))
    needs_tools(session, turn, ("c1", "login", '{"password": "hunter2"}')).apply_hooks()
    assert "decision=run" in caplog.text
    assert "hunter2" not in caplog.text


# -- the chain cache: kept between rounds, renewed when a set changes --------------------------


def test_a_hook_added_after_a_round_applies_to_the_next_round(toolset: tw.Toolset) -> None:
    hooks = tw.HookSet("late")
    first = _one(tw.Session().add_user("hi"), toolset).apply_hooks(hooks)
    assert [c.id for c in first.pending] == ["c1"]
    hooks.on(None, lambda call: tw.Reject("added later"))
    second = _one(tw.Session().add_user("hi"), toolset).apply_hooks(hooks)
    assert second.pending == ()
    assert [r.reason for r in second.rejected] == ["added later"]


def test_a_set_extended_or_turned_guard_gets_a_new_chain(toolset: tw.Toolset) -> None:
    from toolwire._decisions import chain_cache

    hooks = tw.HookSet("policy")
    hooks.on(None, lambda call: None)
    before = chain_cache((hooks,))
    assert chain_cache((hooks,)) is before  # the same, unchanged set: the same cache
    hooks.guard = True
    assert chain_cache((hooks,)) is not before
    guarded = chain_cache((hooks,))
    hooks.extend(tw.HookSet("more"))
    assert chain_cache((hooks,)) is not guarded
    # Another set never shares a cache, even one made the same way.
    twin = tw.HookSet("policy", guard=True)
    assert chain_cache((twin,)) is not chain_cache((hooks,))


def test_the_chain_cache_is_bounded() -> None:
    from toolwire import _decisions

    for _ in range(_decisions._CHAINS_MAX + 10):
        _decisions.chain_cache((tw.HookSet(),))
    assert len(_decisions._CHAINS) <= _decisions._CHAINS_MAX


def test_a_round_without_a_context_shares_an_empty_read_only_one(toolset: tw.Toolset) -> None:
    # One context per round cost as much as a hook; the shared one cannot carry state from
    # one round into the next: writing into its extra is a failing hook, not a leak.
    seen: list[Any] = []

    def scribble(call: tw.TypedCall[Any], context: tw.HookContext) -> None:
        seen.append(dict(context.extra))
        context.extra["user"] = "mallory"  # type: ignore[index]

    hooks = tw.HookSet("scribbler")
    hooks.on(None, scribble)
    for _ in range(2):
        plan = _one(tw.Session().add_user("hi"), toolset).apply_hooks(hooks)
        assert plan.pending == ()
        assert ["c1"] == [r.call.id for r in plan.rejected]
    assert [{}, {}] == seen
