"""A PostgreSQL server of its own (Debian's), on 127.0.0.1, for the approval queue's
benchmark and tests: ``with postgres() as url:`` (None when the server programs or
psycopg are missing). As root the server runs as the ``postgres`` user, which PostgreSQL
asks for; its cluster is throwaway (fsync off) and goes with the block."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["available", "postgres"]


def _bin(name: str) -> str | None:
    """A PostgreSQL server program: on PATH, else in Debian's versioned directory."""
    found = shutil.which(name)
    if found is not None:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(versions[-1]) if versions else None


def available() -> bool:
    """Whether a server can be started here (its programs, and psycopg to reach it)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return _bin("initdb") is not None and _bin("pg_ctl") is not None


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A server for the block, with the database ``toolwire``: its address."""
    import psycopg

    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL's initdb and pg_ctl are not installed")
    # Not under a directory only root may enter: the server may run as another user.
    where = Path(tempfile.mkdtemp(prefix="toolwire-postgres-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        import pwd

        owner = pwd.getpwnam("postgres")
        os.chown(where, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = where / "data"
    try:
        subprocess.run(
            [*as_user, initdb, "-D", str(data), "-U", "toolwire", "--auth=trust", "-E", "UTF8"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
        )  # fmt: skip
        options = f"-p {port} -h 127.0.0.1 -k {where} -c fsync=off -c max_connections=200"
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(where / "log"), "-w",
             "-t", "60", "start"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
        )  # fmt: skip
        try:
            with psycopg.connect(
                f"postgresql://toolwire@127.0.0.1:{port}/postgres", autocommit=True
            ) as conn:
                conn.execute("CREATE DATABASE toolwire")
            yield f"postgresql://toolwire@127.0.0.1:{port}/toolwire"
        finally:
            subprocess.run(
                [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
            )  # fmt: skip
    finally:
        shutil.rmtree(where, ignore_errors=True)
