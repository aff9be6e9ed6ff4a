"""The ``toolwire`` command in the workspace environment, with toolwire-fs and toolwire-policy.

Each test runs ``python -m toolwire`` in a subprocess, in a temporary working
directory, with no TOOLWIRE_* variable from the caller and a private
XDG_CONFIG_HOME (so no organisation policy of the machine applies).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """A working directory holding a few files."""
    work = tmp_path / "project"
    (work / "src").mkdir(parents=True)
    (work / "notes.txt").write_text("remember the milk\n")
    (work / "src" / "app.py").write_text("print('hi')\n")
    return work


def _env(tmp_path: Path, **switches: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")  # what was said once, the logs: its own
    env.update(switches)
    return env


def _run(
    cwd: Path, *args: str, code: str | None = None, **switches: str
) -> subprocess.CompletedProcess[str]:
    """``python -m toolwire ARGS`` (or ``python -c CODE ARGS``) in ``cwd``."""
    command = ["-c", code] if code is not None else ["-m", "toolwire"]
    return subprocess.run(
        [sys.executable, *command, *args],
        cwd=cwd,
        env=_env(cwd.parent, **switches),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _policy(here: Path, text: str) -> Path:
    path = here.parent / "config" / "toolwire" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# -- the README's main job -------------------------------------------------------------


def test_readme_chat_lists_the_files_of_the_working_directory(here: Path) -> None:
    done = _run(here, "chat", "list the files here")
    assert 0 == done.returncode, done.stderr
    lines = done.stdout.splitlines()
    assert [
        "> list_dir {}",
        "  decision: run",
        "  result:",
        "    notes.txt (18 bytes)",
        "    src/",
    ] == lines[:5]
    assert lines[5].startswith("assistant: Here is what I found. list_dir returned: notes.txt")


def test_readme_chat_json_is_one_event_per_line(here: Path) -> None:
    done = _run(here, "chat", "list the files here", "--json")
    assert 0 == done.returncode, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert ["call", "decision", "result", "answer"] == [e["event"] for e in events]
    assert ("list_dir", "run", False) == (
        events[0]["name"],
        events[1]["decision"],
        events[2]["is_error"],
    )
    assert "notes.txt (18 bytes)\nsrc/" == events[2]["content"]


def test_chat_without_a_policy_file_warns_that_calls_are_not_checked(here: Path) -> None:
    done = _run(here, "chat", "list the files here")
    # One warning line, however many policy distributions are installed unconfigured.
    (line,) = [x for x in done.stderr.splitlines() if "checks nothing" in x]
    assert line.startswith("toolwire: warning: policy `")
    assert "policy `policy` (toolwire-policy " in line
    assert "checks nothing: inert: no policy file (looked for " in line
    assert line.endswith("; tool calls are not checked (said once; `toolwire plugins` shows it)")
    # Said once: not on every command after it (#45: noise on every command).
    again = _run(here, "chat", "list the files here")
    assert "checks nothing" not in again.stderr
    listed = _run(here, "plugins")
    assert "inert: no policy file" in listed.stdout


def test_a_library_application_does_not_print_the_inert_policy_warning(here: Path) -> None:
    code = "import toolwire as tw; tw.get_host().assemble(); print('done')"
    done = _run(here, code=code)
    assert "done\n" == done.stdout
    assert "no policy file" not in done.stderr  # logged (INFO), not printed


def _trust(here: Path) -> None:
    """``toolwire-policy trust`` in ``here``, as a user would run it."""
    done = subprocess.run(
        [sys.executable, "-m", "toolwire_policy", "trust"],
        cwd=here,
        env=_env(here.parent),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (
        0,
        f"trusted: {here / 'toolwire-policy.toml'} applies to toolwire commands run in {here}\n",
    ) == (
        done.returncode,
        done.stdout,
    ), done.stderr


def test_an_untrusted_project_policy_decides_nothing(here: Path) -> None:
    # Attack (#40.2): a cloned repository's ./toolwire-policy.toml governed every run
    # started there, and its [audit] path appended to any file the user could write.
    (here / "victim.txt").write_text("precious\n")
    (here / "toolwire-policy.toml").write_text("[audit]\npath = 'victim.txt'\n")
    done = _run(here, "call", "read_file", '{"path": "notes.txt"}')
    assert (0, "precious\n") == (done.returncode, (here / "victim.txt").read_text())
    assert (
        f"{here / 'toolwire-policy.toml'} is not trusted, so it is not used "
        "(`toolwire-policy trust` to use it)"
    ) in done.stderr


def test_the_repository_example_policy_is_shown_and_applied_once_trusted(here: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "toolwire-policy.toml"
    (here / "toolwire-policy.toml").write_text(example.read_text())
    _trust(here)
    done = _run(here, "chat", "list the files here")
    assert 0 == done.returncode, done.stderr
    assert done.stderr.startswith("toolwire: policy `policy`: active: ")
    write = _run(here, "chat", "write file 'a.txt'", "--approve", TOOLWIRE_FS_ROOT=str(here))
    assert 1 == write.returncode
    assert "requires approval" in write.stdout
    assert not (here / "a.txt").exists()


def test_chat_denies_a_write_without_approve(here: Path) -> None:
    done = _run(here, "chat", "write file 'a.txt'", TOOLWIRE_FS_ROOT=str(here))
    assert 1 == done.returncode
    assert (
        "  approval: denied: `write_file` is mutating, and `toolwire chat` runs mutating and "
        "destructive tools only with --approve (or --yes)"
    ) in done.stdout.splitlines()
    assert not (here / "a.txt").exists()


def test_chat_writes_with_approve(here: Path) -> None:
    done = _run(here, "chat", "write file 'a.txt'", "--approve", TOOLWIRE_FS_ROOT=str(here))
    assert (0, "example") == (done.returncode, (here / "a.txt").read_text())


def test_chat_cannot_write_when_the_fs_root_was_not_named(here: Path) -> None:
    # Without TOOLWIRE_FS_ROOT the pack is rooted wherever the command runs: write_file
    # is off, so the model is not offered it at all, even with --approve.
    done = _run(here, "chat", "write file 'a.txt'", "--approve")
    assert (False, False) == ("> write_file" in done.stdout, (here / "a.txt").exists())


# -- the organisation policy, through the executor ----------------------------------------


def test_the_policy_redacts_a_result_in_chat(here: Path) -> None:
    _policy(here, "[[redact]]\nresult_patterns = ['milk']\n")
    done = _run(here, "chat", "read file 'notes.txt'")
    assert 0 == done.returncode, done.stderr
    assert ["  result: remember the [REDACTED]"] == [
        line for line in done.stdout.splitlines() if line.startswith("  result")
    ]


def test_the_policy_redacts_a_result_in_call(here: Path) -> None:
    _policy(here, "[[redact]]\nresult_patterns = ['milk']\n")
    done = _run(here, "call", "read_file", '{"path": "notes.txt"}', "--json")
    [result] = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "result"]
    assert (0, "remember the [REDACTED]\n") == (done.returncode, result["content"])


def test_approve_does_not_grant_an_approval_the_policy_requires(here: Path) -> None:
    _policy(here, 'approve = ["write_file"]\n')
    done = _run(here, "call", "write_file", '{"path": "a.txt", "content": "x"}', "--yes")
    assert 1 == done.returncode
    assert done.stdout.splitlines()[1].startswith(
        "  decision: rejected by plugin:policy: requires approval"
    )
    assert not (here / "a.txt").exists()


def test_a_policy_deny_hides_the_tool_from_call(here: Path) -> None:
    _policy(here, 'deny = ["write_file"]\n')
    done = _run(here, "call", "write_file", '{"path": "a.txt", "content": "x"}', "--yes")
    assert (
        1,
        "  decision: rejected by toolwire: tool `write_file` is not available in this round "
        "(hidden by `plugin:policy`: tool `write_file` is denied by the organisation policy)",
    ) == (done.returncode, done.stdout.splitlines()[1])


def test_tools_shows_what_a_policy_hides_and_which_plugin(here: Path) -> None:
    _policy(here, 'deny = ["write_file"]\n')
    done = _run(here, "tools")
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("write_file")]
    assert row.endswith(
        "hidden (by plugin:policy: tool `write_file` is denied by the organisation policy)"
    )
    doc = json.loads(_run(here, "tools", "--json").stdout)
    hidden = {t["name"]: t["hidden_by"] for t in doc["tools"]}
    assert "plugin:policy" == hidden["write_file"]
    assert hidden["read_file"] is None


def test_a_project_policy_file_does_not_override_the_organisations(here: Path) -> None:
    _policy(here, 'approve = ["read_file"]\n')
    (here / "toolwire-policy.toml").write_text("approve = []\n")
    done = _run(here, "call", "read_file", '{"path": "notes.txt"}')
    assert 1 == done.returncode
    assert "  decision: rejected by plugin:policy: requires approval" in done.stdout


# -- toolwire plugins: a plugin's own status -------------------------------------------


def test_plugins_shows_the_policy_plugins_status(here: Path) -> None:
    path = _policy(here, "deny = []\n")
    done = _run(here, "plugins")
    lines = done.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.split()[:1] == ["policy"]))
    assert (0, f"active: {path}") == (done.returncode, lines[at + 1].strip())


def test_plugins_json_shows_an_inert_policy_plugin(here: Path) -> None:
    done = _run(here, "plugins", "--json")
    by_name = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}
    config = here.parent / "config" / "toolwire" / "policy.toml"
    assert (
        f"inert: no policy file (looked for {config}, {here / 'toolwire-policy.toml'})",
        None,
    ) == (by_name["policy"]["plugin_status"], by_name["fs"]["plugin_status"])


# -- the loop's limits and the host's hooks, with plugins registered in the process ---------

_WITH_PLUGINS = """
import sys
from toolwire.adapters import AssistantReply
from toolwire import Complete, ToolCall, Toolset, hookimpl, tool_fn
from toolwire._plugins import get_host
from toolwire.cli import main
from toolwire.providers.test import TestProvider

@tool_fn
def lookup(city: str) -> str:
    '''Look a city up.'''
    return f"{city}: 20C"

class Looping(TestProvider):
    name = "looping"
    def generate(self, session, turn):
        call = ToolCall(f"c{len(session)}", "lookup", '{"city": "Oslo"}')
        return AssistantReply("", (call,), "tool_calls")

class Plugin:
    @hookimpl
    def toolwire_register_toolsets(self, register):
        register(Toolset("app", [lookup]))

    @hookimpl
    def toolwire_register_providers(self, register):
        register("looping", Looping)

    @hookimpl
    def toolwire_tool_decision(self, call):
        return Complete("cached: Oslo 21C") if "cached" in sys.argv[-1] else None

    @hookimpl
    def toolwire_tool_result(self, result):
        return result.__class__(
            result.call_id, result.tool_name, result.arguments,
            result.content + " (checked)", result.is_error,
        )

get_host().register(Plugin(), "app")
sys.exit(main(sys.argv[1:]))
"""


def test_chat_out_of_rounds_is_one_line_and_exit_5(here: Path) -> None:
    done = _run(
        here, "chat", "weather", "--provider", "looping", "--max-rounds", "2", code=_WITH_PLUGINS
    )
    assert (
        5,
        "toolwire: error: the model did not finish within 2 tool round(s): it asked for tools "
        "again (not run); raise --max-rounds\n",
    ) == (done.returncode, done.stderr.replace(_policy_warning(done.stderr), ""))
    assert 2 == done.stdout.count("> lookup ")


def test_results_that_ran_go_through_the_hosts_result_hooks(here: Path) -> None:
    done = _run(here, "call", "lookup", '{"city": "Oslo"}', code=_WITH_PLUGINS)
    assert (0, "  result: Oslo: 20C (checked)") == (done.returncode, done.stdout.splitlines()[-1])


def test_results_a_hook_answered_go_through_the_hosts_result_hooks(here: Path) -> None:
    done = _run(here, "call", "lookup", '{"city": "cached"}', code=_WITH_PLUGINS)
    assert (
        0,
        ["  decision: answered by plugin:app (not run)", "  result: cached: Oslo 21C (checked)"],
    ) == (done.returncode, done.stdout.splitlines()[1:])


def _policy_warning(stderr: str) -> str:
    """The inert policy plugin's warning line (not what these tests are about)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if "checks nothing" in line)


_MAP_APP = '''
import toolwire as tw

def weigh(weights: dict[str, int]) -> str:
    """Weigh things."""
    return ""

def mail(to: str) -> str:
    """Send mail."""
    return ""

toolset = tw.Toolset("app", [tw.tool_fn(weigh), tw.tool_fn(mail)])
'''


def test_check_exits_6_for_a_tool_the_target_cannot_carry(here: Path) -> None:
    # Gemini's parameters field would turn the map into an OBJECT with no properties,
    # a request Gemini refuses whole: check says so and fails.
    (here / "map_app.py").write_text(_MAP_APP)
    app = ("--app", "map_app:toolset", "check", "--provider", "gemini")
    refused = _run(here, *app, "--target", "parameters", TOOLWIRE_PLUGINS="gemini")
    assert 6 == refused.returncode, refused.stderr
    lines = refused.stdout.splitlines()
    assert "tool `weigh` for gemini (parameters): cannot be compiled" == lines[0]
    assert "OBJECT with no properties" in lines[1]
    assert "tool `mail` for gemini (parameters): 1 warning" == lines[2]
    assert "open_object" in lines[3]
    assert lines[-1].endswith("0 lossless, 1 with warnings, 1 failed")
    auto = _run(here, *app, TOOLWIRE_PLUGINS="gemini")
    assert 0 == auto.returncode, auto.stderr
    assert "tool `weigh` for gemini (parametersJsonSchema): lossless" in auto.stdout
    strict = _run(
        here, *app, "--target", "parameters", "--fail-on", "warning", TOOLWIRE_PLUGINS="gemini"
    )
    assert 6 == strict.returncode
    bad = _run(here, *app, "--target", "nope", TOOLWIRE_PLUGINS="gemini")
    assert 2 == bad.returncode
    assert 'must be "auto", "parameters" or "parametersJsonSchema"' in bad.stderr


# -- an MCP server's question, asked on the terminal (#26) ----------------------------------


def test_the_terminal_asks_each_field_and_declines_at_the_end_of_input() -> None:
    import io

    from toolwire.cli.ask import install_terminal_handler, terminal_handler
    from toolwire_mcp import ElicitationRequest

    schema = {
        "type": "object",
        "properties": {
            "approve": {"type": "boolean", "title": "Allow this call"},
            "size": {"type": "integer", "default": 3},
            "color": {"type": "string", "enum": ["red", "blue"]},
        },
    }
    request = ElicitationRequest("gw", "Allow `wipe`?", schema=schema)
    typed = iter(["y", "", "blue"])
    shown = io.StringIO()
    assert {"approve": True, "color": "blue"} == terminal_handler(
        lambda prompt: next(typed), shown
    )(request)
    assert "MCP server `gw` asks:\nAllow `wipe`?" in shown.getvalue()

    def closed(prompt: str) -> str:
        raise EOFError

    assert terminal_handler(closed, io.StringIO())(request) is None
    wrong = iter(["y", "many"])
    assert terminal_handler(lambda p: next(wrong), io.StringIO())(request) is None
    # a run that is not interactive installs nothing: every request is declined
    assert install_terminal_handler(io.StringIO()) is False


_WITH_ACTIVE_POLICY = """
import sys
from toolwire import Reject, hookimpl
from toolwire._plugins import get_host
from toolwire.cli import main

class OrgPolicy:
    @hookimpl
    def toolwire_tool_decision(self, call):
        return Reject("the organisation says no") if call.name == "find" else None

get_host().register(OrgPolicy(), "org", kind="policy")
sys.exit(main(sys.argv[1:]))
"""


def test_an_inert_policy_beside_an_active_one_is_a_status_line_not_a_warning(
    here: Path,
) -> None:
    # "tool calls are not checked" was printed while another policy checked every call.
    done = _run(here, "chat", "list the files here", code=_WITH_ACTIVE_POLICY)
    assert done.returncode == 0, done.stderr
    assert "checks nothing" not in done.stderr
    assert "toolwire: policy `policy`: inert: no policy file" in done.stderr
