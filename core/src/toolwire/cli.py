"""The ``toolwire`` command: plugins, tools, one call, and a chat loop, through the plugin host."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from toolwire._agent import Agent, AgentEvent, AgentFinished, ToolCallDecided, ToolResultReady
from toolwire._calls import ToolCall, rejection_reason
from toolwire._compile import check_tools, format_report
from toolwire._errors import (
    PluginError,
    ProviderError,
    RoundLimitError,
    ToolwireError,
)
from toolwire._execute.approval import Allow, ApprovalGate, ApprovalRequest, Deny
from toolwire._execute.executor import Executor
from toolwire._hooks import HookContext
from toolwire._plugins import PluginHost, get_host
from toolwire._provider import Provider
from toolwire._round import AssistantReply
from toolwire._toolset import Toolset
from toolwire._transcript import Session
from toolwire._turn import Availability, Turn, resolve_turn
from toolwire.providers.test import TestProvider

__all__ = ["main"]

EXIT_OK = 0
EXIT_TOOL = 1
EXIT_USAGE = 2
EXIT_PLUGIN = 3
EXIT_PROVIDER = 4
EXIT_ROUNDS = 5

EPILOG = """\
exit status:
  0  ok
  1  a tool call was rejected, refused or failed
  2  usage error (bad arguments, malformed JSON, unknown tool)
  3  plugin or policy error (a policy failed to load, strict mode)
  4  provider error (unknown provider or schema compiler, failed request)
  5  chat ran out of tool rounds (--max-rounds)

approval:
  `call` and `chat` have no interactive approver: mutating and destructive
  tools run only with --approve (or --yes); without it they are denied.
  Policies decide first: --approve never overrides a policy's rejection.

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

    sp = sub.add_parser("call", help="one tool call through the policies, hooks and executor")
    sp.add_argument("name", help="the tool's wire name")
    sp.add_argument("arguments", metavar="JSON", help="the arguments, as a JSON object")
    sp.add_argument("--json", action="store_true", help="print one JSON event per line")
    _approve_switch(sp)

    sp = sub.add_parser("chat", help="the tool loop with a provider (offline `test` by default)")
    sp.add_argument("prompt")
    sp.add_argument("--provider", metavar="NAME", default="test", help="provider (default: test)")
    sp.add_argument("--model", metavar="M", help="model name")
    sp.add_argument("--max-rounds", type=int, default=8, metavar="N", help="tool rounds (8)")
    sp.add_argument("--json", action="store_true", help="print one JSON event per line")
    _approve_switch(sp)

    sp = sub.add_parser("check", help="schema loss report per tool for a provider")
    sp.add_argument("--provider", metavar="NAME", required=True, help="schema compiler's name")
    sp.add_argument("--verbose", action="store_true", help="also show lossless changes")
    sp.add_argument("--json", action="store_true", help="print JSON")
    return p


def _approve_switch(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--approve",
        "--yes",
        dest="approve",
        action="store_true",
        help="run mutating and destructive tools (denied without it)",
    )


# -- helpers ---------------------------------------------------------------------------


def _host() -> PluginHost:

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
                "plugin_status": host.plugin_status(r),
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
            own = host.plugin_status(r)
            if own:
                _out(sys.stdout, "\n".join(f"{'':<23}{line}" for line in own.splitlines()))
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


# -- the tool loop: the agent, the executor, the host's hooks -----------------------------

Emit = Callable[[dict[str, Any]], None]

_DECISION = {"run": "run", "handled": "complete", "rejected": "reject", "invalid": "reject"}


def _approver(approve: bool, command: str, emit: Emit) -> Callable[[ApprovalRequest], Any]:
    """The CLI's approver for mutating and destructive calls: ``--approve`` or deny.

    There is no interactive prompt: ``--approve`` (``--yes``) approves every
    mutating and destructive call the hooks let through; without it they are
    denied, with a reason the model (and the user) can read.
    """

    def decide(request: ApprovalRequest) -> Allow | Deny:
        event: dict[str, Any] = {"event": "approval", "id": request.call_id}
        if approve:
            emit({**event, "decision": "allow", "reason": "--approve"})
            return Allow()
        reason = (
            f"`{request.tool_name}` is {request.effect.value}, and `toolwire {command}` runs "
            f"mutating and destructive tools only with --approve (or --yes)"
        )
        emit({**event, "decision": "deny", "reason": reason})
        return Deny(reason)

    return decide


class _Events:
    """Turns the agent's events into CLI events, and remembers whether all went well."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.clean = True

    def __call__(self, event: AgentEvent) -> None:
        emit = self.emit
        if isinstance(event, ToolCallDecided):
            call = event.call
            emit({"event": "call", "id": call.id, "name": call.name, "arguments": call.arguments})
            decision: dict[str, Any] = {
                "event": "decision",
                "id": call.id,
                "decision": _DECISION[event.outcome],
                "source": "toolwire" if event.outcome == "invalid" else event.source,
            }
            if event.outcome in ("rejected", "invalid"):
                decision["reason"] = event.reason
                self.clean = False
            emit(decision)
        elif isinstance(event, ToolResultReady):
            r = event.result
            emit({"event": "result", "id": r.call_id, "content": r.content, "is_error": r.is_error})
            self.clean = self.clean and not r.is_error
        elif isinstance(event, AgentFinished) and event.result.status == "finished":
            emit({"event": "answer", "text": event.result.text})


def _indented(label: str, text: str) -> str:
    """``label: text`` on one line, or ``label:`` then the lines of ``text`` indented."""
    text = text.rstrip("\n")
    if "\n" not in text:
        return f"{label}: {text}"
    return f"{label}:\n" + "\n".join(f"    {line}" for line in text.splitlines())


def _printer(as_json: bool) -> Emit:
    explained: set[str] = set()  # calls whose rejection reason was already shown

    def emit(event: dict[str, Any]) -> None:
        if as_json:
            _out(sys.stdout, json.dumps(event))
            return
        kind = event["event"]
        if kind == "call":
            _out(sys.stdout, f"> {event['name']} {event['arguments']}")
        elif kind == "decision":
            if event["decision"] == "reject":
                explained.add(event["id"])
                source = f" by {event['source']}" if event.get("source") else ""
                _out(sys.stdout, f"  decision: rejected{source}: {event.get('reason', '')}")
            elif event["decision"] == "complete":
                _out(sys.stdout, "  decision: answered by a hook (not run)")
            else:
                _out(sys.stdout, "  decision: run")
        elif kind == "approval":
            if event["decision"] == "allow":
                _out(sys.stdout, f"  approval: approved ({event['reason']})")
            else:
                explained.add(event["id"])
                _out(sys.stdout, f"  approval: denied: {event['reason']}")
        elif kind == "result":
            reason = rejection_reason(event["content"])
            if reason is None:
                label = "  error" if event["is_error"] else "  result"
                _out(sys.stdout, _indented(label, event["content"]))
            elif event["id"] not in explained:
                _out(sys.stdout, _indented("  refused", reason))
        elif kind == "answer":
            _out(sys.stdout, f"assistant: {event['text']}")

    return emit


def _agent(
    host: PluginHost,
    provider: Provider,
    toolset: Toolset,
    ctx: HookContext,
    args: argparse.Namespace,
    emit: Emit,
    **options: Any,
) -> Agent:
    # The host's policies and tool packs decide every call; its result hooks see every
    # result (those hooks answered too); a failed policy blocks every call.
    executor = Executor(
        approval=_approver(args.approve, args.command, emit),
        approval_gate=ApprovalGate.MUTATING_AND_ABOVE,
        plugins=host,
    )
    return Agent(provider, toolset, executor=executor, plugins=host, context=ctx, **options)


def _status(host: PluginHost, events: _Events) -> int:
    if events.clean:
        return EXIT_OK
    return EXIT_PLUGIN if host.blocked else EXIT_TOOL


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
    # The call is replayed as the model's reply, so it takes exactly the path a
    # chat's tool call takes (hooks, executor, result hooks) for one round.
    reply = AssistantReply("", (ToolCall("call_cli", args.name, args.arguments),), "tool_calls")
    events = _Events(_printer(args.json))
    agent = _agent(
        host,
        TestProvider(script=[reply]),
        toolset,
        HookContext(app=APP, provider="cli"),
        args,
        events.emit,
        turn=Turn(availability=Availability.only(args.name)),
        max_rounds=1,
        stop_when=lambda results: True,
        enforce_requirement=False,
    )
    try:
        asyncio.run(agent.arun(Session(), on_event=events))
    finally:
        agent.executor.close()
    return _status(host, events)


# -- chat ------------------------------------------------------------------------------


def _cmd_chat(args: argparse.Namespace) -> int:
    if args.max_rounds < 1:
        raise CliError(f"--max-rounds must be at least 1, got {args.max_rounds}", EXIT_USAGE)
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    provider = _provider(host, args.provider, args.model)
    _warn_blocked(host)
    session = Session()
    ctx = HookContext(app=APP, session_id=session.id, provider=provider.name, model=provider.model)
    events = _Events(_printer(args.json))
    agent = _agent(host, provider, toolset, ctx, args, events.emit, max_rounds=args.max_rounds)
    try:
        asyncio.run(agent.arun(session, args.prompt, on_event=events))
    except RoundLimitError:
        raise CliError(
            f"the model did not finish within {args.max_rounds} tool round(s): it asked for "
            f"tools again (not run); raise --max-rounds",
            EXIT_ROUNDS,
        ) from None
    finally:
        agent.executor.close()
        provider.close()
    return _status(host, events)


# -- check -----------------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    compilers = host.schema_compilers()  # each provider registers its own compiler
    compiler = compilers.get(args.provider)
    if compiler is None:
        known = ", ".join(sorted(compilers)) or "none installed"
        raise CliError(f"no schema compiler for `{args.provider}` (known: {known})", EXIT_PROVIDER)
    reports = check_tools(toolset.tools(), compiler)
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
        return EXIT_ROUNDS, str(exc)
    if isinstance(exc, ToolwireError):
        return EXIT_TOOL, f"{type(exc).__name__}: {exc}"
    return EXIT_TOOL, f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"
