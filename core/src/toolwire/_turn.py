"""One turn's tools: availability, requirement, description overrides; resolved before a request."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import attrs

from toolwire._errors import InvalidToolConstraintError, ToolsetError, UnknownToolError, UsageError
from toolwire._exports import publish
from toolwire._hooks import HookContext, HookSet, describe_tools, visible_tools
from toolwire._output import ModelSettings, OutputSpec, output_spec
from toolwire._tools import SelectorLike, Tool, ToolDef
from toolwire._toolset import Toolset

__all__ = [
    "Availability",
    "Requirement",
    "ResolvedTool",
    "ResolvedTurn",
    "ToolChoice",
    "Turn",
    "resolve_turn",
]

NO_TOOLS_LABEL = "(none available)"
_NOTHING_HIDDEN: Mapping[str, str] = MappingProxyType({})


@attrs.frozen
class Availability:
    """Which tools a turn offers: ``default()``, ``all()``, ``only(...)``, ``default_plus(...)``."""

    kind: Literal["default", "all", "only", "default_plus"] = "default"
    selectors: tuple[SelectorLike, ...] = ()

    @classmethod
    def default(cls) -> Availability:
        """Every tool not marked off (the default)."""
        return _DEFAULT

    @classmethod
    def all(cls) -> Availability:
        """Every tool, including those marked off."""
        return _ALL

    @classmethod
    def only(cls, *selectors: SelectorLike) -> Availability:
        """Exactly these tools, in this order, whether on or off."""
        return cls("only", tuple(selectors))

    @classmethod
    def default_plus(cls, *selectors: SelectorLike) -> Availability:
        """The default tools, then these extra ones appended."""
        return cls("default_plus", tuple(selectors))


_DEFAULT = Availability("default")
_ALL = Availability("all")


@attrs.frozen
class Requirement:
    """What the model is asked to do: ``optional()``, ``at_least_one()``, ``specific(tool)``."""

    kind: Literal["optional", "at_least_one", "specific"] = "optional"
    tool: SelectorLike | None = None

    @classmethod
    def optional(cls) -> Requirement:
        """The model may call tools or answer directly (the default)."""
        return _OPTIONAL

    @classmethod
    def at_least_one(cls) -> Requirement:
        """The model must call at least one available tool."""
        return _AT_LEAST_ONE

    @classmethod
    def specific(cls, tool: SelectorLike) -> Requirement:
        """The model must call this tool."""
        return cls("specific", tool)


_OPTIONAL = Requirement("optional")
_AT_LEAST_ONE = Requirement("at_least_one")


@attrs.frozen
class ToolChoice:
    """The provider-neutral tool_choice: ``none``, ``auto``, ``required`` or ``specific`` (name)."""

    kind: Literal["none", "auto", "required", "specific"]
    name: str | None = None


@attrs.frozen
class ResolvedTool:
    """A tool as offered this turn: its wire name, effective description and definition."""

    tool: Tool[Any, Any]
    description: str

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def definition(self) -> ToolDef:
        d = self.tool.definition
        if d.description == self.description:
            return d
        return attrs.evolve(d, description=self.description)


@attrs.frozen
class ResolvedTurn:
    """Everything a provider needs about tools for one request, resolved and checked.

    ``offered`` maps wire names to the tools sent; ``allow_all`` is true for
    ``Availability.all()`` (any tool of the toolset may be called).
    """

    toolset: Toolset
    tools: tuple[ResolvedTool, ...]
    requirement: Requirement
    required_tool: str | None
    tool_choice: ToolChoice
    parallel_calls: bool | None
    allow_all: bool
    offered: Mapping[str, Tool[Any, Any]]
    hooks: tuple[HookSet, ...] = ()
    context: HookContext | None = None
    #: Whose installed policies must decide this turn's calls before any runs or is
    #: committed: True for the process's default host, a PluginHost, or False (opted out).
    plugins: Any = True
    #: The final answer's shape (None: free text); adapters render it natively.
    output: OutputSpec | None = None
    #: Model settings for this request (None: the provider's defaults).
    settings: ModelSettings | None = None
    #: Tools an availability hook hid this turn: name -> the hook's name (``plugin:NAME``
    #: for a plugin's), so a call to one can say who hid it.
    hidden: Mapping[str, str] = attrs.field(factory=lambda: _NOTHING_HIDDEN)
    #: Why, for the hidden tools whose hook said (:class:`~toolwire.Hidden`): name -> reason.
    hidden_why: Mapping[str, str] = attrs.field(factory=lambda: _NOTHING_HIDDEN)

    @property
    def parallel(self) -> bool | None:
        """Whether parallel tool calls are asked for: the settings' ``parallel_tool_calls``,
        else the turn's ``parallel_calls`` (None: the provider's default)."""
        s = self.settings
        if s is not None and s.parallel_tool_calls is not None:
            return s.parallel_tool_calls
        return self.parallel_calls

    def allows(self, name: str) -> bool:
        """May the model call ``name`` this turn? Only what was offered: under
        ``Availability.all()`` that is every tool no availability hook hid."""
        return name in self.offered

    def lookup(self, name: str) -> Tool[Any, Any] | None:
        """The tool the model may call under ``name`` this turn, or None."""
        return self.offered.get(name)

    def definitions(self) -> tuple[ToolDef, ...]:
        return tuple(t.definition for t in self.tools)


def _selector_name(toolset: Toolset, sel: SelectorLike) -> str:
    return toolset.select(sel).name


def resolve_turn(
    toolset: Toolset,
    *,
    availability: Availability = _DEFAULT,
    requirement: Requirement = _OPTIONAL,
    description_overrides: Iterable[tuple[SelectorLike, str]] | Mapping[Any, str] = (),
    parallel_calls: bool | None = None,
    hooks: Sequence[HookSet] = (),
    context: HookContext | None = None,
    plugins: Any = True,
    output_type: Any = None,
    settings: ModelSettings | None = None,
) -> ResolvedTurn:
    """Resolve availability, requirement and descriptions for one turn, before any request.

    Order: availability selects tools; availability hooks may hide some;
    description hooks rewrite descriptions (each sees the previous one);
    ``description_overrides`` apply last (last write wins). A ``specific``
    requirement outside the resolved set, or ``at_least_one`` with nothing
    resolved, raises InvalidToolConstraintError before any request.

    ``plugins`` says whose installed policies hide tools from this turn and decide
    the calls of its rounds, whatever loop runs them: ``True`` (the default) and
    ``False`` the process's default host (``toolwire.get_host()``; ``False`` only
    says no tool pack's hooks are wanted, it never drops a policy), a
    ``PluginHost`` that one. The policies' availability hooks run first, so a
    denied tool is never offered; a round's calls are decided by the policies and
    then ``hooks`` before ``call.run()`` runs one or ``round.commit`` writes one.
    Turning a policy off is its own switch (``TOOLWIRE_DISABLE_POLICIES``, see
    docs/security.md).

    ``output_type`` (a pydantic model or any type pydantic validates, or an
    OutputSpec) asks for a structured final answer: the adapter renders it in the
    provider's native form and ``Finished.output`` holds the validated value.
    ``settings`` are the model settings for the request.
    """
    if not isinstance(toolset, Toolset):
        raise ToolsetError(f"expected a Toolset, got {type(toolset).__name__}")
    if not isinstance(availability, Availability):
        raise UsageError(f"availability must be an Availability, got {type(availability).__name__}")
    if not isinstance(requirement, Requirement):
        raise UsageError(f"requirement must be a Requirement, got {type(requirement).__name__}")
    if not isinstance(plugins, bool) and not callable(getattr(plugins, "hook_sets", None)):
        raise UsageError(
            f"plugins must be True, False or a PluginHost, got {type(plugins).__name__}"
        )
    if settings is not None and not isinstance(settings, ModelSettings):
        raise UsageError(f"settings must be a ModelSettings, got {type(settings).__name__}")
    output = output_spec(output_type) if output_type is not None else None
    kind = availability.kind
    # The hooks passed here (policy plugins, tool packs, the application's sets) run
    # before the toolsets' own, so no toolset hook can answer a call a policy rejects.
    collected = toolset.collected_hooks()
    all_hooks = (*hooks, *collected) if collected else tuple(hooks)
    policies = policy_set(plugins)
    if policies is not None and all(policies is not h for h in all_hooks):
        all_hooks = (policies, *all_hooks)  # the policies hide denied tools, first
    active = any(all_hooks)
    overrides = list(
        description_overrides.items()
        if isinstance(description_overrides, Mapping)
        else description_overrides
    )
    cached = None
    if not active and not overrides and kind in ("default", "all"):
        # Nothing per-turn can change the tools: the toolset keeps them (re-render is free).
        toolset._ensure()  # re-assembles (and moves the generation) if anything changed
        cached = toolset._turn_cache.get(kind)
        if cached is not None and cached[0] != toolset._generation:
            cached = None
    if cached is not None:
        resolved, offered = cached[1], cached[2]
        return _finish(
            toolset, resolved, offered, requirement, kind, parallel_calls, all_hooks, context,
            plugins, output, settings,
        )  # fmt: skip
    chosen: list[Tool[Any, Any]]
    if kind == "all":
        chosen = list(toolset.tools())
    elif kind == "default":
        chosen = list(toolset.default_tools())
    else:
        names = [_selector_name(toolset, s) for s in availability.selectors]
        chosen = [] if kind == "only" else list(toolset.default_tools())
        present = {t.name for t in chosen}
        for name in names:
            if name not in present:
                present.add(name)
                tool = toolset.get(name)
                assert tool is not None
                chosen.append(tool)

    ctx = context
    hidden: dict[str, str] | None = None
    why: dict[str, str] | None = None
    if active:
        ctx = ctx or HookContext()
        hidden, why = {}, {}
        chosen = visible_tools(all_hooks, chosen, ctx, hidden, why)

    descriptions = {t.name: t.description for t in chosen}
    if active:
        descriptions = describe_tools(all_hooks, chosen, descriptions, ctx)  # type: ignore[arg-type]
    for sel, text in overrides:
        name = _selector_name(toolset, sel)
        if not isinstance(text, str):
            raise UsageError(
                f"description override for `{name}` must be a string, got {type(text).__name__}"
            )
        if name in descriptions:
            descriptions[name] = text

    resolved = tuple(ResolvedTool(t, descriptions[t.name]) for t in chosen)
    # Read-only: a cached turn's offered map is shared by every later turn of the toolset.
    offered = MappingProxyType({t.name: t for t in chosen})
    if not active and not overrides and kind in ("default", "all"):
        toolset._turn_cache[kind] = (toolset._generation, resolved, offered)
    return _finish(
        toolset, resolved, offered, requirement, kind, parallel_calls, all_hooks, ctx, plugins,
        output, settings, MappingProxyType(hidden) if hidden else _NOTHING_HIDDEN,
        MappingProxyType(why) if why else _NOTHING_HIDDEN,
    )  # fmt: skip


def _finish(
    toolset: Toolset,
    resolved: tuple[ResolvedTool, ...],
    offered: Mapping[str, Tool[Any, Any]],
    requirement: Requirement,
    kind: str,
    parallel_calls: bool | None,
    all_hooks: tuple[HookSet, ...],
    ctx: HookContext | None,
    plugins: Any,
    output: OutputSpec | None = None,
    settings: ModelSettings | None = None,
    hidden: Mapping[str, str] = _NOTHING_HIDDEN,
    hidden_why: Mapping[str, str] = _NOTHING_HIDDEN,
) -> ResolvedTurn:
    """The requirement checked against the resolved tools, and the turn."""
    required: str | None = None
    if requirement.kind == "specific":
        assert requirement.tool is not None
        try:
            required = _selector_name(toolset, requirement.tool)
        except UnknownToolError as exc:
            # Not in the toolset at all: it is certainly not in the available set.
            required = exc.name
        if required not in offered:
            raise InvalidToolConstraintError(required)
        choice = ToolChoice("specific", required)
    elif not resolved:
        if requirement.kind == "at_least_one":
            raise InvalidToolConstraintError(NO_TOOLS_LABEL)
        choice = ToolChoice("none")
    elif requirement.kind == "at_least_one":
        choice = ToolChoice("required")
    else:
        choice = ToolChoice("auto")

    return ResolvedTurn(
        toolset=toolset,
        tools=resolved,
        requirement=requirement,
        required_tool=required,
        tool_choice=choice,
        parallel_calls=parallel_calls,
        allow_all=kind == "all",
        offered=offered,
        hooks=all_hooks,
        context=ctx,
        plugins=plugins,
        output=output,
        settings=settings,
        hidden=hidden,
        hidden_why=hidden_why,
    )


def policy_set(plugins: Any) -> HookSet | None:
    """The policy hook set of the host ``plugins`` names (None when it has no policy):
    ``True`` and ``False`` name the process's default host."""
    if isinstance(plugins, bool):
        # The default host lives above this layer; the package (always imported before
        # its submodules) reaches it.
        found = sys.modules["toolwire"]._default_policies()
    else:
        only = getattr(plugins, "policy_set", None)  # a PluginHost: no tool pack imported
        found = only() if callable(only) else plugins.hook_sets()[0]
    return found if found else None


@attrs.frozen
class Turn:
    """A reusable turn configuration: resolve it against a toolset for each request."""

    availability: Availability = _DEFAULT
    requirement: Requirement = _OPTIONAL
    description_overrides: tuple[tuple[SelectorLike, str], ...] = ()
    parallel_calls: bool | None = None
    output_type: Any = None
    settings: ModelSettings | None = None

    def resolve(
        self,
        toolset: Toolset,
        *,
        hooks: Sequence[HookSet] = (),
        context: HookContext | None = None,
        plugins: Any = True,
        output_type: Any = None,
        settings: ModelSettings | None = None,
    ) -> ResolvedTurn:
        """This configuration resolved against ``toolset``; ``output_type`` replaces the
        turn's own when given, and ``settings`` go on top of the turn's."""
        merged = self.settings
        if settings is not None:
            merged = settings if merged is None else merged.merged(settings)
        return resolve_turn(
            toolset,
            availability=self.availability,
            requirement=self.requirement,
            description_overrides=self.description_overrides,
            parallel_calls=self.parallel_calls,
            hooks=hooks,
            context=context,
            plugins=plugins,
            output_type=output_type if output_type is not None else self.output_type,
            settings=merged,
        )


publish(globals())
