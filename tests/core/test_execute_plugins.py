"""The executor and the agent apply the plugin host by default: policies fail closed."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire as tw
from toolwire import hookimpl
from toolwire._plugins import PluginHost
from toolwire.providers.test import TestProvider


@tw.tool_fn
def lookup(key: str) -> str:
    """Look a key up."""
    return f"secret-{key}"


def _host() -> PluginHost:
    return PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)


class BrokenPolicy:
    @hookimpl
    def toolwire_tool_decision(self, call: Any, nonsense: Any) -> None:
        return None


class Redactor:
    @hookimpl
    def toolwire_tool_result(self, call: Any, result: Any, context: Any) -> Any:
        return result.replace(content=result.content.replace("secret", "[redacted]"))


class NoLookups:
    @hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
        return tw.Reject("lookups are off today")


def _call() -> tw.TypedCall[Any]:
    return tw.TypedCall(
        tw.ToolCall("c1", "lookup", '{"key": "k"}'), lookup, lookup.validate_json('{"key": "k"}')
    )


def test_an_executor_on_a_host_with_a_failed_policy_runs_nothing() -> None:
    host = _host()
    host.register(BrokenPolicy(), "corp", kind="policy")
    result = tw.Executor(plugins=host).execute(_call())
    assert result.is_error
    reason = tw.adapters.rejection_reason(result)
    assert reason is not None
    assert reason.startswith("tool `lookup` was not run: policy `corp` failed to load")


def test_the_host_result_hooks_see_every_result_the_executor_makes() -> None:
    host = _host()
    host.register(Redactor(), "redactor")
    assert "[redacted]-k" == tw.Executor(plugins=host).execute(_call()).content


def test_plugins_false_leaves_results_alone() -> None:
    host = _host()
    host.register(Redactor(), "redactor")
    assert "secret-k" == tw.Executor(plugins=False).execute(_call()).content


def test_results_a_hook_answered_pass_the_result_hooks_too() -> None:
    host = _host()
    host.register(Redactor(), "redactor")
    hooks = tw.HookSet()
    hooks.on(lookup, lambda call: tw.Complete("secret from cache"))
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [lookup]), hooks=[hooks])
    reply = tw.adapters.AssistantReply(tool_calls=(tw.ToolCall("c1", "lookup", '{"key": "k"}'),))
    outcome = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    tw.Executor(plugins=host).execute_and_commit(outcome.round.apply_hooks())
    assert "[redacted] from cache" == session.messages[-1].results[0].content


def test_the_agent_applies_the_host_policies_by_default() -> None:
    host = _host()
    host.register(NoLookups(), "corp", kind="policy")
    provider = TestProvider(
        script=[{"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}, {"text": "done"}]
    )
    session = tw.Session().add_user("look up k")
    result = tw.Agent(provider, tw.Toolset("t", [lookup]), plugins=host).run(session)
    assert "finished" == result.status
    assert "lookups are off today" == tw.adapters.rejection_reason(session.messages[-2].results[0])


def test_the_agent_without_plugins_runs_the_tool() -> None:
    host = _host()
    host.register(NoLookups(), "corp", kind="policy")
    provider = TestProvider(
        script=[{"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}, {"text": "done"}]
    )
    session = tw.Session().add_user("look up k")
    tw.Agent(provider, tw.Toolset("t", [lookup]), plugins=False).run(session)
    assert "secret-k" == session.messages[-2].results[0].content


def test_plugins_must_be_a_bool_or_a_host() -> None:
    with pytest.raises(TypeError) as info:
        tw.Executor(plugins="corp")
    assert "plugins must be True, False or a toolwire.PluginHost, got str" == str(info.value)


def test_a_policy_registered_after_the_executor_was_made_still_sees_results() -> None:
    host = _host()
    executor = tw.Executor(plugins=host)
    host.register(Redactor(), "redactor")
    assert "[redacted]-k" == executor.execute(_call()).content


def test_the_policy_view_sees_a_policy_registered_after_it_was_made() -> None:
    # The policy-only view (plugins=False on a host) works out the policies' result hooks
    # once per change of the host's pipeline, not once per result: a change still counts.
    from toolwire._plugins.policy_host import PolicyHost

    host = _host()
    view = PolicyHost(host)
    assert "secret-k" == tw.Executor(plugins=view).execute(_call()).content
    host.register(Redactor(), "pack")  # a tool pack's hook: not the policies'
    assert "secret-k" == tw.Executor(plugins=view).execute(_call()).content
    host.register(Redactor(), "corp", kind="policy")
    assert "[redacted]-k" == tw.Executor(plugins=view).execute(_call()).content


def test_a_policy_registered_after_the_agent_was_made_still_decides() -> None:
    host = _host()
    provider = TestProvider(
        script=[{"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}, {"text": "ok"}]
    )
    agent = tw.Agent(provider, tw.Toolset("t", [lookup]), plugins=host)
    host.register(NoLookups(), "corp", kind="policy")
    session = tw.Session().add_user("look up k")
    agent.run(session)
    assert "lookups are off today" == tw.adapters.rejection_reason(session.messages[-2].results[0])


def test_host_sets_passed_explicitly_are_not_applied_twice() -> None:
    seen: list[str] = []

    class Counting:
        @hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> None:
            seen.append(call.id)

    host = _host()
    host.register(Counting(), "corp", kind="policy")
    provider = TestProvider(
        script=[{"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}, {"text": "ok"}]
    )
    agent = tw.Agent(provider, tw.Toolset("t", [lookup]), plugins=host, hooks=host.hook_sets())
    agent.run(tw.Session().add_user("look up k"))
    assert 1 == len(seen)


def test_an_approver_cannot_rewrite_arguments_past_a_policy() -> None:
    class NoSecretKeys:
        @hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Reject("secret keys are off limits") if call.input.key == "root" else None

    host = _host()
    host.register(NoSecretKeys(), "corp", kind="policy")
    executor = tw.Executor(plugins=host, approval=lambda request: tw.Modify({"key": "root"}))
    result = executor.execute(_call())
    assert result.is_error
    assert (
        "the approver's arguments for tool `lookup` were rejected: secret keys are off limits"
        == tw.adapters.rejection_reason(result)
    )


def test_run_plan_passes_results_hooks_answered_through_the_result_hooks() -> None:
    host = _host()
    host.register(Redactor(), "redactor")
    hooks = tw.HookSet()
    hooks.on(lookup, lambda call: tw.Complete("secret from cache"))
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [lookup]), hooks=[hooks])
    reply = tw.adapters.AssistantReply(tool_calls=(tw.ToolCall("c1", "lookup", '{"key": "k"}'),))
    outcome = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    plan = outcome.round.apply_hooks()
    executor = tw.Executor(plugins=host)
    plan.commit(executor.run_plan(plan))
    executor.run_plan(plan)  # observed once: running it again does not redact twice
    assert "[redacted] from cache" == session.messages[-1].results[0].content


def test_the_executor_applies_installed_policies_to_calls_no_hook_has_seen() -> None:
    # The README says installed policies apply to the Executor by default: a call given
    # straight to execute() (or a bare round's calls) is judged by them before it runs.
    ran: list[str] = []

    @tw.tool_fn
    def drop_table(name: str) -> str:
        """Drop a table."""
        ran.append(name)
        return "dropped"

    class NoDrops:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any) -> Any:
            return tw.Reject("no dropping tables") if call.name == "drop_table" else None

    host = tw.PluginHost(autoload=False)
    host.register(NoDrops(), "nodrops", kind="policy")
    executor = tw.Executor(tools=[drop_table], plugins=host)
    result = executor.execute(tw.ToolCall("c1", "drop_table", '{"name": "users"}'))
    assert result.is_error
    assert "rejected by a policy: no dropping tables" in result.content
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("t", [drop_table]))  # no hooks passed: a bare round
    round_ = tw.adapters.decode_reply(
        session,
        turn,
        tw.adapters.AssistantReply(
            "", (tw.ToolCall("c2", "drop_table", '{"name": "orders"}'),), "tool_calls"
        ),
    )
    assert isinstance(round_, tw.NeedsTools)
    run = executor.execute_and_commit(round_.round)
    assert run.committed
    assert run.results[0].is_error
    assert ran == []
    # Opting out is explicit and visible.
    assert (
        not tw.Executor(tools=[drop_table], plugins=False)
        .execute(tw.ToolCall("c3", "drop_table", '{"name": "tmp"}'))
        .is_error
    )
    assert ran == ["tmp"]


def test_a_policys_rewrite_runs_rewritten_when_the_executor_decides_a_typed_call() -> None:
    # Found building #41: a TypedCall given to execute() (no round's hooks) was judged by
    # the host's policies as guards only: a policy that rewrote the input (a constraint
    # forcing `dry_run`) was let through, and the tool ran with the input it had rewritten
    # away.
    ran: list[bool] = []

    @tw.tool_fn(effect="destructive")
    def purge(dry_run: bool = False) -> str:
        """Purge the cache."""
        ran.append(dry_run)
        return "purged" if not dry_run else "would purge"

    class ForceDryRun:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.RunNormally({"dry_run": True})

    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(ForceDryRun(), "corp", kind="policy")
    call = tw.ToolCall("c1", "purge", '{"dry_run": false}')
    typed = tw.TypedCall(call, purge, purge.validate_json(call.arguments))
    result = tw.Executor(plugins=host).execute(typed)
    assert ("would purge", [True]) == (result.content, ran)
