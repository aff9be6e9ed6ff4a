"""#42: shadow mode. A policy with mode = "observe" decides and audits every call ("would
deny", "would ask") and enforces nothing: the call runs, nothing is hidden, nobody is
asked, nothing is redacted; the chain says what would have happened."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import toolwire as tw
from toolwire import HookContext, Principal
from toolwire_policy import verify_log
from toolwire_policy._plugin import PolicyPlugin

POLICY = """
mode = "observe"
deny = ["drop_table"]
approve = ["send_mail"]

[audit]
path = "audit.jsonl"

[[redact]]
result_patterns = ['sk-[a-z0-9]+']
"""


@tw.tool_fn(effect="destructive")
def drop_table(name: str) -> str:
    """Drop a table."""
    return f"dropped {name}"


@tw.tool_fn(effect="mutating")
def send_mail(to: str) -> str:
    """Send a mail."""
    return f"sent to {to}"


@tw.tool_fn
def lookup(query: str) -> str:
    """Look a query up."""
    return f"found {query}; key sk-abc123"


def _host(make_policy: Any) -> tuple[tw.PluginHost, Any]:
    policy = make_policy(POLICY)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    plugin = PolicyPlugin(policy)
    host.register(plugin, "corp", kind="policy")
    return host, plugin


def test_an_observing_policy_lets_every_call_run_and_records_what_it_would_do(
    make_policy: Any, tmp_path: Path
) -> None:
    host, plugin = _host(make_policy)
    asked: list[str] = []

    def approver(call: Any, reason: str) -> bool:
        asked.append(call.name)
        return False

    executor = tw.Executor(tools=[drop_table, send_mail, lookup], plugins=host)
    context = HookContext(principal=Principal("alice"), extra={"toolwire.approver": approver})
    results = [
        executor.execute(tw.ToolCall(f"c{i}", name, args), context=context)
        for i, (name, args) in enumerate(
            [
                ("drop_table", '{"name": "users"}'),
                ("send_mail", '{"to": "bob"}'),
                ("lookup", '{"query": "keys"}'),
            ]
        )
    ]
    assert ["dropped users", "sent to bob", "found keys; key sk-abc123"] == [
        r.content for r in results
    ]
    assert [] == asked  # nobody is asked in shadow mode
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    decisions = {r["tool"]: r for r in records if r["event"] == "decision"}
    assert ("allow", "observe", "reject") == (
        decisions["drop_table"]["decision"],
        decisions["drop_table"]["mode"],
        decisions["drop_table"]["would"],
    )
    assert "denied by the organisation policy" in decisions["drop_table"]["reason"]
    assert "ask" == decisions["send_mail"]["would"]
    assert "allow" == decisions["lookup"]["would"]
    [looked] = [r for r in records if r["event"] == "result" and r["tool"] == "lookup"]
    assert (1, "observe") == (looked["redactions"], looked["mode"])  # would redact one
    assert verify_log(tmp_path / "audit.jsonl").ok
    assert plugin.status().startswith("observing, not enforcing (mode = observe)")


def test_an_observing_policy_hides_nothing(make_policy: Any) -> None:
    _, observing = _host(make_policy)
    enforcing = PolicyPlugin(make_policy(POLICY.replace('mode = "observe"', "")))
    context = HookContext(principal=Principal("alice"))
    assert observing.toolwire_tool_availability(drop_table, context) is None
    assert not enforcing.toolwire_tool_availability(drop_table, context)  # hidden, with why


def test_enforce_is_the_default_and_a_bad_mode_is_refused(make_policy: Any) -> None:
    import pytest

    from toolwire_policy import PolicyFileError

    assert not make_policy('deny = ["x"]\n').observing
    with pytest.raises(PolicyFileError, match="mode"):
        make_policy('mode = "shadow"\n')


def test_plugins_and_a_gateways_start_say_the_policy_only_observes(tmp_path: Path) -> None:
    # Through the real entry point, in processes of their own: an operator sees that the
    # policy in force enforces nothing, where they look (toolwire plugins, the gateway's start).
    (tmp_path / "policy.toml").write_text('mode = "observe"\ndeny = ["ping"]\n')
    (tmp_path / "app.py").write_text(
        "import toolwire as tw\n\n@tw.tool_fn\ndef ping() -> str:\n    '''Ping.'''\n"
        "    return 'pong'\n\ntools = tw.Toolset('app', [ping])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
        TOOLWIRE_POLICY=str(tmp_path / "policy.toml"),
    )

    def toolwire(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolwire", *args, "--app", "app:tools"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            input="",
        )

    said = f"observing, not enforcing (mode = observe): {tmp_path / 'policy.toml'}"
    assert said in toolwire("plugins").stdout
    if importlib.util.find_spec("toolwire_mcp") is not None:  # the gateway, where installed
        served = toolwire("mcp", "serve", "--transport", "stdio")
        assert f"toolwire: policy `policy`: {said}" in served.stderr.splitlines(), served.stderr
    ran = toolwire("call", "ping", "{}")
    assert "result: pong" in ran.stdout  # denied, and run: observed, not enforced
