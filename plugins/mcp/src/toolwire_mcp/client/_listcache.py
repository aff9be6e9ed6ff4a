"""Each configured server's tool list, cached, so listing tools starts nothing.

``toolwire plugins``, ``toolwire tools``, shell completion and an agent that never calls
an MCP tool used to start every configured server. With the cache, a server whose list
is cached starts on its first call; the list is re-read from the server each time it
connects, and whenever it says ``list_changed``, and the cache is rewritten then.

An entry is keyed by the server as configured (command, arguments, environment, working
directory, URL, headers, transport; secret values only by digest) and by its version as
far as toolwire can see without starting it: the command's executable, and every
argument that names a file, by path, size and modification time (so an upgraded server
lists afresh). Entries live in ``$XDG_CACHE_HOME/toolwire/mcp-tools`` (0700, each file
0600), are read bounded, expire after a week, and one that cannot be read is ignored
(and removed). ``TOOLWIRE_MCP_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types

from toolwire_mcp._config import ConfigError, ServerSpec, private_bytes

__all__ = ["CACHE_ENV", "Listing", "cache_dir", "cache_key", "load_listing", "store_listing"]

logger = logging.getLogger("toolwire.mcp")

CACHE_ENV = "TOOLWIRE_MCP_CACHE"
FORMAT = "toolwire.mcp-tools/1"
MAX_AGE = 7 * 24 * 3600.0
_MAX_BYTES = 8 * 1024 * 1024


@attrs.frozen
class Listing:
    """What a server listed: its tools, its resources and templates (None: it has no
    resources capability), and its instructions."""

    tools: tuple[types.Tool, ...]
    resources: tuple[Any, ...] | None = None
    templates: tuple[Any, ...] = ()
    instructions: str | None = None


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "").strip() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "toolwire" / "mcp-tools"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _stamp(path: str | None) -> list[Any] | None:
    """A file's path, size and modification time: the version toolwire can see."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def cache_key(spec: ServerSpec) -> str:
    from toolwire_mcp._version import __version__

    executable = None
    if spec.command:
        search = spec.env.get("PATH") or os.environ.get("PATH")
        executable = shutil.which(spec.command, path=search)
    identity = {
        "toolwire_mcp": __version__,
        "transport": spec.transport,
        "command": spec.command,
        "executable": _stamp(executable),
        "args": list(spec.args),
        "files": [_stamp(os.path.join(spec.cwd or os.getcwd(), a)) for a in spec.args],
        "env": sorted((k, _digest(v)) for k, v in spec.env.items()),
        "cwd": spec.cwd,
        "url": spec.url,
        "headers": sorted((k, _digest(v)) for k, v in spec.headers.items()),
        "annotations": spec.annotations,
        "auth": spec.auth,
    }
    return _digest(json.dumps(identity, sort_keys=True, default=str))


def _path(spec: ServerSpec) -> Path:
    return cache_dir() / f"{cache_key(spec)}.json"


def load_listing(spec: ServerSpec) -> Listing | None:
    """The cached listing of ``spec``'s server; None when there is none fresh and whole."""
    if not enabled():
        return None
    path = _path(spec)
    try:
        # A cached list says what each tool is (its annotations decide approval): used
        # only when nobody else could have written it.
        raw = private_bytes(path, _MAX_BYTES)
    except ConfigError as exc:
        logger.warning("MCP server `%s`: its cached tool list is not used: %s", spec.name, exc)
        return None
    except OSError:
        return None
    if raw is None:
        return None
    try:
        if len(raw) > _MAX_BYTES:
            raise ValueError(f"over {_MAX_BYTES:,} bytes")
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a toolwire MCP tool list")
        written = data.get("written")
        if not isinstance(written, (int, float)) or not 0 <= time.time() - written <= MAX_AGE:
            return None  # stale: the server lists afresh
        tools = tuple(types.Tool.model_validate(t) for t in data["tools"])
        resources = data.get("resources")
        listing = Listing(
            tools,
            None
            if resources is None
            else tuple(types.Resource.model_validate(r) for r in resources),
            tuple(types.ResourceTemplate.model_validate(t) for t in data.get("templates", [])),
            data.get("instructions") if isinstance(data.get("instructions"), str) else None,
        )
    except Exception as exc:  # a damaged entry is a miss, and goes
        logger.info("MCP server `%s`: its cached tool list is not used: %s", spec.name, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return listing


def _dump(items: Any) -> list[Any]:
    return [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in items]


def store_listing(spec: ServerSpec, listing: Listing) -> None:
    """Write ``listing`` as ``spec``'s server's (atomically; a failure is only logged)."""
    if not enabled():
        return
    listed = (*(listing.resources or ()), *listing.templates)
    if any(not hasattr(item, "model_dump") for item in listed):
        return  # a resource list that failed: a partial listing is not cached
    data = {
        "format": FORMAT,
        "written": time.time(),
        "server": spec.name,
        "tools": _dump(listing.tools),
        "resources": None if listing.resources is None else _dump(listing.resources),
        "templates": _dump(listing.templates),
        "instructions": listing.instructions,
    }
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, _path(spec))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError) as exc:
        logger.info("MCP server `%s`: its tool list was not cached: %s", spec.name, exc)
