"""Plugin discovery: plugin records and distribution metadata, read once per process (the
entry-point groups, switches and imports with a deadline are ``entrypoints``'s, re-exported
here)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from toolwire._exports import publish
from toolwire._plugins.entrypoints import (
    PluginKind,
)
from toolwire._version import __version__

# Built-ins register through the same hooks; this table is their fallback when
# entry points are not read (autoload off, or toolwire run from a source tree).
_BUILTINS: tuple[tuple[PluginKind, str, str], ...] = (
    ("provider", "test", "toolwire.providers.test"),
)
_CORE_DISTRIBUTION = "toolwire"

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KIND_RANK: Mapping[str, int] = {"policy": 0, "toolset": 1, "provider": 2, "backend": 3}


@attrs.frozen
class PluginRecord:
    """One plugin the host knows of.

    ``status`` is ``discovered`` (found, not imported yet), ``loaded``,
    ``failed`` (``reason`` says why; the plugin is not in use) or ``disabled``
    (by ``TOOLWIRE_PLUGINS`` / ``TOOLWIRE_DISABLE_PLUGINS``).
    """

    kind: PluginKind
    name: str
    distribution: str
    version: str
    value: str
    status: Literal["discovered", "loaded", "failed", "disabled"] = "discovered"
    reason: str = ""

    def label(self) -> str:
        """``name (distribution version)``, for messages."""
        dist = f"{self.distribution} {self.version}".strip()
        return f"`{self.name}` ({dist})" if dist else f"`{self.name}`"


@attrs.frozen
class _Candidate:
    record: PluginRecord
    load: Callable[[], object]


def _version() -> str:
    return __version__


def _dist_of(dist: Any) -> tuple[str, str]:
    """A distribution's name and version, through importlib_metadata's public API.

    Reading them parses the distribution's METADATA, so each distribution is read once
    per process (discovery reads the entry points once too).
    """
    if dist is None:
        return "", ""
    key = id(dist)
    found = _DIST_NAMES.get(key)
    if found is None or found[0] is not dist:
        found = (dist, getattr(dist, "name", "") or "", getattr(dist, "version", "") or "")
        _DIST_NAMES[key] = found
    return found[1], found[2]


_DIST_NAMES: dict[int, tuple[Any, str, str]] = {}


publish(globals())
