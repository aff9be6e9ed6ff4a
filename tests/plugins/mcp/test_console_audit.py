"""#43: the console's audit page shows what the policies' trails give it, and only that: a
trail that fails to say who reads it is not shown, one that fails to read says so beside
the others (the browser tests in test_console.py run the real thing)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw
from toolwire.approvals import ApprovalQueue, ChainCheck

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from toolwire_mcp.gateway._console import console_app

TOKEN = "fran-secret"
TOKENS = {"sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest(): tw.Principal("fran")}


class Trail:
    def __init__(self, name: str, *, reads: Any = True, fails: bool = False) -> None:
        self.name, self._reads, self._fails = name, reads, fails

    def readable_by(self, principal: tw.Principal) -> bool:
        if isinstance(self._reads, Exception):
            raise self._reads
        return bool(self._reads)

    def records(self, **filters: Any) -> Sequence[Mapping[str, Any]]:
        if self._fails:
            raise OSError("disk gone")
        return [
            {"seq": 1, "time": "t", "event": "decision", "tool": "pay", "decision": "allow",
             "principal": {"subject": "<b>bob</b>"}, "arguments": {"x": "<i>"}, "reason": None}
        ]  # fmt: skip

    def verify(self) -> ChainCheck:
        return ChainCheck(whole=True, records=1, head="sha256:" + "a" * 64)


def _client(tmp_path: Path, trails: list[Any]) -> TestClient:
    app = console_app(ApprovalQueue(tmp_path / "q.sqlite"), TOKENS, trails=trails)
    client = TestClient(app, base_url="http://127.0.0.1")
    nonce = client.get("/login").text.split('name="csrf" value="')[1].split('"')[0]
    signed = client.post("/login", data={"token": TOKEN, "csrf": nonce}, follow_redirects=False)
    assert 303 == signed.status_code
    return client


def test_each_trail_shown_alone_and_a_failing_one_said(tmp_path: Path) -> None:
    trails = [
        Trail("good"),
        Trail("asks-raise", reads=RuntimeError("who?")),
        Trail("not-mine", reads=False),
        Trail("fails", fails=True),
    ]
    page = _client(tmp_path, trails).get("/audit")
    assert 200 == page.status_code
    text = page.text
    assert "<h2>good</h2>" in text
    assert "<h2>fails</h2>" in text
    assert "asks-raise" not in text
    assert "not-mine" not in text
    assert "cannot read it: OSError" in text
    assert "disk gone" not in text
    assert "&lt;b&gt;bob&lt;/b&gt;" in text
    assert "<b>bob" not in text
    assert "&lt;i&gt;" in text


def test_no_trail_means_no_link_and_a_refusal(tmp_path: Path) -> None:
    client = _client(tmp_path, [])
    assert "Audit log" not in client.get("/").text
    assert 403 == client.get("/audit").status_code
    anonymous = TestClient(console_app(ApprovalQueue(tmp_path / "q.sqlite"), TOKENS))
    assert anonymous.get("/audit", follow_redirects=False).headers["location"] == "/login"
