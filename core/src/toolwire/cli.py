"""The ``toolwire`` command: plugins, tools, one call, and a chat loop, through the plugin host."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from toolwire._errors import (
    PluginError,
    ProviderError,
    RoundLimitError,
    ToolwireError,
)
from toolwire._hooks import HookContext, ToolRoundPlan
from toolwire._provider import Provider, arun_turn
from toolwire._round import AssistantReply, Finished, NeedsTools, decode_reply, rejection_reason
from toolwire._tools import ToolCall, ToolResult
from toolwire._toolset import Toolset
from toolwire._transcript import Session
from toolwire._turn import Availability, resolve_turn

if TYPE_CHECKING:
    from toolwire._plugins import PluginHost

__all__ = ["main"]

EXIT_OK = 0
EXIT_TOOL = 1
EXIT_USAGE = 2
EXIT_PLUGIN = 3
EXIT_PROVIDER = 4

EPILOG = """\
exit status:
  0  ok
  1  a tool call was rejected or failed (or chat ran out of rounds)
  2  usage error (bad arguments, malformed JSON, unknown tool)
  3  plugin or policy error (a policy failed to load, strict mode)
  4  provider error (unknown provider or schema compiler, failed request)

environment:
  TOOLWIRE_PLUGINS           allow-list of plugin names (comma separated)
  TOOLWIRE_DISABLE_PLUGINS   deny-list of plugin names
  TOOLWIRE_AUTOLOAD_PLUGINS  0: load no installed plugin
  TOOLWIRE_STRICT_PLUGINS    1: a plugin that fails to load is an error
  TOOLWIRE_HOOK_TIMEOUT      seconds a hook may take (default 5)
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
    p = _Parser(
        prog="toolwire",
        description="Inspect and exercise toolwire plugins, tools and providers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="the application's Toolset to assemble the plugins' tools into",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    sp = sub.add_parser("plugins", help="discovered plugins, versions and failures")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = sub.add_parser("tools", help="the assembled toolset")
    sp.add_argument("--provider", metavar="NAME", help="print the provider's wire form")
    sp.add_argument("--model", metavar="M", help="model for --provider")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = sub.add_parser("call", help="one tool call through the policies and hooks")
    sp.add_argument("name", help="the tool's wire name")
    sp.add_argument("arguments", metavar="JSON", help="the arguments, as a JSON object")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = sub.add_parser("chat", help="the tool loop with a provider (offline `test` by default)")
    sp.add_argument("prompt")
    sp.add_argument("--provider", metavar="NAME", default="test", help="provider (default: test)")
    sp.add_argument("--model", metavar="M", help="model name")
    sp.add_argument("--max-rounds", type=int, default=8, metavar="N", help="tool rounds (8)")
    sp.add_argument("--json", action="store_true", help="print one JSON event per line")

    sp = sub.add_parser("check", help="schema loss report per tool for a provider")
    sp.add_argument("--provider", metavar="NAME", required=True, help="schema compiler's name")
    sp.add_argument("--verbose", action="store_true", help="also show lossless changes")
    sp.add_argument("--json", action="store_true", help="print JSON")
    return p


# -- helpers ---------------------------------------------------------------------------


def _host() -> PluginHost:
    from toolwire._plugins import get_host

    return get_host()


def _app_toolset(spec: str | None) -> Toolset | None:
    if not spec:
        return None
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--app takes MODULE:ATTR (like `myapp.tools:toolset`), got {spec!r}", 2)
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--app {spec}: {exc}", EXIT_USAGE) from exc
    if not isinstance(obj, Toolset):
        raise CliError(f"--app {spec} is a {type(obj).__name__}, not a toolwire.Toolset", 2)
    return obj


def _provider(host: PluginHost, name: str, model: str | None) -> Provider:
    if name not in host.providers():
        known = ", ".join(host.providers()) or "none"
        raise CliError(f"unknown provider `{name}` (known: {known})", EXIT_PROVIDER)
    return host.provider(name, **({"model": model} if model else {}))


def _out(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def _warn_blocked(host: PluginHost) -> None:
    for reason in host.blocked:
        _out(sys.stderr, f"toolwire: warning: {reason}")


# -- plugins ---------------------------------------------------------------------------


def _cmd_plugins(args: argparse.Namespace) -> int:
    host = _host()
    host.assemble(_app_toolset(args.app))  # imports the tool packs
    host.providers()  # imports the providers
    records = host.plugins
    if args.json:
        data = [
            {
                "kind": r.kind,
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "value": r.value,
                "status": r.status,
                "reason": r.reason,
            }
            for r in records
        ]
        _out(sys.stdout, json.dumps({"plugins": data, "blocked": list(host.blocked)}, indent=2))
        return EXIT_OK
    for kind, title in (
        ("policy", "policies"),
        ("toolset", "tool packs"),
        ("provider", "providers"),
    ):
        rows = [r for r in records if r.kind == kind]
        _out(sys.stdout, f"{title}:")
        if not rows:
            _out(sys.stdout, "  (none)")
        for r in rows:
            dist = f"{r.distribution} {r.version}".strip() or "(registered directly)"
            _out(sys.stdout, f"  {r.name:<20} {dist:<28} {r.status}")
    for status, title in (("failed", "failures"), ("disabled", "disabled")):
        rows = [r for r in records if r.status == status]
        if rows:
            _out(sys.stdout, f"{title}:")
        for r in rows:
            _out(sys.stdout, f"  {r.kind} {r.label()}: {r.reason}")
    for reason in host.blocked:
        _out(sys.stdout, f"BLOCKED: {reason}")
    return EXIT_OK


# -- tools -----------------------------------------------------------------------------


def _cmd_tools(args: argparse.Namespace) -> int:
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    if args.provider:
        provider = _provider(host, args.provider, args.model)
        turn = resolve_turn(
            toolset,
            availability=Availability.all(),
            hooks=host.hook_sets(),
            context=HookContext(app=APP, provider=provider.name, model=provider.model),
        )
        _out(sys.stdout, json.dumps(provider.render_tools(turn), indent=2))
        return EXIT_OK
    rows = [
        {
            "name": t.name,
            "effect": t.metadata.effect.value,
            "source": toolset.source(t.name),
            "off": toolset.is_off(t.name),
            "description": t.description,
        }
        for t in toolset.tools()
    ]
    if args.json:
        _out(sys.stdout, json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        _out(sys.stdout, "(no tools: install a tool pack, or pass --app MODULE:ATTR)")
    for r in rows:
        off = "off" if r["off"] else "on"
        _out(sys.stdout, f"{r['name']:<28} {r['effect']:<12} {off:<4} {r['source']}")
    return EXIT_OK


# -- one round: hooks, run, result hooks, commit -----------------------------------------

Emit = Callable[[dict[str, Any]], None]


async def _run_round(host: PluginHost, plan: ToolRoundPlan, ctx: HookContext, emit: Emit) -> bool:
    """Run what the hooks allowed, report each call in the assistant's order, commit.

    Returns True when every call ran (or was answered by a hook) without error.
    """
    results: dict[str, ToolResult] = {}
    ok = True
    for issue in plan.issues:
        results[issue.call.id] = issue.rejection()
    for rejected in plan.rejected:
        results[rejected.call.id] = rejected.result
    for handled in plan.handled:
        results[handled.call.id] = await host.atool_result(handled.call, handled.result, ctx)
    for call in plan.pending:
        try:
            output = await call.arun()
            result = call.complete(output)
        except Exception as exc:
            result = call.error(f"{type(exc).__name__}: {exc}")
        results[call.id] = await host.atool_result(call, result, ctx)

    decisions: dict[str, dict[str, Any]] = {}
    for issue in plan.issues:
        decisions[issue.call.id] = {"decision": "reject", "source": "toolwire"}
    for rejected in plan.rejected:
        decisions[rejected.call.id] = {"decision": "reject", "source": rejected.source}
    for handled in plan.handled:
        decisions[handled.call.id] = {"decision": "complete", "source": "hook"}
    for call in plan.pending:
        decisions[call.id] = {"decision": "run", "source": ""}

    for tc in plan.round.tool_calls:
        result = results[tc.id]
        emit({"event": "call", "id": tc.id, "name": tc.name, "arguments": tc.arguments})
        decision = {"event": "decision", "id": tc.id, **decisions[tc.id]}
        reason = rejection_reason(result) if decision["decision"] == "reject" else None
        if reason is not None:
            decision["reason"] = reason
        emit(decision)
        emit(
            {"event": "result", "id": tc.id, "content": result.content, "is_error": result.is_error}
        )
        ok = ok and decision["decision"] != "reject" and not result.is_error
    plan.round.commit(list(results.values()))
    return ok


def _printer(as_json: bool) -> Emit:
    def emit(event: dict[str, Any]) -> None:
        if as_json:
            _out(sys.stdout, json.dumps(event))
            return
        kind = event["event"]
        if kind == "call":
            _out(sys.stdout, f"> {event['name']} {event['arguments']}")
        elif kind == "decision":
            if event["decision"] == "reject":
                source = f" by {event['source']}" if event.get("source") else ""
                _out(sys.stdout, f"  decision: rejected{source}: {event.get('reason', '')}")
            elif event["decision"] == "complete":
                _out(sys.stdout, "  decision: answered by a hook (not run)")
            else:
                _out(sys.stdout, "  decision: run")
        elif kind == "result":
            if rejection_reason(event["content"]) is None:
                label = "error" if event["is_error"] else "result"
                _out(sys.stdout, f"  {label}: {event['content']}")
        elif kind == "answer":
            _out(sys.stdout, f"assistant: {event['text']}")

    return emit


# -- call ------------------------------------------------------------------------------


def _cmd_call(args: argparse.Namespace) -> int:
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    if args.name not in toolset:
        known = ", ".join(t.name for t in toolset.tools()) or "none"
        raise CliError(f"unknown tool `{args.name}` (known: {known})", EXIT_USAGE)
    try:
        json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise CliError(f"JSON for `{args.name}` is not valid JSON: {exc}", EXIT_USAGE) from exc
    _warn_blocked(host)
    ctx = HookContext(app=APP, provider="cli")
    turn = resolve_turn(
        toolset, availability=Availability.only(args.name), hooks=host.hook_sets(), context=ctx
    )
    reply = AssistantReply("", (ToolCall("call_cli", args.name, args.arguments),), "tool_calls")
    outcome = decode_reply(Session(), turn, reply, enforce_requirement=False)
    assert isinstance(outcome, NeedsTools)
    emit = _printer(args.json)

    async def go() -> bool:
        plan = await outcome.round.aapply_hooks(context=ctx)
        return await _run_round(host, plan, ctx, emit)

    if asyncio.run(go()):
        return EXIT_OK
    return EXIT_PLUGIN if host.blocked else EXIT_TOOL


# -- chat ------------------------------------------------------------------------------


async def _tool_loop(
    host: PluginHost,
    provider: Provider,
    toolset: Toolset,
    prompt: str,
    *,
    max_rounds: int,
    emit: Emit,
) -> bool:
    """Ask, run the tools the hooks allow, repeat until the model answers.

    Returns True when every tool call ran without rejection or error.
    """
    # TODO(agent): swap this loop for toolwire._agent.run_agent once it lands.
    session = Session()
    session.add_user(prompt)
    ctx = HookContext(app=APP, session_id=session.id, provider=provider.name, model=provider.model)
    clean = True
    for _ in range(max_rounds):
        turn = resolve_turn(toolset, hooks=host.hook_sets(), context=ctx)
        outcome = await arun_turn(provider, session, turn)
        if isinstance(outcome, Finished):
            emit({"event": "answer", "text": outcome.text})
            return clean
        plan = await outcome.round.aapply_hooks(context=ctx)
        clean = await _run_round(host, plan, ctx, emit) and clean
    raise RoundLimitError(
        f"the model did not finish within {max_rounds} tool rounds (raise --max-rounds)"
    )


def _cmd_chat(args: argparse.Namespace) -> int:
    if args.max_rounds < 1:
        raise CliError(f"--max-rounds must be at least 1, got {args.max_rounds}", EXIT_USAGE)
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    provider = _provider(host, args.provider, args.model)
    _warn_blocked(host)
    try:
        clean = asyncio.run(
            _tool_loop(
                host,
                provider,
                toolset,
                args.prompt,
                max_rounds=args.max_rounds,
                emit=_printer(args.json),
            )
        )
    finally:
        provider.close()
    if clean:
        return EXIT_OK
    return EXIT_PLUGIN if host.blocked else EXIT_TOOL


# -- check -----------------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    from toolwire._compile import check_tools, format_report, schema_compilers

    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    if args.provider not in schema_compilers():
        host.providers()  # provider plugins may register their own compilers when imported
    if args.provider not in schema_compilers():
        known = ", ".join(sorted(schema_compilers()))
        raise CliError(f"no schema compiler for `{args.provider}` (known: {known})", EXIT_PROVIDER)
    reports = check_tools(toolset.tools(), args.provider)
    if args.json:
        data = [
            {
                "tool": r.tool,
                "provider": r.provider,
                "target": r.target,
                "strict": r.strict,
                "lossless": r.lossless,
                "changes": [
                    {"path": c.path, "kind": c.kind, "severity": c.severity, "message": c.message}
                    for c in r.changes
                ],
            }
            for r in reports
        ]
        _out(sys.stdout, json.dumps(data, indent=2))
    else:
        _out(sys.stdout, format_report(reports, verbose=args.verbose))
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plugins": _cmd_plugins,
    "tools": _cmd_tools,
    "call": _cmd_call,
    "chat": _cmd_chat,
    "check": _cmd_check,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (see ``toolwire --help``)."""
    args = _parser().parse_args(argv)
    _log_to_stderr()
    try:
        return _COMMANDS[args.command](args)
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
        return EXIT_TOOL, str(exc)
    if isinstance(exc, ToolwireError):
        return EXIT_TOOL, f"{type(exc).__name__}: {exc}"
    return EXIT_TOOL, f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"
