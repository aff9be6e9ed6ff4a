"""``toolwire.__all__`` is sorted and is exactly the public surface."""

from __future__ import annotations

import types

import toolwire


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 "isort-style": CONSTANTS, then CamelCase, then everything else.
    if name.isupper() and len(name) > 1:
        return 0, name
    if name[:1].isupper():
        return 1, name
    return 2, name


def test_all_is_sorted() -> None:
    assert sorted(toolwire.__all__, key=_isort_key) == toolwire.__all__


def test_all_has_no_duplicates() -> None:
    assert len(set(toolwire.__all__)) == len(toolwire.__all__)


def test_every_exported_name_is_importable() -> None:
    assert [] == [name for name in toolwire.__all__ if not hasattr(toolwire, name)]


def test_every_public_name_is_exported() -> None:
    # dir() includes the lazily imported names; submodules are not API names.
    public = {
        name
        for name in dir(toolwire)
        if not name.startswith("_") and not isinstance(vars(toolwire).get(name), types.ModuleType)
    }
    assert set() == public - set(toolwire.__all__)
