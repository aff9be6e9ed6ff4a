"""The command line: exit statuses, the argument parser and its help text."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from toolwire.cli.extend import Command

EXIT_OK = 0
EXIT_TOOL = 1
EXIT_USAGE = 2
EXIT_PLUGIN = 3
EXIT_PROVIDER = 4
EXIT_ROUNDS = 5
EXIT_SCHEMA = 6

EPILOG = """\
exit status:
  0  ok
  1  a tool call was rejected, refused or failed
  2  usage error (bad arguments, malformed JSON, unknown tool, toolwire.toml, a setting)
  3  plugin or policy error (a policy failed to load, strict mode)
  4  provider error (unknown provider or schema compiler, failed request)
  5  chat ran out of tool rounds (--max-rounds)
  6  check: a tool cannot be sent to that provider (with --fail-on warning:
     or its schema loses a constraint)

approval:
  An interactive `chat` asks at the terminal before a mutating or destructive
  call runs; otherwise (`call`, a chat with a prompt) those tools run only with
  --approve (or --yes), and without it they are denied. Policies decide first:
  --approve never overrides a policy's rejection.

environment:
  TOOLWIRE_PLUGINS           allow-list of plugin names (comma separated; never a policy)
  TOOLWIRE_DISABLE_PLUGINS   deny-list of plugin names (never a policy)
  TOOLWIRE_AUTOLOAD_PLUGINS  0: load no installed tool pack, provider or backend
  TOOLWIRE_DISABLE_POLICIES  policies to turn off (names, or *): warned and audited
  TOOLWIRE_POLICY_REQUIRED   1: a policy must be in force; turning one off is refused
  TOOLWIRE_STRICT_PLUGINS    1: a plugin that fails to load is an error
  TOOLWIRE_HOOK_TIMEOUT      seconds a hook may take (default 5)
  TOOLWIRE_PLUGIN_IMPORT_TIMEOUT
                             seconds a plugin's import may take (default 30)
  TOOLWIRE_BACKEND           where tool bodies run (an executor backend's name)
  TOOLWIRE_CONFIG            the command line's toolwire.toml (default:
                             $XDG_CONFIG_HOME/toolwire/toolwire.toml; `toolwire config`)
  TOOLWIRE_PROVIDER, TOOLWIRE_MODEL
                             chat's provider and model (the command line wins)
  TOOLWIRE_LOGS_PATH         the conversation log (default:
                             $XDG_DATA_HOME/toolwire/logs.db; `toolwire logs path`)
  NO_COLOR                   no colour on a terminal
"""

APP = "toolwire-cli"


class CliError(Exception):
    """An error shown as one line on stderr, with its exit status."""

    def __init__(self, message: str, status: int) -> None:
        self.status = status
        super().__init__(message)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    """The parser of the built-in commands (:func:`add_commands` adds the others)."""
    from toolwire._version import __version__

    p = _Parser(
        prog="toolwire",
        description="Inspect and exercise toolwire plugins, tools and providers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"toolwire {__version__} (Python {sys.version.split()[0]})",
        help="print the version and exit",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    _app_option(p, default=None)
    sub = p.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, help="one of the commands below"
    )
    sub.required = True

    def command(name: str, about: str) -> argparse.ArgumentParser:
        return _command(sub, name, about)

    sp = command("plugins", "discovered plugins, versions and failures")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = command("tools", "the assembled toolset, or a provider's wire form of it")
    sp.add_argument(
        "--provider", metavar="NAME", help="print the tools as that provider sends them"
    )
    sp.add_argument("--model", metavar="M", help="model for --provider")
    _provider_options(sp)
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = command("call", "one tool call through the policies, hooks and executor")
    sp.add_argument("name", help="the tool's wire name")
    sp.add_argument("arguments", metavar="JSON", help="the arguments, as a JSON object")
    sp.add_argument("--json", action="store_true", help="print one JSON event per line")
    _shape_options(sp)
    _principal_options(sp)
    _save_media_option(sp)
    _backend_option(sp)
    _approve_switch(sp)

    sp = command(
        "chat",
        "the tool loop with a provider (the offline `test` one by default); without a "
        "prompt, an interactive session on a terminal (or the prompt from stdin)",
    )
    sp.add_argument("prompt", nargs="?", help="what to ask the model (none: interactive)")
    sp.add_argument(
        "--provider", metavar="NAME", help="provider (default: toolwire.toml's, else test)"
    )
    sp.add_argument("--model", metavar="M", help="model name (default: the provider's)")
    _provider_options(sp)
    sp.add_argument(
        "--max-rounds", type=int, default=None, metavar="N", help="tool rounds per prompt (8)"
    )
    sp.add_argument(
        "--schema",
        metavar="SPEC",
        help="answer as JSON of this shape: a JSON Schema file, MODULE:ATTR, or fields "
        'like "name, age int, bio: a short biography"',
    )
    sp.add_argument(
        "--schema-multi",
        metavar="SPEC",
        help='answer as a list of that shape, as {"items": [...]} (SPEC as --schema\'s)',
    )
    sp.add_argument(
        "-T",
        "--tool",
        action="append",
        metavar="NAME",
        help="offer this tool too, though it is off by default (toolwire-fs's delete_file); "
        "the policies still decide it",
    )
    sp.add_argument(
        "-o",
        "--option",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="a model setting for this run (temperature 0.2, max_output_tokens 500, "
        "stop '[\"END\"]'), over toolwire.toml's; checked against the model's profile",
    )
    _backend_option(sp)
    sp.add_argument(
        "--no-stream",
        dest="stream",
        action="store_false",
        help="wait for each whole reply instead of streaming the answer's text",
    )
    sp.add_argument(
        "-c",
        "--continue",
        dest="cont",
        action="store_true",
        help="continue the latest logged conversation",
    )
    sp.add_argument("--cid", metavar="ID", help="continue this logged conversation")
    sp.add_argument(
        "--no-log", action="store_true", help="do not record this chat in the conversation log"
    )
    sp.add_argument("--json", action="store_true", help="print one JSON event per line")
    _shape_options(sp)
    _principal_options(sp)
    _save_media_option(sp)
    _approve_switch(sp)

    sp = command("logs", "the conversation log: list, show, search, export")
    lsub = sp.add_subparsers(
        dest="logs_command",
        metavar="ACTION",
        parser_class=_Parser,
        help="list (the default), conversations, show, search, export, path",
    )
    lsub.required = False
    _logs_options(sp, 3, False)

    def action(name: str, about: str) -> argparse.ArgumentParser:
        ap = lsub.add_parser(name, help=about, description=about)
        _logs_options(ap, argparse.SUPPRESS, argparse.SUPPRESS)
        return ap

    action("list", "the latest responses (the default)")
    action("conversations", "the conversations, newest first")
    show = action("show", "one response (by number) or conversation (by id)")
    show.add_argument("id", help="a response's number or a conversation's id")
    search = action("search", "full-text search of prompts and answers")
    search.add_argument("query", nargs="+", help="words that must all appear")
    action("export", "every response as JSON (with --cid, one conversation's)")
    action("path", "where the log is")

    sp = command("config", "the command line's settings, and where each came from")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = command("completion", "print a shell completion script")
    sp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")
    sp.epilog = (
        "install: bash: toolwire completion bash >> ~/.bashrc; zsh: toolwire completion zsh "
        '> "${fpath[1]}/_toolwire"; fish: toolwire completion fish > '
        "~/.config/fish/completions/toolwire.fish"
    )

    sp = command("check", "schema loss report per tool for a provider")
    sp.add_argument("--provider", metavar="NAME", required=True, help="schema compiler's name")
    sp.add_argument(
        "--target",
        metavar="FIELD",
        default="auto",
        help="the request field, for providers with more than one "
        "(gemini: parameters, parametersJsonSchema; default: auto)",
    )
    sp.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="exit 6 when a tool cannot be compiled (error, the default) "
        "or also when a schema loses a constraint (warning)",
    )
    sp.add_argument(
        "--model",
        metavar="M",
        help="also show what this model's profile takes and refuses (toolwire models)",
    )
    sp.add_argument(
        "--output-type",
        metavar="MODULE:ATTR",
        help="with --model: the answer type, compiled as the model's provider sends it",
    )
    sp.add_argument("--verbose", action="store_true", help="also show lossless changes")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = command("models", "the model profiles: what each model family of a provider takes")
    sp.add_argument("--provider", metavar="NAME", help="only this provider's (openai, ...)")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = command("keys", "API keys kept for the command line, used by name (never printed)")
    ksub = sp.add_subparsers(
        dest="keys_command", metavar="ACTION", parser_class=_Parser, help="set, list, remove, path"
    )
    ksub.required = True
    ap = ksub.add_parser(
        "set",
        help="store a key (read from the terminal, or stdin)",
        description="store a key (read from the terminal, or stdin)",
    )
    ap.add_argument("name", help="its name: a provider's (openai) is used for that provider")
    ap = ksub.add_parser(
        "list", help="the names of the stored keys", description="the names of the stored keys"
    )
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap = ksub.add_parser("remove", help="forget a key", description="forget a key")
    ap.add_argument("name", help="the key's name")
    ksub.add_parser("path", help="where the keys are kept", description="where the keys are kept")

    sp = command("aliases", "short names for models: --model NAME uses the model it stands for")
    asub = sp.add_subparsers(
        dest="aliases_command",
        metavar="ACTION",
        parser_class=_Parser,
        help="set, list, remove, path",
    )
    asub.required = True
    ap = asub.add_parser(
        "set", help="name a model (and its provider)", description="name a model (and its provider)"
    )
    ap.add_argument("alias", help="the short name")
    ap.add_argument("model", help="the model it stands for")
    ap.add_argument("--provider", metavar="NAME", help="the provider it goes with")
    ap = asub.add_parser("list", help="the aliases", description="the aliases")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap = asub.add_parser("remove", help="forget an alias", description="forget an alias")
    ap.add_argument("alias", help="the alias")
    asub.add_parser(
        "path", help="where the aliases are kept", description="where the aliases are kept"
    )

    sp = command("new", "write a ready package: a tool pack or a policy, with its tests")
    sp.add_argument("kind", choices=("pack", "policy"), help="what to write")
    sp.add_argument("name", help="its name (`weather` makes toolwire-weather, toolwire_weather)")
    sp.add_argument("--dir", default=".", metavar="PATH", help="where to write it (default: here)")

    return p


def _command(sub: Any, name: str, about: str) -> argparse.ArgumentParser:
    sp: argparse.ArgumentParser = sub.add_parser(name, help=about, description=about)
    _app_option(sp)
    sp.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    return sp


def add_commands(
    parser: argparse.ArgumentParser, added: Mapping[str, Command], only: str | None = None
) -> None:
    """The installed distributions' commands (:mod:`toolwire.cli.extend`) on ``parser``;
    with ``only``, the arguments of that one alone (the others are listed by name and
    help: ``--help`` needs no more)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in added.items():
        sp = _command(sub, name, command.about)
        if only is None or only == name:
            command.arguments(sp)
        sp.set_defaults(_added=command)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_word(words: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option (nor
    ``--app``'s value); None when it names none (``--help``, ``--version``)."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--app":
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def _app_option(p: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """``--app`` before or after the command (after it, it wins)."""
    p.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        default=default,
        help="the application's Toolset to assemble the plugins' tools into "
        "(the current directory is importable)",
    )


def _logs_options(sp: argparse.ArgumentParser, count: Any, flag: Any) -> None:
    """``-n``, ``--cid``, ``--json``: before or after the action (after it, they win)."""
    sp.add_argument("-n", "--count", type=int, default=count, metavar="N", help="how many (3)")
    sp.add_argument(
        "--cid", metavar="ID", default=None if flag is False else flag, help="one conversation"
    )
    sp.add_argument("--json", action="store_true", default=flag, help="print JSON")


def _principal_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--as",
        dest="as_subject",
        metavar="SUBJECT",
        help="make the calls for this principal (method `cli`: a policy may refuse it)",
    )
    sp.add_argument(
        "--group",
        dest="as_groups",
        action="append",
        default=[],
        metavar="GROUP",
        help="with --as: a group or role of the principal (repeat for several)",
    )


def _shape_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="on a terminal, show each call's arguments and result whole (not folded)",
    )
    sp.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=None,
        help="colour: on a terminal without NO_COLOR (auto, the default), always or never",
    )


def _save_media_option(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--save-media",
        metavar="DIR",
        type=Path,
        help="write each image, audio or file a tool returns to DIR (as CALLID-N.EXT)",
    )


def _backend_option(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--backend",
        metavar="NAME",
        help="where tool bodies run: an installed executor backend (`ray`), or `inprocess`; "
        "default: TOOLWIRE_BACKEND, else in-process",
    )


def _provider_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--base-url",
        metavar="URL",
        help="the server's URL (an OpenAI-compatible server: vLLM, Ollama, a gateway)",
    )
    sp.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable that holds the API key (default: the provider's own)",
    )
    sp.add_argument(
        "--key",
        metavar="NAME",
        help="the stored key of that name (toolwire keys; default: the provider's name, "
        "if stored, else the provider's own variable)",
    )


def _approve_switch(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--approve",
        "--yes",
        dest="approve",
        action="store_true",
        help="run mutating and destructive tools (denied without it)",
    )
    sp.add_argument(
        "--approval-wait",
        metavar="SECONDS",
        type=_seconds,
        default=None,
        help="how long a call the policy files for approval (its [approvals]) waits for "
        "an answer (default: as long as the request lives, 600 for `mcp serve`; 0: refused "
        "at once, naming it)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be 0 or more, got {text!r}")
    return value


# -- helpers ---------------------------------------------------------------------------
