"""Approval: decisions (Allow, Deny, Modify, Defer), the gate by effect, the request an
approver sees, and the fingerprint that binds an approval to the exact arguments.
"""

from __future__ import annotations

import enum
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

import attrs
import pydantic_core
from pydantic import BaseModel, SecretBytes, SecretStr

from toolwire._calls import (
    TypedCall,
)
from toolwire._exports import publish
from toolwire._hooks import HookContext, Principal
from toolwire._metadata import ToolEffect

if TYPE_CHECKING:
    pass


@attrs.frozen
class Allow:
    """Approve the call as reviewed."""


@attrs.frozen
class Deny:
    """Refuse the call; the model receives a rejection carrying ``reason``."""

    reason: str = "denied"


@attrs.frozen
class Modify:
    """Approve the call with other arguments (a dict, a model instance or JSON text).

    They are validated against the tool's schema again; invalid ones give an
    error result and the tool is not run.
    """

    arguments: Any


@attrs.frozen
class Defer:
    """Decide later: nothing runs; the caller gets ApprovalRequest records to resume with."""

    note: str = ""


ApprovalDecision = Union[Allow, Deny, Modify, Defer]


class ApprovalGate(str, enum.Enum):
    """Which calls the approver sees, by the tool's effect."""

    ALWAYS = "always"
    DESTRUCTIVE_ONLY = "destructive_only"
    MUTATING_AND_ABOVE = "mutating_and_above"

    def applies(self, effect: ToolEffect) -> bool:
        if self is ApprovalGate.ALWAYS:
            return True
        if self is ApprovalGate.DESTRUCTIVE_ONLY:
            return effect is ToolEffect.DESTRUCTIVE
        return effect.rank >= ToolEffect.MUTATING.rank


def _canonical_json(value: Any) -> str:
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    plain = pydantic_core.to_jsonable_python(plain, fallback=repr)
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_fingerprint(call: TypedCall[Any]) -> str:
    """sha256 (hex) of the canonical JSON of ``{"tool": name, "input": input}``.

    Canonical: keys sorted, no spaces, UTF-8. An approval is bound to this
    value; a call whose input no longer has it is not run.
    """
    text = _canonical_json({"tool": call.name, "input": _bound(call.input)})
    return hashlib.sha256(text.encode()).hexdigest()


# -- approvals a policy's named approvers gave ----------------------------------------------

#: Calls a person the policy names approved through the approval queue, as the policy that
#: spent the approval lets them run: fingerprint -> [(principal, until)]. The executor's
#: own approval gate takes such a call as approved, once: where the policy names who
#: answers, the caller's approver counts for nothing (it once refused what they approved).
#: Filled only by :meth:`toolwire.approvals.ApprovalQueue.vouch`, which reads in the queue
#: that the request was spent, for this principal.
_VOUCHED: dict[str, list[tuple[Principal | None, float]]] = {}
_VOUCH_LOCK = threading.Lock()
#: Seconds a vouched call has to reach the gate (it comes within the same decision).
VOUCH_FOR = 60.0
_VOUCH_MAX = 1024


def _vouch(fingerprint: str, principal: Principal | None) -> None:
    now = time.monotonic()
    with _VOUCH_LOCK:
        if len(_VOUCHED) >= _VOUCH_MAX:  # the stale first; never more than the bound
            for key in [k for k, held in _VOUCHED.items() if held[-1][1] <= now]:
                del _VOUCHED[key]
            while len(_VOUCHED) >= _VOUCH_MAX:
                del _VOUCHED[next(iter(_VOUCHED))]
        _VOUCHED.setdefault(fingerprint, []).append((principal, now + VOUCH_FOR))


def _take_vouched(fingerprint: str, principal: Principal | None) -> bool:
    """Whether the call with ``fingerprint`` for ``principal`` was approved by a person the
    policy names (spending that, once)."""
    if not _VOUCHED:
        return False
    now = time.monotonic()
    with _VOUCH_LOCK:
        held = _VOUCHED.get(fingerprint)
        if held is None:
            return False
        for i, (whom, until) in enumerate(held):
            if whom == principal and until > now:
                del held[i]
                if not held:
                    del _VOUCHED[fingerprint]
                return True
        return False


def _bound(value: Any) -> Any:
    """The input as the fingerprint binds it: a secret field (``SecretStr``,
    ``SecretBytes``) by a digest of its real value, where serialising would give
    ``**********`` for every secret (approving one password would approve any other).
    The value itself is never written anywhere; what reviewers see stays masked."""
    if isinstance(value, (SecretStr, SecretBytes)):
        raw = value.get_secret_value()
        data = raw.encode() if isinstance(raw, str) else raw
        return {"secret_sha256": hashlib.sha256(data).hexdigest()}
    if isinstance(value, BaseModel):
        return {name: _bound(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, Mapping):
        return {str(k): _bound(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bound(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


@attrs.frozen
class Approval:
    """A decision for one deferred call, bound to the fingerprint that was reviewed.

    An approval is spent by the call it lets run: presented again (for a replayed call
    with the same id and arguments) it is refused, unless it was made ``reusable``.
    """

    call_id: str
    fingerprint: str
    decision: ApprovalDecision
    reusable: bool = False
    _uses: list[int] = attrs.field(factory=lambda: [0], init=False, eq=False, repr=False)

    def _spend(self) -> bool:
        """Count a use; False when a one-time approval was used already."""
        if self._uses[0] and not self.reusable:
            return False
        self._uses[0] += 1
        return True


@attrs.frozen
class ApprovalRequest:
    """What an approver reviews (and what a deferred approval hands back to the caller).

    ``call`` is the typed call with the input that would run, ``fingerprint``
    binds a decision to exactly that input, ``context`` is the round's hook
    context (or None). ``allow()``, ``deny(reason)`` and ``modify(arguments)``
    make the Approval records :meth:`Executor.resume` takes.
    """

    call: TypedCall[Any]
    fingerprint: str
    context: HookContext | None = None

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def tool_name(self) -> str:
        return self.call.name

    @property
    def input(self) -> Any:
        return self.call.input

    @property
    def effect(self) -> ToolEffect:
        return self.call.metadata.effect

    @property
    def arguments_json(self) -> str:
        """The canonical JSON of the input under review (what the fingerprint hashes)."""
        return _canonical_json(_plain(self.call.input))

    def allow(self, *, reusable: bool = False) -> Approval:
        """Approve this call (once; ``reusable=True`` lets a replay of it run too)."""
        return Approval(self.call.id, self.fingerprint, Allow(), reusable)

    def deny(self, reason: str = "denied") -> Approval:
        return Approval(self.call.id, self.fingerprint, Deny(reason))

    def modify(self, arguments: Any) -> Approval:
        return Approval(self.call.id, self.fingerprint, Modify(arguments))


Approver = Callable[[ApprovalRequest], "ApprovalDecision | Awaitable[ApprovalDecision]"]


publish(globals())
