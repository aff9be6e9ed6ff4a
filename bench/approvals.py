"""The approval queue and its console under load:
``uv run python -m bench.approvals [--quick] [--json OUT]``.

A queue holding 10, then 1,000 pending requests; the console (`toolwire mcp console`, a
process of its own on 127.0.0.1) signed in over a real socket. Measured, medians of
rounds: the waiting page (every pending request, its arguments in full), answering one
request (the POST, its redirect not followed), and filing a request in the queue (what a
policy does for a call that needs approval). The target: the page renders in under
200 ms with 1,000 waiting; answering one costs the same with 10 or 1,000 (it reads only
its own request).

Each row is measured on both stores the queue has: its SQLite file, and, where Debian's
PostgreSQL can be started here (``bench._postgres``), a database on a server on
127.0.0.1 (what gateways on several machines share).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

import toolwire as tw
from toolwire.approvals import ApprovalQueue

#: The most the waiting page may take with 1,000 requests waiting (the issue's target).
PAGE_TARGET_MS = 200.0
TOKEN = "bench-approver-token"
APPROVER = tw.Principal("fran", groups={"finance"})


def _fill(queue: ApprovalQueue, n: int, start: int) -> list[str]:
    ids = []
    for i in range(start, start + n):
        who = tw.Principal(f"user{i // 40}")  # a principal has at most 50 waiting
        arguments = json.dumps({"amount": i, "to": f"account {i}", "memo": "x" * 200}, indent=2)
        made = queue.submit(
            key="sha256:" + hashlib.sha256(str(i).encode()).hexdigest(),
            tool="pay",
            arguments=arguments,
            reason="requires approval: the organisation policy requires approval for `pay`",
            principal=who,
            approvers=["group:finance"],
            lifetime=3600,
        )
        ids.append(made.id)
    return ids


def _serve(root: Path, queue: Path | str) -> tuple[subprocess.Popen[bytes], str]:
    tokens = root / "tokens.json"
    digest = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()
    tokens.write_text(json.dumps({"tokens": [{"sha256": digest, "subject": "fran",
                                              "groups": ["finance"]}]}))  # fmt: skip
    tokens.chmod(0o600)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env["TOOLWIRE_AUTOLOAD_PLUGINS"] = "0"
    console = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "mcp", "console", "--tokens", str(tokens),
         "--queue", str(queue), "--port", str(port)],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return console, f"http://127.0.0.1:{port}"
        except OSError:
            if console.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the console did not start") from None
            time.sleep(0.1)


def _median_ms(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _row(
    client: httpx.Client, queue: ApprovalQueue, waiting: int, rounds: int, start: int, store: str
) -> dict[str, Any]:
    """One row, with ``waiting`` requests pending (filed from number ``start`` on)."""
    pending = len(queue.pending(limit=10**6))
    _fill(queue, waiting - pending, start)
    page = client.get("/")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert page.status_code == 200
    assert csrf is not None
    assert page.text.count("<tr id=") == waiting
    page_ms = _median_ms(lambda: client.get("/"), rounds)
    start += waiting
    targets = iter(_fill(queue, rounds, start))  # answered one by one, beside the others
    start += rounds

    def answer() -> None:
        got = client.post(
            f"/requests/{next(targets)}/answer",
            data={"csrf": csrf[1], "answer": "deny", "reason": "bench"},
        )
        assert got.status_code == 303, got.text

    answer_ms = _median_ms(answer, rounds)
    counter = iter(range(start, start + rounds))
    file_ms = _median_ms(lambda: _fill(queue, 1, next(counter)), rounds)
    for filed in queue.pending(limit=10**6)[waiting:]:  # back to `waiting` for the next row
        queue.answer(filed.id, approve=False, by=APPROVER)
    row = {
        "store": store,
        "waiting": waiting,
        "page_ms": page_ms,
        "page_kb": len(page.content) / 1024,
        "answer_ms": answer_ms,
        "file_ms": file_ms,
    }
    print(
        f"{store:>10} {waiting:>5} waiting: page {page_ms:6.1f} ms ({row['page_kb']:.0f} KB), "
        f"answer {answer_ms:5.2f} ms, file {file_ms:5.2f} ms",
        flush=True,
    )
    return row


def _rows(root: Path, where: Path | str, store: str, rounds: int) -> list[dict[str, Any]]:
    """The rows of one store: its queue at ``where``, its console in a process of its own."""
    rows = []
    queue = ApprovalQueue(where)
    console, url = _serve(root, where)
    try:
        with httpx.Client(base_url=url, timeout=30, follow_redirects=False) as client:
            form = client.get("/login")  # its CSRF token, in the form and a cookie
            nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert nonce is not None
            signed = client.post("/login", data={"token": TOKEN, "csrf": nonce[1]})
            assert signed.status_code == 303, signed.text
            for level, waiting in enumerate((10, 1000)):
                rows.append(_row(client, queue, waiting, rounds, level * 10**6, store))
    finally:
        console.terminate()
        console.wait(timeout=30)
        queue.close()
    return rows


def measure(rounds: int) -> dict[str, Any]:
    from bench._postgres import available, postgres

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = _rows(root, root / "approvals.sqlite", "sqlite", rounds)
        if available():
            with postgres() as url:
                rows += _rows(root, url, "postgresql", rounds)
        else:
            print("PostgreSQL cannot be started here: its rows are left out", flush=True)
    return {
        "meta": {
            "date": _dt.date.today().isoformat(),
            "elapsed_s": round(time.monotonic() - started),
            "rounds": rounds,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "page_target_ms": PAGE_TARGET_MS,
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few rounds (proves the harness)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    results = measure(3 if args.quick else 30)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
