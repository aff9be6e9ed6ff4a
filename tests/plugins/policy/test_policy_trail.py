"""#43: the policy's audit log as an audit trail the approval console reads
(``toolwire_audit_trails``): who may read it, its newest records read from the end, and
its chain verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw
from toolwire.approvals import AuditTrail, ChainCheck
from toolwire_policy import Policy, PolicyPlugin
from toolwire_policy._trail import AuditLogTrail, newest_records

FRAN = tw.Principal("fran", groups={"finance"})
EVE = tw.Principal("eve", groups={"staff"})
SEC = tw.Principal("sam", groups={"security"})


@tw.tool_fn(effect="mutating")
def pay(amount: int, to: str) -> str:
    """Pay someone."""
    return f"paid {amount} to {to}"


@tw.tool_fn
def look(q: str) -> str:
    """Look something up."""
    return q


def _host(tmp_path: Path, extra: str = "") -> tw.PluginHost:
    path = tmp_path / "policy.toml"
    path.write_text(
        'deny = ["look"]\napprove = ["pay"]\n\n[approvals]\napprovers = ["group:finance"]\n'
        f'queue = "approvals.sqlite"\n\n[audit]\npath = "audit.jsonl"\n{extra}'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(path)), "corp", kind="policy")
    return host


def _calls(host: tw.PluginHost, who: tw.Principal, n: int = 3) -> None:
    executor = tw.Executor(tools=[pay, look], plugins=host)
    for i in range(n):
        for tool, arguments in ((look, {"q": f"q{i}"}), (pay, {"amount": i, "to": "bob"})):
            text = json.dumps(arguments)
            call = tw.TypedCall(
                tw.ToolCall(f"c{i}", tool.name, text), tool, tool.validate_json(text)
            )
            executor.execute(call, context=tw.HookContext(principal=who))


def test_the_policy_offers_its_log_to_its_approvers(tmp_path: Path) -> None:
    host = _host(tmp_path)
    _calls(host, EVE)
    (trail,) = host.audit_trails()
    assert isinstance(trail, AuditTrail)
    assert str(tmp_path / "audit.jsonl") in trail.name
    # The approvers [approvals] names read it by default; nobody else.
    assert trail.readable_by(FRAN)
    assert not trail.readable_by(EVE)
    assert not trail.readable_by(SEC)
    check = trail.verify()
    assert check == ChainCheck(whole=True, records=check.records, head=check.head)
    assert check.records >= 6
    assert check.head.startswith("sha256:")
    newest = trail.records(limit=2)
    assert [r["seq"] for r in newest] == [check.records, check.records - 1]  # newest first
    refused = trail.records(decision="reject")
    assert {r["tool"] for r in refused} == {"look", "pay"}
    assert len(refused) == 6
    assert all(r["reason"] for r in refused)
    assert len(trail.records(decision="reject", tool="look")) == 3
    assert {r["tool"] for r in trail.records(tool="p*")} == {"pay"}
    assert trail.records(subject="fran") == []
    assert len(trail.records(subject="eve")) == check.records


def test_readers_are_whom_the_audit_table_names(tmp_path: Path) -> None:
    host = _host(tmp_path, 'readers = ["group:security", "user:carol"]\n')
    (trail,) = host.audit_trails()
    assert trail.readable_by(SEC)
    assert trail.readable_by(tw.Principal("carol"))
    assert not trail.readable_by(FRAN)  # readers given: the approvers are not added


def test_without_approvals_or_readers_nobody_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('deny = ["look"]\n\n[audit]\npath = "audit.jsonl"\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(path)), "corp", kind="policy")
    (trail,) = host.audit_trails()
    assert not trail.readable_by(FRAN)
    assert not trail.readable_by(EVE)


def test_a_policy_without_a_log_offers_none(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('deny = ["look"]\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(path)), "corp", kind="policy")
    assert host.audit_trails() == []


def test_an_edited_record_breaks_the_chain_the_trail_reports(tmp_path: Path) -> None:
    host = _host(tmp_path)
    _calls(host, EVE, n=2)
    (trail,) = host.audit_trails()
    assert trail.verify().whole
    log = tmp_path / "audit.jsonl"
    lines = log.read_text().splitlines()
    lines[1] = lines[1].replace('"eve"', '"fran"')
    log.write_text("\n".join(lines) + "\n")
    check = trail.verify()  # the file changed: checked again, not the cached answer
    assert not check.whole
    assert check.records == 2
    assert check.problem is not None
    assert "line 3" in check.problem


def test_only_policies_are_asked_and_a_broken_trail_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = _host(tmp_path)

    class Pack:
        @tw.hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register(AuditLogTrail(tmp_path / "fake.jsonl", ["group:staff"]))

    class Broken:
        @tw.hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            raise RuntimeError("boom")

    class Wrong:
        @tw.hookimpl
        def toolwire_audit_trails(self, register: Any) -> None:
            register("audit.jsonl")

    host.register(Pack(), "pack")  # a tool pack: never asked
    host.register(Broken(), "broken", kind="policy")
    host.register(Wrong(), "wrong", kind="policy")
    trails = host.audit_trails()
    assert [t.name for t in trails] == [f"policy: {tmp_path / 'audit.jsonl'}"]
    assert "plugin `broken` failed to offer its audit trails: RuntimeError: boom" in caplog.text
    assert "plugin `wrong` failed" in caplog.text
    assert "got str" in caplog.text


def _write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def test_newest_records_read_from_the_end_across_chunks(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    pad = "x" * 5000
    _write(log, [json.dumps({"seq": i, "pad": pad}).encode() for i in range(1, 301)])
    found = newest_records(log, limit=250)
    assert [r["seq"] for r in found] == list(range(300, 50, -1))
    assert [r["seq"] for r in newest_records(log, limit=5000)][-1] == 1  # bounded to 1000
    assert len(newest_records(log, limit=5000)) == 300
    # Bounded by bytes read back: only whole lines within the window.
    near = newest_records(log, limit=1000, max_bytes=50_000)
    assert 0 < len(near) < 12
    assert near[0]["seq"] == 300
    assert newest_records(log, limit=0) == []
    assert newest_records(tmp_path / "none.jsonl") == []


def test_newest_records_skip_what_is_not_a_record(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    huge = b'{"seq": 2, "pad": "' + b"y" * (17 * 1024 * 1024) + b'"}'
    _write(log, [b'{"seq": 1}', huge, b"not json", b"[1, 2]", b'{"seq": 3}'])
    assert [r["seq"] for r in newest_records(log)] == [3, 1]
    # A file with no newline at its end: its last line is read too.
    log.write_bytes(b'{"seq": 1}\n{"seq": 2}')
    assert [r["seq"] for r in newest_records(log)] == [2, 1]


def test_a_trail_before_its_first_record(tmp_path: Path) -> None:
    trail = AuditLogTrail(tmp_path / "later.jsonl", ["group:finance"])
    assert trail.verify().whole
    assert trail.verify().records == 0
    assert trail.records() == []
    assert not AuditLogTrail(tmp_path / "x", []).readable_by(FRAN)
