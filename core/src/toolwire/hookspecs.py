"""The toolwire hook specifications, and the ``hookimpl`` marker plugins use.

A plugin is a module (or any object) with functions named after these hooks,
marked with ``@toolwire.hookimpl``. It is found through one of four
entry-point groups: ``toolwire.toolsets`` (tool packs), ``toolwire.policies``
(organisation policies), ``toolwire.providers`` (provider adapters) and
``toolwire.backends`` (executor backends); a fifth, ``toolwire.commands``, names
the modules that add commands to the ``toolwire`` command line (the two
``toolwire_cli_*`` hooks, and only those)::

    # pyproject.toml
    [project.entry-points."toolwire.toolsets"]
    weather = "toolwire_weather"

    # toolwire_weather.py
    from toolwire import Toolset, hookimpl

    @hookimpl
    def toolwire_register_toolsets(register):
        register(Toolset("weather", [get_weather]))

An implementation may take any subset of the hook's parameters, by name.
Implementations of ``toolwire_tool_decision`` and ``toolwire_tool_result``
may be ``async def``: the host awaits them itself. The others must be sync.

The hook reference in ``docs/hooks.md`` is generated from this module:
``python -m toolwire.hookspecs > docs/hooks.md``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import pluggy

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from toolwire._audit_trail import AuditTrail
    from toolwire._backends import ToolBackend
    from toolwire._calls import ToolResult, TypedCall
    from toolwire._command import Command, Terminal
    from toolwire._compile import SchemaCompiler
    from toolwire._hooks import AuditEvent, Hidden, HookContext, ToolDecision
    from toolwire._provider import Provider
    from toolwire._tools import Tool
    from toolwire._toolset import Toolset

__all__ = [
    "PROJECT",
    "RegisterAuditTrail",
    "RegisterBackend",
    "RegisterCommand",
    "RegisterProvider",
    "RegisterToolset",
    "hookimpl",
    "hookspec",
]

PROJECT = "toolwire"
"""The pluggy project name: every hook is named ``toolwire_*``."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks a hook specification (used by this module only)."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a hook implementation: ``@toolwire.hookimpl`` (``tryfirst=True``/``trylast=True``)."""


class RegisterToolset(Protocol):
    """The ``register`` callback passed to ``toolwire_register_toolsets``."""

    def __call__(self, toolset: Toolset, *, off: bool = False, prefix: str = "") -> None: ...


class RegisterProvider(Protocol):
    """The ``register`` callback passed to ``toolwire_register_providers``."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., Provider],
        *,
        schema_compiler: SchemaCompiler | None = None,
    ) -> None: ...


class RegisterBackend(Protocol):
    """The ``register`` callback passed to ``toolwire_register_backends``."""

    def __call__(self, name: str, factory: Callable[..., ToolBackend]) -> None: ...


class RegisterAuditTrail(Protocol):
    """The ``register`` callback passed to ``toolwire_audit_trails``."""

    def __call__(self, trail: AuditTrail) -> None: ...


class RegisterCommand(Protocol):
    """The ``register`` callback passed to ``toolwire_cli_commands``."""

    def __call__(self, command: Command) -> None: ...


# -- registration ------------------------------------------------------------------


@hookspec
def toolwire_register_toolsets(register: RegisterToolset) -> None:
    """Contribute toolsets: a tool pack's tools, nested into the application's toolset.

    Calling rule: called once per plugin, the first time the host assembles a
    toolset (``PluginHost.assemble``). Every toolset registered by a plugin is
    nested into a group named after the plugin, which is nested into the
    application's parent toolset. The return value is ignored.

    A plugin whose implementation raises, registers something that is not a
    Toolset, or whose tools collide with tools already assembled is skipped,
    unregistered and recorded (``toolwire plugins`` shows why);
    ``TOOLWIRE_STRICT_PLUGINS=1`` makes that an error.

    :param register: ``register(toolset, *, off=False, prefix="")``.
        ``toolset`` is a :class:`toolwire.Toolset`; ``off=True`` hides all its
        tools from the default availability (a turn must ask for them);
        ``prefix`` is prepended to each tool's wire name (``"fs_"``).

    Added in 0.1.
    """


@hookspec
def toolwire_register_providers(register: RegisterProvider) -> None:
    """Contribute provider adapters, by name.

    Calling rule: called once per plugin, when a provider is first looked up
    (``PluginHost.provider(name)``). A provider plugin is imported only when a
    provider is named: first the entry point of that name, then the others.
    The return value is ignored.

    A plugin whose implementation raises, or registers a name that is already
    taken or a factory that is not callable, is skipped and recorded.

    :param register: ``register(name, factory, *, schema_compiler=None)``. ``name``
        is what users pass (``"openai"``); ``factory(**options)`` returns a
        :class:`toolwire.adapters.Provider` (``model=...`` is always accepted);
        ``schema_compiler`` is the provider's :class:`toolwire.schema.SchemaCompiler`,
        which ``toolwire check --provider NAME`` and ``PluginHost.schema_compiler(name)``
        use (``schema_compiler`` is new in 0.2).

    Added in 0.1.
    """


@hookspec
def toolwire_register_backends(register: RegisterBackend) -> None:
    """Contribute executor backends (where tool bodies run), by name.

    Calling rule: called once per plugin, when a backend is first looked up
    (``Executor(backend="NAME")``, ``TOOLWIRE_BACKEND=NAME``, ``toolwire chat
    --backend NAME``, ``PluginHost.backend(name)``). A backend plugin (entry-point
    group ``toolwire.backends``) is imported only then: first the entry point of
    that name, then the others. The return value is ignored.

    A plugin whose implementation raises, or registers a name that is already
    taken, ``inprocess``, or a factory that is not callable, is skipped and recorded.

    :param register: ``register(name, factory)``. ``factory(**options)`` returns a
        :class:`toolwire.ToolBackend`; called without options it makes the host's
        shared instance.

    Added in 0.2.
    """


# -- per call and per turn ---------------------------------------------------------


@hookspec
def toolwire_tool_decision(
    call: TypedCall[object], context: HookContext
) -> ToolDecision | Awaitable[ToolDecision | None] | None:
    """Decide what happens to one decoded tool call before it runs.

    Calling rule: a pipeline. Every implementation is a decision hook; the
    order is policy plugins first, then tool-pack plugins, then the hook sets
    the application passes, then the toolsets' own hook sets (``tryfirst`` /
    ``trylast`` order implementations within their group). ``RunNormally``
    (or None) continues, threading an edited input to the next hook; the
    first ``Complete`` or ``Reject`` ends the pipeline, so a tool pack can
    never answer a call that a policy rejected. May be ``async def``.

    An implementation that raises, returns something that is not a decision,
    or runs longer than its budget (``TOOLWIRE_HOOK_TIMEOUT`` seconds, 5 by
    default) rejects the call with a reason naming the plugin. Sync hooks
    that have no opinion are timed together while they stay within the
    smallest of their budgets; the first time such a stretch takes longer,
    the call is rejected naming them all, and they are timed one by one from
    then on. A policy plugin that failed to load rejects every call (fail
    closed).

    :param call: the call, with its tool (``call.tool``), metadata and
        validated input (``call.input``), as edited by earlier hooks.
    :param context: the turn's application, session, provider and model, and
        the application's own ``extra`` mapping.
    :returns: ``RunNormally(input)``, ``Complete(output)``, ``Reject(reason)``
        or None (run normally, unchanged).

    Added in 0.1.
    """


@hookspec
def toolwire_tool_description(
    tool: Tool[object, object], description: str, context: HookContext
) -> str | None:
    """Rewrite the description a tool is offered with, for one turn.

    Calling rule: threads, when a turn is resolved: each implementation gets
    the description as the previous one left it; policy plugins first, then
    tool packs, then the application's hook sets. Per-turn description
    overrides apply last. Must be sync. An implementation that raises is
    logged and leaves the description unchanged.

    :param tool: the tool, under its wire name.
    :param description: the current description.
    :param context: the turn's context.
    :returns: the new description, or None to keep it.

    Added in 0.1.
    """


@hookspec
def toolwire_tool_availability(
    tool: Tool[object, object], context: HookContext
) -> Hidden | bool | None:
    """Say whether a tool is offered in a turn.

    Calling rule: all implementations, when a turn is resolved, in the same
    order as decisions; the first False hides the tool. Must be sync. An
    implementation that raises hides the tool (fail closed).

    :param tool: the tool, under its wire name.
    :param context: the turn's context.
    :returns: False, or ``toolwire.Hidden(reason)`` to say why (a call the model makes
        to it anyway is answered and audited with the reason), to hide the tool; True or
        None to leave it offered.

    Added in 0.1.
    """


@hookspec
def toolwire_tool_result(
    call: TypedCall[object], result: ToolResult, context: HookContext
) -> ToolResult | Awaitable[ToolResult | None] | None:
    """Observe, redact or audit a tool's result before it is committed.

    Calling rule: threads, after a call ran (or was answered by a hook):
    tool-pack plugins first, then policy plugins, so a policy has the last
    word on what reaches the model and audits what is actually committed.
    Each implementation gets the result as the previous one left it; a
    returned ToolResult replaces it. May be ``async def``.

    A returned result must answer the same call (same call id, tool name and
    argument text). From a tool pack, a result for another call, another
    type, an exception or an overrun of the time budget is ignored and
    logged. From a policy it withholds the result (fail closed): the call is
    answered with an error result naming the policy instead.

    :param call: the call the result answers.
    :param result: the result so far.
    :param context: the turn's context.
    :returns: a replacement ToolResult, or None to keep the result.

    Added in 0.1.
    """


@hookspec
def toolwire_audit(event: AuditEvent, context: HookContext) -> None:
    """Record an attempt on a tool that no decision hook saw, or a policy switched off.

    Calling rule: every implementation, for each event; sync only. toolwire calls it
    for each call it answers itself (a tool that does not exist, one not offered this
    round, one an availability hook hid, arguments that do not validate), for each call
    the executor let run that ended with no result (``cancelled``: the caller was
    cancelled; ``event.call`` is the model's call, so a policy frees what it holds for
    it), and once per process for each policy turned off by ``TOOLWIRE_DISABLE_POLICIES`` (or
    ``PluginHost(disable_policies=...)``), so an audit log written from this hook and
    from ``toolwire_tool_decision`` / ``toolwire_tool_result`` holds every attempt. A
    policy that is switched off still receives this hook. An implementation that
    raises or returns something is logged; the attempt is refused all the same.

    :param event: what happened: ``event.kind``, the tool and call id, the raw argument
        text (hash it; it may hold secrets), the reason and who decided.
    :param context: the turn's context (empty for ``policies_off``).
    :returns: None.

    Added in 0.2.
    """


@hookspec
def toolwire_audit_trails(register: RegisterAuditTrail) -> None:
    """Offer the audit logs this policy writes to be read (the approval console's
    audit page, with its chain verified).

    Calling rule: asked of policy plugins only (those of ``toolwire.policies``; a
    tool pack's implementation is never called), when something that shows audit
    logs asks :meth:`PluginHost.audit_trails`; sync only. An implementation that
    raises, or registers something that is not a
    :class:`toolwire.approvals.AuditTrail`, is logged and its trails left out.
    The return value is ignored.

    :param register: ``register(trail)``: a :class:`toolwire.approvals.AuditTrail`
        (its name, who may read it, its newest records, and its chain checked).

    Added in 0.2.
    """


@hookspec
def toolwire_redact_arguments(
    tool: Tool[object, object], arguments: dict[str, object], context: HookContext
) -> dict[str, object] | None:
    """Hide argument values from a record kept outside the policies' own audit (the
    CLI's conversation log, an application's logs): a policy redacts there what it
    redacts in its audit log.

    Calling rule: pipeline, sync only: tool packs first, then policies; each
    implementation gets the arguments as the previous one left them and returns a
    redacted copy (or None to leave them). The call itself is unchanged: this decides
    only what a record keeps. An implementation that raises, is async, overruns the time
    budget or returns something other than a dict makes the record keep no arguments
    at all (fail closed), and is logged.

    :param tool: the tool called.
    :param arguments: the call's arguments (JSON data) as the previous hook left them.
    :param context: the turn's context.
    :returns: the arguments with values replaced (``"[REDACTED]"``), or None.

    Added in 0.2.
    """


# -- the command line ------------------------------------------------------------


@hookspec
def toolwire_cli_commands(register: RegisterCommand) -> None:
    """Contribute commands to the ``toolwire`` command line (``toolwire mcp ...``).

    Calling rule: implemented by the modules of the entry-point group
    ``toolwire.commands`` (only those: a tool pack's module is not asked). Called
    once per process, when the command line lists its commands (``toolwire
    --help``, completion, a word that is not a built-in command) or runs one of
    theirs; never for a built-in command. The modules are imported then, so they
    must be light: import the distribution's machinery inside ``Command.run``.
    The return value is ignored.

    A module that fails to import, an implementation that raises, a command that
    is not a :class:`toolwire.cli.Command`, or one whose name a built-in command
    has, is left out with a warning naming it; a name two distributions give is
    left out for both. Every other command works.

    :param register: ``register(command)``: a :class:`toolwire.cli.Command`
        (its name, its one-line help, a function adding its arguments to its
        ``argparse`` parser, the function that runs it, and where completion
        finds an option's values).

    Added in 0.2.
    """


@hookspec
def toolwire_cli_terminal(terminal: Terminal) -> bool | None:
    """Take what the command line offers before ``toolwire call`` or ``toolwire chat``
    runs tools: a printer for progress and, at a terminal, a way to ask its user.

    Calling rule: implemented by the modules of ``toolwire.commands``; called once
    per run of those commands, before any tool runs. toolwire-mcp installs them
    as its progress and elicitation handlers.

    :param terminal: a :class:`toolwire.cli.Terminal`: ``progress(event)`` prints
        one line on stderr; ``ask(request)`` (None when stdin is not a terminal)
        asks for each field of a form.
    :returns: True when questions will be asked at the terminal.

    Added in 0.2.
    """


# -- the reference ---------------------------------------------------------------


def _hooks() -> list[Callable[..., object]]:
    module = sys.modules[__name__]
    return [
        fn for name, fn in vars(module).items() if name.startswith(f"{PROJECT}_") and callable(fn)
    ]


def reference() -> str:
    """The hook reference (Markdown) generated from these hookspecs' docstrings."""
    lines = [
        "# Hook reference",
        "",
        "<!-- Generated by `python -m toolwire.hookspecs > docs/hooks.md`; do not edit. -->",
        "",
        inspect.cleandoc(__doc__ or "").split("\n\n")[0].replace("``", "`"),
        "",
        "Implement a hook with `@toolwire.hookimpl` on a function of the same name;",
        "an implementation may take any subset of the parameters, by name.",
        "",
    ]
    for fn in _hooks():
        sig = str(inspect.signature(fn)).replace("'", "")
        lines += [f"## `{fn.__name__}`", "", "```python", f"def {fn.__name__}{sig}", "```", ""]
        lines += [_markdown(inspect.cleandoc(fn.__doc__ or "")), ""]
    # Only the docstrings' RST literals (``x``) become Markdown ones (`x`): the code
    # fences (```python) are left whole.
    return "\n".join(lines).rstrip() + "\n"


def _markdown(doc: str) -> str:
    out: list[str] = []
    for line in doc.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(":param "):
            name, _, text = stripped[len(":param ") :].partition(":")
            out.append(f"- `{name}`: {text.strip()}")
        elif stripped.startswith(":returns:"):
            out.append(f"- returns: {stripped[len(':returns:') :].strip()}")
        elif line.startswith("    ") and out and out[-1].startswith("- "):
            out[-1] += " " + stripped
        else:
            out.append(line)
    return "\n".join(out).replace(":class:", "").replace("``", "`")


if __name__ == "__main__":
    sys.stdout.write(reference())
