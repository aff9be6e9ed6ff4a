"""Each file tool: what it returns, its limits and its error messages."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import toolwire_fs._tools as fs_tools
from toolwire import Capability, ToolEffect, Toolset
from toolwire_fs import BinaryFileError, FileTooLargeError, FsError, fs_toolset

Run = Callable[..., Any]


def call_tool(toolset: Toolset, name: str, /, **arguments: Any) -> Any:
    tool = toolset.get(name)
    assert tool is not None
    return tool.call(tool.validate_python(arguments))


# -- the toolset ---------------------------------------------------------------------------


def test_the_toolset_is_named_fs_with_delete_off(fs: Toolset) -> None:
    assert ("fs", ["read_file", "list_dir", "find", "grep", "write_file", "delete_file"]) == (
        fs.name,
        [t.name for t in fs.tools()],
    )
    assert ["delete_file"] == [t.name for t in fs.tools() if fs.is_off(t.name)]


def test_delete_file_is_absent_unless_allowed(root: Path) -> None:
    assert "delete_file" not in fs_toolset(root)


@pytest.mark.parametrize(
    ("name", "effect", "idempotent"),
    [
        ("read_file", ToolEffect.READ_ONLY, True),
        ("list_dir", ToolEffect.READ_ONLY, True),
        ("find", ToolEffect.READ_ONLY, True),
        ("grep", ToolEffect.READ_ONLY, True),
        ("write_file", ToolEffect.MUTATING, True),
        ("delete_file", ToolEffect.DESTRUCTIVE, False),
    ],
)
def test_tool_metadata(fs: Toolset, name: str, effect: ToolEffect, idempotent: bool) -> None:
    tool = fs.get(name)
    assert tool is not None
    assert (effect, idempotent, frozenset({Capability.FILESYSTEM})) == (
        tool.metadata.effect,
        tool.metadata.idempotent,
        tool.metadata.capabilities,
    )


def test_descriptions_come_from_the_docstrings(fs: Toolset) -> None:
    tool = fs.get("read_file")
    assert tool is not None
    schema = tool.input_schema
    assert ("Read a UTF-8 text file under the root.", "The file, relative to the root.") == (
        tool.description,
        schema["properties"]["path"]["description"],
    )


@pytest.mark.parametrize(
    ("option", "value"), [("max_read_bytes", 0), ("max_write_bytes", -1), ("max_read_bytes", True)]
)
def test_limits_must_be_positive(root: Path, option: str, value: Any) -> None:
    with pytest.raises(FsError, match=f"{option} must be a positive int"):
        fs_toolset(root, **{option: value})


# -- read_file -----------------------------------------------------------------------------


def test_read_file_returns_the_text_unchanged(run: Run, root: Path) -> None:
    (root / "a.txt").write_bytes(b"one\r\ntwo\n\xc3\xa9\n")
    assert "one\r\ntwo\né\n" == run("read_file", path="a.txt")


def test_read_file_offset_and_limit_count_lines(run: Run, root: Path) -> None:
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    assert "line 3\nline 4\n" == run("read_file", path="a.txt", offset=3, limit=2)


def test_read_file_offset_alone_reads_to_the_end(run: Run, root: Path) -> None:
    (root / "a.txt").write_text("a\nb\nc")
    assert "c" == run("read_file", path="a.txt", offset=2)


def test_read_file_offset_past_the_end_is_empty(run: Run, root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    assert "" == run("read_file", path="a.txt", offset=5)


def test_read_file_rejects_a_negative_offset_at_validation(fs: Toolset) -> None:
    tool = fs.get("read_file")
    assert tool is not None
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        tool.validate_json('{"path": "a", "offset": -1}')


def test_read_file_over_the_limit_is_refused(root: Path) -> None:
    (root / "big.txt").write_text("x" * 101)
    with pytest.raises(FileTooLargeError) as info:
        call_tool(fs_toolset(root, max_read_bytes=100), "read_file", path="big.txt")
    assert (
        "'big.txt' is 101 bytes, over the read limit of 100 bytes; "
        "read part of it with offset and limit (in lines)"
    ) == str(info.value)


def test_read_file_at_the_limit_is_read(root: Path) -> None:
    (root / "ok.txt").write_text("x" * 100)
    assert "x" * 100 == call_tool(fs_toolset(root, max_read_bytes=100), "read_file", path="ok.txt")


def test_a_large_file_can_be_read_in_parts(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"{i:09d}\n" for i in range(100)))
    toolset = fs_toolset(root, max_read_bytes=100)
    assert "000000050\n000000051\n" == call_tool(
        toolset, "read_file", path="big.txt", offset=50, limit=2
    )


def test_a_part_over_the_limit_is_refused(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"{i:09d}\n" for i in range(100)))
    with pytest.raises(FileTooLargeError, match="over the read limit of 100 bytes; ask for fewer"):
        call_tool(fs_toolset(root, max_read_bytes=100), "read_file", path="big.txt", offset=1)


def test_a_binary_file_is_reported_not_dumped(run: Run, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(BinaryFileError) as info:
        run("read_file", path="img.png")
    assert "'img.png' is a binary file (16 bytes); read_file returns text only" == str(info.value)


def test_a_binary_file_is_reported_when_reading_a_part(run: Run, root: Path) -> None:
    (root / "b.bin").write_bytes(b"a\nb\x00\n")
    with pytest.raises(BinaryFileError, match="is a binary file"):
        run("read_file", path="b.bin", limit=1)


def test_a_file_that_is_not_utf8_is_reported(run: Run, root: Path) -> None:
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(BinaryFileError) as info:
        run("read_file", path="latin1.txt")
    assert "'latin1.txt' is not UTF-8 text (4 bytes); read_file returns text only" == str(
        info.value
    )


def test_read_file_on_a_directory_points_to_list_dir(run: Run, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(FsError) as info:
        run("read_file", path="d")
    assert "'d' is a directory; use list_dir to see what it holds" == str(info.value)


def test_read_file_on_a_missing_file(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("read_file", path="nope.txt")
    assert "cannot read 'nope.txt': No such file or directory" == str(info.value)


# -- list_dir ------------------------------------------------------------------------------


def test_list_dir_marks_directories_and_links_and_sizes_files(run: Run, root: Path) -> None:
    (root / "b.txt").write_text("12345")
    (root / "a").mkdir()
    (root / "c").symlink_to("b.txt")
    (root / ".hidden").write_text("")
    assert ".hidden (0 bytes)\na/\nb.txt (5 bytes)\nc@" == run("list_dir")


def test_list_dir_of_a_subdirectory(run: Run, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "x.py").write_text("")
    assert "x.py (0 bytes)" == run("list_dir", path="sub")


def test_list_dir_of_an_empty_directory(run: Run) -> None:
    assert "(empty directory)" == run("list_dir")


def test_list_dir_of_a_file_points_to_read_file(run: Run, root: Path) -> None:
    (root / "f.txt").write_text("")
    with pytest.raises(FsError) as info:
        run("list_dir", path="f.txt")
    assert "'f.txt' is a file, not a directory; use read_file to read it" == str(info.value)


def test_list_dir_of_a_missing_directory(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("list_dir", path="nope")
    assert "no such directory 'nope'" == str(info.value)


def test_list_dir_is_bounded(run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs_tools, "MAX_LISTED", 2)
    for name in "abcd":
        (root / name).mkdir()
    assert "a/\nb/\n... 2 more entries not shown" == run("list_dir")


# -- find ----------------------------------------------------------------------------------


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "top.py").write_text("")
    (root / "src" / "a.py").write_text("")
    (root / "src" / "pkg" / "b.py").write_text("")
    (root / "src" / "notes.md").write_text("")
    return root


def test_find_star_stays_in_one_directory(run: Run, tree: Path) -> None:
    assert "top.py" == run("find", pattern="*.py")


def test_find_double_star_goes_to_every_depth(run: Run, tree: Path) -> None:
    assert "src/a.py\nsrc/pkg/b.py\ntop.py" == run("find", pattern="**/*.py")


def test_find_under_a_path_shows_paths_from_the_root(run: Run, tree: Path) -> None:
    assert "src/a.py\nsrc/notes.md\nsrc/pkg/" == run("find", pattern="*", path="src")


def test_find_with_no_match(run: Run, tree: Path) -> None:
    assert "(no matches for '*.rs' under '.')" == run("find", pattern="*.rs")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "the pattern is empty; give a glob such as '*.py' or '**/*.md'"),
        ("/etc/*", "the pattern '/etc/*' is absolute; give a glob relative to the path"),
        ("../*", "the pattern '../*' uses '..'; globs must stay under the path"),
        ("a/../../*", "the pattern 'a/../../*' uses '..'; globs must stay under the path"),
    ],
)
def test_find_refuses_patterns_that_leave_the_path(run: Run, pattern: str, message: str) -> None:
    with pytest.raises(FsError) as info:
        run("find", pattern=pattern)
    assert message == str(info.value)


def test_find_reports_an_invalid_pattern(run: Run, tree: Path) -> None:
    with pytest.raises(FsError, match="invalid glob pattern '\\*\\*a'"):
        run("find", pattern="**a")


def test_find_is_bounded(run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs_tools, "MAX_LISTED", 3)
    for i in range(5):
        (root / f"{i}.txt").write_text("")
    lines = run("find", pattern="*.txt").splitlines()
    assert (4, "... more matches not shown; narrow the pattern or the path") == (
        len(lines),
        lines[-1],
    )


# -- grep ----------------------------------------------------------------------------------


def test_grep_shows_file_line_and_text(run: Run, tree: Path) -> None:
    (tree / "src" / "a.py").write_text("import os\ndef main():\n    os.exit()\n")
    (tree / "top.py").write_text("x = 1\n")
    assert "src/a.py:1: import os\nsrc/a.py:3:     os.exit()" == run("grep", pattern=r"\bos\b")


def test_grep_filters_files_by_glob(run: Run, tree: Path) -> None:
    (tree / "src" / "a.py").write_text("needle\n")
    (tree / "src" / "notes.md").write_text("needle\n")
    assert "src/notes.md:1: needle" == run("grep", pattern="needle", glob="*.md")


def test_grep_glob_can_name_directories(run: Run, tree: Path) -> None:
    (tree / "src" / "a.py").write_text("needle\n")
    (tree / "src" / "pkg" / "b.py").write_text("needle\n")
    assert "src/pkg/b.py:1: needle" == run("grep", pattern="needle", glob="pkg/*.py")


def test_grep_in_one_file(run: Run, tree: Path) -> None:
    (tree / "src" / "a.py").write_text("a\nneedle\n")
    (tree / "top.py").write_text("needle\n")
    assert "src/a.py:2: needle" == run("grep", pattern="needle", path="src/a.py")


def test_grep_skips_binary_files(run: Run, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    (root / "text.txt").write_text("needle\n")
    assert "text.txt:1: needle" == run("grep", pattern="needle")


def test_grep_cuts_long_lines(run: Run, root: Path) -> None:
    (root / "long.txt").write_text("needle" + "x" * 1000 + "\n")
    out = run("grep", pattern="needle")
    assert "long.txt:1: " + ("needle" + "x" * 1000)[:300] + "..." == out


def test_grep_is_bounded(run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs_tools, "MAX_GREP_MATCHES", 2)
    (root / "many.txt").write_text("hit\n" * 5)
    assert (
        "many.txt:1: hit\nmany.txt:2: hit\n"
        "... more than 2 matching lines; narrow the pattern, the path or the glob"
    ) == run("grep", pattern="hit")


def test_grep_reports_an_invalid_regex(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("grep", pattern="(")
    assert "invalid regular expression '(': missing ) at position 1" == str(info.value)


def test_grep_with_no_match(run: Run, root: Path) -> None:
    (root / "a.txt").write_text("hay\n")
    assert "(no matches for 'needle' under '.')" == run("grep", pattern="needle")


def test_grep_on_a_missing_path(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("grep", pattern="x", path="nope")
    assert "no such file or directory 'nope'" == str(info.value)


# -- write_file ----------------------------------------------------------------------------


def test_write_file_creates_the_file_and_its_directories(run: Run, root: Path) -> None:
    assert "wrote 6 bytes to a/b/c.txt" == run("write_file", path="a/b/c.txt", content="héllo")
    assert "héllo" == (root / "a" / "b" / "c.txt").read_text(encoding="utf-8")


def test_write_file_replaces_and_keeps_the_mode(run: Run, root: Path) -> None:
    target = root / "run.sh"
    target.write_text("old")
    target.chmod(0o755)
    run("write_file", path="run.sh", content="new")
    assert ("new", 0o755) == (target.read_text(), stat.S_IMODE(target.stat().st_mode))


def test_write_file_leaves_no_temporary_files(run: Run, root: Path) -> None:
    run("write_file", path="a.txt", content="x")
    run("write_file", path="a.txt", content="y")
    assert ["a.txt"] == os.listdir(root)


def test_write_file_over_the_limit_writes_nothing(root: Path) -> None:
    (root / "keep.txt").write_text("original")
    toolset = fs_toolset(root, max_write_bytes=4)
    with pytest.raises(FileTooLargeError) as info:
        call_tool(toolset, "write_file", path="keep.txt", content="12345")
    assert (
        "content for 'keep.txt' is 5 bytes, over the write limit of 4 bytes; nothing was written"
    ) == str(info.value)
    assert ("original", ["keep.txt"]) == ((root / "keep.txt").read_text(), os.listdir(root))


def test_write_file_limit_counts_utf8_bytes(root: Path) -> None:
    with pytest.raises(FileTooLargeError, match="is 4 bytes"):
        call_tool(fs_toolset(root, max_write_bytes=3), "write_file", path="a", content="éé")


def test_write_file_to_a_directory_is_refused(run: Run, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(FsError) as info:
        run("write_file", path="d", content="x")
    assert "'d' is a directory; give the path of a file" == str(info.value)


def test_write_file_to_the_root_is_refused(run: Run) -> None:
    with pytest.raises(FsError, match="is a directory"):
        run("write_file", path=".", content="x")


def test_write_file_under_a_file_is_refused(run: Run, root: Path) -> None:
    (root / "f").write_text("")
    with pytest.raises(FsError) as info:
        run("write_file", path="f/x.txt", content="x")
    assert "cannot write 'f/x.txt': a parent of it is a file" == str(info.value)


def test_write_file_through_a_link_inside_the_root_writes_the_target(run: Run, root: Path) -> None:
    (root / "real.txt").write_text("old")
    (root / "alias.txt").symlink_to("real.txt")
    run("write_file", path="alias.txt", content="new")
    assert ("new", True) == ((root / "real.txt").read_text(), (root / "alias.txt").is_symlink())


# -- delete_file ---------------------------------------------------------------------------


def test_delete_file_removes_a_file(run: Run, root: Path) -> None:
    (root / "a.txt").write_text("")
    assert ("deleted a.txt", []) == (run("delete_file", path="a.txt"), os.listdir(root))


def test_delete_file_removes_a_link_and_never_its_target(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "link").symlink_to(outside / "secret.txt")
    run("delete_file", path="link")
    assert (False, "top secret\n") == (
        (root / "link").is_symlink(),
        (outside / "secret.txt").read_text(),
    )


def test_delete_file_refuses_directories(run: Run, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(FsError) as info:
        run("delete_file", path="d")
    assert "'d' is a directory; delete_file removes single files" == str(info.value)


def test_delete_file_refuses_the_root(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("delete_file", path=".")
    assert "path '.' is the root itself; name a file under it" == str(info.value)


def test_delete_file_on_a_missing_file(run: Run) -> None:
    with pytest.raises(FsError) as info:
        run("delete_file", path="nope")
    assert "no such file 'nope'" == str(info.value)


def test_delete_file_through_an_escaping_directory_link_is_refused(
    run: Run, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    with pytest.raises(FsError, match="leads outside the root"):
        run("delete_file", path="out/secret.txt")
    assert (outside / "secret.txt").exists()
