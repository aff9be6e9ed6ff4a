"""The policy plugin: its three states, the entry-point module, and the host failing closed."""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolwire_policy
from toolwire import (
    Availability,
    Hidden,
    HookContext,
    NeedsTools,
    Reject,
    Session,
    Tool,
    ToolCall,
    Toolset,
    TypedCall,
    resolve_turn,
)
from toolwire.adapters import AssistantReply, decode_reply, rejection_reason
from toolwire_policy import APPROVER, Policy, PolicyFileError, PolicyPlugin

WritePolicy = Callable[[str], Path]
CallOf = Callable[..., TypedCall[Any]]
Tools = dict[str, Tool[Any, Any]]
CTX = HookContext()
BLOCKED = (
    "the organisation policy (toolwire-policy) failed to load, so no tool may run until it is fixed"
)


@pytest.fixture
def no_policy_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """An environment where no policy file is found (empty working dir and config home).

    The process's default plugin host, if a test makes it here (under its own
    TOOLWIRE_POLICY), is dropped afterwards: it would decide a later test's calls."""
    from toolwire._plugins import host as host_module

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("TOOLWIRE_POLICY", raising=False)
    monkeypatch.delenv("TOOLWIRE_POLICY_REQUIRED", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    before = host_module._DEFAULT
    yield
    if host_module._DEFAULT is not before:
        host_module._DEFAULT = before


# -- PolicyPlugin states -------------------------------------------------------------------


def test_a_failed_plugin_rejects_every_call(call_of: CallOf) -> None:
    plugin = PolicyPlugin(error=PolicyFileError("p.toml", [("deny", "bad")]))
    assert Reject(BLOCKED) == plugin.toolwire_tool_decision(
        call_of("read_notes", {"path": "a"}), CTX
    )


def test_a_failed_plugin_hides_every_tool(tools: Tools) -> None:
    plugin = PolicyPlugin(error=PolicyFileError("p.toml", [("deny", "bad")]))
    assert [False] * 4 == [plugin.toolwire_tool_availability(t, CTX) for t in tools.values()]


def test_a_failed_plugin_withholds_results(call_of: CallOf) -> None:
    plugin = PolicyPlugin(error=PolicyFileError("p.toml", [("deny", "bad")]))
    call = call_of("read_notes", {"path": "a"})
    out = plugin.toolwire_tool_result(call, call.complete("secret"), CTX)
    assert out is not None
    assert (BLOCKED, True, call.id) == (out.content, out.is_error, out.call_id)


def test_an_inert_plugin_has_no_opinion(call_of: CallOf, tools: Tools) -> None:
    plugin = PolicyPlugin()
    call = call_of("drop_table", {"name": "x"})
    assert (None, None, None) == (
        plugin.toolwire_tool_decision(call, CTX),
        plugin.toolwire_tool_availability(tools["drop_table"], CTX),
        plugin.toolwire_tool_result(call, call.complete("x"), CTX),
    )


def test_an_active_plugin_decides_and_hides(policy_file: WritePolicy, call_of: CallOf) -> None:
    plugin = PolicyPlugin.from_file(policy_file("deny = ['drop_table']\n"))
    call = call_of("drop_table", {"name": "x"})
    assert (
        "active",
        Reject("tool `drop_table` is denied by the organisation policy"),
        Hidden("tool `drop_table` is denied by the organisation policy"),
    ) == (
        plugin.state,
        plugin.toolwire_tool_decision(call, CTX),
        plugin.toolwire_tool_availability(call.tool, CTX),
    )


def test_an_error_while_deciding_rejects_the_call(
    policy_file: WritePolicy, call_of: CallOf, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = PolicyPlugin.from_file(policy_file(""))

    def broken(*args: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(Policy, "decide", broken)
    assert Reject(
        "the organisation policy failed on this call (KeyError), so it was not run"
    ) == plugin.toolwire_tool_decision(call_of("read_notes", {"path": "a"}), CTX)


def test_an_error_while_checking_availability_hides_the_tool(
    policy_file: WritePolicy, tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = PolicyPlugin.from_file(policy_file(""))

    def broken(*args: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(Policy, "hidden_reason", broken)
    assert False is plugin.toolwire_tool_availability(tools["read_notes"], CTX)


def test_from_env_keeps_the_load_error(policy_file: WritePolicy, tmp_path: Path) -> None:
    path = policy_file("deny_effects = ['destroy']\n")
    plugin = PolicyPlugin.from_env({"TOOLWIRE_POLICY": str(path)}, cwd=tmp_path)
    assert ("failed", True) == (plugin.state, isinstance(plugin.error, PolicyFileError))
    with pytest.raises(PolicyFileError, match=r"deny_effects\[0\]"):
        plugin.raise_if_failed()


def test_from_env_without_a_file_is_inert_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    with caplog.at_level(logging.INFO, logger="toolwire.policy"):
        plugin = PolicyPlugin.from_env(env, cwd=tmp_path)
    looked = (
        f"{tmp_path / 'config' / 'toolwire' / 'policy.toml'}, {tmp_path / 'toolwire-policy.toml'}"
    )
    assert ("inert", f"inert: no policy file (looked for {looked})") == (
        plugin.state,
        plugin.status(),
    )
    assert "found no policy file" in caplog.text  # logged at INFO: libraries do not print it
    assert all(r.levelno == logging.INFO for r in caplog.records)


def test_status_of_an_active_plugin_names_the_file(
    policy_file: WritePolicy, tmp_path: Path
) -> None:
    path = policy_file("[audit]\npath = 'a.jsonl'\n")
    plugin = PolicyPlugin.from_env({"TOOLWIRE_POLICY": str(path)}, cwd=tmp_path)
    assert f"active: {path}, audit log {tmp_path / 'a.jsonl'}" == plugin.status()


def test_a_plugin_has_a_policy_or_an_error_not_both(policy_file: WritePolicy) -> None:
    with pytest.raises(ValueError, match="not both"):
        PolicyPlugin(
            Policy.from_file(policy_file("")), error=PolicyFileError("p.toml", [("", "x")])
        )


# -- the entry-point module ----------------------------------------------------------------


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_importing_the_plugin_with_a_malformed_policy_raises(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = policy_file("[[constraints]]\ndeny_patterns = ['(']\n")
    monkeypatch.setenv("TOOLWIRE_POLICY", str(path))
    with pytest.raises(PolicyFileError) as info:
        importlib.import_module("toolwire_policy.plugin")
    assert [
        (
            "constraints[0].deny_patterns[0]",
            "invalid regular expression '(': missing ), unterminated subpattern at position 0",
        )
    ] == list(info.value.problems)


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_importing_the_plugin_without_a_policy_is_inert() -> None:
    module = importlib.import_module("toolwire_policy.plugin")
    assert module.status().startswith("inert: no policy file (looked for ")


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_importing_the_plugin_when_a_policy_is_required_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLWIRE_POLICY_REQUIRED", "1")
    with pytest.raises(PolicyFileError, match="no policy file found"):
        importlib.import_module("toolwire_policy.plugin")


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_the_module_hooks_use_the_loaded_policy(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, call_of: CallOf
) -> None:
    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file("deny = ['read_*']\n")))
    module = importlib.import_module("toolwire_policy.plugin")
    call = call_of("read_notes", {"path": "a"})
    denied = "tool `read_notes` is denied by the organisation policy"
    assert (Reject(denied), Hidden(denied), None) == (
        module.toolwire_tool_decision(call, CTX),
        module.toolwire_tool_availability(call.tool, CTX),
        module.toolwire_tool_result(call, call.complete("x"), CTX),
    )


def test_the_public_surface() -> None:
    assert sorted(toolwire_policy.__all__, key=lambda n: (not n.isupper(), n)) == list(
        toolwire_policy.__all__
    )
    # (its entry-point modules, plugin and commands, are attributes once imported)
    public = {
        n for n in dir(toolwire_policy) if not n.startswith("_") and n not in ("plugin", "commands")
    }
    assert public == set(toolwire_policy.__all__) - {"__version__"}


# -- discovery through the entry point, and the host ---------------------------------------


def _entry_point() -> importlib.metadata.EntryPoint:
    found = [
        ep
        for ep in importlib.metadata.entry_points(group="toolwire.policies")
        if ep.name == "policy"
    ]
    assert 1 == len(found), "toolwire-policy is not installed with its entry point"
    return found[0]


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_the_entry_point_is_installed_and_loads() -> None:
    ep = _entry_point()
    module = ep.load()
    assert ("toolwire_policy.plugin", "toolwire-policy") == (
        ep.value,
        ep.dist.name if ep.dist else None,
    )
    assert callable(module.toolwire_tool_decision)


def _host() -> Any:
    plugins = pytest.importorskip("toolwire._plugins", reason="the plugin host is not there yet")
    return plugins.PluginHost(autoload=True, allow=["policy"], deny=[], strict=False)


def _round(toolset: Toolset, hooks: Any, *calls: ToolCall) -> Any:
    # Availability.all(): every tool the policy did not hide is offered; a call to a hidden
    # tool is a NotAvailable issue, never a valid call.
    # plugins=False: the hooks are given; the process's default host must not be made here,
    # under this test's TOOLWIRE_POLICY, and outlive it (a later test's bare round in the
    # same worker was decided by this test's policy).
    turn = resolve_turn(
        toolset, availability=Availability.all(), hooks=hooks, context=CTX, plugins=False
    )
    outcome = decode_reply(Session(), turn, AssistantReply(tool_calls=calls))
    assert isinstance(outcome, NeedsTools)
    return turn, outcome.round.apply_hooks()


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_the_host_loads_the_policy_and_applies_it(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, tools: Tools
) -> None:
    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file("deny = ['drop_table']\n")))
    host = _host().discover()
    [record] = [r for r in host.plugins if r.name == "policy"]
    assert ("policy", "toolwire-policy", "loaded", ()) == (
        record.kind,
        record.distribution,
        record.status,
        host.blocked,
    )
    toolset = host.assemble(Toolset("app", list(tools.values())))
    turn, plan = _round(
        toolset,
        host.hook_sets(),
        ToolCall("c1", "read_notes", '{"path": "a"}'),
        ToolCall("c2", "drop_table", '{"name": "users"}'),
    )
    assert (
        ["read_notes", "write_notes", "http_get"],
        ["c1"],
        [],
        [
            "tool `drop_table` is not available in this round (hidden by `plugin:policy`: "
            "tool `drop_table` is denied by the organisation policy)"
        ],
    ) == (
        [t.name for t in turn.tools],
        [c.id for c in plan.pending],
        [r.reason for r in plan.rejected],
        [i.reason for i in plan.issues],
    )


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_the_host_blocks_every_call_when_the_policy_is_malformed(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, tools: Tools
) -> None:
    path = policy_file("allow = 'everything'\n")
    monkeypatch.setenv("TOOLWIRE_POLICY", str(path))
    host = _host().discover()
    [record] = [r for r in host.plugins if r.name == "policy"]
    assert ("failed", True) == (record.status, f"policy file '{path}' is invalid" in record.reason)
    assert 1 == len(host.blocked)
    toolset = host.assemble(Toolset("app", list(tools.values())))
    _, plan = _round(toolset, host.hook_sets(), ToolCall("c1", "read_notes", '{"path": "a"}'))
    [rejected] = plan.rejected
    assert [] == list(plan.pending)
    # The model reads which policy failed; the file's detail is the operator's (host.blocked).
    assert "allow: Input should be a valid list" not in rejected.reason
    assert rejected.reason.startswith("policy `policy` failed to load (")
    assert "allow: Input should be a valid list" in host.blocked[0]
    assert rejection_reason(rejected.result.content) == rejected.reason


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
async def test_the_host_runs_an_async_approver(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, tools: Tools
) -> None:
    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file("approve_effects = ['mutating']\n")))
    host = _host().discover()
    asked: list[str] = []

    async def approver(call: TypedCall[Any], reason: str) -> bool:
        asked.append(call.id)
        return bool(call.input.path == "ok.txt")

    ctx = HookContext(extra={APPROVER: approver})
    toolset = host.assemble(Toolset("app", list(tools.values())))
    turn = resolve_turn(toolset, hooks=host.hook_sets(), context=ctx, plugins=host)
    reply = AssistantReply(
        tool_calls=(
            ToolCall("c1", "write_notes", '{"path": "ok.txt", "content": "x"}'),
            ToolCall("c2", "write_notes", '{"path": "no.txt", "content": "x"}'),
        )
    )
    outcome = decode_reply(Session(), turn, reply)
    assert isinstance(outcome, NeedsTools)
    plan = await outcome.round.aapply_hooks()
    assert (["c1", "c2"], ["c1"], ["c2"]) == (
        asked,
        [c.id for c in plan.pending],
        [r.call.id for r in plan.rejected],
    )
    assert plan.rejected[0].reason.startswith("requires approval: ")


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_the_host_runs_the_result_hook(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, call_of: CallOf, tmp_path: Path
) -> None:
    text = "[[redact]]\nresult_patterns = ['s3cret']\n[audit]\npath = 'audit.jsonl'\n"
    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file(text)))
    host = _host().discover()
    call = call_of("read_notes", {"path": "a"})
    out = host.tool_result(call, call.complete("the s3cret is out"), CTX)
    audit = (tmp_path / "audit.jsonl").read_text()
    assert ("the [REDACTED] is out", 1, False) == (
        out.content,
        audit.count('"event":"result"'),
        "s3cret" in audit,
    )


def test_an_async_approver_in_a_sync_pipeline_rejects_and_leaves_nothing_unawaited(
    policy_file: WritePolicy, tools: Tools
) -> None:
    plugins = pytest.importorskip("toolwire._plugins", reason="the plugin host is not there yet")
    host = plugins.PluginHost(autoload=False)
    host.register(PolicyPlugin.from_file(policy_file("approve = ['*']\n")), "org", kind="policy")

    async def approver(call: TypedCall[Any], reason: str) -> bool:
        return True

    ctx = HookContext(extra={APPROVER: approver})
    toolset = host.assemble(Toolset("app", list(tools.values())))
    turn = resolve_turn(toolset, hooks=host.hook_sets(), context=ctx, plugins=host)
    reply = AssistantReply(tool_calls=(ToolCall("c1", "read_notes", '{"path": "a"}'),))
    outcome = decode_reply(Session(), turn, reply)
    assert isinstance(outcome, NeedsTools)
    plan = outcome.round.apply_hooks()
    assert ([], "hook `plugin:org` is async; use `await round.aapply_hooks(...)`") == (
        list(plan.pending),
        plan.rejected[0].reason,
    )
    del plan, outcome
    gc.collect()  # an un-awaited coroutine would warn here, and warnings are errors


# -- media in results (#27) ------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)
PDF = b"%PDF-1.4\n%%EOF\n"


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
@pytest.mark.parametrize(
    ("rules", "kept", "why"),
    [
        ("result_media = ['image/*']\n", ["image/png"], "application/pdf is not in the policy"),
        ("result_media = []\n", [], "image/png is not in the policy's result_media"),
        ("max_result_bytes = 30\n", [], "over the policy's max_result_bytes (30)"),
        ("max_result_bytes = 100000\n", ["image/png", "application/pdf"], None),
    ],
)
def test_the_policy_withholds_media_it_does_not_allow(
    policy_file: WritePolicy,
    monkeypatch: pytest.MonkeyPatch,
    call_of: CallOf,
    tmp_path: Path,
    rules: str,
    kept: list[str],
    why: str | None,
) -> None:
    import toolwire as tw

    text = rules + "[[redact]]\nresult_patterns = ['s3cret']\n[audit]\npath = 'audit.jsonl'\n"
    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file(text)))
    host = _host().discover()
    call = call_of("read_notes", {"path": "a"})
    given = call.complete(["the s3cret chart", tw.Image(PNG), tw.File(PDF, name="c.pdf")])
    out = host.tool_result(call, given, CTX)
    assert [p.media_type for p in out.media] == kept
    assert out.parts[0].text.startswith("the [REDACTED] chart")  # the text is kept, redacted
    assert not out.is_error
    if why is not None:
        assert why in out.content
    audit = (tmp_path / "audit.jsonl").read_text()
    record = json.loads(audit.splitlines()[-1])
    assert [m["media_type"] for m in record["media"]] == kept
    assert "PNG" not in audit  # digests and sizes, never bytes
    assert len(record.get("media_withheld", [])) == 2 - len(kept)


@pytest.mark.usefixtures("no_policy_env")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("result_media = ['images']\n", "result_media"),
        ("result_media = 'image/*'\n", "result_media"),
        ("max_result_bytes = -1\n", "max_result_bytes"),
        ("max_result_byte = 5\n", "max_result_byte"),
    ],
)
def test_malformed_media_rules_are_refused(
    policy_file: WritePolicy, text: str, message: str
) -> None:
    with pytest.raises(PolicyFileError, match=message):
        Policy.from_file(policy_file(text))


@pytest.mark.usefixtures("fresh_plugin_module", "no_policy_env")
def test_a_tools_copy_of_a_media_line_does_not_keep_withheld_media(
    policy_file: WritePolicy, monkeypatch: pytest.MonkeyPatch, call_of: CallOf
) -> None:
    # Reproducer: the tool's text holds a copy of its image's line. Withholding by
    # replacing the first copy of the line in the text kept the image itself.
    import toolwire as tw

    monkeypatch.setenv("TOOLWIRE_POLICY", str(policy_file("result_media = []\n")))
    host = _host().discover()
    call = call_of("read_notes", {"path": "a"})
    image = tw.Image(PNG)
    given = call.complete([image.label(), image])
    out = host.tool_result(call, given, CTX)
    assert out.media == ()
    assert "withheld: image/png is not in the policy's result_media" in out.content
