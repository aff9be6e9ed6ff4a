"""Which plugin host and which backend an executor (or an agent) uses."""

from __future__ import annotations

import os
from typing import Any

from toolwire._backends import BACKEND_ENV, ToolBackend
from toolwire._errors import UsageError
from toolwire._exports import publish
from toolwire._plugins import get_host


def resolve_backend(backend: Any, host: Any) -> ToolBackend | None:
    """The backend an executor uses: an instance as it is; a name looked up in the
    plugin host; None: ``TOOLWIRE_BACKEND`` if set, else in-process (None)."""
    if backend is None:
        backend = os.environ.get(BACKEND_ENV, "").strip() or None
        if backend is None or backend == "inprocess":
            return None
    if isinstance(backend, ToolBackend):
        return backend
    if isinstance(backend, str):
        if backend == "inprocess":
            return None
        if host is None:
            host = get_host()
        found: ToolBackend = host.backend(backend)  # the host checks what the factory made
        return found
    raise UsageError(
        f"backend must be a ToolBackend, a registered backend's name or None, "
        f"got {type(backend).__name__}"
    )


def _resolve_host(plugins: Any) -> Any:
    """``True``: the process's plugin host; ``False``/None: its policies without its tool
    packs (dropping tool packs never drops a policy); else the host given."""
    if plugins is True:
        return get_host()
    if plugins is False or plugins is None:
        return get_host().policies_only()
    if not hasattr(plugins, "hook_sets") or not hasattr(plugins, "atool_result"):
        raise UsageError(
            f"plugins must be True, False or a toolwire.PluginHost, got {type(plugins).__name__}"
        )
    return plugins


publish(globals())
