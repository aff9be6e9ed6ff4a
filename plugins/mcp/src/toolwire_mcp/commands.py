"""The commands toolwire-mcp adds to ``toolwire`` (entry point ``toolwire.commands: mcp``):
``toolwire mcp serve|trust|console`` and ``toolwire console``; and, before ``toolwire
call`` or ``chat`` runs tools, the terminal's progress printer and questions for the MCP
servers.

Imported whenever the command line lists its commands: nothing here imports the SDK or
the rest of toolwire-mcp until a command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from toolwire import hookimpl
from toolwire.cli.extend import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Command,
    CommandContext,
    Terminal,
    add_app_option,
    add_approve_options,
)
from toolwire.hookspecs import RegisterCommand

__all__ = ["toolwire_cli_commands", "toolwire_cli_terminal"]

_CONSOLE = (
    "serve the approval console: the calls waiting for the approvers a policy names, "
    "answered in a browser (sign-in by the tokens file)"
)


@hookimpl
def toolwire_cli_commands(register: RegisterCommand) -> None:
    register(
        Command(
            "mcp",
            "MCP: serve the assembled toolset, trust a project's servers, the approval console",
            arguments=_mcp_arguments,
            run=_run_mcp,
        )
    )
    register(Command("console", _CONSOLE, arguments=_console_arguments, run=_run_console))


@hookimpl
def toolwire_cli_terminal(terminal: Terminal) -> bool:
    """The MCP servers' progress on the terminal, and their questions asked there."""
    from toolwire_mcp.client._elicit import set_elicitation_handler
    from toolwire_mcp.client._progress import set_progress_handler

    set_progress_handler(terminal.progress)
    if terminal.ask is None:
        return False
    set_elicitation_handler(terminal.ask)
    return True


# -- arguments ------------------------------------------------------------------------------


def _mcp_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(
        dest="mcp_command", metavar="MCP_COMMAND", help="serve, trust, console"
    )
    sub.required = True
    _console_arguments(sub.add_parser("console", help=_CONSOLE, description=_CONSOLE))
    about = "serve the assembled toolset over MCP (policies and hooks apply)"
    _serve_arguments(sub.add_parser("serve", help=about, description=about))
    about = (
        "trust this project's ./.toolwire/mcp.json as it is now, so its servers start "
        "(read it first: each server is a command that runs)"
    )
    trust = sub.add_parser("trust", help=about, description=about)
    trust.add_argument("path", nargs="?", help="the file (default: ./.toolwire/mcp.json)")
    trust.add_argument("--remove", action="store_true", help="forget the file instead")


def _console_arguments(console: argparse.ArgumentParser) -> None:
    console.add_argument(
        "--tokens", metavar="FILE", help="who may sign in by a token (as serve --tokens)"
    )
    console.add_argument(
        "--oauth",
        metavar="FILE",
        help="sign in with the identity provider this OAuth file names (its [console] table)",
    )
    console.add_argument(
        "--queue",
        metavar="FILE",
        help="the approval queue (default: $XDG_DATA_HOME/toolwire/approvals.sqlite)",
    )
    console.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    console.add_argument("--port", type=int, default=8765, help="port (8765)")


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    add_app_option(serve)
    serve.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (the default: the client starts this command) or streamable HTTP",
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="HTTP: port (8000)")
    serve.add_argument(
        "--token-env", metavar="VAR", help="HTTP: environment variable with the bearer token"
    )
    serve.add_argument(
        "--tokens",
        metavar="FILE",
        help="HTTP: the tokens clients may send, by SHA-256, each naming a principal "
        "(JSON; policies then decide by who calls)",
    )
    serve.add_argument(
        "--oauth",
        metavar="FILE",
        help="HTTP: accept bearer JWTs from an OAuth authorization server, as its TOML "
        "file says (issuer, this gateway's resource URL, scopes, claims)",
    )
    serve.add_argument(
        "--resources",
        metavar="MODULE:ATTR",
        help="also serve these resources (a list of toolwire_mcp.resource definitions)",
    )
    serve.add_argument(
        "--prompts",
        metavar="MODULE:ATTR",
        help="also serve these prompts (a list of toolwire_mcp.prompt definitions)",
    )
    add_approve_options(serve)
    serve.add_argument(
        "--console",
        action="store_true",
        help="HTTP, with --tokens or --oauth: also serve the approval console at /console",
    )
    serve.add_argument(
        "--task-only",
        action="append",
        default=[],
        metavar="TOOL",
        help="serve this tool only as an MCP task (a client that takes no tasks is refused; "
        "repeat for more)",
    )
    serve.add_argument(
        "--console-queue",
        metavar="FILE",
        help="the console's approval queue (default: $XDG_DATA_HOME/toolwire/approvals.sqlite)",
    )
    serve.add_argument(
        "--no-elicit",
        action="store_true",
        help="never ask the client's user to approve a call (MCP elicitation); deny instead",
    )
    serve.add_argument(
        "--session-idle",
        type=float,
        metavar="SECONDS",
        help="HTTP: close a session that sent nothing for this long (300)",
    )
    serve.add_argument(
        "--max-sessions", type=int, metavar="N", help="HTTP: sessions open at once, in all (1000)"
    )
    serve.add_argument(
        "--sessions-per-client",
        type=int,
        metavar="N",
        help="HTTP: sessions open at once for one principal, or one address when the "
        "request names nobody (64)",
    )


# -- running --------------------------------------------------------------------------------


def _run_mcp(args: argparse.Namespace, context: CommandContext) -> int:
    if args.mcp_command == "trust":
        return _trust(args, context)
    if args.mcp_command == "console":
        return _run_console(args, context)
    return _serve(args, context)


def _run_console(args: argparse.Namespace, context: CommandContext) -> int:
    from toolwire.exceptions import UsageError
    from toolwire_mcp.gateway._console import serve_console

    try:
        serve_console(
            tokens_file=args.tokens,
            oauth_file=args.oauth,
            queue=args.queue,
            host=args.host,
            port=args.port,
        )
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return EXIT_OK


def _serve(args: argparse.Namespace, context: CommandContext) -> int:
    from toolwire.exceptions import UsageError
    from toolwire_mcp.gateway._server import serve_mcp

    host = context.host()
    toolset = context.app_toolset(args.app)
    served: dict[str, Any] = {
        kind: context.imported(spec, f"--{kind}") if spec else ()
        for kind, spec in (("resources", args.resources), ("prompts", args.prompts))
    }
    for kind, value in served.items():
        if not isinstance(value, (list, tuple)):
            raise CliError(
                f"--{kind} names a {type(value).__name__}; expected a list of toolwire_mcp "
                f"{kind[:-1]} definitions",
                EXIT_USAGE,
            )
    context.check(host, toolset)
    sessions = {
        key: value
        for key, value in (
            ("session_idle", args.session_idle),
            ("max_sessions", args.max_sessions),
            ("sessions_per_client", args.sessions_per_client),
        )
        if value is not None
    }
    try:
        serve_mcp(
            toolset,
            transport=args.transport,
            host=args.host,
            port=args.port,
            token_env=args.token_env,
            **({"tokens_file": args.tokens} if args.tokens else {}),
            **({"oauth": args.oauth} if args.oauth else {}),
            approve=args.approve,
            plugins=host,
            elicit=not args.no_elicit,
            **({"approval_wait": args.approval_wait} if args.approval_wait is not None else {}),
            console=args.console,
            console_queue=args.console_queue,
            task_only=args.task_only,
            resources=served["resources"],
            prompts=served["prompts"],
            **sessions,
        )
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return EXIT_OK


def _trust(args: argparse.Namespace, context: CommandContext) -> int:
    """``toolwire mcp trust [PATH] [--remove]``: record (or forget) a project's MCP
    config as trusted, showing the command of every server it will start."""
    from toolwire_mcp._config import ConfigError, trust_file, untrust_file

    try:
        if args.remove:
            removed = untrust_file(args.path)
            context.out("forgotten" if removed else "it was not trusted")
            return EXIT_OK
        specs = trust_file(args.path)
    except ConfigError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    context.out(f"trusted, with {len(specs)} server(s); each starts as:")
    for name, spec in specs.items():
        what = " ".join([spec.command, *spec.args]) if spec.command else spec.url
        context.out(f"  {name}: {what}")
    return EXIT_OK
