"""``toolwire chat``: one prompt, or an interactive session; ``toolwire logs`` and
``toolwire config``.

With a prompt, one turn of the tool loop; without one, the prompt is read from stdin when
it is not a terminal, and on a terminal an interactive session starts: history,
multi-line input (a line of three double quotes opens and closes a block, a trailing
backslash continues a line), ``/tools``, ``/approve``, ``/save``, ``/exit``. Ctrl-C
cancels the running turn (the conversation is as it was before it), not the session.
Mutating and destructive calls are asked about at the terminal there (``--approve``
approves them all); policies decide first either way.

Every turn is recorded in the conversation log (``--no-log`` not), and ``-c`` / ``--cid``
continue a logged conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from toolwire._calls import rejection_reason
from toolwire._display import MAX_REVIEW_CHARS, review_arguments, terminal_text
from toolwire._errors import RoundLimitError, UsageError
from toolwire._execute.approval import Allow, ApprovalGate, ApprovalRequest, Deny
from toolwire._execute.executor import Executor
from toolwire._hooks import HookContext
from toolwire._output import ModelSettings
from toolwire._plugins import PluginHost
from toolwire._provider import Provider
from toolwire._toolset import Toolset
from toolwire._transcript import Session
from toolwire.cli.ask import install_terminal_handler
from toolwire.cli.commands import (
    _app_toolset,
    _did_you_mean,
    _host,
    _imported,
    _provider,
    _status,
    _warn_blocked,
    approval_waiting,
    principal_of,
)
from toolwire.cli.config import CliConfig, cli_config
from toolwire.cli.logs import ConversationLog, Recorder, model_view, redact_call_arguments
from toolwire.cli.parser import APP, EXIT_OK, EXIT_ROUNDS, EXIT_USAGE, CliError
from toolwire.cli.render import (
    Emit,
    RetryNotice,
    Spinner,
    _Events,
    _out,
    _printer,
    json_document,
    safe_fields,
    style_for,
)

__all__ = ["COMMANDS"]

_MAX_STDIN_PROMPT = 1024 * 1024
_HELP = """\
commands:
  /tools            the tools the model is offered
  /approve [on|off] approve every mutating and destructive call (policies still decide)
  /save PATH        write the conversation to PATH (session JSON)
  /exit             leave (or Ctrl-D); Ctrl-C cancels a running turn
input:
  a line of three double quotes starts and ends a multi-line prompt;
  a line ending in a backslash continues on the next line"""


def _config(args: argparse.Namespace) -> CliConfig:
    rounds = getattr(args, "max_rounds", None)
    if rounds is not None and rounds < 1:
        raise CliError(f"--max-rounds must be at least 1, got {rounds}", EXIT_USAGE)
    given = {
        "provider": (getattr(args, "provider", None), "--provider"),
        "model": (getattr(args, "model", None), "--model"),
        "base_url": (getattr(args, "base_url", None), "--base-url"),
        "api_key_env": (getattr(args, "api_key_env", None), "--api-key-env"),
        "max_rounds": (getattr(args, "max_rounds", None), "--max-rounds"),
        "log": (False if getattr(args, "no_log", False) else None, "--no-log"),
        "color": (getattr(args, "color", None), "--color"),
    }
    try:
        cfg = cli_config(given)
        pairs = getattr(args, "option", None)
        if pairs:
            from toolwire.cli.config import Setting, option_settings

            settings = option_settings(pairs, cfg["settings"])
            cfg = attrs.evolve(cfg, values={**cfg.values, "settings": Setting(settings, "-o")})
        return cfg
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _turn_with(toolset: Toolset, names: list[str]) -> Any:
    """The chat's turn offering the tools ``--tool`` names as well as those on by default
    (a tool a pack adds off, like toolwire-fs's ``delete_file``); a policy still hides and
    decides them. CliError for a name the toolset does not have."""
    from toolwire._turn import Availability, Turn

    known = [t.name for t in toolset.tools()]
    for name in names:
        if toolset.try_from_name(name) is None:
            listed = ", ".join(known) or "none"
            raise CliError(
                f"--tool {name}: no such tool (the tools: {listed})" + _did_you_mean(name, known),
                EXIT_USAGE,
            )
    return Turn(availability=Availability.default_plus(*names))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Tee:
    """The printer, and the current turn's recorder when the turn is logged."""

    def __init__(self, printer: Emit) -> None:
        self.printer = printer
        self.recorder: Recorder | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        self.printer(event)
        if self.recorder is not None:
            self.recorder(event)


class _Chat:
    def __init__(
        self,
        args: argparse.Namespace,
        cfg: CliConfig,
        host: PluginHost,
        toolset: Toolset,
        provider: Provider,
        session: Session,
        log: ConversationLog | None,
        interactive: bool,
        reach: dict[str, str] | None = None,
    ) -> None:
        self.args = args
        #: The provider's ``base_url`` and ``api_key_env`` this chat runs with: logged, so
        #: a continued conversation is sent to the same server with the same key.
        self.reach = reach or {}
        self.cfg = cfg
        self.host = host
        self.toolset = toolset
        self.provider = provider
        self.session = session
        self.log = log
        self.interactive = interactive
        self.approve_all = bool(args.approve)
        #: Each call's arguments as the log keeps them, by (id, name, argument text): redacted
        #: once, not again at every later turn of the conversation.
        self._kept: dict[tuple[str, str, str], str] = {}
        style = style_for(cfg["color"], sys.stdout, args.verbose)
        self.tee = _Tee(_printer(args.json, style=style))
        self.spinner = Spinner(
            f"waiting for {provider.name}", enabled=None if not args.json else False
        )
        self.ctx = HookContext(
            app=APP,
            session_id=session.id,
            provider=provider.name,
            model=provider.model,
            principal=principal_of(args),
        )
        settings = cfg["settings"]
        self.settings = ModelSettings(**settings) if settings else None
        options: dict[str, Any] = {"max_rounds": cfg["max_rounds"]}
        multi: str | None = getattr(args, "schema_multi", None)
        if args.schema and multi:
            raise CliError("give --schema or --schema-multi, not both", EXIT_USAGE)
        spec: str | None = args.schema or multi
        if spec:
            from toolwire.cli.schema_arg import answer_type

            try:
                options["output_type"] = answer_type(spec, _imported, many=bool(multi))
            except UsageError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
        wanted: list[str] = getattr(args, "tool", None) or []
        if wanted:
            options["turn"] = _turn_with(toolset, wanted)
        self.also_offered = frozenset(wanted)
        from toolwire._agent import Agent

        executor = Executor(
            approval=self._approve,
            approval_gate=ApprovalGate.MUTATING_AND_ABOVE,
            plugins=host,
            backend=getattr(args, "backend", None),
            **approval_waiting(args, self.tee),
        )
        self.agent = Agent(
            provider, toolset, executor=executor, plugins=host, context=self.ctx, **options
        )
        self.clean = True

    # -- approval -----------------------------------------------------------------------

    def _approve(self, request: ApprovalRequest) -> Allow | Deny:
        event: dict[str, Any] = {"event": "approval", "id": request.call_id, "source": "cli"}
        if self.approve_all:
            reason = "--approve" if self.args.approve else "/approve on"
            self.tee({**event, "decision": "allow", "reason": reason})
            return Allow()
        if self.interactive:
            self.spinner.stop()
            try:
                # The input that would run (a hook may have edited it), as the log keeps it.
                dump = getattr(request.input, "model_dump", None)
                data = dump(mode="json") if callable(dump) else {}
                question = _approval_prompt(
                    request.tool_name,
                    request.effect.value,
                    self._arguments(request.tool_name, json.dumps(data, default=str)),
                )
                if question is None:  # never asked with a part of the arguments
                    reason = (
                        f"the arguments of `{request.tool_name}` are too long to show in full "
                        f"for approval (at most {MAX_REVIEW_CHARS:,} characters), so the "
                        f"call was not run"
                    )
                    self.tee({**event, "decision": "deny", "reason": reason})
                    self.spinner.start()
                    return Deny(reason)
                answer = input(question)
            except EOFError:
                answer = ""
            choice = answer.strip().lower()
            if choice in ("a", "all"):
                self.approve_all = True
            if choice in ("y", "yes", "a", "all"):
                self.tee({**event, "decision": "allow", "reason": "approved at the terminal"})
                self.spinner.start()
                return Allow()
            reason = f"the user did not approve `{request.tool_name}`"
            self.tee({**event, "decision": "deny", "reason": reason})
            self.spinner.start()
            return Deny(reason)
        reason = (
            f"`{request.tool_name}` is {request.effect.value}, and `toolwire chat` runs "
            f"mutating and destructive tools only with --approve (or --yes)"
        )
        self.tee({**event, "decision": "deny", "reason": reason})
        return Deny(reason)

    # -- a turn -------------------------------------------------------------------------

    def _arguments(self, name: str, text: str) -> str:
        tool = self.toolset.get(name)
        redact = None
        if tool is not None:
            ctx = self.ctx

            def redact(t: Any, data: dict[str, Any]) -> dict[str, Any] | None:
                return self.host.redact_arguments(t, data, ctx)

        return redact_call_arguments(text, tool, redact)

    async def turn(self, prompt: str) -> None:
        """One turn; the session is left as it was when the turn is cancelled."""
        # Only an interactive session goes on after a failed or cancelled turn, so only
        # it needs the conversation as it was (a one-shot chat would copy it for nothing).
        before = self.session.to_dict() if self.interactive else None
        recorder = Recorder(prompt, self._arguments) if self.log is not None else None
        self.tee.recorder = recorder
        events = _Events(self.tee, self.spinner, save_media=self.args.save_media)
        stream = self.args.stream and not (
            self.args.schema or getattr(self.args, "schema_multi", None)
        )
        try:
            self.spinner.start()
            result = await self.agent.arun(
                self.session, prompt, on_event=events, stream=stream, settings=self.settings
            )
        except RoundLimitError:
            raise  # the rounds it ran are committed: the conversation goes on from them
        except BaseException:
            if before is not None:
                self.session = Session.from_dict(before)  # cancelled or failed: as it was
            raise
        finally:
            self.spinner.stop()
            self.tee.recorder = None
        self.clean = self.clean and events.clean
        if recorder is not None and self.log is not None:
            self._record(recorder, result)

    def _record(self, recorder: Recorder, result: Any) -> None:
        """Log the turn; a log that cannot be written is said, and the chat goes on (the
        answer was shown, and nothing else depends on the log)."""
        assert self.log is not None
        try:
            self.log.record(
                conversation=self.session.id,
                session=self._kept_session(),
                provider=self.provider.name,
                model=self.provider.model,
                recorder=recorder,
                status=result.status,
                rounds=result.rounds,
                usage=result.usage,
                base_url=self.reach.get("base_url"),
                api_key_env=self.reach.get("api_key_env"),
            )
        except (sqlite3.Error, OSError, UsageError) as exc:
            _out(sys.stderr, f"toolwire: warning: this turn was not logged: {exc}")

    def _kept_session(self) -> dict[str, Any]:
        """The session as the log keeps it: every call's arguments redacted (in the call
        and in its result alike), so what is kept can be sent again as it is."""
        data = self.session.to_dict()
        for message in data["messages"]:
            for call in message.get("tool_calls", ()):
                call["arguments"] = self._kept_arguments(
                    call["id"], call["name"], call["arguments"]
                )
            for result in message.get("results", ()):
                result["arguments"] = self._kept_arguments(
                    result["call_id"], result["tool_name"], result["arguments"]
                )
                # What the model read is kept; a structured value beside it (as large
                # again, and never sent to a model) is not.
                result.pop("structured", None)
        return data

    def _kept_arguments(self, call_id: str, name: str, text: str) -> str:
        key = (call_id, name, text)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = self._arguments(name, text)
        return kept

    def close(self) -> None:
        self.spinner.close()
        self.agent.executor.close()
        self.provider.close()
        if self.log is not None:
            self.log.close()

    # -- interactive --------------------------------------------------------------------

    def repl(self, runner: asyncio.Runner) -> None:
        history = _history()
        say = sys.stderr
        _out(
            say,
            f"toolwire chat with {self.provider.name} ({self.provider.model}); "
            f"/help for commands, Ctrl-D to leave",
        )
        while True:
            try:
                prompt = _read_prompt()
            except EOFError:
                _out(say, "")
                break
            except KeyboardInterrupt:
                _out(say, "")
                continue
            if prompt is None or not prompt.strip():
                continue
            if prompt.startswith("/"):
                if self._command(prompt.strip()):
                    break
                continue
            try:
                runner.run(self.turn(prompt))
            except KeyboardInterrupt:
                self.tee.printer({"event": "cancelled"})
                _out(say, "(cancelled: the conversation is as it was before this prompt)")
            except RoundLimitError:
                _out(
                    say,
                    f"toolwire: the model did not finish within {self.cfg['max_rounds']} tool "
                    f"round(s); ask again, or raise --max-rounds",
                )
        if history is not None:
            history()

    def _command(self, line: str) -> bool:
        """Run a /command; True to leave."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        say = sys.stderr
        if name in ("/exit", "/quit"):
            return True
        if name == "/help":
            _out(say, _HELP)
        elif name == "/tools":
            tools = [
                t
                for t in self.toolset.tools()
                if t.name in self.also_offered or not self.toolset.is_off(t.name)
            ]
            if not tools:
                _out(say, "(no tools)")
            for t in tools:
                # One row a tool: the description's first line (a newline in it broke the
                # table), escaped, cut to fit.
                first = (t.description.strip().splitlines() or [""])[0]
                about = terminal_text(first, multiline=False)
                about = about if len(about) <= 60 else about[:59] + "…"
                name = terminal_text(t.name, multiline=False)
                _out(say, f"  {name:<28} {t.metadata.effect.value:<12} {about}")
        elif name == "/approve":
            if rest not in ("", "on", "off"):
                _out(say, "/approve takes on or off")
                return False
            self.approve_all = rest != "off"
            state = "approved" if self.approve_all else "asked about"
            _out(say, f"mutating and destructive calls are now {state} (policies still decide)")
        elif name == "/save":
            if not rest:
                _out(say, "/save takes a file name")
                return False
            path = Path(rest).expanduser()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                _out(say, f"{path} exists: choose another name")
                return False
            except OSError as exc:
                _out(say, f"cannot write {path}: {exc.strerror}")
                return False
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                # As the log keeps it: no secret argument is written to a file.
                f.write(json.dumps(self._kept_session(), indent=2, ensure_ascii=False))
            _out(say, f"saved {len(self.session)} messages to {path}")
        else:
            _out(say, f"unknown command {name}; /help lists them")
        return False


def _approval_prompt(tool: str, effect: str, arguments_json: str) -> str | None:
    """The question asked at the terminal before a call runs: every argument in full
    (:func:`toolwire.adapters.review_arguments`), or None when they are too long to show
    in full, and the call is then not asked about."""
    shown = review_arguments(arguments_json)
    if shown is None:
        return None
    name = terminal_text(tool, multiline=False)
    return f"run `{name}` ({effect}) with these arguments?\n{shown}\n[y/N/a(ll)] "


def _read_prompt() -> str | None:
    """One prompt from the terminal: a line, a backslash-continued line, or a block
    between lines of three double quotes."""
    first = input("> ")
    if first.strip() == '"""':
        lines: list[str] = []
        while True:
            line = input("... ")
            if line.strip() == '"""':
                return "\n".join(lines)
            lines.append(line)
    lines = [first]
    while lines[-1].endswith("\\"):
        lines[-1] = lines[-1][:-1]
        lines.append(input("... "))
    return "\n".join(lines)


def _history() -> Callable[[], None] | None:
    """Line editing and history (``$XDG_DATA_HOME/toolwire/history``), where the Python
    build has readline; returns what saves the history."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Python built without readline
        return None
    from toolwire.cli.config import default_logs_path

    path = default_logs_path().with_name("history")
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(1000)

    def save() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)
            readline.write_history_file(path)
        except OSError:
            pass

    return save


def _stdin_prompt() -> str:
    data = sys.stdin.read(_MAX_STDIN_PROMPT + 1)
    if len(data) > _MAX_STDIN_PROMPT:
        raise CliError(f"the prompt on stdin is over {_MAX_STDIN_PROMPT:,} characters", EXIT_USAGE)
    if not data.strip():
        raise CliError("no prompt: give one, or pipe it on stdin", EXIT_USAGE)
    return data.strip()


def cmd_chat(args: argparse.Namespace) -> int:
    cfg = _config(args)
    if args.cid is not None and args.cont:
        raise CliError("give -c or --cid, not both", EXIT_USAGE)
    log = ConversationLog(cfg["logs_path"]) if cfg["log"] else None
    session = Session()
    provider_name, model = cfg["provider"], cfg["model"]
    base_url, api_key_env = cfg["base_url"], cfg["api_key_env"]
    if args.cont or args.cid is not None:
        reader = log or ConversationLog(cfg["logs_path"])
        try:
            _cid, data, was_provider, was_model, was_settings = reader.session(args.cid)
            session = Session.from_dict(data)
        except UsageError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        except Exception as exc:  # a damaged saved session: said, nothing lost
            raise CliError(f"cannot continue that conversation: {exc}", EXIT_USAGE) from None
        # The conversation goes on with its own model, unless one is given.
        if cfg.source("provider") == "default" and was_provider:
            provider_name = was_provider
            if cfg.source("model") == "default":
                model = was_model
            # And with the server and key it was run with (an openai-compatible server's
            # conversation could not be created again without its URL).
            if cfg.source("base_url") == "default":
                base_url = was_settings.get("base_url", base_url)
            if cfg.source("api_key_env") == "default":
                api_key_env = was_settings.get("api_key_env", api_key_env)
    from toolwire.cli.stored import resolve_alias

    try:  # `--model fast`: the model an alias stands for (and its provider, unless given)
        model, aliased_provider = resolve_alias(model)
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if aliased_provider and cfg.source("provider") != "--provider":
        provider_name = aliased_provider
    prompt = args.prompt
    interactive = prompt is None and _isatty(sys.stdin) and not args.json
    if prompt is None and not interactive:
        prompt = _stdin_prompt()
    install_terminal_handler()  # an MCP server's question is asked here, when interactive
    host = _host()
    toolset = host.assemble(_app_toolset(args.app))
    provider = _provider(
        host,
        provider_name,
        model,
        base_url=base_url,
        api_key_env=api_key_env,
        key=getattr(args, "key", None),
    )
    _warn_blocked(host, toolset)
    reach = {k: v for k, v in (("base_url", base_url), ("api_key_env", api_key_env)) if v}
    chat = _Chat(args, cfg, host, toolset, provider, session, log, interactive, reach)
    retries = RetryNotice(before=chat.spinner.stop)
    http_log = logging.getLogger("toolwire.http")
    http_log.addHandler(retries)
    level = http_log.level
    if not http_log.isEnabledFor(logging.INFO):
        http_log.setLevel(logging.INFO)
    try:
        with asyncio.Runner() as runner:
            if interactive:
                chat.repl(runner)
            else:
                assert prompt is not None
                runner.run(chat.turn(prompt))
    except RoundLimitError:
        raise CliError(
            f"the model did not finish within {cfg['max_rounds']} tool round(s): it asked for "
            f"tools again (not run); raise --max-rounds",
            EXIT_ROUNDS,
        ) from None
    finally:
        http_log.removeHandler(retries)
        http_log.setLevel(level)
        chat.close()
    return _status(host, chat)


# -- logs ----------------------------------------------------------------------------------


def cmd_logs(args: argparse.Namespace) -> int:
    cfg = _config(args)
    if args.count < 1:
        raise CliError(f"-n must be at least 1, got {args.count}", EXIT_USAGE)
    log = ConversationLog(cfg["logs_path"])
    action = args.logs_command or "list"
    try:
        if action == "path":
            _out(sys.stdout, str(log.path))
            return EXIT_OK
        if action == "conversations":
            rows = list(log.conversations(args.count))
            if args.json:
                _out(sys.stdout, json_document("conversations", conversations=rows))
                return EXIT_OK
            for row in (safe_fields(r, _ROW_LINE) for r in rows):
                _out(
                    sys.stdout,
                    f"{row['id']}  {row['updated']}  "
                    f"{row['provider']}/{row['model']}  {row['name']}",
                )
            return EXIT_OK
        if action == "show":
            if args.id.isdigit():
                rows = log.responses(response=int(args.id), limit=None)
            else:
                rows = log.responses(conversation=args.id, limit=None)
            if not rows:
                raise CliError(f"no response or conversation `{args.id}` in {log.path}", EXIT_USAGE)
        elif action == "search":
            rows = log.responses(query=" ".join(args.query), limit=args.count)
        elif action == "export":
            rows = log.responses(conversation=args.cid, limit=None)
            _out(sys.stdout, json_document("logs", responses=rows))
            return EXIT_OK
        else:
            rows = log.responses(limit=args.count, conversation=args.cid)
    except UsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    finally:
        log.close()
    if args.json:
        _out(sys.stdout, json_document("logs", responses=rows))
        return EXIT_OK
    if not rows:
        _out(sys.stdout, "(nothing logged)" if action != "search" else "(no match)")
    for row in rows:
        _out(sys.stdout, _response_text(row))
    return EXIT_OK


_ROW_LINE = frozenset({"id", "created", "provider", "model", "conversation_id", "updated", "name"})
_CALL_LINE = frozenset({"name", "arguments", "source", "decision", "reason", "approval"})


def _response_text(row: dict[str, Any]) -> str:
    row = safe_fields(row, _ROW_LINE)  # what the model and the tools said: escaped
    row["tool_calls"] = [safe_fields(c, _CALL_LINE) for c in row["tool_calls"]]
    usage = f"{row['input_tokens']} in, {row['output_tokens']} out"
    lines = [
        f"# {row['id']}  {row['created']}  {row['provider']}/{row['model']}  "
        f"conversation {row['conversation_id']}  ({usage})",
        "",
        "prompt:",
        *(f"  {line}" for line in row["prompt"].splitlines()),
    ]
    for call in row["tool_calls"]:
        decided = call["decision"] or "?"
        refused = call["result"] is not None and rejection_reason(call["result"]) is not None
        if decided == "run" and refused:
            decided = "refused"  # let through by the hooks, then refused
        if call["source"]:
            decided += f" by {call['source']}"
        lines.append(f"tool call: {call['name']} {call['arguments']}  [{decided}]")
        if call["reason"]:
            lines.append(f"  reason: {call['reason']}")
        if call["approval"]:
            lines.append(f"  approval: {call['approval']}")
        if call["result"] is not None:
            # A log written before results were kept as the model read them holds the
            # machine marker: shown in the model's words too.
            shown, is_error = model_view(call["result"], call["is_error"])
            label = "error" if is_error else "result"
            first, *rest = shown.splitlines() or [""]
            lines.append(f"  {label}: {first}" + (f" (+{len(rest)} lines)" if rest else ""))
    lines += ["answer:", *(f"  {line}" for line in row["answer"].splitlines()), ""]
    return "\n".join(lines)


# -- config --------------------------------------------------------------------------------


def cmd_config(args: argparse.Namespace) -> int:
    cfg = _config(args)
    if args.json:
        values = {k: {"value": s.value, "source": s.source} for k, s in cfg.values.items()}
        _out(sys.stdout, json_document("config", path=str(cfg.path), values=values))
        return EXIT_OK
    state = "" if cfg.path.is_file() else " (not there: every value is a default)"
    _out(sys.stdout, f"file: {cfg.path}{state}")
    for key, setting in cfg.values.items():
        value = json.dumps(setting.value) if not isinstance(setting.value, str) else setting.value
        _out(sys.stdout, f"  {key:<12} {value:<40} ({setting.source})")
    return EXIT_OK


def cmd_completion(args: argparse.Namespace) -> int:
    from toolwire.cli.completion import script

    sys.stdout.write(script(args.shell))
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "chat": cmd_chat,
    "completion": cmd_completion,
    "logs": cmd_logs,
    "config": cmd_config,
}
