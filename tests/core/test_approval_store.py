"""#43: the approval queue's store. The same queue over an SQLite file and over a real
PostgreSQL server (Debian's, on 127.0.0.1, see ``postgres_url``): what it files, answers
and spends is the same; across processes an approval runs one call; every wait has a
deadline; a dropped connection is opened again; a password never sits in the address."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw
from toolwire.approvals import ApprovalError, ApprovalQueue, ApprovalStore, SqliteStore

FRAN = tw.Principal("fran", groups={"finance"})
ALICE = tw.Principal("alice")


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "approvals.sqlite")
    return str(request.getfixturevalue("fresh_database"))


def _submit(queue: ApprovalQueue, key: str = "sha256:" + "1" * 64, **over: Any) -> Any:
    given: dict[str, Any] = {
        "key": key, "tool": "pay", "arguments": '{"amount": 5}', "reason": "requires approval",
        "principal": ALICE, "approvers": ["group:finance"], "lifetime": 3600,
    }  # fmt: skip
    return queue.submit(**{**given, **over})


def test_the_same_queue_on_either_store(where: str) -> None:
    queue = ApprovalQueue(where)
    assert isinstance(queue.store, ApprovalStore)
    first = _submit(queue)
    assert _submit(queue).id == first.id  # the same call asked again: the same request
    other = _submit(queue, key="sha256:" + "2" * 64, tool="wire")
    assert [r.id for r in queue.pending()] == [first.id, other.id]  # oldest first
    assert queue.spend(first.key, ALICE) is None  # not approved yet
    with pytest.raises(ApprovalError, match="may not answer"):
        queue.answer(first.id, approve=True, by=tw.Principal("eve"))
    approved = queue.answer(first.id, approve=True, by=FRAN, reason="ok")
    assert approved.state() == "approved"
    assert queue.spend(first.key, tw.Principal("bob")) is None  # another principal's call
    spent = queue.spend(first.key, ALICE)
    assert spent is not None
    assert spent.status == "spent"
    assert queue.spend(first.key, ALICE) is None  # once
    queue.answer(other.id, approve=False, by=FRAN, reason="no")
    assert [r.id for r in queue.history()] == [other.id, first.id]  # newest first
    assert [r.id for r in queue.history(tool="wire")] == [other.id]
    assert [r.id for r in queue.history(state="spent")] == [first.id]
    assert [r.id for r in queue.history(subject="alice", state="denied")] == [other.id]
    short = _submit(queue, key="sha256:" + "3" * 64, lifetime=0.05)
    time.sleep(0.1)
    assert queue.get(short.id).state() == "expired"  # type: ignore[union-attr]
    assert [r.id for r in queue.history(state="expired")] == [short.id]
    assert queue.pending() == []
    # What a request holds comes back whole (a float time is not cut to 4 bytes).
    again = ApprovalQueue(where).get(first.id)
    assert again == spent
    queue.close()


def test_one_principal_may_not_flood_the_queue(where: str) -> None:
    from toolwire._approvals import MAX_PENDING_PER_PRINCIPAL

    queue = ApprovalQueue(where)
    for i in range(MAX_PENDING_PER_PRINCIPAL):
        _submit(queue, key=f"sha256:{i:064x}")
    with pytest.raises(ApprovalError, match="requests waiting for approval already"):
        _submit(queue, key="sha256:" + "f" * 64)
    _submit(queue, key="sha256:" + "f" * 64, principal=tw.Principal("bob"))  # others may


_SPEND = """
import sys, time
from toolwire.approvals import ApprovalQueue
import toolwire as tw
queue = ApprovalQueue(sys.argv[1])
while time.time() < float(sys.argv[3]):
    pass
got = queue.spend(sys.argv[2], tw.Principal("alice"))
print("spent" if got is not None else "none")
"""


def test_an_approval_is_spent_once_across_processes(where: str) -> None:
    queue = ApprovalQueue(where)
    request = _submit(queue)
    queue.answer(request.id, approve=True, by=FRAN)
    start = str(time.time() + 3)  # every process asks at once
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SPEND, where, request.key, start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    said = [p.communicate(timeout=120) for p in procs]
    assert sorted(out.strip() for out, _ in said) == ["none"] * 5 + ["spent"], said


def test_gateways_starting_at_once_make_the_table_once(postgres_url: str) -> None:
    # Twelve queues opening a new database at the same moment (three times over): each
    # opens it. CREATE ... IF NOT EXISTS alone races on the catalogue (without the lock
    # the table is made under, most rounds failed: "duplicate key value violates unique
    # constraint").
    import psycopg

    base = postgres_url.rsplit("/", 1)[0]
    failed: list[str] = []
    for n in range(3):
        name = f"at_once_{n}_{int(time.time() * 1000)}"
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        barrier = threading.Barrier(12)

        def open_it(where: str = f"{base}/{name}", barrier: Any = barrier) -> None:
            barrier.wait(30)
            try:
                ApprovalQueue(where).close()
            except ApprovalError as exc:
                failed.append(str(exc))

        threads = [threading.Thread(target=open_it) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert [] == failed


def test_a_postgres_address_never_holds_a_password(postgres_url: str) -> None:
    with pytest.raises(ApprovalError, match="PGPASSWORD"):
        ApprovalQueue(postgres_url.replace("toolwire@", "toolwire:hunter2@"))
    with pytest.raises(ApprovalError, match="cannot be opened"):
        ApprovalQueue("postgresql://toolwire@127.0.0.1:9/none", timeout=1)


def test_a_dropped_connection_is_opened_again(fresh_database: str) -> None:
    import psycopg

    queue = ApprovalQueue(fresh_database)
    request = _submit(queue)
    with psycopg.connect(fresh_database, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert queue.get(request.id) == request  # the next use connects again
    assert queue.answer(request.id, approve=True, by=FRAN).state() == "approved"


def test_a_writer_held_up_past_the_deadline_is_told(fresh_database: str) -> None:
    import psycopg

    queue = ApprovalQueue(fresh_database, timeout=0.5)
    request = _submit(queue)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with psycopg.connect(fresh_database) as other, other.transaction():
            other.execute("LOCK TABLE requests IN EXCLUSIVE MODE")
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        began = time.monotonic()
        with pytest.raises(ApprovalError, match="cannot be written"):
            queue.answer(request.id, approve=True, by=FRAN)
        assert time.monotonic() - began < 10
        assert queue.get(request.id).state() == "pending"  # type: ignore[union-attr]  # reads go on
    finally:
        release.set()
        holder.join(30)
    assert queue.answer(request.id, approve=True, by=FRAN).state() == "approved"


def test_a_store_of_the_applications_own(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "own.sqlite")
    queue = ApprovalQueue(store=store)
    assert queue.store is store
    assert queue.path == tmp_path / "own.sqlite"
    assert _submit(queue).state() == "pending"
    with pytest.raises(ApprovalError, match="not both"):
        ApprovalQueue(tmp_path / "x.sqlite", store=store)
    with pytest.raises(ApprovalError, match=r"must be a toolwire\.approvals\.ApprovalStore"):
        ApprovalQueue(store="approvals.sqlite")  # type: ignore[arg-type]
    assert json.loads(repr(queue).split(" ", 1)[1].rstrip(">").replace("'", '"')).endswith(
        "own.sqlite"
    )
