"""A command a distribution adds to ``toolwire`` and what ``call``/``chat`` offer it before
tools run: plain values the hook specifications name (:mod:`toolwire.cli.extend` has them
for plugin authors, with the rest of what a command uses)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toolwire._errors import UsageError

__all__ = ["Command", "Terminal"]

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


class Command:
    """One command a distribution adds: ``toolwire NAME ...``.

    ``about``: its one line of help; ``arguments(parser)`` adds its arguments (and
    subcommands) to its ``argparse`` parser; ``run(args, context)`` runs it and returns
    the exit status (raise :class:`CliError` for a one-line error with its status);
    ``values``: an option (``--server``) -> a function giving the values completion
    offers for it.
    """

    __slots__ = ("about", "arguments", "name", "run", "values")

    def __init__(
        self,
        name: str,
        about: str,
        *,
        arguments: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace, Any], int],
        values: Mapping[str, Callable[[], Iterable[str]]] | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError(
                f"a command's name is a lowercase word (letters, digits, -), got {name!r:.60}"
            )
        if not isinstance(about, str) or not about.strip() or "\n" in about.strip():
            raise UsageError(f"command {name!r}: about must be one line of text")
        if not callable(arguments) or not callable(run):
            raise UsageError(f"command {name!r}: arguments and run must be callable")
        values = dict(values or {})
        if not all(
            isinstance(k, str) and k.startswith("-") and callable(v) for k, v in values.items()
        ):
            raise UsageError(f"command {name!r}: values maps options (--name) to functions")
        self.name, self.about, self.arguments, self.run = name, about.strip(), arguments, run
        self.values = values

    def __repr__(self) -> str:
        return f"Command({self.name!r})"


class Terminal:
    """What ``toolwire call`` and ``toolwire chat`` offer before tools run:
    ``progress(event)`` prints one line on stderr (an event with ``server``, ``tool``,
    ``progress``, ``total``, ``message``); ``ask(request)`` asks the person at the
    terminal for each field of a form (None when stdin is not a terminal)."""

    __slots__ = ("ask", "progress")

    def __init__(
        self, progress: Callable[[Any], None], ask: Callable[[Any], Any] | None = None
    ) -> None:
        self.progress, self.ask = progress, ask
