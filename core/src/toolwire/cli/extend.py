"""Commands the installed distributions add to ``toolwire`` (``toolwire mcp``, ``toolwire
policy``): :class:`Command`, what its ``run`` may use (:class:`CommandContext`), what
``toolwire call`` and ``toolwire chat`` offer before tools run (:class:`Terminal`), and
their discovery.

A distribution names a module in the entry-point group ``toolwire.commands``::

    [project.entry-points."toolwire.commands"]
    weather = "toolwire_weather.commands"

and the module implements the hooks ``toolwire_cli_commands(register)`` and, when it wants
them, ``toolwire_cli_terminal(terminal)``. The modules are imported only when the command
line lists its commands (``--help``, completion, a word that is not a built-in command) or
runs one of theirs, never for a built-in command: keep them light and import the
distribution's machinery in ``run``. A module that fails, or a command that would take a
built-in's name or another distribution's, is left out with one warning naming it; the
rest work. ``TOOLWIRE_PLUGINS`` and ``TOOLWIRE_DISABLE_PLUGINS`` apply by entry-point name.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from toolwire._command import Command, Terminal
from toolwire._plugins.entrypoints import COMMANDS_GROUP
from toolwire.cli.parser import (
    EXIT_OK,
    EXIT_PLUGIN,
    EXIT_TOOL,
    EXIT_USAGE,
    CliError,
    _app_option,
    _approve_switch,
)

if TYPE_CHECKING:
    from toolwire._plugins import PluginHost
    from toolwire._toolset import Toolset

__all__ = [
    "COMMANDS_GROUP",
    "EXIT_OK",
    "EXIT_PLUGIN",
    "EXIT_TOOL",
    "EXIT_USAGE",
    "CliError",
    "Command",
    "CommandContext",
    "Terminal",
    "add_app_option",
    "add_approve_options",
]


#: The distribution that brings a command toolwire's own documentation names, for the
#: error when it is not installed (a hint, never an import).
ELSEWHERE = {"mcp": "toolwire-mcp", "console": "toolwire-mcp", "policy": "toolwire-policy"}


class CommandContext:
    """What a command's ``run`` may use of the command line's own machinery."""

    __slots__ = ()

    def host(self) -> PluginHost:
        """The plugin host, as the built-in commands use it (policies in force)."""
        from toolwire.cli.commands import _host

        return _host()

    def app_toolset(self, spec: str | None) -> Toolset | None:
        """The application's toolset ``--app MODULE:ATTR`` names (None: not given)."""
        from toolwire.cli.commands import _app_toolset

        return _app_toolset(spec)

    def imported(self, spec: str, option: str) -> Any:
        """The object ``MODULE:ATTR`` names, for ``option`` (a usage error otherwise)."""
        from toolwire.cli.commands import _imported

        return _imported(spec, option)

    def check(self, host: PluginHost, toolset: Toolset | None = None) -> None:
        """Before calls run, as the built-in commands do: which policies decide them, a
        warning when none checks anything, one per rule naming nothing in the assembled
        catalogue of ``toolset``, and why calls are blocked."""
        from toolwire.cli.commands import _warn_blocked

        _warn_blocked(host, host.assemble(toolset))

    def out(self, text: str) -> None:
        """One line on stdout, made safe for a terminal."""
        from toolwire.cli.render import _out

        _out(sys.stdout, text)


def add_app_option(parser: argparse.ArgumentParser) -> None:
    """``--app MODULE:ATTR``, as the built-in commands take it."""
    _app_option(parser)


def add_approve_options(parser: argparse.ArgumentParser) -> None:
    """``--approve`` (``--yes``) and ``--approval-wait SECONDS``, as ``toolwire call`` takes
    them (``args.approve``, ``args.approval_wait``)."""
    _approve_switch(parser)


# -- discovery ----------------------------------------------------------------------------

_LOCK = threading.Lock()
_FOUND: tuple[dict[str, Command], list[Any]] | None = None


def _warn(text: str) -> None:
    from toolwire._display import terminal_text

    sys.stderr.write(terminal_text(f"toolwire: warning: {text}", multiline=False) + "\n")


def _modules(builtin: Collection[str] | None) -> tuple[dict[str, Command], list[Any]]:
    """The commands the installed modules add (by name; none named as one of ``builtin``,
    the built-in commands) and those modules' terminal hooks; found once per process,
    each failure warned once."""
    global _FOUND
    with _LOCK:
        if _FOUND is None:
            _FOUND = _discover(_builtin_names() if builtin is None else frozenset(builtin))
        return _FOUND


def _discover(builtin: frozenset[str]) -> tuple[dict[str, Command], list[Any]]:
    import pluggy

    from toolwire import hookspecs
    from toolwire._plugins.entrypoints import (
        DEFAULT_IMPORT_TIMEOUT,
        IMPORTER,
        _describe,
        _env_names,
        _env_timeout,
        command_entry_points,
    )

    allowed = _env_names("TOOLWIRE_PLUGINS")
    disabled = _env_names("TOOLWIRE_DISABLE_PLUGINS") or frozenset()
    deadline = _env_timeout("TOOLWIRE_PLUGIN_IMPORT_TIMEOUT", DEFAULT_IMPORT_TIMEOUT)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for ep in sorted(command_entry_points(), key=lambda e: e.name):
        if ep.name in disabled or (allowed is not None and ep.name not in allowed):
            continue
        where = f"commands `{ep.name}` ({ep.value})"
        try:
            module = IMPORTER.load(ep.load, deadline)
            pm.register(module, name=f"command:{ep.name}")
        except Exception as exc:
            _warn(f"{where} left out: {_describe(exc)}")
    offered: dict[str, list[tuple[str, Command]]] = {}
    for impl in pm.hook.toolwire_cli_commands.get_hookimpls():
        where = impl.plugin_name.removeprefix("command:")
        given: list[Any] = []
        try:
            _call(impl, {"register": given.append})
        except Exception as exc:
            _warn(f"commands `{where}` left out: toolwire_cli_commands raised {_describe(exc)}")
            continue
        for command in given:
            if not isinstance(command, Command):
                _warn(
                    f"commands `{where}`: registered a {type(command).__name__}, not a "
                    "toolwire.cli.Command; left out"
                )
            elif command.name in builtin:
                _warn(f"commands `{where}`: `{command.name}` is a built-in command; left out")
            else:
                offered.setdefault(command.name, []).append((where, command))
    commands: dict[str, Command] = {}
    for name, claims in offered.items():
        if len(claims) > 1:
            owners = ", ".join(sorted(w for w, _ in claims))
            _warn(f"`toolwire {name}` is added by {owners}; left out for both")
        else:
            commands[name] = claims[0][1]
    terminals = list(pm.hook.toolwire_cli_terminal.get_hookimpls())
    return commands, terminals


def _call(impl: Any, given: Mapping[str, Any]) -> Any:
    return impl.function(**{name: given[name] for name in impl.argnames})


def _builtin_names() -> frozenset[str]:
    from toolwire.cli.parser import _parser, _subparsers

    return frozenset(_subparsers(_parser()))


def plugin_commands(builtin: Collection[str] | None = None) -> dict[str, Command]:
    """The commands the installed distributions add, by name (``builtin``: the built-in
    commands' names, when the caller has its parser at hand)."""
    return _modules(builtin)[0]


def offer_terminal(terminal: Terminal) -> bool:
    """Offer ``terminal`` to every ``toolwire_cli_terminal``; True when one asks there."""
    asks = False
    for impl in _modules(None)[1]:
        try:
            asks = _call(impl, {"terminal": terminal}) is True or asks
        except Exception as exc:
            from toolwire._plugins.entrypoints import _describe

            where = impl.plugin_name.removeprefix("command:")
            _warn(f"commands `{where}`: toolwire_cli_terminal raised {_describe(exc)}")
    return asks
