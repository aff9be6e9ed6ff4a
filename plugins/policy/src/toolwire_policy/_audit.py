"""The JSON-lines audit log, and the canonical argument fingerprint."""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["AuditLog", "canonical_json", "fingerprint", "utc_now"]


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
    """Appends one JSON object per line to a file; safe across threads.

    Each record is written with a single ``write`` on a file opened in append
    mode, so records from several processes do not interleave mid-line. The
    file is opened for each record: rotating it needs no signal.
    """

    __slots__ = ("_lock", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"

    def check(self) -> None:
        """Create the directory and open the file for appending once; raises OSError."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8"):
            pass

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record``; raises OSError when the file cannot be written."""
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        # JSON allows these raw inside strings, but line readers (str.splitlines, many log
        # shippers) split records on them: escape them so one record stays one line.
        line = text.translate(_LINE_BREAKS) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
