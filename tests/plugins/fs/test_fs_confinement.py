"""Confinement: nothing outside the root is read, written, listed or named."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolwire_fs import FsError, FsRoot, PathOutsideRootError

Run = Callable[..., Any]


def rejected(run: Run, outside: Path, name: str, **arguments: Any) -> str:
    """Run a tool expecting a confinement error; check it names nothing outside the root."""
    with pytest.raises(PathOutsideRootError) as info:
        run(name, **arguments)
    message = str(info.value)
    assert str(outside) not in message
    return message


# -- FsRoot --------------------------------------------------------------------------------


def test_relative_path_resolves_under_the_root(root: Path) -> None:
    (root / "a").mkdir()
    assert root / "a" / "b.txt" == FsRoot(root).resolve("a/b.txt")


def test_dot_is_the_root(root: Path) -> None:
    fs_root = FsRoot(root)
    assert (root.resolve(), ".") == (fs_root.resolve("."), fs_root.show(fs_root.resolve(".")))


def test_absolute_path_inside_the_root_is_accepted(root: Path) -> None:
    assert root / "x.txt" == FsRoot(root).resolve(str(root / "x.txt"))


def test_absolute_path_through_the_configured_symlinked_root_is_accepted(
    tmp_path: Path, root: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert root / "x.txt" == FsRoot(alias).resolve(str(alias / "x.txt"))


def test_absolute_path_outside_the_root_is_refused(root: Path) -> None:
    with pytest.raises(PathOutsideRootError) as info:
        FsRoot(root).resolve("/etc/passwd")
    assert (
        "absolute path '/etc/passwd' is outside the root; give a path relative to the root instead"
        == str(info.value)
    )


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "a/../b", "a/../../x", "./.."])
def test_dot_dot_is_refused_wherever_it_appears(root: Path, path: str) -> None:
    with pytest.raises(PathOutsideRootError) as info:
        FsRoot(root).resolve(path)
    assert f"path {path!r} uses '..'" in str(info.value)


def test_absolute_path_climbing_out_with_dot_dot_is_refused(root: Path) -> None:
    with pytest.raises(PathOutsideRootError, match=r"uses '\.\.'"):
        FsRoot(root).resolve(f"{root}/../outside/secret.txt")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "the path is empty; give a path relative to the root, such as '.'"),
        ("  ", "the path is empty; give a path relative to the root, such as '.'"),
        ("a\x00b", "path 'a\\x00b' contains a NUL character"),
    ],
)
def test_malformed_paths_are_refused(root: Path, path: str, message: str) -> None:
    with pytest.raises(FsError) as info:
        FsRoot(root).resolve(path)
    assert message == str(info.value)


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FsError) as info:
        FsRoot(tmp_path / "nope")
    assert f"the file tools' root {str(tmp_path / 'nope')!r} does not exist" == str(info.value)


def test_a_file_as_root_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(FsError, match="is not a directory"):
        FsRoot(tmp_path / "f")


def test_inside_is_component_wise_not_a_string_prefix(tmp_path: Path, root: Path) -> None:
    sibling = tmp_path / "root-sibling"
    sibling.mkdir()
    assert (True, False) == (FsRoot(root).inside(root / "x"), FsRoot(root).inside(sibling))


# -- symbolic links ------------------------------------------------------------------------


def test_reading_a_file_link_that_escapes_is_refused(run: Run, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    message = rejected(run, outside, "read_file", path="link.txt")
    assert "path 'link.txt' leads outside the root through a symbolic link" in message


def test_reading_through_a_directory_link_that_escapes_is_refused(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    rejected(run, outside, "read_file", path="out/secret.txt")


def test_a_chain_of_links_that_ends_outside_is_refused(run: Run, root: Path, outside: Path) -> None:
    (root / "hop2").symlink_to(outside / "secret.txt")
    (root / "hop1").symlink_to(root / "hop2")
    rejected(run, outside, "read_file", path="hop1")


def test_a_relative_link_climbing_out_is_refused(run: Run, root: Path, outside: Path) -> None:
    (root / "rel").symlink_to(os.path.join("..", "outside", "secret.txt"))
    rejected(run, outside, "read_file", path="rel")


def test_a_link_inside_the_root_is_followed(run: Run, root: Path) -> None:
    (root / "real.txt").write_text("hello\n")
    (root / "alias.txt").symlink_to("real.txt")
    assert "hello\n" == run("read_file", path="alias.txt")


def test_listing_through_an_escaping_directory_link_is_refused(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    rejected(run, outside, "list_dir", path="out")


def test_writing_through_an_escaping_parent_link_is_refused(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    rejected(run, outside, "write_file", path="out/new.txt", content="x")
    assert ["secret.txt"] == sorted(os.listdir(outside))


def test_writing_to_an_escaping_file_link_leaves_the_target_alone(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    rejected(run, outside, "write_file", path="link.txt", content="pwned")
    assert "top secret\n" == (outside / "secret.txt").read_text()


def test_writing_to_a_dangling_link_pointing_outside_creates_nothing(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "dangling").symlink_to(outside / "new.txt")
    rejected(run, outside, "write_file", path="dangling", content="x")
    assert not (outside / "new.txt").exists()


def test_writing_deep_under_an_escaping_link_creates_no_directories_outside(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    rejected(run, outside, "write_file", path="out/a/b/c.txt", content="x")
    assert not (outside / "a").exists()


def test_grep_does_not_follow_a_file_link_out_of_the_root(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "ok.txt").write_text("not secret\n")
    assert "ok.txt:1: not secret" == run("grep", pattern="secret")


def test_grep_does_not_descend_into_a_directory_link_out_of_the_root(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    assert "(no matches for 'top' under '.')" == run("grep", pattern="top")


def test_find_does_not_list_what_lies_outside(run: Run, root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    (root / "mine.txt").write_text("x")
    assert "mine.txt" == run("find", pattern="*.txt")
    assert "(no matches for 'out/*' under '.')" == run("find", pattern="out/*")


def test_list_dir_never_shows_a_link_target(run: Run, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    listing = run("list_dir")
    assert ("link.txt@", False) == (listing, str(outside) in listing)


def test_absolute_paths_outside_are_refused_by_every_tool(run: Run, outside: Path) -> None:
    secret = str(outside / "secret.txt")
    for name, args in [
        ("read_file", {"path": secret}),
        ("list_dir", {"path": str(outside)}),
        ("find", {"pattern": "*", "path": str(outside)}),
        ("grep", {"pattern": "x", "path": secret}),
        ("write_file", {"path": secret, "content": "x"}),
        ("delete_file", {"path": secret}),
    ]:
        with pytest.raises(PathOutsideRootError, match="is outside the root"):
            run(name, **args)
    assert "top secret\n" == (outside / "secret.txt").read_text()
