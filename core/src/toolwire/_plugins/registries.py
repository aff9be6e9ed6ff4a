"""What plugins register on the plugin host: tool packs (mounted and assembled into the
application's toolset), providers and executor backends, each looked up by name."""

from __future__ import annotations

import difflib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

import attrs

from toolwire._compile import SchemaCompiler
from toolwire._errors import PluginError, UsageError
from toolwire._exports import publish
from toolwire._hooks import _close
from toolwire._plugins.discovery import (
    _PROVIDER_NAME,
)
from toolwire._plugins.entrypoints import (
    PluginKind,
    _describe,
)
from toolwire._plugins.loading import _Loading
from toolwire._provider import Provider
from toolwire._toolset import Toolset, wire_name

logger = logging.getLogger("toolwire.plugins")


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


class _Registries(_Loading):
    """Toolsets, providers and backends (a part of PluginHost)."""

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
    ) -> Self:
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


publish(globals())
