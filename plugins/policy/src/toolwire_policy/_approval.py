"""Approval of a call the organisation's policy says needs it: an approval key spent once,
or the application's approver asked (sync or async, and only when awaited); and the
policy's verdict on a call."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Container, Coroutine, Generator
from typing import Any, Generic, TypeVar

import attrs

from toolwire import HookContext, TypedCall, call_fingerprint

__all__ = [
    "ALLOW",
    "APPROVAL_REASON",
    "APPROVED",
    "APPROVER",
    "Deferred",
    "Verdict",
    "approval_key",
    "ask_approval",
]

T = TypeVar("T")

#: ``HookContext.extra[APPROVER]``: ``approver(call, reason) -> bool`` (or an awaitable bool).
APPROVER = "toolwire.approver"
#: ``HookContext.extra[APPROVED]``: a container of :func:`approval_key` values already approved.
APPROVED = "toolwire.approved"
#: Every approval rejection reason starts with this.
APPROVAL_REASON = "requires approval"


@attrs.frozen
class Verdict:
    """The policy's verdict on one call: ``allowed``, and why not (or how it was approved)."""

    allowed: bool
    reason: str = ""
    approval: str | None = None  # "approved" (key in the approved set) or "approver"
    #: The input the call runs with instead of its own: an approver's edit, decided again.
    input: Any = None


ALLOW = Verdict(True)


def approval_key(call: TypedCall[Any]) -> str:
    """What approves exactly this call, once: a fingerprint of its tool name and its
    effective input, secrets included by a digest of their real value.

    Put it in ``HookContext.extra["toolwire.approved"]`` (a mutable set or list) and
    the next call with the same tool and the same arguments is approved, and the key
    is spent (removed): an approval runs one call. Any other arguments, another secret
    value (two ``SecretStr`` passwords that both show as ``**********``) or a second
    call are not approved. The same key as :func:`toolwire.call_fingerprint`, which the
    executor's approvals are bound to; it is never written to the audit log.
    """
    return "sha256:" + call_fingerprint(call)


_SPEND_LOCK = threading.Lock()


def _spend(approved: Any, key: str) -> bool | None:
    """Take ``key`` out of the approved keys: True when it was there and is now spent,
    False when it was not there, None when the container cannot be spent from."""
    with _SPEND_LOCK:
        if key not in approved:
            return False
        remove = getattr(approved, "remove", None)
        if not callable(remove):
            return None
        try:
            remove(key)
        except (KeyError, ValueError):
            return False
        return True


def ask_approval(
    call: TypedCall[Any], context: HookContext, reason: str
) -> Verdict | Awaitable[Verdict]:
    extra = context.extra
    approved = extra.get(APPROVED)
    if approved is not None:
        if not isinstance(approved, Container):
            return Verdict(
                False,
                f"{reason} (HookContext.extra[{APPROVED!r}] must be a set of approval keys, "
                f"got {type(approved).__name__})",
            )
        spent = _spend(approved, approval_key(call))
        if spent:
            return Verdict(True, approval="approved")
        if spent is None:
            return Verdict(
                False,
                f"{reason} (HookContext.extra[{APPROVED!r}] must be a mutable set of approval "
                f"keys, so each approval is spent once; got {type(approved).__name__})",
            )
    approver = extra.get(APPROVER)
    if approver is None:
        return Verdict(False, reason)
    if not callable(approver):
        return Verdict(False, f"{reason} (HookContext.extra[{APPROVER!r}] is not callable)")
    if _is_async(approver):
        # Called only when awaited: a caller that drops the awaitable (a sync
        # pipeline) leaves no un-awaited coroutine behind.
        return Deferred(lambda: _ask_async(approver, call, reason))
    try:
        answer = approver(call, reason)
    except Exception as exc:
        return Verdict(False, f"{reason} (the approver failed: {type(exc).__name__}: {exc})")
    if inspect.isawaitable(answer):
        return Deferred(lambda: _await_answer(answer, reason))
    return _approval_verdict(answer, reason)


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  (an object with an async __call__)
    )


async def _ask_async(approver: Any, call: TypedCall[Any], reason: str) -> Verdict:
    try:
        value = await approver(call, reason)
    except Exception as exc:
        return Verdict(False, f"{reason} (the approver failed: {type(exc).__name__}: {exc})")
    return _approval_verdict(value, reason)


async def _await_answer(answer: Awaitable[Any], reason: str) -> Verdict:
    try:
        value = await answer
    except Exception as exc:
        return Verdict(False, f"{reason} (the approver failed: {type(exc).__name__}: {exc})")
    return _approval_verdict(value, reason)


class Deferred(Generic[T]):
    """An awaitable that starts its coroutine only when awaited."""

    __slots__ = ("_start",)

    def __init__(self, start: Callable[[], Coroutine[Any, Any, T]]) -> None:
        self._start = start

    def __await__(self) -> Generator[Any, None, T]:
        return self._start().__await__()

    def close(self) -> None:
        """Nothing was started, so there is nothing to close (for callers that close awaitables)."""


def _approval_verdict(answer: Any, reason: str) -> Verdict:
    # Only True approves: a truthy non-bool is more likely a bug than a yes.
    if answer is True:
        return Verdict(True, approval="approver")
    return Verdict(False, f"{reason}; the approver declined")
