"""Files that decide something: owner_only (who may change them) and write_private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from toolwire.adapters import owner_only, write_private

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owner bits")


def test_write_private_writes_the_users_own_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "new" / "store.json"
    write_private(path, "first\n")
    write_private(path, "second\n")
    assert ("second\n", 0o600, 0o700, None) == (
        path.read_text(),
        stat.S_IMODE(path.stat().st_mode),
        stat.S_IMODE(path.parent.stat().st_mode),
        owner_only(path.stat(), secret=True),
    )
    assert ["store.json"] == [p.name for p in path.parent.iterdir()]  # no temporary left


def test_write_private_leaves_the_old_file_when_it_fails(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    write_private(path, "kept\n")
    with pytest.raises(TypeError):
        write_private(path, b"not text")  # type: ignore[arg-type]
    assert ("kept\n", ["store.json"]) == (path.read_text(), [p.name for p in tmp_path.iterdir()])


@pytest.mark.parametrize(
    ("mode", "secret", "any_owner", "said"),
    [
        (0o600, False, False, None),
        (0o664, False, False, None),  # the user's own group: a umask of 002
        (0o666, False, False, "open to others (mode 666)"),
        (0o640, True, False, "open to others (mode 640)"),
        (0o646, False, True, "open to others (mode 646)"),
    ],
)
def test_owner_only(
    tmp_path: Path, mode: int, secret: bool, any_owner: bool, said: str | None
) -> None:
    path = tmp_path / "f"
    path.write_text("x")
    path.chmod(mode)
    assert said == owner_only(path.stat(), secret=secret, any_owner=any_owner)
