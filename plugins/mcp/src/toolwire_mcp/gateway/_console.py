"""The approval console: a web page where the people a policy names answer the calls
waiting in the approval queue (:mod:`toolwire.approvals`), and read its history.

Server-rendered pages, no script and no external asset (it runs inside an organisation's
network): a strict content-security policy, every value escaped by :func:`_esc` (the one
way this module writes text into a page), every form carrying the session's CSRF token,
and the session in an HttpOnly, SameSite=Strict cookie. Sign-in is by a token of the
gateway's tokens file (``--tokens``: the file holds only their digests); only the
approvers a request names may answer it, and nobody their own request unless the policy
says so (the queue checks both).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from toolwire import Principal
from toolwire.approvals import ApprovalError, ApprovalQueue, ApprovalRequest, AuditTrail
from toolwire_mcp.gateway._signin import FLOW_SECONDS, SignIn, SignInError

__all__ = ["console_app", "serve_console"]

#: The most sessions held at once, and how long one lives (seconds).
MAX_SESSIONS, SESSION_SECONDS = 1000, 8 * 3600
#: The most a form may send (bytes): a reason, edited arguments (64 KiB), a CSRF token.
MAX_FORM_BYTES = 96 * 1024
COOKIE = "toolwire_console"
#: The sign-in form's CSRF cookie.
LOGIN_COOKIE = "toolwire_console_login"
#: The cookie binding an OAuth sign-in's ``state`` to the browser that started it.
OAUTH_COOKIE = "toolwire_console_oauth"
#: Failed sign-ins from one address within FAILURE_WINDOW seconds before it must wait.
MAX_FAILURES, FAILURE_WINDOW = 10, 300.0
#: The newest audit records one page shows.
AUDIT_PAGE = 200

_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: .4rem; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; margin: 0; max-height: 20rem; min-width: 18rem; overflow: auto;
      padding: .4rem; white-space: pre-wrap; word-break: break-all; }
td.age { white-space: nowrap; }
.flash { background: #eef6ee; border: 1px solid #9c9; padding: .5rem; }
.error { background: #fbeeee; border: 1px solid #c99; padding: .5rem; }
form.inline { display: inline; }
input[type=text] { width: 11rem; }
"""


#: The note an answer's redirect carries: the request and how it was answered.
_DONE = re.compile(r"apr_[A-Za-z0-9_-]{22} (approved|denied)")


def _esc(value: Any) -> str:
    """Any value as text in a page: escaped, quotes included (the one way this module
    writes text into a page)."""
    return html.escape(str(value), quote=True)


def _shown(arguments: str) -> Any:
    """The arguments a request shows, as JSON (None when they are not JSON)."""
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def _when(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Session:
    __slots__ = ("csrf", "expires", "principal")

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.csrf = secrets.token_urlsafe(32)
        self.expires = time.monotonic() + SESSION_SECONDS


def console_app(
    queue: ApprovalQueue,
    tokens: Mapping[str, Principal],
    *,
    base: str = "",
    allowed_hosts: list[str] | None = None,
    trails: Sequence[AuditTrail] = (),
    signin: SignIn | None = None,
) -> Any:
    """The console as an ASGI app (Starlette): the queue's pending requests, its history,
    and answering one, for the principals the tokens (``sha256:...`` -> Principal, as
    ``load_tokens`` reads a tokens file) name. ``base``: the path it is served under
    (``/console`` beside a gateway), so its links and forms lead back to it.
    ``allowed_hosts``: the Host headers it answers (a console on 127.0.0.1 answers only
    its loopback names, so a page elsewhere cannot reach it by DNS rebinding).
    ``trails``: the audit logs the policies offer (``PluginHost.audit_trails()``), each
    shown, its chain verified, to the principals it names as readers. ``signin``: sign-in
    with the organisation's identity provider (the OAuth file's ``[console]``), beside
    or instead of the tokens."""
    if base and not re.fullmatch(r"(/[A-Za-z0-9_-]+)+", base):
        raise ValueError(f"base must be a path like /console, got {base!r}")
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    sessions: dict[str, _Session] = {}
    #: Failed sign-ins by client address (monotonic times), to slow a token guesser.
    failures: dict[str, list[float]] = {}

    def page(title: str, body: str, status: int = 200, who: _Session | None = None) -> Response:
        nav = ""
        if who is not None:
            audit = f'<a href="{base}/audit">Audit log</a>' if readable(who) else ""
            nav = (
                f'<nav><a href="{base}/">Waiting</a><a href="{base}/history">History</a>{audit}'
                f"<span>signed in as {_esc(who.principal.subject)}</span> "
                f'<form class="inline" method="post" action="{base}/logout">{_csrf(who)}'
                '<button type="submit">Sign out</button></form></nav>'
            )
        text = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{_esc(title)} · toolwire approvals</title>"
            f'<link rel="stylesheet" href="{base}/console.css"></head>'
            f"<body>{nav}<h1>{_esc(title)}</h1>{body}</body></html>"
        )
        return HTMLResponse(text, status, headers=_HEADERS)

    def readable(who: _Session) -> list[AuditTrail]:
        """The trails ``who`` may read (a trail that fails to say is not shown)."""
        mine = []
        for trail in trails:
            try:
                if trail.readable_by(who.principal) is True:
                    mine.append(trail)
            except Exception:  # a plugin's trail: it shows nothing it cannot vouch for
                continue
        return mine

    def _csrf(who: _Session) -> str:
        return f'<input type="hidden" name="csrf" value="{_esc(who.csrf)}">'

    def session_of(request: Request) -> _Session | None:
        key = request.cookies.get(COOKIE, "")
        found = sessions.get(key)
        if found is None or found.expires < time.monotonic():
            sessions.pop(key, None)
            return None
        return found

    async def form_of(request: Request) -> dict[str, str] | None:
        """The form a POST sent (urlencoded, bounded), or None when it is not one."""
        if request.headers.get("content-type", "").split(";")[0].strip() != (
            "application/x-www-form-urlencoded"
        ):
            return None
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return None
        try:
            pairs = urllib.parse.parse_qsl(body.decode("utf-8"), max_num_fields=10)
        except (UnicodeDecodeError, ValueError):
            return None
        return dict(pairs)

    def refused(text: str, status: int, who: _Session | None = None) -> Response:
        return page("Refused", f'<p class="error">{_esc(text)}</p>', status, who)

    async def checked(request: Request) -> tuple[_Session, dict[str, str]] | Response:
        """A POST's session and form, its CSRF token checked."""
        who = session_of(request)
        if who is None:
            return refused("sign in first", 401)
        form = await form_of(request)
        if form is None:
            return refused("not a form this console sends", 400, who)
        if not hmac.compare_digest(form.get("csrf", "").encode(), who.csrf.encode()):
            return refused("the form's CSRF token is missing or wrong; reload the page", 403, who)
        return who, form

    async def login_page(request: Request) -> Response:
        # The sign-in form's own CSRF token, in a SameSite=Strict cookie and the form: a
        # page elsewhere cannot sign a browser in as someone else.
        nonce = secrets.token_urlsafe(24)
        body = ""
        if signin is not None:
            body += (
                f'<p><a id="oauth" href="{base}/oauth/start">Sign in with '
                f"{_esc(signin.issuer)}</a></p>"
            )
        if tokens:
            body += (
                "<p>Sign in with your token (the gateway's tokens file names who it is).</p>"
                f'<form method="post" action="{base}/login">'
                f'<input type="hidden" name="csrf" value="{_esc(nonce)}">'
                '<label>Token <input type="password" name="token" autocomplete="off"></label> '
                '<button type="submit">Sign in</button></form>'
            )
        response = page("Sign in", body)
        response.set_cookie(
            LOGIN_COOKIE, nonce, max_age=3600, httponly=True, samesite="strict",
            secure=request.url.scheme == "https",
        )  # fmt: skip
        return response

    async def login(request: Request) -> Response:
        client = request.client.host if request.client is not None else ""
        now = time.monotonic()
        tries = [t for t in failures.get(client, []) if t > now - FAILURE_WINDOW]
        if len(tries) >= MAX_FAILURES:
            return refused("too many failed sign-ins from here; wait a few minutes", 429)
        form = await form_of(request) or {}
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        if not nonce or not hmac.compare_digest(form.get("csrf", "").encode(), nonce.encode()):
            return refused("the sign-in form's CSRF token is missing or wrong; reload it", 403)
        token = form.get("token", "")
        digest = "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()
        principal = tokens.get(digest) if token else None
        if principal is None:
            if len(failures) >= 10_000:  # bounded: the oldest addresses go
                failures.clear()
            failures[client] = [*tries, now]
            return refused("that token is not one this console accepts", 401)
        failures.pop(client, None)
        response = signed_in(request, principal)
        response.delete_cookie(LOGIN_COOKIE)
        return response

    def signed_in(request: Request, principal: Principal) -> Response:
        """A new session for ``principal``, and the way to the waiting page."""
        if len(sessions) >= MAX_SESSIONS:
            now = time.monotonic()
            for key in [k for k, s in sessions.items() if s.expires < now]:
                del sessions[key]
            if len(sessions) >= MAX_SESSIONS:
                return refused("too many people are signed in; try again later", 503)
        key = secrets.token_urlsafe(32)
        sessions[key] = _Session(principal)
        response = RedirectResponse(f"{base}/", 303, headers=_HEADERS)
        secure = request.url.scheme == "https"
        response.set_cookie(
            COOKIE, key, max_age=SESSION_SECONDS, httponly=True, samesite="strict", secure=secure
        )
        return response

    async def oauth_start(request: Request) -> Response:
        if signin is None:
            return refused("this console has no sign-in with an identity provider", 404)
        try:
            url, state = await signin.start(base)
        except SignInError as exc:
            return refused(str(exc), 502)
        response = RedirectResponse(url, 303, headers=_HEADERS)
        # Lax, not Strict: the issuer's redirect back is a navigation from another site,
        # and the state must come with it (it binds the code to this browser).
        response.set_cookie(
            OAUTH_COOKIE, state, max_age=int(FLOW_SECONDS), httponly=True, samesite="lax",
            secure=request.url.scheme == "https", path=base or "/",
        )  # fmt: skip
        return response

    async def oauth_callback(request: Request) -> Response:
        if signin is None:
            return refused("this console has no sign-in with an identity provider", 404)
        q = request.query_params
        said = q.get("error")
        if said:
            return refused(f"the identity provider did not sign you in: {said[:200]}", 401)
        try:
            principal = await signin.finish(
                base, q.get("code", ""), q.get("state", ""), request.cookies.get(OAUTH_COOKIE, "")
            )
        except SignInError as exc:
            return refused(str(exc), 401)
        response = signed_in(request, principal)
        response.delete_cookie(OAUTH_COOKIE, path=base or "/")
        return response

    async def logout(request: Request) -> Response:
        done = await checked(request)
        if isinstance(done, Response):
            return done
        sessions.pop(request.cookies.get(COOKIE, ""), None)
        response = RedirectResponse(f"{base}/login", 303, headers=_HEADERS)
        response.delete_cookie(COOKIE)
        return response

    def row(r: ApprovalRequest, who: _Session, actions: bool) -> str:
        now = time.time()
        age = int(now - r.created)
        cells = [
            f"<td><code>{_esc(r.id)}</code><br>{_esc(r.state(now))}</td>",
            f"<td>{_esc(r.subject or '(anonymous)')}</td>",
            f"<td><strong>{_esc(r.tool)}</strong><br>{_esc(r.reason)}</td>",
            f"<td><pre>{_esc(r.arguments)}</pre></td>",
            f'<td class="age">{age} s ago<br>until {_esc(_when(r.expires))}</td>',
        ]
        if actions:
            cells.append(
                "<td>"
                f'<form method="post" action="{base}/requests/{_esc(r.id)}/answer">{_csrf(who)}'
                '<input type="text" name="reason" placeholder="reason" maxlength="2000"> '
                '<button type="submit" name="answer" value="approve">Approve</button> '
                '<button type="submit" name="answer" value="deny">Deny</button>'
                "<details><summary>Approve with other arguments</summary>"
                '<textarea name="arguments" rows="6" cols="32" maxlength="65536">'
                f"{_esc(r.arguments)}</textarea></details>"
                "</form></td>"
            )
        else:
            said = f": {r.answer}" if r.answer else ""
            edit = f"<br>with other arguments:<pre>{_esc(r.edited)}</pre>" if r.edited else ""
            cells.append(f"<td>{_esc(r.answered_by)}{_esc(said)}{edit}</td>")
        return f'<tr id="{_esc(r.id)}">{"".join(cells)}</tr>'

    def table(found: list[ApprovalRequest], who: _Session, actions: bool) -> str:
        if not found:
            return "<p>Nothing here.</p>"
        last = "Answer" if actions else "Answered by"
        head = "".join(
            f"<th>{_esc(h)}</th>" for h in ("Request", "Asked by", "Tool", "Arguments", "Age", last)
        )
        rows = "".join(row(r, who, actions) for r in found)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"

    async def waiting(request: Request) -> Response:
        who = session_of(request)
        if who is None:
            return RedirectResponse(f"{base}/login", 303, headers=_HEADERS)
        flash = request.query_params.get("done", "")
        # Only what an answer's redirect says (a link cannot put other words on the page).
        note = f'<p class="flash">{_esc(flash)}</p>' if _DONE.fullmatch(flash) else ""
        found = queue.pending()
        return page("Waiting for an answer", note + table(found, who, True), who=who)

    async def history(request: Request) -> Response:
        who = session_of(request)
        if who is None:
            return RedirectResponse(f"{base}/login", 303, headers=_HEADERS)
        q = request.query_params
        subject, tool, state = q.get("subject") or None, q.get("tool") or None, q.get("state")
        found = queue.history(subject=subject, tool=tool, state=state or None)
        filters = filter_form(
            "history",
            (("subject", "asked by", subject), ("tool", "tool", tool), ("state", "state", state)),
        )
        return page("History", filters + table(found, who, False), who=who)

    def filter_form(path: str, fields: Sequence[tuple[str, str, str | None]]) -> str:
        """A GET form of text fields (name, placeholder, value given) filtering a page."""
        inputs = "".join(
            f'<input type="text" name="{name}" placeholder="{label}" value="{_esc(value or "")}">'
            for name, label, value in fields
        )
        return (
            f'<form method="get" action="{base}/{path}">{inputs}'
            '<button type="submit">Filter</button></form>'
        )

    async def audit(request: Request) -> Response:
        who = session_of(request)
        if who is None:
            return RedirectResponse(f"{base}/login", 303, headers=_HEADERS)
        mine = readable(who)
        if not mine:
            return refused("no audit log here names you as one of its readers", 403, who)
        q = request.query_params
        subject, tool = q.get("subject") or None, q.get("tool") or None
        decision = q.get("decision") or None
        body = [
            filter_form(
                "audit",
                (
                    ("subject", "principal", subject),
                    ("tool", "tool (glob)", tool),
                    ("decision", "decision", decision),
                ),
            )
        ]
        for trail in mine:
            body.append(f"<h2>{_esc(trail.name)}</h2>")
            try:
                # Off the event loop: a gateway beside the console keeps serving while a
                # large log is read and its chain checked.
                check = await run_in_threadpool(trail.verify)
                found = await run_in_threadpool(
                    functools.partial(
                        trail.records,
                        limit=AUDIT_PAGE,
                        subject=subject,
                        tool=tool,
                        decision=decision,
                    )
                )
            except Exception as exc:  # a plugin's trail: say so, show the others
                body.append(f'<p class="error">cannot read it: {_esc(type(exc).__name__)}</p>')
                continue
            if check.whole:
                body.append(
                    f'<p class="flash" id="chain">The chain is whole: {_esc(check.records)} '
                    f"records; head <code>{_esc(check.head)}</code></p>"
                )
            else:
                body.append(
                    f'<p class="error" id="chain">The chain is BROKEN: {_esc(check.problem)} '
                    f"({_esc(check.records)} records before it are whole)</p>"
                )
            body.append(audit_table(found))
        return page("Audit log", "".join(body), who=who)

    def audit_table(found: Sequence[Mapping[str, Any]]) -> str:
        if not found:
            return "<p>No records.</p>"
        head = "".join(
            f"<th>{_esc(h)}</th>"
            for h in ("#", "Time", "Principal", "Event", "Tool", "Decision", "Arguments")
        )
        rows = []
        for r in found:
            principal = r.get("principal")
            who = principal.get("subject") if isinstance(principal, Mapping) else None
            shown = r.get("arguments")
            args = (
                json.dumps(shown, ensure_ascii=False, indent=1, default=str)
                if shown is not None
                else (r.get("fingerprint") or "")
            )
            reason, approval = r.get("reason"), r.get("approval")
            decided = f"{r.get('decision') or ''}" + (f": {reason}" if reason else "")
            if approval:  # which approval let it run (queue:apr_... by fran)
                decided += f" (approval: {approval})"
            rows.append(
                "<tr>"
                f"<td>{_esc(r.get('seq', ''))}</td><td>{_esc(r.get('time', ''))}</td>"
                f"<td>{_esc(who or '(anonymous)')}</td><td>{_esc(r.get('event', ''))}</td>"
                f"<td>{_esc(r.get('tool') or '')}</td><td>{_esc(decided)}</td>"
                f"<td><pre>{_esc(args)}</pre></td></tr>"
            )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    async def answer(request: Request) -> Response:
        done = await checked(request)
        if isinstance(done, Response):
            return done
        who, form = done
        request_id = request.path_params["request_id"]
        choice = form.get("answer")
        if choice not in ("approve", "deny"):
            return refused("answer approve or deny", 400, who)
        edited: Any = None
        held = queue.get(request_id)
        given = form.get("arguments", "").strip()
        if choice == "approve" and given and held is not None:
            try:
                edited = json.loads(given)
            except ValueError as exc:
                return refused(f"the arguments are not JSON: {exc}", 400, who)
            if edited == _shown(held.arguments):
                edited = None  # as asked: not an edit
        try:
            answered = queue.answer(
                request_id,
                approve=choice == "approve",
                by=who.principal,
                reason=form.get("reason", ""),
                arguments=edited,
            )
        except ApprovalError as exc:
            return refused(str(exc), 403, who)
        said = f"{answered.id} {answered.status}"
        return RedirectResponse(
            f"{base}/?" + urllib.parse.urlencode({"done": said}), 303, headers=_HEADERS
        )

    async def css(request: Request) -> Response:
        return Response(_CSS, media_type="text/css", headers=_HEADERS)

    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    middleware = (
        [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
    )
    return Starlette(
        middleware=middleware,
        routes=[
            Route("/", waiting),
            Route("/history", history),
            Route("/audit", audit),
            Route("/login", login_page, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/oauth/start", oauth_start),
            Route("/oauth/callback", oauth_callback),
            Route("/requests/{request_id}/answer", answer, methods=["POST"]),
            Route("/console.css", css),
        ],
    )


def open_console(
    queue: str | os.PathLike[str] | None,
    tokens: Mapping[str, Principal],
    *,
    base: str = "",
    host: str = "127.0.0.1",
    trails: Sequence[AuditTrail] | None = None,
    signin: SignIn | None = None,
) -> Any:
    """:func:`console_app` over the queue file ``queue`` (None: the default one), served on
    ``host`` (a loopback address: only loopback Host headers are answered); a queue that
    cannot be opened is a UsageError. ``trails``: the audit logs to show (None: those
    the installed policies offer)."""
    try:
        opened = ApprovalQueue(queue)
    except ApprovalError as exc:
        from toolwire.exceptions import UsageError

        raise UsageError(str(exc)) from None
    loopback = host in ("127.0.0.1", "::1", "localhost")
    allowed = ["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None
    if trails is None:
        from toolwire import get_host

        trails = get_host().audit_trails()
    return console_app(
        opened, tokens, base=base, allowed_hosts=allowed, trails=trails, signin=signin
    )


def beside(gateway: Any, panel: Any, prefix: str = "/console") -> Any:
    """One ASGI app: ``panel`` (the console, made with ``base=prefix``) for the paths
    under ``prefix``, with its own sign-in; ``gateway`` (its bearer tokens checked) for
    every other path."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path == prefix or path.startswith(prefix + "/"):
            root = scope.get("root_path", "")
            await panel({**scope, "root_path": root + prefix, "path": root + path}, receive, send)
            return
        await gateway(scope, receive, send)

    return app


def serve_console(
    *,
    tokens_file: str | None = None,
    oauth_file: str | None = None,
    queue: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
) -> None:
    """Serve the approval console (``toolwire mcp console``) until interrupted: the queue
    in ``queue`` (default: ``$XDG_DATA_HOME/toolwire/approvals.sqlite``), sign-in by the
    tokens ``tokens_file`` lists (as ``toolwire mcp serve --tokens`` reads it), or with
    the identity provider of ``oauth_file`` (its ``[console]`` table; the browser comes
    back to ``http://HOST:PORT/oauth/callback`` unless it names a ``redirect_uri``)."""
    import uvicorn

    from toolwire.exceptions import UsageError
    from toolwire_mcp.gateway._auth import load_tokens
    from toolwire_mcp.gateway._jwt import load_oauth

    if tokens_file is None and oauth_file is None:
        raise UsageError("the console needs --tokens or --oauth (how people sign in)")
    signin = None
    if oauth_file is not None:
        resource = load_oauth(oauth_file)
        shown = f"[{host}]" if ":" in host else host
        signin = SignIn(resource, origin=f"http://{shown}:{port}")
    tokens = load_tokens(tokens_file) if tokens_file is not None else {}
    app = open_console(queue, tokens, host=host, signin=signin)
    uvicorn.run(app, host=host, port=port, log_level="warning")
