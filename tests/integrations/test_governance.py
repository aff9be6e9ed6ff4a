"""#41: one policy for every agent framework. One scenario matrix, a row per framework: a
real agent of that framework, with its own test model, governed by the framework's one
line of toolwire set-up, under one shared policy file. A new framework is one row."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _matrix import ALICE, MALLORY, POLICY, Row, Runs

import toolwire as tw

toolwire_policy = pytest.importorskip("toolwire_policy")

#: framework -> (the module that must be importable, the row's module:class)
ROWS = {
    "pydantic-ai": ("toolwire_pydantic_ai", "_row_pydantic_ai:PydanticAiRow"),
    "langchain": ("toolwire_langchain", "_row_langchain:LangChainRow"),
    "openai-agents": ("toolwire_openai_agents", "_row_openai_agents:OpenAIAgentsRow"),
    "crewai": ("toolwire_crewai", "_row_crewai:CrewAIRow"),
    "google-adk": ("toolwire_adk", "_row_adk:AdkRow"),
}

REFUSED = "rejected and did not run"


@pytest.fixture
def governed(tmp_path: Path) -> Any:
    """(make a row, the tools' runs, the audit log): a host holding only the shared policy."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    policy = toolwire_policy.Policy.from_file(path)
    host.register(toolwire_policy.PolicyPlugin(policy), "corp", kind="policy")
    runs = Runs()

    def make(framework: str) -> Row:
        needs, where = ROWS[framework]
        pytest.importorskip(needs)
        module, cls = where.split(":")
        return getattr(importlib.import_module(module), cls)(host, runs, tmp_path)  # type: ignore[no-any-return]

    return make, runs, tmp_path / "audit.jsonl"


def allowed(row: Row, runs: Runs) -> None:
    seen = row.call("search", {"query": "tides"}, ALICE)
    assert "results for tides" == seen.text
    assert [("search", {"query": "tides"})] == runs.ran


def denied(row: Row, runs: Runs) -> None:
    seen = row.call("drop_table", {"name": "users"}, ALICE)
    assert seen.text is not None
    assert REFUSED in seen.text
    assert "denied by the organisation policy" in seen.text  # the model reads the reason
    assert [] == runs.ran


def approved_once(row: Row, runs: Runs) -> None:
    seen = row.call("send_mail", {"to": "bob@example.com"}, ALICE)
    assert seen.paused is not None
    assert [] == runs.ran
    after = row.resume(seen.paused)
    assert "sent to bob@example.com" == after.text
    assert [("send_mail", {"to": "bob@example.com"})] == runs.ran  # once


def changed_after_approval(row: Row, runs: Runs) -> None:
    seen = row.call("send_mail", {"to": "bob@example.com"}, ALICE)
    after = row.resume(seen.paused, arguments={"to": "eve@example.com"})
    assert [] == runs.ran
    if after.raised is not None:  # the framework binds an approval to the call itself
        assert "different invocation" in after.raised
        return
    assert after.text is not None
    assert REFUSED in after.text
    # Approved for other arguments (a resume), or asked again and not approved (a
    # framework that asks inline, about the arguments it runs).
    assert "approved with other arguments" in after.text or "did not approve" in after.text


def over_quota(row: Row, runs: Runs) -> None:
    assert "results for a" == row.call("search", {"query": "a"}, ALICE).text
    seen = row.call("search", {"query": "b"}, ALICE)
    assert seen.text is not None
    assert REFUSED in seen.text
    assert "quota" in seen.text
    assert [("search", {"query": "a"})] == runs.ran


def redacted(row: Row, runs: Runs) -> None:
    seen = row.call("lookup", {"query": "keys"}, ALICE)
    assert "found keys; api key [REDACTED]" == seen.text


def per_principal(row: Row, runs: Runs) -> None:
    assert "found x; api key [REDACTED]" == row.call("lookup", {"query": "x"}, ALICE).text
    seen = row.call("lookup", {"query": "x"}, MALLORY)
    assert seen.text is not None
    assert REFUSED in seen.text
    assert [("lookup", {"query": "x"})] == runs.ran  # alice's call only


def pack(row: Row, runs: Runs, where: Path) -> None:
    # toolwire-fs as the framework's own tools, under the same policy: its tools keep
    # their real effects and toolwire's schemas, and each call goes through toolwire.
    from toolwire_fs import fs_toolset
    from toolwire_policy import read_records

    root = where / "files"
    root.mkdir()
    (root / "notes.txt").write_text("tide at 6")
    fs = fs_toolset(root)
    assert "tide at 6" in (row.call_pack(fs, "read_file", {"path": "notes.txt"}, ALICE).text or "")
    seen = row.call_pack(fs, "write_file", {"path": "x.txt", "content": "hi"}, ALICE)
    assert seen.paused is not None
    assert not (root / "x.txt").exists()  # asks a person first
    assert "wrote" in (row.resume(seen.paused).text or "")
    assert "hi" == (root / "x.txt").read_text()
    bad = row.call_pack(fs, "read_file", {"path": "../../etc/passwd"}, ALICE).text or ""
    assert "PathOutsideRootError" in bad  # the pack's own confinement, answered, not raised
    # Each call decided once, though the pack's tools sit under the bridge's own hook too.
    decided = [
        r["call_id"]
        for _, _, r in read_records(where / "audit.jsonl")
        if r is not None and r["event"] == "decision" and r["tool"] == "read_file"
    ]
    assert 2 == len(decided)


SCENARIOS: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (
        allowed,
        denied,
        approved_once,
        changed_after_approval,
        over_quota,
        redacted,
        per_principal,
        pack,
    )
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("framework", sorted(ROWS))
def test_one_policy_governs_every_framework(governed: Any, framework: str, scenario: str) -> None:
    make, runs, audit = governed
    row = make(framework)
    run = SCENARIOS[scenario]
    try:
        if scenario == "pack":
            pytest.importorskip("toolwire_fs")
            run(row, runs, audit.parent)
        else:
            run(row, runs)
    finally:
        if hasattr(row, "close"):
            row.close()  # a framework whose hooks are the process's
    # Every attempt is in the one audit log, named by its framework, and the chain whole.
    report = toolwire_policy.verify_log(audit)
    assert report.ok, report.problem
    records = [r for _, _, r in toolwire_policy.read_records(audit) if r is not None]
    assert records, "nothing was audited"
    assert {framework} == {r.get("framework") for r in records}
    assert all(r["principal"] is not None for r in records)
