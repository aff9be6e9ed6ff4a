"""Where the approval queue keeps its requests: an :class:`ApprovalStore`.

Two stores: :class:`SqliteStore`, a file the processes of one machine share (the default),
and :class:`PostgresStore`, a PostgreSQL database the gateways of several machines share
(``postgresql://`` addresses; psycopg 3 is needed: ``pip install 'toolwire[postgres]'``).
The queue speaks one small SQL to either (``?`` placeholders, one ``requests`` table);
each change runs in one transaction that shuts out every other writer, so an approval is
spent by one call however many processes, on however many machines, ask at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from toolwire._exports import publish

__all__ = ["ApprovalStore", "PostgresStore", "SqliteStore", "StoreError", "open_store"]

T = TypeVar("T")

#: The columns every store keeps (the request's body is its JSON).
COLUMNS = ("id", "key", "subject", "tool", "status", "created", "expires", "body")

_UPSERT = (
    f"INSERT INTO requests ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS if c != "id")
)


class StoreError(Exception):
    """The store cannot be opened, read or written (the queue says so as ApprovalError)."""


class Transaction(Protocol):
    """What a change sees inside its transaction."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``?`` placeholders) and return every row it gives."""
        ...

    def put(self, values: Sequence[Any]) -> None:
        """Insert a request's row, or replace the one with its id (:data:`COLUMNS`)."""
        ...


@runtime_checkable
class ApprovalStore(Protocol):
    """Where an :class:`ApprovalQueue` keeps its requests."""

    @property
    def where(self) -> str:
        """The store for a person: a file's path, a database's address without its
        password."""
        ...

    def write(self, change: Callable[[Transaction], T]) -> T:
        """Run ``change`` in one transaction no other writer runs beside, on any
        process or machine; its changes are kept when it returns, dropped when it raises."""
        ...

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows a query gives, outside any change."""
        ...

    def close(self) -> None: ...


_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    subject TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_key ON requests (key, subject, status);
CREATE INDEX IF NOT EXISTS requests_status ON requests (status, created);
"""


class _SqliteTransaction:
    __slots__ = ("db",)

    def __init__(self, db: Any) -> None:
        self.db = db

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.db.execute(sql, tuple(args)).fetchall())

    def put(self, values: Sequence[Any]) -> None:
        self.db.execute(_UPSERT, tuple(values))


class SqliteStore:
    """Requests in an SQLite file (0600, the user's alone; refused when others may write
    it), shared by the processes of one machine; every wait on it within ``timeout``."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 2.0) -> None:
        import sqlite3

        from toolwire._files import NotPrivate, open_private_sqlite

        self.path = Path(path).expanduser()
        try:
            self.db = open_private_sqlite(self.path, _SQLITE_SCHEMA, timeout=timeout)
        except NotPrivate as exc:
            raise StoreError(str(exc)) from None
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path} cannot be opened: {exc}") from None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return str(self.path)

    def write(self, change: Callable[[Transaction], T]) -> T:
        import sqlite3

        with self._lock:
            db = self.db
            try:
                db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
                try:
                    out = change(_SqliteTransaction(db))
                    db.execute("COMMIT")
                    return out
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"cannot be written: {exc}") from None

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import sqlite3

        with self._lock:
            try:
                return list(self.db.execute(sql, tuple(args)).fetchall())
            except sqlite3.Error as exc:
                raise StoreError(f"cannot be read: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self.db.close()


_POSTGRES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS requests ("
    " id TEXT PRIMARY KEY, key TEXT NOT NULL, subject TEXT NOT NULL, tool TEXT NOT NULL,"
    " status TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,"
    " expires DOUBLE PRECISION NOT NULL, body TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS requests_key ON requests (key, subject, status)",
    "CREATE INDEX IF NOT EXISTS requests_status ON requests (status, created)",
)


#: The advisory lock the schema is made under (any constant: toolwire's own).
_SCHEMA_LOCK = 0x746F6F6C77697265  # "toolwire"


def _create_schema(cur: Any) -> None:
    """The queue's table and indexes, made once: several gateways starting at once take
    turns (``CREATE ... IF NOT EXISTS`` alone races on the catalogue)."""
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
    for statement in _POSTGRES_SCHEMA:
        cur.execute(statement)


def _pg(sql: str) -> str:
    """The queue's SQL for psycopg: ``%s`` placeholders (the queue's SQL holds no ``?``
    or ``%`` of its own)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PostgresTransaction:
    __slots__ = ("cur",)

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.cur.execute(_pg(sql), tuple(args))
        return list(self.cur.fetchall()) if self.cur.description is not None else []

    def put(self, values: Sequence[Any]) -> None:
        self.cur.execute(_pg(_UPSERT), tuple(values))


class PostgresStore:
    """Requests in a PostgreSQL database the gateways of several machines share:
    ``postgresql://USER@HOST:PORT/DATABASE`` (libpq's address; the password comes from
    ``PGPASSWORD`` or ``~/.pgpass``, never from the address, which a policy file holds).
    Every wait has a deadline: connecting, a lock held by another writer, a statement
    (``timeout`` seconds each). A connection the server dropped is opened again at the
    next use."""

    def __init__(self, url: str, *, timeout: float = 2.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise StoreError(f"{url!r} is not a postgresql:// address")
        if parts.password is not None:
            raise StoreError(
                "the queue's address holds a password: give it in PGPASSWORD or ~/.pgpass "
                "instead (a policy file is read by many)"
            )
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StoreError(
                "a postgresql:// queue needs psycopg: pip install 'toolwire[postgres]'"
            ) from None
        self.url = url
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: Any = None
        with self._lock:
            self._run(_create_schema, "opened")

    @property
    def where(self) -> str:
        return self.url

    def _connect(self) -> Any:
        import psycopg

        ms = max(1, int(self.timeout * 1000))
        conn = psycopg.connect(
            self.url,
            connect_timeout=max(1, int(self.timeout + 0.999)),
            options=f"-c lock_timeout={ms} -c statement_timeout={ms * 5}",
        )
        conn.autocommit = False
        return conn

    def _run(self, work: Callable[[Any], T], doing: str) -> T:
        """``work(cursor)`` in one transaction (the caller holds the lock); once more on a
        fresh connection when the server had dropped the one held."""
        import psycopg

        try:
            return self._attempt(work)
        except psycopg.OperationalError as exc:
            if not self._dropped():  # not a lost connection: said as it is
                raise StoreError(f"{self.url} cannot be {doing}: {exc}") from None
        except psycopg.Error as exc:
            raise StoreError(f"{self.url} cannot be {doing}: {exc}") from None
        try:  # the server had dropped the connection: once more, on a new one
            return self._attempt(work)
        except psycopg.Error as exc:
            self._dropped()
            raise StoreError(f"{self.url} cannot be {doing}: {exc}") from None

    def _attempt(self, work: Callable[[Any], T]) -> T:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        conn = self._conn
        with conn.transaction(), conn.cursor() as cur:
            return work(cur)

    def _dropped(self) -> bool:
        """Whether the connection held is lost (then closed and let go: the next use
        connects again)."""
        conn = self._conn
        if conn is not None and not (conn.closed or conn.broken):
            return False
        if conn is not None:
            conn.close()
        self._conn = None
        return True

    def write(self, change: Callable[[Transaction], T]) -> T:
        def work(cur: Any) -> T:
            # One writer at a time, on every machine: readers are not held up.
            cur.execute("LOCK TABLE requests IN EXCLUSIVE MODE")
            return change(_PostgresTransaction(cur))

        with self._lock:
            return self._run(work, "written")

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._run(lambda cur: _PostgresTransaction(cur).rows(sql, args), "read")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __del__(self) -> None:
        # A queue dropped without close() (as a file's would be) closes its connection.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()


def is_address(where: str | os.PathLike[str]) -> bool:
    """Whether ``where`` names a database server rather than a file."""
    return isinstance(where, str) and where.split(":", 1)[0] in ("postgresql", "postgres")


def open_store(where: str | os.PathLike[str], *, timeout: float = 2.0) -> ApprovalStore:
    """The store ``where`` names: a ``postgresql://`` address, else an SQLite file."""
    if is_address(where):
        return PostgresStore(str(where), timeout=timeout)
    return SqliteStore(where, timeout=timeout)


publish(globals())
