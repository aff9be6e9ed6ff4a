"""The plugin host: entry-point discovery, isolation, and the typed facade over ``pm.hook``.

Nothing else in toolwire touches ``pm.hook.*``. The host resolves every hook
implementation once, into plain functions held by core ``HookSet`` objects
(one for policy plugins, one for everything else), so the per-call cost is a
function call and a clock read, and nothing at all when no plugin
implements a hook.

Lifecycle: ``discover()`` reads entry-point metadata (once per process) and
imports the policies; ``assemble()`` and ``hook_sets()`` import the tool
packs; ``provider(name)`` imports a provider when it is named.

The host's parts, one module each: ``loading`` (discovery, imports with a deadline,
isolation of broken plugins), ``registries`` (tool packs, providers, backends),
``calling`` (hook sets, results, audit, redaction) and ``policy_host`` (the policies
alone); this module holds the host itself and the process's default one.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from toolwire import hookspecs
from toolwire._compile import SchemaCompiler
from toolwire._errors import PluginError, PolicyError
from toolwire._exports import publish
from toolwire._hooks import HookSet, _close
from toolwire._plugins.calling import _Calling
from toolwire._plugins.discovery import (
    _KIND_RANK,
    PluginRecord,
    _Candidate,
)
from toolwire._plugins.entrypoints import (
    DEFAULT_IMPORT_TIMEOUT,
    DISABLE_POLICIES_ENV,
    ENTRY_POINT_GROUPS,
    POLICY_REQUIRED_ENV,
    PluginKind,
    _describe,
    _env_flag,
    _env_names,
    _env_timeout,
    _policies_off,
)
from toolwire._plugins.loading import _inert
from toolwire._plugins.policy_host import PolicyHost
from toolwire._plugins.registries import OFFICIAL_NAMES, _Mount
from toolwire._plugins.wrappers import (
    _ResultHook,
)
from toolwire._provider import Provider
from toolwire._tools import Tool
from toolwire._toolset import Toolset

__all__ = ["OFFICIAL_NAMES", "PluginHost", "PolicyHost", "get_host"]


class PluginHost(_Calling):
    """Discovers, loads and isolates plugins; the one typed facade over their hooks.

    Settings default to the environment: ``TOOLWIRE_AUTOLOAD_PLUGINS=0`` (read
    no entry points; register plugins yourself), ``TOOLWIRE_PLUGINS`` (allow-list
    of entry-point names, comma separated), ``TOOLWIRE_DISABLE_PLUGINS``
    (deny-list), ``TOOLWIRE_STRICT_PLUGINS=1`` (a plugin that fails is an
    error, not a skip), ``TOOLWIRE_HOOK_TIMEOUT`` (seconds per hook call, 5),
    ``TOOLWIRE_PLUGIN_IMPORT_TIMEOUT`` (seconds a plugin's import may take, 30:
    past it the plugin is reported as failed and left behind; a policy that does
    not load in time blocks every call).
    Built-in plugins are exempt from the allow-list, not from the deny-list.

    None of those switches removes an organisation policy: policies load whatever
    ``autoload``, the allow-list and the deny-list say. Turning a policy off is its
    own switch, ``TOOLWIRE_DISABLE_POLICIES`` (names, comma separated, or ``*`` for
    every policy; the argument ``disable_policies``): it is logged as a warning, shown
    by ``toolwire plugins``, sent to the policies' ``toolwire_audit`` hook, and refused
    (PolicyError) when ``TOOLWIRE_POLICY_REQUIRED=1`` (the argument
    ``policy_required``), which also blocks every tool call while no policy is in force.

    Use :meth:`hook_sets` when resolving a turn, so policies run first::

        host = toolwire.get_host()
        toolset = host.assemble(app_tools)
        turn = toolwire.resolve_turn(toolset, hooks=[*host.hook_sets(), *app_hooks])
    """

    def __init__(
        self,
        *,
        autoload: bool | None = None,
        strict: bool | None = None,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        hook_timeout: float | None = None,
        import_timeout: float | None = None,
        disable_policies: bool | Iterable[str] | None = None,
        policy_required: bool | None = None,
    ) -> None:
        self.policy_required = (
            _env_flag(POLICY_REQUIRED_ENV, False) if policy_required is None else policy_required
        )
        self.policies_off = _policies_off(disable_policies)
        if self.policies_off and self.policy_required:
            what = (
                "every policy" if "*" in self.policies_off else ", ".join(sorted(self.policies_off))
            )
            raise PolicyError(
                f"policies cannot be turned off ({what}) while the organisation requires a "
                f"policy ({POLICY_REQUIRED_ENV}=1): unset {DISABLE_POLICIES_ENV} "
                f"(or disable_policies)"
            )
        self.autoload = (
            _env_flag("TOOLWIRE_AUTOLOAD_PLUGINS", True) if autoload is None else autoload
        )
        self.strict = _env_flag("TOOLWIRE_STRICT_PLUGINS", False) if strict is None else strict
        self.allow = _env_names("TOOLWIRE_PLUGINS") if allow is None else frozenset(allow)
        self.deny = (
            (_env_names("TOOLWIRE_DISABLE_PLUGINS") or frozenset())
            if deny is None
            else frozenset(deny)
        )
        #: Where the deny-list came from, as its reason says it.
        self._deny_source = "TOOLWIRE_DISABLE_PLUGINS" if deny is None else "PluginHost(deny=...)"
        if hook_timeout is not None and not hook_timeout > 0:
            raise PluginError(f"hook_timeout must be a positive number, got {hook_timeout!r}")
        self.hook_timeout = _env_timeout() if hook_timeout is None else float(hook_timeout)
        if import_timeout is not None and not import_timeout > 0:
            raise PluginError(f"import_timeout must be a positive number, got {import_timeout!r}")
        self.import_timeout = (
            _env_timeout("TOOLWIRE_PLUGIN_IMPORT_TIMEOUT", DEFAULT_IMPORT_TIMEOUT)
            if import_timeout is None
            else float(import_timeout)
        )
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._lock = threading.RLock()
        self._discovered = False
        self._records: dict[tuple[str, str], PluginRecord] = {}
        self._pending: dict[str, list[_Candidate]] = {k: [] for k in ENTRY_POINT_GROUPS}
        self._kind: dict[str, PluginKind] = {}  # pluggy plugin name -> kind
        self._blocked: dict[str, str] = {}  # failed policy name -> reason (fail closed)
        self._notices: dict[str, str] = {}  # the same, as the model is told (no detail)
        self._off: set[str] = set()  # policies switched off (loaded for their audit hook)
        self._toolsets: dict[str, Toolset] = {}  # plugin name -> its group
        self._toolsets_of: set[str] = set()  # plugins whose toolsets were collected
        self._providers: dict[str, tuple[str, Callable[..., Provider]]] = {}
        self._schema_compilers: dict[str, SchemaCompiler] = {}
        self._providers_of: set[str] = set()
        self._backends: dict[str, tuple[str, Callable[..., Any]]] = {}
        self._backends_of: set[str] = set()
        self._backend_instances: dict[str, Any] = {}  # one shared instance per name
        self._mounts: dict[str, _Mount] = {}  # tool pack -> how assemble() mounts it
        self._sets: tuple[HookSet, HookSet] | None = None
        self._policy_set: HookSet | None = None
        self._result_hooks: tuple[_ResultHook, ...] | None = None

    def __repr__(self) -> str:
        loaded = [r.name for r in self._records.values() if r.status == "loaded"]
        return f"<PluginHost loaded={loaded} failures={len(self.failures)}>"

    # -- what the host knows ----------------------------------------------------------

    @property
    def plugins(self) -> tuple[PluginRecord, ...]:
        """Every plugin seen: discovered, loaded, failed or disabled, by kind then name."""
        return tuple(sorted(self._records.values(), key=lambda r: (_KIND_RANK[r.kind], r.name)))

    @property
    def failures(self) -> tuple[PluginRecord, ...]:
        """The plugins that failed to import, register or validate, with the reason."""
        return tuple(r for r in self.plugins if r.status == "failed")

    @property
    def blocked(self) -> tuple[str, ...]:
        """Why tool calls are blocked: one reason per policy that failed (empty: not blocked).

        For the operator (logs, ``toolwire plugins``): the reasons hold the error's text.
        """
        return tuple(self._blocked.values())

    @property
    def blocked_notices(self) -> tuple[str, ...]:
        """:attr:`blocked` as the model is told: each policy's name and the error's type,
        never its message (which may hold hosts, paths or credentials)."""
        return tuple(self._notices.values())

    def is_inert(self, record: PluginRecord) -> bool:
        """True when a loaded plugin says it has nothing to decide (a true
        ``toolwire_inert``, as toolwire-policy with no policy file): the host leaves its
        hooks out, and ``toolwire`` warns that such a policy checks nothing."""
        if record.status != "loaded":
            return False
        with self._lock:
            plugin = self._pm.get_plugin(record.name)
        return _inert(plugin)

    def plugin_status(self, record: PluginRecord) -> str | None:
        """The plugin's own status line: what its ``status()`` function returns.

        A loaded plugin (module or object) may define ``status() -> str``
        to say how it is configured (the policy plugin: which policy file is
        in force, or that it found none). None when the plugin is not loaded
        or has no ``status()``. A ``status()`` that raises or returns
        something other than a string is reported in the line, never raised.
        """
        if record.status != "loaded":
            return None
        with self._lock:
            plugin = self._pm.get_plugin(record.name)
        fn = getattr(plugin, "status", None) if plugin is not None else None
        if not callable(fn):
            return None
        try:
            out = fn()
        except Exception as exc:
            return f"status() failed: {_describe(exc)}"
        if inspect.isawaitable(out):
            _close(out)
            return "status() is async; it must be a sync function returning a string"
        if out is None:
            return None
        if not isinstance(out, str):
            return f"status() returned {type(out).__name__}; expected a string"
        return out

    def plugin_lint(self, record: PluginRecord, tools: Iterable[Tool[Any, Any]]) -> tuple[str, ...]:
        """What the plugin's own ``lint(tools)`` finds wrong with itself against ``tools``
        (the assembled catalogue): one line per finding, as a policy's rule that names no
        tool (``deny = ['git_git_reset'] matches nothing (did you mean git_reset?)``).

        A loaded plugin may define ``lint(tools) -> list[str]``; ``toolwire plugins``,
        ``toolwire chat`` and ``toolwire mcp serve`` say what it returns as warnings. A
        ``lint()`` that raises or returns something else is reported in a line, never raised.
        """
        if record.status != "loaded":
            return ()
        with self._lock:
            plugin = self._pm.get_plugin(record.name)
        fn = getattr(plugin, "lint", None) if plugin is not None else None
        if not callable(fn):
            return ()
        try:
            out = fn(list(tools))
        except Exception as exc:
            return (f"lint() failed: {_describe(exc)}",)
        if inspect.isawaitable(out):
            _close(out)
            return ("lint() is async; it must be a sync function returning a list of strings",)
        if out is None:
            return ()
        if not isinstance(out, (list, tuple)) or not all(isinstance(x, str) for x in out):
            return (f"lint() returned {type(out).__name__}; expected a list of strings",)
        return tuple(out)

    def policies_only(self) -> PolicyHost:
        """This host without its tool packs: what ``plugins=False`` means (tool packs
        drop out; the policies keep deciding, hiding, redacting and auditing)."""
        return PolicyHost(self)


# -- the default host --------------------------------------------------------------------

_DEFAULT: PluginHost | None = None
_DEFAULT_LOCK = threading.Lock()


def get_host() -> PluginHost:
    """The process's default host, created (and its policies loaded) on first use."""
    global _DEFAULT
    host = _DEFAULT
    if host is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = PluginHost().discover()
            host = _DEFAULT
    return host


publish(globals())
