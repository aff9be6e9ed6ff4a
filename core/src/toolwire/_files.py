"""Reading a file that is outside input (a config file, a schema), bounded."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["read_capped"]


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


def check_private(st: os.stat_result, what: str, error: type[Exception], stakes: str) -> None:
    """Raise ``error`` unless the file ``st`` describes is the user's own and nobody else
    may write it (group-writable by the user's own group is fine: a umask of 002).
    ``stakes`` says what whoever could write it would decide."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: no owner bits to check
        return
    loose = st.st_mode & 0o022
    if st.st_gid == os.getgid():
        loose &= ~0o020
    if st.st_uid != os.getuid() or loose:
        whose = "owned by another user" if st.st_uid != os.getuid() else "open to others"
        raise error(
            f"{what} is {whose} (mode {stat.S_IMODE(st.st_mode):o}), so it is not used: "
            f"{stakes}; `chmod go-w` it if it is yours"
        )
