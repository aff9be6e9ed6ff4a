"""Telling approvers a request waits: a webhook per policy (``[approvals] webhook``),
Slack-compatible JSON with a link to the request, signed so a receiver can check it came
from this policy. Delivered from a thread of its own, retried, and logged when it fails:
it never holds up the call or the queue."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import queue as queues
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from toolwire.approvals import ApprovalRequest

__all__ = ["Webhook", "verify_webhook"]

logger = logging.getLogger("toolwire_policy.webhook")

#: Headers a delivery carries: when it was signed (Unix seconds) and the signature,
#: ``sha256=`` and the HMAC-SHA256 of ``TIMESTAMP.BODY`` under the shared secret.
TIMESTAMP_HEADER, SIGNATURE_HEADER = "X-Toolwire-Timestamp", "X-Toolwire-Signature"
#: Deliveries waiting at once; past it a new one is dropped, and logged.
MAX_WAITING = 1000


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    return (
        "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    )


def verify_webhook(
    secret: bytes,
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance: float = 300.0,
    now: float | None = None,
) -> bool:
    """Whether a delivery came from a policy holding ``secret``: its signature matches
    its body and timestamp, and it was signed within ``tolerance`` seconds (an old
    delivery replayed is refused). ``headers`` as received (names in any case)."""
    found = {k.lower(): v for k, v in headers.items()}
    stamp = found.get(TIMESTAMP_HEADER.lower(), "")
    given = found.get(SIGNATURE_HEADER.lower(), "")
    try:
        age = abs((time.time() if now is None else now) - int(stamp))
    except ValueError:
        return False
    return age <= tolerance and hmac.compare_digest(sign(secret, stamp, body), given)


class Webhook:
    """Tells ``url`` of each new request (:meth:`send`), from a thread of its own:
    ``attempts`` tries, ``delays`` seconds apart (the last repeated), each within
    ``timeout`` seconds; a 2xx answer is delivered. ``secret``: signs each delivery;
    ``link``: the console's address, to which the request's id is appended."""

    def __init__(
        self,
        url: str,
        *,
        secret: bytes | None = None,
        link: str | None = None,
        attempts: int = 4,
        delays: tuple[float, ...] = (1.0, 5.0, 30.0),
        timeout: float = 10.0,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        self.url, self.secret, self.link = url, secret, link
        self.attempts, self.delays, self.timeout = attempts, delays, timeout
        self._sleep = sleep
        self._waiting: queues.Queue[ApprovalRequest] = queues.Queue(MAX_WAITING)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Webhook {self.url!r}>"

    def send(self, request: ApprovalRequest) -> None:
        """Queue a delivery for ``request`` (never blocks; a full queue drops it, logged)."""
        try:
            self._waiting.put_nowait(request)
        except queues.Full:
            logger.error("approval webhook: %d deliveries wait already; %s dropped", MAX_WAITING,
                         request.id)  # fmt: skip
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="toolwire-approval-webhook", daemon=True
                )
                self._thread.start()

    def flush(self, timeout: float) -> bool:
        """Wait until every queued delivery was tried (True), or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while self._waiting.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def payload(self, request: ApprovalRequest) -> bytes:
        """Slack-compatible JSON (``text``), and the request for other receivers."""
        who = request.subject or "(anonymous)"
        until = datetime.fromtimestamp(request.expires, UTC).strftime("%Y-%m-%d %H:%M UTC")
        where = f"{self.link.rstrip('/')}/#{request.id}" if self.link else request.id
        text = (
            f"{who} asks to run `{request.tool}`: {request.reason}. Waiting for "
            f"{', '.join(request.approvers)} until {until}: {where}"
        )
        data = {
            "text": text,
            "toolwire": {
                "request": request.id,
                "tool": request.tool,
                "asked_by": request.principal,
                "approvers": list(request.approvers),
                "reason": request.reason,
                "expires": request.expires,
                "link": where if self.link else None,
            },
        }
        return json.dumps(data, ensure_ascii=False).encode("utf-8")

    def _run(self) -> None:
        while True:
            try:
                request = self._waiting.get(timeout=60)
            except queues.Empty:
                return  # idle: the next send starts another
            try:
                self._deliver(request)
            except Exception:  # never the end of the thread
                logger.exception("approval webhook: delivering %s failed", request.id)
            finally:
                self._waiting.task_done()

    def _deliver(self, request: ApprovalRequest) -> None:
        # Here, not at the top: the HTTP client is imported when a delivery is made, not
        # by every process that loads the policy.
        from toolwire.adapters import afetch_bounded
        from toolwire.exceptions import FetchError

        body = self.payload(request)
        for attempt in range(1, self.attempts + 1):
            stamp = str(int(time.time()))
            headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: stamp}
            if self.secret is not None:
                headers[SIGNATURE_HEADER] = sign(self.secret, stamp, body)
            try:
                got = asyncio.run(
                    afetch_bounded(
                        "POST",
                        self.url,
                        content=body,
                        headers=headers,
                        limit=64 * 1024,
                        timeout=self.timeout,
                        what="the approval webhook's answer",
                    )
                )
                problem = None if 200 <= got.status < 300 else f"answered {got.status}"
            except FetchError as exc:
                problem = str(exc)
            if problem is None:
                logger.info("approval webhook: %s delivered", request.id)
                return
            last = attempt == self.attempts
            logger.warning(
                "approval webhook: delivering %s, attempt %d of %d: %s%s",
                request.id, attempt, self.attempts, problem, "; given up" if last else "",
            )  # fmt: skip
            if not last:
                self._sleep(self.delays[min(attempt - 1, len(self.delays) - 1)])
