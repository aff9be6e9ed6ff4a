"""The plugin host: entry-point discovery, isolation, and the typed facade over ``pm.hook``.

One module per job: ``discovery`` (entry-point groups, plugin records, environment
switches, distribution metadata), ``wrappers`` (each hookimpl as a plain function held to
its time budget) and ``host`` (:class:`PluginHost` and the process's default host).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

if TYPE_CHECKING:
    from toolwire._plugins.discovery import PluginRecord
    from toolwire._plugins.entrypoints import ENTRY_POINT_GROUPS, PluginKind
    from toolwire._plugins.host import PluginHost, get_host

# Lazy, so a light part (discovery, which the command line's --help reads) does not
# import the host (pydantic, the hooks' machinery).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ENTRY_POINT_GROUPS": "toolwire._plugins.entrypoints",
        "PluginKind": "toolwire._plugins.entrypoints",
        "PluginRecord": "toolwire._plugins.discovery",
        "PluginHost": "toolwire._plugins.host",
        "get_host": "toolwire._plugins.host",
    },
    globals(),
)

__all__ = [
    "ENTRY_POINT_GROUPS",
    "PluginHost",
    "PluginKind",
    "PluginRecord",
    "get_host",
]
