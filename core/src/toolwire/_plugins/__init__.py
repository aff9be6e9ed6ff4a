"""The plugin host: entry-point discovery, isolation, and the typed facade over ``pm.hook``.

One module per job: ``discovery`` (entry-point groups, plugin records, environment
switches, distribution metadata), ``wrappers`` (each hookimpl as a plain function held to
its time budget) and ``host`` (:class:`PluginHost` and the process's default host).
"""

from __future__ import annotations

from toolwire._plugins.discovery import ENTRY_POINT_GROUPS, PluginKind, PluginRecord
from toolwire._plugins.host import PluginHost, get_host

__all__ = [
    "ENTRY_POINT_GROUPS",
    "PluginHost",
    "PluginKind",
    "PluginRecord",
    "get_host",
]
