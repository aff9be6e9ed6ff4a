"""#43: a webhook tells the approvers of each new request: Slack-compatible JSON with a
link to the request, signed, retried when the receiver fails, and never in the way of
the call or the queue. The receiver is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw
from toolwire.approvals import request_ids_in
from toolwire_policy import Policy, PolicyFileError, PolicyPlugin, verify_webhook

SECRET = "s3cret-for-webhooks"


class Receiver:
    def __init__(self) -> None:
        self.got: list[tuple[bytes, dict[str, str]]] = []
        self.fail_first = 0
        self.hold = threading.Event()
        self.hold.set()
        self.url = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            made.hold.wait(30)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            made.got.append((body, dict(self.headers.items())))
            status = 500 if len(made.got) <= made.fail_first else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    made.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.hold.set()
        server.shutdown()
        server.server_close()


def _policy(tmp_path: Path, url: str, extra: str = "") -> Policy:
    (tmp_path / "p.toml").write_text(
        'approve = ["pay"]\n[approvals]\napprovers = ["group:finance"]\nqueue = "q.sqlite"\n'
        f'webhook = "{url}"\nwebhook_secret_env = "HOOK_SECRET"\n'
        'console_url = "https://approvals.example/console"\n' + extra
    )
    policy = Policy.from_file(tmp_path / "p.toml")
    assert policy.webhook is not None
    policy.webhook._sleep = lambda seconds: None  # retried at once here
    return policy


def _pay(policy: Policy, amount: int = 5) -> str:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")

    @tw.tool_fn(effect="mutating")
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    text = json.dumps({"amount": amount})
    call = tw.TypedCall(tw.ToolCall("c1", "pay", text), pay, pay.validate_json(text))
    executor = tw.Executor(tools=[pay], plugins=host)
    context = tw.HookContext(principal=tw.Principal("alice"))
    return executor.execute(call, context=context).content


def test_a_new_request_is_told_once_signed_with_a_link(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    policy = _policy(tmp_path, receiver.url)
    [request_id] = request_ids_in(_pay(policy))
    _pay(policy)  # the same call asked again: the same request, told once
    assert policy.webhook is not None
    assert policy.webhook.flush(30)
    [(body, headers)] = receiver.got
    data = json.loads(body)
    assert f"https://approvals.example/console/#{request_id}" in data["text"]
    assert "alice asks to run `pay`" in data["text"]
    assert data["toolwire"]["request"] == request_id
    assert data["toolwire"]["approvers"] == ["group:finance"]
    assert verify_webhook(SECRET.encode(), body, headers)
    assert not verify_webhook(SECRET.encode(), body + b" ", headers)  # tampered
    assert not verify_webhook(b"another secret", body, headers)
    stamp = int(headers["X-Toolwire-Timestamp"])
    assert not verify_webhook(SECRET.encode(), body, headers, now=stamp + 3600)  # replayed
    assert not verify_webhook(SECRET.encode(), body, {})


def test_a_failed_delivery_is_retried_and_logged(
    tmp_path: Path,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    receiver.fail_first = 2
    policy = _policy(tmp_path, receiver.url)
    with caplog.at_level(logging.INFO, logger="toolwire_policy.webhook"):
        _pay(policy)
        assert policy.webhook is not None
        assert policy.webhook.flush(30)
    assert 3 == len(receiver.got)
    assert receiver.got[0][0] == receiver.got[2][0]  # the same delivery, again
    said = [r.getMessage() for r in caplog.records]
    assert sum("answered 500" in m for m in said) == 2
    assert any(m.endswith("delivered") for m in said)


def test_a_receiver_that_hangs_or_is_gone_holds_nothing_up(
    tmp_path: Path,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    receiver.hold.clear()  # the receiver takes the request and does not answer
    policy = _policy(tmp_path, receiver.url)
    refused = _pay(policy)  # returns while the delivery hangs
    assert "apr_" in refused
    assert [] == receiver.got
    receiver.hold.set()
    assert policy.webhook is not None
    assert policy.webhook.flush(30)
    assert 1 == len(receiver.got)

    (tmp_path / "gone").mkdir()
    gone = _policy(tmp_path / "gone", "http://127.0.0.1:9/hook")  # nothing listens there
    assert gone.webhook is not None
    gone.webhook.attempts = 2
    with caplog.at_level(logging.WARNING, logger="toolwire_policy.webhook"):
        assert "apr_" in _pay(gone)
        assert gone.webhook.flush(60)
    assert any("given up" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('webhook = "http://hooks.example.com/x"\n', "http:// to this machine only"),
        ('webhook = "ftp://x"\n', "approvals.webhook"),
        ('webhook_secret_env = "HOOK_SECRET"\n', "name a webhook"),
        ('webhook = "https://x.example"\nwebhook_secret_env = "NOT_SET_ANYWHERE"\n', "is not set"),
    ],
)
def test_a_bad_webhook_blocks_with_its_key(tmp_path: Path, table: str, problem: str) -> None:
    (tmp_path / "p.toml").write_text(
        'approve = ["pay"]\n[approvals]\napprovers = ["group:finance"]\nqueue = "q.sqlite"\n'
        + table
    )
    with pytest.raises(PolicyFileError, match=problem.replace(".", r"\.")):
        Policy.from_file(tmp_path / "p.toml")
