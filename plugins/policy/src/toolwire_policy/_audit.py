"""The JSON-lines audit log (tamper-evident: a hash chain), and the canonical argument
fingerprint.

Each record carries ``seq`` (1, 2, ...) and ``prev``, the SHA-256 of the previous
record's line as written (``GENESIS`` for the first). Editing a record breaks the next
one's ``prev``; deleting one breaks ``seq`` and ``prev``; deleting the first records
shows as a log that does not start at 1. Cutting records off the end cannot be seen from
the file alone: keep the head digest ``verify`` prints somewhere else (a ticket, another
system's log) to anchor it. Appends take an exclusive lock on the file, so several
processes writing one log keep one chain.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "GENESIS",
    "AuditLog",
    "ChainReport",
    "canonical_json",
    "fingerprint",
    "read_records",
    "utc_now",
    "verify_log",
]

#: The ``prev`` of a log's first record.
GENESIS = "sha256:" + "0" * 64
_MAX_LINE = 16 * 1024 * 1024  # one record; a longer line is not a record this log wrote
_TAIL = 1024 * 1024


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same arguments always give the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def utc_now() -> str:
    """The time now, UTC, ISO 8601 with milliseconds and a ``Z``."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


_LINE_BREAKS = {0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\u0085"}


class AuditLog:
    """Appends one JSON object per line to a file; safe across threads and processes.

    Each record is written with a single ``write`` on a file opened in append
    mode, under an exclusive lock, so records from several processes do not
    interleave and keep one chain. The file stays open between records; before each
    one the path is looked at again, and a file that is not the one held (rotated,
    moved, deleted) is opened anew: rotating it needs no signal. A forked process
    opens its own (a lock held through an inherited descriptor would not exclude
    the parent).
    """

    __slots__ = ("_file", "_held", "_lock", "_tail", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        #: (the file's size, the last seq, its line's digest) as this log last wrote it.
        self._tail: tuple[int, int, str] | None = None
        self._file: Any = None
        #: (device, inode, pid) of the file held open, as it was opened.
        self._held: tuple[int, int, int] | None = None

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the file held open (the next record opens it again)."""
        f, self._file, self._held = getattr(self, "_file", None), None, None
        if f is not None:
            # Not contextlib.suppress: this also runs from __del__ at interpreter exit.
            try:  # noqa: SIM105
                f.close()
            except OSError:  # unbuffered: nothing written is lost
                pass

    def _open(self) -> Any:
        """The file at ``path`` now, open for appending: the one held when it still is."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        held = self._held
        if (
            self._file is not None
            and st is not None
            and held == (st.st_dev, st.st_ino, os.getpid())
        ):
            return self._file
        self.close()
        # Unbuffered: each record is one write() to the file, nothing left in a buffer
        # when a write fails.
        f = open(self.path, "a+b", buffering=0)  # noqa: SIM115 - held open, see close()
        try:
            now = os.fstat(f.fileno())
        except OSError:
            f.close()
            raise
        self._file, self._held = f, (now.st_dev, now.st_ino, os.getpid())
        return f

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"

    def check(self) -> None:
        """Create the directory and open the file for appending once; raises OSError."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8"):
            pass

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record``, chained to the last one; raises OSError when the file
        cannot be written."""
        with self._lock:
            f = self._open()
            _lock_file(f)
            try:
                end = f.seek(0, os.SEEK_END)
                tail = self._tail
                lead = b""
                if tail is None or tail[0] != end:  # first write, or another process wrote
                    seq, prev = _last_record(f, end)
                    if end and not _ends_a_line(f, end):
                        # A record cut short (a full disk, a size limit): its line is
                        # ended, so this record stands on a line of its own and the
                        # break shows where it is.
                        lead = b"\n"
                else:
                    seq, prev = tail[1], tail[2]
                chained = {"seq": seq + 1, "prev": prev, **record}
                text = json.dumps(chained, ensure_ascii=False, separators=(",", ":"), default=str)
                # JSON allows these raw inside strings, but line readers (str.splitlines,
                # many log shippers) split records on them: escaped, a record stays a line.
                data = text.translate(_LINE_BREAKS).encode("utf-8")
                line = lead + data + b"\n"
                written = f.write(line)
                if written != len(line):
                    raise OSError(f"the audit log took {written} of a record's {len(line)} bytes")
                self._tail = (end + len(line), seq + 1, _digest(data))
            except BaseException:
                self._tail = None  # read the file's end again next time
                _unlock_file(f)
                self.close()
                raise
            _unlock_file(f)


def _digest(line: bytes) -> str:
    return "sha256:" + hashlib.sha256(line).hexdigest()


def _lock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process per log
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _unlock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _ends_a_line(f: Any, end: int) -> bool:
    f.seek(end - 1)
    return bool(f.read(1) == b"\n")


def _last_record(f: Any, end: int) -> tuple[int, str]:
    """(seq, digest) of the file's last line: (0, GENESIS) for an empty file. A last
    line written before the chain (no ``seq``) counts as record 0: the chain starts
    after it, bound to it."""
    if end == 0:
        return 0, GENESIS
    start = max(0, end - _TAIL)
    f.seek(start)
    chunk = f.read(end - start)
    body = chunk[:-1] if chunk.endswith(b"\n") else chunk
    line = body.rsplit(b"\n", 1)[-1]
    if start > 0 and b"\n" not in body:
        raise OSError(f"the audit log's last line is over {_TAIL:,} bytes: not a record")
    try:
        seq = json.loads(line).get("seq")
    except (ValueError, AttributeError):
        seq = None
    return (seq if type(seq) is int and seq >= 0 else 0), _digest(line)


def read_records(path: Path) -> Iterator[tuple[int, bytes, dict[str, Any] | None]]:
    """(line number, the line as written, its record or None when it is not one)."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if len(raw) > _MAX_LINE:
                yield number, raw.rstrip(b"\n"), None
                continue
            line = raw.rstrip(b"\n")
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            yield number, line, value if isinstance(value, dict) else None


class ChainReport:
    """What :func:`verify_log` found: ``records`` read, ``head`` (the last record's
    digest, to anchor elsewhere), and ``problem`` (the first break) with its ``line``."""

    __slots__ = ("head", "line", "problem", "records")

    def __init__(self) -> None:
        self.records = 0
        self.head = GENESIS
        self.problem: str | None = None
        self.line: int | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def verify_log(path: Path) -> ChainReport:
    """Check a log's hash chain; the report names the first broken record."""
    report = ChainReport()
    expected = 1
    prev = GENESIS
    for number, line, record in read_records(path):
        if record is None:
            report.problem = f"line {number} is not a JSON record"
        else:
            seq = record.get("seq")
            if type(seq) is not int:
                report.problem = f"line {number} has no record number (seq): not chained"
            elif seq != expected:
                if number == 1:
                    report.problem = (
                        f"the log starts at record {seq}: records 1 to {seq - 1} are missing"
                    )
                else:
                    report.problem = (
                        f"line {number} is record {seq}, expected {expected}: "
                        f"records are missing or out of order"
                    )
            elif record.get("prev") != prev:
                report.problem = (
                    f"line {number} (record {seq}) does not follow the record before it: "
                    f"that record was edited, or one was removed"
                )
        if report.problem is not None:
            report.line = number
            return report
        report.records += 1
        prev = _digest(line)
        expected += 1
    report.head = prev
    return report
