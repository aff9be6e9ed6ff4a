"""The JSON-lines audit log (tamper-evident: a hash chain), and the canonical argument
fingerprint.

Each record carries ``seq`` (1, 2, ...) and ``prev``, the SHA-256 of the previous
record's line as written (``GENESIS`` for the first). Editing a record breaks the next
one's ``prev``; deleting one breaks ``seq`` and ``prev``; deleting the first records
shows as a log that does not start at 1. Cutting records off the end cannot be seen from
the file alone: keep the head digest ``verify`` prints somewhere else (a ticket, another
system's log) to anchor it. Appends take an exclusive lock on the file, so several
processes writing one log keep one chain.

Every record is bounded (:data:`MAX_RECORD` bytes): a value too large to keep (a model's
megabyte argument) is written as its SHA-256 and size, never in full, so no call can
write a record that a later writer or ``verify`` cannot read; and the chain's head is
found at any line length, so a log written before that bound still takes records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "GENESIS",
    "MAX_RECORD",
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
#: The most bytes one record's line may take; larger values are kept as digest and size.
MAX_RECORD = 64 * 1024
_MAX_LINE = 16 * 1024 * 1024  # verify: a longer line is not a record this log wrote
_TAIL = 64 * 1024  # read back from the end at a time, looking for the last line's start
_VALUE_LIMIT = 4096  # characters of one string value kept in a record that is too large
#: Kept whatever their size: they say which record this is and chain it.
_FIXED = frozenset({"seq", "prev", "event"})


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
        """Create the directory and open the file for appending once; raises OSError.

        An existing file is written only when it is empty or an audit log (its first line
        a record this log writes): a policy's ``[audit] path`` naming any other file the
        user can write (a shell profile, a key file) is refused, never appended to."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"'{self.path}' is not a regular file")
            if st.st_size:
                f.seek(0)
                first = f.read(_TAIL).split(b"\n", 1)[0]
                if not _is_record(first):
                    raise OSError(
                        f"'{self.path}' is not an audit log (its first line is not a "
                        f"record): an audit path must be a new file or an audit log"
                    )

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
                data = bounded_line({"seq": seq + 1, "prev": prev, **record})
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


def _line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    # JSON allows these raw inside strings, but line readers (str.splitlines, many log
    # shippers) split records on them: escaped, a record stays a line.
    return text.translate(_LINE_BREAKS).encode("utf-8")


def _omitted(value: Any, size: int) -> dict[str, Any]:
    """What stands in a record for a value too large to keep: the SHA-256 of its UTF-8
    text (a string) or of its canonical JSON (anything else), and its size in bytes."""
    if isinstance(value, str):
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    else:
        digest = fingerprint(value).removeprefix("sha256:")
    return {"omitted": "over the audit log's record limit", "sha256": digest, "bytes": size}


def _shrink(value: Any) -> Any:
    """``value`` with every string over ``_VALUE_LIMIT`` characters replaced by its
    digest and size (in lists and objects too)."""
    if isinstance(value, str):
        if len(value) <= _VALUE_LIMIT:
            return value
        return _omitted(value, len(value.encode("utf-8", "surrogatepass")))
    if isinstance(value, dict):
        return {str(k)[:_VALUE_LIMIT]: _shrink(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shrink(v) for v in value]
    return value


def bounded_line(record: dict[str, Any]) -> bytes:
    """The line ``record`` is written as, never over :data:`MAX_RECORD` bytes.

    A record that fits is written as it is. Otherwise each long string becomes its digest
    and size; then, while still too large, the largest field (but ``seq``, ``prev`` and
    ``event``) becomes its digest and size. The record keeps every key, so a reader sees
    what was left out and can check a value it holds against the digest."""
    data = _line(record)
    if len(data) <= MAX_RECORD:
        return data
    shrunk = {k: (v if k in _FIXED else _shrink(v)) for k, v in record.items()}
    data = _line(shrunk)
    sizes = {k: len(_line({k: v})) for k, v in shrunk.items() if k not in _FIXED}
    for key in sorted(sizes, key=sizes.__getitem__, reverse=True):
        if len(data) <= MAX_RECORD:
            break
        shrunk[key] = _omitted(record[key], sizes[key])
        data = _line(shrunk)
    if len(data) > MAX_RECORD:  # only the fixed keys are left: a caller's bug, not input
        raise ValueError(f"an audit record's seq, prev and event take {len(data):,} bytes")
    return data


def _is_record(line: bytes) -> bool:
    """Whether ``line`` (at most ``_TAIL`` bytes of it) starts a record: a chained one
    (whole, or cut short: a crash during the first write must not lock the log), or one
    written before the chain (an object with ``time`` and ``event``)."""
    if re.match(rb'\{"seq":\d', line):
        return True
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and "time" in value and "event" in value


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
    after it, bound to it. The line may be of any length (a record written before
    records were bounded): its start is found reading back from the end a block at a
    time, and its digest is taken reading forward, neither holding it whole."""
    if end == 0:
        return 0, GENESIS
    stop = end - 1 if _ends_a_line(f, end) else end  # the last line's bytes end here
    start = stop
    while start > 0:
        step = max(0, start - _TAIL)
        f.seek(step)
        block = f.read(start - step)
        cut = block.rfind(b"\n")
        if cut >= 0:
            start = step + cut + 1
            break
        start = step
    hasher = hashlib.sha256()
    f.seek(start)
    left = stop - start
    head = b""
    while left > 0:
        chunk = f.read(min(left, 1024 * 1024))
        if not chunk:
            break
        if len(head) < _TAIL:
            head += chunk[: _TAIL - len(head)]
        hasher.update(chunk)
        left -= len(chunk)
    seq: Any = None
    if stop - start <= _TAIL:
        try:
            seq = json.loads(head).get("seq")
        except (ValueError, AttributeError):
            seq = None
    else:  # too long to parse: a record this log wrote starts with its seq
        match = re.match(rb'\{"seq":(\d{1,18}),"prev":"sha256:[0-9a-f]{64}"', head)
        seq = int(match.group(1)) if match else None
    return (seq if type(seq) is int and seq >= 0 else 0), "sha256:" + hasher.hexdigest()


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
    digest, to anchor elsewhere), ``breaks`` (the line numbers of records cut short, each
    followed by a chain that starts from it), ``segments`` (chains in the file), and
    ``problem`` (the first thing that fails the log: tampering, a break not accepted, an
    anchored head not found) with its ``line``."""

    __slots__ = ("breaks", "head", "line", "problem", "records", "segments")

    def __init__(self) -> None:
        self.records = 0
        self.head = GENESIS
        self.problem: str | None = None
        self.line: int | None = None
        self.breaks: list[int] = []
        self.segments = 0

    @property
    def ok(self) -> bool:
        return self.problem is None


def verify_log(
    path: Path, *, accept_breaks: Iterable[int] = (), heads: Iterable[str] = ()
) -> ChainReport:
    """Check a log's hash chain; the report names the first problem.

    A line that is not a record, followed by a record chained to it (its ``prev`` is
    that line's digest), is a *break*: a record cut short (a crash, a full disk) after
    which the next writer started a new chain. Each segment is verified; a break fails the
    log until the operator accepts it by its line number (``accept_breaks``), as tampering
    could look the same. Anything else out of chain is tampering (an edit, a record
    removed or reordered). ``heads`` are digests kept elsewhere (``verify`` printed them
    before): each must be a record in the log, or the log was rewritten from an earlier
    record onwards, or cut before it, and the report says so."""
    report = ChainReport()
    accepted = set(accept_breaks)
    anchors = dict.fromkeys(heads)
    expected = 1
    prev = GENESIS
    torn: tuple[int, str, str] | None = None  # (line, digest, why) of a line not a record
    for number, line, record in read_records(path):
        digest = _digest(line)
        seq = record.get("seq") if record is not None else None
        if record is None or type(seq) is not int:
            if torn is not None:
                report.problem, report.line = f"line {torn[0]} {torn[2]}", torn[0]
                return report
            why = "is not a JSON record" if record is None else "has no record number (seq)"
            torn = (number, digest, why)
            continue
        if torn is not None:
            if record.get("prev") != torn[1]:  # not a chain started from it
                report.problem, report.line = f"line {torn[0]} {torn[2]}", torn[0]
                return report
            report.breaks.append(torn[0])
            report.segments += 1
            expected, prev, torn = seq, torn[1], None
        elif report.segments == 0:
            report.segments = 1
        if seq != expected:
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
        anchors.pop(digest, None)
        prev = digest
        expected = seq + 1
    if torn is not None:  # the last line: a record cut short with nothing after it yet
        report.breaks.append(torn[0])
    report.head = prev
    for line_number in report.breaks:
        if line_number not in accepted:
            report.problem = (
                f"line {line_number} is a record cut short (a crash, a full disk), and the "
                f"chain starts again after it; if that is what happened, accept it "
                f"(--accept-break {line_number})"
            )
            report.line = line_number
            return report
    if anchors:
        missing = next(iter(anchors))
        report.problem = (
            f"the head {missing} kept elsewhere is not a record of this log: the log was "
            f"rewritten from an earlier record onwards, or cut before it"
        )
    return report
