"""The commands: ``plugins``, ``tools``, ``call``, ``chat`` and ``check``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from toolwire._agent import Agent
from toolwire._calls import ToolCall
from toolwire._compile import CompileOptions, check_tools
from toolwire._display import terminal_text
from toolwire._errors import (
    ProviderError,
    ToolwireError,
    UsageError,
)
from toolwire._execute.approval import Allow, ApprovalGate, ApprovalRequest, Deny
from toolwire._execute.executor import Executor
from toolwire._hooks import HookContext
from toolwire._plugins import PluginHost, get_host
from toolwire._provider import Provider
from toolwire._round import AssistantReply
from toolwire._schema.reports import format_report
from toolwire._toolset import Toolset
from toolwire._transcript import Session
from toolwire._turn import Availability, Turn, resolve_turn
from toolwire.cli.ask import install_terminal_handler
from toolwire.cli.parser import (
    APP,
    EXIT_OK,
    EXIT_PLUGIN,
    EXIT_PROVIDER,
    EXIT_SCHEMA,
    EXIT_TOOL,
    EXIT_USAGE,
    CliError,
)
from toolwire.cli.render import (
    Emit,
    _Events,
    _out,
    _printer,
    json_document,
    safe_fields,
    style_for,
)
from toolwire.providers.test import TestProvider


def _host() -> PluginHost:

    return get_host()


def _imported(spec: str, option: str) -> Any:
    """The object ``MODULE:ATTR`` names, for ``option``."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(
            f"{option} takes MODULE:ATTR (like `myapp.tools:toolset`), got {spec!r}", EXIT_USAGE
        )
    # As `python -m toolwire` does: the current directory is importable, so `--app
    # app:tools` finds ./app.py from the `toolwire` script too.
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"{option} {spec}: {exc}", EXIT_USAGE) from exc


def _app_toolset(spec: str | None) -> Toolset | None:
    if not spec:
        return None
    obj = _imported(spec, "--app")
    if not isinstance(obj, Toolset):
        raise CliError(f"--app {spec} is a {type(obj).__name__}, not a toolwire.Toolset", 2)
    return obj


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


#: Stand-ins so ``tools --provider X`` renders without a server: rendering sends nothing.
_RENDER_MODEL = "model"
_RENDER_URL = "http://127.0.0.1/v1"


def _provider(
    host: PluginHost,
    name: str,
    model: str | None,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    key: str | None = None,
    render_only: bool = False,
) -> Provider:
    """The provider registered as ``name``: an unknown name or options it cannot take are
    a provider error (exit 4), with "did you mean" for a mistyped name. Its key: the
    stored key ``key`` names (``toolwire keys``), else ``api_key_env``'s variable, else
    the key stored under the provider's name, else the provider's own variable."""
    known = sorted(host.providers())
    if name not in known:
        from toolwire._plugins.registries import OFFICIAL_NAMES

        official = OFFICIAL_NAMES.get(name)
        install = f"; it comes with {official}: pip install {official}" if official else ""
        raise CliError(
            f"unknown provider `{name}` (known: {', '.join(known) or 'none'})"
            + (install or _did_you_mean(name, known)),
            EXIT_PROVIDER,
        )
    options: dict[str, Any] = {}
    if model:
        options["model"] = model
    if base_url:
        options["base_url"] = base_url
    if key:
        options["api_key"] = _stored_key(key, required=True)
    elif api_key_env:
        value = os.environ.get(api_key_env)
        if not value and not render_only:
            raise CliError(f"--api-key-env {api_key_env}: that variable is not set", EXIT_PROVIDER)
        if value:
            options["api_key"] = value
    elif not render_only:
        found = _stored_key(name, required=False)
        if found:
            options["api_key"] = found
    try:
        return host.provider(name, **options)
    except (TypeError, ValueError, ToolwireError) as exc:
        if render_only and not isinstance(exc, ProviderError):
            # Rendering needs no server, key or real model name (an OpenAI-compatible
            # server's has no default): fill in stand-ins and try once more.
            stand_ins = {"model": model or _RENDER_MODEL, "base_url": base_url or _RENDER_URL}
            try:
                return host.provider(name, **{**options, **stand_ins})
            except (TypeError, ValueError, ToolwireError):
                pass
        raise CliError(f"provider `{name}` cannot be created: {exc}", EXIT_PROVIDER) from exc


def _stored_key(name: str, *, required: bool) -> str | None:
    """The key stored as ``name``; a key file that cannot be used is an error only when
    a key was asked for by name (else it is not used, and a warning says why)."""
    from toolwire.cli.stored import read_keys

    try:
        keys = read_keys()
    except UsageError as exc:
        if required:
            raise CliError(str(exc), EXIT_USAGE) from None
        _out(sys.stderr, f"toolwire: warning: {exc}")
        return None
    if required and name not in keys:
        raise CliError(
            f"--key {name}: no key of that name is stored (`toolwire keys set {name}`)"
            + _did_you_mean(name, list(keys)),
            EXIT_USAGE,
        )
    return keys.get(name)


def _warn_blocked(host: PluginHost, toolset: Toolset | None = None) -> None:
    """Before calls run: which policies decide them, a warning when no policy checks
    anything (installed, none configured), a warning per rule that names nothing in
    ``toolset`` (the assembled catalogue), and why calls are blocked."""
    loaded = [r for r in host.plugins if r.kind == "policy" and r.status == "loaded"]
    # "Tool calls are not checked" is true only when no policy checks them: an inert policy
    # beside an active one is said as a status line (after the active ones), not a warning.
    active = [r for r in loaded if not host.is_inert(r)]
    inert = [r for r in loaded if host.is_inert(r)]
    if inert and not active:
        # One warning, however many policy distributions are installed and unconfigured,
        # and once: not on every command after it (`toolwire plugins` always says it).
        each = "; ".join(
            f"policy {r.label()} checks nothing: {host.plugin_status(r) or 'inert'}" for r in inert
        )
        if _first_time(f"inert: {each}"):
            _out(
                sys.stderr,
                f"toolwire: warning: {each}; tool calls are not checked "
                "(said once; `toolwire plugins` shows it)",
            )
    for record in [*active, *(inert if active else [])]:
        state = host.plugin_status(record)
        if state:
            _out(sys.stderr, f"toolwire: policy `{record.name}`: {state}")
    if toolset is not None:
        tools = toolset.tools()
        for record in active:
            for line in host.plugin_lint(record, tools):
                # A finding names the catalogue's tools (an MCP server's, untrusted): escaped.
                said = terminal_text(f"policy `{record.name}`: {line}", multiline=False)
                _out(sys.stderr, f"toolwire: warning: {said}")
    for reason in host.blocked:
        _out(sys.stderr, f"toolwire: warning: {reason}")


def _first_time(notice: str) -> bool:
    """Whether ``notice`` was not said before on this machine (its digest kept in the
    user's data directory). A notice that cannot be remembered is said every time."""
    import hashlib

    from toolwire._files import write_private
    from toolwire.cli.config import default_logs_path

    path = default_logs_path().with_name("said")
    digest = hashlib.sha256(notice.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    try:
        said = path.read_text(encoding="utf-8").split() if path.is_file() else []
    except (OSError, UnicodeDecodeError):
        said = []
    if digest in said:
        return False
    with contextlib.suppress(OSError):  # not remembered: said again next time
        write_private(path, "\n".join([*said[-255:], digest]) + "\n")
    return True


# -- plugins ---------------------------------------------------------------------------


def _cmd_plugins(args: argparse.Namespace) -> int:
    host = _host()
    tools = host.assemble(_app_toolset(args.app)).tools()  # imports the tool packs
    host.providers()  # imports the providers
    host.backends()  # imports the executor backends
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
                "lint": list(host.plugin_lint(r, tools)),
                "registers": list(host.registered_by(r.name)),
            }
            for r in records
        ]
        _out(sys.stdout, json_document("plugins", plugins=data, blocked=list(host.blocked)))
        return EXIT_PLUGIN if host.blocked else EXIT_OK
    for kind, title in (
        ("policy", "policies"),
        ("toolset", "tool packs"),
        ("provider", "providers"),
        ("backend", "executor backends"),
    ):
        rows = [r for r in records if r.kind == kind]
        _out(sys.stdout, f"{title}:")
        if not rows:
            _out(sys.stdout, "  (none)")
        for r in rows:
            dist = f"{r.distribution} {r.version}".strip() or "(registered directly)"
            _out(sys.stdout, f"  {r.name:<20} {dist:<28} {r.status}")
            names = host.registered_by(r.name)
            if names and names != (r.name,):
                _out(sys.stdout, f"{'':<23}registers: {', '.join(names)}")
            own = terminal_text(host.plugin_status(r) or "")
            if own:
                _out(sys.stdout, "\n".join(f"{'':<23}{line}" for line in own.splitlines()))
            for line in host.plugin_lint(r, tools):
                _out(sys.stdout, terminal_text(f"{'':<23}warning: {line}", multiline=False))
    for status, title in (("failed", "failures"), ("disabled", "disabled")):
        rows = [r for r in records if r.status == status]
        if rows:
            _out(sys.stdout, f"{title}:")
        for r in rows:
            _out(sys.stdout, terminal_text(f"  {r.kind} {r.label()}: {r.reason}"))
    for reason in host.blocked:
        _out(sys.stdout, terminal_text(f"BLOCKED: {reason}"))
    return EXIT_PLUGIN if host.blocked else EXIT_OK


# -- tools -----------------------------------------------------------------------------


def _cmd_tools(args: argparse.Namespace) -> int:
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    if args.provider:
        return _wire_tools(host, toolset, args)
    # Every tool, with what the installed plugins' availability hooks hide (and which).
    turn = resolve_turn(
        toolset,
        availability=Availability.all(),
        hooks=host.hook_sets(),
        context=HookContext(app=APP),
    )
    rows = [
        {
            "name": t.name,
            "effect": t.metadata.effect.value,
            "source": toolset.source(t.name),
            "off": toolset.is_off(t.name),
            "hidden_by": turn.hidden.get(t.name),
            "hidden_why": turn.hidden_why.get(t.name),
            "description": t.description,
        }
        for t in toolset.tools()
    ]
    if args.json:
        _out(sys.stdout, json_document("tools", tools=rows))
        return EXIT_OK
    if not rows:
        _out(sys.stdout, "(no tools: install a tool pack, or pass --app MODULE:ATTR)")
    for r in (
        safe_fields(r, {"name", "effect", "source", "hidden_by", "hidden_why"}) for r in rows
    ):
        state = "off" if r["off"] else "on"
        if r["hidden_by"]:
            why = f": {r['hidden_why']}" if r["hidden_why"] else ""
            state = f"hidden (by {r['hidden_by']}{why})"
        _out(sys.stdout, f"{r['name']:<28} {r['effect']:<12} {r['source']:<24} {state}")
    return EXIT_OK


def _wire_tools(host: PluginHost, toolset: Toolset, args: argparse.Namespace) -> int:
    provider = _provider(
        host,
        args.provider,
        args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        render_only=True,
    )
    try:
        # What a turn sends: the tools that are on (as chat offers them), not the off ones.
        turn = resolve_turn(
            toolset,
            availability=Availability.default(),
            hooks=host.hook_sets(),
            context=HookContext(app=APP, provider=provider.name, model=provider.model),
        )
        wire = provider.render_tools(turn)
    finally:
        provider.close()
    if args.json:
        _out(
            sys.stdout,
            json_document("wire-tools", provider=provider.name, model=provider.model, tools=wire),
        )
        return EXIT_OK
    size = len(json.dumps(wire, separators=(",", ":")))
    _out(
        sys.stdout,
        f"{len(turn.tools)} tool(s) as {provider.name} sends them, {size} bytes "
        f"(--json for the bodies):",
    )
    for rt in turn.tools:
        shown = terminal_text(f"{rt.name}({_parameters(rt.tool.input_schema)})", multiline=False)
        _out(sys.stdout, f"  {shown}")
    for name, hook in turn.hidden.items():
        why = turn.hidden_why.get(name)
        said = f"  {name}: not sent (hidden by {hook}{': ' + why if why else ''})"
        _out(sys.stdout, terminal_text(said, multiline=False))
    sent = {rt.name for rt in turn.tools}
    for t in toolset.tools():
        if toolset.is_off(t.name) and t.name not in sent and t.name not in turn.hidden:
            _out(sys.stdout, f"  {t.name}: not sent (off; a turn that names it offers it)")
    return EXIT_OK


def _parameters(schema: Any) -> str:
    """``a, b?`` from an object schema: the properties, optional ones marked ``?``."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ""
    required = set(schema.get("required", ()))
    return ", ".join(k if k in required else f"{k}?" for k in props)


# -- the tool loop: the agent, the executor, the host's hooks -----------------------------


def _approver(approve: bool, command: str, emit: Emit) -> Callable[[ApprovalRequest], Any]:
    """The CLI's approver for mutating and destructive calls: ``--approve`` or deny.

    There is no interactive prompt: ``--approve`` (``--yes``) approves every
    mutating and destructive call the hooks let through; without it they are
    denied, with a reason the model (and the user) can read.
    """

    def decide(request: ApprovalRequest) -> Allow | Deny:
        event: dict[str, Any] = {"event": "approval", "id": request.call_id, "source": "cli"}
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


#: How long a call waits for the people a policy names when --approval-wait says nothing:
#: as long as its request lives (a policy's requests live at most 30 days).
WAIT_AS_LONG_AS_IT_LIVES = 30 * 86400.0


def approval_waiting(args: argparse.Namespace, emit: Emit) -> dict[str, Any]:
    """The executor's options for waiting on the approval queue, from --approval-wait."""
    from toolwire.cli.render import approval_wait_reporter

    wait = getattr(args, "approval_wait", None)
    return {
        "approval_wait": WAIT_AS_LONG_AS_IT_LIVES if wait is None else wait,
        "on_approval_wait": approval_wait_reporter(emit),
    }


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
        backend=getattr(args, "backend", None),
        **approval_waiting(args, emit),
    )
    return Agent(provider, toolset, executor=executor, plugins=host, context=ctx, **options)


def principal_of(args: argparse.Namespace) -> Any:
    """The principal ``--as`` (and ``--group``) name, or None; method ``cli``."""
    subject = getattr(args, "as_subject", None)
    groups = getattr(args, "as_groups", None) or []
    if subject is None:
        if groups:
            raise CliError("--group needs --as (whose group it is)", EXIT_USAGE)
        return None
    from toolwire._hooks import Principal

    try:
        return Principal(subject, groups=groups, client=APP, method="cli")
    except UsageError as exc:
        raise CliError(f"--as: {exc}", EXIT_USAGE) from None


def _color(args: argparse.Namespace) -> str:
    """``--color``, else the user's toolwire.toml's ``color``."""
    if args.color:
        return str(args.color)
    from toolwire.cli.config import cli_config

    try:
        return str(cli_config()["color"])
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _status(host: PluginHost, events: Any) -> int:
    """0 when every call went through (``events.clean``), else why not."""
    if events.clean:
        return EXIT_OK
    return EXIT_PLUGIN if host.blocked else EXIT_TOOL


# -- call ------------------------------------------------------------------------------


def _cmd_call(args: argparse.Namespace) -> int:
    install_terminal_handler()  # an MCP server's question is asked here, when interactive
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    if args.name not in toolset:
        names = [t.name for t in toolset.tools()]
        raise CliError(
            f"unknown tool `{args.name}` (known: {', '.join(names) or 'none'})"
            + _did_you_mean(args.name, names),
            EXIT_USAGE,
        )
    try:
        json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise CliError(f"JSON for `{args.name}` is not valid JSON: {exc}", EXIT_USAGE) from exc
    except RecursionError:
        raise CliError(
            f"JSON for `{args.name}` nests arrays or objects too deeply to read", EXIT_USAGE
        ) from None
    _warn_blocked(host, toolset)
    # The call is replayed as the model's reply, so it takes exactly the path a
    # chat's tool call takes (hooks, executor, result hooks) for one round.
    reply = AssistantReply("", (ToolCall("call_cli", args.name, args.arguments),), "tool_calls")
    style = style_for(_color(args), sys.stdout, args.verbose)
    events = _Events(_printer(args.json, style=style), save_media=args.save_media)
    agent = _agent(
        host,
        TestProvider(script=[reply]),
        toolset,
        HookContext(app=APP, provider="cli", principal=principal_of(args)),
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


# -- check -----------------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    compilers = host.schema_compilers()  # each provider registers its own compiler
    compiler = compilers.get(args.provider)
    if compiler is None:
        known = ", ".join(sorted(compilers)) or "none installed"
        raise CliError(
            f"no schema compiler for `{args.provider}` (known: {known})"
            + _did_you_mean(args.provider, sorted(compilers)),
            EXIT_PROVIDER,
        )
    options = CompileOptions(target=args.target)
    try:
        reports = check_tools(toolset.tools(), compiler, options=options)
    except UsageError as exc:  # the compiler does not know that target
        raise CliError(str(exc), EXIT_USAGE) from exc
    if args.output_type and not args.model:
        raise CliError("--output-type needs --model (the answer is compiled for it)", EXIT_USAGE)
    profile, output = (None, None)
    if args.model:
        profile, output = _model_check(host, args)
        if output is not None:
            reports = [*reports, output]
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
        fields: dict[str, Any] = {"reports": data}
        if args.model:
            fields["model"] = args.model
            fields["profile"] = _profile_data(profile) if profile is not None else None
        _out(sys.stdout, json_document("check", **fields))
    else:
        if args.model:
            _out(sys.stdout, _profile_text(args.model, profile))
        _out(sys.stdout, format_report(reports, verbose=args.verbose))
    worst = {"error"} if args.fail_on == "error" else {"error", "warning"}
    if any(c.severity in worst for r in reports for c in r.changes):
        return EXIT_SCHEMA
    return EXIT_OK


def _model_check(host: PluginHost, args: argparse.Namespace) -> tuple[Any, Any]:
    """The model's profile (None when the provider applies none) and, with
    ``--output-type``, the answer's compile report as the provider sends it for that model."""
    provider = _provider(host, args.provider, args.model, render_only=True)
    try:
        lookup = getattr(provider, "profile", None)
        profile = lookup() if callable(lookup) else None
        output = None
        if args.output_type:
            from toolwire._turn import resolve_turn

            answer = _imported(args.output_type, "--output-type")
            turn = resolve_turn(Toolset("check", []), output_type=answer)
            compile_answer = getattr(provider, "output_compiled", None)
            if not callable(compile_answer):
                raise CliError(f"provider `{args.provider}` takes no output type", EXIT_USAGE)
            try:
                compiled = compile_answer(turn)
            except UsageError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
            output = attrs.evolve(compiled.report, tool=f"answer ({args.output_type})")
        return profile, output
    finally:
        provider.close()


def _profile_data(profile: Any) -> dict[str, Any]:
    data = attrs.asdict(profile)
    data["match"] = list(profile.match)
    data["reasoning_efforts"] = list(profile.reasoning_efforts)
    return data


def _refuses(profile: Any) -> list[str]:
    names = [
        n
        for n in ("temperature", "top_p", "stop", "seed", "parallel_tool_calls")
        if not getattr(profile, n)
    ]
    if profile.temperature and profile.top_p and not profile.temperature_with_top_p:
        names.append("temperature with top_p")
    return names


def _profile_text(model: str, profile: Any) -> str:
    if profile is None:
        return f"model `{model}`: this provider applies no model profile (the server decides)\n"
    refused = ", ".join(_refuses(profile)) or "nothing"
    efforts = ", ".join(profile.reasoning_efforts) or "none"
    native = f"yes ({profile.output_dialect})" if profile.native_output else "no (the output tool)"
    lines = [
        f"model `{model}`: {profile.provider} profile `{profile.family}`",
        f"  refuses: {refused}",
        f"  reasoning_effort: {efforts}",
        f"  extended thinking: {'yes' if profile.thinking else 'no'}",
        f"  native structured output: {native}",
    ]
    if profile.source:
        lines.append(f"  source: {profile.source}")
    return "\n".join(lines) + "\n"


def _cmd_models(args: argparse.Namespace) -> int:
    from toolwire import profiles

    listed = profiles.profiles(args.provider)
    if args.provider and not listed:
        known = sorted({p.provider for p in profiles.profiles()})
        raise CliError(
            f"no model profiles for `{args.provider}` (known: {', '.join(known)})"
            + _did_you_mean(args.provider, known),
            EXIT_PROVIDER,
        )
    if args.json:
        _out(sys.stdout, json_document("models", profiles=[_profile_data(p) for p in listed]))
        return EXIT_OK
    for p in listed:
        efforts = ", ".join(p.reasoning_efforts) or "-"
        refused = ", ".join(_refuses(p)) or "-"
        native = "answers: native" if p.native_output else "answers: the output tool"
        _out(sys.stdout, f"{p.provider:<10} {p.family}  ({', '.join(p.match)})")
        _out(sys.stdout, f"           refuses: {refused}; reasoning_effort: {efforts}; {native}")
    return EXIT_OK


def _read_key_given() -> str:
    """The key to store: asked for on a terminal (not echoed), else stdin's first line."""
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("key (not shown): ")
    from toolwire.cli.stored import MAX_KEY_CHARS

    return sys.stdin.readline(MAX_KEY_CHARS + 2)


@contextlib.contextmanager
def _stored_file(what: str) -> Iterator[None]:
    """A stored-file command's failures as the command line says them (exit 2)."""
    try:
        yield
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    except OSError as exc:
        raise CliError(f"the {what} file: {exc}", EXIT_USAGE) from None


def _cmd_keys(args: argparse.Namespace) -> int:
    from toolwire.cli import stored

    with _stored_file("keys"):
        if args.keys_command == "path":
            _out(sys.stdout, str(stored.keys_file()))
            return EXIT_OK
        keys = stored.read_keys()
        if args.keys_command == "list":
            names = sorted(keys)
            if args.json:
                _out(sys.stdout, json_document("keys", keys=names))
            for name in [] if args.json else names:
                _out(sys.stdout, terminal_text(name, multiline=False))
            return EXIT_OK
        name = stored.check_name(args.name, "key")
        if args.keys_command == "remove":
            if name not in keys:
                raise UsageError(
                    f"no key named `{name}` is stored" + _did_you_mean(name, list(keys))
                )
            del keys[name]
            stored.write_keys(keys)
            _out(sys.stderr, f"removed key `{name}`")
            return EXIT_OK
        keys[name] = stored.check_key(_read_key_given())
        path = stored.write_keys(keys)
        _out(sys.stderr, f"stored key `{name}` in {path}")
        return EXIT_OK


def _cmd_aliases(args: argparse.Namespace) -> int:
    from toolwire.cli import stored

    with _stored_file("aliases"):
        if args.aliases_command == "path":
            _out(sys.stdout, str(stored.aliases_file()))
            return EXIT_OK
        aliases = stored.read_aliases()
        if args.aliases_command == "list":
            if args.json:
                _out(sys.stdout, json_document("aliases", aliases=aliases))
                return EXIT_OK
            for name, found in sorted(aliases.items()):
                where = f" ({found['provider']})" if found.get("provider") else ""
                row = f"{name}: {found['model']}{where}"
                _out(sys.stdout, terminal_text(row, multiline=False))
            return EXIT_OK
        name = stored.check_name(args.alias, "alias")
        if args.aliases_command == "remove":
            if name not in aliases:
                raise UsageError(f"no alias `{name}`" + _did_you_mean(name, list(aliases)))
            del aliases[name]
            stored.write_aliases(aliases)
            return EXIT_OK
        model = args.model.strip()
        if not model or not model.isprintable():
            raise UsageError(f"alias {name}: the model name {args.model!r} is not one")
        entry = {"model": model}
        if args.provider:
            entry["provider"] = stored.check_name(args.provider, "provider")
        aliases[name] = entry
        stored.write_aliases(aliases)
        return EXIT_OK


def _cmd_new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolwire.cli.templates import new_package

    try:
        written = new_package(args.kind, args.name, Path(args.dir))
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    root = next(p for p in written if p.name == "pyproject.toml").parent
    for path in written:
        _out(sys.stdout, f"wrote {path}")
    _out(sys.stdout, f"next: cd {root} && pip install -e '.[test]' && pytest")
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plugins": _cmd_plugins,
    "tools": _cmd_tools,
    "call": _cmd_call,
    "check": _cmd_check,
    "models": _cmd_models,
    "new": _cmd_new,
    "keys": _cmd_keys,
    "aliases": _cmd_aliases,
}
