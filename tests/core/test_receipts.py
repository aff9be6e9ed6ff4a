"""Receipts: a verifiable record of what ran (tool, arguments, output, time), for audit (#11.32)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

import toolwire as tw

AT = datetime(2026, 11, 24, 12, 0, 0, 123456, tzinfo=UTC)
RESULT = tw.ToolResult("c1", "get_weather", '{"city": "Paris", "days": 2}', "sunny")


def test_the_digest_is_sha256_of_the_canonical_json_the_seed_crates_hash() -> None:
    receipt = RESULT.receipt(at=AT)
    assert ("get_weather", "sunny", "2026-11-24T12:00:00.123456Z") == (
        receipt.tool,
        receipt.output,
        receipt.timestamp,
    )
    body = {
        "args": {"city": "Paris", "days": 2},
        "output": "sunny",
        "timestamp": "2026-11-24T12:00:00.123456Z",
        "tool": "get_weather",
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest() == receipt.digest


def test_verify_takes_the_arguments_as_text_or_a_mapping() -> None:
    receipt = RESULT.receipt(at=AT)
    assert receipt.verify('{"days":2,"city":"Paris"}')  # spacing and key order do not matter
    assert receipt.verify({"city": "Paris", "days": 2})
    assert not receipt.verify({"city": "Paris", "days": 3})
    assert not receipt.verify("not json")


@pytest.mark.parametrize("field", ["tool", "output", "timestamp"], ids=["tool", "output", "time"])
def test_a_tampered_receipt_does_not_verify(field: str) -> None:
    receipt = RESULT.receipt(at=AT)
    data = receipt.to_dict()
    data[field] = data[field] + "x"
    assert not tw.adapters.Receipt.from_dict(data).verify(RESULT.arguments)


def test_a_receipt_round_trips_through_json_and_takes_other_time_zones() -> None:
    receipt = RESULT.receipt(at=AT.astimezone(timezone(timedelta(hours=2))))
    assert "2026-11-24T12:00:00.123456Z" == receipt.timestamp
    again = tw.adapters.Receipt.from_dict(json.loads(json.dumps(receipt.to_dict())))
    assert again == receipt
    assert again.verify(RESULT.arguments)


def test_text_that_is_not_json_is_hashed_as_text() -> None:
    odd = RESULT.replace(arguments="{broken")
    assert odd.receipt(at=AT).verify("{broken")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a receipt is an object, got list"),
        ({"tool": "t", "output": "o", "timestamp": "x"}, "receipt.digest must be a string"),
        ({"tool": 1, "output": "o", "timestamp": "x", "digest": "0" * 64}, "receipt.tool"),
        ({"tool": "t", "output": "o", "timestamp": "x", "digest": "abc"}, "64 lowercase hex"),
    ],
)
def test_a_malformed_receipt_is_refused_clearly(data: Any, message: str) -> None:
    with pytest.raises(tw.UsageError, match=message):
        tw.adapters.Receipt.from_dict(data)


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(tw.UsageError, match="timezone-aware"):
        RESULT.receipt(at=datetime(2026, 1, 1))
