"""The policy's audit log as a :class:`toolwire.approvals.AuditTrail`: what the approval
console reads (``toolwire_audit_trails``).

Who may read it: the people ``[audit] readers`` names, else the approvers ``[approvals]``
names (they answer calls whose history is in it), else nobody. Records are read from
the end, at most :data:`MAX_SCAN` bytes back, so a page of the newest costs the same for
a log of a gigabyte; the chain is verified from the first record, once per change of the
file (its size, time and inode), since a whole log is read for it.
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolwire import Principal
from toolwire.approvals import ChainCheck, may_answer
from toolwire_policy._audit import _MAX_LINE, verify_log

__all__ = ["MAX_SCAN", "AuditLogTrail", "newest_records"]

#: The most bytes read back from a log's end for one page of records.
MAX_SCAN = 64 * 1024 * 1024
_CHUNK = 256 * 1024
#: The most records one page may ask for.
MAX_LIMIT = 1000


def _lines_backwards(path: Path, max_bytes: int = MAX_SCAN) -> Iterator[bytes]:
    """The file's lines, last first (without their newline), reading no more than
    ``max_bytes`` from its end; a line longer than a record may be is skipped."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        floor = max(0, end - max_bytes)
        pos = end
        rest = b""  # the start of a line whose beginning is further back
        skipping = False  # inside a line too long to be a record: read back to its start
        while pos > floor:
            step = min(_CHUNK, pos - floor)
            pos -= step
            f.seek(pos)
            data = f.read(step)
            if skipping:
                cut = data.rfind(b"\n")
                if cut < 0:
                    continue
                data, skipping = data[: cut + 1], False
            else:
                data += rest
            parts = data.split(b"\n")
            rest = parts[0]
            for line in reversed(parts[1:]):
                if line:
                    yield line
            if len(rest) > _MAX_LINE:
                rest, skipping = b"", True
        if pos == 0 and rest and not skipping:
            yield rest


def newest_records(
    path: Path,
    *,
    limit: int = 200,
    subject: str | None = None,
    tool: str | None = None,
    decision: str | None = None,
    max_bytes: int = MAX_SCAN,
) -> list[dict[str, Any]]:
    """The newest records of the log at ``path``, newest first (see
    :meth:`toolwire.approvals.AuditTrail.records`); a line that is not a record is
    skipped (``verify`` names it)."""
    import json

    limit = max(0, min(int(limit), MAX_LIMIT))
    found: list[dict[str, Any]] = []
    if limit == 0 or not path.is_file():
        return found
    for line in _lines_backwards(path, max_bytes):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        principal = record.get("principal")
        who = principal.get("subject") if isinstance(principal, dict) else None
        if subject is not None and who != subject:
            continue
        if tool is not None and not fnmatch.fnmatchcase(str(record.get("tool")), tool):
            continue
        if decision is not None and record.get("decision") != decision:
            continue
        found.append(record)
        if len(found) >= limit:
            break
    return found


class AuditLogTrail:
    """One policy's audit log, offered to readers the policy names."""

    __slots__ = ("_checked", "_lock", "name", "path", "readers")

    def __init__(self, path: Path, readers: Sequence[str], *, plugin: str = "policy") -> None:
        self.path = path
        self.readers = tuple(readers)
        self.name = f"{plugin}: {path}"
        self._lock = threading.Lock()
        self._checked: tuple[tuple[int, int, int], ChainCheck] | None = None

    def __repr__(self) -> str:
        return f"<AuditLogTrail {self.name}>"

    def readable_by(self, principal: Principal) -> bool:
        return bool(self.readers) and may_answer(self.readers, principal)

    def records(
        self,
        *,
        limit: int = 200,
        subject: str | None = None,
        tool: str | None = None,
        decision: str | None = None,
    ) -> Sequence[Mapping[str, Any]]:
        return newest_records(self.path, limit=limit, subject=subject, tool=tool, decision=decision)

    def verify(self) -> ChainCheck:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return ChainCheck(whole=True, records=0, head="(no records yet)")
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._checked is not None and self._checked[0] == key:
                return self._checked[1]
            report = verify_log(self.path)
            check = ChainCheck(
                whole=report.ok, records=report.records, head=report.head, problem=report.problem
            )
            self._checked = (key, check)
            return check
