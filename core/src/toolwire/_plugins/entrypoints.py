"""What plugin discovery needs before any plugin machinery: the entry-point groups, the
environment switches, entry points read once per process, and imports with a deadline.
Light (no attrs, no pluggy), so the command line's ``--help`` may read it."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from toolwire._errors import PluginError
from toolwire._exports import publish

PluginKind = Literal["policy", "toolset", "provider", "backend"]

ENTRY_POINT_GROUPS: Mapping[PluginKind, str] = {
    "policy": "toolwire.policies",
    "toolset": "toolwire.toolsets",
    "provider": "toolwire.providers",
    "backend": "toolwire.backends",
}
"""The entry-point group of each kind of plugin."""

#: The entry-point group of the modules that add commands to ``toolwire``.
COMMANDS_GROUP = "toolwire.commands"
#: The entry-point group of the model profiles distributions ship.
PROFILES_GROUP = "toolwire.profiles"

DISABLE_POLICIES_ENV = "TOOLWIRE_DISABLE_POLICIES"
POLICY_REQUIRED_ENV = "TOOLWIRE_POLICY_REQUIRED"

DEFAULT_HOOK_TIMEOUT = 5.0
DEFAULT_IMPORT_TIMEOUT = 30.0


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
    """Every toolwire entry point (the plugins' groups and the profiles'), by group;
    metadata is read once per process, never from the working directory
    (:func:`search_path`). The one reader of installed entry points: it decides what code
    is imported (``command_entry_points`` reads the commands' group the same way)."""
    global _EP_CACHE
    with _EP_LOCK:
        if _EP_CACHE is None:
            import sys

            import importlib_metadata  # only when discovery runs (import time matters)

            groups = (*ENTRY_POINT_GROUPS.values(), PROFILES_GROUP)
            found: dict[str, tuple[Any, ...]] = dict.fromkeys(groups, ())
            clean = search_path()
            seen: set[str] = set()
            for dist in importlib_metadata.distributions(path=sys.path if clean is None else clean):
                # The first of a name on the path wins, as importlib.metadata's own scan
                # decides (its name from the directory, else from its METADATA).
                key = getattr(dist, "_normalized_name", None) or _normal(str(dist.name or ""))
                if not key or key in seen:
                    continue
                seen.add(key)
                for ep in dist.entry_points:
                    if ep.group in found:
                        found[ep.group] += (ep,)
            _EP_CACHE = found
        return _EP_CACHE


def search_path() -> list[str] | None:
    """``sys.path`` without the working directory, or None when it is not on it.

    ``python -m toolwire`` (and ``python -c``) put the working directory first on
    ``sys.path``: a checkout holding a ``*.dist-info`` that names a module beside it would
    have that module imported as a plugin or a command. Where a command is run decides
    nothing (DESIGN.md, principle 9): distributions are read from the rest of the path.
    """
    import sys

    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed: nothing can be read from it
        return None
    kept = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    return kept if len(kept) != len(sys.path) else None


def _normal(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


class CommandEntryPoint:
    """An entry point of ``toolwire.commands``, as :func:`command_entry_points` reads it."""

    __slots__ = ("distribution", "name", "value")

    def __init__(self, name: str, value: str, distribution: str) -> None:
        self.name, self.value, self.distribution = name, value, distribution

    def load(self) -> Any:
        import importlib

        module_name, _, attrs_path = self.value.partition("[")[0].strip().partition(":")
        found: Any = importlib.import_module(module_name.strip())
        for part in filter(None, attrs_path.strip().split(".")):
            found = getattr(found, part)
        return found


def command_entry_points() -> list[CommandEntryPoint]:
    """The entry points of ``toolwire.commands`` of the distributions installed on
    ``sys.path`` (``*.dist-info`` / ``*.egg-info`` directories, as pip and uv install
    them; the first of a distribution's name wins, as for importlib.metadata; never the
    working directory's: :func:`search_path`), read
    straight from their ``entry_points.txt``: the command line's ``--help`` reads them,
    and importlib.metadata's scan of every distribution costs it 30 ms."""
    import sys

    found: list[CommandEntryPoint] = []
    seen: set[str] = set()
    clean = search_path()
    for where in sys.path if clean is None else clean:
        try:
            listing = os.scandir(where or ".")
        except OSError:
            continue
        with listing:
            names = sorted(e.name for e in listing if e.name.endswith((".dist-info", ".egg-info")))
        for entry in names:
            dist = entry.rpartition(".")[0].split("-")[0]
            key = _normal(dist)
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(where or ".", entry, "entry_points.txt"), "rb") as f:
                    text = f.read(1 << 20).decode("utf-8", "replace")
            except OSError:
                continue
            found.extend(_section(text, COMMANDS_GROUP, dist))
    return found


def _section(text: str, group: str, dist: str) -> list[CommandEntryPoint]:
    """The ``name = value`` lines of ``[group]`` in an entry_points.txt."""
    out: list[CommandEntryPoint] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            out.append(CommandEntryPoint(name.strip(), value.strip(), dist))
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


publish(globals())
