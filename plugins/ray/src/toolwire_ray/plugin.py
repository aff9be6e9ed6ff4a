"""The ``toolwire.backends`` entry point: registers the ``ray`` executor backend."""

from __future__ import annotations

from typing import Any

from toolwire import hookimpl


@hookimpl
def toolwire_register_backends(register: Any) -> None:
    from toolwire_ray._backend import RayBackend

    register("ray", RayBackend)
