"""Where the policy's quotas are counted: in an SQLite file the processes of one machine
share (a policy file's default: the command line's runs count together), in this
process's memory (``[quota_store] url = "memory://"``, and a policy made from text), or
in a Redis server several machines share (``[quota_store] url = "redis://..."``).

A call asks for every quota that applies to it at once (:class:`Want`); either all are
taken or none is, and the first one over its limit says why. A rate quota counts the call
in its window; a concurrency quota holds a slot, under a lease id, until the call's result
comes back (:meth:`QuotaStore.finish`) or the lease runs out (a call another hook refused
after this policy let it through never reports back). Nothing waits: a call over a quota
is refused, saying when to try again.

In a shared store a slot has an owner that can be gone (its process killed, its machine
lost): the slot is stored for ``holder_timeout`` seconds at a time and renewed while its
call runs, so a holder that stops renewing frees it within that time, not at the end of
its lease.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from toolwire.adapters import NotPrivate, open_private_sqlite

logger = logging.getLogger("toolwire.policy")

__all__ = ["MemoryStore", "QuotaStore", "RedisStore", "SqliteStore", "StoreError", "Want"]

#: Quota keys kept in memory before those with no recent call are dropped.
MAX_KEYS = 10_000


class StoreError(Exception):
    """The quota store could not be asked (the policy then refuses: fail closed)."""


@attrs.frozen
class Want:
    """One quota a call must fit in: ``key`` names the count (quota, tool, whom);
    ``calls`` in ``seconds`` (rate), and/or ``concurrent`` at once (slots held at most
    ``lease`` seconds); ``tool`` and ``whom`` are for the refusal's words."""

    key: str
    calls: int | None
    seconds: int
    concurrent: int | None
    lease: int
    tool: str
    whom: str


def over_rate(want: Want, wait: float) -> str:
    return (
        f"over the organisation policy's quota for `{want.tool}`: at most {want.calls} "
        f"call(s) in {want.seconds} s for {want.whom}; try again in "
        f"{max(1, math.ceil(wait))} s"
    )


def over_concurrency(want: Want) -> str:
    return (
        f"over the organisation policy's quota for `{want.tool}`: at most {want.concurrent} "
        f"call(s) at once for {want.whom}; try again when one of them has finished"
    )


class QuotaStore(Protocol):
    def take(self, wants: Sequence[Want], lease: str) -> str | None:
        """Take every quota in ``wants`` for one call (its ``lease`` id), or none of them:
        the refusal of the first that is spent. Raises StoreError."""

    def finish(self, wants: Sequence[Want], lease: str, *, refund: bool) -> None:
        """The call ended: free its concurrency slots (``refund``: it never ran, so its
        rate counts are given back too)."""


class MemoryStore:
    """Counts in this process (thread-safe; memory bounded by the last window's callers)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._calls: dict[str, collections.deque[tuple[float, str]]] = {}
        self._slots: dict[str, dict[str, float]] = {}  # key -> lease -> when it ends
        self._lock = threading.Lock()
        self._longest = 0  # the longest window or lease asked for: older counts are dead

    def __len__(self) -> int:
        return len(self._calls) + len(self._slots)

    def take(self, wants: Sequence[Want], lease: str) -> str | None:
        now = self.clock()
        with self._lock:
            if len(self) >= MAX_KEYS:
                self._prune(now)
            for want in wants:
                hold = want.lease if want.concurrent is not None else 0
                self._longest = max(self._longest, want.seconds, hold)
                if want.calls is not None:
                    window = self._calls.setdefault(want.key, collections.deque())
                    while window and window[0][0] <= now - want.seconds:
                        window.popleft()
                    if len(window) >= want.calls:
                        return over_rate(want, window[0][0] + want.seconds - now)
                if want.concurrent is not None:
                    slots = self._slots.setdefault(want.key, {})
                    for ended in [k for k, end in slots.items() if end <= now]:
                        del slots[ended]
                    if len(slots) >= want.concurrent:
                        return over_concurrency(want)
            for want in wants:
                if want.calls is not None:
                    self._calls[want.key].append((now, lease))
                if want.concurrent is not None:
                    self._slots[want.key][lease] = now + want.lease
        return None

    def finish(self, wants: Sequence[Want], lease: str, *, refund: bool) -> None:
        with self._lock:
            for want in wants:
                slots = self._slots.get(want.key)
                if slots is not None:
                    slots.pop(lease, None)
                    if not slots:
                        del self._slots[want.key]
                window = self._calls.get(want.key)
                if refund and window is not None:
                    for entry in [e for e in window if e[1] == lease]:
                        window.remove(entry)

    def _prune(self, now: float) -> None:
        """Forget counts with nothing recent in them (memory stays bounded by the calls of
        the last window, not by every principal ever seen)."""
        longest = self._longest
        for key in [k for k, w in self._calls.items() if not w or w[-1][0] <= now - longest]:
            del self._calls[key]
        for key in [k for k, s in self._slots.items() if all(end <= now for end in s.values())]:
            del self._slots[key]


# Both steps in one script, so several gateways asking at once cannot overshoot: Redis
# runs a script alone. The clock is the server's (processes' clocks may differ).
# KEYS: per want, its rate key and its slots key. ARGV: lease, then per want: calls (0:
# none), seconds, concurrent (0: none), lease seconds. Returns {} when taken, else
# {index of the want (1-based), "rate" or "concurrent", milliseconds to wait}.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = ARGV[1]
local n = #KEYS / 2
for i = 1, n do
  local calls = tonumber(ARGV[2 + (i - 1) * 4])
  local window = tonumber(ARGV[3 + (i - 1) * 4]) * 1000
  local concurrent = tonumber(ARGV[4 + (i - 1) * 4])
  if calls > 0 then
    local key = KEYS[2 * i - 1]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    if redis.call('ZCARD', key) >= calls then
      local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      return {i, 'rate', tonumber(first[2]) + window - now}
    end
  end
  if concurrent > 0 then
    local key = KEYS[2 * i]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) >= concurrent then
      return {i, 'concurrent', 0}
    end
  end
end
for i = 1, n do
  local calls = tonumber(ARGV[2 + (i - 1) * 4])
  local window = tonumber(ARGV[3 + (i - 1) * 4]) * 1000
  local concurrent = tonumber(ARGV[4 + (i - 1) * 4])
  local held = tonumber(ARGV[5 + (i - 1) * 4]) * 1000
  if calls > 0 then
    redis.call('ZADD', KEYS[2 * i - 1], now, lease)
    redis.call('PEXPIRE', KEYS[2 * i - 1], window)
  end
  if concurrent > 0 then
    redis.call('ZADD', KEYS[2 * i], now + held, lease)
    redis.call('PEXPIRE', KEYS[2 * i], held)
  end
end
return {}
"""


# Renew held slots: KEYS are slots keys; ARGV per key: the lease id, then milliseconds it
# is held from now. XX: a slot released meanwhile (or lost with a store that forgot it) is
# not taken again. The clock is the server's.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  local held = tonumber(ARGV[2 * i])
  redis.call('ZADD', KEYS[i], 'XX', now + held, ARGV[2 * i - 1])
  if redis.call('PTTL', KEYS[i]) < held then
    redis.call('PEXPIRE', KEYS[i], held)
  end
end
return 0
"""

#: Releases remembered through an outage (past it, the oldest end with their leases).
_MAX_UNRELEASED = 100_000

#: Seconds a slot is stored for at a time by default (renewed a third of it before).
HOLDER_TIMEOUT = 30.0


class RedisStore:
    """Counts in a Redis server several gateway processes share (redis-py; every command
    with a deadline: past it, StoreError and the call is refused)."""

    def __init__(
        self,
        url: str,
        *,
        password: str | None,
        prefix: str,
        timeout: float,
        holder_timeout: float = HOLDER_TIMEOUT,
        client: Any = None,
    ) -> None:
        if client is None:
            try:
                import redis
            except ImportError as exc:
                raise StoreError(
                    "[quota_store] needs the redis client: pip install 'toolwire-policy[redis]'"
                ) from exc
            client = redis.Redis.from_url(
                url,
                password=password,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry_on_timeout=False,
                max_connections=64,
            )
        self._redis = client
        self._prefix = prefix
        self._script = client.register_script(_TAKE)
        self._renew_script = client.register_script(_RENEW)
        self.holder_timeout = holder_timeout
        #: lease id -> (its slots keys, when its lease ends, monotonic): the slots this
        #: process holds for calls still running, renewed until they end.
        self._held: dict[str, tuple[tuple[str, ...], float]] = {}
        self._held_lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        #: (keys, lease) whose release the store could not be told (an outage): released
        #: as soon as it can be asked again, not at the end of their lease.
        self._unreleased: collections.deque[tuple[tuple[str, ...], str]] = collections.deque(
            maxlen=_MAX_UNRELEASED
        )

    def __repr__(self) -> str:
        return f"<RedisStore {self._prefix!r}>"  # the URL may hold a password: not shown

    def _keys(self, wants: Sequence[Want]) -> list[str]:
        return [f"{self._prefix}{kind}:{w.key}" for w in wants for kind in ("r", "c")]

    def take(self, wants: Sequence[Want], lease: str) -> str | None:
        args: list[Any] = [lease]
        for w in wants:
            args += [w.calls or 0, w.seconds, w.concurrent or 0, min(w.lease, self.holder_timeout)]
        self._release_pending()
        try:
            answer = self._script(keys=self._keys(wants), args=args)
        except Exception as exc:  # redis-py's errors, timeouts, a refused connection
            raise StoreError(f"the quota store cannot be asked: {type(exc).__name__}") from exc
        if not answer:
            self._hold(wants, lease)
            return None
        index, kind, wait_ms = int(answer[0]), answer[1], int(answer[2])
        want = wants[index - 1]
        kind = kind.decode() if isinstance(kind, bytes) else kind
        return over_rate(want, wait_ms / 1000) if kind == "rate" else over_concurrency(want)

    def finish(self, wants: Sequence[Want], lease: str, *, refund: bool) -> None:
        with self._held_lock:
            self._held.pop(lease, None)
        keys = tuple(k for k in self._keys(wants) if refund or k.startswith(f"{self._prefix}c:"))
        try:
            self._release_pending()
            self._zrem(keys, lease)
        except Exception as exc:
            # An outage: released when the store can be asked again (the next call), and
            # by its lease at the latest.
            self._unreleased.append((keys, lease))
            raise StoreError(f"the quota store cannot be told: {type(exc).__name__}") from exc

    def _hold(self, wants: Sequence[Want], lease: str) -> None:
        """Renew the slots ``lease`` took while its call runs (at most its lease)."""
        keys = tuple(
            f"{self._prefix}c:{w.key}"
            for w in wants
            if w.concurrent is not None and w.lease > self.holder_timeout
        )
        if not keys:  # no slot, or one its first hold covers to the end of its lease
            return
        ends = time.monotonic() + min(w.lease for w in wants if w.concurrent is not None)
        with self._held_lock:
            self._held[lease] = (keys, ends)
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew_held, name="toolwire-policy-slots", daemon=True
                )
                self._renewer.start()

    def _renew_held(self) -> None:
        """Every third of ``holder_timeout``, store each held slot for another
        ``holder_timeout`` (to the end of its lease at most); ends when none is held."""
        period = self.holder_timeout / 3
        while True:
            time.sleep(period)
            now = time.monotonic()
            with self._held_lock:
                for lease in [k for k, (_, ends) in self._held.items() if ends <= now]:
                    del self._held[lease]  # its lease is over: the slot ends with it
                if not self._held:
                    self._renewer = None
                    return
                held = list(self._held.items())
            keys: list[str] = []
            args: list[Any] = []
            for lease, (slots, ends) in held:
                ms = max(1, int(min(self.holder_timeout, ends - now) * 1000))
                for key in slots:
                    keys.append(key)
                    args += [lease, ms]
            try:
                for i in range(0, len(keys), 512):  # a script runs alone: keep each short
                    self._renew_script(keys=keys[i : i + 512], args=args[2 * i : 2 * i + 1024])
            except Exception as exc:  # an outage: the next round tries again
                logger.warning(
                    "toolwire-policy cannot renew %d quota slot(s): %s; a slot the store "
                    "does not hear of for %s s is freed",
                    len(held),
                    type(exc).__name__,
                    self.holder_timeout,
                )

    def _zrem(self, keys: Sequence[str], lease: str) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.zrem(key, lease)
        pipe.execute()

    def _release_pending(self) -> None:
        """Tell the store of the releases it missed; any left undone stay pending."""
        while self._unreleased:
            try:
                keys, lease = self._unreleased[0]
            except IndexError:  # another thread took the last one
                return
            try:
                self._zrem(keys, lease)
            except Exception:  # still out: the next use tries again
                return
            with contextlib.suppress(ValueError):  # another thread released it too
                self._unreleased.remove((keys, lease))

    def persistence(self) -> str | None:
        """Whether the store keeps its counts across its own restarts: None when it does
        (RDB snapshots or an append-only file), else why not, or that it could not be
        asked (a managed Redis may not allow CONFIG)."""
        try:
            save = self._redis.config_get("save").get("save", "")
            aof = self._redis.config_get("appendonly").get("appendonly", "no")
        except Exception as exc:
            return f"its persistence could not be checked ({type(exc).__name__})"
        if (save or "").strip() or aof == "yes":
            return None
        return "it keeps no RDB snapshot and no append-only file"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (key TEXT NOT NULL, lease TEXT NOT NULL,
                                  at REAL NOT NULL, until REAL NOT NULL);
CREATE INDEX IF NOT EXISTS calls_by_key ON calls (key, at);
CREATE INDEX IF NOT EXISTS calls_by_end ON calls (until);
CREATE TABLE IF NOT EXISTS slots (key TEXT NOT NULL, lease TEXT NOT NULL,
                                  until REAL NOT NULL, pid INTEGER NOT NULL,
                                  PRIMARY KEY (key, lease));
CREATE INDEX IF NOT EXISTS slots_by_end ON slots (until);
"""

#: Takes between two sweeps of the counts whose windows have passed (every key's).
_SWEEP_EVERY = 256


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (on this machine: the store is a local file)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    except OSError:
        return True
    return True


class SqliteStore:
    """Counts in an SQLite file the processes of one machine share (the command line's
    runs, several local gateways): no server. The file is the user's alone (0600); each
    take is one transaction that locks out the other writers, so processes asking at once
    cannot overshoot. A slot held by a process that no longer runs is free at once; the
    clock is the machine's. Every wait on the file has a deadline (``timeout``): past it,
    StoreError and the call is refused."""

    def __init__(self, path: Path, *, timeout: float = 2.0) -> None:
        import sqlite3

        self.path = path
        try:
            self._db = open_private_sqlite(path, _SCHEMA, timeout=timeout)
        except NotPrivate as exc:
            raise StoreError(f"the quota store {exc}") from None
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"the quota store {path} cannot be opened: {exc}") from None
        self._lock = threading.Lock()
        self._takes = 0

    def __repr__(self) -> str:
        return f"<SqliteStore {str(self.path)!r}>"

    def take(self, wants: Sequence[Want], lease: str) -> str | None:
        import sqlite3

        now = time.time()
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
                try:
                    over = self._check(db, wants, now)
                    if over is None:
                        pid = os.getpid()
                        for w in wants:
                            if w.calls is not None:
                                db.execute(
                                    "INSERT INTO calls VALUES (?, ?, ?, ?)",
                                    (w.key, lease, now, now + w.seconds),
                                )
                            if w.concurrent is not None:
                                db.execute(
                                    "INSERT OR REPLACE INTO slots VALUES (?, ?, ?, ?)",
                                    (w.key, lease, now + w.lease, pid),
                                )
                        self._takes += 1
                        if self._takes % _SWEEP_EVERY == 0:  # bounded: passed windows go
                            db.execute("DELETE FROM calls WHERE until <= ?", (now,))
                            db.execute("DELETE FROM slots WHERE until <= ?", (now,))
                    db.execute("COMMIT")
                    return over
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"the quota store cannot be asked: {exc}") from None

    def _check(self, db: Any, wants: Sequence[Want], now: float) -> str | None:
        for w in wants:
            if w.calls is not None:
                db.execute("DELETE FROM calls WHERE key = ? AND at <= ?", (w.key, now - w.seconds))
                count, first = db.execute(
                    "SELECT COUNT(*), MIN(at) FROM calls WHERE key = ?", (w.key,)
                ).fetchone()
                if count >= w.calls:
                    return over_rate(w, first + w.seconds - now)
            if w.concurrent is not None:
                held = db.execute(
                    "SELECT lease, until, pid FROM slots WHERE key = ?", (w.key,)
                ).fetchall()
                gone = [(w.key, k) for k, until, pid in held if until <= now or not _alive(pid)]
                db.executemany("DELETE FROM slots WHERE key = ? AND lease = ?", gone)
                if len(held) - len(gone) >= w.concurrent:
                    return over_concurrency(w)
        return None

    def finish(self, wants: Sequence[Want], lease: str, *, refund: bool) -> None:
        import sqlite3

        with self._lock:
            try:
                keys = [(w.key, lease) for w in wants]
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("DELETE FROM slots WHERE key = ? AND lease = ?", keys)
                    if refund:
                        self._db.executemany("DELETE FROM calls WHERE key = ? AND lease = ?", keys)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"the quota store cannot be told: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()
