"""The ``toolwire`` command against real servers: the fake OpenAI server on 127.0.0.1,
reached with ``--base-url`` and ``--api-key-env``, each run a real subprocess.

Streaming, visible retries, a spinner on a terminal (a real pseudo-terminal), one
block per call, exit statuses, JSON documents, ``--app`` after the command with the
current directory importable, ``--version`` and help.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import Call, FakeOpenAI, openai_chat

from toolwire.cli.extend import plugin_commands
from toolwire.cli.parser import _parser, _subparsers, add_commands

TOOLWIRE = Path(sys.executable).with_name("toolwire")  # the console script


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLWIRE_", "OPENAI_"))}
    env.pop("PYTHONPATH", None)
    env["XDG_CONFIG_HOME"] = str(tmp / "config")
    env["TOOLWIRE_POLICY"] = str(_policy(tmp))
    env.update(extra)
    return env


def _policy(tmp: Path) -> Path:
    """An empty organisation policy: policies apply, nothing is denied (and no warning)."""
    path = tmp.parent / "policy.toml"
    path.write_text("")
    return path


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """The working directory of the command (the policy file lives beside it)."""
    work = tmp_path / "work"
    work.mkdir()
    return work


def _cli(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLWIRE), *args],
        cwd=tmp,
        env=_env(tmp, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _compatible(fake: FakeOpenAI) -> list[str]:
    return ["--provider", "openai-compatible", "--base-url", fake.base_url, "--model", "m"]


def test_chat_reaches_an_openai_compatible_server_with_a_key_from_the_named_variable(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("milk\n")
    fake_openai.enqueue_chat(openai_chat.tool_calls_completion(Call("list_dir", "{}", id="call_a")))
    fake_openai.enqueue_chat(openai_chat.text_completion("You have notes.txt."))

    done = _cli(
        tmp_path,
        "chat",
        "what is here?",
        *_compatible(fake_openai),
        "--api-key-env",
        "MY_SERVER_KEY",
        "--no-stream",
        MY_SERVER_KEY=fake_openai.default_api_key,
    )

    assert 0 == done.returncode, done.stderr
    assert [
        "> list_dir {}",
        "  decision: run",
        "  result: notes.txt (5 bytes)",
        "assistant: You have notes.txt.",
    ] == done.stdout.splitlines()
    first, second = fake_openai.requests
    assert f"Bearer {fake_openai.default_api_key}" == first.headers["authorization"]
    assert "m" == first.json["model"]
    assert "stream" not in first.json
    assert "tool" == second.json["messages"][-1]["role"]


def test_chat_streams_the_answer_by_default(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.api_key = None
    fake_openai.enqueue_chat_stream(openai_chat.text_stream("Hello there, friend.", size=3))
    done = _cli(tmp_path, "chat", "hi", *_compatible(fake_openai))
    assert 0 == done.returncode, done.stderr
    assert ["assistant: Hello there, friend."] == done.stdout.splitlines()
    assert fake_openai.requests[0].json["stream"] is True


def test_each_call_is_one_block_decision_then_result(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.api_key = None
    (tmp_path / "a.txt").write_text("A\n")
    calls = (
        Call("read_file", '{"path": "a.txt"}', id="c1"),
        Call("list_dir", "{}", id="c2"),
        Call("no_such_tool", "{}", id="c3"),
    )
    fake_openai.enqueue_chat(openai_chat.tool_calls_completion(*calls))
    fake_openai.enqueue_chat(openai_chat.text_completion("done"))
    done = _cli(tmp_path, "chat", "x", *_compatible(fake_openai), "--no-stream")
    assert 1 == done.returncode  # a call was rejected
    lines = done.stdout.splitlines()
    assert lines[0] == '> read_file {"path": "a.txt"}'
    assert lines[1] == "  decision: run"
    assert lines[2].startswith("  result:")
    assert lines[3] == "> list_dir {}"
    assert lines[4] == "  decision: run"
    assert lines[5].startswith("  result:")
    assert lines[6] == "> no_such_tool {}"
    assert lines[7].startswith("  decision: rejected by toolwire: tool `no_such_tool` is not")
    assert "assistant: done" == lines[-1]
    # The model was told what it can call instead.
    sent = fake_openai.requests[1].json["messages"]
    (rejection,) = [m for m in sent if m.get("tool_call_id") == "c3"]
    assert "The tools available this round: `read_file`" in rejection["content"]


def test_retries_are_shown_as_they_happen(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.api_key = None
    fake_openai.enqueue_error("server", retry_after=0.1)
    fake_openai.enqueue_chat(openai_chat.text_completion("ok"))
    done = _cli(tmp_path, "chat", "hi", *_compatible(fake_openai), "--no-stream")
    assert 0 == done.returncode, done.stderr
    notices = [line for line in done.stderr.splitlines() if "retrying in" in line]
    assert 1 == len(notices)
    assert notices[0].startswith("toolwire: openai-compatible: 500 (ServerError), retrying in ")
    assert notices[0].endswith("(attempt 1 of 3)")


def _read_pty(
    leader: int, proc: subprocess.Popen[Any], *, answer: tuple[bytes, bytes] | None = None
) -> bytes:
    """What the process wrote to the terminal until it ended (30 s at most); ``answer``:
    when the first text is seen, type the second once."""
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if answer is not None and answer[0] in seen:
            os.write(leader, answer[1])
            answer = None
        if proc.poll() is not None and not ready:
            break
    return seen


def test_a_spinner_shows_on_a_terminal_and_not_when_piped(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.api_key = None
    fake_openai.enqueue(openai_chat_json("Hi.", delay=1.0))
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(TOOLWIRE), "chat", "hi", *_compatible(fake_openai), "--no-stream"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = _read_pty(leader, proc)
    out, _ = proc.communicate(timeout=30)
    os.close(leader)
    assert 0 == proc.returncode
    assert "waiting for openai-compatible" in seen.decode("utf-8", "replace")
    assert b"assistant: Hi." in out
    # Piped: no spinner at all.
    fake_openai.enqueue(openai_chat_json("Hi."))
    piped = _cli(tmp_path, "chat", "hi", *_compatible(fake_openai), "--no-stream")
    assert "waiting for" not in piped.stderr


def openai_chat_json(text: str, *, delay: float = 0.0) -> Any:
    from fakes._server import JSONResponse

    return JSONResponse(openai_chat.text_completion(text), delay=delay)


def test_a_provider_that_cannot_be_created_exits_4(tmp_path: Path) -> None:
    done = _cli(tmp_path, "chat", "hi", "--provider", "openai-compatible")
    assert 4 == done.returncode
    assert "toolwire: error: provider `openai-compatible` cannot be created: " in done.stderr
    assert "needs model=" in done.stderr


def test_an_unset_key_variable_exits_4(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    done = _cli(tmp_path, "chat", "hi", *_compatible(fake_openai), "--api-key-env", "NOPE_KEY")
    assert 4 == done.returncode
    assert "--api-key-env NOPE_KEY: that variable is not set" in done.stderr
    assert [] == fake_openai.requests


def test_a_mistyped_provider_gets_did_you_mean(tmp_path: Path) -> None:
    done = _cli(tmp_path, "chat", "hi", "--provider", "antropic")
    assert 4 == done.returncode
    assert "did you mean `anthropic`?" in done.stderr


@pytest.mark.parametrize("name", ["openai-compatible", "openai", "anthropic", "gemini"])
def test_tools_renders_for_any_provider_without_a_url_or_a_key(tmp_path: Path, name: str) -> None:
    done = _cli(tmp_path, "tools", "--provider", name, "--json")
    assert 0 == done.returncode, done.stderr
    doc = json.loads(done.stdout)
    assert "toolwire.wire-tools/1" == doc["format"]
    assert name == doc["provider"]
    assert "read_file" in json.dumps(doc["tools"])
    text = _cli(tmp_path, "tools", "--provider", name)
    assert 0 == text.returncode
    # fs and http: what a turn sends (the tools that are on), and the off ones said so.
    assert text.stdout.startswith(f"5 tool(s) as {name} sends them, ")
    assert "  read_file(path, offset?, limit?)" in text.stdout
    assert "  write_file: not sent (off; a turn that names it offers it)" in text.stdout
    assert "write_file" not in json.dumps(doc["tools"])
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.stdout)  # JSON only with --json


def test_app_after_the_command_and_the_current_directory_is_importable(tmp_path: Path) -> None:
    (tmp_path / "myapp.py").write_text(
        "import toolwire as tw\n\n"
        "@tw.tool_fn\n"
        "def shout(text: str) -> str:\n"
        '    """Say it louder."""\n'
        "    return text.upper()\n\n"
        'tools = tw.Toolset("myapp", [shout])\n'
    )
    after = _cli(tmp_path, "tools", "--app", "myapp:tools")
    before = _cli(tmp_path, "--app", "myapp:tools", "tools")
    assert 0 == after.returncode, after.stderr
    assert after.stdout == before.stdout
    assert "shout" in after.stdout.split()
    call = _cli(tmp_path, "call", "shuot", '{"text": "hi"}', "--app", "myapp:tools")
    assert 2 == call.returncode
    assert "did you mean `shout`?" in call.stderr


def test_call_shows_argument_errors_per_field_in_text(tmp_path: Path) -> None:
    done = _cli(tmp_path, "call", "read_file", '{"offset": "x"}')
    assert 1 == done.returncode
    lines = done.stdout.splitlines()
    assert lines[1] == (
        "  decision: rejected by toolwire: tool `read_file` arguments did not match the "
        "expected schema:"
    )
    assert "    - path: Field required" in lines
    assert any(line.startswith("    - offset: Input should be a valid integer") for line in lines)


def test_version(tmp_path: Path) -> None:
    done = _cli(tmp_path, "--version")
    assert 0 == done.returncode
    assert done.stdout.startswith("toolwire 0.1.0 (Python 3.")


def test_every_command_has_a_description_and_every_argument_help(tmp_path: Path) -> None:
    def walk(parser: Any, path: str) -> None:
        assert parser.description, f"`{path}` has no description"
        for action in parser._actions:
            if action.help is None:
                raise AssertionError(f"`{path}` {action.option_strings or action.dest}: no help")
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for name, sub in choices.items():
                    walk(sub, f"{path} {name}")

    parser = _parser()
    add_commands(parser, plugin_commands(_subparsers(parser)))  # the installed ones' too
    walk(parser, "toolwire")
    done = _cli(tmp_path, "--help")
    lines = done.stdout.splitlines()
    block = lines[lines.index("positional arguments:") + 2 : lines.index("options:")]
    listed = [line.split(None, 1) for line in block if line.startswith("    ") and line[4] != " "]
    assert [
        "plugins",
        "tools",
        "call",
        "chat",
        "logs",
        "config",
        "completion",
        "check",
        "models",
        "keys",
        "aliases",
        "new",
        "mcp",  # toolwire-mcp's, through toolwire.commands
        "console",
        "policy",  # toolwire-policy's
    ] == [row[0] for row in listed]
    assert all(len(row) == 2 for row in listed)  # each with its one-line description


def test_json_documents_share_one_shape(tmp_path: Path) -> None:
    for args, kind in (
        (("plugins", "--json"), "plugins"),
        (("tools", "--json"), "tools"),
        (("check", "--provider", "openai", "--json"), "check"),
        (("models", "--json"), "models"),
    ):
        done = _cli(tmp_path, *args)
        assert 0 == done.returncode, done.stderr
        assert f"toolwire.{kind}/1" == json.loads(done.stdout)["format"]
    events = _cli(tmp_path, "call", "list_dir", "{}", "--json")
    lines = [json.loads(line) for line in events.stdout.splitlines()]
    assert {"toolwire.event/1"} == {e["format"] for e in lines}


def test_plugins_lists_every_provider_name_a_distribution_registers(tmp_path: Path) -> None:
    done = _cli(tmp_path, "plugins")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["openai"])
    assert lines[at + 1].split() == [
        "registers:",
        "openai,",
        "openai-compatible,",
        "openai-responses,",
        "openrouter",
    ]
    data = json.loads(_cli(tmp_path, "plugins", "--json").stdout)
    openai = next(p for p in data["plugins"] if p["name"] == "openai" and p["kind"] == "provider")
    assert openai["registers"] == ["openai", "openai-compatible", "openai-responses", "openrouter"]


def test_a_continued_conversation_keeps_its_server_and_key(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    # Reproducer (#45): `chat -c` forgot --base-url, and an openai-compatible provider could
    # not be created again (exit 4).
    fake_openai.enqueue_chat(openai_chat.text_completion("Noted: pelican."))
    fake_openai.enqueue_chat(openai_chat.text_completion("It was pelican."))
    data = {"XDG_DATA_HOME": str(tmp_path.parent / "data")}
    first = _cli(
        tmp_path,
        "chat",
        "remember pelican",
        *_compatible(fake_openai),
        "--api-key-env",
        "MY_SERVER_KEY",
        "--no-stream",
        MY_SERVER_KEY=fake_openai.default_api_key,
        **data,
    )
    assert 0 == first.returncode, first.stderr
    again = _cli(
        tmp_path,
        "chat",
        "-c",
        "which word?",
        "--no-stream",
        MY_SERVER_KEY=fake_openai.default_api_key,
        **data,
    )
    assert 0 == again.returncode, again.stderr
    assert "assistant: It was pelican." in again.stdout
    second = fake_openai.requests[1]
    assert ("m", f"Bearer {fake_openai.default_api_key}") == (
        second.json["model"],
        second.headers["authorization"],
    )
    assert "remember pelican" in json.dumps(second.json["messages"])


def test_a_retry_with_no_status_says_what_went_wrong(tmp_path: Path) -> None:
    # Reproducer (#45): `openai-compatible: (ProviderConnectionError), retrying`, an empty
    # slot where the status goes.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    done = _cli(
        tmp_path,
        "chat",
        "hi",
        "--provider",
        "openai-compatible",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m",
        "--no-stream",
    )
    assert 4 == done.returncode
    notices = [line for line in done.stderr.splitlines() if "retrying in" in line]
    assert notices, done.stderr
    assert notices[0].startswith(
        "toolwire: openai-compatible: could not connect (ProviderConnectionError), retrying in "
    )


# -- stored keys and model aliases (#45 item 3) --------------------------------------------


def _keys_file(tmp: Path) -> Path:
    return tmp / "config" / "toolwire" / "keys.json"


def test_a_stored_key_is_used_by_name_and_never_printed(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    secret = fake_openai.default_api_key
    stored = subprocess.run(
        [str(TOOLWIRE), "keys", "set", "myserver"],
        cwd=tmp_path,
        env=_env(tmp_path),
        input=secret + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == stored.returncode, stored.stderr
    path = _keys_file(tmp_path)
    assert 0o600 == (path.stat().st_mode & 0o777)
    assert 0o700 == (path.parent.stat().st_mode & 0o777)
    listed = _cli(tmp_path, "keys", "list")
    assert ["myserver"] == listed.stdout.splitlines()
    assert secret not in listed.stdout + listed.stderr + stored.stdout + stored.stderr
    assert str(path) == _cli(tmp_path, "keys", "path").stdout.strip()

    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    done = _cli(
        tmp_path, "chat", "hello", *_compatible(fake_openai), "--key", "myserver", "--no-stream"
    )
    assert 0 == done.returncode, done.stderr
    assert f"Bearer {secret}" == fake_openai.requests[-1].headers["authorization"]

    # A key stored under the provider's name is its key when none is named.
    again = subprocess.run(
        [str(TOOLWIRE), "keys", "set", "openai-compatible"],
        cwd=tmp_path,
        env=_env(tmp_path),
        input="sk-by-provider\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == again.returncode, again.stderr
    fake_openai.api_key = "sk-by-provider"  # the server takes only this key now
    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    done = _cli(tmp_path, "chat", "hello", *_compatible(fake_openai), "--no-stream")
    assert 0 == done.returncode, done.stderr
    assert "Bearer sk-by-provider" == fake_openai.requests[-1].headers["authorization"]
    # --api-key-env names the key's variable: it wins over a stored one.
    fake_openai.api_key = "sk-from-env"
    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    done = _cli(
        tmp_path,
        "chat",
        "hello",
        *_compatible(fake_openai),
        "--api-key-env",
        "MINE",
        "--no-stream",
        MINE="sk-from-env",
    )
    assert 0 == done.returncode, done.stderr
    assert "Bearer sk-from-env" == fake_openai.requests[-1].headers["authorization"]

    assert 0 == _cli(tmp_path, "keys", "remove", "myserver").returncode
    assert ["openai-compatible"] == _cli(tmp_path, "keys", "list").stdout.splitlines()
    missing = _cli(tmp_path, "chat", "hello", *_compatible(fake_openai), "--key", "myservr")
    assert 2 == missing.returncode
    assert "no key of that name is stored" in missing.stderr


@pytest.mark.parametrize(
    ("content", "mode", "said"),
    [
        ('{"k": "v"}', 0o640, "open to others"),  # readable by others: its keys are not used
        ("{not json", 0o600, "not JSON"),
        ('{"k": 5}', 0o600, "is not a string"),
        ("[1]", 0o600, "must hold a JSON object"),
    ],
)
def test_a_keys_file_that_is_not_the_users_alone_or_malformed_is_refused(
    tmp_path: Path, content: str, mode: int, said: str
) -> None:
    path = _keys_file(tmp_path)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(content)
    path.chmod(mode)
    done = _cli(tmp_path, "chat", "hello", "--key", "k")
    assert 2 == done.returncode
    assert said in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("given", "said"),
    [("", "empty"), ("a\x00b", "printable"), ("x" * 5000, "over 4,096")],
)
def test_a_key_that_is_no_key_is_not_stored(tmp_path: Path, given: str, said: str) -> None:
    done = subprocess.run(
        [str(TOOLWIRE), "keys", "set", "k"],
        cwd=tmp_path,
        env=_env(tmp_path),
        input=given + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 2 == done.returncode
    assert said in done.stderr
    assert not _keys_file(tmp_path).exists()
    bad = _cli(tmp_path, "keys", "set", "../etc")
    assert 2 == bad.returncode
    assert "a name is" in bad.stderr


def test_a_model_alias_names_the_model_and_its_provider(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    made = _cli(tmp_path, "aliases", "set", "fast", "m-2", "--provider", "openai-compatible")
    assert 0 == made.returncode, made.stderr
    assert ["fast: m-2 (openai-compatible)"] == _cli(
        tmp_path, "aliases", "list"
    ).stdout.splitlines()
    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    done = _cli(
        tmp_path,
        "chat",
        "hello",
        "--base-url",
        fake_openai.base_url,
        "--model",
        "fast",
        "--api-key-env",
        "K",
        "--no-stream",
        K=fake_openai.default_api_key,
    )
    assert 0 == done.returncode, done.stderr
    assert "m-2" == fake_openai.requests[-1].json["model"]
    assert 0 == _cli(tmp_path, "aliases", "remove", "fast").returncode
    assert "" == _cli(tmp_path, "aliases", "list").stdout
    broken = tmp_path / "config" / "toolwire" / "aliases.json"
    broken.write_text('{"fast": "m"}')
    done = _cli(tmp_path, "chat", "hello", "--model", "fast")
    assert 2 == done.returncode
    assert "must be" in done.stderr


def test_keys_set_on_a_terminal_asks_without_echo(tmp_path: Path) -> None:
    # On a terminal the key is typed at a prompt that does not echo it (a real pty).
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(TOOLWIRE), "keys", "set", "typed"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    seen = _read_pty(leader, proc, answer=(b"key (not shown)", b"sk-typed-secret\n"))
    proc.wait(timeout=30)
    os.close(leader)
    assert 0 == proc.returncode, seen
    assert b"sk-typed-secret" not in seen  # never echoed
    assert b"stored key `typed`" in seen
    assert {"typed": "sk-typed-secret"} == json.loads(_keys_file(tmp_path).read_text())
