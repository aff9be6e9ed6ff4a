"""The plugin host in-process: a fresh host per test, autoload off, inline plugin classes."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import time
import warnings
from typing import Any

import pytest

import toolwire as tw
from toolwire import hookimpl
from toolwire._plugins import PluginHost
from toolwire._plugins.policy_host import PolicyHost
from toolwire.exceptions import PluginError


@pytest.fixture
def host() -> PluginHost:
    return PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)


@pytest.fixture
def strict_host() -> PluginHost:
    return PluginHost(autoload=False, strict=True, allow=None, deny=(), hook_timeout=5.0)


@tw.tool_fn
def echo(text: str) -> str:
    """Say it back."""
    return text


@tw.tool_fn(effect="destructive")
def wipe(path: str) -> str:
    """Wipe a path."""
    return f"wiped {path}"


class Pack:
    """A tool pack contributing `echo` and `wipe`."""

    @hookimpl
    def toolwire_register_toolsets(self, register: Any) -> None:
        register(tw.Toolset("basics", [echo, wipe]))


def _round(
    host: PluginHost,
    name: str = "echo",
    args: str = '{"text":"hi"}',
    *,
    app_hooks: tuple[tw.HookSet, ...] = (),
    toolset: tw.Toolset | None = None,
) -> tw.ToolRound:
    toolset = toolset if toolset is not None else host.assemble()
    turn = tw.resolve_turn(
        toolset, availability=tw.Availability.all(), hooks=[*host.hook_sets(), *app_hooks]
    )
    reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", name, args),), "tool_calls")
    out = tw.adapters.decode_reply(tw.Session(), turn, reply)
    assert isinstance(out, tw.NeedsTools)
    return out.round


# -- the public surface ---------------------------------------------------------------


def test_importing_toolwire_loads_neither_pluggy_nor_metadata() -> None:
    code = (
        "import sys, toolwire; "
        "print(sorted(m for m in ('pluggy', 'importlib_metadata', 'toolwire._plugins') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == out.stdout.strip()


def test_hookimpl_is_the_toolwire_marker() -> None:
    from toolwire.hookspecs import hookimpl as spec_marker

    assert spec_marker is tw.hookimpl
    assert "toolwire" == tw.hookimpl.project_name


def test_get_host_is_created_once() -> None:
    assert tw.get_host() is tw.get_host()


# -- one test per hook ------------------------------------------------------------------


def test_toolwire_register_toolsets(host: PluginHost) -> None:
    class OffPack:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            register(tw.Toolset("more", [echo]), off=True, prefix="x_")

    host.register(Pack(), "pack")
    host.register(OffPack(), "offpack")
    app = tw.Toolset("app", [tw.tool_fn(lambda n: n, name="ident", description="Identity.")])
    toolset = host.assemble(app)
    assert ["ident", "x_echo", "echo", "wipe"] == [t.name for t in toolset.tools()]
    assert "app/app" == toolset.source("ident")
    assert "app/pack/basics" == toolset.source("echo")
    assert [False, True, False, False] == [toolset.is_off(t.name) for t in toolset.tools()]


def test_toolwire_register_providers(host: PluginHost) -> None:
    class Mine(tw.adapters.Provider):
        name = "mine"
        default_model = "m0"

        def generate(
            self, session: tw.Session, turn: tw.adapters.ResolvedTurn
        ) -> tw.adapters.AssistantReply:
            return tw.adapters.AssistantReply("hello")

    class Plugin:
        @hookimpl
        def toolwire_register_providers(self, register: Any) -> None:
            register("mine", Mine)

    host.register(Plugin(), "mine-plugin", kind="provider")
    provider = host.provider("mine", model="m1")
    assert (Mine, "m1") == (type(provider), provider.model)
    assert ("mine", "test") == host.providers()


def test_toolwire_register_backends(host: PluginHost) -> None:
    class Here(tw.adapters.ToolBackend):
        name = "here"

        def __init__(self, **options: Any) -> None:
            self.options = options

        async def run(self, call: tw.adapters.BackendCall) -> Any:
            return call.fn(**call.kwargs)

    class Plugin:
        @hookimpl
        def toolwire_register_backends(self, register: Any) -> None:
            register("here", Here)

    host.register(Plugin(), "here-plugin", kind="backend")
    assert ("here",) == host.backends()
    shared = host.backend("here")
    assert shared is host.backend("here")  # one per host, for executors resolved by name
    own = host.backend("here", workers=2)
    assert own is not shared
    assert {"workers": 2} == own.options
    with pytest.raises(PluginError, match=r"no executor backend named `hre`.*did you mean `here`"):
        host.backend("hre")


def test_a_backend_plugin_that_registers_badly_is_skipped(host: PluginHost) -> None:
    class Bad:
        @hookimpl
        def toolwire_register_backends(self, register: Any) -> None:
            register("inprocess", object)

    class NotABackend:
        @hookimpl
        def toolwire_register_backends(self, register: Any) -> None:
            register("odd", lambda: object())

    host.register(Bad(), "bad", kind="backend")
    host.register(NotABackend(), "odd-plugin", kind="backend")
    assert ("odd",) == host.backends()
    assert any("must match" in r.reason for r in host.failures)
    with pytest.raises(PluginError, match=r"returned object; expected a toolwire\.ToolBackend"):
        host.backend("odd")


def test_toolwire_tool_decision(host: PluginHost) -> None:
    class Policy:
        @hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Reject("no wiping") if call.name == "wipe" else None

    host.register(Pack(), "pack")
    host.register(Policy(), "corp", kind="policy")
    plan = _round(host, "wipe", '{"path":"/"}').apply_hooks()
    assert [("no wiping", "plugin:corp")] == [(r.reason, r.source) for r in plan.rejected]
    assert [] == list(plan.pending)


def test_toolwire_tool_description(host: PluginHost) -> None:
    class First:
        @hookimpl
        def toolwire_tool_description(self, tool: Any, description: str) -> str:
            return description + " [first]"

    class Second:
        @hookimpl
        def toolwire_tool_description(self, description: str) -> str | None:
            return description + " [second]" if "[first]" in description else None

    host.register(Pack(), "pack")
    host.register(First(), "first")
    host.register(Second(), "second")  # registered last: pluggy calls it first
    turn = tw.resolve_turn(host.assemble(), hooks=host.hook_sets())
    assert "Say it back. [first]" == turn.tools[0].description


def test_toolwire_tool_availability(host: PluginHost) -> None:
    class HideDestructive:
        @hookimpl
        def toolwire_tool_availability(self, tool: Any) -> bool | None:
            return False if tool.metadata.effect.value == "destructive" else None

    host.register(Pack(), "pack")
    host.register(HideDestructive(), "hide", kind="policy")
    turn = tw.resolve_turn(host.assemble(), hooks=host.hook_sets())
    assert ["echo"] == [t.name for t in turn.tools]


def test_toolwire_tool_result(host: PluginHost) -> None:
    class Redact:
        @hookimpl
        def toolwire_tool_result(self, call: Any, result: tw.ToolResult) -> tw.ToolResult:
            return tw.ToolResult(
                result.call_id, result.tool_name, result.arguments, "[redacted]", False
            )

    host.register(Pack(), "pack")
    host.register(Redact(), "redact", kind="policy")
    call = _round(host).calls[0]
    assert "[redacted]" == host.tool_result(call, call.complete("secret")).content


# -- ordering -----------------------------------------------------------------------------


def test_decisions_run_policies_then_packs_then_app_sets(host: PluginHost) -> None:
    seen: list[str] = []

    def recorder(label: str) -> Any:
        class Plugin:
            @hookimpl
            def toolwire_tool_decision(self, call: Any) -> None:
                seen.append(label)

        return Plugin()

    host.register(Pack(), "pack")
    host.register(recorder("pack-hook"), "pack-hook")
    host.register(recorder("policy"), "corp-policy", kind="policy")
    app = tw.HookSet("app")
    app.on(None, lambda call: seen.append("app"))
    _round(host, app_hooks=(app,)).apply_hooks()
    assert ["policy", "pack-hook", "app"] == seen


def test_tryfirst_orders_within_a_group(host: PluginHost) -> None:
    seen: list[str] = []

    class Early:
        @hookimpl(tryfirst=True)
        def toolwire_tool_decision(self, call: Any) -> None:
            seen.append("early")

    class Late:
        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            seen.append("late")

    host.register(Pack(), "pack")
    host.register(Early(), "early")
    host.register(Late(), "late")
    _round(host).apply_hooks()
    assert ["early", "late"] == seen


def test_a_pack_complete_cannot_bypass_a_policy_reject(host: PluginHost) -> None:
    class Shortcut:
        @hookimpl(tryfirst=True)
        def toolwire_tool_decision(self, call: Any) -> Any:
            return tw.Complete("answered by the pack")

    class Policy:
        @hookimpl(trylast=True)
        def toolwire_tool_decision(self, call: Any) -> Any:
            return tw.Reject("blocked by policy")

    host.register(Pack(), "pack")
    host.register(Policy(), "corp", kind="policy")
    host.register(Shortcut(), "shortcut")  # registered last and tryfirst: still after policies
    plan = _round(host, "wipe", '{"path":"/"}').apply_hooks()
    assert (["blocked by policy"], ()) == ([r.reason for r in plan.rejected], plan.handled)


def test_a_toolset_hook_complete_cannot_bypass_a_policy_reject(host: PluginHost) -> None:
    class Policy:
        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> Any:
            return tw.Reject("blocked by policy")

    own = tw.HookSet("pack-own")
    own.on(None, lambda call: tw.Complete("answered by the toolset's own hook"))

    class HookedPack:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            register(tw.Toolset("hooked", [echo], hooks=own))

    host.register(HookedPack(), "hooked")
    host.register(Policy(), "corp", kind="policy")
    plan = _round(host).apply_hooks()
    assert (["blocked by policy"], ()) == ([r.reason for r in plan.rejected], plan.handled)


# -- failures in hooks ----------------------------------------------------------------------


def test_a_raising_decision_hook_rejects_naming_the_plugin(host: PluginHost) -> None:
    class Broken:
        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> Any:
            raise RuntimeError("backend down")

    host.register(Pack(), "pack")
    host.register(Broken(), "corp", kind="policy")
    plan = _round(host).apply_hooks()
    assert ["hook `plugin:corp` failed (RuntimeError)"] == [r.reason for r in plan.rejected]


def test_a_slow_sync_hook_is_rejected_after_the_fact(host: PluginHost) -> None:
    slow_host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=0.01)

    class Slow:
        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            time.sleep(0.05)

    slow_host.register(Pack(), "pack")
    slow_host.register(Slow(), "slow", kind="policy")
    plan = _round(slow_host).apply_hooks()
    assert 1 == len(plan.rejected)
    assert plan.rejected[0].reason.startswith("hook `plugin:slow` took ")
    assert "over its 0.01 s budget (TOOLWIRE_HOOK_TIMEOUT)" in plan.rejected[0].reason


def test_a_chain_is_timed_as_a_whole_until_it_is_slow_then_hook_by_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fast pass reads the clock where the chain starts and ends: a chain within the
    # smallest budget kept every budget. One that took longer cannot say which hook was
    # slow: the call is refused (never let through) and the chain is then timed hook by
    # hook. The hooks move a fake clock instead of sleeping.
    import toolwire._decisions as decisions_module

    now = [0.0]
    monkeypatch.setattr(decisions_module, "_clock", lambda: now[0])
    timed = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=1.0)
    takes = {"a": 0.0, "b": 0.0, "c": 0.0}

    def hook(name: str) -> Any:
        class Takes:
            @hookimpl
            def toolwire_tool_decision(self, call: Any) -> None:
                now[0] += takes[name]

        return Takes()

    timed.register(Pack(), "pack")
    for name in takes:
        timed.register(hook(name), name, kind="policy")
    assert not _round(timed).apply_hooks().rejected
    takes.update(a=0.6, b=0.6)  # each within 1 s, 1.2 s together (pluggy calls c, b, a)
    refused = _round(timed).apply_hooks().rejected
    assert [
        "hooks `plugin:c`, `plugin:b`, `plugin:a` took 1.2 s together, over the 1 s budget "
        "of `plugin:c` (TOOLWIRE_HOOK_TIMEOUT); the call was not run, and these hooks are "
        "timed one by one from now on"
    ] == [r.reason for r in refused]
    assert not _round(timed).apply_hooks().rejected  # each within its own budget
    takes.update(b=1.5)
    assert [
        "hook `plugin:b` took 1.5 s, over its 1 s budget (TOOLWIRE_HOOK_TIMEOUT); "
        "the call was not run"
    ] == [r.reason for r in _round(timed).apply_hooks().rejected]


def test_a_lone_slow_hook_in_the_fast_pass_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolwire._decisions as decisions_module

    now = [0.0]
    monkeypatch.setattr(decisions_module, "_clock", lambda: now[0])
    timed = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=1.0)

    class Refuses:
        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> Any:
            now[0] += 2.0
            return tw.Reject("no")  # said too late: dropped

    timed.register(Pack(), "pack")
    timed.register(Refuses(), "late", kind="policy")
    assert [
        "hook `plugin:late` took 2 s, over its 1 s budget (TOOLWIRE_HOOK_TIMEOUT); "
        "the call was not run"
    ] == [r.reason for r in _round(timed).apply_hooks().rejected]


async def test_a_slow_async_hook_times_out(host: PluginHost) -> None:
    slow_host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=0.01)

    class Slow:
        @hookimpl
        async def toolwire_tool_decision(self, call: Any) -> None:
            await asyncio.sleep(1)

    slow_host.register(Pack(), "pack")
    slow_host.register(Slow(), "slow", kind="policy")
    plan = await _round(slow_host).aapply_hooks()
    assert [
        "hook `plugin:slow` took 0.01 s, over its 0.01 s budget (TOOLWIRE_HOOK_TIMEOUT); "
        "the call was not run"
    ] == [r.reason for r in plan.rejected]


async def test_async_decision_hooks_are_awaited(host: PluginHost) -> None:
    class Edit:
        @hookimpl
        async def toolwire_tool_decision(self, call: Any) -> Any:
            return tw.RunNormally(call.input.model_copy(update={"text": "edited"}))

    host.register(Pack(), "pack")
    host.register(Edit(), "edit")
    plan = await _round(host).aapply_hooks()
    assert ["edited"] == [c.input.text for c in plan.pending]


class ReturnsACoroutine:
    """A sync hookimpl that returns an awaitable (an async approver behind a sync hook)."""

    @hookimpl
    def toolwire_tool_decision(self, call: Any) -> Any:
        async def decide() -> tw.ToolDecision:
            return tw.Reject(f"decided later for {call.name}")

        return decide()


def test_an_awaitable_from_a_sync_hook_is_closed_by_the_sync_pipeline(host: PluginHost) -> None:
    host.register(Pack(), "pack")
    host.register(ReturnsACoroutine(), "later", kind="policy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = _round(host).apply_hooks()
        gc.collect()
    assert [] == [str(w.message) for w in caught]
    assert ["hook `plugin:later` is async; use `await round.aapply_hooks(...)`"] == [
        r.reason for r in plan.rejected
    ]


async def test_an_awaitable_from_a_sync_hook_is_awaited_by_the_async_pipeline(
    host: PluginHost,
) -> None:
    host.register(Pack(), "pack")
    host.register(ReturnsACoroutine(), "later", kind="policy")
    plan = await _round(host).aapply_hooks()
    assert ["decided later for echo"] == [r.reason for r in plan.rejected]


def test_result_for_another_call_is_ignored_from_a_pack(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    class Wrong:
        @hookimpl
        def toolwire_tool_result(self, result: tw.ToolResult) -> tw.ToolResult:
            return tw.ToolResult("other", result.tool_name, result.arguments, "swapped", False)

    host.register(Pack(), "pack")
    host.register(Wrong(), "wrong")
    call = _round(host).calls[0]
    with caplog.at_level(logging.WARNING, logger="toolwire.plugins"):
        assert "hi" == host.tool_result(call, call.complete("hi")).content
    assert "result hook `plugin:wrong` returned a result for call `other`" in caplog.text


def test_result_for_another_call_is_withheld_from_a_policy(host: PluginHost) -> None:
    class Wrong:
        @hookimpl
        def toolwire_tool_result(self, result: tw.ToolResult) -> tw.ToolResult:
            return tw.ToolResult("other", result.tool_name, result.arguments, "swapped", False)

    host.register(Pack(), "pack")
    host.register(Wrong(), "corp", kind="policy")
    call = _round(host).calls[0]
    result = host.tool_result(call, call.complete("secret"))
    assert (True, "c1") == (result.is_error, result.call_id)
    assert (tw.adapters.rejection_reason(result) or "").startswith(
        "policy `corp` returned a result for"
    )


SECRET = "postgres://admin:hunter2@db.internal:5432"


def test_a_failed_policys_error_text_never_reaches_the_model(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    """Only the policy's name and the error's type go to the model, for a policy that
    failed to load and for a policy's result hook that raised; the text goes to the log."""

    class Broken:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            raise RuntimeError(f"cannot reach {SECRET}")

    host.register(Pack(), "pack")
    host.register(Broken(), "corp", kind="policy")
    toolset = host.assemble()
    plan = _round(host, toolset=toolset).apply_hooks()
    (rejected,) = plan.rejected
    assert "policy `corp` failed to load (RuntimeError), so tool calls are blocked" == (
        rejected.reason
    )
    assert SECRET in host.blocked[0]  # the operator's view keeps the detail
    assert all(SECRET not in n for n in host.blocked_notices)
    call = _round(host, toolset=toolset).calls[0]
    withheld = host.tool_result(call, call.complete("x"))
    assert SECRET not in withheld.content
    # The executor's refusal for a blocked host says the same, without the detail.
    executor = tw.Executor(plugins=host)
    round_ = _round(host, toolset=toolset)
    results = executor.execute_all(round_.calls)
    executor.close()
    assert all(SECRET not in r.content for r in results)
    assert "policy `corp` failed to load (RuntimeError)" in results[0].content


def test_a_policys_result_hook_error_text_stays_in_the_log(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    class Audit:
        @hookimpl
        def toolwire_tool_result(self, result: tw.ToolResult) -> tw.ToolResult:
            raise ConnectionError(f"audit sink {SECRET} refused")

    host.register(Pack(), "pack")
    host.register(Audit(), "corp", kind="policy")
    call = _round(host).calls[0]
    with caplog.at_level(logging.WARNING, logger="toolwire.plugins"):
        result = host.tool_result(call, call.complete("hi"))
    assert "policy `corp` failed (ConnectionError); the result was withheld" == (
        tw.adapters.rejection_reason(result)
    )
    assert SECRET not in result.content
    assert SECRET in caplog.text


async def test_async_result_hooks_run_packs_then_policies(host: PluginHost) -> None:
    class PackHook:
        @hookimpl
        async def toolwire_tool_result(self, result: tw.ToolResult) -> tw.ToolResult:
            return tw.ToolResult(
                result.call_id, result.tool_name, result.arguments, result.content + "+pack", False
            )

    class PolicyHook:
        @hookimpl(tryfirst=True)
        def toolwire_tool_result(self, result: tw.ToolResult) -> tw.ToolResult:
            return tw.ToolResult(
                result.call_id,
                result.tool_name,
                result.arguments,
                result.content + "+policy",
                False,
            )

    host.register(Pack(), "pack")
    host.register(PolicyHook(), "corp", kind="policy")
    host.register(PackHook(), "audit")
    call = _round(host).calls[0]
    assert "hi+pack+policy" == (await host.atool_result(call, call.complete("hi"))).content


# -- isolation: skip, record, strict, fail closed ------------------------------------------


def test_a_pack_whose_register_is_invalid_is_skipped_and_recorded(host: PluginHost) -> None:
    class Bad:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            register([echo])

    host.register(Bad(), "bad")
    host.register(Pack(), "pack")
    assert ["echo", "wipe"] == [t.name for t in host.assemble().tools()]
    assert [("bad", "failed")] == [(r.name, r.status) for r in host.failures]
    assert host.failures[0].reason == (
        "failed to register its toolsets: PluginError: register() takes a toolwire.Toolset, "
        "got list; wrap tools as Toolset('name', [tool, ...])"
    )


def test_strict_mode_makes_a_bad_pack_an_error_naming_it(strict_host: PluginHost) -> None:
    class Bad:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            raise ValueError("boom")

    strict_host.register(Bad(), "bad")
    with pytest.raises(tw.exceptions.PluginError) as info:
        strict_host.assemble()
    assert "bad" == info.value.plugin
    assert "toolset plugin `bad` failed to register its toolsets: ValueError: boom" in str(
        info.value
    )


def test_an_unknown_hook_name_fails_validation_with_a_hint(host: PluginHost) -> None:
    class Typo:
        @hookimpl
        def toolwire_tool_decison(self, call: Any) -> None:
            return None

    host.register(Typo(), "typo")
    assert [
        "implements `toolwire_tool_decison`, which is not a toolwire hook "
        "(did you mean `toolwire_tool_decision`?)"
    ] == [r.reason for r in host.failures]
    assert not any(host.hook_sets())


def test_an_async_description_hook_fails_validation(host: PluginHost) -> None:
    class AsyncDescribe:
        @hookimpl
        async def toolwire_tool_description(self, description: str) -> str:
            return description

    host.register(AsyncDescribe(), "ad")
    assert ["`toolwire_tool_description` must be sync, got an `async def`"] == [
        r.reason for r in host.failures
    ]


def test_a_policy_that_fails_validation_blocks_every_call(host: PluginHost) -> None:
    class BadPolicy:
        @hookimpl
        def toolwire_tool_decision(self, call: Any, nonsense: Any) -> None:
            return None

    host.register(Pack(), "pack")
    host.register(BadPolicy(), "corp", kind="policy")
    plan = _round(host).apply_hooks()
    assert ["plugin:corp"] == [r.source for r in plan.rejected]
    # The model is told which policy and that calls are blocked; the detail is the operator's.
    assert (
        "policy `corp` failed to load (PluginValidationError), so tool calls are blocked"
        == plan.rejected[0].reason
    )
    assert host.blocked[0].startswith(
        "policy `corp` failed to load, so tool calls are blocked: does not match the toolwire "
    )
    call = _round(host).calls[0]
    assert host.tool_result(call, call.complete("x")).is_error


def test_a_policy_that_fails_in_strict_mode_raises_policy_error(strict_host: PluginHost) -> None:
    class BadPolicy:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            raise OSError("cannot read policy file")

    strict_host.register(BadPolicy(), "corp", kind="policy")
    with pytest.raises(tw.PolicyError, match=r"policy `corp` failed to register its toolsets"):
        strict_host.assemble()


def test_a_pack_colliding_with_the_app_loses_only_the_colliding_tool(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    # #25.13: a pack whose tool collided with the application's was dropped whole.
    host.register(Pack(), "pack")
    toolset = host.assemble(tw.Toolset("app", [echo]))
    assert ["echo", "wipe"] == [t.name for t in toolset.tools()]
    assert "app/app" == toolset.source("echo")  # the application's, kept
    assert [] == list(host.failures)
    assert (
        "its tool `echo` (from `pack/basics`) collides with `echo` from `app` and was left "
        "out; to keep it, mount the pack under a prefix: host.mount('pack', prefix='pack_')"
    ) in caplog.text


def test_the_application_mounts_any_pack_as_it_likes(host: PluginHost) -> None:
    host.register(Pack(), "pack")
    host.mount("pack", prefix="p_", only=["wipe", "echo"], exclude=["echo"], off=True)
    toolset = host.assemble(tw.Toolset("app", [echo]))
    assert (["echo", "p_wipe"], True) == (
        [t.name for t in toolset.tools()],
        toolset.is_off("p_wipe"),
    )
    host.mount("pack", enabled=False)
    assert ["echo"] == [t.name for t in host.assemble(tw.Toolset("app", [echo])).tools()]
    with pytest.raises(tw.UsageError, match="only must be a list of tool names"):
        host.mount("pack", only="echo")


def test_unknown_provider_lists_the_known_ones(host: PluginHost) -> None:
    with pytest.raises(
        tw.exceptions.PluginError, match=r"no provider named `tset` \(known: `test`\); "
    ):
        host.provider("tset")


def test_an_official_name_not_installed_says_which_distribution(host: PluginHost) -> None:
    with pytest.raises(
        tw.exceptions.PluginError, match=r"it comes with toolwire-openai: `pip install toolwire"
    ):
        host.provider("openai-compatible")


def test_a_factory_that_returns_no_provider_is_an_error(host: PluginHost) -> None:
    class Plugin:
        @hookimpl
        def toolwire_register_providers(self, register: Any) -> None:
            register("odd", lambda **kw: object())

    host.register(Plugin(), "odd-plugin", kind="provider")
    with pytest.raises(
        tw.exceptions.PluginError, match=r"returned object; expected a toolwire\.Provider"
    ):
        host.provider("odd")


def test_the_builtin_test_provider_registers_through_the_hook(host: PluginHost) -> None:
    from toolwire.providers import test as builtin

    seen: list[tuple[str, Any]] = []
    builtin.toolwire_register_providers(lambda name, factory: seen.append((name, factory)))
    assert [("test", builtin.TestProvider)] == seen
    assert isinstance(host.provider("test"), builtin.TestProvider)


def test_the_deny_list_disables_a_builtin() -> None:
    denied = PluginHost(autoload=False, strict=False, allow=None, deny=["test"])
    assert () == denied.providers()


def test_no_plugin_hooks_means_empty_sets(host: PluginHost) -> None:
    host.register(Pack(), "pack")
    assert (False, False) == tuple(bool(s) for s in host.hook_sets())


def test_an_invalid_hook_timeout_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_HOOK_TIMEOUT", "soon")
    with pytest.raises(
        tw.exceptions.PluginError, match="TOOLWIRE_HOOK_TIMEOUT must be a positive number"
    ):
        PluginHost(autoload=False)


def test_environment_switches_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_PLUGINS", "a, b")
    monkeypatch.setenv("TOOLWIRE_DISABLE_PLUGINS", "c")
    monkeypatch.setenv("TOOLWIRE_AUTOLOAD_PLUGINS", "0")
    monkeypatch.setenv("TOOLWIRE_STRICT_PLUGINS", "1")
    monkeypatch.setenv("TOOLWIRE_HOOK_TIMEOUT", "0.5")
    h = PluginHost()
    assert (frozenset({"a", "b"}), frozenset({"c"}), False, True, 0.5) == (
        h.allow,
        h.deny,
        h.autoload,
        h.strict,
        h.hook_timeout,
    )


# -- a plugin's own status ------------------------------------------------------------


def _record(host: PluginHost, name: str) -> Any:
    [record] = [r for r in host.plugins if r.name == name]
    return record


def test_plugin_status_is_what_the_plugins_status_function_says(host: PluginHost) -> None:
    class Configured:
        def status(self) -> str:
            return "active: /etc/corp/policy.toml"

        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            return None

    host.register(Configured(), "corp", kind="policy")
    assert "active: /etc/corp/policy.toml" == host.plugin_status(_record(host, "corp"))


def test_plugin_status_is_none_without_a_status_function(host: PluginHost) -> None:
    host.register(Pack(), "pack")
    assert host.plugin_status(_record(host, "pack")) is None


def test_a_status_function_that_raises_is_reported_not_raised(host: PluginHost) -> None:
    class Broken(Pack):
        def status(self) -> str:
            raise OSError("cannot stat /etc/corp")

    host.register(Broken(), "broken")
    assert "status() failed: OSError: cannot stat /etc/corp" == host.plugin_status(
        _record(host, "broken")
    )


def test_a_status_function_returning_a_non_string_is_reported(host: PluginHost) -> None:
    class Odd(Pack):
        def status(self) -> int:
            return 3

    host.register(Odd(), "odd")
    assert "status() returned int; expected a string" == host.plugin_status(_record(host, "odd"))


def test_plugin_lint_is_what_the_plugins_lint_function_finds(host: PluginHost) -> None:
    seen: list[list[str]] = []

    class Stale:
        def lint(self, tools: list[Any]) -> list[str]:
            seen.append([t.name for t in tools])
            return [f"deny = 'git_git_reset' matches nothing of {len(tools)}"]

        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            return None

    host.register(Stale(), "corp", kind="policy")
    tools = tw.Toolset("app", [echo]).tools()
    assert ("deny = 'git_git_reset' matches nothing of 1",) == host.plugin_lint(
        _record(host, "corp"), iter(tools)
    )
    assert [["echo"]] == seen
    host.register(Pack(), "pack")
    assert () == host.plugin_lint(_record(host, "pack"), tools)  # no lint(): nothing to say


@pytest.mark.parametrize(
    ("lint", "said"),
    [
        (lambda tools: 1 / 0, "lint() failed: ZeroDivisionError: division by zero"),
        (lambda tools: "one finding", "lint() returned str; expected a list of strings"),
        (lambda tools: [3], "lint() returned list; expected a list of strings"),
    ],
)
def test_a_lint_function_that_misbehaves_is_reported_not_raised(
    host: PluginHost, lint: Any, said: str
) -> None:
    class Odd(Pack):
        pass

    odd = Odd()
    odd.lint = lint  # type: ignore[attr-defined]
    host.register(odd, "odd")
    assert (said,) == host.plugin_lint(_record(host, "odd"), [])


def test_an_async_lint_function_is_reported_and_closed(host: PluginHost) -> None:
    class Async(Pack):
        async def lint(self, tools: list[Any]) -> list[str]:
            return ["never"]

    host.register(Async(), "async")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an un-awaited coroutine would warn
        assert (
            "lint() is async; it must be a sync function returning a list of strings",
        ) == host.plugin_lint(_record(host, "async"), [])


def test_distribution_name_and_version_are_read_once_through_the_public_api() -> None:
    from toolwire._plugins.discovery import _dist_of

    class Dist:
        reads = 0
        version = "1.2.3"

        @property
        def name(self) -> str:  # importlib_metadata parses METADATA here
            Dist.reads += 1
            return "toolwire-fs"

    dist = Dist()
    assert ("toolwire-fs", "1.2.3") == _dist_of(dist)
    assert ("toolwire-fs", "1.2.3") == _dist_of(dist)
    assert 1 == Dist.reads
    assert ("", "") == _dist_of(None)


async def test_an_async_hook_that_swallows_cancellation_is_not_obeyed_late(
    host: PluginHost,
) -> None:
    # Attack (#11.2): on Python 3.11 asyncio.wait_for waited for the cancelled hook and
    # returned its answer, so a hook held a call past its budget and then said "run".
    slow_host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=0.05)
    finished = asyncio.Event()

    class Stubborn:
        @hookimpl
        async def toolwire_tool_decision(self, call: Any) -> Any:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)  # keeps going after the budget...
            finished.set()
            return tw.RunNormally()  # ...and then says "run"

    slow_host.register(Pack(), "pack")
    slow_host.register(Stubborn(), "stubborn", kind="policy")
    started = time.monotonic()
    plan = await _round(slow_host).aapply_hooks()
    assert time.monotonic() - started < 0.2
    assert plan.pending == ()
    assert ["over its 0.05 s budget" in r.reason for r in plan.rejected] == [True]
    await asyncio.wait_for(finished.wait(), 5)  # the hook ran on, and was not listened to


def test_a_plugin_calling_sys_exit_at_import_is_a_failed_plugin() -> None:
    # Attack (#11.20): a tool pack calling sys.exit at import ended `toolwire plugins`
    # silently, with exit status 0.
    import sys

    from toolwire._plugins.discovery import PluginRecord, _Candidate

    host = PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)
    record = PluginRecord("toolset", "exiter", "tw-exiter", "1.0", "tw_exiter")
    host._records[("toolset", "exiter")] = record
    host._load(_Candidate(record, lambda: sys.exit(3)))
    [failed] = host.failures
    assert failed.name == "exiter"
    assert "SystemExit" in failed.reason


def test_a_broken_tool_pack_availability_hook_hides_only_its_own_tools(host: PluginHost) -> None:
    # Attack (#11.10): one broken tool-pack availability hook hid every tool, the
    # application's own included. A tool pack's failure affects that pack only.
    @tw.tool_fn
    def mine(x: int) -> str:
        """The application's own tool."""
        return "m"

    class BrokenPack:
        @hookimpl
        def toolwire_register_toolsets(self, register: Any) -> None:
            register(tw.Toolset("broken", [echo]))

        @hookimpl
        def toolwire_tool_availability(self, tool: Any) -> bool | None:
            raise RuntimeError("bug in the pack")

    host.register(BrokenPack(), "brokenpack")
    app = host.assemble(tw.Toolset("app", [mine]))
    turn = tw.resolve_turn(app, hooks=host.hook_sets())
    assert ["mine"] == [t.name for t in turn.tools]  # the pack's echo is hidden, mine is not


def test_a_broken_policy_availability_hook_still_hides_everything(host: PluginHost) -> None:
    @tw.tool_fn
    def mine(x: int) -> str:
        """The application's own tool."""
        return "m"

    class BrokenPolicy:
        @hookimpl
        def toolwire_tool_availability(self, tool: Any) -> bool | None:
            raise RuntimeError("bug in the policy")

    host.register(BrokenPolicy(), "brokenpolicy", kind="policy")
    turn = tw.resolve_turn(host.assemble(tw.Toolset("app", [mine])), hooks=host.hook_sets())
    assert [] == [t.name for t in turn.tools]  # policies fail closed


# -- toolwire_audit: every attempt, also those no decision hook sees ------------------------


class Auditing:
    """A policy that hides `wipe` and records every audit event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    @hookimpl
    def toolwire_tool_availability(self, tool: Any) -> bool | None:
        return False if tool.name == "wipe" else None

    @hookimpl
    def toolwire_audit(self, event: tw.adapters.AuditEvent, context: tw.HookContext) -> None:
        self.events.append((event.kind, event.call_id, event.source, context.app))


def test_toolwire_audit(host: PluginHost) -> None:
    # Attack (#25.9): attempts on denied, unknown or invalid tools left no audit record.
    policy = Auditing()
    host.register(policy, "corp", kind="policy")
    later = tw.Toolset("later", [tw.tool_fn(lambda: "x", name="later")])
    toolset = tw.Toolset("app", [echo, wipe])
    toolset.add(later, off=True)
    turn = tw.resolve_turn(toolset, plugins=host, context=tw.HookContext(app="billing"))
    calls = (
        tw.ToolCall("c1", "nope", "{}"),
        tw.ToolCall("c2", "wipe", '{"path": "/"}'),
        tw.ToolCall("c3", "later", "{}"),
        tw.ToolCall("c4", "echo", '{"text": 1}'),
        tw.ToolCall("c5", "echo", '{"text": "fine"}'),
    )
    reply = tw.adapters.AssistantReply("", calls, "tool_calls")
    tw.adapters.decode_reply(tw.Session(), turn, reply)
    assert [
        ("unknown_tool", "c1", "toolwire", "billing"),
        ("hidden", "c2", "plugin:corp", "billing"),
        ("not_offered", "c3", "toolwire", "billing"),
        ("invalid_arguments", "c4", "toolwire", "billing"),
    ] == policy.events


class _Trail:
    def __init__(self, name: str) -> None:
        self.name = name

    def readable_by(self, principal: tw.Principal) -> bool:
        return principal.subject == "sam"

    def records(self, **filters: Any) -> list[dict[str, Any]]:
        return []

    def verify(self) -> tw.approvals.ChainCheck:
        return tw.approvals.ChainCheck(whole=True, records=0, head="")


def test_toolwire_audit_trails(host: PluginHost, caplog: pytest.LogCaptureFixture) -> None:
    # Only policies are asked: a tool pack cannot pass a log off as the organisation's.
    class Corp:
        @hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register(_Trail("corp: audit.jsonl"))

    class Pack:
        @hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register(_Trail("pack: fake.jsonl"))

    class Raises:
        @hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register(_Trail("half: a.jsonl"))
            raise RuntimeError("boom")

    class Wrong:
        @hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register("audit.jsonl")

    class Async:
        @hookimpl
        async def toolwire_audit_trails(self, register: Any) -> None:
            register(_Trail("async: a.jsonl"))

    class Inert:
        toolwire_inert = True

        @hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register(_Trail("inert: a.jsonl"))

    host.register(Corp(), "corp", kind="policy")
    host.register(Pack(), "pack")
    host.register(Raises(), "raises", kind="policy")
    host.register(Wrong(), "wrong", kind="policy")
    host.register(Async(), "async", kind="policy")
    host.register(Inert(), "inert", kind="policy")
    with caplog.at_level(logging.WARNING, "toolwire.plugins"):
        trails = host.audit_trails()
    assert ["corp: audit.jsonl"] == [t.name for t in trails]  # (one that raised: none of its)
    assert isinstance(trails[0], tw.approvals.AuditTrail)
    assert "plugin `raises` failed to offer its audit trails: RuntimeError: boom" in caplog.text
    assert "plugin `wrong` failed" in caplog.text
    assert "got str" in caplog.text
    # (an async one is refused when it registers: the hook is sync)
    assert "skipped policy `async` `toolwire_audit_trails` must be sync" in caplog.text
    assert ["corp: audit.jsonl"] == [t.name for t in PolicyHost(host).audit_trails()]


def test_toolwire_redact_arguments(host: PluginHost) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Pack:
        @hookimpl
        def toolwire_redact_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
            seen.append(("pack", arguments))
            return {**arguments, "path": "[pack]"}

    class Corp:
        @hookimpl
        def toolwire_redact_arguments(
            self, tool: tw.Tool[Any, Any], arguments: dict[str, Any], context: tw.HookContext
        ) -> dict[str, Any] | None:
            seen.append((f"corp:{tool.name}:{context.app}", arguments))
            return dict.fromkeys(arguments, "[REDACTED]")

    host.register(Corp(), "corp", kind="policy")
    host.register(Pack(), "pack", kind="toolset")
    got = host.redact_arguments(wipe, {"path": "/etc"}, tw.HookContext(app="cli"))
    # Tool packs first, each seeing what the one before left; the policy has the last word.
    assert {"path": "[REDACTED]"} == got
    assert [("pack", {"path": "/etc"}), ("corp:wipe:cli", {"path": "[pack]"})] == seen
    # The policies-only view skips the tool pack.
    seen.clear()
    assert {"path": "[REDACTED]"} == host.policies_only().redact_arguments(wipe, {"path": "/"})
    assert ["corp:wipe:"] == [who for who, _ in seen]


@pytest.mark.parametrize("bad", ["raises", "async", "list"])
def test_a_redact_hook_that_fails_keeps_no_arguments(
    host: PluginHost, bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        @hookimpl
        def toolwire_redact_arguments(self, arguments: dict[str, Any]) -> Any:
            if bad == "raises":
                raise KeyError("password")
            if bad == "async":

                async def later() -> None:
                    return None

                return later()
            return ["not", "a", "dict"]

    host.register(Broken(), "corp", kind="policy")
    # Fail closed: the record keeps nothing rather than what the hook would have hidden.
    assert host.redact_arguments(wipe, {"path": "secret"}) is None
    assert "redact hook of plugin `corp`" in caplog.text


def test_toolwire_audit_sees_the_executors_own_refusals(host: PluginHost) -> None:
    policy = Auditing()
    host.register(policy, "corp", kind="policy")
    executor = tw.Executor(tools=tw.Toolset("app", [echo]), plugins=host)
    executor.execute(tw.ToolCall("c1", "nope", "{}"))
    executor.execute(tw.ToolCall("c2", "echo", "[]"))
    assert [("unknown_tool", "c1"), ("invalid_arguments", "c2")] == [e[:2] for e in policy.events]


def test_an_audit_hook_that_fails_is_logged_and_refuses_nothing_more(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        @hookimpl
        def toolwire_audit(self, event: tw.adapters.AuditEvent) -> None:
            raise OSError("disk full")

    host.register(Broken(), "corp", kind="policy")
    turn = tw.resolve_turn(tw.Toolset("app", [echo]), plugins=host)
    reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", "nope", "{}"),), "tool_calls")
    out = tw.adapters.decode_reply(tw.Session(), turn, reply)
    assert isinstance(out, tw.NeedsTools)
    assert ["c1"] == [i.call.id for i in out.round.issues]
    assert "audit hook of plugin `corp` failed on event `unknown_tool`: OSError: disk full" in (
        caplog.text
    )


def test_an_executor_applies_its_toolsets_own_hooks_to_a_raw_call(host: PluginHost) -> None:
    # Attack (#25.10): Executor(tools=app).execute(call) skipped Toolset(hooks=...).
    hooks = tw.HookSet()
    hooks.on(wipe, lambda call: tw.Reject("never wipe"))
    hooks.on(echo, lambda call: tw.RunNormally(type(call.input)(text="edited")))
    executor = tw.Executor(tools=tw.Toolset("app", [echo, wipe], hooks=hooks), plugins=host)
    wiped = executor.execute(tw.ToolCall("c1", "wipe", '{"path": "/"}'))
    echoed = executor.execute(tw.ToolCall("c2", "echo", '{"text": "hi"}'))
    assert ("never wipe", "edited") == (tw.adapters.rejection_reason(wiped), echoed.content)


def test_toolwire_audit_sees_a_result_withheld_while_a_policy_is_broken(
    host: PluginHost,
) -> None:
    policy = Auditing()
    host.register(policy, "corp", kind="policy")

    class Broken:
        @hookimpl
        def toolwire_tool_decisoin(self, call: Any) -> None:  # a typo: fails validation
            return None

    host.register(Broken(), "broken", kind="policy")
    round_ = _round(host, toolset=tw.Toolset("app", [echo]))
    call = round_.calls[0]
    result = host.tool_result(call, call.complete("hi"))
    assert result.is_error
    assert [("withheld", "c1", "toolwire", "")] == policy.events


def test_the_new_switches_refuse_malformed_values(host: PluginHost) -> None:
    with pytest.raises(tw.exceptions.PluginError, match="disable_policies must be True, False"):
        PluginHost(autoload=False, disable_policies="corp")  # type: ignore[arg-type]
    with pytest.raises(tw.exceptions.PluginError, match="name policies as non-empty strings"):
        PluginHost(autoload=False, disable_policies=[""])
    with pytest.raises(tw.UsageError, match="mount\\(\\) takes a tool pack's name"):
        host.mount("")
    with pytest.raises(tw.UsageError, match="prefix must be a string"):
        host.mount("pack", prefix=3)  # type: ignore[arg-type]
    with pytest.raises(tw.UsageError, match="audit\\(\\) takes an AuditEvent"):
        host.audit("unknown_tool")  # type: ignore[arg-type]


def test_an_audit_hook_that_answers_something_is_logged(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    class Chatty:
        @hookimpl
        def toolwire_audit(self, event: tw.adapters.AuditEvent) -> str:
            return "noted"

    host.register(Chatty(), "corp", kind="policy")
    host.audit(tw.adapters.AuditEvent("unknown_tool", "no such tool", "nope", "c1"))
    assert "audit hook of plugin `corp` returned str; it returns None" in caplog.text


def test_a_lint_finding_is_printed_escaped(
    host: PluginHost, capsys: pytest.CaptureFixture[str]
) -> None:
    # A finding names the catalogue's tools, an MCP server's among them: its control
    # characters must not reach the terminal as they are.
    from toolwire.cli.commands import _warn_blocked

    class Stale:
        def lint(self, tools: list[Any]) -> list[str]:
            return ["deny = 'x' matches nothing (did you mean \x1b[2Jevil\nfake line?)"]

        @hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            return None

    host.register(Stale(), "corp", kind="policy")
    _warn_blocked(host, tw.Toolset("app", [echo]))
    err = capsys.readouterr().err
    [line] = [x for x in err.splitlines() if "matches nothing" in x]
    assert "\x1b" not in err
    assert "fake line" in line  # one line: the newline escaped, not obeyed
