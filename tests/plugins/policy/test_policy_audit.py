"""The JSON-lines audit log: one record per decision and per result, nothing redacted in it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolwire import HookContext, Reject, TypedCall
from toolwire_policy import GENESIS, REDACTED, Policy, canonical_json, fingerprint

MakePolicy = Callable[[str], Policy]
CallOf = Callable[..., TypedCall[Any]]

CTX = HookContext(
    app="notes", session_id="s-1", provider="test", model="offline", extra={"user": "ada"}
)
AUDIT = """
[audit]
path = "audit.jsonl"

[[redact]]
arguments = ["content"]
"""


def records(policy: Policy) -> list[dict[str, Any]]:
    assert policy.audit_log is not None
    text = policy.audit_log.path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_the_audit_path_is_relative_to_the_policy_file(
    make_policy: MakePolicy, tmp_path: Path
) -> None:
    policy = make_policy(AUDIT)
    assert policy.audit_log is not None
    assert (tmp_path / "audit.jsonl", True) == (
        policy.audit_log.path,
        policy.audit_log.path.exists(),
    )


def test_the_audit_directory_is_created(make_policy: MakePolicy, tmp_path: Path) -> None:
    make_policy("[audit]\npath = 'logs/deep/audit.jsonl'\n")
    assert (tmp_path / "logs" / "deep" / "audit.jsonl").is_file()


def test_an_allowed_call_is_audited(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy(AUDIT)
    policy.decide(call_of("write_notes", {"path": "a.txt", "content": "hunter2"}, "call_7"), CTX)
    [record] = records(policy)
    time = record.pop("time")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", time)
    redacted = {"path": "a.txt", "content": REDACTED}
    assert {
        "seq": 1,
        "prev": GENESIS,
        "event": "decision",
        "call_id": "call_7",
        "tool": "write_notes",
        "decision": "allow",
        "plugin": "policy",
        "fingerprint": fingerprint(redacted),
        "reason": None,
        "app": "notes",
        "session_id": "s-1",
        "provider": "test",
        "model": "offline",
        "principal": None,
        "approval": None,
        "effect": "mutating",
        "arguments": redacted,
    } == record


def test_an_overridden_effect_is_audited_with_the_claimed_one(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy("[effects]\n'write_*' = 'destructive'\n" + AUDIT)
    policy.decide(call_of("write_notes", {"path": "a.txt", "content": "x"}), CTX)
    [record] = records(policy)
    assert ("destructive", "mutating") == (record["effect"], record["claimed_effect"])


def test_a_rejected_call_is_audited_with_its_reason(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy("deny = ['drop_table']\n" + AUDIT)
    policy.decide(call_of("drop_table", {"name": "users"}), CTX)
    [record] = records(policy)
    assert ("reject", "tool `drop_table` is denied by the organisation policy") == (
        record["decision"],
        record["reason"],
    )


def test_an_approval_is_audited(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("approve_effects = ['mutating']\n" + AUDIT)
    ctx = HookContext(extra={"toolwire.approver": lambda call, reason: True})
    policy.decide(call_of("write_notes", {"path": "a", "content": "b"}), ctx)
    [record] = records(policy)
    assert ("allow", "approver") == (record["decision"], record["approval"])


def test_redacted_values_never_reach_the_file(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy(AUDIT)
    call = call_of("write_notes", {"path": "a.txt", "content": "hunter2"})
    policy.decide(call, CTX)
    policy.on_result(call, call.complete("ok"), CTX)
    assert policy.audit_log is not None
    assert "hunter2" not in policy.audit_log.path.read_text(encoding="utf-8")


def test_the_fingerprint_is_sha256_of_the_canonical_redacted_arguments(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    policy = make_policy(AUDIT)
    policy.decide(call_of("write_notes", {"content": "x", "path": "é"}), CTX)
    [record] = records(policy)
    canonical = '{"content":"[REDACTED]","path":"é"}'
    assert canonical == canonical_json({"path": "é", "content": REDACTED})
    assert "sha256:" + hashlib.sha256(canonical.encode()).hexdigest() == record["fingerprint"]


def test_a_result_is_audited(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy(AUDIT)
    call = call_of("read_notes", {"path": "a"}, "call_9")
    policy.on_result(call, call.error("boom"), CTX)
    [record] = records(policy)
    assert {
        "event": "result",
        "call_id": "call_9",
        "tool": "read_notes",
        "decision": "error",
        "content_length": 4,
        "redactions": 0,
        "fingerprint": fingerprint({"path": "a"}),
    } == {
        k: record[k]
        for k in (
            "event",
            "call_id",
            "tool",
            "decision",
            "content_length",
            "redactions",
            "fingerprint",
        )
    }


def test_results_are_not_audited_when_turned_off(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[audit]\npath = 'audit.jsonl'\nresults = false\n")
    call = call_of("read_notes", {"path": "a"})
    policy.on_result(call, call.complete("x"), CTX)
    assert [] == records(policy)


def test_arguments_can_be_left_out(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[audit]\npath = 'audit.jsonl'\narguments = false\n")
    policy.decide(call_of("read_notes", {"path": "a"}), CTX)
    [record] = records(policy)
    assert ("arguments" in record, record["fingerprint"]) == (False, fingerprint({"path": "a"}))


def test_context_keys_are_copied_when_plain(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy("[audit]\npath = 'audit.jsonl'\ncontext_keys = ['user', 'tenant', 'cb']\n")
    ctx = HookContext(extra={"user": "ada", "secret": "x", "cb": print})
    policy.decide(call_of("read_notes", {"path": "a"}), ctx)
    [record] = records(policy)
    assert {"user": "ada"} == record["context"]


def test_every_decision_appends_one_line(make_policy: MakePolicy, call_of: CallOf) -> None:
    policy = make_policy(AUDIT)
    for i in range(3):
        policy.decide(call_of("read_notes", {"path": str(i)}, f"c{i}"), CTX)
    assert ["c0", "c1", "c2"] == [r["call_id"] for r in records(policy)]


def test_a_decision_that_cannot_be_audited_is_rejected(
    make_policy: MakePolicy, call_of: CallOf, tmp_path: Path
) -> None:
    policy = make_policy(AUDIT)
    (tmp_path / "audit.jsonl").unlink()
    (tmp_path / "audit.jsonl").mkdir()  # appending now fails
    assert Reject(
        "the organisation policy cannot write its audit log, so no tool may run; tell the operator"
    ) == policy.decide(call_of("read_notes", {"path": "a"}), CTX)


def test_a_result_that_cannot_be_audited_is_not_returned_as_a_success(
    make_policy: MakePolicy, call_of: CallOf, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # #47.2: with the log's disk full, a call ran and returned ok while its result record
    # was torn. A result that cannot be recorded is withheld, and the caller is told the
    # tool ran.
    from toolwire_policy._policy import UNRECORDED

    policy = make_policy(AUDIT)
    (tmp_path / "audit.jsonl").unlink()
    (tmp_path / "audit.jsonl").mkdir()
    call = call_of("read_notes", {"path": "a"})
    answered = policy.on_result(call, call.complete("the secret notes"), CTX)
    assert answered is not None
    assert (True, UNRECORDED, True) == (
        answered.is_error,
        answered.content,
        answered.answers(call.call),
    )
    assert "cannot write the audit log" in caplog.text


def test_line_separators_in_model_text_do_not_split_a_record(tmp_path: Path) -> None:
    # Attack (#11.26): U+2028, U+2029 and U+0085 in model text split records for line readers.
    from toolwire_policy._audit import AuditLog

    log = AuditLog(tmp_path / "audit.jsonl")
    log.write({"arguments": "a\u2028b\u2029c\u0085d", "tool": "t"})
    text = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1
    assert json.loads(text)["arguments"] == "a\u2028b\u2029c\u0085d"


def test_a_result_record_carries_a_receipt_the_transcript_verifies(
    make_policy: MakePolicy, call_of: CallOf
) -> None:
    import toolwire as tw

    policy = make_policy(AUDIT)
    call = call_of("read_notes", {"path": "a"}, "call_9")
    result = call.complete("the notes")
    policy.on_result(call, result, CTX)
    [record] = records(policy)
    receipt = tw.adapters.Receipt("read_notes", result.content, **record["receipt"])
    assert receipt.verify(call.arguments)
    assert not receipt.verify({"path": "b"})
    assert not tw.adapters.Receipt("read_notes", "other notes", **record["receipt"]).verify(
        call.arguments
    )


def test_every_attempt_is_audited_through_the_host(make_policy: MakePolicy) -> None:
    # Attack (#25.9): with deny = ["get_weather"], the Agent rejected the call as hidden
    # before the policy's decision hook ran, and the audit log had nothing.
    from toolwire import Agent, PluginHost, Session, Toolset, tool_fn
    from toolwire.providers.test import TestProvider
    from toolwire_policy import PolicyPlugin

    @tool_fn
    def get_weather(city: str) -> str:
        """Get the weather."""
        return "sunny"

    policy = make_policy('deny = ["get_weather"]\n' + AUDIT)
    host = PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    provider = TestProvider(
        script=[
            {"tool_calls": [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]},
            {"text": "done"},
        ]
    )
    Agent(provider, Toolset("app", [get_weather]), plugins=host).run(Session(), "weather?")
    [record] = [r for r in records(policy) if r["event"] != "result"]
    assert (
        "hidden",
        "c1",
        "get_weather",
        "reject",
        "plugin:corp",
        "sha256:" + hashlib.sha256(b'{"city": "Oslo"}').hexdigest(),
    ) == (
        record["event"],
        record["call_id"],
        record["tool"],
        record["decision"],
        record["source"],
        record["fingerprint"],
    )


def test_a_policy_switched_off_writes_that_to_its_audit_log(make_policy: MakePolicy) -> None:
    from toolwire import PluginHost
    from toolwire_policy import PolicyPlugin

    policy = make_policy(AUDIT)
    host = PluginHost(autoload=False, disable_policies=["corp"], policy_required=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    [record] = records(policy)
    assert ("policies_off", "TOOLWIRE_DISABLE_POLICIES", None) == (
        record["event"],
        record["source"],
        record["call_id"],
    )


# -- no record bricks the log (#40.1) ------------------------------------------------------

BIG_AUDIT = """
[audit]
path = "audit.jsonl"
results = false

[[constraints]]
tools = ["*"]
max_length = 20000
"""


def test_a_megabyte_argument_does_not_stop_later_processes_from_auditing(
    policy_file: Callable[[str], Path], call_of: CallOf
) -> None:
    # Attack (#40.1): a call with arguments over 1 MiB (rejected by max_length) became the
    # log's last record, and every later process refused every call: "cannot write its
    # audit log ... last line is over 1,048,576 bytes". One model reply bricked the tools.
    from toolwire_policy import verify_log
    from toolwire_policy._audit import MAX_RECORD

    path = policy_file(BIG_AUDIT)
    huge = "x" * (2 * 1024 * 1024)
    first = Policy.from_file(path)
    rejected = first.decide(call_of("write_notes", {"path": "a", "content": huge}, "c1"), CTX)
    assert isinstance(rejected, Reject)
    assert "cannot write its audit log" not in rejected.reason
    later = Policy.from_file(path)  # a fresh log object: what the next process sees
    assert later.decide(call_of("read_notes", {"path": "a"}, "c2"), CTX) is None
    lines = (path.parent / "audit.jsonl").read_bytes().splitlines()
    assert [True, True] == [len(line) <= MAX_RECORD for line in lines]
    big = json.loads(lines[0])
    assert {
        "omitted": "over the audit log's record limit",
        "sha256": hashlib.sha256(huge.encode()).hexdigest(),
        "bytes": len(huge),
    } == big["arguments"]["content"]
    assert "a" == big["arguments"]["path"]
    assert verify_log(path.parent / "audit.jsonl").ok


def test_a_record_with_many_small_values_is_bounded_by_whole_fields(tmp_path: Path) -> None:
    from toolwire_policy import verify_log
    from toolwire_policy._audit import MAX_RECORD, AuditLog

    log = AuditLog(tmp_path / "audit.jsonl")
    many = [f"item {i}" for i in range(50_000)]
    log.write({"event": "decision", "tool": "t", "arguments": {"items": many}})
    [line] = (tmp_path / "audit.jsonl").read_bytes().splitlines()
    record = json.loads(line)
    assert len(line) <= MAX_RECORD
    assert ("t", fingerprint({"items": many}).removeprefix("sha256:")) == (
        record["tool"],
        record["arguments"]["sha256"],
    )
    assert verify_log(tmp_path / "audit.jsonl").ok


def test_a_log_whose_last_line_is_huge_still_takes_records(tmp_path: Path) -> None:
    # A log written before records were bounded may end with a line of any length: the
    # chain's head is found without reading it whole, and the chain goes on from it.
    from toolwire_policy import verify_log
    from toolwire_policy._audit import AuditLog

    path = tmp_path / "audit.jsonl"
    AuditLog(path).write({"event": "decision", "tool": "t"})
    first = path.read_bytes().rstrip(b"\n")
    prev = "sha256:" + hashlib.sha256(first).hexdigest()
    record = {"seq": 2, "prev": prev, "event": "decision", "arguments": "y" * 3_000_000}
    old = json.dumps(record, separators=(",", ":"))  # as the writer wrote it
    with path.open("ab") as f:
        f.write(old.encode() + b"\n")
    AuditLog(path).write({"event": "decision", "tool": "after"})
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [1, 2, 3] == [r["seq"] for r in records]
    report = verify_log(path)
    assert (True, 3) == (report.ok, report.records)


def test_a_huge_last_line_that_is_no_record_starts_the_chain_after_it(tmp_path: Path) -> None:
    from toolwire_policy._audit import AuditLog

    path = tmp_path / "audit.jsonl"
    junk = b"z" * 2_000_000
    path.write_bytes(junk)  # no newline: a torn write
    AuditLog(path).write({"event": "decision"})
    lines = path.read_bytes().split(b"\n")
    record = json.loads(lines[1])
    assert (0 + 1, "sha256:" + hashlib.sha256(junk).hexdigest()) == (record["seq"], record["prev"])


# -- an audit path is a new file or an audit log (#40.2) -----------------------------------


@pytest.mark.parametrize("content", ["export PATH=/evil:$PATH\n", "[1, 2]\n", '{"a": 1}\n'])
def test_an_audit_path_naming_another_file_is_refused_and_left_alone(
    policy_file: Callable[[str], Path], tmp_path: Path, content: str
) -> None:
    from toolwire_policy import PolicyFileError

    victim = tmp_path / "profile"
    victim.write_text(content)
    with pytest.raises(PolicyFileError, match="is not an audit log"):
        Policy.from_file(policy_file(f"[audit]\npath = '{victim}'\n"))
    assert content == victim.read_text()


def test_an_audit_path_naming_a_device_is_refused(policy_file: Callable[[str], Path]) -> None:
    from toolwire_policy import PolicyFileError

    with pytest.raises(PolicyFileError, match="not a regular file"):
        Policy.from_file(policy_file("[audit]\npath = '/dev/null'\n"))


def test_an_existing_audit_log_and_an_empty_file_are_taken(
    make_policy: MakePolicy, call_of: CallOf, tmp_path: Path
) -> None:
    (tmp_path / "audit.jsonl").write_text("")
    make_policy(AUDIT).decide(call_of("read_notes", {"path": "a"}, "c1"), CTX)
    make_policy(AUDIT).decide(call_of("read_notes", {"path": "b"}, "c2"), CTX)
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert [1, 2] == [json.loads(line)["seq"] for line in lines]


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGXFSZ"), reason="RLIMIT_FSIZE: POSIX")
def test_a_disk_that_fills_while_a_call_runs_withholds_its_result(
    make_policy: MakePolicy, tmp_path: Path
) -> None:
    # #47.2, as it happened: the decision record is written, the disk fills while the
    # tool runs, and the result record cannot be: the caller must not get a success.
    import resource
    import signal

    import toolwire as tw
    from toolwire_policy import PolicyPlugin, verify_log
    from toolwire_policy._policy import UNRECORDED

    policy = make_policy(AUDIT)
    log = tmp_path / "audit.jsonl"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

    @tw.tool_fn
    def transfer(amount: int) -> str:
        """Move money."""
        resource.setrlimit(resource.RLIMIT_FSIZE, (log.stat().st_size + 100, hard))
        return f"moved {amount}"

    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    executor = tw.Executor(tools=[transfer], plugins=host)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        result = executor.execute(tw.ToolCall("c1", "transfer", '{"amount": 100}'))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
        executor.close()
    assert (True, UNRECORDED) == (result.is_error, result.content)
    report = verify_log(log)  # the decision, then the torn result record: a break
    assert ([2], 1) == (report.breaks, report.records)


def test_a_log_whose_first_record_was_cut_short_is_still_taken(
    make_policy: MakePolicy, call_of: CallOf, tmp_path: Path
) -> None:
    # A crash (a full disk) during the very first write must not make the log "not an
    # audit log" and block every tool: the next record ends the cut line and goes on.
    from toolwire_policy import verify_log

    (tmp_path / "audit.jsonl").write_bytes(b'{"seq":1,"pr')
    make_policy(AUDIT).decide(call_of("read_notes", {"path": "a"}, "c1"), CTX)
    report = verify_log(tmp_path / "audit.jsonl", accept_breaks=[1])
    assert (True, 1, [1]) == (report.ok, report.records, report.breaks)
