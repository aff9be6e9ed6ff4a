"""The ``toolwire`` command: plugins, tools, one call, and a chat loop, through the plugin host.

One module per job: ``parser`` (arguments, help, exit statuses), ``commands`` (what each
command does) and ``render`` (what they print); :func:`main` here ties them together.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from toolwire._errors import (
    PluginError,
    ProviderError,
    RoundLimitError,
    ToolwireError,
    UnsupportedSettingError,
)
from toolwire.cli.parser import (
    EXIT_PLUGIN,
    EXIT_PROVIDER,
    EXIT_ROUNDS,
    EXIT_TOOL,
    EXIT_USAGE,
    CliError,
    _command_word,
    _parser,
    _subparsers,
    add_commands,
)

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (see ``toolwire --help``)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["__complete"]:  # what a shell's completion script asks
        from toolwire.cli.completion import complete

        return complete(words[1:])
    parser = _parser()
    word = _command_word(words)
    listing = word is None and ("-h" in words or "--help" in words)
    builtin = _subparsers(parser)
    if listing or (word is not None and word not in builtin):
        # --help, or not a built-in command: the installed distributions' commands too
        # (their modules are imported only now, never for a built-in command).
        from toolwire.cli.extend import ELSEWHERE, plugin_commands

        added = plugin_commands(builtin)
        if word in ELSEWHERE and word not in added:
            print(
                f"toolwire: error: `toolwire {word}` needs {ELSEWHERE[word]}: "
                f"pip install {ELSEWHERE[word]}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        add_commands(parser, added, only=word or "")
    args = parser.parse_args(words)
    # After parsing: --help, --version and argument errors need none of the machinery
    # (pydantic, the plugin host, the agent), which takes a fifth of a second to import.
    from toolwire.cli.chat import COMMANDS
    from toolwire.cli.commands import _COMMANDS
    from toolwire.cli.render import _out

    _log_to_stderr()
    try:
        if args.command != "completion":
            from toolwire.cli.config import use_mcp_config

            try:
                use_mcp_config()  # the MCP servers the user's toolwire.toml names
            except ToolwireError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
        added_command = getattr(args, "_added", None)
        if added_command is not None:
            from toolwire.cli.extend import CommandContext

            status = added_command.run(args, CommandContext())
            if not isinstance(status, int) or isinstance(status, bool):
                raise CliError(
                    f"`toolwire {args.command}` returned {type(status).__name__}, not an "
                    "exit status",
                    EXIT_PLUGIN,
                )
            return status
        return {**_COMMANDS, **COMMANDS}[args.command](args)
    except Exception as exc:
        if args.debug:
            raise
        status, message = _classify(exc)
        _out(sys.stderr, f"toolwire: error: {message}")
        return status
    except KeyboardInterrupt:
        return 130


def _log_to_stderr() -> None:
    """Plugin warnings (a skipped tool pack) as one ``toolwire: warning:`` line each."""
    logger = logging.getLogger("toolwire")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("toolwire: warning: %(message)s"))
        handler.setLevel(logging.WARNING)  # records from more verbose children stay out
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def _classify(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, CliError):
        return exc.status, str(exc)
    if isinstance(exc, PluginError):
        return EXIT_PLUGIN, str(exc)
    if isinstance(exc, ProviderError):
        return EXIT_PROVIDER, str(exc)
    if isinstance(exc, RoundLimitError):
        return EXIT_ROUNDS, str(exc)
    if isinstance(exc, UnsupportedSettingError):
        # A setting the model cannot take (toolwire.toml's, or the command line's): the
        # configuration's mistake, caught before anything was sent, not a refused call.
        return EXIT_USAGE, f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ToolwireError):
        return EXIT_TOOL, f"{type(exc).__name__}: {exc}"
    return EXIT_TOOL, f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"
