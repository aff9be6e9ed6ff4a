"""The plugin host's discovery and loading: entry points read into candidates, each plugin
imported with its deadline and registered, and a broken one isolated (recorded, and its
hooks dropped; a broken policy blocks every call)."""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import attrs
import pluggy

from toolwire import hookspecs
from toolwire._compile import SchemaCompiler
from toolwire._errors import PluginError, PolicyError, UsageError
from toolwire._exports import publish
from toolwire._hooks import AuditEvent, HookContext, HookSet
from toolwire._plugins.discovery import (
    _BUILTINS,
    _CORE_DISTRIBUTION,
    _KIND_RANK,
    PluginRecord,
    _Candidate,
    _dist_of,
    _version,
)
from toolwire._plugins.entrypoints import (
    DISABLE_POLICIES_ENV,
    ENTRY_POINT_GROUPS,
    IMPORTER,
    POLICY_REQUIRED_ENV,
    ImportTimeout,
    PluginKind,
    _describe,
    _entry_points,
)
from toolwire._plugins.wrappers import (
    _ASYNC_OK,
    _ResultHook,
)
from toolwire._provider import Provider
from toolwire._toolset import Toolset

if TYPE_CHECKING:
    from toolwire._plugins.registries import _Mount

logger = logging.getLogger("toolwire.plugins")

_OFF_REASON = f"turned off by {DISABLE_POLICIES_ENV}: this policy is OFF and checks no tool call"


class _HostState:
    """What a :class:`~toolwire._plugins.host.PluginHost` holds (set by its ``__init__``),
    declared for the parts of it the other modules write."""

    policy_required: bool
    policies_off: frozenset[str]
    autoload: bool
    strict: bool
    allow: frozenset[str] | None
    deny: frozenset[str]
    _deny_source: str
    hook_timeout: float
    import_timeout: float
    _pm: pluggy.PluginManager
    _lock: threading.RLock
    _discovered: bool
    _records: dict[tuple[str, str], PluginRecord]
    _pending: dict[str, list[_Candidate]]
    _kind: dict[str, PluginKind]
    _blocked: dict[str, str]
    _notices: dict[str, str]
    _off: set[str]
    _toolsets: dict[str, Toolset]
    _toolsets_of: set[str]
    _providers: dict[str, tuple[str, Callable[..., Provider]]]
    _schema_compilers: dict[str, SchemaCompiler]
    _providers_of: set[str]
    _backends: dict[str, tuple[str, Callable[..., Any]]]
    _backends_of: set[str]
    _backend_instances: dict[str, Any]
    _mounts: dict[str, _Mount]
    _sets: tuple[HookSet, HookSet] | None
    _policy_set: HookSet | None
    _result_hooks: tuple[_ResultHook, ...] | None

    if TYPE_CHECKING:  # defined by the host and its hook-calling part

        def audit(self, event: AuditEvent, context: HookContext | None = None) -> None: ...

        def is_inert(self, record: PluginRecord) -> bool: ...


class _Loading(_HostState):
    """Discovery, loading and isolation (a part of PluginHost)."""

    # -- discovery and loading -------------------------------------------------------

    def discover(self) -> Self:
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


def _inert(plugin: object) -> bool:
    return getattr(plugin, "toolwire_inert", False) is True


publish(globals())
