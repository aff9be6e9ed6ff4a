"""Asking the person at the terminal what an MCP server wants to know (elicitation),
and showing them what it reports of its progress.

``toolwire call`` and ``toolwire chat`` offer :func:`terminal_handler` (when stdin is a
terminal) and :func:`progress_printer` to the installed distributions (the hook
``toolwire_cli_terminal``: toolwire-mcp takes them); a run that is not interactive offers
no handler, so every request is declined. Progress goes to stderr either way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from toolwire._display import terminal_text

__all__ = ["install_terminal_handler", "progress_printer", "terminal_handler"]

_YES = frozenset({"y", "yes", "true", "1"})
_NO = frozenset({"n", "no", "false", "0"})


def terminal_handler(
    read: Callable[[str], str] = input, write: TextIO | None = None
) -> Callable[[Any], Any]:
    """A handler that asks for each field of the form, one line each (an empty line takes
    the default); end of input or Ctrl-C declines."""

    def ask(request: Any) -> Any:
        out = write if write is not None else sys.stderr
        # Everything shown is the server's own text: nothing in it may act on the terminal.
        server = terminal_text(str(request.server), multiline=False)
        out.write(f"\nMCP server `{server}` asks:\n{terminal_text(str(request.message))}\n")
        out.flush()
        try:
            if request.mode == "url":
                out.write(
                    f"It wants you to open: {terminal_text(str(request.url), multiline=False)}\n"
                )
                return _boolean(read("Go ahead? [y/N] ")) is True
            answers: dict[str, Any] = {}
            props = request.schema.get("properties")
            for name, spec in (props if isinstance(props, Mapping) else {}).items():
                value = _field(read, name, spec if isinstance(spec, Mapping) else {})
                if value is _DECLINED:
                    return None
                if value is not _DEFAULT:
                    answers[name] = value
            return answers
        except (EOFError, KeyboardInterrupt):
            out.write("\n(declined)\n")
            return None

    return ask


_DEFAULT: Any = object()
_DECLINED: Any = object()


def _field(read: Callable[[str], str], name: str, spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    label = spec.get("title") or spec.get("description") or name
    choices = spec.get("enum")
    hint = ""
    if kind == "boolean":
        hint = " [y/n]"
    elif isinstance(choices, list) and choices:
        hint = " (" + " | ".join(str(c) for c in choices) + ")"
    default = f" [default: {spec['default']}]" if "default" in spec else ""
    text = read(terminal_text(f"{label}{hint}{default}: ", multiline=False)).strip()
    if not text:
        return _DEFAULT
    try:
        if kind == "boolean":
            value = _boolean(text)
            return _DECLINED if value is None else value
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return _DECLINED
    if isinstance(choices, list) and choices and text not in [str(c) for c in choices]:
        return _DECLINED
    return text


def _boolean(text: str) -> bool | None:
    word = text.strip().lower()
    if word in _YES:
        return True
    if word in _NO or not word:
        return False
    return None


def progress_printer(write: TextIO | None = None) -> Callable[[Any], None]:
    """A progress handler that prints ``[server] tool: 3/10 message`` to stderr."""

    def show(event: Any) -> None:
        out = write if write is not None else sys.stderr
        done = f"{event.progress:g}" + (f"/{event.total:g}" if event.total is not None else "")
        message = " ".join(str(event.message or "").split())[:200]
        line = f"[{event.server}] {event.tool}: {done}{' ' + message if message else ''}"
        out.write(terminal_text(line, multiline=False) + "\n")
        out.flush()

    return show


def install_terminal_handler(stdin: TextIO | None = None) -> bool:
    """Offer the installed distributions (``toolwire_cli_terminal``: toolwire-mcp's servers'
    progress and elicitation) a progress printer on stderr and, when stdin is a terminal,
    :func:`terminal_handler`; True when the questions are asked here."""
    from toolwire.cli.extend import Terminal, offer_terminal

    stream = stdin if stdin is not None else sys.stdin
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    ask = terminal_handler() if interactive else None
    return offer_terminal(Terminal(progress_printer(), ask)) and interactive
