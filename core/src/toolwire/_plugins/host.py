"""The plugin host: entry-point discovery, isolation, and the typed facade over ``pm.hook``.

Nothing else in toolwire touches ``pm.hook.*``. The host resolves every hook
implementation once, into plain functions held by core ``HookSet`` objects
(one for policy plugins, one for everything else), so the per-call cost is a
function call and a clock read, and nothing at all when no plugin
implements a hook.

Lifecycle: ``discover()`` reads entry-point metadata (once per process) and
imports the policies; ``assemble()`` and ``hook_sets()`` import the tool
packs; ``provider(name)`` imports a provider when it is named.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import pluggy

from toolwire import hookspecs
from toolwire._calls import ToolResult, TypedCall
from toolwire._compile import SchemaCompiler
from toolwire._errors import PluginError, PolicyError, UsageError
from toolwire._exports import publish
from toolwire._hooks import AuditEvent, HookContext, HookSet, _close
from toolwire._plugins.discovery import (
    _BUILTINS,
    _CORE_DISTRIBUTION,
    _KIND_RANK,
    _PROVIDER_NAME,
    PluginRecord,
    _Candidate,
    _dist_of,
    _version,
)
from toolwire._plugins.entrypoints import (
    DEFAULT_IMPORT_TIMEOUT,
    DISABLE_POLICIES_ENV,
    ENTRY_POINT_GROUPS,
    IMPORTER,
    POLICY_REQUIRED_ENV,
    ImportTimeout,
    PluginKind,
    _describe,
    _entry_points,
    _env_flag,
    _env_names,
    _env_timeout,
    _policies_off,
)
from toolwire._plugins.wrappers import (
    _ASYNC_OK,
    _availability_hook,
    _blocker,
    _decision_hook,
    _description_hook,
    _ResultHook,
    _withheld,
)
from toolwire._provider import Provider
from toolwire._tools import Tool
from toolwire._toolset import Toolset, wire_name

logger = logging.getLogger("toolwire.plugins")

# -- the host -------------------------------------------------------------------------


#: The provider and backend names the official distributions register, and which one.
OFFICIAL_NAMES: Mapping[str, str] = {
    "openai": "toolwire-openai",
    "openai-responses": "toolwire-openai",
    "openrouter": "toolwire-openai",
    "openai-compatible": "toolwire-openai",
    "anthropic": "toolwire-anthropic",
    "gemini": "toolwire-gemini",
    "ray": "toolwire-ray",
}


class PluginHost:
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

    # -- discovery and loading -------------------------------------------------------

    def discover(self) -> PluginHost:
        """Read entry points (once per process) and load the policies; idempotent."""
        with self._lock:
            if self._discovered:
                return self
            self._discovered = True
            for kind, group in ENTRY_POINT_GROUPS.items():
                # Autoload off reads no tool pack, provider or backend; policies load always.
                if self.autoload or kind == "policy":
                    for ep in _entry_points().get(group, ()):
                        self._add_candidate(kind, ep)
            for kind, name, module in _BUILTINS:
                if (kind, name) in self._records or name in self.deny:
                    continue
                record = PluginRecord(kind, name, _CORE_DISTRIBUTION, _version(), module)
                self._records[(kind, name)] = record
                self._pending[kind].append(
                    _Candidate(record, functools.partial(importlib.import_module, module))
                )
            self._load_pending("policy")
            self._check_required()
            return self

    def _check_required(self) -> None:
        """With ``policy_required``, no policy in force blocks every call (fail closed)."""
        live = any(
            r.kind == "policy" and r.status == "loaded" and not self.is_inert(r)
            for r in self._records.values()
        )
        key = f"({POLICY_REQUIRED_ENV})"
        if self.policy_required and not live and key not in self._blocked:
            self._blocked[key] = (
                f"{POLICY_REQUIRED_ENV}=1 is set and no organisation policy is in force, so "
                f"tool calls are blocked: install and configure one"
            )
            self._notices[key] = "no organisation policy is in force, so tool calls are blocked"
            self._invalidate()
        elif live and key in self._blocked:
            del self._blocked[key]
            del self._notices[key]
            self._invalidate()

    def _is_off(self, kind: str, name: str) -> bool:
        return kind == "policy" and ("*" in self.policies_off or name in self.policies_off)

    def _add_candidate(self, kind: PluginKind, ep: Any) -> None:
        dist_name, dist_version = _dist_of(getattr(ep, "dist", None))
        record = PluginRecord(kind, ep.name, dist_name, dist_version, ep.value)
        prior = self._records.get((kind, ep.name))
        if prior is not None:
            self._fail(
                record,
                f"was skipped: the name `{ep.name}` is already used by {prior.label()} in "
                f"`{ENTRY_POINT_GROUPS[kind]}`; rename one of the entry points",
                key=(kind, f"{ep.name} ({record.distribution})"),
            )
            return
        is_builtin = record.distribution == _CORE_DISTRIBUTION
        if ep.name in self.deny and kind == "policy":
            # The deny-list selects tool packs and providers; a policy stays on.
            logger.warning(
                "policy %s is listed in %s, which does not turn a policy off: it stays in "
                "force (turning it off is %s=%s)",
                record.label(),
                self._deny_source,
                DISABLE_POLICIES_ENV,
                ep.name,
            )
        elif ep.name in self.deny:
            self._records[(kind, ep.name)] = attrs.evolve(
                record, status="disabled", reason=f"listed in {self._deny_source}"
            )
            return
        # The allow-list narrows tool packs and providers; it never removes a policy (an
        # organisation's policy must not vanish because an unrelated list left it out).
        if (
            self.allow is not None
            and ep.name not in self.allow
            and not is_builtin
            and kind != "policy"
        ):
            self._records[(kind, ep.name)] = attrs.evolve(
                record, status="disabled", reason="not listed in TOOLWIRE_PLUGINS"
            )
            return
        self._records[(kind, ep.name)] = record
        self._pending[kind].append(_Candidate(record, ep.load))

    def _load_pending(self, kind: str, only: str | None = None) -> None:
        pending = self._pending[kind]
        for cand in list(pending):
            if only is not None and cand.record.name != only:
                continue
            pending.remove(cand)
            self._load(cand)

    def _load(self, cand: _Candidate) -> None:
        record = cand.record
        try:
            obj = IMPORTER.load(cand.load, self.import_timeout)
        except ImportTimeout as exc:
            logger.warning("plugin %s: %s; it was left behind", record.label(), exc)
            self._fail(record, f"was not loaded: {exc} (TOOLWIRE_PLUGIN_IMPORT_TIMEOUT)", exc)
            return
        except (Exception, SystemExit, GeneratorExit) as exc:  # sys.exit() at import included
            self._fail(record, f"failed to import `{record.value}`: {_describe(exc)}", exc)
            return
        self._add_plugin(obj, record)

    def register(
        self, plugin: object, name: str | None = None, *, kind: PluginKind = "toolset"
    ) -> None:
        """Register a plugin object directly (tests, applications), as if discovered.

        It is validated as an entry-point plugin would be; a failure is recorded
        and, in strict mode, raised. A failing ``kind="policy"`` plugin blocks
        every tool call (fail closed).
        """
        if kind not in ENTRY_POINT_GROUPS:
            raise UsageError(f"kind must be one of {sorted(ENTRY_POINT_GROUPS)}, got {kind!r}")
        with self._lock:
            self.discover()
            name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
            module = getattr(plugin, "__module__", None) or getattr(plugin, "__name__", "")
            record = PluginRecord(kind, name, "", "", str(module))
            if (kind, name) in self._records:
                raise PluginError(
                    f"a {kind} plugin named `{name}` is already registered; pass another name",
                    plugin=name,
                )
            self._records[(kind, name)] = record
            self._add_plugin(plugin, record)

    def _add_plugin(self, obj: object, record: PluginRecord) -> None:
        name = record.name
        pm = self._pm
        if pm.is_registered(obj):
            # The same module behind two entry points (a policy that also ships tools).
            existing = pm.get_name(obj)
            assert existing is not None
            if _KIND_RANK[record.kind] < _KIND_RANK[self._kind[existing]]:
                self._kind[existing] = record.kind
            self._loaded(record)
            return
        if pm.get_plugin(name) is not None:
            self._fail(record, f"another plugin is already registered as `{name}`")
            return
        try:
            pm.register(obj, name=name)
        except Exception as exc:
            self._fail(record, f"does not match the toolwire hookspecs: {_describe(exc)}", exc)
            return
        problems = self._validate(obj)
        if problems:
            pm.unregister(obj)
            self._fail(record, "; ".join(problems))
            return
        self._kind[name] = record.kind
        self._loaded(record)

    def _loaded(self, record: PluginRecord) -> None:
        if not self._is_off(record.kind, record.name):
            self._records[(record.kind, record.name)] = attrs.evolve(record, status="loaded")
            self._invalidate()
        else:
            # Loaded for its audit hook only: none of its other hooks runs.
            self._off.add(record.name)
            self._records[(record.kind, record.name)] = attrs.evolve(
                record, status="disabled", reason=_OFF_REASON
            )
            self._invalidate()
            reason = (
                f"policy `{record.name}` is turned off by {DISABLE_POLICIES_ENV}: "
                f"it checks no tool call in this process"
            )
            logger.warning("%s", reason)
            self.audit(AuditEvent("policies_off", reason, source=DISABLE_POLICIES_ENV))
        if record.kind == "policy" and self._discovered:
            self._check_required()

    def _validate(self, obj: object) -> list[str]:
        problems: list[str] = []
        known = [fn.__name__ for fn in hookspecs._hooks()]
        for caller in self._pm.get_hookcallers(obj) or ():
            if caller.spec is None:
                close = difflib.get_close_matches(caller.name, known, n=1)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                problems.append(f"implements `{caller.name}`, which is not a toolwire hook{hint}")
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is not obj:
                    continue
                if impl.hookwrapper or impl.wrapper:
                    problems.append(f"`{caller.name}` cannot be a hook wrapper")
                elif inspect.iscoroutinefunction(impl.function) and caller.name not in _ASYNC_OK:
                    problems.append(f"`{caller.name}` must be sync, got an `async def`")
        return problems

    def _fail(
        self,
        record: PluginRecord,
        reason: str,
        exc: BaseException | None = None,
        *,
        key: tuple[str, str] | None = None,
    ) -> None:
        """Record a failure; raise in strict mode; a failed policy blocks every call.

        Without ``key`` the plugin is the one registered under ``record.name``,
        and it is unregistered along with everything it contributed.
        """
        if key is None:
            key = (record.kind, record.name)
            plugin = self._pm.get_plugin(record.name)
            if plugin is not None:
                self._forget(record.name, plugin)
        if self._is_off(record.kind, record.name):
            # Switched off: it checks nothing either way, so its failure blocks nothing.
            self._records[key] = attrs.evolve(
                record,
                status="disabled",
                reason=f"{_OFF_REASON}; it also {reason}",
            )
            logger.warning("policy %s is turned off, and it %s", record.label(), reason)
            return
        if key not in self._records or self._records[key].status != "failed":
            self._records[key] = attrs.evolve(record, status="failed", reason=reason)
        kind_label = "policy" if record.kind == "policy" else f"{record.kind} plugin"
        message = f"{kind_label} {record.label()} {reason}"
        if record.kind == "policy" and not self._is_off(record.kind, record.name):
            self._blocked[record.name] = (
                f"policy {record.label()} failed to load, so tool calls are blocked: {reason}"
            )
            what = f" ({type(exc).__name__})" if exc is not None else ""
            self._notices[record.name] = (
                f"policy `{record.name}` failed to load{what}, so tool calls are blocked"
            )
            self._invalidate()
        if self.strict:
            cls = PolicyError if record.kind == "policy" else PluginError
            raise cls(
                message + " (TOOLWIRE_STRICT_PLUGINS is set)",
                plugin=record.name,
                distribution=record.distribution,
            ) from exc
        logger.warning("skipped %s", message)

    def _forget(self, name: str, plugin: object) -> None:
        self._pm.unregister(plugin)
        self._kind.pop(name, None)
        self._off.discard(name)
        self._toolsets.pop(name, None)
        self._toolsets_of.discard(name)
        for pname, (owner, _) in list(self._providers.items()):
            if owner == name:
                del self._providers[pname]
                self._schema_compilers.pop(pname, None)
        for bname, (owner, _) in list(self._backends.items()):
            if owner == name:
                del self._backends[bname]
                self._backend_instances.pop(bname, None)
        self._invalidate()

    def _invalidate(self) -> None:
        self._sets = None
        self._policy_set = None
        self._result_hooks = None

    def _record_of(self, plugin_name: str) -> PluginRecord:
        kind = self._kind.get(plugin_name, "toolset")
        found = self._records.get((kind, plugin_name))
        return found or PluginRecord(kind, plugin_name, "", "", "")

    def _impls(self, hook: str, plugin_name: str | None = None) -> list[Any]:
        """Hook implementations in call order (pluggy's: tryfirst first, then LIFO)."""
        caller = getattr(self._pm.hook, hook)
        impls = list(reversed(caller.get_hookimpls()))
        if plugin_name is None:
            return impls
        return [i for i in impls if i.plugin_name == plugin_name]

    def _live_impls(self, hook: str) -> list[Any]:
        """As :meth:`_impls`, without the plugins that say they have nothing to decide
        (a true ``toolwire_inert``, as a policy with no policy file): their hooks would
        answer None every time, and leaving them out keeps the hook sets and the result
        pipeline empty."""
        off = self._off
        return [i for i in self._impls(hook) if not _inert(i.plugin) and i.plugin_name not in off]

    # -- toolsets --------------------------------------------------------------------

    def _ensure_toolsets(self) -> None:
        self.discover()
        self._load_pending("toolset")
        for plugin_name in list(self._kind):
            if plugin_name not in self._toolsets_of:
                self._collect_toolsets(plugin_name)

    def _collect_toolsets(self, plugin_name: str) -> None:
        self._toolsets_of.add(plugin_name)
        record = self._record_of(plugin_name)
        group = Toolset(plugin_name, description=f"tools from plugin {plugin_name}")
        count = 0

        def register(toolset: Toolset, *, off: bool = False, prefix: str = "") -> None:
            nonlocal count
            if not isinstance(toolset, Toolset):
                raise PluginError(
                    f"register() takes a toolwire.Toolset, got {type(toolset).__name__}; "
                    f"wrap tools as Toolset('name', [tool, ...])",
                    plugin=plugin_name,
                )
            if not isinstance(off, bool):
                raise PluginError(
                    f"off must be a bool, got {type(off).__name__}", plugin=plugin_name
                )
            if not isinstance(prefix, str):
                raise PluginError(
                    f"prefix must be a string, got {type(prefix).__name__}", plugin=plugin_name
                )
            group.add(toolset, off=off, prefix=prefix)
            count += 1

        try:
            for impl in self._impls("toolwire_register_toolsets", plugin_name):
                out = impl.function(**dict.fromkeys(impl.argnames, register))
                if inspect.isawaitable(out):
                    _close(out)
                    raise PluginError("toolwire_register_toolsets must be sync")
            if count:
                len(group)  # assemble now: a collision inside the plugin fails the plugin
        except Exception as exc:
            self._fail(record, f"failed to register its toolsets: {_describe(exc)}", exc)
            return
        if count:
            self._toolsets[plugin_name] = group

    def mount(
        self,
        plugin: str,
        *,
        prefix: str = "",
        off: bool = False,
        only: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        enabled: bool = True,
    ) -> PluginHost:
        """How :meth:`assemble` mounts the tool pack ``plugin`` (its entry-point name):
        under ``prefix``, ``off`` by default, ``only`` some of its tools or ``exclude``
        some (names as the pack registers them), or not at all (``enabled=False``).
        Returns the host. Nothing is checked against the pack here: it may not be
        imported yet."""
        if not isinstance(plugin, str) or not plugin:
            raise UsageError(f"mount() takes a tool pack's name, got {plugin!r}")
        if not isinstance(prefix, str):
            raise UsageError(f"prefix must be a string, got {type(prefix).__name__}")
        kept = None if only is None else _tool_names(only, "only")
        with self._lock:
            self._mounts[plugin] = _Mount(
                prefix, bool(off), kept, _tool_names(exclude, "exclude"), bool(enabled)
            )
        return self

    def assemble(self, toolset: Toolset | None = None) -> Toolset:
        """The application's parent toolset: its tools, then each tool pack's, by plugin.

        Tool packs are imported here (the first time). Each plugin's toolsets are nested
        under a toolset named after the plugin, mounted as :meth:`mount` says. A pack's
        tool whose name collides with a tool already assembled is left out (that tool
        only, with a warning that says how to keep it: mount the pack under a prefix).
        """
        with self._lock:
            self._ensure_toolsets()
            if toolset is not None and not isinstance(toolset, Toolset):
                raise UsageError(f"assemble() takes a Toolset, got {type(toolset).__name__}")
            parent = Toolset(toolset.name if toolset is not None else "tools")
            taken: dict[str, str] = {}
            if toolset is not None:
                parent.add(toolset)
                taken = {s.name: toolset.source(s.name) for s in toolset.all()}
            for plugin_name in sorted(self._toolsets):
                group = self._toolsets[plugin_name]
                if toolset is not None and _holds(toolset, group):
                    continue  # assembled already (assemble is idempotent)
                mount = self._mounts.get(plugin_name, _MOUNT)
                if not mount.enabled:
                    continue
                names = [
                    s.name
                    for s in group.all()
                    if (mount.only is None or s.name in mount.only) and s.name not in mount.exclude
                ]
                clash = [n for n in names if wire_name(mount.prefix + n) in taken]
                for name in clash:
                    wire = wire_name(mount.prefix + name)
                    logger.warning(
                        "tool pack %s: its tool `%s` (from `%s`) collides with `%s` from `%s` "
                        "and was left out; to keep it, mount the pack under a prefix: "
                        "host.mount(%r, prefix='%s_')",
                        self._record_of(plugin_name).label(),
                        wire,
                        group.source(name),
                        wire,
                        taken[wire],
                        plugin_name,
                        plugin_name,
                    )
                parent.add(
                    group,
                    off=mount.off,
                    prefix=mount.prefix,
                    only=mount.only,
                    exclude=mount.exclude | frozenset(clash),
                )
                for name in names:
                    if name not in clash:
                        taken[wire_name(mount.prefix + name)] = (
                            f"{parent.name}/{group.source(name)}"
                        )
            return parent

    # -- providers -------------------------------------------------------------------

    def _collect_providers(self, plugin_name: str) -> None:
        self._providers_of.add(plugin_name)
        record = self._record_of(plugin_name)
        added: list[str] = []

        def register(
            name: str,
            factory: Callable[..., Provider],
            *,
            schema_compiler: SchemaCompiler | None = None,
        ) -> None:
            _check_entry("provider", name, factory, self._providers, plugin_name)
            if schema_compiler is not None and not isinstance(schema_compiler, SchemaCompiler):
                raise PluginError(
                    f"provider `{name}`: schema_compiler must be a "
                    f"toolwire.schema.SchemaCompiler, got {type(schema_compiler).__name__}",
                    plugin=plugin_name,
                )
            self._providers[name] = (plugin_name, factory)
            if schema_compiler is not None:
                self._schema_compilers[name] = schema_compiler
            added.append(name)

        try:
            self._call_register("toolwire_register_providers", plugin_name, register)
        except Exception as exc:
            for name in added:
                self._providers.pop(name, None)
                self._schema_compilers.pop(name, None)
            self._fail(record, f"failed to register its providers: {_describe(exc)}", exc)

    def _call_register(self, hook: str, plugin_name: str, register: Callable[..., Any]) -> None:
        """Call a plugin's registration hook (``toolwire_register_providers``, ...)."""
        for impl in self._impls(hook, plugin_name):
            out = impl.function(**dict.fromkeys(impl.argnames, register))
            if inspect.isawaitable(out):
                _close(out)
                raise PluginError(f"{hook} must be sync")

    def _ensure(
        self,
        kind: PluginKind,
        name: str | None,
        table: Mapping[str, Any],
        seen: set[str],
        collect: Callable[[str], None],
    ) -> None:
        """Import the plugins of ``kind`` until ``name`` is registered (first the entry
        point of that name, then the others; all of them for None), and collect each
        plugin's registrations once."""
        self.discover()

        def collect_all() -> None:
            for plugin_name in list(self._kind):
                if plugin_name not in seen:
                    collect(plugin_name)

        if name is not None and name not in table:
            self._load_pending(kind, only=name)
            collect_all()
        if name is None or name not in table:
            self._load_pending(kind)
            collect_all()

    def _ensure_providers(self, name: str | None) -> None:
        self._ensure("provider", name, self._providers, self._providers_of, self._collect_providers)

    def providers(self) -> tuple[str, ...]:
        """The names of every provider that can be created (imports all provider plugins)."""
        with self._lock:
            self._ensure_providers(None)
            return tuple(sorted(self._providers))

    def registered_by(self, plugin: str) -> tuple[str, ...]:
        """The provider and backend names a plugin registered (of those imported so far:
        call :meth:`providers` and :meth:`backends` first to import them all)."""
        with self._lock:
            names = [n for n, (owner, _) in self._providers.items() if owner == plugin]
            names += [n for n, (owner, _) in self._backends.items() if owner == plugin]
        return tuple(sorted(names))

    def schema_compilers(self) -> Mapping[str, SchemaCompiler]:
        """The schema compilers the providers registered, by provider name (imports all
        provider plugins)."""
        with self._lock:
            self._ensure_providers(None)
            return dict(self._schema_compilers)

    def schema_compiler(self, name: str) -> SchemaCompiler:
        """The schema compiler registered with provider ``name``.

        Raises PluginError naming the providers that have one when ``name`` has none.
        """
        with self._lock:
            self._ensure_providers(name)
            found = self._schema_compilers.get(name)
        if found is None:
            known = ", ".join(f"`{n}`" for n in sorted(self._schema_compilers)) or "none"
            raise PluginError(
                f"no schema compiler for provider `{name}` (providers with one: {known}); "
                f"a provider registers it with register(name, factory, schema_compiler=...)",
                plugin=name,
            )
        return found

    def provider(self, name: str, **options: Any) -> Provider:
        """Create the provider registered as ``name`` (imports its plugin if needed).

        ``options`` go to the factory (``model=...``). Raises PluginError for an
        unknown name (listing the known ones) or a factory that does not return
        a Provider; errors of the provider itself (a missing key) propagate.
        """
        with self._lock:
            self._ensure_providers(name)
            found = self._providers.get(name)
        made: Provider = self._make("provider", name, found, self._providers, Provider, options)
        return made

    def _make(
        self,
        what: str,
        name: str,
        found: tuple[str, Callable[..., Any]] | None,
        table: Mapping[str, Any],
        kind: type,
        options: Mapping[str, Any],
    ) -> Any:
        """Call the factory registered as ``name``: PluginError, with the known names and
        the closest one, when there is none, or when it makes something else."""
        if found is None:
            known = ", ".join(f"`{n}`" for n in sorted(table)) or "none installed"
            hint = difflib.get_close_matches(name, list(table), n=1)
            did = f"; did you mean `{hint[0]}`?" if hint else ""
            official = OFFICIAL_NAMES.get(name)
            install = (
                f"it comes with {official}: `pip install {official}`"
                if official is not None
                else "install the distribution that provides it"
            )
            raise PluginError(
                f"no {what} named `{name}` (known: {known}){did}; {install}",
                plugin=name,
            )
        owner, factory = found
        made = factory(**options)
        if not isinstance(made, kind):
            raise PluginError(
                f"plugin `{owner}`: the factory of {what} `{name}` returned "
                f"{type(made).__name__}; expected a toolwire.{kind.__name__}",
                plugin=owner,
                distribution=self._record_of(owner).distribution,
            )
        return made

    # -- executor backends ---------------------------------------------------------

    def _collect_backends(self, plugin_name: str) -> None:
        self._backends_of.add(plugin_name)
        record = self._record_of(plugin_name)
        added: list[str] = []

        def register(name: str, factory: Callable[..., Any]) -> None:
            _check_entry("backend", name, factory, self._backends, plugin_name, "inprocess")
            self._backends[name] = (plugin_name, factory)
            added.append(name)

        try:
            self._call_register("toolwire_register_backends", plugin_name, register)
        except Exception as exc:
            for name in added:
                self._backends.pop(name, None)
            self._fail(record, f"failed to register its backends: {_describe(exc)}", exc)

    def _ensure_backends(self, name: str | None) -> None:
        self._ensure("backend", name, self._backends, self._backends_of, self._collect_backends)

    def backends(self) -> tuple[str, ...]:
        """The names of every executor backend that can be used (imports all backend
        plugins); in-process execution is always there as ``inprocess``."""
        with self._lock:
            self._ensure_backends(None)
            return tuple(sorted(self._backends))

    def backend(self, name: str, **options: Any) -> Any:
        """The executor backend registered as ``name``: without ``options``, one shared
        instance per host (executors resolved by name share it); with options, a new
        one (the caller closes it). Raises PluginError for an unknown name or a factory
        that does not return a ToolBackend."""
        from toolwire._backends import ToolBackend

        with self._lock:
            if not options and name in self._backend_instances:
                return self._backend_instances[name]
            self._ensure_backends(name)
            found = self._backends.get(name)
            made = self._make("executor backend", name, found, self._backends, ToolBackend, options)
            if not options:
                self._backend_instances[name] = made
            return made

    # -- hooks -----------------------------------------------------------------------

    def hook_sets(self) -> tuple[HookSet, HookSet]:
        """``(policies, plugins)``: pass both first to ``resolve_turn(hooks=...)``.

        The policy set holds every policy plugin's decision, description and
        availability hooks (and, for a policy that failed to load, a hook that
        rejects every call); the other set holds the tool packs' and other
        plugins'. Both are empty (and cost nothing) when no plugin implements
        a hook. Tool packs are imported here (the first time).
        """
        sets = self._sets
        if sets is not None:
            return sets
        with self._lock:
            self._ensure_toolsets()
            if self._sets is None:
                self._sets = self._build_sets()
            return self._sets

    def policy_set(self) -> HookSet:
        """The policies' hook set alone (``hook_sets()[0]``, the same object), without
        importing the tool packs: what a turn needs to hide denied tools and decide calls."""
        found = self._policy_set
        if found is not None:
            return found
        with self._lock:
            self.discover()
            if self._policy_set is None:
                self._policy_set = self._build_set(policies=True)
            return self._policy_set

    def _build_sets(self) -> tuple[HookSet, HookSet]:
        if self._policy_set is None:
            self._policy_set = self._build_set(policies=True)
        return self._policy_set, self._build_set(policies=False)

    def _build_set(self, *, policies: bool) -> HookSet:
        """The policies' set (a guard set: if a later hook, a tool pack's or the
        application's, edits an input after the policies approved it, the policies see
        the edited input too), or the other plugins' set."""
        target = (
            HookSet("plugins:policies", guard=True) if policies else HookSet("plugins:toolsets")
        )
        if policies:
            for name, notice in self._notices.items():
                target.on(None, _blocker(notice), name=f"plugin:{name}")

        def mine(impl: Any) -> bool:
            return (self._kind.get(impl.plugin_name) == "policy") == policies

        budget = self.hook_timeout
        for impl in self._live_impls("toolwire_tool_decision"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                target._on_timed(_decision_hook(impl.function, impl.argnames), label, budget)
        for impl in self._live_impls("toolwire_tool_description"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                target.describe(
                    None, _description_hook(impl.function, impl.argnames, label), name=label
                )
        for impl in self._live_impls("toolwire_tool_availability"):
            if mine(impl):
                label = f"plugin:{impl.plugin_name}"
                owns = None if policies else functools.partial(self._owns, impl.plugin_name)
                hook = _availability_hook(impl.function, impl.argnames, owns)
                target.hide(None, hook, name=label)
        return target

    def _owns(self, plugin_name: str, tool: Tool[Any, Any]) -> bool:
        """True when ``tool`` is one of the tools the plugin registered."""
        group = self._toolsets.get(plugin_name)
        if group is None:
            return False
        origin = tool.origin
        return any(t.origin is origin for t in group.tools())

    def _result_pipeline(self) -> tuple[_ResultHook, ...]:
        hooks = self._result_hooks
        if hooks is not None:
            return hooks
        with self._lock:
            self._ensure_toolsets()
            impls = self._live_impls("toolwire_tool_result")
            packs = [i for i in impls if self._kind.get(i.plugin_name) != "policy"]
            policies = [i for i in impls if self._kind.get(i.plugin_name) == "policy"]
            self._result_hooks = tuple(
                _ResultHook(i.function, i.argnames, i.plugin_name, policy)
                for policy, group in ((False, packs), (True, policies))
                for i in group
            )
            return self._result_hooks

    def tool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """Run ``toolwire_tool_result`` over a result (sync implementations only).

        Tool packs first, then policies. An async implementation is skipped
        with a warning (a policy's withholds the result): use :meth:`atool_result`.
        """
        return self._results(self._result_pipeline(), call, result, context)

    def _results(
        self,
        hooks: tuple[_ResultHook, ...],
        call: TypedCall[Any],
        result: ToolResult,
        context: HookContext | None,
    ) -> ToolResult:
        if self._notices:
            return self._withhold(call, context)
        ctx = context or HookContext()
        for h in hooks:
            result = h.run(call, result, ctx, self.hook_timeout)
        return result

    async def _aresults(
        self,
        hooks: tuple[_ResultHook, ...],
        call: TypedCall[Any],
        result: ToolResult,
        context: HookContext | None,
    ) -> ToolResult:
        if self._notices:
            return self._withhold(call, context)
        ctx = context or HookContext()
        for h in hooks:
            result = await h.arun(call, result, ctx, self.hook_timeout)
        return result

    def _withhold(self, call: TypedCall[Any], context: HookContext | None) -> ToolResult:
        """The result of a call made while a policy failed to load: withheld, and audited."""
        notice = next(iter(self._notices.values()))
        event = AuditEvent("withheld", notice, call.name, call.id, call.arguments)
        self.audit(event, context)
        return _withheld(call, notice)

    async def atool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`tool_result`, awaiting async implementations (each within the budget)."""
        return await self._aresults(self._result_pipeline(), call, result, context)

    def sync_policy_hooks(self) -> tuple[str, ...]:
        """``plugin:hook`` for every sync decision or result hook of a policy in force.

        A sync hook is held to its budget only when it returns, and it stalls the
        event loop while it runs: a server (``toolwire mcp serve``) warns about them. A
        plugin that sets ``toolwire_nonblocking = True`` says its sync hooks only compute
        (what could wait, a store across the network or a person, it hands back as an
        awaitable): no warning is given for it that its user could not act on."""
        with self._lock:
            self.discover()
            found = []
            for hook in ("toolwire_tool_decision", "toolwire_tool_result"):
                for impl in self._live_impls(hook):
                    if self._kind.get(impl.plugin_name) != "policy":
                        continue
                    if getattr(impl.plugin, "toolwire_nonblocking", False) is True:
                        continue
                    if not inspect.iscoroutinefunction(impl.function):
                        found.append(f"{impl.plugin_name}:{hook}")
            return tuple(found)

    # -- audit ---------------------------------------------------------------------

    def audit(self, event: AuditEvent, context: HookContext | None = None) -> None:
        """Send ``event`` to every ``toolwire_audit`` implementation (switched-off
        policies included); one that fails or is async is logged, never raised."""
        if not isinstance(event, AuditEvent):
            raise UsageError(f"audit() takes an AuditEvent, got {type(event).__name__}")
        ctx = context or HookContext()
        with self._lock:
            impls = [i for i in self._impls("toolwire_audit") if not _inert(i.plugin)]
        for impl in impls:
            args = {"event": event, "context": ctx}
            try:
                out = impl.function(**{a: args[a] for a in impl.argnames})
            except Exception as exc:
                logger.error(
                    "audit hook of plugin `%s` failed on event `%s`: %s",
                    impl.plugin_name,
                    event.kind,
                    _describe(exc),
                )
                continue
            if inspect.isawaitable(out):
                _close(out)
                logger.error("audit hook of plugin `%s` must be sync", impl.plugin_name)
            elif out is not None:
                logger.warning(
                    "audit hook of plugin `%s` returned %s; it returns None",
                    impl.plugin_name,
                    type(out).__name__,
                )

    # -- records kept outside the policies' audit ------------------------------------

    def redact_arguments(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any],
        context: HookContext | None = None,
        *,
        policies_only: bool = False,
    ) -> dict[str, Any] | None:
        """``arguments`` as a record outside the policies' audit may keep them: through
        every ``toolwire_redact_arguments`` (tool packs, then policies). None when a hook
        failed (raised, async, over its budget, not a dict): keep no arguments at all."""
        with self._lock:
            self._ensure_toolsets()
            impls = self._live_impls("toolwire_redact_arguments")
        if self._notices:
            return None  # a policy that failed to load cannot say what it would redact
        kinds = [False, True]
        ordered = [
            i
            for policy in kinds
            for i in impls
            if (self._kind.get(i.plugin_name) == "policy") == policy
            and (policy or not policies_only)
        ]
        ctx = context or HookContext()
        current: dict[str, Any] = dict(arguments)
        for impl in ordered:
            args = {"tool": tool, "arguments": dict(current), "context": ctx}
            started = time.monotonic()
            try:
                out = impl.function(**{a: args[a] for a in impl.argnames})
            except Exception as exc:
                logger.error(
                    "redact hook of plugin `%s` failed: %s", impl.plugin_name, _describe(exc)
                )
                return None
            if inspect.isawaitable(out):
                _close(out)
                logger.error("redact hook of plugin `%s` must be sync", impl.plugin_name)
                return None
            if time.monotonic() - started > self.hook_timeout:
                logger.error(
                    "redact hook of plugin `%s` took over %g s", impl.plugin_name, self.hook_timeout
                )
                return None
            if out is None:
                continue
            if not isinstance(out, dict):
                logger.error(
                    "redact hook of plugin `%s` returned %s; it returns a dict or None",
                    impl.plugin_name,
                    type(out).__name__,
                )
                return None
            current = out
        return current

    def policies_only(self) -> PolicyHost:
        """This host without its tool packs: what ``plugins=False`` means (tool packs
        drop out; the policies keep deciding, hiding, redacting and auditing)."""
        return PolicyHost(self)


_NO_PACKS = HookSet("plugins:toolsets")
_OFF_REASON = f"turned off by {DISABLE_POLICIES_ENV}: this policy is OFF and checks no tool call"


class PolicyHost:
    """A :class:`PluginHost` seen without its tool packs and their hooks: the policies'
    decision, availability, description, result and audit hooks only.

    ``plugins=False`` (in ``resolve_turn``, ``Agent``, ``Executor``) means this view of
    the default host: dropping tool packs never drops a policy.
    """

    __slots__ = ("host",)

    def __init__(self, host: PluginHost) -> None:
        self.host = host

    def __repr__(self) -> str:
        return f"<PolicyHost of {self.host!r}>"

    @property
    def blocked(self) -> tuple[str, ...]:
        return self.host.blocked

    @property
    def blocked_notices(self) -> tuple[str, ...]:
        return self.host.blocked_notices

    def hook_sets(self) -> tuple[HookSet, HookSet]:
        """``(policies, an empty set)``."""
        return self.host.policy_set(), _NO_PACKS

    def policy_set(self) -> HookSet:
        return self.host.policy_set()

    def assemble(self, toolset: Toolset | None = None) -> Toolset:
        """``toolset`` as it is: no tool pack joins it."""
        if toolset is None:
            return Toolset("tools")
        if not isinstance(toolset, Toolset):
            raise UsageError(f"assemble() takes a Toolset, got {type(toolset).__name__}")
        return toolset

    def _result_pipeline(self) -> tuple[_ResultHook, ...]:
        return tuple(h for h in self.host._result_pipeline() if h.policy)

    def tool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """The policies' result hooks over ``result`` (see :meth:`PluginHost.tool_result`)."""
        return self.host._results(self._result_pipeline(), call, result, context)

    async def atool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`tool_result`, awaiting async implementations."""
        return await self.host._aresults(self._result_pipeline(), call, result, context)

    def audit(self, event: AuditEvent, context: HookContext | None = None) -> None:
        self.host.audit(event, context)

    def redact_arguments(
        self, tool: Tool[Any, Any], arguments: Mapping[str, Any], context: HookContext | None = None
    ) -> dict[str, Any] | None:
        """The policies' redaction of ``arguments`` (see :meth:`PluginHost.redact_arguments`)."""
        return self.host.redact_arguments(tool, arguments, context, policies_only=True)

    def backend(self, name: str, **options: Any) -> Any:
        return self.host.backend(name, **options)


@attrs.frozen
class _Mount:
    prefix: str = ""
    off: bool = False
    only: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    enabled: bool = True


_MOUNT = _Mount()


def _tool_names(value: Iterable[str], what: str) -> frozenset[str]:
    items = () if isinstance(value, str) else tuple(value)
    if isinstance(value, str) or not all(isinstance(n, str) for n in items):
        raise UsageError(f"{what} must be a list of tool names, got {value!r}")
    return frozenset(items)


def _inert(plugin: object) -> bool:
    return getattr(plugin, "toolwire_inert", False) is True


def _check_entry(
    what: str,
    name: Any,
    factory: Any,
    table: Mapping[str, tuple[str, Any]],
    plugin_name: str,
    reserved: str | None = None,
) -> None:
    """PluginError unless ``name`` is a free, well-formed name and ``factory`` callable."""
    if not isinstance(name, str) or not _PROVIDER_NAME.match(name) or name == reserved:
        also = f" (and not be `{reserved}`)" if reserved else ""
        raise PluginError(
            f"a {what} name must match {_PROVIDER_NAME.pattern}{also}, got {name!r}",
            plugin=plugin_name,
        )
    if not callable(factory):
        raise PluginError(
            f"{what} `{name}`: factory must be callable, got {type(factory).__name__}",
            plugin=plugin_name,
        )
    owner = table.get(name)
    if owner is not None:
        raise PluginError(
            f"{what} `{name}` is already registered by plugin `{owner[0]}`", plugin=plugin_name
        )


def _holds(toolset: Toolset, group: Toolset) -> bool:
    """Whether ``group`` is ``toolset`` or nested in it, at any depth."""
    if toolset is group:
        return True
    return any(isinstance(m.item, Toolset) and _holds(m.item, group) for m in toolset._members)


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
