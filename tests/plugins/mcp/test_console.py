"""#43: the approval console in a real browser (headless Chromium, Debian's, driven by
Playwright through its executable_path). Every peer is real: the console is
`toolwire mcp console` in a process of its own on 127.0.0.1, the calls waiting are
`toolwire call` runs in processes of their own, and the approvers sign in with tokens of a
tokens file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolwire.approvals import ApprovalQueue

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)

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

TOKENS = {"fran-secret": ("fran", ["finance"]), "eve-secret": ("eve", ["staff"])}


class Site:
    def __init__(self, root: Path, url: str, queue: Path) -> None:
        self.root, self.url, self.queue_path = root, url, queue

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
        env.update(
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_DATA_HOME=str(self.root / "data"),
            TOOLWIRE_AUTOLOAD_PLUGINS="0",
        )
        return env

    def call(self, who: str, to: str, amount: int = 5) -> subprocess.Popen[str]:
        """A `toolwire call` that waits for the approvers, in a process of its own."""
        arguments = json.dumps({"amount": amount, "to": to})
        return subprocess.Popen(
            [sys.executable, "-m", "toolwire", "call", "pay", arguments, "--app", "app:tools",
             "--as", who, "--approve", "--json"],
            cwd=self.root, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def waiting_id(self, caller: subprocess.Popen[str]) -> str:
        assert caller.stdout is not None
        for line in caller.stdout:
            event = json.loads(line)
            if event["event"] == "approval_wait":
                return str(event["request"])
        raise AssertionError(f"the call did not wait: {caller.communicate()}")

    def paid(self) -> list[str]:
        path = self.root / "paid.txt"
        return path.read_text().splitlines() if path.exists() else []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(server: subprocess.Popen[bytes], port: int) -> None:
    """Until ``server`` answers on ``port`` (its errors, when it ends first)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(server.communicate()[1]) from None
            time.sleep(0.1)


@pytest.fixture(params=["console", "gateway"])
def site(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Site]:
    """The console on its own (`toolwire mcp console`), or at /console beside an MCP
    gateway (`toolwire mcp serve --transport http --tokens F --console`)."""
    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    queue = tmp_path / "data" / "approvals.sqlite"
    (config / "policy.toml").write_text(
        f'approve = ["pay"]\n\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue}"\n'
        f'\n[audit]\npath = "{tmp_path / "data" / "audit.jsonl"}"\n'
    )
    (tmp_path / "app.py").write_text(APP)
    tokens = tmp_path / "tokens.json"
    entries = [
        {"sha256": "sha256:" + hashlib.sha256(t.encode()).hexdigest(), "subject": s, "groups": g}
        for t, (s, g) in TOKENS.items()
    ]
    tokens.write_text(json.dumps({"tokens": entries}))
    tokens.chmod(0o600)
    ApprovalQueue(queue).close()  # made here, as the gateway's user
    port = _free_port()
    if request.param == "console":
        made = Site(tmp_path, f"http://127.0.0.1:{port}", queue)
        argv = ["console", "--tokens", str(tokens), "--queue", str(queue), "--port", str(port)]
    else:
        (tmp_path / "served.py").write_text(APP.replace("paid.txt", "served.txt"))
        made = Site(tmp_path, f"http://127.0.0.1:{port}/console", queue)
        argv = ["serve", "--app", "served:tools", "--transport", "http", "--port", str(port),
                "--tokens", str(tokens), "--console", "--console-queue", str(queue)]  # fmt: skip
    console = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "mcp", *argv],
        cwd=tmp_path, env=made.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _wait_up(console, port)
    try:
        yield made
    finally:
        console.terminate()
        console.communicate(timeout=30)


@pytest.fixture
def browser() -> Iterator[Any]:
    assert CHROMIUM is not None, "chromium is missing (.ci/run installs it from Debian)"
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


#: Where the browser tests save the docs' screenshots of the console, when set (docs/mcp.md
#: shows them: `TOOLWIRE_SCREENSHOTS=docs/images uv run pytest tests/plugins/mcp/test_console.py`).
SCREENSHOTS = (
    Path(os.environ["TOOLWIRE_SCREENSHOTS"]).resolve()  # before the tests' own working directory
    if os.environ.get("TOOLWIRE_SCREENSHOTS")
    else None
)


def _screenshot(page: Any, site: Site, name: str) -> None:
    if SCREENSHOTS and not site.url.endswith("/console"):  # once: the console on its own
        page.set_viewport_size({"width": 1100, "height": 640})
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)


def _signed_in(browser: Any, site: Site, token: str) -> Any:
    page = browser.new_context().new_page()
    alerts: list[str] = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    page.alerts = alerts
    page.goto(site.url + "/")
    assert page.url == site.url + "/login"  # nobody signed in: the sign-in page
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    return page


def test_an_approver_answers_a_waiting_call_in_the_browser(site: Site, browser: Any) -> None:
    caller = site.call("alice", "<script>alert(1)</script>")
    try:
        request_id = site.waiting_id(caller)
        page = _signed_in(browser, site, "fran-secret")
        row = page.locator(f"tr[id='{request_id}']")
        assert "alice" in row.inner_text()
        # The argument is shown as text, whole: nothing in it runs.
        assert '"to": "<script>alert(1)</script>"' in row.locator("pre").inner_text()
        assert [] == page.alerts
        assert [] == site.paid()
        row.locator("input[name=reason]").fill("budgeted")
        _screenshot(page, site, "console-waiting")
        row.locator("button[value=approve]").click()
        assert f"{request_id} approved" in page.locator(".flash").inner_text()
        out, err = caller.communicate(timeout=120)
    finally:
        caller.kill()
        caller.communicate(timeout=30)
    assert 0 == caller.returncode, out + err
    assert ["5 to <script>alert(1)</script>"] == site.paid()  # ran once
    history = page.goto(site.url + "/history?subject=alice")
    assert history is not None
    assert history.headers["content-security-policy"].startswith("default-src 'none'")
    assert "fran: budgeted" in page.locator(f"tr[id='{request_id}']").inner_text()
    _screenshot(page, site, "console-history")


def test_a_denial_reaches_the_model_with_its_reason(site: Site, browser: Any) -> None:
    caller = site.call("bob", "carol")
    try:
        request_id = site.waiting_id(caller)
        page = _signed_in(browser, site, "fran-secret")
        row = page.locator(f"tr[id='{request_id}']")
        row.locator("input[name=reason]").fill("not this month")
        row.locator("button[value=deny]").click()
        out, _ = caller.communicate(timeout=120)
    finally:
        caller.kill()
        caller.communicate(timeout=30)
    assert 1 == caller.returncode
    [result] = [json.loads(x) for x in out.splitlines() if '"event": "result"' in x]
    assert "fran denied it: not this month" in result["content"]  # what the model reads
    assert [] == site.paid()


def test_an_approver_edits_the_arguments_in_the_browser(site: Site, browser: Any) -> None:
    caller = site.call("dave", "erin", amount=900)
    try:
        request_id = site.waiting_id(caller)
        page = _signed_in(browser, site, "fran-secret")
        row = page.locator(f"tr[id='{request_id}']")
        row.locator("summary").click()
        row.locator("textarea[name=arguments]").fill('{"amount": 90, "to": "erin"}')
        row.locator("input[name=reason]").fill("a tenth of it")
        row.locator("button[value=approve]").click()
        assert f"{request_id} approved" in page.locator(".flash").inner_text()
        out, err = caller.communicate(timeout=120)
    finally:
        caller.kill()
        caller.communicate(timeout=30)
    assert 0 == caller.returncode, out + err
    assert ["90 to erin"] == site.paid()  # what the approver approved, not what was asked


def test_refused_without_the_csrf_token_by_a_non_approver_and_when_expired(
    site: Site, browser: Any
) -> None:
    import toolwire as tw

    queue = ApprovalQueue(site.queue_path)
    pending = queue.submit(
        key="sha256:" + "1" * 64, tool="pay", arguments="{}", reason="requires approval",
        principal=tw.Principal("alice"), approvers=["group:finance"], lifetime=3600,
    )  # fmt: skip
    eve = _signed_in(browser, site, "eve-secret")
    eve.locator(f"tr[id='{pending.id}'] button[value=approve]").click()
    assert f"eve may not answer request {pending.id}" in eve.locator(".error").inner_text()

    fran = _signed_in(browser, site, "fran-secret")
    forged = fran.request.post(
        f"{site.url}/requests/{pending.id}/answer", form={"answer": "approve"}
    )
    assert 403 == forged.status
    assert "CSRF token" in forged.text()
    assert "pending" == queue.get(pending.id).state()  # type: ignore[union-attr]

    short = queue.submit(
        key="sha256:" + "2" * 64, tool="pay", arguments="{}", reason="requires approval",
        principal=tw.Principal("alice"), approvers=["group:finance"], lifetime=2,
    )  # fmt: skip
    fran.goto(site.url + "/")
    button = fran.locator(f"tr[id='{short.id}'] button[value=approve]")
    while time.time() < short.expires:
        time.sleep(0.05)
    button.click()
    assert f"request {short.id} is expired, not pending" in fran.locator(".error").inner_text()

    # A link cannot put words on the page, nor a page elsewhere reach it by DNS rebinding.
    fran.goto(site.url + "/?done=" + "Approved%20by%20the%20CEO")
    assert 0 == fran.locator(".flash").count()
    import httpx

    rebound = httpx.get(site.url + "/login", headers={"Host": "attacker.example"}, timeout=30)
    assert 400 == rebound.status_code

    if site.url.endswith("/console"):  # beside the gateway: its MCP endpoint still asks for a token
        gateway = site.url.removesuffix("/console") + "/mcp"
        assert 401 == httpx.post(gateway, json={}, timeout=30).status_code

    wrong = browser.new_context().new_page()
    wrong.goto(site.url + "/login")
    assert wrong.url == site.url + "/login"
    wrong.fill("input[name=token]", "not-a-token")
    wrong.click("button[type=submit]")
    assert "not one this console accepts" in wrong.locator(".error").inner_text()

    # Signing in takes the sign-in form's own CSRF token; a token guesser is slowed.
    forged_login = httpx.post(site.url + "/login", data={"token": "fran-secret"}, timeout=30)
    assert 403 == forged_login.status_code
    with httpx.Client(base_url=site.url, timeout=30) as guesser:
        nonce = guesser.get("/login").text.split('name="csrf" value="')[1].split('"')[0]
        answers = [
            guesser.post("/login", data={"token": f"guess-{i}", "csrf": nonce}).status_code
            for i in range(11)
        ]
        assert [401] * 9 + [429] * 2 == answers  # (the browser above failed once)
        # (the right token too, from there, until the window passes)
        late = guesser.post("/login", data={"token": "fran-secret", "csrf": nonce})
        assert 429 == late.status_code


def test_an_approver_reads_the_audit_log_with_its_chain_verified(site: Site, browser: Any) -> None:
    caller = site.call("alice", "<script>alert(2)</script>")
    try:
        request_id = site.waiting_id(caller)
        fran = _signed_in(browser, site, "fran-secret")
        fran.locator(f"tr[id='{request_id}'] button[value=approve]").click()
        out, err = caller.communicate(timeout=120)
    finally:
        caller.kill()
        caller.communicate(timeout=30)
    assert 0 == caller.returncode, out + err
    fran.click("nav >> text=Audit log")
    assert fran.url == site.url + "/audit"
    chain = fran.locator("#chain").inner_text()
    assert "The chain is whole: 3 records" in chain, chain  # filed, allowed once approved, result
    rows = fran.locator("tbody tr")
    assert 3 == rows.count()
    assert "result" in rows.nth(0).inner_text()
    assert "ok" in rows.nth(0).inner_text()
    assert "alice" in rows.nth(1).inner_text()
    assert f"allow (approval: queue:{request_id} by fran)" in rows.nth(1).inner_text()
    # The arguments as the policy keeps them, shown as text: nothing in them runs.
    assert '"to": "<script>alert(2)</script>"' in rows.nth(1).locator("pre").inner_text()
    assert [] == fran.alerts
    _screenshot(fran, site, "console-audit")
    fran.goto(site.url + "/audit?decision=reject")
    assert 1 == fran.locator("tbody tr").count()
    assert request_id in fran.locator("tbody tr").inner_text()  # the refusal naming the request

    # Someone edits a record: the page says the chain is broken, and where.
    log = site.root / "data" / "audit.jsonl"
    lines = log.read_text().splitlines()
    lines[0] = lines[0].replace('"alice"', '"mallory"')
    log.write_text("\n".join(lines) + "\n")
    fran.goto(site.url + "/audit")
    assert "The chain is BROKEN: line 2 (record 2)" in fran.locator("#chain").inner_text()

    # Who is no reader (the policy names finance as approvers, so as readers) sees none.
    eve = _signed_in(browser, site, "eve-secret")
    assert 0 == eve.locator("nav >> text=Audit log").count()
    refused = eve.goto(site.url + "/audit")
    assert refused is not None
    assert 403 == refused.status
    assert "names you as one of its readers" in eve.locator(".error").inner_text()


def test_a_request_outlives_the_gateway_killed_while_it_waits(tmp_path: Path) -> None:
    """The gateway killed (SIGKILL) while a call waits for approval: after a restart the
    request is still pending; approved, the same call runs exactly once."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    import toolwire as tw

    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    queue_path = tmp_path / "data" / "approvals.sqlite"
    (config / "policy.toml").write_text(
        f'approve = ["pay"]\n\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue_path}"\n'
    )
    (tmp_path / "app.py").write_text(APP)
    tokens = tmp_path / "tokens.json"
    digest = "sha256:" + hashlib.sha256(b"alice-secret").hexdigest()
    tokens.write_text(json.dumps({"tokens": [{"sha256": digest, "subject": "alice"}]}))
    tokens.chmod(0o600)
    site = Site(tmp_path, "", queue_path)

    def start(wait: str) -> tuple[subprocess.Popen[bytes], str]:
        port = _free_port()
        gateway = subprocess.Popen(
            [sys.executable, "-m", "toolwire", "mcp", "serve", "--app", "app:tools",
             "--transport", "http", "--port", str(port), "--tokens", str(tokens), "--approve",
             "--approval-wait", wait],
            cwd=tmp_path, env=site.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return gateway, f"http://127.0.0.1:{port}/mcp"
            except OSError:
                assert gateway.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.1)

    async def call(url: str) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer alice-secret"}, timeout=120)
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            return await client.call_tool("pay", {"amount": 5, "to": "bob"})

    async def call_and_kill(url: str, gateway: subprocess.Popen[bytes]) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call, url)
            queue = ApprovalQueue(queue_path)
            with anyio.fail_after(120):
                while not queue.pending():
                    await anyio.sleep(0.05)
            gateway.kill()  # while the call waits

    gateway, url = start("600")  # holds the call
    try:
        with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the gateway
            anyio.run(call_and_kill, url, gateway)
    finally:
        gateway.kill()
        gateway.wait(timeout=30)
    queue = ApprovalQueue(queue_path)
    [waiting] = queue.pending()  # survived the crash
    assert waiting.subject == "alice"
    assert [] == site.paid()

    gateway, url = start("0")  # (a call filed again is refused at once)
    try:
        queue.answer(waiting.id, approve=True, by=tw.Principal("fran", groups={"finance"}))
        ran = anyio.run(call, url)
        assert "paid 5 to bob" == ran.content[0].text
        again = anyio.run(call, url)  # spent: asked again, never run twice
        assert again.is_error
        assert "apr_" in again.content[0].text
    finally:
        gateway.kill()
        gateway.wait(timeout=30)
    assert ["5 to bob"] == site.paid()


def test_an_approver_signs_in_with_the_identity_provider(tmp_path: Path, browser: Any) -> None:
    """The console beside a gateway, sign-in with the organisation's identity provider: a
    real authorization server (the MCP SDK's routes) on 127.0.0.1, the browser sent there
    and back with a code (PKCE), the token it issues for the gateway's resource checked as
    a bearer token is; the principal its claims name answers a waiting call."""
    import httpx
    from _authserver import AuthServer

    auth = AuthServer(subject="fran", groups=("finance",))
    try:
        port = _free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        callback = f"http://127.0.0.1:{port}/console/oauth/callback"
        registered = httpx.post(
            auth.url + "register",
            json={"redirect_uris": [callback], "token_endpoint_auth_method": "none",
                  "grant_types": ["authorization_code"], "response_types": ["code"],
                  "scope": "mcp:tools"},
            timeout=30,
        ).json()  # fmt: skip
        oauth = tmp_path / "oauth.toml"
        oauth.write_text(
            f'issuer = "{auth.url}"\nresource = "{resource}"\nscopes = ["mcp:tools"]\n'
            f'jwks_uri = "{auth.url}jwks"\n\n[console]\nclient_id = "{registered["client_id"]}"\n'
        )
        oauth.chmod(0o600)
        config = tmp_path / "config" / "toolwire"
        config.mkdir(parents=True)
        queue = tmp_path / "data" / "approvals.sqlite"
        (config / "policy.toml").write_text(
            f'approve = ["pay"]\n\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue}"\n'
        )
        (tmp_path / "app.py").write_text(APP)
        ApprovalQueue(queue).close()
        site = Site(tmp_path, f"http://127.0.0.1:{port}/console", queue)
        gateway = subprocess.Popen(
            [sys.executable, "-m", "toolwire", "mcp", "serve", "--app", "app:tools",
             "--transport", "http", "--port", str(port), "--oauth", str(oauth), "--console",
             "--console-queue", str(queue)],
            cwd=tmp_path, env=site.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            _wait_up(gateway, port)
            caller = site.call("alice", "bob")
            try:
                request_id = site.waiting_id(caller)
                page = browser.new_context().new_page()
                page.goto(site.url + "/")
                assert page.url == site.url + "/login"
                assert 0 == page.locator("input[name=token]").count()  # no tokens: no form
                page.click("a#oauth")  # to the identity provider and back
                error = page.locator(".error")
                assert 0 == error.count(), error.inner_text()
                assert page.url == site.url + "/"
                assert "signed in as fran" in page.locator("nav").inner_text()
                page.locator(f"tr[id='{request_id}'] button[value=approve]").click()
                assert f"{request_id} approved" in page.locator(".flash").inner_text()
                out, err = caller.communicate(timeout=120)
            finally:
                caller.kill()
                caller.communicate(timeout=30)
            assert 0 == caller.returncode, out + err
            assert ["5 to bob"] == site.paid()
            assert resource in auth.resources  # the token was asked for the gateway (RFC 8707)

            # A code brought back to another browser (no state cookie) signs nobody in; nor
            # does a state this console never started, or an error from the provider.
            with httpx.Client(base_url=site.url, timeout=30) as other:
                start = other.get("/oauth/start")
                assert 303 == start.status_code
                back = httpx.get(start.headers["location"], timeout=30).headers["location"]
                assert back.startswith(callback)
                stolen = httpx.get(back, timeout=30)  # without the cookie `other` holds
                assert 401 == stolen.status_code
                assert "not started in this browser" in stolen.text
                forged = other.get("/oauth/callback", params={"code": "x", "state": "forged"})
                assert 401 == forged.status_code
                said = other.get("/oauth/callback", params={"error": "<b>access_denied</b>"})
                assert 401 == said.status_code
                assert "&lt;b&gt;access_denied&lt;/b&gt;" in said.text
                # The real flow once more, the code used twice: the second is refused.
                again = other.get("/oauth/start")
                code_url = httpx.get(again.headers["location"], timeout=30).headers["location"]
                assert 303 == other.get(code_url).status_code
                state = dict(httpx.URL(code_url).params)["state"]
                other.cookies.set("toolwire_console_oauth", state)  # as the browser held it
                replayed = other.get(code_url)
                assert 401 == replayed.status_code
                assert "unknown or took too long" in replayed.text
        finally:
            gateway.terminate()
            gateway.communicate(timeout=30)
    finally:
        auth.close()
