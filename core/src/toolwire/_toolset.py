"""Toolsets: named, ordered groups of tools and nested toolsets, flattened to unique wire names."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from toolwire._errors import NameCollisionError, ToolsetError, UnknownToolError
from toolwire._exports import publish
from toolwire._hooks import HookSet
from toolwire._tools import Selector, SelectorLike, Tool, ToolDef, tool_fn, tool_of

__all__ = ["Selector", "SelectorLike", "Toolset", "wire_name"]

_WIRE_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_WIRE_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_WIRE_NAME = 64
# Bumped by every Toolset.add, so a parent notices when a nested toolset changed.
_GENERATION = [0]


def wire_name(name: str) -> str:
    """A provider-safe name (``^[a-zA-Z0-9_-]{1,64}$``) for ``name``; stable across runs.

    Valid names are returned unchanged. Other characters become ``_``; a name
    longer than 64 characters keeps its first 55 and ends with ``_`` and 8 hex
    digits of its BLAKE2 hash, so different long names stay different.
    """
    if _WIRE_OK.fullmatch(name):
        return name
    safe = _WIRE_BAD_CHARS.sub("_", name) or "_"
    if len(safe) <= MAX_WIRE_NAME:
        return safe
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return f"{safe[:55]}_{digest}"


@attrs.frozen
class _Member:
    item: Tool[Any, Any] | Toolset
    off: bool
    prefix: str
    only: frozenset[str] | None = None  # a nested toolset's tools kept (None: all)
    exclude: frozenset[str] = frozenset()  # ... and those left out


def _names(value: Iterable[str], what: str) -> frozenset[str]:
    items = () if isinstance(value, str) else tuple(value)
    if isinstance(value, str) or not all(isinstance(n, str) for n in items):
        raise ToolsetError(f"{what} must be a list of tool names, got {value!r}")
    return frozenset(items)


@attrs.frozen
class _Leaf:
    wire: str
    tool: Tool[Any, Any]
    off: bool
    source: str  # the toolset path the tool came from, for messages


class Toolset:
    """A named, ordered group of tools and nested toolsets.

    Nesting flattens: :meth:`tools` gives every leaf tool under its wire name.
    A tool or a nested group added with ``off=True`` is hidden from the
    default availability. A nested toolset added with ``prefix="x_"`` exposes
    its tools as ``x_<name>``. Wire names are unique; a collision raises
    :class:`NameCollisionError` naming both sources when the toolset is assembled.
    """

    __slots__ = (
        "_assembled",
        "_by_name",
        "_generation",
        "_members",
        "_turn_cache",
        "description",
        "hooks",
        "name",
    )

    def __init__(
        self,
        name: str = "tools",
        tools: Iterable[Any] = (),
        *,
        description: str = "",
        hooks: HookSet | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ToolsetError(f"a toolset needs a non-empty name, got {name!r}")
        self.name = name
        self.description = description
        self.hooks = hooks
        self._members: list[_Member] = []
        self._assembled: tuple[_Leaf, ...] | None = None
        self._by_name: dict[str, _Leaf] = {}
        self._generation = -1
        # Resolved turns without hooks or overrides, per availability kind (see resolve_turn).
        self._turn_cache: dict[str, Any] = {}
        for item in tools:
            self.add(item)

    def __repr__(self) -> str:
        return f"<Toolset {self.name!r} with {len(self._members)} members>"

    # -- building -------------------------------------------------------------------

    def add(
        self,
        item: Any,
        *,
        off: bool = False,
        prefix: str = "",
        only: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
    ) -> Toolset:
        """Add a tool (Tool, @tool_input class, function) or a nested toolset; returns self.

        For a nested toolset, ``only`` keeps just the tools of those names and
        ``exclude`` leaves those out (names as the nested toolset exposes them, before
        ``prefix``); the filter applies to whatever the toolset holds at each assembly.
        """
        if not isinstance(item, Toolset):
            item = tool_of(item)
            if only is not None or exclude:
                raise ToolsetError("only and exclude apply to a nested toolset, not a tool")
        if item is self:
            raise ToolsetError(f"toolset `{self.name}` cannot contain itself")
        if not isinstance(prefix, str):
            raise ToolsetError(f"prefix must be a string, got {type(prefix).__name__}")
        kept = _names(only, "only") if only is not None else None
        self._members.append(_Member(item, bool(off), prefix, kept, _names(exclude, "exclude")))
        self._assembled = None
        _GENERATION[0] += 1
        return self

    def reset(self, items: Iterable[Any] = ()) -> Toolset:
        """Replace every member with ``items`` in one step; returns self.

        For a toolset that mirrors a remote list (an MCP server's tools after its
        ``list_changed``): the new members are checked before any is swapped in, and a
        reader sees either the old members or the new ones, never a mix.
        """
        members: list[_Member] = []
        for item in items:
            if not isinstance(item, Toolset):
                item = tool_of(item)
            if item is self:
                raise ToolsetError(f"toolset `{self.name}` cannot contain itself")
            members.append(_Member(item, False, ""))
        self._members = members
        self._assembled = None
        _GENERATION[0] += 1
        return self

    def tool(
        self, fn: Callable[..., Any] | None = None, /, *, off: bool = False, **options: Any
    ) -> Any:
        """Decorator: make a function a tool (as @tool_fn) and add it to this toolset."""

        def wrap(f: Callable[..., Any]) -> Any:
            t = tool_fn(**options)(f) if options else tool_fn(f)
            self.add(t, off=off)
            return t

        return wrap(fn) if fn is not None else wrap

    # -- assembly -------------------------------------------------------------------

    def _leaves(
        self, path: str, seen: tuple[int, ...]
    ) -> Iterator[tuple[str, Tool[Any, Any], bool, str]]:
        if id(self) in seen:
            raise ToolsetError(f"toolset `{self.name}` is nested inside itself ({path})")
        seen = (*seen, id(self))
        for m in self._members:
            if isinstance(m.item, Toolset):
                sub = f"{path}/{m.item.name}"
                for name, tool, off, src in m.item._leaves(sub, seen):
                    if (m.only is not None and name not in m.only) or name in m.exclude:
                        continue
                    yield m.prefix + name, tool, off or m.off, src
            else:
                yield m.prefix + m.item.name, m.item, m.off, path

    def _assemble(self) -> tuple[_Leaf, ...]:
        leaves: list[_Leaf] = []
        by_name: dict[str, _Leaf] = {}
        for raw_name, tool, off, src in self._leaves(self.name, ()):
            name = wire_name(raw_name)
            prior = by_name.get(name)
            if prior is not None:
                if prior.tool.origin is tool.origin:
                    raise NameCollisionError(
                        f"tool `{name}` is added twice to toolset `{self.name}` "
                        f"(from `{prior.source}` and `{src}`); add it once, or mount one "
                        f"copy with a prefix"
                    )
                raise NameCollisionError(
                    f"tool name `{name}` collides in toolset `{self.name}`: "
                    f"`{prior.source}` has {prior.tool!r} and `{src}` has {tool!r}; "
                    f"mount one of the toolsets with a prefix (add(..., prefix='x_'))"
                )
            if tool.name == name:
                view = tool
            else:
                view = tool.renamed(name, also=(raw_name,) if raw_name != name else ())
            leaf = _Leaf(name, view, off, src)
            by_name[name] = leaf
            leaves.append(leaf)
        self._by_name = by_name
        return tuple(leaves)

    def _ensure(self) -> tuple[_Leaf, ...]:
        if self._assembled is None or self._stale():
            self._assembled = self._assemble()
            self._generation = _GENERATION[0]
        return self._assembled

    def _stale(self) -> bool:
        # Any toolset changed since we assembled (perhaps a nested one): re-assemble.
        return self._generation != _GENERATION[0]

    # -- reading --------------------------------------------------------------------

    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """Every leaf tool, in declaration order, under its wire name."""
        return tuple(leaf.tool for leaf in self._ensure())

    def default_tools(self) -> tuple[Tool[Any, Any], ...]:
        """The tools on by default (not marked off, not in an off group)."""
        return tuple(leaf.tool for leaf in self._ensure() if not leaf.off)

    def get(self, name: str) -> Tool[Any, Any] | None:
        self._ensure()
        leaf = self._by_name.get(name)
        return leaf.tool if leaf is not None else None

    def is_off(self, name: str) -> bool:
        self._ensure()
        leaf = self._by_name.get(name)
        if leaf is None:
            raise UnknownToolError(name)
        return leaf.off

    def source(self, name: str) -> str:
        """The toolset path a tool came from (``app/fs``)."""
        self._ensure()
        leaf = self._by_name.get(name)
        if leaf is None:
            raise UnknownToolError(name)
        return leaf.source

    def __contains__(self, name: object) -> bool:
        self._ensure()
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._ensure())

    def __iter__(self) -> Iterator[Tool[Any, Any]]:
        return iter(self.tools())

    # -- selectors ------------------------------------------------------------------

    def all(self) -> tuple[Selector, ...]:
        """Selectors for every tool, nested ones included, in order."""
        return tuple(Selector(leaf.wire) for leaf in self._ensure())

    def definitions(self) -> tuple[ToolDef, ...]:
        """The definition of every tool, in order."""
        return tuple(leaf.tool.definition for leaf in self._ensure())

    def try_from_name(self, name: str) -> Selector | None:
        """The selector for a wire name, searching nested toolsets; None if unknown."""
        self._ensure()
        return Selector(name) if name in self._by_name else None

    def from_name(self, name: str) -> Selector:
        """The selector for a wire name; raises UnknownToolError if unknown."""
        sel = self.try_from_name(name)
        if sel is None:
            raise UnknownToolError(name, f"tool `{name}` is not in toolset `{self.name}`")
        return sel

    def selector_schema(self) -> dict[str, Any]:
        """The JSON Schema of this toolset's selectors: a string, one of its wire names."""
        return {"type": "string", "enum": [leaf.wire for leaf in self._ensure()]}

    def select(self, target: SelectorLike) -> Selector:
        """Resolve a selector, a name, a tool, a @tool_input class or a tool function."""
        if isinstance(target, Selector):
            return self.from_name(target.name)
        if isinstance(target, str):
            return self.from_name(target)
        leaves = self._ensure()
        if not isinstance(target, (Tool, type)) and callable(target):
            # A plain function: the tool this toolset built from it (tool_of would build anew).
            for leaf in leaves:
                if leaf.tool.fn is target:
                    return Selector(leaf.wire)
        tool = target if isinstance(target, Tool) else tool_of(target)
        for leaf in leaves:
            if leaf.tool.origin is tool.origin:
                return Selector(leaf.wire)
        raise UnknownToolError(tool.name, f"tool `{tool.name}` is not in toolset `{self.name}`")

    def collected_hooks(self) -> list[HookSet]:
        """Hook sets of nested toolsets (innermost first), then this toolset's own."""
        out: list[HookSet] = []
        for m in self._members:
            if isinstance(m.item, Toolset):
                out.extend(m.item.collected_hooks())
        if self.hooks is not None:
            out.append(self.hooks)
        return out


publish(globals())
