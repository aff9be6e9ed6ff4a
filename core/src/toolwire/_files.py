"""Reading a file that is outside input (a config file, a schema), bounded."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from toolwire._exports import publish

__all__ = ["check_private", "owner_only", "read_capped", "write_private"]


def read_capped(
    path: Path, cap: int, what: str, error: type[Exception], *, private: bool = False
) -> bytes:
    """The bytes of ``path``: never more than ``cap + 1`` are read (the path may name a
    device or a FIFO-sized stream), and a longer file, or one that cannot be read, raises
    ``error`` naming ``what``.

    ``private``: the file decides what runs or where keys go (the user's toolwire.toml:
    the provider, its URL, the MCP servers), so it is used only when it is the user's
    own and nobody else may write it (group-writable by the user's own group is fine:
    a umask of 002); otherwise ``error`` says so and how to fix it.
    """
    try:
        with path.open("rb") as f:
            if private:
                check_private(
                    os.fstat(f.fileno()),
                    what,
                    error,
                    "whoever can write it would choose your provider, its URL and what runs",
                )
            raw = f.read(cap + 1)
    except OSError as exc:
        raise error(f"{what}: cannot read it: {exc.strerror}") from None
    if len(raw) > cap:
        raise error(f"{what} is over {cap:,} bytes")
    return raw


def owner_only(st: os.stat_result, *, any_owner: bool = False, secret: bool = False) -> str | None:
    """Why a file that decides something (what runs, where keys go, what a policy allows)
    cannot be trusted, or None when it can: the one check of that (DESIGN.md,
    principle 8). It must be the user's own (``any_owner``: anyone's, as a policy file an
    administrator owns) and nobody else may write it (group-writable by the user's own
    group is fine: a umask of 002); a ``secret`` (a token) nobody else may read either.
    The reason reads ``owned by another user (mode 644)`` or ``open to others (mode 666)``."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: no owner bits to check
        return None
    mode = stat.S_IMODE(st.st_mode)
    if not any_owner and st.st_uid != os.getuid():
        return f"owned by another user (mode {mode:o})"
    loose = st.st_mode & (0o077 if secret else 0o022)
    if not secret and st.st_gid == os.getgid():
        loose &= ~0o020
    if loose:
        return f"open to others (mode {mode:o})"
    return None


def check_private(st: os.stat_result, what: str, error: type[Exception], stakes: str) -> None:
    """Raise ``error`` unless the file ``st`` describes passes :func:`owner_only`.
    ``stakes`` says what whoever could write it would decide."""
    problem = owner_only(st)
    if problem is not None:
        raise error(
            f"{what} is {problem}, so it is not used: {stakes}; `chmod go-w` it if it is yours"
        )


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as the user's alone (0600), whole or not at all: a new
    file beside it, then renamed over it (a reader never sees half a file). Its directory is
    made when missing (0700). Raises OSError."""
    import secrets

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class NotPrivate(OSError):
    """A file that must be the user's alone is open to others (:func:`open_private_sqlite`)."""


def open_private_sqlite(path: Path, schema: str, *, timeout: float) -> Any:
    """An SQLite file the processes of one machine share, the user's alone: made 0600 (its
    directory 0700) when missing, refused (:class:`NotPrivate`) when others may read or
    write it (:func:`owner_only`, as a secret), opened for autocommit with WAL and
    ``schema`` applied; every wait on it within ``timeout`` seconds. Raises OSError or
    ``sqlite3.Error``. The one way a store of toolwire opens such a file."""
    import sqlite3

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        problem = owner_only(os.fstat(fd), secret=True)
    finally:
        os.close(fd)
    if problem is not None:
        raise NotPrivate(f"{path} is {problem}: `chmod 600` it")
    db = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(schema)
    except BaseException:
        db.close()
        raise
    return db


publish(globals())
