"""A loop you write yourself cannot run or commit a call the installed policy has not decided.

The README's lowest-level loop (``resolve_turn`` -> ``run_turn`` -> ``call.run()``
-> ``round.commit``) ran a call an installed policy rejected, and ignored the
application's own ``Toolset(hooks=...)``. Now a round of a turn resolved with
``plugins=True`` (the default: the default host), or with a host, is decided by
the installed policies and then the turn's hooks before ``call.run()`` runs a
call or ``round.commit`` writes one; each call is decided once, whichever path
decides it. ``plugins=False`` drops tool packs, never a policy.
"""

from __future__ import annotations

from typing import Any

import pytest

import toolwire as tw
from toolwire import hookimpl
from toolwire._plugins import PluginHost
from toolwire.adapters import AssistantReply, decode_reply
from toolwire.exceptions import PolicyError
from toolwire.providers.test import TestProvider

RAN: list[str] = []


@tw.tool_fn
def lookup(key: str) -> str:
    """Look a key up."""
    RAN.append(key)
    return f"secret-{key}"


@tw.tool_fn
def ping() -> str:
    """Ping."""
    RAN.append("ping")
    return "pong"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


class NoLookups:
    """The organisation's policy: no lookups; everything else runs. Counts its decisions."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
        self.seen.append(call.id)
        return tw.Reject("lookups are off today") if call.name == "lookup" else None


class Inert:
    toolwire_inert = True

    @hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
        raise AssertionError("an inert plugin's hooks are left out")

    @hookimpl
    def toolwire_tool_result(self, call: Any, result: Any, context: Any) -> Any:
        raise AssertionError("an inert plugin's result hook is left out too")


def _host(policy: object) -> PluginHost:
    host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)
    host.register(policy, "corp", kind="policy")
    return host


TOOLS = tw.Toolset("app", [lookup, ping])
CALLS = (tw.ToolCall("c1", "lookup", '{"key": "k"}'), tw.ToolCall("c2", "ping", "{}"))


def _round(session: tw.Session, turn: tw.adapters.ResolvedTurn) -> tw.ToolRound:
    outcome = decode_reply(session, turn, AssistantReply(tool_calls=CALLS))
    assert isinstance(outcome, tw.NeedsTools)
    return outcome.round


def _contents(session: tw.Session) -> list[str]:
    last = session.messages[-1]
    assert isinstance(last, tw.ToolResultsMessage)
    return [r.content for r in last.results]


def test_the_readme_loop_does_not_run_a_call_the_policy_rejects() -> None:
    # The reproducer: this loop ran `lookup` although the installed policy rejects it.
    policy = NoLookups()
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(policy)))
    results, refused = [], []
    for call in round_.calls:
        try:
            results.append(call.complete(call.run()))
        except PolicyError as exc:
            refused.append(str(exc))
    assert ["ping"] == RAN
    assert ["lookups are off today"] == [r[r.index(": ") + 2 : r.index(". It")] for r in refused]
    round_.commit(results)
    [rejected, ran] = session.messages[-1].results  # type: ignore[union-attr]
    assert "lookups are off today" == tw.adapters.rejection_reason(rejected)
    assert "pong" == ran.content
    assert ["c1", "c2"] == policy.seen  # each call decided once


def test_an_output_for_a_rejected_call_is_not_committed_and_nothing_is_written() -> None:
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(NoLookups())))
    before = len(session)
    faked = [c.complete("secret-made-up") for c in round_.calls]
    with pytest.raises(PolicyError, match=r"`c1` .* was rejected by .*lookups are off today"):
        round_.commit(faked)
    assert before == len(session)
    # An error result for it (an executor's refusal, say) is an answer the policy allows.
    round_.commit([round_.calls[0].error("not run"), round_.calls[1].complete("pong")])
    assert ["not run", "pong"] == _contents(session)


def test_the_default_host_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    host = _host(NoLookups())
    monkeypatch.setattr(tw, "_default_policies", lambda: host.hook_sets()[0])
    round_ = _round(tw.Session().add_user("go"), tw.resolve_turn(TOOLS))
    with pytest.raises(PolicyError):
        round_.calls[0].run()
    assert [] == RAN


def test_plugins_false_drops_tool_packs_never_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Attack (#25.2): plugins=False, given by the README as the way to drop auto-joined
    # tool packs, switched the organisation's policy off silently.
    host = _host(NoLookups())
    monkeypatch.setattr(tw, "_default_policies", lambda: host.hook_sets()[0])
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=False))
    with pytest.raises(PolicyError, match="lookups are off today"):
        round_.calls[0].run()
    round_.commit([round_.calls[1].complete(round_.calls[1].run())])
    assert (["ping"], "lookups are off today") == (
        RAN,
        tw.adapters.rejection_reason(session.messages[-1].results[0]),  # type: ignore[union-attr]
    )


class Hider:
    """A policy that hides `lookup` (as toolwire-policy hides a denied tool)."""

    @hookimpl
    def toolwire_tool_availability(self, tool: Any) -> bool | None:
        return False if tool.name == "lookup" else None


def test_the_readme_loop_never_offers_a_tool_the_policy_hides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Attack (#25.10): resolve_turn(tools) offered a denied tool (rejected only when run).
    host = _host(Hider())
    monkeypatch.setattr(tw, "_default_policies", lambda: host.hook_sets()[0])
    for plugins in (True, False, host):
        turn = tw.resolve_turn(TOOLS, plugins=plugins)
        assert ["ping"] == [t.name for t in turn.tools], plugins
        assert {"lookup": "plugin:corp"} == dict(turn.hidden)


def test_a_policy_is_turned_off_only_by_its_own_switch_and_that_is_audited() -> None:
    events: list[tuple[str, str]] = []

    class Auditor(NoLookups):
        @hookimpl
        def toolwire_audit(self, event: tw.adapters.AuditEvent) -> None:
            events.append((event.kind, event.source))

    host = PluginHost(autoload=False, disable_policies=["corp"], policy_required=False)
    host.register(Auditor(), "corp", kind="policy")
    host.discover()
    [record] = [r for r in host.plugins if r.name == "corp"]
    assert ("disabled", "turned off by TOOLWIRE_DISABLE_POLICIES") == (
        record.status,
        record.reason[: len("turned off by TOOLWIRE_DISABLE_POLICIES")],
    )
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=host))
    assert "secret-k" == round_.calls[0].run()  # off: it decides nothing
    assert [("policies_off", "TOOLWIRE_DISABLE_POLICIES")] == events


def test_turning_policies_off_is_refused_where_a_policy_is_required() -> None:
    with pytest.raises(PolicyError, match=r"cannot be turned off \(corp\) while the organisation"):
        PluginHost(autoload=False, disable_policies=["corp"], policy_required=True)


def test_a_required_policy_that_is_missing_blocks_every_call() -> None:
    host = PluginHost(autoload=False, disable_policies=False, policy_required=True)
    host.discover()
    assert host.blocked
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=host))
    with pytest.raises(PolicyError, match="no organisation policy is in force"):
        round_.calls[1].run()
    host.register(NoLookups(), "corp", kind="policy")
    assert () == host.blocked


def test_the_applications_own_toolset_hooks_decide_call_run_too() -> None:
    hooks = tw.HookSet()
    hooks.on(ping, lambda call: tw.Complete("cached pong"))
    hooks.on(lookup, lambda call: tw.RunNormally(type(call.input)(key="edited")))
    session = tw.Session().add_user("go")
    toolset = tw.Toolset("app", [lookup, ping], hooks=hooks)
    round_ = _round(session, tw.resolve_turn(toolset, plugins=False))
    outputs = [c.run() for c in round_.calls]
    assert (["secret-edited", "cached pong"], ["edited"]) == (outputs, RAN)
    round_.commit([round_.calls[0].complete(outputs[0])])  # the hook's answer is written
    assert ["secret-edited", "cached pong"] == _contents(session)


def test_apply_hooks_and_run_decide_each_call_once() -> None:
    policy = NoLookups()
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(policy)))
    round_.calls[1].run()
    plan = round_.apply_hooks()
    assert (["c2"], ["c1"]) == ([c.id for c in plan.pending], [r.call.id for r in plan.rejected])
    plan.commit([plan.pending[0].complete("pong")])
    assert ["c2", "c1"] == policy.seen


def test_apply_hooks_applies_the_installed_policy_even_when_not_passed() -> None:
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(NoLookups())))
    plan = round_.apply_hooks()  # no hooks named: the policy still decides
    assert ["c1"] == [r.call.id for r in plan.rejected]


async def test_arun_awaits_an_async_policy() -> None:
    class AsyncNo:
        @hookimpl
        async def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Reject("async no")

    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(AsyncNo())))
    with pytest.raises(PolicyError, match="async no"):
        await round_.calls[1].arun()
    # A sync run cannot await the hook: it fails closed instead of running unjudged.
    with pytest.raises(PolicyError, match="async"):
        round_.calls[0].run()
    assert [] == RAN


def test_the_executor_decides_a_bare_round_once() -> None:
    policy = NoLookups()
    host = _host(policy)
    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=host))
    tw.Executor(plugins=host).execute_and_commit(round_)
    assert (["ping"], ["c1", "c2"]) == (RAN, policy.seen)
    assert "lookups are off today" == tw.adapters.rejection_reason(session.messages[-1].results[0])  # type: ignore[union-attr]


def test_the_executor_decides_a_call_of_a_round_given_alone() -> None:
    policy = NoLookups()
    host = _host(policy)
    round_ = _round(tw.Session().add_user("go"), tw.resolve_turn(TOOLS, plugins=host))
    executor = tw.Executor(plugins=host)
    result = executor.execute(round_.calls[0])
    assert result.is_error
    assert (["c1"], []) == (policy.seen, RAN)
    with pytest.raises(PolicyError):  # the same call: its decision is kept
        round_.calls[0].run()
    assert ["c1"] == policy.seen


def test_the_agent_decides_each_call_once() -> None:
    policy = NoLookups()
    provider = TestProvider(
        script=[
            {"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}, {"name": "ping"}]},
            {"text": "done"},
        ]
    )
    session = tw.Session().add_user("go")
    result = tw.Agent(provider, TOOLS, plugins=_host(policy)).run(session)
    assert "finished" == result.status
    assert (["ping"], 2) == (RAN, len(policy.seen))


def test_an_inert_plugin_adds_no_hooks_so_a_round_has_no_guard() -> None:
    host = _host(Inert())
    assert not host.hook_sets()[0]
    round_ = _round(tw.Session().add_user("go"), tw.resolve_turn(TOOLS, plugins=host))
    assert round_._guard is None
    assert "pong" == round_.calls[1].run()
    # Nor a result pipeline: the executor runs no result hook per call.
    assert host._result_pipeline() == ()
    executor = tw.Executor(plugins=host)
    assert "pong" == executor.execute(round_.calls[1]).content


def test_a_host_whose_policy_failed_to_load_lets_no_call_run() -> None:
    class Broken:
        @hookimpl
        def toolwire_tool_decision(self, call: Any, nonsense: Any) -> None:
            return None

    session = tw.Session().add_user("go")
    round_ = _round(session, tw.resolve_turn(TOOLS, plugins=_host(Broken())))
    for call in round_.calls:
        with pytest.raises(PolicyError):
            call.run()
    round_.commit([])
    assert [] == RAN
    assert all(r.is_error for r in session.messages[-1].results)  # type: ignore[union-attr]


def test_plugins_must_be_a_bool_or_a_host() -> None:
    with pytest.raises(tw.UsageError, match="plugins must be True, False or a PluginHost"):
        tw.resolve_turn(TOOLS, plugins="yes")


def test_the_host_says_which_plugins_are_inert() -> None:
    inert, active = _host(Inert()), _host(NoLookups())
    (inert_record,) = [r for r in inert.plugins if r.name == "corp"]
    (active_record,) = [r for r in active.plugins if r.name == "corp"]
    assert inert.is_inert(inert_record)
    assert not active.is_inert(active_record)


def test_the_executor_sees_a_hook_added_to_the_policy_set_after_a_call() -> None:
    # The executor cached each tool's policy chain for as long as the host's policy set
    # was the same object, so a hook added to that set in place was never run on a
    # direct call. It now uses the chain cache the rounds use, renewed on every change.
    host = _host(NoLookups())
    executor = tw.Executor(tools=TOOLS, plugins=host)
    ping_call = tw.ToolCall("c1", "ping", "{}")
    assert "pong" == executor.execute(ping_call).content
    host.hook_sets()[0].on("ping", lambda call: tw.Reject("no pings after lunch"))
    result = executor.execute(tw.ToolCall("c2", "ping", "{}"))
    assert result.is_error
    assert "no pings after lunch" in result.content
