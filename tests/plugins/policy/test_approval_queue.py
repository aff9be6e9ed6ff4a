"""#43: the approval queue. A call the policy sends for approval, with ``[approvals]``,
is filed as a durable request bound to its fingerprint and principal, answered once by a
person the policy names (never the caller's own approver, never the asker), expiring to a
refusal; the same call made again after the approval runs once."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

import toolwire as tw
from toolwire.approvals import ApprovalError, ApprovalQueue, may_answer, request_ids_in
from toolwire_policy import Policy, PolicyFileError, PolicyPlugin, read_records

POLICY = """
approve = ["pay"]

[approvals]
approvers = {approvers}
expires = {expires}
queue = "approvals.sqlite"

[audit]
path = "audit.jsonl"
"""


def _policy(tmp_path: Path, approvers: list[str], expires: float = 3600) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.format(approvers=json.dumps(approvers), expires=expires))
    return path


def _executor(path: Path, paid: list[str], own: Any = None) -> Payer:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(path)), "corp", kind="policy")

    @tw.tool_fn(effect="mutating")
    def pay(amount: int, to: str) -> str:
        """Pay someone."""
        paid.append(f"{amount} to {to}")
        return f"paid {amount} to {to}"

    # The caller's own approver says yes to everything: with a queue it counts for nothing.
    executor = tw.Executor(tools=[pay], plugins=host, approval=own or (lambda request: tw.Allow()))
    return Payer(executor, pay)


class Payer:
    def __init__(self, executor: tw.Executor, tool: tw.Tool[Any, Any]) -> None:
        self.executor, self.tool = executor, tool

    def pay(self, who: str, amount: int = 5, to: str = "bob") -> str:
        text = json.dumps({"amount": amount, "to": to})
        call = tw.TypedCall(
            tw.ToolCall("c1", "pay", text), self.tool, self.tool.validate_json(text)
        )
        context = tw.HookContext(principal=tw.Principal(who))
        return self.executor.execute(call, context=context).content


def _pay(payer: Payer, who: str, amount: int = 5, to: str = "bob") -> str:
    return payer.pay(who, amount, to)


FINANCE = tw.Principal("fran", groups={"finance"})


def test_a_call_waits_until_an_approver_answers_and_then_runs_once(tmp_path: Path) -> None:
    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance"]), paid)
    refused = _pay(executor, "alice")
    assert "waits for group:finance as approval request apr_" in refused
    [rid] = request_ids_in(refused)
    assert rid in _pay(executor, "alice")  # asked again: the same request, not a second
    assert [] == paid

    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    [waiting] = queue.pending()
    assert (waiting.id, waiting.tool, waiting.subject) == (rid, "pay", "alice")
    assert json.loads(waiting.arguments) == {"amount": 5, "to": "bob"}  # shown in full
    assert queue.answer(rid, approve=True, by=FINANCE, reason="budgeted").status == "approved"

    assert "apr_" in _pay(executor, "alice", amount=500)  # other arguments: not approved
    assert "apr_" in _pay(executor, "mallory")  # another principal: not approved
    assert "paid 5 to bob" == _pay(executor, "alice")
    assert ["5 to bob"] == paid
    again = _pay(executor, "alice")  # spent: a new request
    assert "apr_" in again
    assert rid not in again
    assert ["5 to bob"] == paid
    assert "spent" == queue.get(rid).state()  # type: ignore[union-attr]

    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    allowed = [r for r in records if r["event"] == "decision" and r["decision"] == "allow"]
    assert [f"queue:{rid} by fran"] == [r["approval"] for r in allowed]


def test_gateways_on_several_machines_share_a_postgres_queue(
    tmp_path: Path, fresh_database: str
) -> None:
    """`[approvals] queue = "postgresql://..."`: two gateways (two policies, two hosts, one
    database) see one request; answered once, the call runs once, wherever it is made."""
    path = tmp_path / "policy.toml"
    path.write_text(
        POLICY.format(approvers='["group:finance"]', expires=3600).replace(
            'queue = "approvals.sqlite"', f'queue = "{fresh_database}"'
        )
    )
    paid: list[str] = []
    here, there = _executor(path, paid), _executor(path, paid)
    [rid] = request_ids_in(_pay(here, "alice"))
    assert [rid] == request_ids_in(_pay(there, "alice"))  # the same request, not a second
    queue = ApprovalQueue(fresh_database)
    assert [rid] == [r.id for r in queue.pending()]
    queue.answer(rid, approve=True, by=FINANCE)
    assert "paid 5 to bob" == _pay(there, "alice")
    assert "apr_" in _pay(here, "alice")  # spent there: not again here
    assert ["5 to bob"] == paid
    assert not (tmp_path / "approvals.sqlite").exists()
    # The policy file holds no password: one in the address is refused as the file loads.
    path.write_text(
        POLICY.format(approvers='["group:finance"]', expires=3600).replace(
            'queue = "approvals.sqlite"',
            f'queue = "{fresh_database.replace("toolwire@", "toolwire:pw@")}"',
        )
    )
    with pytest.raises(PolicyFileError, match="PGPASSWORD"):
        Policy.from_file(path)


def test_who_may_answer(tmp_path: Path) -> None:
    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance", "user:carol"]), paid)
    [rid] = request_ids_in(_pay(executor, "fran"))
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    with pytest.raises(ApprovalError, match="may not answer"):
        queue.answer(rid, approve=True, by=tw.Principal("eve", groups={"staff"}))
    with pytest.raises(ApprovalError, match="nobody answers their own request"):
        queue.answer(rid, approve=True, by=FINANCE)  # fran asked
    assert "approved" == queue.answer(rid, approve=True, by=tw.Principal("carol")).status
    with pytest.raises(ApprovalError, match="is approved, not pending"):  # answered once
        queue.answer(rid, approve=False, by=tw.Principal("carol"))
    with pytest.raises(ApprovalError, match="no approval request"):
        queue.answer("apr_" + "x" * 22, approve=True, by=tw.Principal("carol"))
    with pytest.raises(ApprovalError, match="2,000 characters"):
        queue.answer(rid, approve=True, by=tw.Principal("carol"), reason="x" * 2001)
    assert may_answer(["carol"], tw.Principal("carol"))
    assert not may_answer(["group:carol"], tw.Principal("carol"))


def test_a_denial_reaches_the_model_and_is_not_asked_again(tmp_path: Path) -> None:
    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance"]), paid)
    [rid] = request_ids_in(_pay(executor, "alice"))
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    queue.answer(rid, approve=False, by=FINANCE, reason="not this month")
    refused = _pay(executor, "alice")
    assert "fran denied it: not this month" in refused
    assert [] == paid
    assert [] == queue.pending()


def test_an_unanswered_request_expires_to_a_refusal(tmp_path: Path) -> None:
    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance"], expires=0.3), paid)
    [rid] = request_ids_in(_pay(executor, "alice"))
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    assert "expired" == queue.wait(rid, timeout=30, every=0.05).state()
    with pytest.raises(ApprovalError, match="is expired, not pending"):
        queue.answer(rid, approve=True, by=FINANCE)
    assert rid not in _pay(executor, "alice")  # a new request; the old one stays expired
    assert [] == paid


def test_an_approval_not_used_in_time_expires(tmp_path: Path) -> None:
    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance"]), paid)
    [rid] = request_ids_in(_pay(executor, "alice"))
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    queue.answer(rid, approve=True, by=FINANCE, use_within=0.01)
    time.sleep(0.05)
    assert "expired" == queue.get(rid).state()  # type: ignore[union-attr]
    assert "apr_" in _pay(executor, "alice")
    assert [] == paid


def test_one_principal_cannot_flood_the_queue(tmp_path: Path) -> None:
    from toolwire._approvals import MAX_PENDING_PER_PRINCIPAL

    paid: list[str] = []
    executor = _executor(_policy(tmp_path, ["group:finance"]), paid)
    for amount in range(MAX_PENDING_PER_PRINCIPAL):
        assert "apr_" in _pay(executor, "alice", amount=amount)
    over = _pay(executor, "alice", amount=-1)
    assert "the approval queue cannot take it now" in over
    assert f"alice has {MAX_PENDING_PER_PRINCIPAL} requests waiting" in over
    assert "apr_" in _pay(executor, "bob")  # others still can


def test_a_queue_file_others_may_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvals.sqlite"
    ApprovalQueue(path).close()
    path.chmod(0o666)
    with pytest.raises(ApprovalError, match=r"open to others .*chmod 600"):
        ApprovalQueue(path)
    from toolwire_policy import PolicyFileError

    with pytest.raises(PolicyFileError, match=r"approvals\.queue"):
        Policy.from_file(_policy(tmp_path, ["group:finance"]))


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("[approvals]\n", "approvals.approvers"),
        ("[approvals]\napprovers = []\n", "approvals.approvers"),
        ('[approvals]\napprovers = [""]\n', "approvals.approvers"),
        ('[approvals]\napprovers = ["a"]\nexpires = 0\n', "approvals.expires"),
        ('[approvals]\napprovers = ["a"]\nwho = 1\n', "approvals.who"),
    ],
)
def test_a_malformed_approvals_table_blocks_with_its_key(
    tmp_path: Path, table: str, problem: str
) -> None:
    from toolwire_policy import PolicyFileError

    path = tmp_path / "p.toml"
    path.write_text('approve = ["pay"]\n' + table)
    with pytest.raises(PolicyFileError, match=problem.replace(".", r"\.")):
        Policy.from_file(path)


# -- the command line, in processes of their own ----------------------------------------

APP = """
from pathlib import Path
import toolwire as tw

@tw.tool_fn(effect="mutating")
def pay(amount: int, to: str) -> str:
    '''Pay someone.'''
    with open(Path(__file__).parent / "paid.txt", "a") as f:
        f.write(f"{amount} to {to}\\n")
    return f"paid {amount} to {to}"

tools = tw.Toolset("app", [pay])
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
    )
    return env


def _setup(tmp_path: Path, approvers: list[str]) -> Path:
    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    _policy(config, approvers)
    (tmp_path / "app.py").write_text(APP)
    return config / "policy.toml"


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _argv(who: str, *more: str) -> list[str]:
    pay = '{"amount": 5, "to": "bob"}'
    # --approve: the caller's own yes, which the queue does not take.
    return ["toolwire", "call", "pay", pay, "--app", "app:tools", "--as", who, "--approve", *more]


def _call(tmp_path: Path, who: str = "alice") -> subprocess.CompletedProcess[str]:
    return _run(tmp_path, *_argv(who, "--approval-wait", "0"))  # refused at once


def _paid(tmp_path: Path) -> list[str]:
    path = tmp_path / "paid.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_answered_from_the_command_line_across_processes(tmp_path: Path) -> None:
    _setup(tmp_path, [f"user:{getpass.getuser()}"])
    first = _call(tmp_path)
    assert 1 == first.returncode, first.stderr
    [rid] = request_ids_in(first.stdout)

    listed = _run(tmp_path, "toolwire_policy", "approvals", "list")
    assert 0 == listed.returncode, listed.stderr
    assert rid in listed.stdout
    assert "asked by alice" in listed.stdout

    # A caller waiting on it, killed while it waits (a gateway restarted): nothing is lost.
    waiter = subprocess.Popen(
        [sys.executable, "-m", "toolwire_policy", "approvals", "wait", rid],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)
    waiter.kill()
    waiter.wait(timeout=30)
    assert "pending" in _run(tmp_path, "toolwire_policy", "approvals", "show", rid).stdout

    approved = _run(tmp_path, "toolwire_policy", "approvals", "approve", rid, "--reason", "ok")
    assert 0 == approved.returncode, approved.stderr
    assert "approved" in approved.stdout
    assert 0 == _run(tmp_path, "toolwire_policy", "approvals", "wait", rid).returncode

    ran = _call(tmp_path)
    assert 0 == ran.returncode, ran.stdout + ran.stderr
    assert ["5 to bob"] == _paid(tmp_path)
    assert 1 == _call(tmp_path).returncode  # spent: asked again, not run
    assert ["5 to bob"] == _paid(tmp_path)

    again = _run(tmp_path, "toolwire_policy", "approvals", "approve", rid)
    assert 1 == again.returncode
    assert "is spent, not pending" in again.stderr
    history = _run(tmp_path, "toolwire_policy", "approvals", "history", "--json")
    states = sorted(r["state"] for r in json.loads(history.stdout))
    assert ["pending", "spent"] == states


def test_a_denial_and_a_person_who_may_not_answer_from_the_command_line(
    tmp_path: Path,
) -> None:
    _setup(tmp_path, ["group:nobody-here-is-in-this-group"])
    [rid] = request_ids_in(_call(tmp_path).stdout)
    refused = _run(tmp_path, "toolwire_policy", "approvals", "approve", rid)
    assert 1 == refused.returncode
    assert f"{getpass.getuser()} may not answer request {rid}" in refused.stderr
    assert [] == _paid(tmp_path)

    (tmp_path / "config" / "toolwire" / "policy.toml").write_text(
        POLICY.format(approvers=json.dumps([f"user:{getpass.getuser()}"]), expires=3600)
    )
    [rid] = request_ids_in(_call(tmp_path, "bob").stdout)
    denied = _run(tmp_path, "toolwire_policy", "approvals", "deny", rid, "--reason", "no <b>")
    assert 0 == denied.returncode, denied.stderr
    told = _call(tmp_path, "bob")
    assert 1 == told.returncode
    assert "denied it: no <b>" in told.stdout
    assert 1 == _run(tmp_path, "toolwire_policy", "approvals", "wait", rid).returncode
    assert [] == _paid(tmp_path)


def test_the_command_line_waits_while_an_approver_in_another_process_answers(
    tmp_path: Path,
) -> None:
    _setup(tmp_path, [f"user:{getpass.getuser()}"])
    caller = subprocess.Popen(
        [sys.executable, "-m", *_argv("alice", "--json")],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert caller.stdout is not None
        events = []
        for line in caller.stdout:  # the caller says where it waits, then waits
            events.append(json.loads(line))
            if events[-1]["event"] == "approval_wait":
                break
        wait = events[-1]
        assert wait["event"] == "approval_wait"
        assert wait["approvers"] == [f"user:{getpass.getuser()}"]
        assert wait["answer"] == f"toolwire-policy approvals approve {wait['request']}"
        assert [] == _paid(tmp_path)
        answered = _run(tmp_path, "toolwire_policy", "approvals", "approve", wait["request"])
        assert 0 == answered.returncode, answered.stderr
        out, err = caller.communicate(timeout=120)
    finally:
        caller.kill()
    assert 0 == caller.returncode, out + err
    results = [json.loads(line) for line in out.splitlines() if '"result"' in line]
    assert [r["content"] for r in results if r["event"] == "result"] == ["paid 5 to bob"]
    assert ["5 to bob"] == _paid(tmp_path)


def test_an_executor_waits_for_the_answer_and_a_cancelled_wait_runs_nothing(
    tmp_path: Path,
) -> None:
    import asyncio
    import threading

    paid: list[str] = []
    path = _policy(tmp_path, ["group:finance"])
    payer = _executor(path, paid)
    reports: list[tuple[str, float]] = []
    payer.executor = tw.Executor(
        tools=[payer.tool],
        plugins=payer.executor._host,
        approval_wait=60,
        on_approval_wait=lambda request, waited: reports.append((request.id, waited)),
    )
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")

    def approver(approve: bool, told: int) -> None:
        while len(reports) == told:  # until the executor says the call waits
            time.sleep(0.02)
        [request] = queue.pending()
        queue.answer(request.id, approve=approve, by=FINANCE, reason="checked")

    helper = threading.Thread(target=approver, args=(True, len(reports)))
    helper.start()
    assert "paid 5 to bob" == _pay(payer, "alice")  # waited, then ran
    helper.join()
    assert ["5 to bob"] == paid
    assert reports
    assert reports[0][1] == 0

    helper = threading.Thread(target=approver, args=(False, len(reports)))
    helper.start()
    denied = _pay(payer, "alice", amount=7)
    helper.join()
    assert "fran denied it: checked" in denied
    assert ["5 to bob"] == paid

    async def cancelled() -> None:
        task = asyncio.ensure_future(
            payer.executor.aexecute(
                tw.TypedCall(
                    tw.ToolCall("c9", "pay", '{"amount": 9, "to": "eve"}'),
                    payer.tool,
                    payer.tool.validate_json('{"amount": 9, "to": "eve"}'),
                ),
                context=tw.HookContext(principal=tw.Principal("alice")),
            )
        )
        while not queue.pending():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    [request] = queue.pending()
    queue.answer(request.id, approve=True, by=FINANCE)
    assert ["5 to bob"] == paid  # the cancelled call never ran, approved or not


def test_answering_one_request_reads_only_that_one(tmp_path: Path) -> None:
    """With many waiting, an answer reads and writes its own request, by its key: the
    statements it runs, and SQLite's plan for each, say so."""
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    made = [
        queue.submit(
            key=f"sha256:{i:064x}",
            tool="pay",
            arguments="{}",
            reason="r",
            principal=tw.Principal(f"user{i // 40}"),
            approvers=["group:finance"],
            lifetime=3600,
        )
        for i in range(200)
    ]
    ran: list[str] = []
    queue.store.db.set_trace_callback(ran.append)
    queue.answer(made[100].id, approve=True, by=FINANCE)
    queue.store.db.set_trace_callback(None)
    reads = [s for s in ran if s.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE"))]
    assert reads  # (the trace saw the answer)
    for statement in reads:
        plan = queue.store.db.execute("EXPLAIN QUERY PLAN " + statement).fetchall()
        steps = " ".join(str(row[-1]) for row in plan)
        assert "SCAN" not in steps, (statement, steps)
        assert "USING INDEX" in steps or "PRIMARY KEY" in steps, (statement, steps)


def test_an_approver_edits_the_arguments_checked_and_decided_again(tmp_path: Path) -> None:
    paid: list[str] = []
    path = tmp_path / "policy.toml"
    path.write_text(
        POLICY.format(approvers='["group:finance"]', expires=3600)
        + '\n[[constraints]]\ntools = ["pay"]\narguments = ["to"]\ndeny_patterns = ["^mallory$"]\n'
    )
    payer = _executor(path, paid)
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")

    [rid] = request_ids_in(_pay(payer, "alice", amount=500))
    with pytest.raises(ApprovalError, match=r"at amount: 'lots' is not of type 'integer'"):
        queue.answer(rid, approve=True, by=FINANCE, arguments={"amount": "lots", "to": "bob"})
    with pytest.raises(ApprovalError, match="a denial takes none"):
        queue.answer(rid, approve=False, by=FINANCE, arguments={"amount": 50, "to": "bob"})
    with pytest.raises(ApprovalError, match="must be a JSON object"):
        queue.answer(rid, approve=True, by=FINANCE, arguments=[1])  # type: ignore[arg-type]
    assert "pending" == queue.get(rid).state()  # type: ignore[union-attr]  # nothing kept
    queue.answer(rid, approve=True, by=FINANCE, arguments={"amount": 50, "to": "bob"})
    assert "paid 50 to bob" == _pay(payer, "alice", amount=500)  # the approver's, not 500
    assert ["50 to bob"] == paid
    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    [edit] = [r for r in records if r["event"] == "decision" and r["decision"] == "allow"]
    assert edit["approval"] == f"queue:{rid} by fran (arguments edited)"
    assert edit["arguments"] == {"amount": 500, "to": "bob"}
    assert edit["edited_arguments"] == {"amount": 50, "to": "bob"}

    # An edit the policy would refuse is refused: decided again, not waved through.
    [rid] = request_ids_in(_pay(payer, "alice", amount=7))
    queue.answer(rid, approve=True, by=FINANCE, arguments={"amount": 7, "to": "mallory"})
    refused = _pay(payer, "alice", amount=7)
    assert "the arguments fran approved are refused" in refused
    assert "mallory" in refused
    assert ["50 to bob"] == paid


def test_the_named_approvers_answer_stands_where_the_callers_approver_says_no(
    tmp_path: Path,
) -> None:
    """The caller's own approver counts for nothing either way: an approval a person the
    policy names gave runs the call (edited too) though the caller's approver refuses
    every call it is asked about (it refused them after the queue's approval)."""
    paid: list[str] = []
    asked: list[str] = []

    def no(request: tw.ApprovalRequest) -> tw.Deny:
        asked.append(request.call.name)
        return tw.Deny("the caller says no")

    payer = _executor(_policy(tmp_path, ["group:finance"]), paid, own=no)
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    [rid] = request_ids_in(_pay(payer, "alice"))
    queue.answer(rid, approve=True, by=FINANCE)
    assert "paid 5 to bob" == _pay(payer, "alice")
    [rid] = request_ids_in(_pay(payer, "alice", amount=900))
    queue.answer(rid, approve=True, by=FINANCE, arguments={"amount": 90, "to": "bob"})
    assert "paid 90 to bob" == _pay(payer, "alice", amount=900)
    assert (["5 to bob", "90 to bob"], []) == (paid, asked)
    # Spent once: the same call again is filed again, not run on the first approval.
    assert "waits for group:finance" in _pay(payer, "alice")
    assert 2 == len(paid)


def test_a_queue_vouches_only_for_a_request_it_spent_for_that_call(tmp_path: Path) -> None:
    paid: list[str] = []
    payer = _executor(_policy(tmp_path, ["group:finance"]), paid)
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    [rid] = request_ids_in(_pay(payer, "alice"))
    pending = queue.get(rid)
    assert pending is not None
    text = json.dumps({"amount": 5, "to": "bob"})
    call = tw.TypedCall(tw.ToolCall("c1", "pay", text), payer.tool, payer.tool.validate_json(text))
    with pytest.raises(ApprovalError, match="was not spent for this call"):
        queue.vouch(pending, call)  # pending, not spent
    forged = attrs.evolve(pending, id="apr_" + "x" * 22, status="spent")
    with pytest.raises(ApprovalError, match="was not spent for this call"):
        queue.vouch(forged, call)  # the queue holds no such request
    queue.answer(rid, approve=True, by=FINANCE)
    assert "paid 5 to bob" == _pay(payer, "alice")  # spent by the policy, for this call
    spent = queue.get(rid)
    assert spent is not None
    other = json.dumps({"amount": 6, "to": "bob"})
    with pytest.raises(ApprovalError, match="was not spent for this call"):
        queue.vouch(
            spent, tw.TypedCall(tw.ToolCall("c2", "pay", other), payer.tool,
                                payer.tool.validate_json(other))
        )  # fmt: skip


def test_an_edit_cannot_keep_a_value_the_approver_never_saw(tmp_path: Path) -> None:
    paid: list[str] = []
    path = tmp_path / "policy.toml"
    path.write_text(
        POLICY.format(approvers='["group:finance"]', expires=3600)
        + '\n[[redact]]\narguments = ["to"]\n'
    )
    payer = _executor(path, paid)
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")
    [rid] = request_ids_in(_pay(payer, "alice", amount=9))
    shown = json.loads(queue.get(rid).arguments)  # type: ignore[union-attr]
    assert shown == {"amount": 9, "to": "[REDACTED]"}
    queue.answer(rid, approve=True, by=FINANCE, arguments={**shown, "amount": 8})
    assert "keep a redacted value" in _pay(payer, "alice", amount=9)
    assert [] == paid


def test_a_framework_bridge_waits_for_the_approvers_too(tmp_path: Path) -> None:
    """Another framework's tool call, through a Governor with approval_wait: held until
    an approver answers, then the framework's own tool runs once."""
    import threading

    from toolwire.bridges import Governor

    path = _policy(tmp_path, ["group:finance"])
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(path)), "corp", kind="policy")
    told: list[str] = []
    governor = Governor(
        "someframework",
        plugins=host,
        effects={"pay": "mutating"},
        approval_wait=60,
        on_approval_wait=lambda request, waited: told.append(request.id),
    )
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}}
    tool = governor.foreign_tool("pay", "Pay.", schema)
    ran: list[dict[str, Any]] = []
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")

    def approver() -> None:
        while not told:
            time.sleep(0.02)
        queue.answer(told[0], approve=True, by=FINANCE)

    helper = threading.Thread(target=approver)
    helper.start()
    outcome = governor.run(
        tool,
        {"amount": 3},
        lambda arguments: ran.append(arguments) or "paid",
        principal=tw.Principal("alice"),
    )
    helper.join()
    assert "ok" == outcome.status
    assert [{"amount": 3}] == ran


def test_the_history_filters_by_state_and_is_bounded(tmp_path: Path) -> None:
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")

    def filed(i: int, lifetime: float = 3600) -> str:
        return queue.submit(
            key=f"sha256:{i:064x}",
            tool="pay",
            arguments="{}",
            reason="r",
            principal=tw.Principal("alice"),
            approvers=["group:finance"],
            lifetime=lifetime,
        ).id

    ids = [filed(i) for i in range(5)]
    short = filed(99, lifetime=0.01)
    queue.answer(ids[0], approve=True, by=FINANCE)
    queue.answer(ids[1], approve=False, by=FINANCE)
    time.sleep(0.05)
    assert [ids[0]] == [r.id for r in queue.history(state="approved")]
    assert [ids[1]] == [r.id for r in queue.history(state="denied")]
    assert [short] == [r.id for r in queue.history(state="expired")]
    assert set(ids[2:]) == {r.id for r in queue.history(state="pending")}
    assert 2 == len(queue.history(limit=2))
    assert [] == queue.history(subject="bob")


def test_calls_filed_together_wait_together(tmp_path: Path) -> None:
    """Two calls of one batch, each filed: the second one's answer does not wait for the
    first one's (each waits at once), and each runs once."""
    import threading

    paid: list[str] = []
    base = _executor(_policy(tmp_path, ["group:finance"]), paid)
    told: list[str] = []
    executor = tw.Executor(
        tools=[base.tool],
        plugins=base.executor._host,
        approval_wait=60,
        on_approval_wait=lambda request, waited: told.append(request.id),
    )
    queue = ApprovalQueue(tmp_path / "approvals.sqlite")

    def calls() -> list[tw.TypedCall[Any]]:
        out = []
        for i, amount in enumerate((1, 2)):
            text = json.dumps({"amount": amount, "to": "bob"})
            raw = tw.ToolCall(f"c{i}", "pay", text)
            out.append(tw.TypedCall(raw, base.tool, base.tool.validate_json(text)))
        return out

    def approver() -> None:
        while len(set(told)) < 2:  # both wait at once
            time.sleep(0.02)
        for request in reversed(queue.pending()):  # the second first
            queue.answer(request.id, approve=True, by=FINANCE)

    helper = threading.Thread(target=approver)
    helper.start()
    context = tw.HookContext(principal=tw.Principal("alice"))
    results = executor.execute_all(calls(), context=context)
    helper.join()
    assert ["paid 1 to bob", "paid 2 to bob"] == [r.content for r in results]
    assert ["1 to bob", "2 to bob"] == paid
