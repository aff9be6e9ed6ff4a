"""The toolwire-http plugin: registers the ``http`` toolset (entry point ``toolwire.toolsets``).

Importing this module is cheap: the tools are built when the host asks for toolsets,
from the environment at that moment (see :func:`toolwire_http.http_toolset_from_env`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire.hookspecs import RegisterToolset

__all__ = ["toolwire_register_toolsets"]


@hookimpl
def toolwire_register_toolsets(register: RegisterToolset) -> None:
    """Register the ``http`` toolset (``fetch``; ``http_request`` off by default)."""
    from toolwire_http._tools import http_toolset_from_env

    register(http_toolset_from_env())
