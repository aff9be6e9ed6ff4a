"""The file tools' careful primitives: opening without following a swapped-in link,
the secrets deny-list, a bounded walk, bounded lines, and glob matching in linear time."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import time
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from toolwire_fs._errors import FsError

__all__ = [
    "DEFAULT_DENY",
    "Deny",
    "Walk",
    "bounded_lines",
    "glob_matches",
    "open_dir_under",
    "open_under",
    "supports_at",
]

#: Paths the file tools refuse by default: any component matching one of these
#: (case-insensitive) is as if it did not exist. Environment files, version-control
#: metadata (remotes with tokens), SSH/cloud/package-manager credentials and keys.
DEFAULT_DENY: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".git",
    ".hg",
    ".svn",
    ".ssh",
    ".aws",
    ".azure",
    ".gcloud",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".git-credentials",
    ".htpasswd",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "credentials",
    "credentials.*",
    "secrets.*",
)


class Deny:
    """Name patterns the tools treat as absent (matched against every path component)."""

    __slots__ = ("_rx", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p for p in patterns if p)
        for p in self.patterns:
            if "/" in p or "\\" in p:
                raise FsError(f"a deny pattern names one path component, got {p!r}")
        joined = "|".join(fnmatch.translate(p.lower()) for p in self.patterns)
        self._rx = re.compile(joined) if joined else None

    def name(self, name: str) -> bool:
        """Whether one file or directory name is denied."""
        return self._rx is not None and self._rx.match(name.lower()) is not None

    def parts(self, parts: Iterable[str]) -> str | None:
        """The first denied component of a path, or None."""
        if self._rx is None:
            return None
        for part in parts:
            if self.name(part):
                return part
        return None


# -- opening under the root, one component at a time ----------------------------------------

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_AT = os.open in os.supports_dir_fd and bool(_NOFOLLOW)


def supports_at() -> bool:
    """Whether files are opened one component at a time (openat with O_NOFOLLOW)."""
    return _AT


def _swapped(shown: str) -> FsError:
    return FsError(
        f"cannot open {shown!r}: it changed while it was being opened (a symbolic link "
        f"appeared); try again"
    )


def open_dir_under(root: Path, parts: tuple[str, ...], shown: str) -> int:
    """A descriptor for the directory ``root/parts``, opened one component at a time
    without following a link: a link swapped in after the path was checked is refused."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    if not _AT:  # pragma: no cover - platforms without openat: the path checks only
        os.close(fd)
        return os.open(root.joinpath(*parts), os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            try:
                nfd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _swapped(shown) from None
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_under(root: Path, real: Path, flags: int, shown: str, mode: int = 0o600) -> int:
    """Open ``real`` (a resolved path under ``root``, so free of links) without following
    any link on the way: what was checked is what is opened."""
    parts = real.relative_to(root).parts
    if not parts:
        raise FsError(f"{shown!r} is the root directory")
    if not _AT:  # pragma: no cover - platforms without openat
        return os.open(real, flags | _NOFOLLOW | _CLOEXEC, mode)
    dfd = open_dir_under(root, parts[:-1], shown)
    try:
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _swapped(shown) from None
        raise
    finally:
        os.close(dfd)


# -- bounded lines --------------------------------------------------------------------------

_CHUNK = 64 * 1024


def bounded_lines(f: BinaryIO, cap: int) -> Iterator[tuple[bytes, bool]]:
    """Each line of ``f`` as (its first ``cap`` bytes, whether it was longer), never
    holding more than ``cap`` bytes of one line, however long the line is."""
    while True:
        line = f.readline(cap + 1)
        if not line:
            return
        if len(line) <= cap or line.endswith(b"\n"):
            yield line[:cap] if len(line) > cap else line, False
            continue
        # Longer than cap: keep the head, skip the rest of the line in chunks.
        head = line[:cap]
        while True:
            rest = f.readline(_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        yield head, True


# -- a bounded walk ---------------------------------------------------------------------------


class Walk:
    """Walks a directory tree without following links, skipping denied names, and stops
    at a number of directories or a deadline (``stopped`` says why)."""

    __slots__ = ("deadline", "deny", "dirs", "max_dirs", "stopped")

    def __init__(self, deny: Deny, max_dirs: int, seconds: float) -> None:
        self.deny = deny
        self.max_dirs = max_dirs
        self.deadline = time.monotonic() + seconds
        self.dirs = 0
        self.stopped: str | None = None

    def expired(self) -> bool:
        if self.stopped is None and time.monotonic() > self.deadline:
            self.stopped = "time"
        return self.stopped is not None

    def entries(self, top: Path) -> Iterator[tuple[tuple[str, ...], os.DirEntry[str]]]:
        """(path relative to ``top`` as parts, entry) for everything under ``top``,
        directories before their contents, names sorted."""
        stack: list[tuple[tuple[str, ...], Path]] = [((), top)]
        while stack:
            if self.expired():
                return
            if self.dirs >= self.max_dirs:
                self.stopped = "size"
                return
            rel, here = stack.pop()
            self.dirs += 1
            try:
                with os.scandir(here) as it:
                    found = sorted(it, key=lambda e: e.name)
            except OSError:
                continue  # unreadable directories are skipped, as find and grep -s do
            subdirs = []
            for entry in found:
                if self.deny.name(entry.name):
                    continue
                parts = (*rel, entry.name)
                yield parts, entry
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append((parts, Path(entry.path)))
                except OSError:
                    continue
            stack.extend(reversed(subdirs))


# -- globs in linear time ------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _segments(pattern: str) -> tuple[str, ...]:
    parts = [p for p in PurePosixPath(pattern).parts if p not in ("", ".")]
    # Runs of '**' mean what one does: collapse them (the exponential case of a naive matcher).
    out: list[str] = []
    for p in parts:
        if p == "**" and out and out[-1] == "**":
            continue
        out.append(p)
    return tuple(out)


def glob_matches(parts: tuple[str, ...], pattern: str) -> bool:
    """Whether a relative path (its parts) matches a glob: ``*``, ``?``, ``[..]`` within a
    component, ``**`` for any number of components (zero included). Case-sensitive, as
    pathlib's glob on POSIX. Dynamic programming: O(len(parts) * len(pattern))."""
    pat = _segments(pattern)
    n = len(parts)
    # reach[i] is True when parts[:i] can be matched by the pattern read so far.
    reach = [True] + [False] * n
    for seg in pat:
        if seg == "**":
            seen = False
            for i in range(n + 1):
                seen = seen or reach[i]
                reach[i] = seen
        else:
            reach = [False] + [reach[i] and fnmatch.fnmatchcase(parts[i], seg) for i in range(n)]
    return reach[n]
