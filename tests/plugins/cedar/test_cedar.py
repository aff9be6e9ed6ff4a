"""#42: toolwire-cedar. The same scenarios written once in toolwire-policy's TOML and once
in Cedar give the same decisions; a Cedar policy that does not parse, does not validate
against the schema generated from the catalogue, or names a tool that does not exist
refuses to load, and the plugin fails closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw

cedar = pytest.importorskip("toolwire_cedar")
from toolwire_cedar import CedarPlugin, CedarPolicy, CedarPolicyError, schema_for  # noqa: E402
from toolwire_policy import AuditLog, Policy, PolicyPlugin, read_records  # noqa: E402


@tw.tool_fn
def git_status() -> str:
    """Show the status."""
    return "clean"


@tw.tool_fn
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tw.tool_fn(effect="destructive")
def git_reset(mode: str) -> str:
    """Reset the branch."""
    return f"reset {mode}"


@tw.tool_fn(effect="destructive")
def drop_table(name: str) -> str:
    """Drop a table."""
    return f"dropped {name}"


TOOLS = [git_status, read_file, git_reset, drop_table]

TOML = r"""
allow = ["git_status", "read_file", "git_reset"]
deny = ["drop_*"]
approve = ["git_reset"]

[[rules]]
subjects = ["mallory"]
deny = ["read_file"]

[[constraints]]
tools = ["read_file"]
arguments = ["path"]
deny_patterns = ['\.env$']
"""

CEDAR = """
@id("read")
permit(
  principal,
  action in [Toolwire::Action::"git_status", Toolwire::Action::"read_file"],
  resource
);

@id("reset")
@approval("resetting needs a second pair of eyes")
permit(principal, action == Toolwire::Action::"git_reset", resource);

@id("no-mallory")
forbid(principal == Toolwire::User::"mallory", action == Toolwire::Action::"read_file", resource);

@id("no-env")
forbid(principal, action == Toolwire::Action::"read_file", resource)
  when { context.input.path like "*.env" };
"""

#: (who, tool, arguments, what both policies decide)
SCENARIOS = [
    ("alice", "git_status", {}, "allow"),
    (None, "git_status", {}, "allow"),
    ("alice", "read_file", {"path": "notes.txt"}, "allow"),
    ("alice", "read_file", {"path": "prod.env"}, "deny"),
    ("mallory", "read_file", {"path": "notes.txt"}, "deny"),
    ("alice", "git_reset", {"mode": "hard"}, "ask"),
    ("alice", "drop_table", {"name": "users"}, "deny"),
]


def _host(engine: str, tmp_path: Path) -> tw.PluginHost:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    if engine == "toml":
        host.register(PolicyPlugin(Policy.from_text(TOML)), "corp", kind="policy")
    else:
        log = AuditLog(tmp_path / "cedar-audit.jsonl")
        host.register(
            CedarPlugin(CedarPolicy(CEDAR, source="test.cedar"), log),
            "cedar-under-test",
            kind="policy",
        )
    return host


def _decided(result: tw.ToolResult) -> str:
    reason = tw.adapters.rejection_reason(result)
    if reason is None:
        return "allow"
    return "ask" if "requires approval" in reason else "deny"


@pytest.mark.parametrize("engine", ["toml", "cedar"])
@pytest.mark.parametrize(("who", "tool", "arguments", "expected"), SCENARIOS)
def test_the_same_scenarios_decide_the_same_in_toml_and_cedar(
    tmp_path: Path,
    engine: str,
    who: str | None,
    tool: str,
    arguments: dict[str, Any],
    expected: str,
) -> None:
    executor = tw.Executor(tools=TOOLS, plugins=_host(engine, tmp_path))
    principal = tw.Principal(who) if who else None
    call = tw.ToolCall("c1", tool, json.dumps(arguments))
    result = executor.execute(call, context=tw.HookContext(principal=principal))
    assert expected == _decided(result), result.content


def test_a_cedar_decision_names_its_policies_in_the_refusal_and_the_record(tmp_path: Path) -> None:
    executor = tw.Executor(tools=TOOLS, plugins=_host("cedar", tmp_path))
    who = tw.HookContext(principal=tw.Principal("mallory"))
    refused = executor.execute(tw.ToolCall("c1", "read_file", '{"path": "a"}'), context=who)
    assert "forbidden by Cedar policy no-mallory" in refused.content
    nobody = executor.execute(tw.ToolCall("c2", "drop_table", '{"name": "x"}'), context=who)
    assert "no Cedar policy permits it" in nobody.content
    records = [r for _, _, r in read_records(tmp_path / "cedar-audit.jsonl") if r]
    assert [["no-mallory"], []] == [r["policies"] for r in records]
    assert ["mallory", "mallory"] == [r["principal"]["subject"] for r in records]


def test_an_approval_from_cedar_is_asked_and_spent_once(tmp_path: Path) -> None:
    executor = tw.Executor(tools=TOOLS, plugins=_host("cedar", tmp_path))
    asked: list[str] = []

    def person(call: Any, reason: str) -> bool:
        asked.append(reason)
        return True

    context = tw.HookContext(principal=tw.Principal("alice"), extra={"toolwire.approver": person})
    result = executor.execute(tw.ToolCall("c1", "git_reset", '{"mode": "hard"}'), context=context)
    assert "reset hard" == result.content
    assert ["requires approval: resetting needs a second pair of eyes"] == asked


def test_the_generated_schema_validates_the_policy_and_catches_a_stale_name(
    tmp_path: Path,
) -> None:
    schema, untyped = schema_for(tw.Toolset("app", TOOLS).tools())
    assert [] == untyped
    CedarPolicy(CEDAR, source="ok.cedar", schema=schema)  # validates
    # The error names the file and the line the failing policy starts on.
    stale = (
        'permit(principal, action == Toolwire::Action::"git_status", resource); // "a;b"\n\n'
        '@id("reset")\npermit(principal, action == Toolwire::Action::"git_git_reset", resource);'
    )
    with pytest.raises(CedarPolicyError, match="does not validate") as refused:
        CedarPolicy(stale, source="stale.cedar", schema=schema)
    assert "stale.cedar:3: [policy1] for policy `policy1`, unrecognized action" in str(
        refused.value
    )
    typo = 'permit(principal, action, resource) when { context.input.pth == "x;" };'
    with pytest.raises(CedarPolicyError, match=r"typo.cedar:1: \[policy0\]"):
        CedarPolicy(typo, source="typo.cedar", schema=schema)


def test_lint_names_the_actions_and_toolsets_that_match_nothing() -> None:
    # Loaded without a schema, a policy about a renamed tool still loads: lint says so.
    policy = CedarPolicy(
        '@id("stale") forbid(principal, action == Toolwire::Action::"git_git_reset", resource);\n'
        'forbid(principal, action in [Toolwire::Action::"git_status", Toolwire::Action::"rm"],'
        ' resource == Toolwire::Toolset::"mcp:gti");\n'
        "permit(principal, action, resource);",
        source="stale.cedar",
    )
    tools = [
        *tw.Toolset("app", TOOLS).tools(),
        tw.raw_tool("remote", "x", {"type": "object"}, source="mcp:git"),
    ]
    assert [
        "policy stale: action 'git_git_reset' names no tool (did you mean git_reset?)",
        "policy policy1: action 'rm' names no tool",
        "policy policy1: resource 'mcp:gti' names no toolset (did you mean mcp:git?)",
    ] == policy.lint(tools)
    assert [] == CedarPolicy(CEDAR, source="ok.cedar").lint(tools)
    plugin = CedarPlugin(
        CedarPolicy(
            'forbid(principal, action == Toolwire::Action::"x", '
            "resource);permit(principal, action, resource);",
            source="p.cedar",
        )
    )
    assert ["p.cedar: policy policy0: action 'x' names no tool"] == plugin.lint(tools)
    assert [] == CedarPlugin(None).lint(tools)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("permit(principal, action, resource) when { nonsense", "Cedar policy bad.cedar:1: "),
        (
            'permit(principal, action, resource);\n// "unfinished;\n\n  forbid(principal, ac',
            "Cedar policy bad.cedar:4: ",
        ),
        ('permit(principal, action, resource) when { "a;b" == 1 +', "Cedar policy bad.cedar:1: "),
        ("", "no policy in it"),
        ("// only a comment\n", "no policy in it"),
    ],
)
def test_a_policy_that_does_not_parse_is_refused(text: str, said: str) -> None:
    with pytest.raises(CedarPolicyError, match=said):
        CedarPolicy(text, source="bad.cedar")


def test_the_installed_plugin_fails_closed_on_a_bad_policy(tmp_path: Path) -> None:
    # Through its real entry point, in a process of its own: the host loads every policy.
    bad = tmp_path / "bad.cedar"
    bad.write_text("permit(principal, action, resource) when {")
    (tmp_path / "app.py").write_text(
        "import toolwire as tw\n\n@tw.tool_fn\ndef ping() -> str:\n    '''Ping.'''\n"
        "    return 'pong'\n\ntools = tw.Toolset('app', [ping])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
        TOOLWIRE_CEDAR_POLICY=str(bad),
    )
    out = subprocess.run(
        [sys.executable, "-m", "toolwire", "call", "ping", "--app", "app:tools", "{}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert "pong" not in out.stdout
    assert "cedar" in (out.stdout + out.stderr).lower()
    # A good policy through the same entry point: what it permits runs, the rest is refused.
    good = tmp_path / "good.cedar"
    good.write_text('permit(principal, action == Toolwire::Action::"ping", resource);')
    env["TOOLWIRE_CEDAR_POLICY"] = str(good)
    ran = subprocess.run(
        [sys.executable, "-m", "toolwire", "call", "ping", "--app", "app:tools", "{}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert (0, True) == (ran.returncode, "result: pong" in ran.stdout), ran.stdout + ran.stderr


def _call(tool: tw.Tool[Any, Any], arguments: dict[str, Any]) -> tw.TypedCall[Any]:
    value = tool.validate_python(arguments)
    return tw.TypedCall(tw.ToolCall("c1", tool.name, tool.dump_input(value)), tool, value)


def test_any_subject_and_group_is_an_id_as_it_is() -> None:
    # A subject written into Cedar's surface syntax with JSON's escapes ("jos\u00e9") did not
    # parse: the call was refused with an evaluation error, whatever the policy said.
    policy = CedarPolicy(
        'permit(principal == Toolwire::User::"josé", action, resource);\n'
        'permit(principal in Toolwire::Group::"équipe \\"ops\\"", action, resource);',
        source="names.cedar",
    )
    call = _call(git_status, {})
    for who in (tw.Principal("josé"), tw.Principal("bob", groups=frozenset({'équipe "ops"'}))):
        decided = policy.decide(call, tw.HookContext(principal=who))
        assert decided.allowed, decided.reason
    assert not policy.decide(call, tw.HookContext(principal=tw.Principal("jose"))).allowed


def test_a_principals_entities_are_parsed_once_and_kept_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolwire_cedar._engine as engine

    parsed: list[str] = []
    real = engine.cedarpy.Entities.from_json_str

    def counting(text: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(engine.cedarpy.Entities, "from_json_str", staticmethod(counting))
    monkeypatch.setattr(engine, "MAX_PRINCIPALS", 4)
    policy = CedarPolicy(CEDAR, source="ok.cedar")
    alice = tw.HookContext(principal=tw.Principal("alice", groups=frozenset({"ops"})))
    for _ in range(3):
        assert policy.decide(_call(git_status, {}), alice).allowed
    assert 1 == len(parsed)  # the same principal and groups: parsed once
    in_other_groups = tw.HookContext(principal=tw.Principal("alice"))
    assert policy.decide(_call(git_status, {}), in_other_groups).allowed
    assert 2 == len(parsed)  # other groups are another principal
    for i in range(20):
        policy.decide(_call(git_status, {}), tw.HookContext(principal=tw.Principal(f"u{i}")))
    assert len(policy._entities) <= 4
    mallory = tw.HookContext(principal=tw.Principal("mallory"))
    assert not policy.decide(_call(read_file, {"path": "a"}), mallory).allowed  # still decides


def test_check_and_plugins_say_a_policy_about_a_renamed_tool(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "import toolwire as tw\n\n@tw.tool_fn\ndef git_reset(mode: str) -> str:\n"
        "    '''Reset.'''\n    return mode\n\ntools = tw.Toolset('app', [git_reset])\n"
    )
    stale = tmp_path / "stale.cedar"
    stale.write_text(
        '@id("no-reset") forbid(principal, action == Toolwire::Action::"git_git_reset", '
        "resource);\npermit(principal, action, resource);\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    said = "policy no-reset: action 'git_git_reset' names no tool (did you mean git_reset?)"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", *args, "--app", "app:tools"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )

    checked = run("toolwire_cedar", "check", str(stale))
    assert (0, f"warning: {said}") == (checked.returncode, checked.stdout.splitlines()[0])
    assert 1 == run("toolwire_cedar", "check", str(stale), "--strict").returncode
    stale.write_text("permit(principal, action, resource) when {")
    assert 1 == run("toolwire_cedar", "check", str(stale)).returncode
    stale.write_text('forbid(principal, action == Toolwire::Action::"git_git_reset", resource);')
    env["TOOLWIRE_CEDAR_POLICY"] = str(stale)
    listed = run("toolwire", "plugins", "--json")
    [cedar_row] = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "cedar"]
    expected = f"{stale}: policy policy0: action 'git_git_reset' names no tool"
    assert [f"{expected} (did you mean git_reset?)"] == cedar_row["lint"]


def test_toolwire_cedar_schema_writes_the_catalogues_schema(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "import toolwire as tw\n\n@tw.tool_fn\ndef ping(times: int, ratio: float = 1.0) -> str:\n"
        "    '''Ping.'''\n    return 'pong'\n\ntools = tw.Toolset('app', [ping])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    out = subprocess.run(
        [sys.executable, "-m", "toolwire_cedar", "schema", "--app", "app:tools"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert 0 == out.returncode, out.stderr
    schema = json.loads(out.stdout)
    ping = schema["Toolwire"]["actions"]["ping"]["appliesTo"]["context"]["attributes"]["input"]
    assert {"type": "Long", "required": True} == ping["attributes"]["times"]
    assert "Cedar has no type for ping: ratio" in out.stderr  # a float: said, left out


def test_cedar_in_shadow_mode_runs_every_call_and_records_what_it_would_do(
    tmp_path: Path,
) -> None:
    plugin = CedarPlugin(
        CedarPolicy(CEDAR, source="t.cedar"), AuditLog(tmp_path / "a.jsonl"), observe=True
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(plugin, "cedar-under-test", kind="policy")
    asked: list[str] = []
    context = tw.HookContext(
        principal=tw.Principal("mallory"),
        extra={"toolwire.approver": lambda call, reason: asked.append(reason) or False},
    )
    executor = tw.Executor(tools=TOOLS, plugins=host)
    calls = [
        ("read_file", '{"path": "a"}'),
        ("git_reset", '{"mode": "hard"}'),
        ("git_status", "{}"),
    ]
    contents = [
        executor.execute(tw.ToolCall(f"c{i}", n, a), context=context).content
        for i, (n, a) in enumerate(calls)
    ]
    assert ["contents of a", "reset hard", "clean"] == contents
    assert [] == asked
    records = [r for _, _, r in read_records(tmp_path / "a.jsonl") if r]
    assert [("allow", "reject"), ("allow", "ask"), ("allow", "allow")] == [
        (r["decision"], r["would"]) for r in records
    ]
    assert plugin.status().startswith("observing, not enforcing")


def test_policy_cases_and_replay_run_against_a_cedar_policy(tmp_path: Path) -> None:
    # toolwire-policy's test and replay commands take either engine: the same cases file
    # passes against the TOML policy and its Cedar twin.
    from toolwire_policy._cases import Case, replay, run_cases

    catalogue = {t.name: t for t in TOOLS}
    cases = [
        Case(principal=w, tool=t, arguments=a, expect=e)  # type: ignore[arg-type]
        for w, t, a, e in SCENARIOS
    ]
    (tmp_path / "p.cedar").write_text(CEDAR)
    (tmp_path / "p.toml").write_text(TOML)
    for policy in ("p.cedar", "p.toml"):
        results = run_cases(tmp_path / policy, cases, catalogue)
        assert [] == [(r.label, r.case.expect, r.got) for r in results if not r.passed]
    # A log the TOML policy wrote, replayed under the Cedar twin: nothing changes.
    log = tmp_path / "audit.jsonl"
    (tmp_path / "logged.toml").write_text(TOML + f'\n[audit]\npath = "{log}"\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "logged.toml")), "t", kind="policy")
    executor = tw.Executor(tools=TOOLS, plugins=host)
    for i, (who, tool, arguments, _) in enumerate(SCENARIOS):
        principal = tw.Principal(who) if who else None
        call = tw.ToolCall(f"c{i}", tool, json.dumps(arguments))
        executor.execute(call, context=tw.HookContext(principal=principal))
    decided, changed = replay(tmp_path / "p.cedar", log, catalogue)
    assert (len(SCENARIOS), []) == (decided, changed)


def test_a_cedar_policy_names_who_approves_through_the_queue(tmp_path: Path) -> None:
    """#43: `@approvers(...)` on a permitting policy that asks: the call is filed in the
    approval queue for the people it names (the caller's own approver counts for
    nothing), and runs once one of them approves it."""
    from toolwire.approvals import ApprovalError, ApprovalQueue, request_ids_in

    text = CEDAR.replace(
        '@approval("resetting needs a second pair of eyes")',
        '@approval("resetting needs a second pair of eyes")\n'
        '@approvers("group:ops, user:carol")\n@expires("600")',
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(CedarPlugin(CedarPolicy(text, source="t.cedar")), "cedar-q", kind="policy")
    executor = tw.Executor(tools=TOOLS, plugins=host)
    yes = {"toolwire.approver": lambda call, reason: True}  # not theirs to answer
    context = tw.HookContext(principal=tw.Principal("alice"), extra=yes)
    call = tw.ToolCall("c1", "git_reset", '{"mode": "hard"}')
    refused = executor.execute(call, context=context)
    assert "waits for group:ops, user:carol as approval request" in refused.content
    [rid] = request_ids_in(refused.content)
    queue = ApprovalQueue()  # the default queue, under the tests' own XDG_DATA_HOME
    request = queue.get(rid)
    assert request is not None
    assert request.approvers == ("group:ops", "user:carol")
    assert 590 < request.expires - request.created <= 600
    with pytest.raises(ApprovalError, match="may not answer"):
        queue.answer(rid, approve=True, by=tw.Principal("dave"))
    queue.answer(rid, approve=True, by=tw.Principal("carol"), arguments={"mode": "soft"})
    ran = executor.execute(call, context=context)
    assert "reset soft" == ran.content  # the approver's arguments, decided by Cedar again
    again = executor.execute(call, context=context)
    assert "apr_" in again.content  # spent


def test_the_cedar_log_is_offered_to_its_approvers_or_named_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#43: the approval console reads Cedar's audit log too (toolwire_audit_trails):
    whole, newest first, for the people its `@approvers` name (or READERS_ENV)."""
    from toolwire_cedar._plugin import READERS_ENV

    text = CEDAR.replace(
        '@approval("resetting needs a second pair of eyes")',
        '@approval("resetting needs a second pair of eyes")\n@approvers("group:ops, user:carol")',
    )
    monkeypatch.delenv(READERS_ENV, raising=False)
    plugin = CedarPlugin(CedarPolicy(text, source="t.cedar"), AuditLog(tmp_path / "c.jsonl"))
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(plugin, "cedar-log", kind="policy")
    executor = tw.Executor(tools=TOOLS, plugins=host)
    context = tw.HookContext(principal=tw.Principal("alice"))
    executor.execute(tw.ToolCall("c1", "git_status", "{}"), context=context)
    executor.execute(tw.ToolCall("c2", "drop_table", '{"name": "t"}'), context=context)
    (trail,) = host.audit_trails()
    assert trail.name == f"cedar: {tmp_path / 'c.jsonl'}"
    assert trail.readable_by(tw.Principal("carol"))
    assert trail.readable_by(tw.Principal("olga", groups={"ops"}))
    assert not trail.readable_by(tw.Principal("alice"))
    check = trail.verify()
    assert check.whole
    assert check.records == 2
    assert [r["tool"] for r in trail.records()] == ["drop_table", "git_status"]
    assert [r["tool"] for r in trail.records(decision="reject")] == ["drop_table"]

    monkeypatch.setenv(READERS_ENV, "group:security, user:sam")
    (trail,) = host.audit_trails()
    assert trail.readable_by(tw.Principal("sam"))
    assert not trail.readable_by(tw.Principal("carol"))
    # Without a log, nothing is offered.
    bare = tw.PluginHost(autoload=False, disable_policies=False)
    bare.register(CedarPlugin(CedarPolicy(text, source="t.cedar")), "cedar-bare", kind="policy")
    assert [] == bare.audit_trails()
