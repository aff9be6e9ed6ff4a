"""Who is calling: principals in the hook context, rules by principal, a policy that
requires one, and the tamper-evident audit log (its chain and ``toolwire-policy``)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import TOOLS, make_call

import toolwire as tw
from toolwire import HookContext, Principal
from toolwire.exceptions import UsageError
from toolwire.providers.test import TestProvider
from toolwire_policy import GENESIS, AuditLog, Policy, PolicyFileError, verify_log

MakePolicy = Callable[[str], Policy]

ALICE = Principal("alice", name="Alice", groups=["ops"])
BOB = Principal("bob")
MALLORY = Principal("mallory", groups=["ops"])
RULES = """
deny = ["drop_table"]
approve = []

[[rules]]
groups = ["ops"]
allow = ["drop_table"]

[[rules]]
subjects = ["mallory"]
deny = ["read_*"]

[[rules]]
subjects = ["alice"]
approve = ["write_notes"]

[[rules]]
subjects = ["carol"]
deny = ["drop_table"]
"""


def _verdict(policy: Policy, tool: str, principal: Principal | None) -> tuple[bool, str]:
    call = make_call(TOOLS[tool], {"name": "t"} if tool == "drop_table" else _args(tool))
    out = policy.check(call, HookContext(app="t", principal=principal))
    assert not hasattr(out, "__await__")
    return out.allowed, out.reason  # type: ignore[union-attr]


def _args(tool: str) -> dict[str, Any]:
    return {"read_notes": {"path": "a"}, "write_notes": {"path": "a", "content": "x"}}.get(
        tool, {"url": "https://example.com"}
    )


# -- the principal ---------------------------------------------------------------------------


def test_a_principal_is_checked() -> None:
    assert {"ops"} == set(ALICE.groups)
    assert {
        "subject": "alice",
        "name": "Alice",
        "groups": ["ops"],
        "client": "",
        "method": "app",
    } == ALICE.to_dict()
    for bad in (
        lambda: Principal(""),
        lambda: Principal(7),  # type: ignore[arg-type]
        lambda: Principal("x", groups="ops"),  # one string is not a list of groups
        lambda: Principal("x", groups=[""]),
        lambda: Principal("x\x00y"),
        lambda: Principal("x" * 600),
        lambda: HookContext(principal="alice"),  # type: ignore[arg-type]
    ):
        with pytest.raises(UsageError):
            bad()


def test_the_agent_puts_its_principal_in_every_rounds_context() -> None:
    seen: list[Principal | None] = []
    hooks = tw.HookSet()
    hooks.on(None, lambda call, ctx: seen.append(ctx.principal))
    tools = tw.Toolset("t", [TOOLS["read_notes"]])
    provider = TestProvider(
        script=[
            {"tool_calls": [{"name": "read_notes", "arguments": {"path": "a"}}]},
            {"text": "ok"},
        ]
    )
    agent = tw.Agent(provider, tools, hooks=[hooks], principal=ALICE, plugins=False)
    agent.run(tw.Session(), "read")
    assert [ALICE] == seen
    with pytest.raises(UsageError, match="different principals"):
        tw.Agent(provider, tools, principal=ALICE, context=HookContext(principal=BOB))


# -- rules by principal ------------------------------------------------------------------------


def test_the_most_specific_rule_wins(make_policy: MakePolicy) -> None:
    policy = make_policy(RULES)
    # The top level denies drop_table; the ops group's rule allows it to ops.
    assert (True, "") == _verdict(policy, "drop_table", ALICE)
    assert _verdict(policy, "drop_table", BOB) == (
        False,
        "tool `drop_table` is denied by the organisation policy",
    )
    assert not _verdict(policy, "drop_table", None)[0]
    # A subject's rule beats a group's: carol is in ops, and her own rule denies it.
    carol = Principal("carol", groups=["ops"])
    assert _verdict(policy, "drop_table", carol) == (
        False,
        "tool `drop_table` is denied to `carol` by the organisation policy",
    )
    # mallory may drop tables (ops) but not read notes (her own rule).
    assert _verdict(policy, "drop_table", MALLORY)[0]
    assert not _verdict(policy, "read_notes", MALLORY)[0]
    assert policy.is_visible(TOOLS["read_notes"], BOB)
    assert not policy.is_visible(TOOLS["read_notes"], MALLORY)
    # alice's own rule asks approval for write_notes; bob has none.
    allowed, reason = _verdict(policy, "write_notes", ALICE)
    assert not allowed
    assert "requires approval for `write_notes` when called for `alice`" in reason
    assert _verdict(policy, "write_notes", BOB)[0]


def test_explain_names_the_rule(make_policy: MakePolicy) -> None:
    policy = make_policy(RULES)
    found = policy.explain(TOOLS["drop_table"], ALICE)
    assert ("allow", "rules[0] (group)") == (found["decision"], found["rule"])
    found = policy.explain(TOOLS["drop_table"], Principal("carol", groups=["ops"]))
    assert ("deny", "rules[3] (subject)") == (found["decision"], found["rule"])
    assert ("deny", "top level") == (
        policy.explain(TOOLS["drop_table"], BOB)["decision"],
        policy.explain(TOOLS["drop_table"], BOB)["rule"],
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rules]]\nallow = ["x"]\n', "needs subjects or groups"),
        ('[[rules]]\nsubjects = ["a"]\n', "needs allow, deny or approve"),
        ('[[rules]]\nsubjects = ["a"]\nallow = ["x"]\nextra = 1\n', "extra"),
        ('principal_methods = "app"\n', "principal_methods"),
    ],
)
def test_a_malformed_rule_is_refused_by_name(
    make_policy: MakePolicy, text: str, message: str
) -> None:
    with pytest.raises(PolicyFileError, match=message):
        make_policy(text)


def test_a_policy_can_require_a_principal(make_policy: MakePolicy) -> None:
    policy = make_policy("require_principal = true\n")
    assert _verdict(policy, "read_notes", None) == (
        False,
        "the organisation policy requires calls to be made for a principal",
    )
    assert not policy.is_visible(TOOLS["read_notes"], None)
    assert _verdict(policy, "read_notes", BOB)[0]


def test_a_policy_can_refuse_principals_asserted_on_the_command_line(
    make_policy: MakePolicy,
) -> None:
    policy = make_policy('principal_methods = ["app", "token"]\n')
    asserted = Principal("alice", method="cli")
    allowed, reason = _verdict(policy, "read_notes", asserted)
    assert not allowed
    assert "does not accept principals established by `cli`" in reason
    assert _verdict(policy, "read_notes", ALICE)[0]


# -- the audit log's chain ----------------------------------------------------------------------


def _audited(make_policy: MakePolicy, tmp_path: Path, n: int = 4) -> Path:
    policy = make_policy('[audit]\npath = "audit.jsonl"\n')
    for i, who in enumerate([ALICE, BOB, None, ALICE][:n]):
        call = make_call(TOOLS["read_notes"], {"path": f"n{i}"}, f"c{i}")
        policy.decide(call, HookContext(app="t", principal=who))
    return tmp_path / "audit.jsonl"


def test_every_record_carries_its_principal_and_is_chained(
    make_policy: MakePolicy, tmp_path: Path
) -> None:
    log = _audited(make_policy, tmp_path)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [1, 2, 3, 4] == [r["seq"] for r in records]
    assert GENESIS == records[0]["prev"]
    assert ["alice", "bob", None, "alice"] == [
        (r["principal"] or {}).get("subject") for r in records
    ]
    report = verify_log(log)
    assert (True, 4) == (report.ok, report.records)


def test_a_log_edited_in_the_middle_fails_at_that_record(
    make_policy: MakePolicy, tmp_path: Path
) -> None:
    log = _audited(make_policy, tmp_path)
    lines = log.read_text().splitlines()
    lines[1] = lines[1].replace('"decision":"allow"', '"decision":"reject"')
    log.write_text("\n".join(lines) + "\n")
    report = verify_log(log)
    assert (False, 3) == (report.ok, report.line)
    assert "does not follow the record before it" in str(report.problem)


@pytest.mark.parametrize(
    ("cut", "line", "says"),
    [(0, 1, "the log starts at record 2: records 1 to 1 are missing"), (2, 3, "expected 3")],
)
def test_a_removed_record_is_found(
    make_policy: MakePolicy, tmp_path: Path, cut: int, line: int, says: str
) -> None:
    log = _audited(make_policy, tmp_path)
    lines = log.read_text().splitlines()
    del lines[cut]
    log.write_text("\n".join(lines) + "\n")
    report = verify_log(log)
    assert (False, line) == (report.ok, report.line)
    assert says in str(report.problem)


def test_two_writers_keep_one_chain(tmp_path: Path) -> None:
    # Two AuditLog objects on one file stand for two gateway processes: each appends
    # under the file's lock and chains to what the other wrote.
    path = tmp_path / "shared.jsonl"
    logs = [AuditLog(path), AuditLog(path)]

    def write(log: AuditLog, who: str) -> None:
        for i in range(50):
            log.write({"event": "decision", "who": who, "i": i})

    threads = [threading.Thread(target=write, args=(log, f"w{n}")) for n, log in enumerate(logs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = verify_log(path)
    assert (True, 100) == (report.ok, report.records)


def test_a_rotated_or_deleted_log_is_opened_anew(tmp_path: Path) -> None:
    # The file stays open between records: a rotation (the file moved away, a new one
    # made by logrotate's create) or a deletion must still send the next record to the
    # path, each file a chain of its own, as when the file was opened per record.
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"event": "decision", "n": 1})
    log.write({"event": "decision", "n": 2})
    path.rename(tmp_path / "audit.jsonl.1")
    log.write({"event": "decision", "n": 3})
    path.rename(tmp_path / "audit.jsonl.2")
    path.write_text("")  # `create`: an empty file in its place
    log.write({"event": "decision", "n": 4})
    log.write({"event": "decision", "n": 5})
    path.unlink()
    log.write({"event": "decision", "n": 6})
    seen = {
        name: [
            (r["seq"], r["n"]) for r in map(json.loads, (tmp_path / name).read_text().splitlines())
        ]
        for name in ("audit.jsonl.1", "audit.jsonl.2", "audit.jsonl")
    }
    assert {
        "audit.jsonl.1": [(1, 1), (2, 2)],
        "audit.jsonl.2": [(1, 3)],
        "audit.jsonl": [(1, 6)],
    } == seen
    for name in seen:
        assert verify_log(tmp_path / name).ok, name
    log.close()


def test_a_log_replaced_by_another_writer_is_chained_to_what_it_holds(tmp_path: Path) -> None:
    # Another process replaced the file with one of its own records (same size, other
    # inode): this log must read that file's end, not trust what it wrote before.
    path = tmp_path / "audit.jsonl"
    mine, theirs = AuditLog(path), AuditLog(tmp_path / "other.jsonl")
    mine.write({"event": "decision", "who": "me"})
    theirs.write({"event": "decision", "who": "they"})
    theirs.write({"event": "decision", "who": "they"})
    os.replace(tmp_path / "other.jsonl", path)
    mine.write({"event": "decision", "who": "me"})
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(1, "they"), (2, "they"), (3, "me")] == [(r["seq"], r["who"]) for r in records]
    assert verify_log(path).ok


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_writer_opens_its_own_file(tmp_path: Path) -> None:
    # A lock taken through a descriptor inherited over fork is the parent's lock too:
    # the child must open the log itself, or two processes interleave one chain.
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"event": "decision", "who": "parent"})
    held = log._file
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            log.write({"event": "decision", "who": "child"})
            code = 0 if log._file is not held else 2
        finally:
            os.write(w, bytes([code]))
            os._exit(0)
    os.close(w)
    code = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert b"\x00" == code
    log.write({"event": "decision", "who": "parent"})
    assert log._file is held  # the parent keeps its own
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [1, 2, 3] == [r["seq"] for r in records]
    assert verify_log(path).ok
    log.close()


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="RLIMIT_FSIZE: POSIX")
def test_a_failed_write_leaves_no_half_record(tmp_path: Path) -> None:
    # Unbuffered, one write per record: a write the file refuses is an error, and the
    # next record is chained to what the file holds, not to the one that failed.
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"event": "decision", "n": 1})
    log.write({"event": "decision", "big": "x" * 1000})
    size = path.stat().st_size
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 200, hard))
    try:
        with pytest.raises(OSError):
            log.write({"event": "decision", "big": "y" * 1000})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    log.write({"event": "decision", "n": 4})
    log.write({"event": "decision", "n": 5})
    lines = path.read_text().splitlines()
    assert 5 == len(lines)  # the cut record's line is ended: the next ones are whole
    assert lines[2].startswith('{"seq":3')
    assert "y" * 10 in lines[2]
    with pytest.raises(ValueError):
        json.loads(lines[2])
    after = [json.loads(line) for line in lines[3:]]
    assert [4, 5] == [r["n"] for r in after]
    assert after[1]["seq"] == after[0]["seq"] + 1
    report = verify_log(path)
    assert (False, 3) == (report.ok, report.line)  # the cut record is where the break shows
    assert "accept it (--accept-break 3)" in str(report.problem)
    # #47.3: the break is what it is (a record cut short, a chain started from it): once
    # the operator accepts it, each segment is verified and the log passes.
    accepted = verify_log(path, accept_breaks=[3])
    assert (True, 4, [3], 2) == (
        accepted.ok,
        accepted.records,
        accepted.breaks,
        accepted.segments,
    )
    # Tampering after an accepted break is still tampering.
    lines[3] = lines[3].replace('"n":4', '"n":9')
    path.write_text("\n".join(lines) + "\n")
    tampered = verify_log(path, accept_breaks=[3])
    assert (False, 5) == (tampered.ok, tampered.line)
    assert "does not follow the record before it" in str(tampered.problem)
    log.close()


def test_a_line_no_chain_starts_from_is_tampering_not_a_break(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for n in range(3):
        log.write({"event": "decision", "n": n})
    lines = path.read_text().splitlines()
    lines.insert(1, "garbage someone added")
    path.write_text("\n".join(lines) + "\n")
    report = verify_log(path, accept_breaks=[2])
    assert (False, 2, "line 2 is not a JSON record") == (report.ok, report.line, report.problem)
    log.close()


def test_a_chain_rewritten_from_an_edited_record_fails_against_a_kept_head(
    tmp_path: Path,
) -> None:
    # #40.10: rewriting every record from an edited one onwards keeps the chain whole; the
    # head digest kept elsewhere is what catches it.
    import hashlib

    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for n in range(3):
        log.write({"event": "decision", "decision": "reject", "n": n})
    kept = verify_log(path).head
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[1]["decision"] = "allow"
    prev = records[0]["prev"]
    out = []
    for record in records:  # the forger recomputes every link
        record["prev"] = prev
        line = json.dumps(record, separators=(",", ":"))
        out.append(line)
        prev = "sha256:" + hashlib.sha256(line.encode()).hexdigest()
    path.write_text("\n".join(out) + "\n")
    assert verify_log(path).ok  # what the file alone cannot show
    report = verify_log(path, heads=[kept])
    assert (False, True) == (report.ok, "rewritten from an earlier record" in str(report.problem))
    later = AuditLog(tmp_path / "later.jsonl")
    later.write({"event": "decision"})
    head = verify_log(tmp_path / "later.jsonl").head
    later.write({"event": "decision"})
    assert verify_log(tmp_path / "later.jsonl", heads=[head]).ok  # an old head is still a record
    log.close()
    later.close()


def test_a_log_begun_before_the_chain_is_continued(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text('{"event":"decision","tool":"x"}\n')
    AuditLog(path).write({"event": "decision"})
    last = json.loads(path.read_text().splitlines()[-1])
    assert 1 == last["seq"]
    assert last["prev"] != GENESIS  # bound to the old record
    report = verify_log(path)
    assert (False, 1) == (report.ok, report.line)  # the old line is not chained: said so


# -- the toolwire-policy command ---------------------------------------------------------------


def _cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolwire_policy", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_audit_verify_and_show(make_policy: MakePolicy, tmp_path: Path) -> None:
    log = _audited(make_policy, tmp_path)
    done = _cli("audit", "verify", str(log))
    assert 0 == done.returncode, done.stderr
    assert "4 records, the chain is whole; head sha256:" in done.stdout
    shown = _cli("audit", "show", str(log), "--as", "alice", "--since", "1h", "--json")
    assert [1, 4] == [json.loads(line)["seq"] for line in shown.stdout.splitlines()]
    assert "" == _cli("audit", "show", str(log), "--as", "nobody").stdout
    lines = log.read_text().splitlines()
    lines[2] = lines[2].replace("n2", "n9")
    log.write_text("\n".join(lines) + "\n")
    broken = _cli("audit", "verify", str(log))
    assert 1 == broken.returncode
    assert "BROKEN at line 4" in broken.stderr
    bad = _cli("audit", "show", str(log), "--since", "soon")
    assert (2, True) == (bad.returncode, "--since takes a duration" in bad.stderr)
    missing = _cli("audit", "verify", str(tmp_path / "nope.jsonl"))
    assert (2, True) == (missing.returncode, "no such audit log" in missing.stderr)


def test_audit_verify_accepts_a_break_and_checks_a_kept_head(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"event": "decision", "n": 1})
    head = verify_log(path).head
    with path.open("ab") as f:
        f.write(b'{"seq":2,"prev":"sha256:')  # a record the disk cut short
    log.close()
    AuditLog(path).write({"event": "decision", "n": 3})
    broken = _cli("audit", "verify", str(path))
    assert (1, True) == (broken.returncode, "--accept-break 2" in broken.stderr)
    done = _cli("audit", "verify", str(path), "--accept-break", "2", "--head", head)
    assert 0 == done.returncode, done.stderr
    assert "2 records in 2 chains, each whole; records cut short at line(s) 2, accepted" in (
        done.stdout
    )
    gone = _cli("audit", "verify", str(path), "--accept-break", "2", "--head", "sha256:" + "1" * 64)
    assert (1, True) == (gone.returncode, "not a record of this log" in gone.stderr)


APP = """
import toolwire as tw


def write_file(path: str, content: str) -> str:
    '''Write a file.'''
    __import__("pathlib").Path(path).write_text(content)
    return "written"


tools = tw.Toolset("app", [tw.tool_fn(write_file, effect="mutating")])
"""


def test_explain_from_the_command_line(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    path = policy_file(
        'deny = ["write_file"]\n\n[[rules]]\ngroups = ["ops"]\nallow = ["write_file"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    (tmp_path / "app.py").write_text(APP)
    given = ("--policy", str(path), "--app", "app:tools")

    def explain(*args: str) -> subprocess.CompletedProcess[str]:
        return _cli("explain", *args, *given, env=env, cwd=tmp_path)

    ops = explain("write_file", "--as", "alice", "--group", "ops")
    assert 0 == ops.returncode, ops.stderr
    assert "write_file for `alice`: allow" in ops.stdout
    assert "decided by: rules[0] (group)" in ops.stdout
    other = explain("write_file", "--as", "bob")
    assert 1 == other.returncode
    assert "denied by the organisation policy" in other.stdout
    unknown = explain("nope")
    assert (2, True) == (unknown.returncode, "no tool `nope`" in unknown.stderr)
    typo = explain("write_fil")
    assert "did you mean `write_file`?" in typo.stderr
    # Without --app an application's tool is unknown: the error says how to name it.
    alone = _cli("explain", "deploy_app", "--policy", str(path), env=env, cwd=tmp_path)
    assert "needs --app MODULE:ATTR" in alone.stderr


# -- two principals through the real command line -------------------------------------------


def test_two_principals_through_toolwire_call(tmp_path: Path) -> None:
    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    (config / "policy.toml").write_text(
        'deny = ["write_file"]\nprincipal_methods = ["cli"]\n\n'
        '[[rules]]\nsubjects = ["alice"]\nallow = ["write_file"]\n\n'
        '[audit]\npath = "audit.jsonl"\n'
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")

    def call(*who: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolwire", "call", "write_file",
             '{"path": "n.txt", "content": "hi"}', "--approve", "--app", "app:tools", *who],
            cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    alice = call("--as", "alice")
    assert 0 == alice.returncode, alice.stdout + alice.stderr
    assert "hi" == (work / "n.txt").read_text()
    bob = call("--as", "bob")
    assert 1 == bob.returncode
    assert "hidden by `plugin:policy`" in bob.stdout
    anonymous = call()
    assert 1 == anonymous.returncode
    records = [json.loads(line) for line in (config / "audit.jsonl").read_text().splitlines()]
    subjects = [(r.get("principal") or {}).get("subject") for r in records]
    assert {"alice", "bob", None} == set(subjects)
    assert verify_log(config / "audit.jsonl").ok
    # The refusal of a tool the policy hid says the policy's reason, to the model and in
    # the audit record (#45: it said only who hid it).
    (bobs,) = [r for r in records if (r.get("principal") or {}).get("subject") == "bob"]
    assert "not available" in bobs["reason"]
    assert "hidden by `plugin:policy`: " in bobs["reason"]
    assert bobs["reason"].split("`plugin:policy`: ", 1)[1].rstrip(")") in bob.stdout


# -- quotas ------------------------------------------------------------------------------------

QUOTAS = """
[quota_store]
url = "memory://"   # the clock below is this process's: counted in its memory

[[quotas]]
tools = ["read_*"]
calls = 2
seconds = 60

[[quotas]]
tools = ["write_notes"]
groups = ["ops"]
calls = 1
seconds = 10
shared = true
"""


def test_a_quota_per_principal_refuses_saying_when_to_try_again(make_policy: MakePolicy) -> None:
    policy = make_policy(QUOTAS)
    now = [1000.0]
    policy.clock = lambda: now[0]
    assert _verdict(policy, "read_notes", ALICE)[0]
    assert _verdict(policy, "read_notes", ALICE)[0]
    allowed, reason = _verdict(policy, "read_notes", ALICE)
    assert not allowed
    assert reason == (
        "over the organisation policy's quota for `read_notes`: at most 2 call(s) in 60 s "
        "for `alice`; try again in 60 s"
    )
    # Another principal has a count of their own; a refused call was not counted.
    assert _verdict(policy, "read_notes", BOB)[0]
    now[0] += 30
    assert "try again in 30 s" in _verdict(policy, "read_notes", ALICE)[1]
    now[0] += 31  # the window has moved past alice's two calls
    assert _verdict(policy, "read_notes", ALICE)[0]


def test_a_shared_quota_for_a_group(make_policy: MakePolicy) -> None:
    policy = make_policy(QUOTAS)
    now = [5.0]
    policy.clock = lambda: now[0]
    assert _verdict(policy, "write_notes", ALICE)[0]
    # mallory is in ops too: the shared count is spent for the whole group.
    allowed, reason = _verdict(policy, "write_notes", MALLORY)
    assert not allowed
    assert "for all callers; try again in 10 s" in reason
    assert _verdict(policy, "write_notes", BOB)[0]  # not in ops: no quota applies
    now[0] += 10
    assert _verdict(policy, "write_notes", MALLORY)[0]


def test_rules_compiled_per_tool_are_kept_bounded_and_follow_each_tool(
    make_policy: MakePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolwire_policy._policy as policy_module

    monkeypatch.setattr(policy_module, "_MAX_TOOLS", 3)
    policy = make_policy('deny = ["tool_1*"]\n')
    schema = {"type": "object"}
    for i in range(40):  # tools made on the fly (a bridge's), each decided by its own name
        tool = tw.raw_tool(f"tool_{i}", "x", schema, effect="read_only")
        out = policy.check(make_call(tool, {}), HookContext())
        assert (not str(i).startswith("1")) == out.allowed, i  # type: ignore[union-attr]
    assert len(policy._by_tool) <= 3


def test_quota_memory_stays_bounded(
    make_policy: MakePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolwire_policy._quotas as quotas_module

    monkeypatch.setattr(quotas_module, "MAX_KEYS", 50)
    policy = make_policy(QUOTAS)
    now = [0.0]
    policy.clock = lambda: now[0]
    for i in range(500):  # a principal a second, each calling once
        now[0] += 1
        assert _verdict(policy, "read_notes", Principal(f"user{i}"))[0]
    assert len(policy.quota_store) <= 120  # the last minute's callers, not all 500


@pytest.mark.parametrize(
    ("text", "message"),
    [("[[quotas]]\ncalls = 0\n", "calls"), ("[[quotas]]\ncalls = 1\nseconds = 0\n", "seconds")],
)
def test_a_malformed_quota_is_refused_by_name(
    make_policy: MakePolicy, text: str, message: str
) -> None:
    with pytest.raises(PolicyFileError, match=message):
        make_policy(text)


# -- rules that name nothing (#42: the git_git_reset case) -----------------------------------

GIT_APP = """
import toolwire as tw


def git_reset(mode: str) -> str:
    '''Reset the branch.'''
    return "reset " + mode


def git_status() -> str:
    '''Show the status.'''
    return "clean"


tools = tw.Toolset("app", [tw.tool_fn(git_reset, effect="destructive"), tw.tool_fn(git_status)])
"""


def test_a_rule_that_names_a_renamed_tool_is_reported_with_the_real_name(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    # The MCP client stopped doubling a server's prefix: `git_git_reset` became `git_reset`,
    # and a deny rule naming the old name matched nothing, said nothing, and let it run.
    path = policy_file(
        'deny = ["git_git_reset", "git_status"]\napprove = ["git_*"]\n'
        'trusted_mcp_servers = ["github"]\n'
        '[effects]\n"git_git_*" = "destructive"\n'
        '[[quotas]]\ntools = ["git_stash"]\ncalls = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    (tmp_path / "app.py").write_text(GIT_APP)
    given = ("--policy", str(path), "--app", "app:tools")
    warned = _cli("check", *given, env=env, cwd=tmp_path)
    assert 0 == warned.returncode, warned.stderr
    lines = warned.stdout.splitlines()
    assert "warning: deny[0] = 'git_git_reset' matches nothing (did you mean git_reset?)" in lines
    assert any(line.startswith("warning: effects['git_git_*']") for line in lines)
    assert any(line.startswith("warning: quotas[0].tools[0] = 'git_stash'") for line in lines)
    assert any(line.startswith("warning: trusted_mcp_servers[0] = 'github'") for line in lines)
    assert not any("deny[1]" in line or "approve[0]" in line for line in lines)  # they match
    strict = _cli("check", *given, "--strict", "--json", env=env, cwd=tmp_path)
    assert 1 == strict.returncode
    found = json.loads(strict.stdout)
    assert ["git_reset"] == next(f["near"] for f in found["unmatched"] if f["rule"] == "deny[0]")
    clean = policy_file('deny = ["git_reset"]\n')
    assert (
        0
        == _cli(
            "check", "--policy", str(clean), "--app", "app:tools", "--strict", env=env, cwd=tmp_path
        ).returncode
    )


def test_a_rule_that_names_nothing_is_said_wherever_the_policy_is_in_force(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    # Not only in `check`: `toolwire plugins`, a call's start and a gateway's start say the
    # stale rule too, with the real name, through the plugin's real entry point.
    path = policy_file('deny = ["git_git_reset"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
        TOOLWIRE_POLICY=str(path),
    )
    (tmp_path / "app.py").write_text(GIT_APP)
    said = f"{path}: deny[0] = 'git_git_reset' matches nothing (did you mean git_reset?)"

    def toolwire(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolwire", *args, "--app", "app:tools"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            input="",  # a stdio gateway reads its end and stops
        )

    listed = toolwire("plugins")
    assert f"warning: {said}" in [line.strip() for line in listed.stdout.splitlines()]
    as_json = json.loads(toolwire("plugins", "--json").stdout)
    assert [said] == next(p["lint"] for p in as_json["plugins"] if p["name"] == "policy")
    call = toolwire("call", "git_status", "{}")
    assert "result: clean" in call.stdout, call.stdout + call.stderr
    assert f"toolwire: warning: policy `policy`: {said}" in call.stderr.splitlines()
    if importlib.util.find_spec("toolwire_mcp") is not None:  # the gateway, where installed
        served = toolwire("mcp", "serve", "--transport", "stdio")
        assert f"toolwire: warning: policy `policy`: {said}" in served.stderr.splitlines()
    # A policy whose rules all match says nothing of the kind.
    path.write_text('deny = ["git_reset"]\n')
    assert "matches nothing" not in toolwire("call", "git_status", "{}").stderr


def test_check_says_why_a_policy_does_not_load(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    broken = policy_file('deny = "not a list"\n')
    out = _cli("check", "--policy", str(broken), env=env, cwd=tmp_path)
    assert 1 == out.returncode
    assert "deny" in out.stderr


# -- policy tests in CI (#42) -----------------------------------------------------------------

CASES = """
[[cases]]
name = "ops may reset"
principal = "alice"
groups = ["ops"]
tool = "git_reset"
arguments = { mode = "hard" }
expect = "ask"

[[cases]]
principal = "bob"
tool = "git_reset"
arguments = { mode = "hard" }
expect = "deny"

[[cases]]
principal = "bob"
tool = "git_status"
expect = "allow"

[[cases]]
name = "a tool of its own"
principal = "bob"
tool = "send_mail"
effect = "mutating"
arguments = { to = "x" }
expect = "ask"
"""


def test_policy_cases_run_from_the_command_line(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    path = policy_file(
        'deny = ["git_reset"]\napprove_effects = ["mutating"]\n[audit]\npath = "audit.jsonl"\n'
        '[[rules]]\ngroups = ["ops"]\napprove = ["git_reset"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    (tmp_path / "app.py").write_text(GIT_APP)
    cases = tmp_path / "cases.toml"
    cases.write_text(CASES)
    given = ("--policy", str(path), "--app", "app:tools")
    ran = _cli("test", str(cases), *given, env=env, cwd=tmp_path)
    assert 0 == ran.returncode, ran.stdout + ran.stderr
    assert "4 of 4 cases as expected" in ran.stdout
    assert not (tmp_path / "audit.jsonl").exists()  # a test writes no audit record
    cases.write_text(CASES.replace('expect = "allow"', 'expect = "deny"'))
    wrong = _cli("test", str(cases), *given, "--json", env=env, cwd=tmp_path)
    assert 1 == wrong.returncode
    out = json.loads(wrong.stdout)
    assert 1 == out["failed"]
    assert [("bob -> git_status", "deny", "allow")] == [
        (r["case"], r["expect"], r["got"]) for r in out["results"] if r["expect"] != r["got"]
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[cases]]\ntool = 'x'\nexpect = 'maybe'\n", "cases.0.expect"),
        ("[[cases]]\nexpect = 'allow'\n", "cases.0.tool"),
        ("[[cases]]\ntool = 'x'\nexpect = 'allow'\nwho = 'a'\n", "cases.0.who"),
        ("not toml [", "not TOML"),
        ("[[cases]]\ntool = 'nowhere'\nexpect = 'allow'\n", "no tool `nowhere`"),
    ],
)
def test_a_malformed_cases_file_is_a_clear_usage_error(
    policy_file: Callable[[str], Path], tmp_path: Path, text: str, said: str
) -> None:
    path = policy_file('deny = ["x"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    cases = tmp_path / "cases.toml"
    cases.write_text(text)
    out = _cli("test", str(cases), "--policy", str(path), env=env, cwd=tmp_path)
    assert 2 == out.returncode
    assert said in out.stderr


def test_replay_lists_exactly_the_calls_a_candidate_would_decide_otherwise(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    # #42: a recorded log of 1,000 calls re-decided under a candidate that denies one tool.
    from toolwire_policy import Policy, PolicyPlugin

    current = policy_file('[audit]\npath = "audit.jsonl"\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(current)), "corp", kind="policy")
    exec(compile(GIT_APP, "app", "exec"), app := {})
    executor = tw.Executor(tools=app["tools"], plugins=host)
    for i in range(1000):
        who = tw.HookContext(principal=tw.Principal("alice" if i % 2 else "bob"))
        name, args = ("git_reset", '{"mode": "soft"}') if i % 10 == 0 else ("git_status", "{}")
        assert not executor.execute(tw.ToolCall(f"c{i}", name, args), context=who).is_error
    candidate = tmp_path / "candidate.toml"
    candidate.write_text('deny = ["git_reset"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), TOOLWIRE_AUTOLOAD_PLUGINS="0")
    (tmp_path / "app.py").write_text(GIT_APP)
    log = tmp_path / "audit.jsonl"
    out = _cli(
        "replay",
        str(log),
        "--candidate",
        str(candidate),
        "--app",
        "app:tools",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert 1 == out.returncode, out.stderr
    found = json.loads(out.stdout)
    assert 1000 == found["decided"]
    assert 100 == len(found["changed"])
    assert {("git_reset", "allow", "deny")} == {
        (c["tool"], c["old"], c["new"]) for c in found["changed"]
    }
    assert {"bob"} == {c["principal"] for c in found["changed"]}
    same = tmp_path / "same.toml"
    same.write_text('deny = ["git_push"]\n')
    text = _cli(
        "replay", str(log), "--candidate", str(same), "--app", "app:tools", env=env, cwd=tmp_path
    )
    assert 0 == text.returncode
    assert "0 of 1000 decisions would change" in text.stdout
