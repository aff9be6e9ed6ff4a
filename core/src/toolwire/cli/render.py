"""What the commands print: plain lines for people, JSON lines with ``--json``.

Text output is one block per call (the call, its decision, its approval, its
result), printed when the call's result is in, so parallel calls do not
interleave; the answer's text streams as it arrives. On a terminal, a spinner on
stderr shows that the command is waiting for the model.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from toolwire._agent import (
    AgentEvent,
    AgentFinished,
    RoundCommitted,
    ToolCallDecided,
    ToolResultReady,
)
from toolwire._calls import rejection_reason
from toolwire._display import terminal_text
from toolwire._media import Audio, File, Image, Part, ResourceLink, Text, part_to_dict
from toolwire._provider import TextDelta, ToolCallStarted

Emit = Callable[[dict[str, Any]], None]

#: The ``format`` of every ``--json`` output: the kind of document, then its version.
JSON_EVENT = "toolwire.event/1"

_DECISION = {"run": "run", "handled": "complete", "rejected": "reject", "invalid": "reject"}


def _out(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def json_document(kind: str, **fields: Any) -> str:
    """A ``--json`` document: an object whose ``format`` names its kind and version."""
    return json.dumps({"format": f"toolwire.{kind}/1", **fields}, indent=2)


class Spinner:
    """``⠋ waiting for NAME`` on stderr while the model is asked, on a terminal only.

    ``start`` / ``stop`` may be called any number of times, from the event loop's
    thread; the frames are drawn by a daemon thread and erased on ``stop``.
    """

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, label: str, stream: TextIO | None = None, *, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = _is_terminal(self.stream)
        self.enabled = enabled
        self.label = label
        self._on = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._drawn = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.enabled or self._closed:
            return
        self._on.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._spin, name="toolwire-spinner", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if not self.enabled:
            return
        self._on.clear()
        self._erase()

    def close(self) -> None:
        self._closed = True
        self.stop()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._on.set()  # wake it so it sees the close
            thread.join(timeout=1.0)
            self._erase()

    def _spin(self) -> None:
        i = 0
        while not self._closed:
            if not self._on.wait(timeout=0.5):
                continue
            with self._lock:
                if self._on.is_set() and not self._closed:
                    frame = self.FRAMES[i % len(self.FRAMES)]
                    self.stream.write(f"\r{frame} {self.label}")
                    self.stream.flush()
                    self._drawn = True
            i += 1
            time.sleep(0.1)

    def _erase(self) -> None:
        with self._lock:
            if self._drawn:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self._drawn = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Events:
    """Turns the agent's events into CLI events, and remembers whether all went well."""

    def __init__(
        self, emit: Emit, spinner: Spinner | None = None, save_media: Path | None = None
    ) -> None:
        self.emit = emit
        #: Calls that did not go through: refused, invalid, or failed (a call refused
        #: while its approval request waited, then run once approved, went through).
        self.failed: set[str] = set()
        self.spinner = spinner
        self.save_media = save_media

    @property
    def clean(self) -> bool:
        """Whether every call went through."""
        return not self.failed

    def __call__(self, event: AgentEvent) -> None:
        emit = self.emit
        spinner = self.spinner
        if spinner is not None:
            if isinstance(event, (TextDelta, ToolCallStarted, ToolCallDecided)):
                spinner.stop()  # the model answered: what follows is printed
            elif isinstance(event, RoundCommitted):
                spinner.start()  # the next request goes out
        if isinstance(event, TextDelta):
            emit({"event": "text", "delta": event.text})
        elif isinstance(event, ToolCallDecided):
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
                self.failed.add(call.id)
            emit(decision)
        elif isinstance(event, ToolResultReady):
            r = event.result
            result: dict[str, Any] = {
                "event": "result",
                "id": r.call_id,
                "content": r.content,
                "is_error": r.is_error,
            }
            if r.rich:
                parts = r.parts
                result["parts"] = parts
                if self.save_media is not None:
                    result["saved"] = save_media(self.save_media, r.call_id, parts)
            emit(result)
            if r.is_error:
                self.failed.add(r.call_id)
            else:
                self.failed.discard(r.call_id)
        elif isinstance(event, AgentFinished):
            if spinner is not None:
                spinner.stop()
            if event.result.status == "finished":
                answer: dict[str, Any] = {"event": "answer", "text": event.result.text}
                if event.result.output is not None:
                    answer["output"] = _jsonable(event.result.output)
                emit(answer)


def _size(n: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


#: Event fields shown on one line: a newline in them could print a fake line.
_ONE_LINE = frozenset({"id", "name", "arguments", "source"})


def _safe(value: Any, multiline: bool = True) -> Any:
    if isinstance(value, str):
        return terminal_text(value, multiline=multiline)
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value  # parts are shown through _parts_text, which is escaped as a whole


def safe_fields(
    fields: dict[str, Any], one_line: frozenset[str] | set[str] = _ONE_LINE
) -> dict[str, Any]:
    """``fields`` (an event, a logged row) with every string they carry as
    :func:`toolwire.adapters.terminal_text` prints it: the keys in ``one_line`` with their
    newlines escaped too. Toolwire's own colour is added after, by the printer."""
    return {k: _safe(v, k not in one_line) for k, v in fields.items()}


def _parts_text(parts: tuple[Part, ...], saved: dict[int, str]) -> str:
    """A result's parts for people: text as it is, media as ``[image/png 4.0 KB]`` (and
    where it was saved)."""
    out = []
    for i, p in enumerate(parts):
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, ResourceLink):
            out.append(p.placeholder())
        else:
            where = f" saved to {saved[i]}" if i in saved else ""
            source = _size(p.size) if p.data is not None else f"<{p.url}>"
            named = f"{p.name} " if p.name else ""
            out.append(f"[{named}{p.media_type} {source}]{where}")
    return "\n".join(out)


def save_media(directory: Path, call_id: str, parts: tuple[Part, ...]) -> dict[int, str]:
    """Write each media part with data to ``directory`` (made if missing) under a name
    toolwire makes (``CALLID-N.EXT``: never a name from the tool or the model); returns
    part index -> path. A file is never overwritten nor reached through a link."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", call_id)[:64] or "call"
    saved: dict[int, str] = {}
    for i, p in enumerate(parts):
        if not isinstance(p, (Image, Audio, File)) or p.data is None:
            continue
        ext = mimetypes.guess_extension(p.media_type) or ".bin"
        for n in range(1000):
            path = directory / f"{stem}-{i}{f'-{n}' if n else ''}{ext}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            try:
                fd = os.open(path, flags, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(p.data)
            saved[i] = str(path)
            break
    return saved


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


class Style:
    """How text output looks: ``color`` (ANSI: calls bold, refusals and errors red,
    results dim) and ``fold`` (a call's arguments and its result cut to one line each,
    ``-v`` for all of them); both off when piped, so scripts read the plain text."""

    _RESET = "\033[0m"

    def __init__(self, *, color: bool = False, fold: bool = False, width: int = 100) -> None:
        self.color = color
        self.fold_lines = fold
        self.width = width

    def _paint(self, code: str, text: str) -> str:
        if not self.color:
            return text
        return "\n".join(f"\033[{code}m{line}{self._RESET}" for line in text.split("\n"))

    def call(self, text: str) -> str:
        return self._paint("1;36", text)

    def bad(self, text: str) -> str:
        return self._paint("31", text)

    def dim(self, text: str) -> str:
        return self._paint("2", text)

    def fold(self, text: str) -> str:
        """One line of at most ``width`` characters, saying how much was left out."""
        if not self.fold_lines:
            return text
        lines = text.split("\n")
        first = lines[0]
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        room = max(20, self.width - len(more))
        if len(first) > room:
            first = first[: room - 1] + "…"
        return first + more

    def folded(self, label: str, text: str) -> str:
        """``label: text``, the text folded to the rest of one line, or indented whole."""
        if not self.fold_lines:
            return _indented(label, text)
        return self.fold(f"{label}: {text.strip()}")


PLAIN = Style()


def style_for(choice: str | None, stream: TextIO, verbose: bool) -> Style:
    """Colour on a terminal unless NO_COLOR or TERM=dumb (``choice`` ``auto``), or
    ``always`` / ``never``; folded calls and results on a terminal unless ``verbose``."""
    import shutil

    tty = _is_terminal(stream)
    env = os.environ
    color = choice == "always" or (
        choice in (None, "auto") and tty and not env.get("NO_COLOR") and env.get("TERM") != "dumb"
    )
    width = shutil.get_terminal_size((100, 24)).columns if tty else 100
    return Style(color=color, fold=tty and not verbose, width=max(40, width - 1))


def _indented(label: str, text: str) -> str:
    """``label: text`` on one line, or ``label:`` then the lines of ``text`` indented."""
    text = text.rstrip("\n")
    if "\n" not in text:
        return f"{label}: {text}"
    return f"{label}:\n" + "\n".join(f"    {line}" for line in text.splitlines())


class _TextPrinter:
    """Text mode: a block per call, printed whole once its result is in; the answer's
    text as it streams."""

    def __init__(self, stream: TextIO, style: Style = PLAIN) -> None:
        self.stream = stream
        self.style = style
        self.blocks: dict[str, list[str]] = {}
        self.explained: set[str] = set()  # calls whose rejection reason was already shown
        self.streaming = False  # the answer's text is being written, no newline yet
        self.streamed = ""

    def _line(self, text: str) -> None:
        self._end_text()
        _out(self.stream, text)

    def _end_text(self) -> None:
        if self.streaming:
            self.stream.write("\n")
            self.stream.flush()
            self.streaming = False

    def _block(self, call_id: str, line: str) -> None:
        self.blocks.setdefault(call_id, []).append(line)

    def __call__(self, event: dict[str, Any]) -> None:
        event = safe_fields(event)  # the model's, a tool's, a hook's: nothing acts on the terminal
        kind = event["event"]
        if kind == "text":
            if not self.streaming:
                self.stream.write("assistant: ")
                self.streaming = True
            self.streamed += event["delta"]
            self.stream.write(event["delta"])
            self.stream.flush()
        elif kind == "call":
            self._end_text()
            self.streamed = ""
            line = self.style.fold(f"> {event['name']} {event['arguments']}")
            self._block(event["id"], self.style.call(line))
        elif kind == "decision":
            if event["decision"] == "reject":
                self.explained.add(event["id"])
                source = f" by {event['source']}" if event.get("source") else ""
                first, *rest = str(event.get("reason", "")).split("\n")
                line = "\n".join(
                    [f"  decision: rejected{source}: {first}", *(f"    {r}" for r in rest)]
                )
                line = self.style.bad(self.style.fold(line))
            elif event["decision"] == "complete":
                by = event.get("source") or "a hook"
                line = f"  decision: answered by {by} (not run)"
            else:
                line = "  decision: run"
            self._block(event["id"], line)
        elif kind == "approval":
            if event["decision"] == "allow":
                self._block(event["id"], f"  approval: approved ({event['reason']})")
            else:
                self.explained.add(event["id"])
                line = self.style.fold(f"  approval: denied: {event['reason']}")
                self._block(event["id"], self.style.bad(line))
        elif kind == "approval_wait":
            if not event.get("waited"):  # said once, when the wait begins
                line = (
                    f"  waiting for approval: request {event['request']} ({event['tool']}) "
                    f"waits for {', '.join(event['approvers'])} until {event['until']}; "
                    f"answer it with: {event['answer']}"
                )
                self._line(self.style.fold(line))
        elif kind == "result":
            lines = self.blocks.pop(event["id"], [])
            reason = rejection_reason(event["content"])
            if reason is None:
                label = "  error" if event["is_error"] else "  result"
                text = event["content"]
                if "parts" in event:
                    text = terminal_text(_parts_text(event["parts"], event.get("saved", {})))
                shown = self.style.folded(label, text)
                paint = self.style.bad if event["is_error"] else self.style.dim
                lines.append(paint(shown))
            elif event["id"] not in self.explained:
                lines.append(self.style.bad(self.style.folded("  refused", reason)))
            for line in lines:
                self._line(line)
        elif kind == "cancelled":  # Ctrl-C in an interactive chat: what was shown stays
            self._end_text()
            self.blocks.clear()
            self.streamed = ""
        elif kind == "answer":
            for lines in self.blocks.values():  # calls that never got a result (approval)
                for line in lines:
                    self._line(line)
            self.blocks.clear()
            if "output" in event:  # a structured answer (--schema): its JSON, as it is
                self._end_text()
                self._line(json.dumps(event["output"], indent=2, ensure_ascii=False))
            elif self.streaming and self.streamed == event["text"]:
                self._end_text()
            else:
                self._line(f"assistant: {event['text']}")
            self.streamed = ""


def approval_wait_reporter(emit: Emit) -> Callable[[Any, float], None]:
    """The executor's ``on_approval_wait`` for the command line: an ``approval_wait``
    event when a wait begins (where the request can be answered) and every few seconds."""
    from datetime import UTC, datetime

    def report(request: Any, waited: float) -> None:
        until = datetime.fromtimestamp(request.expires, UTC).strftime("%Y-%m-%d %H:%M UTC")
        emit(
            {
                "event": "approval_wait",
                "request": request.id,
                "tool": request.tool,
                "approvers": list(request.approvers),
                "until": until,
                "waited": round(waited, 1),
                "answer": f"toolwire-policy approvals approve {request.id}",
            }
        )

    return report


def _printer(as_json: bool, stream: TextIO | None = None, style: Style = PLAIN) -> Emit:
    out = stream if stream is not None else sys.stdout
    if not as_json:
        return _TextPrinter(out, style)

    def emit(event: dict[str, Any]) -> None:
        if event["event"] == "text":
            return  # JSON lines carry the whole answer once, in `answer`
        if "parts" in event:  # as a saved session holds them: media as base64
            event = {**event, "parts": [part_to_dict(p) for p in event["parts"]]}
        _out(out, json.dumps({"format": JSON_EVENT, **event}))

    return emit


#: What a retried request that got no HTTP status ran into, by its error's kind.
_NO_STATUS = {
    "ProviderConnectionError": "could not connect",
    "ProviderTimeoutError": "timed out",
}


class RetryNotice(logging.Handler):
    """Shows the transport's retries on stderr: ``toolwire: openai: 503 (ServerError),
    retrying in 2.0 s (attempt 1 of 3)``."""

    def __init__(self, stream: TextIO | None = None, before: Callable[[], None] | None = None):
        super().__init__(logging.INFO)
        self.stream = stream if stream is not None else sys.stderr
        self.before = before

    def emit(self, record: logging.LogRecord) -> None:
        retry = getattr(record, "toolwire_retry", None)
        if not isinstance(retry, dict):
            return
        if self.before is not None:
            self.before()
        # What went wrong: the HTTP status, else what the error's kind says (a refused
        # connection has no status, and the line had an empty slot where it goes).
        status = retry.get("status") or _NO_STATUS.get(retry["error"], "failed")
        _out(
            self.stream,
            f"toolwire: {retry['provider']}: {status} ({retry['error']}), retrying in "
            f"{retry['delay']:.1f} s (attempt {retry['attempt']} of {retry['attempts']})",
        )
