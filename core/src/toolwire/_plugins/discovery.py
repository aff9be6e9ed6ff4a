"""Plugin discovery: entry-point groups, plugin records, the environment switches and
distribution metadata, read once per process."""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from toolwire._errors import PluginError
from toolwire._exports import publish
from toolwire._version import __version__

PluginKind = Literal["policy", "toolset", "provider", "backend"]

ENTRY_POINT_GROUPS: Mapping[PluginKind, str] = {
    "policy": "toolwire.policies",
    "toolset": "toolwire.toolsets",
    "provider": "toolwire.providers",
    "backend": "toolwire.backends",
}
"""The entry-point group of each kind of plugin."""

# Built-ins register through the same hooks; this table is their fallback when
# entry points are not read (autoload off, or toolwire run from a source tree).
_BUILTINS: tuple[tuple[PluginKind, str, str], ...] = (
    ("provider", "test", "toolwire.providers.test"),
)
_CORE_DISTRIBUTION = "toolwire"

DISABLE_POLICIES_ENV = "TOOLWIRE_DISABLE_POLICIES"
POLICY_REQUIRED_ENV = "TOOLWIRE_POLICY_REQUIRED"

DEFAULT_HOOK_TIMEOUT = 5.0
DEFAULT_IMPORT_TIMEOUT = 30.0
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


# -- environment ----------------------------------------------------------------------


def _env_names(var: str) -> frozenset[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return frozenset(n.strip() for n in raw.split(",") if n.strip())


def _policies_off(value: bool | Iterable[str] | None) -> frozenset[str]:
    """The policies a ``disable_policies`` argument (None: ``TOOLWIRE_DISABLE_POLICIES``)
    turns off: names, or ``{"*"}`` for every policy."""
    if value is None:
        names = _env_names(DISABLE_POLICIES_ENV) or frozenset()
        return frozenset({"*"}) if names & {"*", "all", "1", "true"} else names
    if value is True:
        return frozenset({"*"})
    if value is False:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise PluginError(
            f"disable_policies must be True, False or a list of policy names, "
            f"got {type(value).__name__}"
        )
    names = frozenset(value)
    if not all(isinstance(n, str) and n for n in names):
        raise PluginError("disable_policies must name policies as non-empty strings")
    return names


def _env_flag(var: str, default: bool) -> bool:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off")


def _env_timeout(
    var: str = "TOOLWIRE_HOOK_TIMEOUT", default: float = DEFAULT_HOOK_TIMEOUT
) -> float:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise PluginError(f"{var} must be a positive number of seconds, got {raw!r}")
    return value


# -- imports with a deadline --------------------------------------------------------------


class ImportTimeout(Exception):
    """A plugin's import did not finish within its deadline (it is left behind)."""


class _Importer:
    """Plugin imports on a worker thread, so one that hangs can be left behind.

    The host waits for each import up to its deadline. An import that does not
    finish by then is abandoned with its thread (a daemon: it cannot keep the
    process alive), the plugin is reported as failed, and later imports go to a
    fresh thread. A module is imported by one thread at a time, so the host never
    imports an abandoned plugin again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None]] | None = None

    def _worker(self) -> queue.SimpleQueue[Callable[[], None]]:
        jobs = self._jobs
        if jobs is None:
            jobs = self._jobs = queue.SimpleQueue()
            thread = threading.Thread(
                target=_work, args=(jobs,), name="toolwire-plugin-import", daemon=True
            )
            thread.start()
        return jobs

    def load(self, load: Callable[[], object], deadline: float) -> object:
        done = threading.Event()
        box: list[Any] = []

        def job() -> None:
            try:
                box.append((True, load()))
            except BaseException as exc:
                box.append((False, exc))
            finally:
                done.set()

        with self._lock:
            jobs = self._worker()
            jobs.put(job)
            if not done.wait(deadline):
                self._jobs = None  # that thread is stuck: the next import gets a new one
                raise ImportTimeout(f"its import took longer than {deadline:g} s")
        ok, value = box[0]
        if not ok:
            raise value
        return value


def _work(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        jobs.get()()


IMPORTER = _Importer()


# -- entry points (read once per process) ----------------------------------------------

_EP_LOCK = threading.Lock()
_EP_CACHE: dict[str, tuple[Any, ...]] | None = None


def _entry_points() -> Mapping[str, tuple[Any, ...]]:
    """Every toolwire entry point, by group; metadata is read once per process."""
    global _EP_CACHE
    with _EP_LOCK:
        if _EP_CACHE is None:
            import importlib_metadata  # only when discovery runs (import time matters)

            eps = importlib_metadata.entry_points()
            _EP_CACHE = {
                group: tuple(eps.select(group=group)) for group in ENTRY_POINT_GROUPS.values()
            }
        return _EP_CACHE


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
