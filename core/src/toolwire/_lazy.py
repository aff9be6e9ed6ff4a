"""Lazy exports for a public module: names imported from their private module on first use."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from toolwire._exports import publish

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    names: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    moved: Mapping[str, str] | None = None,
    submodules: frozenset[str] = frozenset(),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a module whose public ``names`` map to private modules.

    A name is imported from its module the first time it is read, then stored in the
    module's ``namespace`` (its ``globals()``), so later reads cost nothing. A name in
    ``moved`` (name -> the public module that has it now, ``module:NewName`` if renamed)
    still resolves, with a
    DeprecationWarning on every read, and is not listed by ``dir()``. A name in
    ``submodules`` is the package's public submodule of that name, imported on first read.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None and name in submodules:
            return importlib.import_module(f"{package}.{name}")
        if module is None:
            new_home = moved.get(name) if moved else None
            if new_home is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            module_name, _, new_name = new_home.partition(":")
            new_name = new_name or name
            warnings.warn(
                f"{package}.{name} moved to {module_name}.{new_name}; import it from there "
                f"(the old name will be removed in the next minor release)",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(module_name), new_name)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__


publish(globals())
