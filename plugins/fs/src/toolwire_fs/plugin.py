"""The toolwire-fs plugin: registers the ``fs`` toolset (entry point ``toolwire.toolsets``).

Importing this module is cheap: the tools are built only when the host asks
for toolsets, from the environment at that moment (see
:func:`toolwire_fs.fs_toolset_from_env`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire.hookspecs import RegisterToolset

__all__ = ["toolwire_register_toolsets"]


@hookimpl
def toolwire_register_toolsets(register: RegisterToolset) -> None:
    """Register the ``fs`` toolset (tools confined to ``TOOLWIRE_FS_ROOT``)."""
    from toolwire_fs._tools import fs_toolset_from_env

    register(fs_toolset_from_env())
