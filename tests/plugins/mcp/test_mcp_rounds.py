"""A served call's rounds (SEP-2322) on 2026-07-28: the requestState the gateway signs is
read back only when it is the gateway's own, for this call, and well formed; anything
else carries nothing (the questions start again). The whole flow through the SDK's
client is in test_mcp_server.py."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

from toolwire_mcp.gateway._rounds import MAX_QUESTIONS, MAX_STATE, Rounds, Signer


@attrs.frozen
class Params:
    name: str = "rename"
    request_state: str | None = None
    input_responses: dict[str, Any] | None = None


def _signer(bind: str = "call-1") -> Signer:
    return Signer(b"k" * 32, lambda ctx, params: bind)


def test_a_state_is_read_back_with_its_answers_and_approval() -> None:
    rounds = Rounds({"toolwire_input_1": {"action": "accept", "content": {"n": 1}}})
    rounds.approved = ("digest", {"action": "accept", "content": {"approve": True}})
    state = _signer().state(None, Params(), rounds, asking="wanted")
    back = _signer().rounds(None, Params(request_state=state, input_responses={
        "toolwire_input_2": {"action": "decline"}, "other": {"action": "accept"}}))  # fmt: skip
    assert {"toolwire_input_1", "toolwire_input_2"} == set(back.answers)  # not `other`
    assert back.approved == ("digest", {"action": "accept", "content": {"approve": True}})
    assert "wanted" == back.asking


@pytest.mark.parametrize(
    "state",
    [
        None,
        "",
        "0" * 64,  # the old shape
        "tw1.",
        "tw1.e30.",  # no signature
        "tw1.é.00",  # not ASCII
        "tw1." + "A" * MAX_STATE,  # too long
        "tw1.!!!!.{mac}",  # not base64
        "tw1.bm90IGpzb24.{mac}",  # base64 of "not json"
        "tw1.WzFd.{mac}",  # base64 of "[1]": not an object
    ],
)
def test_a_malformed_state_carries_nothing(state: str | None) -> None:
    signer = _signer()
    if state is not None and "{mac}" in state:
        body = state[4:].split(".")[0]
        state = state.replace("{mac}", signer._mac(body))  # signed, and still not ours
    given = {"toolwire_input_1": {"action": "accept", "content": {}}}
    back = signer.rounds(None, Params(request_state=state, input_responses=given))
    assert (back.approved, back.asking) == (None, None)
    assert set(back.answers) == {"toolwire_input_1"}  # what this request brings, only


def test_another_calls_state_or_another_key_carries_nothing() -> None:
    rounds = Rounds({"toolwire_input_1": {"action": "accept"}})
    state = _signer("call-1").state(None, Params(), rounds)
    assert {} == _signer("call-2").rounds(None, Params(request_state=state)).answers
    other = Signer(b"x" * 32, lambda ctx, params: "call-1")
    assert {} == other.rounds(None, Params(request_state=state)).answers


def test_a_question_without_an_answer_ends_the_round_and_too_many_are_refused() -> None:
    async def main() -> tuple[Any, Any, Any]:
        rounds = Rounds({"toolwire_input_1": "first"})
        got = await rounds.ask({"method": "elicitation/create"})
        waiting = asyncio.ensure_future(rounds.ask({"method": "elicitation/create", "n": 2}))
        await asyncio.sleep(0)
        asked = rounds.needed is not None, rounds.needed
        waiting.cancel()
        many = Rounds({f"toolwire_input_{i}": i for i in range(1, MAX_QUESTIONS + 1)})
        for _ in range(MAX_QUESTIONS):
            await many.ask({})
        try:
            await many.ask({})
        except RuntimeError as exc:
            return got, asked, str(exc)
        return got, asked, None

    got, asked, refused = asyncio.run(main())
    assert "first" == got
    assert (True, ("toolwire_input_2", {"method": "elicitation/create", "n": 2})) == asked
    assert refused == f"a call may ask at most {MAX_QUESTIONS} questions"
