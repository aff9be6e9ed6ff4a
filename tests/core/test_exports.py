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


# -- every public module agrees with toolwire._exports (the one source of truth) -----------

import importlib  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from toolwire import _exports  # noqa: E402

ROOT = Path(__file__).parents[2]
FACES = {
    "toolwire": _exports.TOPLEVEL,
    "toolwire.adapters": _exports.ADAPTERS,
    "toolwire.schema": _exports.SCHEMA,
    "toolwire.exceptions": _exports.EXCEPTIONS,
}


def test_generated_import_blocks_match_the_tables() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_exports.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert 0 == done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("face", sorted(FACES))
def test_each_public_module_exports_exactly_its_table(face: str) -> None:
    module = importlib.import_module(face)
    extra = {"__version__"} if face == "toolwire" else set()
    assert sorted({*FACES[face], *extra}, key=_isort_key) == module.__all__


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_public_object_reports_a_public_module(face: str) -> None:
    module = importlib.import_module(face)
    private = {}
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__.startswith("toolwire._"):
            private[name] = obj.__module__
    assert {} == private


def test_the_top_level_is_for_application_authors() -> None:
    # About 90 names: tools, toolsets, calls, sessions, turns, rounds, hooks, providers, the
    # host, the executor, the agent, the media parts and the common exceptions. The rest is
    # in submodules.
    assert len(toolwire.__all__) < 105
    assert not set(_exports.MOVED) & set(toolwire.__all__)


@pytest.mark.parametrize("name", sorted(_exports.MOVED))
def test_a_name_moved_off_the_top_level_still_works_with_a_deprecation_warning(
    name: str,
) -> None:
    module_name, _, new_name = _exports.MOVED[name].partition(":")
    new_name = new_name or name
    new_home = importlib.import_module(module_name)
    with pytest.warns(
        DeprecationWarning, match=rf"toolwire\.{name} moved to {module_name}\.{new_name}"
    ):
        value = getattr(toolwire, name)
    assert getattr(new_home, new_name) is value
    assert name not in dir(toolwire)


def test_public_submodules_are_attributes_of_the_package() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert toolwire.adapters.HttpProvider.__name__ == "HttpProvider"
        assert toolwire.exceptions.ToolwireError is toolwire.ToolwireError


def test_public_objects_pickle_by_their_public_name() -> None:
    call = toolwire.ToolCall("c1", "add", "{}")
    assert call == pickle.loads(pickle.dumps(call))
    err = toolwire.exceptions.RateLimitError("slow down", provider="p", retry_after=2.0)
    assert "toolwire.exceptions" == type(pickle.loads(pickle.dumps(err))).__module__
