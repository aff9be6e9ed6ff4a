"""The real ``toolwire`` command, run in a subprocess inside the fixture environment."""

from __future__ import annotations

import base64
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
plugin_venv = importlib.import_module("plugin_venv")

QUIET = {
    "TOOLWIRE_DISABLE_PLUGINS": "brokenimport,badregister,brokencommand,hello,twin",
    "TOOLWIRE_DISABLE_POLICIES": "brokenpolicy",
}
APP = {**QUIET, "PYTHONPATH": str(FIXTURES)}


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Any:
    built = plugin_venv.build(tmp_path_factory.getbasetemp() / "plugin-venv")
    if built is None:
        pytest.skip("uv is needed to build the fixture environment")
    return built


def _err(done: Any) -> str:
    """stderr without the warnings for the policies the fixture switches off on purpose
    (switching a policy off is loud by design; these tests are about something else)."""
    return "".join(
        line
        for line in done.stderr.splitlines(keepends=True)
        if "is turned off by TOOLWIRE_DISABLE_POLICIES" not in line
        and "is turned off, and it" not in line
    )


def test_help_documents_the_exit_codes(venv: Any) -> None:
    done = venv.cli("--help")
    assert 0 == done.returncode
    for line in (
        "0  ok",
        "1  a tool call was rejected",
        "2  usage error",
        "3  plugin or policy",
        "4  provider error",
        "5  chat ran out of tool rounds",
    ):
        assert line in done.stdout


def test_help_and_version_import_none_of_the_machinery(venv: Any) -> None:
    # `toolwire --help` took 200 ms: it imported pydantic, the plugin host and the agent
    # before argparse printed the help. Checked by what is loaded, not by a clock.
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['toolwire', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('toolwire', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('pydantic', 'pluggy', 'httpx', 'toolwire._agent', 'toolwire._plugins.host')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    )
    # --help lists the installed distributions' commands too: their modules (light, by
    # the hook's rule) are read through pluggy, and nothing heavier.
    for flag, loaded in (("--help", "['pluggy']"), ("--version", "[]")):
        done = venv.run(str(venv.python), "-c", probe, flag, env=venv.env(**QUIET))
        assert 0 == done.returncode, done.stderr
        assert f"LOADED {loaded}" in done.stderr, done.stderr


def test_python_dash_m_runs_the_same_command(venv: Any) -> None:
    done = venv.run(str(venv.python), "-m", "toolwire", "plugins", env=venv.env(**QUIET))
    assert (0, "policies:") == (done.returncode, done.stdout.splitlines()[0])


def test_no_command_is_a_usage_error(venv: Any) -> None:
    done = venv.cli()
    assert 2 == done.returncode
    assert "toolwire: error: the following arguments are required: COMMAND" in done.stderr


def test_plugins_lists_kinds_distributions_and_failures(venv: Any) -> None:
    done = venv.cli("plugins", TOOLWIRE_DISABLE_POLICIES="brokenpolicy")
    assert 0 == done.returncode
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["goodpack", "tw-good-pack", "1.0", "loaded"] in lines
    assert ["canned", "tw-canned-provider", "1.0", "loaded"] in lines
    assert ["test", "toolwire", "0.1.0", "loaded"] in lines
    assert (
        "  toolset `brokenimport` (tw-broken-import 1.0): failed to import `tw_broken_import`: "
        "ImportError: tw_broken_import needs the `frobnicate` package, which is not installed"
    ) in done.stdout.splitlines()
    assert "toolwire: warning: skipped toolset plugin `badregister`" in done.stderr


def test_plugins_json(venv: Any) -> None:
    done = venv.cli("plugins", "--json", TOOLWIRE_DISABLE_POLICIES="brokenpolicy")
    data = json.loads(done.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    off = (
        "turned off by TOOLWIRE_DISABLE_POLICIES: this policy is OFF and checks no tool call; "
        "it also failed to import `tw_broken_policy`"
    )
    assert ("policy", "disabled", off) == (
        by_name["brokenpolicy"]["kind"],
        by_name["brokenpolicy"]["status"],
        by_name["brokenpolicy"]["reason"][: len(off)],
    )
    assert [] == data["blocked"]


def test_tools_lists_name_effect_source_and_off(venv: Any) -> None:
    done = venv.cli("--app", "cli_app:toolset", "tools", "--json", **APP)
    assert 0 == done.returncode, done.stderr
    doc = json.loads(done.stdout)
    assert "toolwire.tools/1" == doc["format"]
    rows = [(r["name"], r["effect"], r["source"], r["off"]) for r in doc["tools"]]
    assert [
        ("get_weather", "read_only", "app/app", False),
        ("explode", "read_only", "app/app", False),
        ("echo", "read_only", "app/goodpack/good", False),
        ("add", "read_only", "app/goodpack/good", False),
        ("delete_file", "destructive", "app/goodpack/good", False),
    ] == rows


def test_tools_with_a_provider_prints_the_wire_form(venv: Any) -> None:
    done = venv.cli("tools", "--provider", "test", "--json", **QUIET)
    assert 0 == done.returncode, done.stderr
    echo = json.loads(done.stdout)["tools"][0]
    assert ("echo", "Say the text back. (from goodpack)", ["text"]) == (
        echo["name"],
        echo["description"],
        echo["parameters"]["required"],
    )


def test_unknown_provider_exits_4(venv: Any) -> None:
    done = venv.cli("tools", "--provider", "nope", **QUIET)
    assert (4, "toolwire: error: unknown provider `nope` (known: canned, test)\n") == (
        done.returncode,
        _err(done),
    )


def test_call_runs_an_allowed_tool(venv: Any) -> None:
    done = venv.cli("call", "add", '{"a": 2, "b": 3}', **QUIET)
    assert (0, ['> add {"a": 2, "b": 3}', "  decision: run", "  result: 5"]) == (
        done.returncode,
        done.stdout.splitlines(),
    )


def test_call_json(venv: Any) -> None:
    done = venv.cli("call", "echo", '{"text": "hi"}', "--json", **QUIET)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"toolwire.event/1"} == {e.pop("format") for e in events}
    assert [
        {"event": "call", "id": "call_cli", "name": "echo", "arguments": '{"text": "hi"}'},
        {"event": "decision", "id": "call_cli", "decision": "run", "source": ""},
        {"event": "result", "id": "call_cli", "content": "hi", "is_error": False},
    ] == events


def test_call_rejected_by_a_policy_exits_1_with_the_reason(venv: Any) -> None:
    done = venv.cli("call", "delete_file", '{"path": "/"}', **QUIET)
    assert 1 == done.returncode
    assert (
        "  decision: rejected by plugin:raisingpolicy: hook `plugin:raisingpolicy` failed "
        "(RuntimeError)"
    ) == done.stdout.splitlines()[1]


def test_call_of_a_failing_tool_exits_1(venv: Any) -> None:
    done = venv.cli("--app", "cli_app:toolset", "call", "explode", "{}", **APP)
    assert (1, "  error: tool `explode` failed: RuntimeError: kaboom") == (
        done.returncode,
        done.stdout.splitlines()[2],
    )


NO_POLICY = {
    "TOOLWIRE_DISABLE_PLUGINS": "brokenimport,badregister,brokencommand,hello,twin",
    "TOOLWIRE_DISABLE_POLICIES": "brokenpolicy,raisingpolicy",
}
DENIED = (
    "  approval: denied: `delete_file` is destructive, and `toolwire {}` runs mutating and "
    "destructive tools only with --approve (or --yes)"
)


def test_call_of_a_destructive_tool_is_denied_without_approve(venv: Any) -> None:
    done = venv.cli("call", "delete_file", '{"path": "x"}', **NO_POLICY)
    assert (1, ['> delete_file {"path": "x"}', "  decision: run", DENIED.format("call")]) == (
        done.returncode,
        done.stdout.splitlines(),
    )


@pytest.mark.parametrize("switch", ["--approve", "--yes"])
def test_call_of_a_destructive_tool_runs_with_approve(venv: Any, switch: str) -> None:
    done = venv.cli("call", "delete_file", '{"path": "x"}', switch, **NO_POLICY)
    assert (
        0,
        [
            '> delete_file {"path": "x"}',
            "  decision: run",
            "  approval: approved (--approve)",
            "  result: deleted x",
        ],
    ) == (done.returncode, done.stdout.splitlines())


def test_call_of_a_read_only_tool_needs_no_approval(venv: Any) -> None:
    done = venv.cli("call", "echo", '{"text": "hi"}', **NO_POLICY)
    assert (0, "approval" in done.stdout) == (done.returncode, False)


def test_approve_does_not_override_a_policy_rejection(venv: Any) -> None:
    done = venv.cli("call", "delete_file", '{"path": "/"}', "--yes", **QUIET)
    assert 1 == done.returncode
    assert "  decision: rejected by plugin:raisingpolicy" in done.stdout
    assert ("approval" in done.stdout, "deleted" in done.stdout) == (False, False)


def test_call_with_arguments_not_matching_the_schema_exits_1(venv: Any) -> None:
    done = venv.cli("call", "add", '{"a": "x", "b": 1}', **QUIET)
    assert 1 == done.returncode
    assert "rejected by toolwire: tool `add` arguments did not match the expected schema" in (
        done.stdout
    )


def test_call_with_malformed_json_exits_2(venv: Any) -> None:
    done = venv.cli("call", "add", '{"a": 1', **QUIET)
    assert (2, "") == (done.returncode, done.stdout)
    assert _err(done).endswith(
        "toolwire: error: JSON for `add` is not valid JSON: Expecting ',' delimiter: "
        "line 1 column 8 (char 7)\n"
    )


def test_call_with_json_nested_too_deeply_exits_2(venv: Any) -> None:
    # Reproducer: a RecursionError reached the generic handler (exit 1, "RecursionError").
    done = venv.cli("call", "add", "[" * 5000 + "]" * 5000, **QUIET)
    assert (2, "") == (done.returncode, done.stdout)
    assert _err(done).endswith(
        "toolwire: error: JSON for `add` nests arrays or objects too deeply to read\n"
    )


def test_call_of_an_unknown_tool_exits_2(venv: Any) -> None:
    done = venv.cli("call", "nope", "{}", **QUIET)
    assert (2, "toolwire: error: unknown tool `nope` (known: echo, add, delete_file)\n") == (
        done.returncode,
        _err(done),
    )


def test_call_is_blocked_when_a_policy_failed_to_load(venv: Any) -> None:
    done = venv.cli("call", "echo", '{"text": "hi"}')
    assert 3 == done.returncode
    reason = (
        "policy `brokenpolicy` (tw-broken-policy 1.0) failed to load, so tool calls are blocked: "
        "failed to import `tw_broken_policy`: RuntimeError: cannot read /etc/corp/policy.toml"
    )
    # The operator reads the detail on stderr; the decision (what the model reads) names
    # the policy and the error's type only.
    assert f"toolwire: warning: {reason}" in done.stderr.splitlines()
    told = "policy `brokenpolicy` failed to load (RuntimeError), so tool calls are blocked"
    assert f"  decision: rejected by plugin:brokenpolicy: {told}" in done.stdout.splitlines()


def test_strict_mode_exits_3_naming_the_plugin(venv: Any) -> None:
    done = venv.cli("tools", TOOLWIRE_STRICT_PLUGINS="1", TOOLWIRE_DISABLE_POLICIES="brokenpolicy")
    assert 3 == done.returncode
    assert _err(done).startswith(
        "toolwire: error: toolset plugin `brokenimport` (tw-broken-import 1.0) failed to import"
    )
    assert "Traceback" not in done.stderr


def test_debug_shows_the_traceback(venv: Any) -> None:
    done = venv.cli(
        "--debug", "tools", TOOLWIRE_STRICT_PLUGINS="1", TOOLWIRE_DISABLE_POLICIES="brokenpolicy"
    )
    assert 1 == done.returncode
    assert "Traceback" in done.stderr


def test_chat_runs_the_tool_loop_offline(venv: Any) -> None:
    done = venv.cli("--app", "cli_app:toolset", "chat", "what is the weather in 'Paris'?", **APP)
    assert (0, "") == (done.returncode, _err(done))
    assert [
        '> get_weather {"city":"Paris"}',
        "  decision: run",
        "  result: sunny in Paris",
        "assistant: Here is what I found. get_weather returned: sunny in Paris.",
    ] == done.stdout.splitlines()


def test_chat_json_reports_a_rejected_call_and_exits_1(venv: Any) -> None:
    done = venv.cli("chat", "delete file 'x'", "--json", **QUIET)
    assert 1 == done.returncode
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert ["call", "decision", "result", "answer"] == [e["event"] for e in events]
    assert ("reject", "plugin:raisingpolicy") == (events[1]["decision"], events[1]["source"])


def test_chat_denies_a_destructive_call_without_approve_and_tells_the_model(venv: Any) -> None:
    done = venv.cli("chat", "delete file 'x'", "--json", **NO_POLICY)
    assert 1 == done.returncode
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert ["call", "decision", "approval", "result", "answer"] == [e["event"] for e in events]
    assert ("run", "deny", True) == (
        events[1]["decision"],
        events[2]["decision"],
        events[3]["is_error"],
    )
    assert events[3]["content"].endswith(
        "approval denied for tool `delete_file`: `delete_file` is destructive, and "
        "`toolwire chat` runs mutating and destructive tools only with --approve (or --yes)"
    )
    assert "delete_file was rejected (approval denied" in events[4]["text"]


def test_chat_runs_a_destructive_call_with_yes(venv: Any) -> None:
    done = venv.cli("chat", "delete file 'x'", "--yes", **NO_POLICY)
    assert (0, "") == (done.returncode, _err(done))
    assert [
        '> delete_file {"path":"x"}',
        "  decision: run",
        "  approval: approved (--approve)",
        "  result: deleted x",
        "assistant: Here is what I found. delete_file returned: deleted x.",
    ] == done.stdout.splitlines()


def test_chat_with_a_named_provider_and_model(venv: Any) -> None:
    done = venv.cli("chat", "hi", "--provider", "canned", "--model", "c-2", **QUIET)
    assert (0, "assistant: canned answer from c-2\n") == (done.returncode, done.stdout)


def test_chat_with_an_unknown_provider_exits_4(venv: Any) -> None:
    done = venv.cli("chat", "hi", "--provider", "nope", **QUIET)
    assert 4 == done.returncode


@pytest.mark.parametrize(
    ("name", "dist"),
    [
        ("anthropic", "toolwire-anthropic"),
        ("openai-responses", "toolwire-openai"),
        ("openrouter", "toolwire-openai"),
    ],
)
def test_an_official_provider_not_installed_says_which_distribution(
    venv: Any, name: str, dist: str
) -> None:
    # The fixture environment holds no provider distribution.
    done = venv.cli("chat", "hi", "--provider", name, **QUIET)
    assert 4 == done.returncode
    assert f"it comes with {dist}: pip install {dist}" in done.stderr


def test_chat_max_rounds_must_be_positive(venv: Any) -> None:
    done = venv.cli("chat", "hi", "--max-rounds", "0", **QUIET)
    assert (2, "toolwire: error: --max-rounds must be at least 1, got 0\n") == (
        done.returncode,
        _err(done),
    )


def test_check_prints_a_loss_report_per_tool(venv: Any) -> None:
    # A provider distribution registers its compiler with the provider (here a fixture
    # distribution's, written with toolwire.schema only).
    done = venv.cli("--app", "cli_app:toolset", "check", "--provider", "canned", **APP)
    assert (0, "") == (done.returncode, _err(done))
    assert [
        "tool `get_weather` for canned (parameters): lossless",
        "tool `explode` for canned (parameters): lossless",
    ] == done.stdout.splitlines()[:2]


def test_check_with_an_unknown_compiler_exits_4(venv: Any) -> None:
    done = venv.cli("check", "--provider", "nope", **QUIET)
    assert 4 == done.returncode
    assert _err(done).startswith("toolwire: error: no schema compiler for `nope` (known: ")


def test_plugins_exits_3_when_it_reports_blocked_calls(venv: Any) -> None:
    done = venv.cli("plugins")
    assert 3 == done.returncode
    assert any(
        line.startswith("BLOCKED: policy `brokenpolicy`") for line in done.stdout.splitlines()
    )
    as_json = venv.cli("plugins", "--json")
    assert 3 == as_json.returncode
    assert json.loads(as_json.stdout)["blocked"]


# -- media results (#27) ------------------------------------------------------------------

MEDIA = {**QUIET, "PYTHONPATH": str(FIXTURES)}
PNG_1PX = importlib.import_module("media_app").PNG


def _snapshot(venv: Any, *extra: str) -> Any:
    """``toolwire --app media_app:toolset call snapshot {"page": "home"} EXTRA...``."""
    call = ("--app", "media_app:toolset", "call", "snapshot", '{"page": "home"}')
    return venv.cli(*call, *extra, **MEDIA)


def test_call_shows_media_as_its_type_and_size(venv: Any) -> None:
    done = _snapshot(venv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2:] == [
        "  result:",
        "    the home page",
        "    [../../escape.png image/png 70 B]",
    ]


def test_call_saves_media_under_names_it_makes(venv: Any, tmp_path: Path) -> None:
    out = tmp_path / "media"
    done = _snapshot(venv, "--save-media", str(out))
    assert done.returncode == 0, done.stderr
    saved = sorted(p.name for p in out.iterdir())
    assert saved == ["call_cli-1.png"]  # never the tool's name for it (../../escape.png)
    assert (out / "call_cli-1.png").read_bytes() == PNG_1PX
    assert f"saved to {out / 'call_cli-1.png'}" in done.stdout
    again = _snapshot(venv, "--save-media", str(out))
    assert again.returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["call_cli-1-1.png", "call_cli-1.png"]


def test_save_media_never_writes_through_a_link(venv: Any, tmp_path: Path) -> None:
    out = tmp_path / "media"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (out / "call_cli-1.png").symlink_to(victim)
    done = _snapshot(venv, "--save-media", str(out))
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "keep me"
    assert (out / "call_cli-1-1.png").read_bytes() == PNG_1PX


def test_call_json_carries_media_as_base64(venv: Any) -> None:
    done = _snapshot(venv, "--json")
    result = [json.loads(line) for line in done.stdout.splitlines()][-1]
    assert result["format"] == "toolwire.event/1"
    assert result["parts"] == [
        {"type": "text", "text": "the home page"},
        {
            "type": "image",
            "media_type": "image/png",
            "name": "../../escape.png",
            "size": len(PNG_1PX),
            "data": base64.b64encode(PNG_1PX).decode(),
        },
    ]


def test_chat_offline_with_a_media_tool(venv: Any) -> None:
    done = venv.cli("--app", "media_app:toolset", "chat", "snapshot 'home'", **MEDIA)
    assert done.returncode == 0, done.stderr
    assert "[../../escape.png image/png 70 B]" in done.stdout


# -- model profiles (#28) ----------------------------------------------------------------------


def test_models_lists_the_profiles_installed_distributions_ship(venv: Any) -> None:
    # The fixture environment holds no provider distribution: only the profile the
    # tw-canned-provider fixture ships through its `toolwire.profiles` entry point.
    done = venv.cli("models", **QUIET)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "canned     Canned small  (canned-small*)",
        "           refuses: temperature; reasoning_effort: low; answers: the output tool",
    ]
    data = json.loads(venv.cli("models", "--provider", "canned", "--json", **QUIET).stdout)
    assert data["format"] == "toolwire.models/1"
    assert [p["family"] for p in data["profiles"]] == ["Canned small"]


def test_models_of_an_unknown_provider_exits_4(venv: Any) -> None:
    done = venv.cli("models", "--provider", "cannd", **QUIET)
    assert done.returncode == 4
    assert "did you mean `canned`?" in done.stderr


# -- --schema (#29) ------------------------------------------------------------------------------


def test_chat_schema_in_the_concise_syntax_prints_the_answer_as_json(venv: Any) -> None:
    done = venv.cli("chat", "Tell me about 'Ada'", "--schema", "name, age int, bio: a bio", **QUIET)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout[done.stdout.index("{") :])
    assert answer["name"] == "Ada"
    assert isinstance(answer["age"], int)


def test_chat_schema_from_a_json_schema_file_and_a_model(venv: Any, tmp_path: Path) -> None:
    schema = tmp_path / "city.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "pop": {"type": "integer"}},
                "required": ["city", "pop"],
            }
        )
    )
    done = venv.cli("chat", "Tell me about 'Oslo'", "--schema", str(schema), **QUIET)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[done.stdout.index("{") :])["city"] == "Oslo"
    (tmp_path / "shapes.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Town(BaseModel):\n    name: str\n"
    )
    done = venv.cli(
        "chat",
        "Tell me about 'Bergen'",
        "--schema",
        "shapes:Town",
        "--json",
        **{**QUIET, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    answer = [json.loads(line) for line in done.stdout.splitlines()][-1]
    assert answer["output"] == {"name": "Bergen"}


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("name, age integer", "has type 'integer'; the types are str, int, float, bool"),
        ("name, 9lives int", "is not a field"),
        ("name, name", "is given twice"),
        ("missing.json", "cannot read it"),
    ],
)
def test_a_malformed_schema_is_a_usage_error(venv: Any, spec: str, said: str) -> None:
    done = venv.cli("chat", "x", "--schema", spec, **QUIET)
    assert done.returncode == 2
    assert said in done.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "not JSON"),
        ('{"type": "array"}', "must describe an object"),
        ('{"type": "object", "properties": {"a": {"type": 5}}}', "not a valid JSON Schema"),
    ],
)
def test_a_malformed_schema_file_is_a_usage_error(
    venv: Any, tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    done = venv.cli("chat", "x", "--schema", str(path), **QUIET)
    assert done.returncode == 2
    assert said in done.stderr
