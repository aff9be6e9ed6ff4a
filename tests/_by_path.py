"""Load a module of this repository by its file path (the benchmark's helpers, the
release tool): they are not installed, and ``bench`` here names tests/bench."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

#: The repository's root.
ROOT = Path(__file__).resolve().parents[1]


def load(name: str, path: Path, *, register: bool = False) -> ModuleType:
    """The module at ``path`` (relative to the repository's root, or absolute), run once
    under ``name``; ``register``: kept in ``sys.modules`` (a module whose dataclasses or
    pickles look themselves up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
