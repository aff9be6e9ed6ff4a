"""The approval queue: a call a policy sends for approval becomes a request stored durably,
bound to the call's fingerprint (the tool, its exact arguments) and its principal,
answered once by someone the policy names, and expiring to a refusal (DESIGN.md,
"Approvals"). Any caller can wait on it: a policy files the request and refuses the call
for now; once the request is approved, the same call made again (by a caller that
waited, or one that resumes later) spends the approval and runs, once.

The store is an SQLite file the processes of one machine share (the user's alone, 0600),
or a PostgreSQL database the gateways of several machines share (``postgresql://``):
each answer and each spend is one transaction that locks out the other writers, so an
approval runs one call however many processes ask at once (:mod:`toolwire._approval_store`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from toolwire._approval_store import (
    ApprovalStore,
    SqliteStore,
    StoreError,
    Transaction,
    open_store,
)
from toolwire._exports import publish
from toolwire._hooks import Principal

if TYPE_CHECKING:
    from toolwire._calls import TypedCall

__all__ = [
    "PENDING",
    "ApprovalError",
    "ApprovalQueue",
    "ApprovalRequest",
    "default_queue_path",
    "may_answer",
    "queue_for",
    "request_ids_in",
]

logger = logging.getLogger("toolwire.approvals")

T = TypeVar("T")

#: A request's states: waiting for an answer, approved (not yet run), denied, spent (the
#: approved call ran), expired (nobody answered in time, or the approval was not used).
PENDING, APPROVED, DENIED, SPENT, EXPIRED = "pending", "approved", "denied", "spent", "expired"

#: The most requests one principal may have waiting at once (a caller cannot flood the
#: approvers' queue).
MAX_PENDING_PER_PRINCIPAL = 50

_ID = re.compile(r"\bapr_[A-Za-z0-9_-]{22}\b")


class ApprovalError(Exception):
    """A request that cannot be answered (not pending, expired, unknown, or the person
    answering may not), or a queue that cannot be read or written."""


@attrs.frozen
class ApprovalRequest:
    """One call waiting for (or given) a person's answer. ``key``: the call's fingerprint
    (``sha256:...``, as :func:`toolwire.call_fingerprint`); ``arguments``: as a person is
    shown them (every argument, secrets as the policy redacts them); ``approvers``: who
    may answer (``group:NAME``, ``user:NAME`` or a bare subject); ``policy``: the version
    of the policy that asked; times in seconds since the epoch; ``use_by``: an approved
    request's call must run before then. ``schema``: the tool's argument schema, which an
    approver's edit must fit; ``edited``: the arguments the approver approved instead
    (JSON), when they edited them."""

    id: str
    key: str
    tool: str
    arguments: str
    reason: str
    principal: Mapping[str, Any]
    approvers: tuple[str, ...]
    policy: str
    rule: str
    created: float
    expires: float
    status: str
    self_approve: bool = False
    schema: Mapping[str, Any] | None = None
    edited: str | None = None
    answered_by: str = ""
    answer: str = ""
    answered_at: float | None = None
    use_by: float | None = None

    def state(self, now: float | None = None) -> str:
        """The status as of ``now``: a pending request past its expiry, or an approval not
        used in time, is expired."""
        now = time.time() if now is None else now
        if self.status == PENDING and now >= self.expires:
            return EXPIRED
        if self.status == APPROVED and self.use_by is not None and now >= self.use_by:
            return EXPIRED
        return self.status

    @property
    def subject(self) -> str:
        """Who asked (the principal's subject; empty when the call named nobody)."""
        subject = self.principal.get("subject", "")
        return subject if isinstance(subject, str) else ""

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["approvers"] = list(self.approvers)
        out["principal"] = dict(self.principal)
        out["state"] = self.state()
        return out


def may_answer(approvers: Iterable[str], by: Principal) -> bool:
    """Whether ``by`` is one of ``approvers``: ``group:NAME`` (one of their groups),
    ``user:NAME`` or a bare ``NAME`` (their subject)."""
    for entry in approvers:
        kind, sep, name = entry.partition(":")
        if sep and kind == "group":
            if name in by.groups:
                return True
        elif (name if sep and kind == "user" else entry) == by.subject:
            return True
    return False


def _edited_text(arguments: Any) -> str:
    if not isinstance(arguments, Mapping):
        raise ApprovalError(
            f"edited arguments must be a JSON object, not {type(arguments).__name__}"
        )
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ApprovalError(f"edited arguments must be JSON: {exc}") from None
    if len(text) > 64 * 1024:
        raise ApprovalError("edited arguments are over 64 KiB")
    return text


def _fits(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, request_id: str) -> None:
    """ApprovalError naming the first place ``arguments`` break the tool's schema."""
    if schema is None:
        return
    import jsonschema

    try:
        validator = jsonschema.Draft202012Validator(dict(schema))
        error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    except jsonschema.exceptions.SchemaError as exc:
        problem = f"request {request_id}: its tool's schema is unusable: {exc.message}"
        raise ApprovalError(problem) from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the arguments)"
        raise ApprovalError(
            f"the edited arguments do not fit `{request_id}`'s tool at {where}: {error.message}"
        )


def request_ids_in(text: str) -> list[str]:
    """The approval request ids a refusal names (a policy's text for a queued call)."""
    return _ID.findall(text)


#: The queues this process filed requests in, by request id (most recent 4,096): how a
#: caller that reads a refusal finds where to wait for its answer.
_FILED: dict[str, ApprovalQueue] = {}
_FILED_LOCK = threading.Lock()


def queue_for(request_id: str) -> ApprovalQueue | None:
    """The queue this process filed request ``request_id`` in (None: not filed here)."""
    with _FILED_LOCK:
        return _FILED.get(request_id)


def filed_request(text: str, tool: str) -> tuple[ApprovalQueue, ApprovalRequest] | None:
    """The first approval request ``text`` (a refusal) names that this process filed for
    ``tool``, with its queue; None when there is none, or its queue cannot be read (the
    refusal then stands as it is)."""
    for request_id in request_ids_in(text):
        queue = queue_for(request_id)
        if queue is None:
            continue
        try:
            held = queue.get(request_id)
        except ApprovalError as exc:
            logger.error("reading approval request %s: %s", request_id, exc)
            return None
        if held is not None and held.tool == tool:
            return queue, held
    return None


def _remember(request_id: str, queue: ApprovalQueue) -> None:
    with _FILED_LOCK:
        _FILED.pop(request_id, None)
        _FILED[request_id] = queue
        while len(_FILED) > 4096:
            del _FILED[next(iter(_FILED))]


def default_queue_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/toolwire/approvals.sqlite`` (``~/.local/share`` by default)."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(home) / "toolwire" / "approvals.sqlite"


_FIELDS = {f.name for f in attrs.fields(ApprovalRequest)}


def _request(body: str) -> ApprovalRequest:
    data = json.loads(body)
    data["approvers"] = tuple(data.get("approvers", ()))
    return ApprovalRequest(**{k: v for k, v in data.items() if k in _FIELDS})


class ApprovalQueue:
    """The approval requests in a store: an SQLite file (``where``; default
    ``$XDG_DATA_HOME/toolwire/approvals.sqlite``) the processes of one machine share, a
    ``postgresql://`` database the gateways of several machines share, or any
    :class:`ApprovalStore` given as ``store``. Every wait on it has a deadline
    (``timeout``); past it, ApprovalError."""

    def __init__(
        self,
        where: str | os.PathLike[str] | None = None,
        *,
        timeout: float = 2.0,
        store: ApprovalStore | None = None,
    ) -> None:
        if store is None:
            try:
                store = open_store(
                    where if where is not None else default_queue_path(), timeout=timeout
                )
            except StoreError as exc:
                raise ApprovalError(f"the approval queue {exc}") from None
        elif where is not None:
            raise ApprovalError("give the queue a place or a store, not both")
        elif not isinstance(store, ApprovalStore):
            raise ApprovalError(
                f"store must be a toolwire.approvals.ApprovalStore (where, write, read, "
                f"close), got {type(store).__name__}"
            )
        self.store = store
        #: The SQLite file, for a queue kept in one (None: a database server's).
        self.path: Path | None = store.path if isinstance(store, SqliteStore) else None

    def __repr__(self) -> str:
        return f"<ApprovalQueue {self.store.where!r}>"

    def close(self) -> None:
        self.store.close()

    # -- the one transaction every change is ----------------------------------------------

    def _write(self, change: Callable[[Transaction], T]) -> T:
        try:
            return self.store.write(change)
        except StoreError as exc:
            raise ApprovalError(f"the approval queue {exc}") from None

    def _read(self, sql: str, args: Sequence[Any]) -> list[ApprovalRequest]:
        try:
            rows = self.store.read(sql, args)
        except StoreError as exc:
            raise ApprovalError(f"the approval queue {exc}") from None
        return [_request(body) for (body,) in rows]

    @staticmethod
    def _put(db: Transaction, request: ApprovalRequest) -> None:
        db.put(
            (
                request.id,
                request.key,
                request.subject,
                request.tool,
                request.status,
                request.created,
                request.expires,
                json.dumps(attrs.asdict(request)),
            )
        )

    # -- asking --------------------------------------------------------------------------

    def submit(
        self,
        *,
        key: str,
        tool: str,
        arguments: str,
        reason: str,
        principal: Principal | None,
        approvers: Sequence[str],
        lifetime: float,
        policy: str = "",
        rule: str = "",
        self_approve: bool = False,
        schema: Mapping[str, Any] | None = None,
        on_new: Callable[[ApprovalRequest], Any] | None = None,
    ) -> ApprovalRequest:
        """The request for this call: the one already waiting for the same call (the same
        key and principal), or the one an approver denied lately (a denial is not asked
        again until as long as the request lived has passed since), else a new one living
        ``lifetime`` seconds (``on_new(request)`` is told of a new one, once it is
        stored: a notification; what it raises is not the caller's). Raises
        ApprovalError when the principal has :data:`MAX_PENDING_PER_PRINCIPAL` waiting."""
        if not approvers:
            raise ApprovalError("a request needs someone who may answer it (approvers)")
        who = principal.to_dict() if principal is not None else {}
        subject = principal.subject if principal is not None else ""
        made: list[ApprovalRequest] = []  # the request this call stored, when it is new

        def change(db: Transaction) -> ApprovalRequest:
            made.clear()  # (a retried transaction starts again)
            now = time.time()
            db.rows(
                "UPDATE requests SET status = ? WHERE status = ? AND expires <= ?",
                (EXPIRED, PENDING, now),
            )
            for (body,) in db.rows(
                "SELECT body FROM requests WHERE key = ? AND subject = ? AND status IN (?, ?) "
                "ORDER BY created DESC",
                (key, subject, PENDING, DENIED),
            ):
                held = _request(body)
                if held.principal != who:
                    continue
                if held.status == PENDING and tuple(approvers) == held.approvers:
                    return held
                answered = held.answered_at or 0.0
                if held.status == DENIED and now < answered + (held.expires - held.created):
                    return held  # denied: not asked again until as long as it lived
            [(waiting,)] = db.rows(
                "SELECT COUNT(*) FROM requests WHERE subject = ? AND status = ?",
                (subject, PENDING),
            )
            if waiting >= MAX_PENDING_PER_PRINCIPAL:
                raise ApprovalError(
                    f"{subject or 'anonymous'} has {waiting} requests waiting for approval "
                    "already; wait for their answers"
                )
            request = ApprovalRequest(
                id="apr_" + secrets.token_urlsafe(16)[:22],
                key=key,
                tool=tool,
                arguments=arguments,
                reason=reason,
                principal=who,
                approvers=tuple(approvers),
                policy=policy,
                rule=rule,
                created=now,
                expires=now + lifetime,
                status=PENDING,
                self_approve=self_approve,
                schema=dict(schema) if schema is not None else None,
            )
            self._put(db, request)
            made.append(request)
            return request

        result: ApprovalRequest = self._write(change)
        _remember(result.id, self)
        if made and on_new is not None:
            try:
                on_new(result)
            except Exception:  # a notification never stands in the way of the queue
                logger.exception("telling of approval request %s failed", result.id)
        return result

    def spend(self, key: str, principal: Principal | None) -> ApprovalRequest | None:
        """Take the approval of this call (the same key and principal), once: the approved
        request, now spent, or None when there is none in force."""
        who = principal.to_dict() if principal is not None else {}
        subject = principal.subject if principal is not None else ""

        def change(db: Transaction) -> ApprovalRequest | None:
            now = time.time()
            for (body,) in db.rows(
                "SELECT body FROM requests WHERE key = ? AND subject = ? AND status = ? "
                "ORDER BY created",
                (key, subject, APPROVED),
            ):
                held = _request(body)
                if held.principal != who or held.state(now) != APPROVED:
                    continue
                spent = attrs.evolve(held, status=SPENT)
                self._put(db, spent)
                return spent
            return None

        result: ApprovalRequest | None = self._write(change)
        return result

    def vouch(self, request: ApprovalRequest, call: TypedCall[Any]) -> None:
        """Say to this process's executors that ``call`` runs by the approval ``request``
        gave (spent by :meth:`spend` for it): the executor's own approval gate takes it as
        approved, once, instead of asking the caller's approver, who counts for nothing
        where a policy names who answers. ``call``: the call as it runs (with the
        arguments the approver approved, when they edited them). Raises ApprovalError
        when the queue does not hold ``request`` spent for exactly this call."""
        from toolwire._execute.approval import _vouch, call_fingerprint  # (the queue is light)

        held = self.get(request.id)
        fingerprint = call_fingerprint(call)
        if (
            held is None
            or held.status != SPENT
            or held.principal != request.principal
            or held.key != request.key
            or (held.edited is None and held.key != "sha256:" + fingerprint)
        ):
            raise ApprovalError(f"approval request {request.id} was not spent for this call")
        principal = Principal(**held.principal) if held.principal else None
        _vouch(fingerprint, principal)

    # -- answering -----------------------------------------------------------------------

    def answer(
        self,
        request_id: str,
        *,
        approve: bool,
        by: Principal,
        reason: str = "",
        use_within: float | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> ApprovalRequest:
        """Approve or deny a pending request, once, as ``by`` (one of its approvers, and
        not the principal who asked unless the policy lets them). An approval must be used
        within ``use_within`` seconds (default: as long as the request lived). ``arguments``:
        approve the call with these instead (checked against the tool's schema here; the
        policy decides the edited call again before it runs). Raises ApprovalError naming
        why it cannot be answered."""
        if not isinstance(reason, str) or len(reason) > 2000:
            raise ApprovalError("the reason must be text of at most 2,000 characters")
        if arguments is not None and not approve:
            raise ApprovalError("arguments edit an approval; a denial takes none")
        edited = _edited_text(arguments) if arguments is not None else None

        def change(db: Transaction) -> ApprovalRequest:
            rows = db.rows("SELECT body FROM requests WHERE id = ?", (request_id,))
            if not rows:
                raise ApprovalError(f"there is no approval request {request_id!r}")
            held = _request(rows[0][0])
            now = time.time()
            state = held.state(now)
            if state != PENDING:
                raise ApprovalError(f"request {request_id} is {state}, not pending")
            if not may_answer(held.approvers, by):
                raise ApprovalError(
                    f"{by.subject} may not answer request {request_id} "
                    f"(its approvers: {', '.join(held.approvers)})"
                )
            if by.subject == held.subject and not held.self_approve:
                raise ApprovalError(
                    f"{by.subject} asked for request {request_id}, and nobody answers their "
                    "own request unless the policy says so"
                )
            if arguments is not None:
                _fits(arguments, held.schema, request_id)
            life = held.expires - held.created if use_within is None else use_within
            done = attrs.evolve(
                held,
                edited=edited,
                status=APPROVED if approve else DENIED,
                answered_by=by.subject,
                answer=reason,
                answered_at=now,
                use_by=now + life if approve else None,
            )
            self._put(db, done)
            return done

        result: ApprovalRequest = self._write(change)
        return result

    # -- reading and waiting -------------------------------------------------------------

    def get(self, request_id: str) -> ApprovalRequest | None:
        found = self._read("SELECT body FROM requests WHERE id = ?", (request_id,))
        return found[0] if found else None

    def pending(self, *, limit: int = 1000) -> list[ApprovalRequest]:
        """The requests waiting for an answer, oldest first."""
        return self._read(
            "SELECT body FROM requests WHERE status = ? AND expires > ? ORDER BY created LIMIT ?",
            (PENDING, time.time(), limit),
        )

    def history(
        self,
        *,
        subject: str | None = None,
        tool: str | None = None,
        state: str | None = None,
        limit: int = 200,
    ) -> list[ApprovalRequest]:
        """Every request, newest first, filtered by who asked, the tool, or its state."""
        sql, args = "SELECT body FROM requests WHERE 1 = 1", list[Any]()
        if subject is not None:
            sql, args = sql + " AND subject = ?", [*args, subject]
        if tool is not None:
            sql, args = sql + " AND tool = ?", [*args, tool]
        if state is None:
            return self._read(sql + " ORDER BY created DESC LIMIT ?", [*args, limit])
        # A state is the stored status, or (expired) one that time has ended: read those
        # rows only, at most a bounded number of them.
        stored = (PENDING, APPROVED, EXPIRED) if state == EXPIRED else (state,)
        marks = ", ".join("?" for _ in stored)
        found = self._read(
            sql + f" AND status IN ({marks}) ORDER BY created DESC LIMIT ?",
            [*args, *stored, 10 * limit],
        )
        return [r for r in found if r.state() == state][:limit]

    def wait(self, request_id: str, timeout: float, *, every: float = 0.25) -> ApprovalRequest:
        """The request once it is answered or expired, or as it stands after ``timeout``
        seconds (it may then be pending still)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.get(request_id)
            if found is None:
                raise ApprovalError(f"there is no approval request {request_id!r}")
            left = deadline - time.monotonic()
            if found.state() != PENDING or left <= 0:
                return found
            time.sleep(min(every, left))

    async def await_answer(
        self, request_id: str, timeout: float, *, every: float = 0.25
    ) -> ApprovalRequest:
        """:meth:`wait` for async code (the file is read off the event loop); cancellable."""
        deadline = time.monotonic() + timeout
        while True:
            found = await asyncio.to_thread(self.get, request_id)
            if found is None:
                raise ApprovalError(f"there is no approval request {request_id!r}")
            left = deadline - time.monotonic()
            if found.state() != PENDING or left <= 0:
                return found
            await asyncio.sleep(min(every, left))


publish(globals())
