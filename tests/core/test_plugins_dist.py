"""Discovery through real installed distributions with real entry points.

A session-scoped virtual environment holds toolwire and the fixture
distributions of ``tests/fixtures/dists`` (see ``tests/fixtures/plugin_venv.py``);
each test runs Python in it, with its own switches.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
plugin_venv = importlib.import_module("plugin_venv")

EVERYTHING_BUT_THE_BROKEN_POLICY = {"TOOLWIRE_DISABLE_POLICIES": "brokenpolicy"}

REPORT = """
import json, sys
from toolwire import PluginHost
host = PluginHost()
{body}
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Any:
    built = plugin_venv.build(tmp_path_factory.getbasetemp() / "plugin-venv")
    if built is None:
        pytest.skip("uv is needed to build the fixture environment")
    return built


def report(venv: Any, body: str, **switches: str) -> Any:
    done = venv.python_code(REPORT.format(body=body), **switches)
    assert 0 == done.returncode, done.stderr
    return json.loads(done.stdout)


STATUS = """
host.assemble(); host.providers()
out = {f"{r.kind}:{r.name}": [r.distribution, r.version, r.status] for r in host.plugins}
"""


def test_discovery_records_every_plugin_with_its_distribution(venv: Any) -> None:
    assert {
        "policy:brokenpolicy": ["tw-broken-policy", "1.0", "disabled"],
        "policy:raisingpolicy": ["tw-raising-policy", "1.0", "loaded"],
        "toolset:badregister": ["tw-bad-register", "1.0", "failed"],
        "toolset:brokenimport": ["tw-broken-import", "1.0", "failed"],
        "toolset:goodpack": ["tw-good-pack", "1.0", "loaded"],
        "provider:canned": ["tw-canned-provider", "1.0", "loaded"],
        "provider:test": ["toolwire", "0.1.0", "loaded"],
    } == report(venv, STATUS, **EVERYTHING_BUT_THE_BROKEN_POLICY)


def test_failures_carry_the_reason(venv: Any) -> None:
    body = """
host.assemble()
out = {r.name: r.reason for r in host.failures}
"""
    assert {
        "brokenimport": "failed to import `tw_broken_import`: ImportError: tw_broken_import "
        "needs the `frobnicate` package, which is not installed",
        "badregister": "failed to register its toolsets: PluginError: register() takes a "
        "toolwire.Toolset, got FunctionTool; wrap tools as Toolset('name', [tool, ...])",
    } == report(venv, body, **EVERYTHING_BUT_THE_BROKEN_POLICY)


def test_plugins_are_imported_only_when_needed(venv: Any) -> None:
    body = """
mods = ("tw_raising_policy", "tw_good_pack", "tw_canned_provider", "toolwire.providers.test")
seen = lambda: [m for m in mods if m in sys.modules]
out = []
host.discover(); out.append(seen())
host.assemble(); out.append(seen())
host.provider("test"); out.append(seen())
host.provider("canned"); out.append(seen())
"""
    assert [
        ["tw_raising_policy"],
        ["tw_raising_policy", "tw_good_pack"],
        ["tw_raising_policy", "tw_good_pack", "toolwire.providers.test"],
        ["tw_raising_policy", "tw_good_pack", "tw_canned_provider", "toolwire.providers.test"],
    ] == report(venv, body, **EVERYTHING_BUT_THE_BROKEN_POLICY)


def test_importing_toolwire_imports_no_plugin_machinery(venv: Any) -> None:
    code = (
        "import sys, toolwire; prefixes = ('pluggy', 'importlib_metadata', 'tw_'); "
        "print(sorted(m for m in sys.modules if m.startswith(prefixes)))"
    )
    done = venv.python_code(code)
    assert ("[]", "") == (done.stdout.strip(), done.stderr)


def test_strict_mode_fails_naming_the_plugin(venv: Any) -> None:
    done = venv.python_code(
        "from toolwire import PluginHost; PluginHost().assemble()",
        TOOLWIRE_STRICT_PLUGINS="1",
        TOOLWIRE_DISABLE_PLUGINS="badregister",
        TOOLWIRE_DISABLE_POLICIES="brokenpolicy",
    )
    assert 1 == done.returncode
    assert (
        "toolwire.exceptions.PluginError: toolset plugin `brokenimport` (tw-broken-import 1.0) "
        "failed to import `tw_broken_import`"
    ) in done.stderr


def test_the_allow_list_loads_only_the_named_plugins_and_every_policy(venv: Any) -> None:
    # Attack (#11.4): TOOLWIRE_PLUGINS=fs used to switch the organisation's policy off.
    statuses = report(venv, STATUS, TOOLWIRE_PLUGINS="goodpack,canned")
    assert {
        "policy:brokenpolicy": "failed",  # not on the list, still loaded (and it fails closed)
        "policy:raisingpolicy": "loaded",
        "toolset:badregister": "disabled",
        "toolset:brokenimport": "disabled",
        "toolset:goodpack": "loaded",
        "provider:canned": "loaded",
        "provider:test": "loaded",  # built-ins are exempt from the allow-list
    } == {k: v[2] for k, v in statuses.items()}


def test_autoload_off_reads_no_tool_pack_provider_or_backend_but_every_policy(venv: Any) -> None:
    # Attack (#25.2): TOOLWIRE_AUTOLOAD_PLUGINS=0 used to switch the organisation's policy off.
    statuses = report(venv, STATUS, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    assert {
        "policy:brokenpolicy": ["tw-broken-policy", "1.0", "failed"],
        "policy:raisingpolicy": ["tw-raising-policy", "1.0", "loaded"],
        "provider:test": ["toolwire", "0.1.0", "loaded"],
    } == statuses


def test_autoload_off_in_code_keeps_the_policies_too(venv: Any) -> None:
    body = """
host = PluginHost(autoload=False, deny=["raisingpolicy"], allow=[])
host.assemble()
out = {r.name: r.status for r in host.plugins}
"""
    assert {
        "brokenpolicy": "failed",
        "raisingpolicy": "loaded",
        "test": "discovered",
    } == report(venv, body)


def test_a_policy_that_fails_to_load_blocks_every_call(venv: Any) -> None:
    body = """
import toolwire as tw
toolset = host.assemble()
turn = tw.resolve_turn(toolset, hooks=host.hook_sets())
reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", "echo", '{"text": "hi"}'),), "tool_calls")
plan = tw.adapters.decode_reply(tw.Session(), turn, reply).round.apply_hooks()
out = [[r.source, r.reason] for r in plan.rejected] + [len(plan.pending), list(host.blocked)]
"""
    # The model reads the policy and the error's type; the operator reads the detail.
    assert [
        [
            "plugin:brokenpolicy",
            "policy `brokenpolicy` failed to load (RuntimeError), so tool calls are blocked",
        ],
        0,
        [
            "policy `brokenpolicy` (tw-broken-policy 1.0) failed to load, so tool calls are "
            "blocked: failed to import `tw_broken_policy`: RuntimeError: cannot read "
            "/etc/corp/policy.toml"
        ],
    ] == report(venv, body)


def test_a_raising_policy_rejects_only_what_it_raised_for(venv: Any) -> None:
    body = """
import toolwire as tw
toolset = host.assemble()
turn = tw.resolve_turn(toolset, hooks=host.hook_sets())
calls = (tw.ToolCall("c1", "echo", '{"text": "hi"}'), tw.ToolCall("c2", "delete_file", '{"path": "/"}'))
plan = tw.adapters.decode_reply(tw.Session(), turn, tw.adapters.AssistantReply("", calls, "tool_calls")).round.apply_hooks()
out = [[c.name for c in plan.pending], [[r.call.name, r.reason] for r in plan.rejected]]
"""  # noqa: E501 - code run in the venv
    assert [
        ["echo"],
        [
            [
                "delete_file",
                "hook `plugin:raisingpolicy` failed (RuntimeError)",
            ]
        ],
    ] == report(venv, body, **EVERYTHING_BUT_THE_BROKEN_POLICY)


def test_the_deny_list_does_not_switch_a_policy_off(venv: Any) -> None:
    # Attack (#25.2): a deny-list that selects plugins must not drop a policy.
    done = venv.python_code(
        "from toolwire import PluginHost; h = PluginHost().discover();"
        "print([r.status for r in h.plugins if r.name == 'raisingpolicy'])",
        TOOLWIRE_DISABLE_PLUGINS="raisingpolicy",
        TOOLWIRE_DISABLE_POLICIES="brokenpolicy",
    )
    assert 0 == done.returncode, done.stderr
    assert "['loaded']" == done.stdout.strip()
    assert (
        "policy `raisingpolicy` (tw-raising-policy 1.0) is listed in TOOLWIRE_DISABLE_PLUGINS, "
        "which does not turn a policy off: it stays in force"
    ) in done.stderr


def test_a_deny_list_given_in_code_is_named_as_such(venv: Any) -> None:
    # It was reported as the environment variable, which the user never set.
    done = venv.python_code(
        "from toolwire import PluginHost; h = PluginHost(deny=['goodpack']).discover();"
        "print([r.reason for r in h.plugins if r.name == 'goodpack'])",
        TOOLWIRE_DISABLE_POLICIES="brokenpolicy",
    )
    assert 0 == done.returncode, done.stderr
    assert "['listed in PluginHost(deny=...)']" == done.stdout.strip()


def test_switching_a_policy_off_by_name_is_loud(venv: Any) -> None:
    done = venv.python_code(
        "from toolwire import PluginHost; h = PluginHost().discover();"
        "print([r.reason for r in h.plugins if r.name == 'raisingpolicy'])",
        TOOLWIRE_DISABLE_POLICIES="raisingpolicy,brokenpolicy",
    )
    assert 0 == done.returncode, done.stderr
    assert "this policy is OFF and checks no tool call" in done.stdout
    assert (
        "policy `raisingpolicy` is turned off by TOOLWIRE_DISABLE_POLICIES: it checks no tool "
        "call in this process"
    ) in done.stderr


def test_switching_policies_off_is_refused_where_a_policy_is_required(venv: Any) -> None:
    done = venv.python_code(
        "from toolwire import PluginHost; PluginHost().discover()",
        TOOLWIRE_DISABLE_POLICIES="*",
        TOOLWIRE_POLICY_REQUIRED="1",
    )
    assert 1 == done.returncode
    assert (
        "toolwire.PolicyError: policies cannot be turned off (every policy) while the "
        "organisation requires a policy (TOOLWIRE_POLICY_REQUIRED=1)"
    ) in done.stderr


# -- the command line's hooks: commands a distribution adds (#46) ---------------------------


def _cli(venv: Any, *args: str, **switches: str) -> Any:
    return venv.cli(*args, **{**EVERYTHING_BUT_THE_BROKEN_POLICY, **switches})


def test_toolwire_cli_commands(venv: Any) -> None:
    helped = _cli(venv, "--help")
    assert 0 == helped.returncode, helped.stderr
    assert "say hello" in helped.stdout
    assert "greet" not in helped.stdout  # two distributions add it: neither does
    # toolwire-mcp is not installed here: no `mcp` (the workspace's --help lists it:
    # tests/providers/test_cli_providers.py)
    rows = [row for row in helped.stdout.splitlines() if row.startswith("    ") and row[4] != " "]
    listed = [row.split()[0] for row in rows]
    assert "hello" in listed
    assert [] == [name for name in ("mcp", "console", "policy") if name in listed]
    said = helped.stderr
    assert "commands `brokencommand` (tw_broken_command) left out: RuntimeError: this " in said
    assert "commands `hello`: `chat` is a built-in command; left out" in said
    assert "commands `hello`: registered a str, not a toolwire.cli.Command" in said
    assert "`toolwire greet` is added by hello, twin; left out for both" in said

    ran = _cli(venv, "hello", "--name", "ada")
    assert (0, "hello, ada (3 tools)") == (ran.returncode, ran.stdout.strip()), ran.stderr
    failed = _cli(venv, "hello", "--fail")
    assert (2, "toolwire: error: hello: asked to fail") == (
        failed.returncode,
        failed.stderr.splitlines()[-1],
    )
    assert 2 == _cli(venv, "hello", "--bogus").returncode  # argparse's own usage error
    # A built-in command reads no command module (and the built-in `chat` is the real one).
    plain = _cli(venv, "plugins")
    assert (0, False) == (plain.returncode, "left out" in plain.stderr)
    # Completion offers the added command, and the values it names for an option.
    assert "hello" in _cli(venv, "__complete", "0", "he").stdout.split()
    assert ["ada", "bob"] == _cli(venv, "__complete", "2", "hello", "--name", "").stdout.split()
    # A distribution switched off adds nothing.
    off = _cli(venv, "hello", TOOLWIRE_DISABLE_PLUGINS="hello")
    assert (2, True) == (off.returncode, "invalid choice: 'hello'" in off.stderr)
    # toolwire's own commands name what to install when it is not.
    missing = _cli(venv, "mcp", "serve")
    assert 2 == missing.returncode
    assert "`toolwire mcp` needs toolwire-mcp: pip install toolwire-mcp" in missing.stderr


def test_toolwire_cli_terminal(venv: Any) -> None:
    done = _cli(venv, "call", "echo", '{"text": "hi"}', TW_HELLO_TERMINAL="1")
    assert 0 == done.returncode, done.stderr
    assert "[hello] t: 1/2 halfway" in done.stderr
    assert "hi" in done.stdout


def test_a_working_directory_brings_no_plugin_and_no_command(venv: Any, tmp_path: Path) -> None:
    """Principle 9: `python -m toolwire` puts the working directory on sys.path, and a
    checkout that holds a `*.dist-info` naming a module beside it had that module imported
    (by `--help` for a command, by discovery for a tool pack). Reproducer kept."""
    here = tmp_path / "checkout"
    info = here / "planted-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[toolwire.commands]\nplanted = planted_mod\n\n[toolwire.toolsets]\nplanted = planted_mod\n"
    )
    (here / "planted_mod.py").write_text("print('PLANTED CODE RAN')\n")
    # A namesake of an installed policy's distribution, with no entry point: first on the
    # path, it hid the real one, and the policy was not loaded at all.
    shadow = here / "tw_raising_policy-9.9.dist-info"
    shadow.mkdir()
    (shadow / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tw-raising-policy\nVersion: 9.9\n"
    )
    env = venv.env(**EVERYTHING_BUT_THE_BROKEN_POLICY)
    for args in (("--help",), ("tools",), ("plugins",)):
        done = venv.run(str(venv.python), "-m", "toolwire", *args, env=env, cwd=here)
        assert "PLANTED CODE RAN" not in done.stdout + done.stderr, args
        assert "planted" not in done.stdout, args
    listed = venv.run(str(venv.python), "-m", "toolwire", "plugins", env=env, cwd=here).stdout
    assert "raisingpolicy" in listed
    assert "9.9" not in listed
