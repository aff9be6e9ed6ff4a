"""Confinement: turn a path the model sent into a real path under the root, or refuse."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from toolwire_fs._errors import FsError, PathOutsideRootError

__all__ = ["FsRoot"]


class FsRoot:
    """A directory that every path a file tool touches must stay under.

    Paths are resolved like this:

    - a relative path is taken relative to the root;
    - an absolute path is accepted only when it lies under the root (as
      configured or as resolved), and is then made relative;
    - a ``..`` component is refused outright, wherever it appears;
    - the real path of the result (every symbolic link in every component
      resolved, including the last one) must lie under the root; for a file
      about to be written or deleted, the real path of its parent is checked
      and the name itself is not followed when deleting.

    Hard links cannot be told apart from ordinary files: keep hard links to
    files outside the root out of the root. Checks happen before the file is
    opened, so a process that swaps a directory for a link in between can
    still race a tool; the root should not be writable by untrusted processes
    other than the tools themselves.
    """

    __slots__ = ("_given", "path")

    path: Path
    _given: Path

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given = Path(root).expanduser()
        try:
            real = given.resolve(strict=True)
        except (OSError, RuntimeError):
            raise FsError(f"the file tools' root {str(root)!r} does not exist") from None
        if not real.is_dir():
            raise FsError(f"the file tools' root {str(root)!r} is not a directory")
        self.path = real
        self._given = Path(os.path.abspath(given))

    def __repr__(self) -> str:
        return f"FsRoot({str(self.path)!r})"

    # -- checks -------------------------------------------------------------------------

    def inside(self, real: str | os.PathLike[str]) -> bool:
        """Whether a real (resolved) path is the root or lies under it."""
        p = Path(real)
        return p == self.path or self.path in p.parents

    def relative(self, path: str) -> PurePath:
        """The root-relative form of ``path`` after the lexical checks (no file system access)."""
        if not isinstance(path, str):
            raise FsError(f"a path must be a string, got {type(path).__name__}")
        if "\x00" in path:
            raise FsError(f"path {path!r} contains a NUL character")
        if not path.strip():
            raise FsError("the path is empty; give a path relative to the root, such as '.'")
        p = Path(path)
        if p.is_absolute() or p.anchor:
            rel = self._strip_root(p)
            if rel is None:
                raise PathOutsideRootError(
                    f"absolute path {path!r} is outside the root; "
                    f"give a path relative to the root instead"
                )
            p = rel
        if ".." in p.parts:
            raise PathOutsideRootError(
                f"path {path!r} uses '..'; paths must stay under the root, "
                f"so name them from the root down without '..'"
            )
        return p

    def _strip_root(self, p: Path) -> Path | None:
        for base in (self.path, self._given):
            try:
                return p.relative_to(base)
            except ValueError:
                continue
        return None

    def resolve(self, path: str, *, follow_last: bool = True) -> Path:
        """The real path for ``path``, checked to lie under the root.

        With ``follow_last=False`` the last component is not followed when it
        is a symbolic link (its parent's real path is checked instead), so the
        result names the link itself; the root itself is refused then.
        """
        rel = self.relative(path)
        target = self.path.joinpath(rel)
        if follow_last:
            real = Path(os.path.realpath(target))
        else:
            if not rel.name:
                raise FsError(f"path {path!r} is the root itself; name a file under it")
            real = Path(os.path.realpath(target.parent)) / rel.name
        if not self.inside(real if follow_last else real.parent):
            raise PathOutsideRootError(
                f"path {path!r} leads outside the root through a symbolic link; "
                f"only files under the root can be used"
            )
        return real

    def show(self, real: str | os.PathLike[str]) -> str:
        """A real path under the root, as the model should see it (POSIX, root-relative)."""
        rel = Path(real).relative_to(self.path)
        return rel.as_posix() if rel.parts else "."
