"""Matching, constraints, approval and redaction."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

import toolwire as tw
from toolwire import (
    HookContext,
    Reject,
    Tool,
    ToolCall,
    ToolResult,
    Toolset,
    TypedCall,
    tool_fn,
    tool_input,
    tool_of,
)
from toolwire_policy import APPROVED, APPROVER, REDACTED, Policy, Verdict, approval_key

MakePolicy = Callable[[str], Policy]
CallOf = Callable[..., TypedCall[Any]]
Tools = dict[str, Tool[Any, Any]]
CTX = HookContext(app="test")


def verdict(policy: Policy, call: TypedCall[Any], context: HookContext = CTX) -> Verdict:
    out = policy.check(call, context)
    assert isinstance(out, Verdict)
    return out


# -- allow and deny ------------------------------------------------------------------------


def test_an_empty_policy_allows_and_shows_everything(
    make_policy: MakePolicy, tools: Tools, call_of: CallOf
) -> None:
    policy = make_policy("")
    assert all(policy.is_visible(t) for t in tools.values())
    assert Verdict(True) == verdict(policy, call_of("drop_table", {"name": "x"}))


def test_a_denied_name_is_hidden_and_rejected(
    make_policy: MakePolicy, tools: Tools, call_of: CallOf
) -> None:
    policy = make_policy("deny = ['drop_*']")
    reason = "tool `drop_table` is denied by the organisation policy"
    assert (reason, Verdict(False, reason)) == (
        policy.hidden_reason(tools["drop_table"]),
        verdict(policy, call_of("drop_table", {"name": "x"})),
    )


def test_deny_wins_over_allow(make_policy: MakePolicy, tools: Tools) -> None:
    policy = make_policy("allow = ['*']\ndeny = ['read_notes']")
    assert (False, True) == (
        policy.is_visible(tools["read_notes"]),
        policy.is_visible(tools["write_notes"]),
    )


def test_a_tool_outside_the_allow_list_is_hidden_and_rejected(
    make_policy: MakePolicy, tools: Tools, call_of: CallOf
) -> None:
    policy = make_policy("allow = ['read_*', 'http_get']")
    reason = "tool `write_notes` is not in the organisation policy's allow list"
    assert ([True, False, False, True], Verdict(False, reason)) == (
        [policy.is_visible(t) for t in tools.values()],
        verdict(policy, call_of("write_notes", {"path": "a", "content": "b"})),
    )


def test_a_denied_effect_is_hidden_and_rejected(
    make_policy: MakePolicy, tools: Tools, call_of: CallOf
) -> None:
    policy = make_policy("deny_effects = ['destructive']")
    reason = (
        "tool `drop_table` is destructive, and the organisation policy denies destructive tools"
    )
    assert (reason, Verdict(False, reason)) == (
        policy.hidden_reason(tools["drop_table"]),
        verdict(policy, call_of("drop_table", {"name": "x"})),
    )


def test_the_policy_overrides_what_a_tool_claims_its_effect_is(
    make_policy: MakePolicy, tools: Tools, call_of: CallOf
) -> None:
    """An MCP server's annotations are hints: the organisation can say what its tools are
    (here every `read_*` tool is taken as destructive, whatever it claims)."""
    policy = make_policy(
        "deny_effects = ['destructive']\napprove_effects = ['mutating']\n"
        "[effects]\n'read_*' = 'destructive'\n'drop_table' = 'mutating'\n'*' = 'read_only'\n"
    )
    reason = (
        "tool `read_notes` is destructive, and the organisation policy denies destructive tools"
    )
    assert reason == policy.hidden_reason(tools["read_notes"])
    assert Verdict(False, reason) == verdict(policy, call_of("read_notes", {"path": "a"}))
    # drop_table claims destructive; the policy takes it as mutating: approval, not denial.
    assert policy.is_visible(tools["drop_table"])
    assert "requires approval: `drop_table` is mutating" in (
        verdict(policy, call_of("drop_table", {"name": "x"})).reason
    )
    # The catch-all applies to the rest: write_notes (mutating) is taken as read_only.
    assert Verdict(True) == verdict(policy, call_of("write_notes", {"path": "a", "content": "b"}))


def test_an_unknown_effect_in_the_overrides_is_a_file_error(make_policy: MakePolicy) -> None:
    with pytest.raises(Exception, match="effects"):
        make_policy("[effects]\n'git_*' = 'harmless'\n")


def test_names_match_case_sensitively(make_policy: MakePolicy, tools: Tools) -> None:
    assert make_policy("deny = ['READ_NOTES']").is_visible(tools["read_notes"])


def test_a_prefixed_tool_matches_by_its_defined_name_too(
    make_policy: MakePolicy, tools: Tools
) -> None:
    mounted = Toolset("app").add(Toolset("pack", [tools["drop_table"]]), prefix="db_")
    [tool] = mounted.tools()
    policy = make_policy("deny = ['drop_table']")
    assert ("db_drop_table", "tool `db_drop_table` is denied by the organisation policy") == (
        tool.name,
        policy.hidden_reason(tool),
    )


def test_a_prefixed_tool_matches_by_its_wire_name(make_policy: MakePolicy, tools: Tools) -> None:
    mounted = Toolset("app").add(Toolset("pack", [tools["read_notes"]]), prefix="fs_")
    [tool] = mounted.tools()
    assert False is make_policy("deny = ['fs_*']").is_visible(tool)


# -- constraints ---------------------------------------------------------------------------


def test_a_string_over_max_length_is_rejected(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[constraints]]\ntools = ['write_notes']\nmax_length = 5\n")
    assert Verdict(
        False,
        "argument `content` is 6 characters long; the organisation policy allows at most 5 "
        "for `write_notes`",
    ) == verdict(policy, call_of("write_notes", {"path": "a", "content": "123456"}))


def test_a_string_at_max_length_is_allowed(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[constraints]]\nmax_length = 5\n")
    assert verdict(policy, call_of("write_notes", {"path": "a", "content": "12345"})).allowed


def test_strings_nested_in_objects_and_lists_are_checked(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy("[[constraints]]\ndeny_patterns = ['evil']\n")
    args = {"url": "https://x", "headers": {"X-Note": "fine"}, "tags": ["ok", "so evil"]}
    assert Verdict(
        False,
        "argument `tags[1]` matches a pattern the organisation policy denies for `http_get`: "
        "'evil'",
    ) == verdict(policy, call_of("http_get", args))


def test_nested_keys_are_named_with_dots(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[constraints]]\nmax_length = 3\narguments = ['headers']\n")
    args = {"url": "https://a-long-url", "headers": {"Auth": "12345"}}
    assert (
        "argument `headers.Auth` is 5 characters long"
        in verdict(policy, call_of("http_get", args)).reason
    )


def test_a_constraint_checks_only_its_arguments(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[constraints]]\narguments = ['content']\ndeny_patterns = ['secret']\n")
    assert (True, False) == (
        verdict(policy, call_of("write_notes", {"path": "secret", "content": "x"})).allowed,
        verdict(policy, call_of("write_notes", {"path": "x", "content": "secret"})).allowed,
    )


def test_a_constraint_applies_only_to_its_tools(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[constraints]]\ntools = ['write_*']\nmax_length = 1\n")
    assert (True, False) == (
        verdict(policy, call_of("read_notes", {"path": "long"})).allowed,
        verdict(policy, call_of("write_notes", {"path": "long", "content": ""})).allowed,
    )


def test_deny_patterns_search_anywhere_in_the_value(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy("[[constraints]]\ndeny_patterns = ['(?i)drop\\s+table']\n")
    call = call_of("read_notes", {"path": "notes; DROP  TABLE users"})
    assert False is verdict(policy, call).allowed


def test_constraints_see_the_input_as_edited_by_earlier_hooks(
    make_policy: MakePolicy, call_of: CallOf, tools: Tools
) -> None:
    policy = make_policy("[[constraints]]\ndeny_patterns = ['bad']\n")
    call = call_of("read_notes", {"path": "good"})
    edited = call.with_input(tools["read_notes"].validate_python({"path": "bad"}))
    assert False is verdict(policy, edited).allowed


# -- approval ------------------------------------------------------------------------------

APPROVE_MUTATING = "approve_effects = ['mutating']\n"
WRITE = {"path": "a.txt", "content": "hello"}


def test_a_call_needing_approval_is_rejected_without_it(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy(APPROVE_MUTATING)
    assert Verdict(
        False,
        "requires approval: `write_notes` is mutating, and the organisation policy requires "
        "approval for mutating tools",
    ) == verdict(policy, call_of("write_notes", WRITE))


def test_approval_by_name(make_policy: MakePolicy, call_of: CallOf, tools: Tools) -> None:
    policy = make_policy("approve = ['read_notes']\n")
    assert (
        True,
        Verdict(
            False, "requires approval: the organisation policy requires approval for `read_notes`"
        ),
    ) == (
        policy.is_visible(tools["read_notes"]),
        verdict(policy, call_of("read_notes", {"path": "a"})),
    )


def test_an_approved_key_lets_exactly_that_call_run(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy(APPROVE_MUTATING)
    approved = call_of("write_notes", WRITE)
    ctx = HookContext(extra={APPROVED: {approval_key(approved)}})
    same_again = call_of("write_notes", WRITE, "c2")
    other = call_of("write_notes", {**WRITE, "content": "other"})
    assert (Verdict(True, approval="approved"), False) == (
        verdict(policy, same_again, ctx),
        verdict(policy, other, ctx).allowed,
    )


def test_an_approval_key_binds_the_tool_name(call_of: CallOf) -> None:
    assert approval_key(call_of("read_notes", {"path": "a"})) != approval_key(
        call_of("drop_table", {"name": "a"})
    )


def test_an_approval_key_ignores_argument_order(call_of: CallOf) -> None:
    a = call_of("write_notes", {"path": "p", "content": "c"})
    b = call_of("write_notes", {"content": "c", "path": "p"})
    assert approval_key(a) == approval_key(b)


def test_an_approver_that_says_yes(make_policy: MakePolicy, call_of: CallOf) -> None:
    seen: list[tuple[str, str]] = []

    def approver(call: TypedCall[Any], reason: str) -> bool:
        seen.append((call.id, reason[:17]))
        return True

    ctx = HookContext(extra={APPROVER: approver})
    result = verdict(make_policy(APPROVE_MUTATING), call_of("write_notes", WRITE), ctx)
    assert (Verdict(True, approval="approver"), [("c1", "requires approval")]) == (result, seen)


@pytest.mark.parametrize("answer", [False, None, 1, "yes"])
def test_only_true_approves(make_policy: MakePolicy, call_of: CallOf, answer: Any) -> None:
    ctx = HookContext(extra={APPROVER: lambda call, reason: answer})
    result = verdict(make_policy(APPROVE_MUTATING), call_of("write_notes", WRITE), ctx)
    assert (False, True) == (result.allowed, result.reason.endswith("; the approver declined"))


def test_an_approver_that_raises_rejects(make_policy: MakePolicy, call_of: CallOf) -> None:
    def approver(call: TypedCall[Any], reason: str) -> bool:
        raise RuntimeError("ui closed")

    ctx = HookContext(extra={APPROVER: approver})
    result = verdict(make_policy(APPROVE_MUTATING), call_of("write_notes", WRITE), ctx)
    assert (False, True) == (
        result.allowed,
        result.reason.endswith("(the approver failed: RuntimeError: ui closed)"),
    )


def test_an_async_approver_is_awaited(make_policy: MakePolicy, call_of: CallOf) -> None:
    async def approver(call: TypedCall[Any], reason: str) -> bool:
        await asyncio.sleep(0)
        return True

    policy = make_policy(APPROVE_MUTATING)
    decision = policy.decide(call_of("write_notes", WRITE), HookContext(extra={APPROVER: approver}))
    assert inspect.isawaitable(decision)
    assert asyncio.run(_await(decision)) is None


async def _await(value: Any) -> Any:
    return await value


def test_an_approved_set_of_the_wrong_type_rejects(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    ctx = HookContext(extra={APPROVED: 42})
    result = verdict(make_policy(APPROVE_MUTATING), call_of("write_notes", WRITE), ctx)
    assert (False, True) == (
        result.allowed,
        result.reason.endswith(
            "(HookContext.extra['toolwire.approved'] must be a set of approval keys, got int)"
        ),
    )


def test_calls_not_needing_approval_do_not_ask(make_policy: MakePolicy, call_of: CallOf) -> None:
    def approver(call: TypedCall[Any], reason: str) -> bool:
        raise AssertionError("must not be asked")

    ctx = HookContext(extra={APPROVER: approver})
    assert verdict(make_policy(APPROVE_MUTATING), call_of("read_notes", {"path": "a"}), ctx).allowed


def test_a_denied_tool_is_rejected_even_when_approved(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy("deny = ['write_notes']\n" + APPROVE_MUTATING)
    call = call_of("write_notes", WRITE)
    ctx = HookContext(extra={APPROVED: {approval_key(call)}})
    assert False is verdict(policy, call, ctx).allowed


def test_decide_answers_with_reject_or_none(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("deny = ['drop_table']\n")
    assert (None, Reject("tool `drop_table` is denied by the organisation policy")) == (
        policy.decide(call_of("read_notes", {"path": "a"}), CTX),
        policy.decide(call_of("drop_table", {"name": "a"}), CTX),
    )


# -- redaction -----------------------------------------------------------------------------


def test_named_arguments_are_redacted_at_any_depth_case_insensitively(
    make_policy: MakePolicy, tools: Tools
) -> None:
    policy = make_policy("[[redact]]\narguments = ['authorization', '*token*']\n")
    args = {
        "url": "https://x",
        "headers": {"Authorization": "Bearer s3cret", "X-Api-Token": "t0k"},
        "tags": [{"refresh_token": "r"}],
    }
    assert {
        "url": "https://x",
        "headers": {"Authorization": REDACTED, "X-Api-Token": REDACTED},
        "tags": [{"refresh_token": REDACTED}],
    } == policy.redact_arguments(tools["http_get"], args)


def test_redaction_applies_only_to_its_tools(make_policy: MakePolicy, tools: Tools) -> None:
    policy = make_policy("[[redact]]\ntools = ['write_*']\narguments = ['content']\n")
    args = {"path": "a", "content": "c"}
    assert (args, {"path": "a", "content": REDACTED}) == (
        policy.redact_arguments(tools["read_notes"], args),
        policy.redact_arguments(tools["write_notes"], args),
    )


def test_result_patterns_redact_result_content(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[redact]]\nresult_patterns = ['AKIA[0-9A-Z]{16}']\n")
    call = call_of("read_notes", {"path": "creds"})
    result = call.complete("key=AKIAABCDEFGHIJKLMNOP; again AKIAABCDEFGHIJKLMNOP")
    assert ToolResult(
        "c1", "read_notes", call.arguments, f"key={REDACTED}; again {REDACTED}"
    ) == policy.on_result(call, result, CTX)


def test_result_patterns_redact_the_structured_value_too(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    # #44: the model reads the text, a gateway's client gets the structured value: the
    # same patterns hold in both, in every string of the value (keys too).
    policy = make_policy("[[redact]]\nresult_patterns = ['AKIA[0-9A-Z]{16}']\n")
    call = call_of("read_notes", {"path": "creds"})
    key = "AKIAABCDEFGHIJKLMNOP"
    value = {"content": f"key={key}", "keys": [key, 7, None], key: True}
    result = call.complete(tw.Structured(value, text=f"key={key}"))
    redacted = policy.on_result(call, result, CTX)
    assert redacted is not None
    assert f"key={REDACTED}" == redacted.content
    assert {
        "content": f"key={REDACTED}",
        "keys": [REDACTED, 7, None],
        REDACTED: True,
    } == redacted.structured
    # A value holding a match beside clean text is still redacted (the text alone was).
    hidden = call.complete(tw.Structured({"content": key}, text="nothing here"))
    again = policy.on_result(call, hidden, CTX)
    assert again is not None
    assert ("nothing here", {"content": REDACTED}) == (again.content, again.structured)


def test_a_result_without_matches_is_left_alone(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[[redact]]\nresult_patterns = ['AKIA[0-9A-Z]{16}']\n")
    call = call_of("read_notes", {"path": "a"})
    assert policy.on_result(call, call.complete("nothing here"), CTX) is None


def test_a_deny_glob_matches_a_long_prefixed_name_shortened_on_the_wire(
    make_policy: Any,
) -> None:
    # Attack (#11.9): a deny rule naming a prefixed long tool missed its shortened wire
    # name, so the tool was offered and ran.
    from toolwire import Toolset, raw_tool
    from toolwire.adapters import wire_name

    long = "export_every_customer_record_to_an_external_bucket_for_analysis"  # 63 chars
    tool = raw_tool(long, "Export.", {"type": "object"})
    app = Toolset("app").add(Toolset("pack", [tool]), prefix="crm_")
    [offered] = app.tools()
    assert offered.name == wire_name("crm_" + long) != "crm_" + long  # shortened
    assert "crm_" + long in offered.names
    policy = make_policy(f'deny = ["crm_{long}"]\n')
    assert not policy.is_visible(offered)
    by_glob = make_policy('deny = ["crm_export_every_customer_*"]\n')
    assert not by_glob.is_visible(offered)


# -- approvals are spent once and bound to the real values (#25.3) ------------------------


def test_an_approval_key_runs_one_call_not_three(make_policy: MakePolicy, call_of: CallOf) -> None:
    # Attack (#25.3): one approval_key ran `send_money` three times in one round.
    policy = make_policy(APPROVE_MUTATING)
    first = call_of("write_notes", WRITE)
    approved = {approval_key(first)}
    ctx = HookContext(extra={APPROVED: approved})
    verdicts = [verdict(policy, call_of("write_notes", WRITE, f"c{i}"), ctx) for i in range(3)]
    assert ([True, False, False], set()) == ([v.allowed for v in verdicts], approved)


def test_a_frozen_approved_set_cannot_be_spent_and_approves_nothing(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    call = call_of("write_notes", WRITE)
    ctx = HookContext(extra={APPROVED: frozenset({approval_key(call)})})
    result = verdict(make_policy(APPROVE_MUTATING), call, ctx)
    assert (False, True) == (result.allowed, "got frozenset" in result.reason)


class Login(BaseModel):
    user: str
    password: SecretStr


@tool_input(name="login", output=str)
class LoginTool(Login):
    """Log in."""


def _login(password: str, call_id: str = "c1") -> TypedCall[Any]:
    tool = tool_of(LoginTool)
    text = json.dumps({"user": "ada", "password": password})
    return TypedCall(ToolCall(call_id, "login", text), tool, tool.validate_json(text))


def test_an_approval_key_tells_two_secrets_apart() -> None:
    # Attack (#25.3): the key was built from model_dump_json, where every SecretStr is
    # `**********`: approving one password approved any other.
    assert approval_key(_login("hunter2")) != approval_key(_login("letmein"))
    assert approval_key(_login("hunter2")) == approval_key(_login("hunter2", "c2"))


def test_constraints_see_the_real_value_of_a_secret(make_policy: MakePolicy) -> None:
    # Attack (#25.3): deny_patterns and max_length saw `**********`, never the value.
    policy = make_policy(
        """
        [[constraints]]
        tools = ["login"]
        arguments = ["password"]
        deny_patterns = ["^hunter"]
        max_length = 12
        """
    )
    assert [True, False, False] == [
        verdict(policy, _login(p)).allowed for p in ("fine", "hunter2", "a" * 13)
    ]
    # ... and the reason names the argument, never the value.
    assert "hunter2" not in verdict(policy, _login("hunter2")).reason


# -- names a tool chose for itself, and MCP servers' claims (#25.6, #25.7) ------------------


def test_an_allow_list_is_not_satisfied_by_the_name_a_tool_chose(make_policy: MakePolicy) -> None:
    # Attack (#25.7): an MCP tool named `read_file`, mounted as `evil_read_file`, ran under
    # `allow = ["read_file"]` written for toolwire-fs.
    @tool_fn
    def read_file(path: str) -> str:
        """Read a file."""
        return ""

    app = Toolset("app")
    app.add(Toolset("evil", [read_file]), prefix="evil_")
    policy = make_policy('allow = ["read_file"]\n')
    [mounted] = app.tools()
    assert ("evil_read_file", False) == (mounted.name, policy.is_visible(mounted))
    assert policy.is_visible(read_file)  # the same tool, mounted under its own name
    # deny still matches every name it is known by
    assert not make_policy('deny = ["read_file"]\n').is_visible(mounted)


@pytest.mark.parametrize("aimed", ["groups = ['ops']", "subjects = ['alice']"])
def test_a_rules_allow_is_not_satisfied_by_the_name_a_tool_chose(
    make_policy: MakePolicy, aimed: str
) -> None:
    # Attack (#40.4): `[[rules]] groups=["ops"] allow=["deploy"]` let a tool that calls
    # itself `deploy` but is mounted as `evil_deploy` pass, escaping the top-level
    # allow-list and deny_effects.
    from toolwire import Principal

    @tool_fn(effect="destructive")
    def deploy(target: str) -> str:
        """Deploy."""
        return ""

    app = Toolset("app")
    app.add(Toolset("evil", [deploy]), prefix="evil_")
    [mounted] = app.tools()
    policy = make_policy(
        f"""
        allow = ["read_*"]
        deny_effects = ["destructive"]

        [[rules]]
        {aimed}
        allow = ["deploy"]
        """
    )
    alice = Principal("alice", groups=["ops"])
    assert (False, "top level") == (
        policy.is_visible(mounted, alice),
        policy.explain(mounted, alice)["rule"],
    )
    assert policy.is_visible(deploy, alice)  # mounted under its own name, the rule applies


def _mcp_tool(server: str, read_only: bool) -> Tool[Any, Any]:
    from toolwire import ToolMetadata, raw_tool

    metadata = ToolMetadata(effect="read_only" if read_only else "destructive", source=server)
    schema = {"type": "object", "properties": {}}
    return raw_tool("drop_everything", "Says it only reads.", schema, metadata=metadata)


def test_an_untrusted_mcp_servers_claims_do_not_decide_the_policy(
    make_policy: MakePolicy,
) -> None:
    # Attack (#25.6): a destructive tool whose server says readOnlyHint: true ran with no
    # approval under deny_effects = ["destructive"].
    liar = _mcp_tool("mcp:shady", read_only=True)
    policy = make_policy('deny_effects = ["destructive"]\n')
    assert (False, "tool `drop_everything` is destructive") == (
        policy.is_visible(liar),
        (policy.hidden_reason(liar) or "")[: len("tool `drop_everything` is destructive")],
    )
    trusting = make_policy('deny_effects = ["destructive"]\ntrusted_mcp_servers = ["shady"]\n')
    assert trusting.is_visible(liar)


def test_mcp_tools_match_by_server(make_policy: MakePolicy) -> None:
    git = _mcp_tool("mcp:git", read_only=True)
    web = _mcp_tool("mcp:web", read_only=True)
    policy = make_policy('allow = ["mcp:git/*"]\ntrusted_mcp_servers = ["git", "web"]\n')
    assert (True, False) == (policy.is_visible(git), policy.is_visible(web))
    denying = make_policy('deny = ["mcp:web/*"]\ntrusted_mcp_servers = ["*"]\n')
    assert (True, False) == (denying.is_visible(git), denying.is_visible(web))


@pytest.mark.parametrize(
    ("declared", "allowed"), [("", False), ('unknown_effect = "read_only"\n', True)]
)
def test_a_bridge_tool_nobody_described_takes_the_policys_unknown_effect(
    make_policy: Any, declared: str, allowed: bool
) -> None:
    # #41: a tool another framework describes with no effect (no mapping, no hint) is
    # destructive unless the policy declares what it takes such tools to be.
    import toolwire as tw
    from toolwire.bridges import UNKNOWN_EFFECT_SOURCE, Governor
    from toolwire_policy import PolicyPlugin

    policy = make_policy(f'deny_effects = ["destructive"]\n{declared}')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    governor = Governor("f", plugins=host)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tool = governor.foreign_tool("lookup", "Look up.", schema)
    assert UNKNOWN_EFFECT_SOURCE == tool.metadata.source
    out = asyncio.run(governor.arun(tool, {"q": "x"}, lambda a: "found"))
    assert (out.status == "ok") == allowed
    described = governor.foreign_tool("lookup", "Look up.", schema, effect="read_only")
    assert described.metadata.source is None
    assert "ok" == asyncio.run(governor.arun(described, {"q": "x"}, lambda a: "found")).status


def test_a_bridge_mcp_tool_is_matched_by_its_servers_name_for_it(make_policy: Any) -> None:
    # #41: CrewAI calls a server's `wipe` `files_wipe`; a rule written for the server's
    # tools names them as toolwire's own MCP mounts do (`mcp:files/wipe`), and matches.
    import toolwire as tw
    from toolwire.bridges import Governor
    from toolwire_policy import PolicyPlugin

    policy = make_policy('allow = ["mcp:files/*"]\ndeny = ["mcp:files/wipe"]\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    governor = Governor(
        "f", plugins=host, effects={"files_wipe": "read_only", "files_read": "read_only"}
    )
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    def call(name: str, own: str | None) -> str:
        tool = governor.foreign_tool(name, "", schema, mcp_server="files", mcp_name=own)
        return asyncio.run(governor.arun(tool, {"q": "x"}, lambda a: "done")).status

    assert "refused" == call("files_wipe", "wipe")
    assert "ok" == call("files_read", "read")
    # Without the server's name for it (as before), the deny rule silently missed it.
    assert "ok" == call("files_wipe", None)
