"""The toolwire-mcp plugin (entry point ``toolwire.toolsets: mcp``): every configured MCP
server's tools in every toolwire application.

Importing this module is cheap; the servers are read from the config files when the
host first assembles toolsets (or ``toolwire plugins`` asks for the status). A server
whose tool list is cached (``toolwire_mcp.client._listcache``) starts on its first call; the
others are started then, all at once, and their lists cached. Each server is mounted
under its name as a prefix (``git_status`` for the ``status`` tool of the server
``git``). A server that fails to start is skipped and
reported (tool packs fail open: ``toolwire plugins`` and :func:`server_status` say why);
a malformed entry skips that server, and a project's own ``./.toolwire/mcp.json`` starts
nothing until the user trusts it (``toolwire mcp trust``); both are reported.
Policies are not affected either way: they apply to whatever tools are there.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import TYPE_CHECKING, Any

import attrs

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire import Toolset
    from toolwire.hookspecs import RegisterToolset

__all__ = ["ServerStatus", "server_status", "status", "toolwire_register_toolsets"]

logger = logging.getLogger("toolwire.mcp")


@attrs.frozen
class ServerStatus:
    """How a configured server fared: ``ok`` with its tool count, ``failed`` and why, or
    ``skipped`` (an untrusted project file, a malformed entry) and why."""

    name: str
    transport: str
    status: str
    tools: int = 0
    reason: str = ""

    def line(self) -> str:
        if self.status == "ok":
            note = f"; {self.reason}" if self.reason else ""
            return f"{self.name} ok ({self.tools} tools, {self.transport}){note}"
        if self.status == "skipped":
            return f"{self.name} skipped: {self.reason}"
        return f"{self.name} failed ({self.transport}): {self.reason}"


#: Servers started at once (each waits on its own process or HTTP server).
_MAX_STARTING = 8
_LOCK = threading.Lock()
_STATUS: dict[str, ServerStatus] = {}
_TOOLSETS: dict[str, Toolset] = {}
_LOADED = [False]


def _load() -> None:
    """Connect every configured server once per process (a ConfigError propagates)."""
    with _LOCK:
        if _LOADED[0]:
            return
        from toolwire_mcp._config import load_config_report

        specs, skipped = load_config_report()
        for item in skipped:
            where = f"{item.source} (every server)" if item.name == "*" else item.source
            _STATUS[f"{item.name}@{item.source}"] = ServerStatus(
                item.name if item.name != "*" else where, "config", "skipped", reason=item.reason
            )
        if specs:
            from toolwire_mcp.client._toolset import (
                made_toolset,
            )  # imports the SDK: only when needed

            # Servers whose tool list is cached start on their first call; the others
            # are started together, not one after the other.
            made: dict[str, Any] = {}
            workers = min(_MAX_STARTING, len(specs))
            with concurrent.futures.ThreadPoolExecutor(workers, "toolwire-mcp-start") as pool:
                for name, spec in specs.items():
                    made[name] = pool.submit(made_toolset, spec, cache=True)
            for name, spec in specs.items():
                try:
                    toolset, cached = made[name].result()
                except Exception as exc:
                    _STATUS[name] = ServerStatus(name, spec.transport, "failed", reason=str(exc))
                    logger.warning("MCP server `%s` skipped: %s", name, exc)
                    continue
                _TOOLSETS[name] = toolset
                note = "tools from the cache; starts on first use" if cached else ""
                _STATUS[name] = ServerStatus(name, spec.transport, "ok", len(toolset), note)
        _LOADED[0] = True


def server_status() -> tuple[ServerStatus, ...]:
    """Every configured server, in config order, connected if it was not yet."""
    _load()
    return tuple(_STATUS.values())


def status() -> str:
    """The plugin's line in ``toolwire plugins``: each server with its status and tool count."""
    from toolwire_mcp._config import config_paths

    try:
        servers = server_status()
    except Exception as exc:
        return f"config error: {exc}"
    if not servers:
        looked = ", ".join(str(p) for p in config_paths())
        return f"no MCP servers configured (looked for {looked})"
    return "; ".join(s.line() for s in servers)


@hookimpl
def toolwire_register_toolsets(register: RegisterToolset) -> None:
    """Register one toolset per configured MCP server, prefixed with the server's name."""
    from toolwire import Toolset
    from toolwire.adapters import wire_name

    _load()
    taken: dict[str, str] = {}  # wire name -> the server that has it
    for name, toolset in _TOOLSETS.items():
        prefix = f"{wire_name(name)}_"
        clash = [t.name for t in toolset.tools() if _mounted(t.name, prefix) in taken]
        for tool in clash:
            wire = _mounted(tool, prefix)
            reason = (
                f"its tool `{tool}` is `{wire}` once mounted, as a tool of server "
                f"`{taken[wire]}` is: left out (rename one of the servers in the config)"
            )
            logger.warning("MCP server `%s`: %s", name, reason)
            status = _STATUS.get(name)
            if status is not None:
                note = f"{status.reason}; {reason}" if status.reason else reason
                _STATUS[name] = attrs.evolve(status, reason=note)
        # A tool that already carries the server's name (`git_status` of the server
        # `git`) is mounted as it is, not as `git_git_status`.
        named = [t.name for t in toolset.tools() if t.name.startswith(prefix)]
        prefixed = {_mounted(t.name, prefix) for t in toolset.tools() if t.name not in named}
        kept = Toolset(name).add(toolset, prefix=prefix, exclude=[*clash, *named])
        as_is = [n for n in named if n not in clash and n not in prefixed]
        for tool in sorted(set(named) - set(clash) - set(as_is)):
            logger.warning(
                "MCP server `%s`: its tool `%s` is left out: the server also has a tool "
                "mounted under that name with the server's prefix",
                name,
                tool,
            )
        if as_is:
            kept.add(toolset, only=as_is)
        register(kept)
        taken.update({t.name: name for t in kept.tools()})


def _mounted(tool: str, prefix: str) -> str:
    """The name a server's tool is mounted as: its own when it carries the prefix already."""
    from toolwire.adapters import wire_name

    return tool if tool.startswith(prefix) else wire_name(prefix + tool)
