"""The fs plugin: configuration from the environment, and discovery through its entry point."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

import toolwire_fs
from toolwire import Toolset
from toolwire_fs import FsError, fs_toolset_from_env


def test_the_root_comes_from_the_environment(root: Path) -> None:
    (root / "hello.txt").write_text("hi")
    toolset = fs_toolset_from_env({"TOOLWIRE_FS_ROOT": str(root)})
    tool = toolset.get("read_file")
    assert tool is not None
    assert "hi" == tool.call(tool.validate_python({"path": "hello.txt"}))


def test_the_root_defaults_to_the_current_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "here.txt").write_text("")
    monkeypatch.chdir(root)
    tool = fs_toolset_from_env({}).get("list_dir")
    assert tool is not None
    assert "here.txt (0 bytes)" == tool.call(tool.validate_python({}))


@pytest.mark.parametrize(("value", "present"), [("1", True), ("yes", True), ("0", False)])
def test_delete_is_added_only_when_the_environment_allows_it(
    root: Path, value: str, present: bool
) -> None:
    env = {"TOOLWIRE_FS_ROOT": str(root), "TOOLWIRE_FS_ALLOW_DELETE": value}
    assert present == ("delete_file" in fs_toolset_from_env(env))


def test_limits_come_from_the_environment(root: Path) -> None:
    (root / "big.txt").write_text("x" * 11)
    env = {"TOOLWIRE_FS_ROOT": str(root), "TOOLWIRE_FS_MAX_READ_BYTES": "10"}
    tool = fs_toolset_from_env(env).get("read_file")
    assert tool is not None
    with pytest.raises(FsError, match="over the read limit of 10 bytes"):
        tool.call(tool.validate_python({"path": "big.txt"}))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "TOOLWIRE_FS_MAX_READ_BYTES",
            "lots",
            "TOOLWIRE_FS_MAX_READ_BYTES must be a positive number of bytes, got 'lots'",
        ),
        (
            "TOOLWIRE_FS_MAX_WRITE_BYTES",
            "0",
            "TOOLWIRE_FS_MAX_WRITE_BYTES must be a positive number of bytes, got '0'",
        ),
        (
            "TOOLWIRE_FS_ALLOW_DELETE",
            "maybe",
            "TOOLWIRE_FS_ALLOW_DELETE must be 1 or 0, got 'maybe'",
        ),
    ],
)
def test_bad_environment_values_are_named(root: Path, key: str, value: str, message: str) -> None:
    with pytest.raises(FsError) as info:
        fs_toolset_from_env({"TOOLWIRE_FS_ROOT": str(root), key: value})
    assert message == str(info.value)


def test_a_missing_root_in_the_environment_is_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(FsError, match="does not exist"):
        fs_toolset_from_env({"TOOLWIRE_FS_ROOT": missing})


def test_the_public_surface() -> None:
    assert [
        "ALLOW_DELETE_ENV",
        "ALLOW_SECRETS_ENV",
        "DEFAULT_DENY",
        "DENY_ENV",
        "DEFAULT_MAX_READ_BYTES",
        "DEFAULT_MAX_WRITE_BYTES",
        "MAX_GREP_MATCHES",
        "MAX_LISTED",
        "MAX_READ_ENV",
        "MAX_WRITE_ENV",
        "ROOT_ENV",
        "BinaryFileError",
        "FileTooLargeError",
        "FsError",
        "FsRoot",
        "PathOutsideRootError",
        "__version__",
        "fs_toolset",
        "fs_toolset_from_env",
    ] == toolwire_fs.__all__
    assert sorted(n for n in dir(toolwire_fs) if not n.startswith("_") and n != "plugin") == sorted(
        n for n in toolwire_fs.__all__ if n != "__version__"
    )


# -- discovery -----------------------------------------------------------------------------


def _entry_point() -> importlib.metadata.EntryPoint:
    found = [
        ep for ep in importlib.metadata.entry_points(group="toolwire.toolsets") if ep.name == "fs"
    ]
    assert 1 == len(found), "toolwire-fs is not installed with its entry point"
    return found[0]


def test_the_entry_point_is_installed_and_loads() -> None:
    ep = _entry_point()
    module = ep.load()
    assert ("toolwire_fs.plugin", "toolwire-fs") == (ep.value, ep.dist.name if ep.dist else None)
    assert callable(module.toolwire_register_toolsets)


def test_the_plugin_registers_the_fs_toolset(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_FS_ROOT", str(root))
    registered: list[tuple[Toolset, dict[str, Any]]] = []

    def register(toolset: Toolset, **options: Any) -> None:
        registered.append((toolset, options))

    _entry_point().load().toolwire_register_toolsets(register)
    assert [("fs", {})] == [(t.name, o) for t, o in registered]


def test_the_host_discovers_and_assembles_the_plugin(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = pytest.importorskip("toolwire._plugins", reason="the plugin host is not there yet")
    monkeypatch.setenv("TOOLWIRE_FS_ROOT", str(root))
    host = plugins.PluginHost(autoload=True, allow=["fs"], deny=[], strict=True)
    toolset = host.assemble()
    [record] = [r for r in host.plugins if r.name == "fs"]
    assert ("toolset", "toolwire-fs", "loaded") == (record.kind, record.distribution, record.status)
    assert {"read_file", "list_dir", "find", "grep", "write_file"} <= {t.name for t in toolset}


def test_without_a_configured_root_write_file_is_off(tmp_path: Any, monkeypatch: Any) -> None:
    from toolwire_fs import fs_toolset_from_env

    monkeypatch.chdir(tmp_path)
    toolset = fs_toolset_from_env({})
    assert (["read_file", "list_dir", "find", "grep"], True) == (
        [t.name for t in toolset.default_tools()],
        toolset.is_off("write_file"),
    )


def test_a_configured_root_turns_write_file_on(tmp_path: Any) -> None:
    from toolwire_fs import fs_toolset_from_env

    toolset = fs_toolset_from_env({"TOOLWIRE_FS_ROOT": str(tmp_path)})
    assert ["read_file", "list_dir", "find", "grep", "write_file"] == [
        t.name for t in toolset.default_tools()
    ]
