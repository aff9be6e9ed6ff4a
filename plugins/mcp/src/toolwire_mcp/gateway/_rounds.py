"""A served call's questions on a 2026-07-28 request with no back-channel: asked in the
call's result, answered when the client calls again (SEP-2322, multi round-trip
requests).

A request of that version cannot wait for the client mid-call. When a served tool asks
(``mcp.elicit``), or the gateway asks its user to approve the call, the call ends there
(cancelled, and audited so) and its result is an ``InputRequiredResult`` holding the
question; the client asks its user and calls again with the answer (``inputResponses``)
and the ``requestState`` the gateway gave it. The call then runs again from its start:
each question it asks again is answered from what the client gave, in the order asked,
until it asks one more (another round) or ends. A tool asked this way runs once per
round up to its question: ask before you act.

``requestState`` carries the answers of the earlier rounds and the approval given, so
the client need not send them again; it is signed with the gateway's key and bound to
the call (its tool, its arguments, its principal), so it can neither be forged nor
carried to another call, and it is bounded (:data:`MAX_STATE`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import mcp_types as types

__all__ = ["CALL_ROUNDS", "MAX_STATE", "Rounds", "Signer", "elicit_result", "until_asked"]

_T = TypeVar("_T")

#: The longest ``requestState`` taken (characters); a longer one is not the gateway's.
MAX_STATE = 256 * 1024
#: The most questions one call may ask across its rounds.
MAX_QUESTIONS = 32
_PREFIX = "tw1."


def _dump(answer: Any) -> Any:
    dump = getattr(answer, "model_dump", None)
    return dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else answer


class Rounds:
    """One call's questions across its rounds: the answers given so far (``answers``, by
    key), the approval given in an earlier round (``approved``: what it was for and the
    answer), and the question this round could not answer (``needed``)."""

    __slots__ = ("answers", "approved", "asking", "count", "needed", "wake")

    def __init__(
        self,
        answers: Mapping[str, Any] | None = None,
        approved: tuple[str, Any] | None = None,
        asking: str | None = None,
    ) -> None:
        self.answers: dict[str, Any] = dict(answers or {})
        self.approved = approved
        #: The approval (its binding) the last round asked, whose answer comes now.
        self.asking = asking
        self.count = 0
        self.needed: tuple[str, dict[str, Any]] | None = None
        #: Woken when the round asks (set by :func:`until_asked`).
        self.wake: asyncio.Future[None] | None = None

    async def ask(self, request: dict[str, Any]) -> Any:
        """The answer to this call's next question: the one the client gave in a round
        before, else the call stops here (it is cancelled while it waits) and its result
        asks the client."""
        self.count += 1
        key = f"toolwire_input_{self.count}"
        if key in self.answers:
            return self.answers[key]
        if self.count > MAX_QUESTIONS:
            raise RuntimeError(f"a call may ask at most {MAX_QUESTIONS} questions")
        self.needed = (key, request)
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)
        # Never resolved: the call is cancelled here, and runs again with the answer.
        never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        return await never


#: The rounds of the served call running in this context (set by the gateway per call).
CALL_ROUNDS: contextvars.ContextVar[Rounds | None] = contextvars.ContextVar(
    "toolwire_mcp_call_rounds", default=None
)


class Signer:
    """``requestState`` for one gateway: signed with its key, bound to a call by
    ``bind(ctx, params)``."""

    def __init__(self, key: bytes, bind: Callable[[Any, Any], str]) -> None:
        self._key = key
        self._bind = bind

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode("ascii"), hashlib.sha256).hexdigest()

    def state(self, ctx: Any, params: Any, rounds: Rounds, asking: str | None = None) -> str:
        """The state the client sends back with its answers to this round's question."""
        data = {
            "bind": self._bind(ctx, params),
            "answers": {k: _dump(v) for k, v in rounds.answers.items()},
            "approved": [rounds.approved[0], _dump(rounds.approved[1])]
            if rounds.approved is not None
            else None,
            "asking": asking,
        }
        body = base64.urlsafe_b64encode(
            json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        ).decode("ascii")
        return f"{_PREFIX}{body}.{self._mac(body)}"

    def rounds(self, ctx: Any, params: Any) -> Rounds:
        """The rounds of this call: what its ``requestState`` carries, when the gateway
        signed it for this very call, with the answers this request brings; else only
        those answers (a state that is not ours, or another call's, carries nothing)."""
        given = dict(getattr(params, "input_responses", None) or {})
        carried = self._carried(ctx, params)
        if carried is None:
            return Rounds({k: v for k, v in given.items() if k.startswith("toolwire_input_")})
        answers = dict(carried.get("answers") or {})
        answers.update({k: v for k, v in given.items() if k.startswith("toolwire_input_")})
        approved = carried.get("approved")
        approval = (
            (approved[0], approved[1])
            if isinstance(approved, list) and len(approved) == 2 and isinstance(approved[0], str)
            else None
        )
        asking = carried.get("asking")
        return Rounds(answers, approval, asking if isinstance(asking, str) else None)

    def _carried(self, ctx: Any, params: Any) -> dict[str, Any] | None:
        state = getattr(params, "request_state", None)
        if not isinstance(state, str) or len(state) > MAX_STATE or not state.startswith(_PREFIX):
            return None
        body, _, mac = state[len(_PREFIX) :].partition(".")
        if not body.isascii() or not mac.isascii():
            return None
        if not hmac.compare_digest(mac.encode("ascii"), self._mac(body).encode("ascii")):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body.encode("ascii")))
        except (ValueError, UnicodeError):
            return None
        if not isinstance(data, dict) or data.get("bind") != self._bind(ctx, params):
            return None
        return data


async def until_asked(work: Awaitable[_T], rounds: Rounds) -> _T | None:
    """``work``'s result, or None when it asked a question this round cannot answer
    (``rounds.needed``): it is cancelled then, and waited for."""
    # One task for the work and one future to wake on (it ends, or it asks): the cheapest
    # race asyncio has, on every call of a request with no back-channel.
    wake = rounds.wake = asyncio.get_running_loop().create_future()
    running = asyncio.ensure_future(work)

    def ended(_: Any) -> None:
        if not wake.done():
            wake.set_result(None)

    running.add_done_callback(ended)
    try:
        await wake
    except asyncio.CancelledError:
        running.cancel()
        raise
    if running.done():
        return running.result()
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    return None


def elicit_result(answer: Any) -> Any:
    """An answer carried in a call's requestState (JSON) as the SDK's ElicitResult;
    anything else is a cancelled answer."""
    try:
        return types.ElicitResult.model_validate(answer)
    except Exception:
        return types.ElicitResult(action="cancel")
