"""The file tools under attack: runaway patterns, huge lines, secrets, read-only files,
setuid bits, root paths in error texts, and a link swapped in after the check (#11.21, #11.22)."""

from __future__ import annotations

import os
import stat
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from conftest import Run, call_tool

import toolwire_fs._tools as fs_tools
from toolwire_fs import FsError, FsRoot, fs_toolset, fs_toolset_from_env


def _within(seconds: float, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` on a thread and fail if it has not returned in ``seconds``."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return box[0]


# -- #21: bounded grep, find and reads -----------------------------------------------------


def test_grep_with_a_catastrophic_regex_stops_at_its_deadline(
    run: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reproducer: '(a|aa)+$' on a line of 40 a's and a '!' backtracks for ever in re.
    monkeypatch.setattr(fs_tools, "WALK_SECONDS", 0.5)
    (root / "a.txt").write_text("fine\n" + "a" * 40 + "!\n")
    out = _within(30, run, "grep", pattern="(a|aa)+$")
    assert "stopped after 0.5 s" in out


def test_grep_says_it_stopped_when_the_regex_times_out_before_the_walk_deadline(
    run: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reproducer of a flaky miss: the regex engine's own timer can fire a moment before
    # the walk's deadline; its TimeoutError (an OSError) was taken for an unreadable file,
    # and grep answered "no matches" without saying the search had stopped.
    (root / "a.txt").write_text("needle\n")
    (root / "b.txt").write_text("needle\n")
    import regex

    compile_ = regex.compile

    class TimesOut:
        def __init__(self, pattern: str) -> None:
            self.rx = compile_(pattern)

        def search(self, line: str, timeout: float | None = None) -> Any:
            assert timeout is not None
            assert timeout > 1  # the walk's deadline is still ahead
            raise TimeoutError("regex timed out")

    monkeypatch.setattr(regex, "compile", TimesOut)
    out = run("grep", pattern="needle")
    assert out.startswith("(no matches for 'needle' under '.')\n... stopped after 10 s")
    assert "nested repetition" in out


def test_find_with_many_double_stars_is_linear(run: Run, root: Path) -> None:
    deep = root.joinpath(*["d"] * 14)
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("")
    pattern = "/".join(["**"] * 30) + "/x.txt"
    out = _within(30, run, "find", pattern=pattern)
    assert "/".join(["d"] * 14) + "/x.txt" == out


def test_find_and_grep_stop_after_their_directory_budget(
    run: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs_tools, "MAX_WALKED_DIRS", 3)
    for i in range(6):
        (root / f"d{i}").mkdir()
        (root / f"d{i}" / "f.txt").write_text("needle\n")
    found = run("find", pattern="**/f.txt")
    assert "stopped after 3 directories" in found
    assert found.count("f.txt") == 2  # the root and two directories were visited
    grepped = run("grep", pattern="needle")
    assert "stopped after 3 directories" in grepped


@pytest.mark.parametrize("tool", ["read", "grep"])
def test_a_huge_single_line_costs_a_bounded_amount_of_memory(root: Path, tool: str) -> None:
    # The reproducer: a 256 MiB line cost ~480 MiB; here 16 MiB, which must cost < 4 MiB
    # (read: the 256 KiB read limit; grep: the 1 MiB it scans of a line, as bytes and text).
    (root / "big.txt").write_bytes(b"x" * (16 * 1024 * 1024) + b"\nsecond line\n")
    fs = fs_toolset(root)
    tracemalloc.start()
    try:
        if tool == "read":
            assert "second line\n" == call_tool(fs, "read_file", path="big.txt", offset=1)
            with pytest.raises(FsError, match="over the read limit"):
                call_tool(fs, "read_file", path="big.txt", offset=0, limit=1)
        else:
            assert "big.txt:2: second line" == call_tool(fs, "grep", pattern="second")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak


# -- #22: secrets, read-only files, setuid, root paths, the race ---------------------------

SECRETS = [".env", ".env.local", "config/.env", ".git/config", ".ssh/id_rsa", "deploy.pem"]


@pytest.fixture
def with_secrets(root: Path) -> Path:
    for name in SECRETS:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("TOKEN=hunter2\n")
    (root / "notes.txt").write_text("TOKEN is in .env\n")
    (root / "innocent.txt").symlink_to(root / ".env")
    return root


@pytest.mark.parametrize("path", [*SECRETS, "innocent.txt", "./.ENV"])
def test_secrets_are_refused_by_default(run: Run, with_secrets: Path, path: str) -> None:
    with pytest.raises(FsError, match="looks like secrets or credentials"):
        run("read_file", path=path)
    with pytest.raises(FsError, match="looks like secrets or credentials"):
        run("write_file", path=path, content="x")


def test_secrets_are_left_out_of_listings_and_searches(run: Run, with_secrets: Path) -> None:
    listed = run("list_dir")
    assert ".env" not in listed.split()
    assert ".git/" not in listed
    assert "(5 entries hidden by the deny list: secrets, credentials)" in listed
    assert "(empty directory) (1 entry hidden by the deny list)" == run("list_dir", path="config")
    assert ".env" not in run("find", pattern="**/*")
    assert ["notes.txt:1: TOKEN is in .env"] == run("grep", pattern="TOKEN").splitlines()


def test_the_deny_list_is_configurable(with_secrets: Path) -> None:
    open_fs = fs_toolset(with_secrets, deny=())
    assert "TOKEN=hunter2\n" == call_tool(open_fs, "read_file", path=".env")
    env_fs = fs_toolset_from_env(
        {"TOOLWIRE_FS_ROOT": str(with_secrets), "TOOLWIRE_FS_ALLOW_SECRETS": "1"}
    )
    assert "TOKEN=hunter2\n" == call_tool(env_fs, "read_file", path=".git/config")
    more = fs_toolset_from_env(
        {"TOOLWIRE_FS_ROOT": str(with_secrets), "TOOLWIRE_FS_DENY": "notes*"}
    )
    with pytest.raises(FsError, match=r"'notes\.txt' looks like secrets"):
        call_tool(more, "read_file", path="notes.txt")
    with pytest.raises(FsError, match="one path component"):
        fs_toolset(with_secrets, deny=["a/b"])
    with pytest.raises(FsError, match="TOOLWIRE_FS_ALLOW_SECRETS must be 1 or 0"):
        fs_toolset_from_env({"TOOLWIRE_FS_ALLOW_SECRETS": "maybe"})


def test_write_file_does_not_replace_a_read_only_file(run: Run, root: Path) -> None:
    target = root / "locked.txt"
    target.write_text("keep me\n")
    target.chmod(0o444)
    with pytest.raises(FsError, match=r"'locked\.txt' is read-only; it was not replaced"):
        run("write_file", path="locked.txt", content="overwritten")
    assert "keep me\n" == target.read_text()


def test_write_file_drops_setuid_and_setgid_bits(run: Run, root: Path) -> None:
    target = root / "tool.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o6755)
    run("write_file", path="tool.sh", content="#!/bin/sh\necho replaced\n")
    mode = stat.S_IMODE(target.stat().st_mode)
    assert 0o755 == mode
    assert "echo replaced" in target.read_text()
    assert [] == [p.name for p in root.iterdir() if p.name.endswith(".tmp")]


def test_no_error_text_reveals_the_real_root(run: Run, root: Path, outside: Path) -> None:
    (root / "dir").mkdir()
    (root / "link").symlink_to(outside / "secret.txt")
    (root / "bin.dat").write_bytes(b"\x00\x01")
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "missing.txt"}),
        ("read_file", {"path": "dir"}),
        ("read_file", {"path": "link"}),
        ("read_file", {"path": "bin.dat"}),
        ("read_file", {"path": str(root / "missing.txt")}),
        ("read_file", {"path": "../outside/secret.txt"}),
        ("list_dir", {"path": "nope"}),
        ("find", {"pattern": "**a"}),
        ("grep", {"pattern": "(", "path": "."}),
        ("write_file", {"path": "dir", "content": "x"}),
        ("write_file", {"path": "link/x", "content": "x"}),
        ("delete_file", {"path": "missing.txt"}),
    ]
    real = str(root.resolve())
    for name, arguments in attempts:
        with pytest.raises(FsError) as info:
            run(name, **arguments)
        text = str(info.value)
        assert real not in text.replace(str(root / "missing.txt"), "<given>"), (name, text)


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_a_link_swapped_in_after_the_check_is_not_followed(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race: the path is checked, then a directory on it becomes a link out of the root.
    (root / "sub").mkdir()
    (root / "sub" / "secret.txt").write_text("inside\n")
    checked = FsRoot.resolve

    def check_then_swap(self: FsRoot, path: str, **kwargs: Any) -> Path:
        real = checked(self, path, **kwargs)
        (root / "sub" / "secret.txt").unlink()
        (root / "sub").rmdir()
        (root / "sub").symlink_to(outside)
        return real

    monkeypatch.setattr(FsRoot, "resolve", check_then_swap)
    fs = fs_toolset(root)
    with pytest.raises(FsError, match="changed while it was being opened"):
        call_tool(fs, "read_file", path="sub/secret.txt")


# -- #25.16: FIFOs and error texts -----------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_reading_a_fifo_does_not_wait_for_a_writer(run: Run, root: Path) -> None:
    # Attack (#25.16): read_file on a FIFO blocked until a writer appeared (for ever).
    os.mkfifo(root / "pipe")

    def attempt() -> str:
        try:
            run("read_file", path="pipe")
        except FsError as exc:
            return str(exc)
        return "read"

    assert "'pipe' is not a regular file" == _within(10, attempt)


@pytest.mark.parametrize("tool", ["read_file", "list_dir", "write_file", "find", "grep"])
@pytest.mark.parametrize("path", ["a" * 300, "a/" * 3000 + "b"])
def test_errors_never_show_the_real_root(run: Run, root: Path, tool: str, path: str) -> None:
    # Attack (#25.16): `File name too long` (and `Permission denied`) errors carried the
    # real path, the root's location on the machine included.
    extra: dict[str, Any] = {"write_file": {"content": "x"}, "find": {"pattern": "*"}}.get(
        tool, {"pattern": "x"} if tool == "grep" else {}
    )
    with pytest.raises(FsError) as info:
        run(tool, path=path, **extra)
    assert str(root) not in str(info.value)
    assert str(info.value).startswith("cannot ")
