"""The command line as a daily driver: its configuration file, the conversation log,
continuing a conversation, and shell completion."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, SecretStr

import toolwire as tw
from toolwire.cli.completion import candidates, script
from toolwire.cli.config import cli_config
from toolwire.cli.logs import ConversationLog, Recorder, redact_call_arguments
from toolwire.exceptions import UsageError


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    env.update(
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_DATA_HOME=str(tmp / "data"),
        XDG_CACHE_HOME=str(tmp / "cache"),
        **extra,
    )
    return env


def _toolwire(tmp: Path, *args: str, stdin: str | None = None, **extra: str) -> Any:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        cwd=work,
        env=_env(tmp, **extra),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _config(tmp: Path, text: str) -> Path:
    path = tmp / "config" / "toolwire" / "toolwire.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# -- the configuration file ----------------------------------------------------------------


def test_each_value_says_where_it_came_from(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        """
        [cli]
        model = "from-the-file"
        max_rounds = 3
        logs_path = "~/chats.db"
        [cli.settings]
        temperature = 0.2
        """,
    )
    env = _env(tmp_path, TOOLWIRE_LOGS_PATH=str(tmp_path / "env.db"), HOME=str(tmp_path))
    cfg = cli_config({"model": ("from-the-flag", "--model")}, environ=env)
    assert ("from-the-flag", "--model") == (cfg["model"], cfg.source("model"))
    assert (3, f"{path} [cli]") == (cfg["max_rounds"], cfg.source("max_rounds"))
    assert (str(tmp_path / "env.db"), "$TOOLWIRE_LOGS_PATH") == (
        cfg["logs_path"],
        cfg.source("logs_path"),
    )
    assert ("test", "default") == (cfg["provider"], cfg.source("provider"))
    assert {"temperature": 0.2} == cfg["settings"]

    done = _toolwire(tmp_path, "config", "--json", TOOLWIRE_MODEL="env-model")
    values = json.loads(done.stdout)["values"]
    assert {"value": "env-model", "source": "$TOOLWIRE_MODEL"} == values["model"]
    assert f"{path} [cli]" == values["max_rounds"]["source"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[cli]\nprovidr = "openai"\n', "unknown key `providr`"),
        ('[cli]\nprovidr = "openai"\n', "did you mean `provider`?"),
        ("[cli]\nmax_rounds = 0\n", "`max_rounds` takes a whole number of at least 1, got 0"),
        ('[cli]\nlog = "yes"\n', "`log` takes true or false, got 'yes'"),
        ('[cli]\ncolor = "blue"\n', "`color` takes auto, always or never"),
        ("[cli.settings]\ntemprature = 1\n", "did you mean `temperature`?"),
        ("[cli.settings]\ntemperature = 9\n", "temperature"),
        ('cli = "x"\n', "`cli` must be a table"),
        ("[cli\n", "is not valid TOML"),
    ],
)
def test_a_config_file_with_one_typo_is_refused_by_name(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        cli_config(environ=_env(tmp_path))
    assert message in str(caught.value)
    assert str(path) in str(caught.value)
    done = _toolwire(tmp_path, "chat", "hello")
    assert 2 == done.returncode, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_the_config_file_is_never_the_current_directorys(tmp_path: Path) -> None:
    # A cloned repository's toolwire.toml does not choose the provider or the logs path.
    work = tmp_path / "work"
    work.mkdir()
    (work / "toolwire.toml").write_text('[cli]\nprovider = "evil"\nlogs_path = "/tmp/x"\n')
    done = _toolwire(tmp_path, "chat", "hello", "--json")
    assert 0 == done.returncode, done.stderr
    assert (tmp_path / "data" / "toolwire" / "logs.db").is_file()


def test_the_files_provider_and_settings_reach_the_chat(tmp_path: Path) -> None:
    _config(
        tmp_path,
        """
        [cli]
        provider = "openai"
        model = "o3-mini"
        [cli.settings]
        temperature = 0.5
        """,
    )
    done = _toolwire(tmp_path, "chat", "hello", OPENAI_API_KEY="k")
    # The model's profile refuses temperature before anything is sent: proof that the
    # file's provider, model and settings all reached the request. A configuration's
    # mistake (2), not a refused call (1), which it exited with before (#45).
    assert 2 == done.returncode, done.stderr
    assert "temperature" in done.stderr
    assert "o3-mini" in done.stderr


# -- the conversation log ------------------------------------------------------------------


def test_a_chat_is_logged_and_continued(tmp_path: Path) -> None:
    first = _toolwire(tmp_path, "chat", "remember the word pelican")
    assert 0 == first.returncode, first.stderr
    again = _toolwire(tmp_path, "chat", "-c", "what word?", "--json")
    assert 0 == again.returncode, again.stderr
    db = tmp_path / "data" / "toolwire" / "logs.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    rows = json.loads(_toolwire(tmp_path, "logs", "--json").stdout)["responses"]
    assert ["remember the word pelican", "what word?"] == [r["prompt"] for r in rows]
    assert rows[0]["conversation_id"] == rows[1]["conversation_id"]
    # Continuing sent the whole conversation: the provider saw three messages in.
    assert rows[1]["input_tokens"] > rows[0]["input_tokens"]

    found = json.loads(_toolwire(tmp_path, "logs", "search", "pelican", "--json").stdout)
    assert ["remember the word pelican"] == [r["prompt"] for r in found["responses"]]
    shown = _toolwire(tmp_path, "logs", "show", rows[0]["conversation_id"])
    assert "what word?" in shown.stdout
    assert "remember the word pelican" in shown.stdout
    cid = rows[0]["conversation_id"]
    exported = json.loads(_toolwire(tmp_path, "logs", "export", "--cid", cid).stdout)
    assert 2 == len(exported["responses"])
    assert str(db) == _toolwire(tmp_path, "logs", "path").stdout.strip()


def test_no_log_and_a_continue_with_nothing_to_continue(tmp_path: Path) -> None:
    done = _toolwire(tmp_path, "chat", "hello", "--no-log")
    assert 0 == done.returncode
    assert not (tmp_path / "data" / "toolwire" / "logs.db").exists()
    done = _toolwire(tmp_path, "chat", "-c", "again")
    assert 2 == done.returncode
    assert "no conversation log yet" in done.stderr
    done = _toolwire(tmp_path, "chat", "hello")
    done = _toolwire(tmp_path, "chat", "--cid", "nope", "again")
    assert 2 == done.returncode
    assert "no conversation `nope`" in done.stderr


def test_a_log_others_can_write_is_not_continued(tmp_path: Path) -> None:
    # Continuing sends the saved conversation to a model again: whoever could write the
    # log would put words in it. Reproducer: the log made writable by every user.
    assert 0 == _toolwire(tmp_path, "chat", "hello").returncode
    db = tmp_path / "data" / "toolwire" / "logs.db"
    db.chmod(0o666)
    done = _toolwire(tmp_path, "chat", "-c", "again")
    assert 2 == done.returncode
    assert "open to others" in done.stderr
    assert "chmod go-w" in done.stderr
    db.chmod(0o600)
    assert 0 == _toolwire(tmp_path, "chat", "-c", "again").returncode


def test_a_log_others_can_write_is_neither_written_nor_read(tmp_path: Path) -> None:
    # #40.10: a pre-existing logs.db others could write was written to (every conversation
    # given to whoever planted it), and `chat -c` wrote its schema before checking.
    db = tmp_path / "data" / "toolwire" / "logs.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"")
    db.chmod(0o666)
    chat = _toolwire(tmp_path, "chat", "my secret prompt")  # answered, not logged: said so
    assert (0, True) == (chat.returncode, "open to others" in chat.stderr), chat.stderr
    for args in (("chat", "-c", "again"), ("logs",)):
        done = _toolwire(tmp_path, *args)
        assert (2, True) == (done.returncode, "open to others" in done.stderr), args
    assert b"" == db.read_bytes()  # nothing was written: not the schema, not the prompt


def test_a_prompt_on_stdin(tmp_path: Path) -> None:
    done = _toolwire(tmp_path, "chat", stdin="piped in\n")
    assert "You said: piped in" in done.stdout, done.stderr
    done = _toolwire(tmp_path, "chat", stdin="  \n")
    assert 2 == done.returncode
    assert "no prompt" in done.stderr


def test_logged_arguments_keep_no_secret_and_nothing_a_policy_redacts(tmp_path: Path) -> None:
    pytest.importorskip("toolwire_policy")
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(
        textwrap.dedent(
            """
            import toolwire as tw
            from pydantic import SecretStr

            def deploy(target: str, api_token: str, password: SecretStr) -> str:
                '''Deploy.'''
                return "deployed " + target

            tools = tw.Toolset("app", [tw.tool_fn(deploy)])
            """
        )
    )
    policy = tmp_path / "config" / "toolwire" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text('[[redact]]\ntools = ["deploy"]\narguments = ["api_*"]\n')
    done = _toolwire(tmp_path, "chat", "deploy it", "--app", "app:tools")
    assert 0 == done.returncode, done.stderr
    (row,) = json.loads(_toolwire(tmp_path, "logs", "--json").stdout)["responses"]
    (call,) = row["tool_calls"]
    args = json.loads(call["arguments"])
    assert {"target": "example", "api_token": "[REDACTED]", "password": "[REDACTED]"} == args
    # The saved conversation (what -c sends again) holds the same redacted text.
    with sqlite3.connect(tmp_path / "data" / "toolwire" / "logs.db") as db:
        (saved,) = db.execute("SELECT session FROM conversations").fetchone()
    messages = json.loads(saved)["messages"]
    kept = [c["arguments"] for m in messages for c in m.get("tool_calls", ())]
    kept += [r["arguments"] for m in messages for r in m.get("results", ())]
    assert 2 == len(kept)
    assert {call["arguments"]} == set(kept)
    again = _toolwire(tmp_path, "chat", "-c", "thanks", "--app", "app:tools")
    assert 0 == again.returncode, again.stderr


class _Creds(BaseModel):
    user: str
    password: SecretStr


@tw.tool_fn
def login(
    host: str, creds: _Creds, backup: SecretStr | None = None, tokens: list[SecretStr] | None = None
) -> str:
    """Log in."""
    return "in"


def test_secrets_are_redacted_from_the_typed_input_at_any_depth() -> None:
    # Attack (#40.8): `SecretStr | None`, a SecretStr inside a model and list[SecretStr]
    # were stored in clear (the arguments and the saved session): only top-level schema
    # properties were looked at.
    sent = {
        "host": "db.internal",
        "creds": {"user": "ada", "password": "hunter2"},
        "backup": "b4ckup-pw",
        "tokens": ["t0k-one", "t0k-two"],
    }
    kept = json.loads(redact_call_arguments(json.dumps(sent), login, None))
    assert {
        "host": "db.internal",
        "creds": {"user": "ada", "password": "[REDACTED]"},
        "backup": "[REDACTED]",
        "tokens": ["[REDACTED]", "[REDACTED]"],
    } == kept
    # Arguments that do not validate (host is a number): the schema says where secrets
    # are, at any depth.
    invalid = redact_call_arguments(json.dumps({**sent, "host": 5}), login, None)
    assert [] == [s for s in ("hunter2", "b4ckup-pw", "t0k-one", "t0k-two") if s in invalid]
    assert '"user": "ada"' in invalid
    # Only what was sent is kept: no defaults added.
    assert {"host": "h", "creds": {"user": "u", "password": "[REDACTED]"}} == json.loads(
        redact_call_arguments('{"host": "h", "creds": {"user": "u", "password": "p"}}', login, None)
    )


def test_redaction_fails_closed_and_malformed_arguments_are_not_kept() -> None:
    class T:
        input_schema: ClassVar[dict[str, Any]] = {
            "properties": {"pin": {"type": "string", "writeOnly": True}}
        }

    assert '{"a": 1, "pin": "[REDACTED]"}' == redact_call_arguments(
        '{"pin": "1234", "a": 1}', T(), None
    )
    failed = redact_call_arguments('{"pin": "1234"}', T(), lambda tool, data: None)
    assert "1234" not in failed
    assert "not kept" in failed
    for text in ('{"pin": "1234"', "[1234]", "[" * 100_000):
        kept = redact_call_arguments(text, T(), None)
        assert "1234" not in kept
        assert "not kept" in kept


def test_a_log_that_is_not_a_log(tmp_path: Path) -> None:
    bad = tmp_path / "logs.db"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(UsageError, match="not a toolwire conversation log"):
        ConversationLog(bad).responses()
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(UsageError, match="written by a newer toolwire"):
        ConversationLog(newer).responses()


def test_search_takes_any_text_as_words(tmp_path: Path) -> None:
    log = ConversationLog(tmp_path / "l.db")
    rec = Recorder('say "NEAR" (x OR y) 100%_done', lambda name, text: text)
    rec({"event": "answer", "text": "ok"})
    log.record(
        conversation="c1",
        session={},
        provider="test",
        model="m",
        recorder=rec,
        status="finished",
        rounds=0,
        usage=None,
    )
    for query in ('"NEAR"', "(x", "OR", "100%_done", "*"):
        found = log.responses(query=query)
        assert len(found) == (0 if query == "*" else 1), query
    log.fts = False  # a SQLite without FTS5: the plain match, with LIKE's wildcards escaped
    assert 1 == len(log.responses(query="100%_done"))
    assert 0 == len(log.responses(query="100%x"))
    with pytest.raises(UsageError, match="at least one word"):
        log.responses(query="  ")


# -- completion ----------------------------------------------------------------------------


def test_model_completion_offers_model_names_not_glob_fragments() -> None:
    # Reproducer (#45): the profiles' globs were offered as they were cut (`gpt-5-`, `o3:`).
    offered = candidates(["chat", "--model", ""], 2)
    assert {"gpt-5", "o3", "gpt-4.1", "claude-opus-4-5", "gemini-2.5"} <= set(offered)
    assert [] == [m for m in offered if m[-1] in "-:.@_/" or any(c in m for c in "*?[")]
    assert ["o3", "o4"] == candidates(["chat", "--model", "o"], 2)[-2:]


def test_completion_candidates() -> None:
    assert {"chat", "check", "completion", "config", "call"} <= set(candidates(["c"], 0))
    assert ["--provider"] == candidates(["chat", "--prov"], 1)
    assert "test" in candidates(["chat", "--provider", ""], 2)
    assert ["bash"] == candidates(["completion", "b"], 1)
    assert {"list", "search", "show"} <= set(candidates(["logs", ""], 1))
    assert [] == candidates(["chat", "--schema", ""], 2)  # a path: the shell completes it
    models = candidates(["chat", "--model", "gpt-4"], 2)
    assert models
    assert all(m.startswith("gpt-4") for m in models)


def _shim(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has a `toolwire` that runs this checkout's."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "toolwire"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolwire "$@"\n')
    shim.chmod(0o755)
    return _env(tmp_path, PATH=f"{bindir}:{os.environ['PATH']}")


def _shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs {name} (.ci/run): it is missing")
        pytest.skip(f"no {name} on this machine")
    return found


def test_the_bash_script_completes_in_a_real_bash(tmp_path: Path) -> None:
    code = (
        f"{script('bash')}\n"
        "COMP_WORDS=(toolwire chat --pro); COMP_CWORD=2; _toolwire_complete\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [_shell("bash"), "-c", code],
        env=_shim(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--provider" == done.stdout.strip()


def test_the_zsh_script_completes_in_a_real_zsh(tmp_path: Path) -> None:
    # compadd and compdef are the completion system's; stand-ins print what they are given.
    code = (
        "compdef() { :; }\n"
        f"{script('zsh')}\n"
        "compadd() { print -l -- ${(P)2}; }\n"
        "_files() { print FILES; }\n"
        "words=(toolwire logs se); CURRENT=3; _toolwire\n"
        "words=(toolwire chat --schema ''); CURRENT=4; _toolwire\n"
    )
    done = subprocess.run(
        [_shell("zsh"), "-f", "-c", code],
        env=_shim(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ["search", "FILES"] == done.stdout.split()


def test_the_fish_script_completes_in_a_real_fish(tmp_path: Path) -> None:
    path = tmp_path / "toolwire.fish"
    path.write_text(script("fish"))
    code = f"source {path}; complete -C 'toolwire completion f'; complete -C 'toolwire chat --prov'"
    done = subprocess.run(
        [_shell("fish"), "--no-config", "-c", code],
        env=_shim(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ["fish", "--provider"] == [line.split("\t")[0] for line in done.stdout.splitlines()]


def test_completion_never_fails_loudly(tmp_path: Path) -> None:
    done = _toolwire(tmp_path, "__complete", "not-a-number")
    assert (0, "", "") == (done.returncode, done.stdout, done.stderr)
    done = _toolwire(tmp_path, "completion", "fish")
    assert "complete -c toolwire" in done.stdout


def test_the_files_mcp_config_names_the_servers_every_command_sees(tmp_path: Path) -> None:
    pytest.importorskip("toolwire_mcp")
    server = Path(__file__).parents[1] / "plugins" / "mcp" / "mcp_server.py"
    servers = tmp_path / "servers.json"
    servers.write_text(
        json.dumps(
            {"mcpServers": {"srv": {"command": sys.executable, "args": [str(server), "stdio"]}}}
        )
    )
    _config(tmp_path, f'[cli]\nmcp_config = "{servers}"\n')
    done = _toolwire(tmp_path, "tools", "--json")
    assert 0 == done.returncode, done.stderr
    assert "srv_echo" in [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert (
        str(servers)
        == json.loads(_toolwire(tmp_path, "config", "--json").stdout)["values"]["mcp_config"][
            "value"
        ]
    )


def test_a_toolwire_toml_others_can_write_is_not_used(tmp_path: Path) -> None:
    # Reproducer: the file chooses the provider, its URL, the key variable and the MCP
    # servers; one that another user can write would send keys where they say.
    path = _config(tmp_path, '[cli]\nprovider = "openai"\nbase_url = "http://evil.example"\n')
    path.chmod(0o666)
    with pytest.raises(UsageError, match="open to others"):
        cli_config(environ=_env(tmp_path))
    done = _toolwire(tmp_path, "chat", "hello")
    assert 2 == done.returncode
    assert "is open to others (mode 666), so it is not used" in done.stderr
    models = _toolwire(tmp_path, "models")  # the same file's [[profiles]]
    assert models.returncode != 0
    assert "open to others" in models.stderr
    path.chmod(0o644)
    assert 0 == _toolwire(tmp_path, "config").returncode


def test_a_log_that_cannot_be_written_loses_no_answer(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not SQLite" * 64)
    done = _toolwire(tmp_path, "chat", "hello", TOOLWIRE_LOGS_PATH=str(bad))
    assert 0 == done.returncode, done.stderr
    assert "You said: hello" in done.stdout
    assert "warning: this turn was not logged" in done.stderr
    assert "not a toolwire conversation log" in done.stderr


def test_logs_takes_a_positive_count(tmp_path: Path) -> None:
    done = _toolwire(tmp_path, "logs", "-n", "0")
    assert 2 == done.returncode
    assert "-n must be at least 1, got 0" in done.stderr


def test_a_log_written_before_the_server_was_kept_is_read_and_gains_it(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT NOT NULL, provider TEXT,"
        " model TEXT, created TEXT NOT NULL, updated TEXT NOT NULL, session TEXT NOT NULL);"
        "INSERT INTO conversations VALUES ('c1', 'old', 'test', NULL, 't', 't',"
        " '{\"messages\": []}');"
        "PRAGMA user_version = 1;"
    )
    db.close()
    log = ConversationLog(path)
    cid, _data, provider, _model, settings = log.session(None)
    assert ("c1", "test", {}) == (cid, provider, settings)
    log.close()
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(conversations)")}
    assert {"base_url", "api_key_env"} <= columns


NOTES_APP = """
import toolwire as tw


@tw.tool_fn(effect="mutating")
def save_note(text: str) -> str:
    '''Save a note.'''
    return "saved"


tools = tw.Toolset("app", [save_note])
"""


def test_logs_show_a_refused_call_as_refused_in_the_models_words(tmp_path: Path) -> None:
    # Reproducer (#45): the log showed the internal marker `__toolwire_rejected__` and tagged
    # a call refused at approval `[run]`.
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "notes_app.py").write_text(NOTES_APP)
    done = _toolwire(tmp_path, "chat", "save note: milk", "--app", "notes_app:tools")
    assert "save_note" in done.stdout, done.stdout + done.stderr  # refused: no --approve
    shown = _toolwire(tmp_path, "logs").stdout
    assert "__toolwire_rejected__" not in shown
    [line] = [s for s in shown.splitlines() if s.startswith("tool call: save_note")]
    assert line.endswith("[refused]"), line
    assert "  error: The call was rejected and did not run: " in shown
    rows = json.loads(_toolwire(tmp_path, "logs", "--json").stdout)["responses"]
    [call] = rows[0]["tool_calls"]
    assert call["result"].startswith("The call was rejected and did not run: ")
    assert ("refused", 1) == (call["decision"], call["is_error"])


def test_every_mistake_in_the_file_is_said_at_once(tmp_path: Path) -> None:
    # Reproducer (#45): a file with several mistakes took a run to find each.
    _config(
        tmp_path,
        """
        [cli]
        provider = 3
        colour = "never"
        max_rounds = -1
        [cli.settings]
        temprature = 0.2
        """,
    )
    done = _toolwire(tmp_path, "chat", "hello")
    assert 2 == done.returncode
    said = done.stderr
    assert "4 mistakes:" in said
    for part in (
        "`provider` takes a provider's name, got 3",
        "unknown key `colour`",
        "did you mean `color`?",
        "`max_rounds` takes a whole number of at least 1, got -1",
        "settings.temprature is not a model setting",
    ):
        assert part in said, said


# -- per-run options (#45) -----------------------------------------------------------------


def test_an_option_for_one_run_reaches_the_request_over_the_file(tmp_path: Path) -> None:
    # -o sets a model setting for this run, checked against the model's profile before
    # anything is sent, as the file's settings are: o3-mini takes no temperature.
    _config(tmp_path, '[cli]\nprovider = "openai"\nmodel = "o3-mini"\n')
    done = _toolwire(tmp_path, "chat", "hello", "-o", "temperature", "0.2", OPENAI_API_KEY="k")
    assert 2 == done.returncode, done.stderr
    assert "temperature" in done.stderr
    assert "o3-mini" in done.stderr
    # Over the file's: the file's refused temperature is lifted for this run, on a model
    # that takes it (the offline one), and the run answers.
    _config(tmp_path, "[cli]\n[cli.settings]\ntemperature = 0.5\nseed = 1\n")
    done = _toolwire(tmp_path, "chat", "hello", "-o", "seed", "7", "-o", "stop", '["END"]')
    assert 0 == done.returncode, done.stderr


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["-o", "temprature", "0.2"], "did you mean `temperature`?"),
        (["-o", "temperature", "9"], "temperature"),
        (["-o", "seed", "many"], "seed"),
        (["-o", "temperature"], "expected 2 arguments"),
    ],
)
def test_an_option_that_is_no_setting_or_takes_no_such_value_is_a_usage_error(
    tmp_path: Path, option: list[str], said: str
) -> None:
    done = _toolwire(tmp_path, "chat", "hello", *option)
    assert 2 == done.returncode, done.stderr
    assert said in done.stderr


def test_option_values_read_as_json_where_they_are_json() -> None:
    from toolwire.cli.config import option_settings

    given = [("temperature", "0.2"), ("parallel_tool_calls", "false"), ("stop", '["a", "b"]')]
    assert {
        "temperature": 0.2,
        "parallel_tool_calls": False,
        "stop": ["a", "b"],
        "reasoning_effort": "low",
        "seed": 3,
    } == option_settings([*given, ("reasoning_effort", "low")], {"seed": 3})
    assert {"stop": "{"} == option_settings([("stop", "{")], {})  # not JSON: the text
    with pytest.raises(UsageError, match="max_output_tokens"):
        option_settings([("max_output_tokens", "-1")], {})


def test_schema_multi_answers_a_list_of_the_shape(tmp_path: Path) -> None:
    done = _toolwire(
        tmp_path, "chat", "Tell me about 'Ada'", "--schema-multi", "name, age int", "--json"
    )
    assert 0 == done.returncode, done.stderr
    answer = [json.loads(line) for line in done.stdout.splitlines()][-1]["output"]
    assert isinstance(answer["items"], list)
    assert answer["items"]
    assert all(set(item) == {"name", "age"} for item in answer["items"])
    both = _toolwire(tmp_path, "chat", "x", "--schema", "a", "--schema-multi", "a")
    assert 2 == both.returncode
    assert "not both" in both.stderr


def test_a_tool_off_by_default_is_offered_for_a_run_with_tool(tmp_path: Path) -> None:
    # toolwire-fs adds delete_file off, even with deletes allowed: nothing offered it in
    # chat (#45). --tool offers it for this run; the approval and the policies still apply.
    root = tmp_path / "root"
    root.mkdir()
    (root / "gone.txt").write_text("x")
    env = {"TOOLWIRE_FS_ROOT": str(root), "TOOLWIRE_FS_ALLOW_DELETE": "1"}
    ask = ["chat", "delete file 'gone.txt'", "--approve", "--json", "--no-log"]
    plain = _toolwire(tmp_path, *ask, **env)
    assert 0 == plain.returncode, plain.stderr
    assert (root / "gone.txt").exists()  # not offered: the model could not call it
    offered = _toolwire(tmp_path, *ask, "--tool", "delete_file", **env)
    assert 0 == offered.returncode, offered.stderr
    events = [json.loads(line) for line in offered.stdout.splitlines()]
    assert ["delete_file"] == [e["name"] for e in events if e.get("event") == "call"]
    assert not (root / "gone.txt").exists()
    # Without --approve it is asked about, and with no one to answer, refused.
    (root / "gone.txt").write_text("x")
    refused = _toolwire(tmp_path, *ask[:2], "--json", "--no-log", "-T", "delete_file", **env)
    assert (root / "gone.txt").exists(), refused.stdout
    unknown = _toolwire(tmp_path, "chat", "x", "--tool", "delete_fil", **env)
    assert 2 == unknown.returncode
    assert "did you mean `delete_file`?" in unknown.stderr


def test_completion_offers_the_users_aliases_and_key_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolwire.cli import stored

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    stored.write_aliases({"fast": {"model": "gpt-5-mini"}})
    stored.write_keys({"work": "sk-secret"})
    assert "fast" in candidates(["chat", "--model", "f"], 2)
    assert ["work"] == candidates(["chat", "--key", ""], 2)
    (tmp_path / "toolwire" / "aliases.json").write_text("{broken")
    assert "o3" in candidates(["chat", "--model", "o"], 2)  # a broken file offers the rest


def test_the_log_keeps_what_the_model_read_not_a_structured_value(tmp_path: Path) -> None:
    # #44: a result's structured value is for applications; the saved conversation keeps
    # what can be sent again (the text), not a copy of the value as large again.
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(
        textwrap.dedent(
            """
            import toolwire as tw

            def read_notes(path: str) -> tw.Structured:
                '''Read the notes.'''
                return tw.Structured({"content": "buy milk"}, text="buy milk")

            tools = tw.Toolset("app", [tw.tool_fn(read_notes)])
            """
        )
    )
    done = _toolwire(tmp_path, "chat", "read_notes please", "--app", "app:tools")
    assert 0 == done.returncode, done.stderr
    with sqlite3.connect(tmp_path / "data" / "toolwire" / "logs.db") as db:
        (saved,) = db.execute("SELECT session FROM conversations").fetchone()
    results = [r for m in json.loads(saved)["messages"] for r in m.get("results", ())]
    assert ["buy milk"] == [r["content"] for r in results]
    assert all("structured" not in r for r in results)
