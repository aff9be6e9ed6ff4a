"""Reading a file that is outside input (a config file, a schema), bounded."""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_capped"]


def read_capped(path: Path, cap: int, what: str, error: type[Exception]) -> bytes:
    """The bytes of ``path``: never more than ``cap + 1`` are read (the path may name a
    device or a FIFO-sized stream), and a longer file, or one that cannot be read, raises
    ``error`` naming ``what``."""
    try:
        with path.open("rb") as f:
            raw = f.read(cap + 1)
    except OSError as exc:
        raise error(f"{what}: cannot read it: {exc.strerror}") from None
    if len(raw) > cap:
        raise error(f"{what} is over {cap:,} bytes")
    return raw
