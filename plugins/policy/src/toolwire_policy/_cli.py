"""The policy's command-line arguments (``toolwire-policy`` and ``toolwire policy``), alone:
``toolwire --help`` reads them, so this imports nothing but argparse and pathlib."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["ABOUT", "arguments"]

ABOUT = (
    "the policy: its audit log's chain and records, why a tool is allowed or denied for a "
    "principal, its cases and replays, and the approval queue"
)


def arguments(p: argparse.ArgumentParser) -> None:
    """The commands (``toolwire-policy COMMAND``, ``toolwire policy COMMAND``) on ``p``."""
    sub = p.add_subparsers(
        dest="policy_command", metavar="COMMAND", required=True, help="one of the commands below"
    )
    about = (
        "trust this project's ./toolwire-policy.toml as it is now, so it applies to commands "
        "run here (a changed file blocks every tool until trusted again)"
    )
    trust = sub.add_parser("trust", help=about, description=about)
    trust.add_argument(
        "file", nargs="?", type=Path, help="the file (default: ./toolwire-policy.toml)"
    )
    trust.add_argument("--remove", action="store_true", help="forget the file instead")
    about = "verify or read an audit log"
    audit = sub.add_parser("audit", help=about, description=about)
    asub = audit.add_subparsers(dest="action", metavar="ACTION", required=True, help="verify, show")
    about = "check the hash chain; name the first broken record"
    verify = asub.add_parser("verify", help=about, description=about)
    verify.add_argument("file", type=Path, help="the audit log (JSON lines)")
    verify.add_argument(
        "--accept-break",
        dest="accept_breaks",
        type=int,
        action="append",
        default=[],
        metavar="LINE",
        help="the record cut short at LINE (a crash, a full disk) is a known break: verify "
        "the chain that starts after it",
    )
    verify.add_argument(
        "--head",
        dest="heads",
        action="append",
        default=[],
        metavar="DIGEST",
        help="a head digest verify printed before and kept elsewhere: it must still be a "
        "record of the log (a chain rewritten from an earlier record fails)",
    )
    about = "the records, filtered"
    show = asub.add_parser("show", help=about, description=about)
    show.add_argument("file", type=Path, help="the audit log (JSON lines)")
    show.add_argument("--as", dest="subject", metavar="SUBJECT", help="only this principal's")
    show.add_argument("--since", metavar="DURATION", help="only the last 30m, 1h, 2d ...")
    show.add_argument("--tool", metavar="GLOB", help="only these tools'")
    show.add_argument("--json", action="store_true", help="the records as JSON lines")
    about = "what the policy decides for a tool and a principal"
    explain = sub.add_parser("explain", help=about, description=about)
    explain.add_argument("tool", help="the tool's name, as the assembled toolset has it")
    explain.add_argument("--as", dest="subject", metavar="SUBJECT", help="the principal")
    explain.add_argument(
        "--group",
        dest="groups",
        action="append",
        default=[],
        metavar="G",
        help="a group of the principal (repeatable)",
    )
    explain.add_argument("--method", default="app", help="how the principal was established")
    explain.add_argument("--policy", type=Path, help="this policy file (default: the one in force)")
    _app_option(explain)
    explain.add_argument("--json", action="store_true", help="print JSON")
    about = (
        "load the policy and report every rule that names no tool or server in the assembled "
        "catalogue (a renamed tool silently stops matching the rules that named it)"
    )
    check = sub.add_parser("check", help=about, description=about)
    check.add_argument("--policy", type=Path, help="this policy file (default: the one in force)")
    _app_option(check)
    check.add_argument("--strict", action="store_true", help="a rule that names nothing fails")
    check.add_argument("--json", action="store_true", help="print JSON")
    about = "decide each case of a test file (principal, tool, arguments, expected decision)"
    test = sub.add_parser("test", help=about, description=about)
    test.add_argument("cases", type=Path, help="the cases file (TOML, [[cases]] tables)")
    test.add_argument("--policy", type=Path, help="this policy file (default: the one in force)")
    _app_option(test)
    test.add_argument("--json", action="store_true", help="print JSON")
    about = "re-decide every call an audit log records under a candidate policy file"
    replay = sub.add_parser("replay", help=about, description=about)
    replay.add_argument("log", type=Path, help="the audit log")
    replay.add_argument("--candidate", type=Path, required=True, help="the policy file to try")
    _app_option(replay)
    replay.add_argument("--json", action="store_true", help="print JSON")
    about = (
        "the approval queue: the requests waiting, their history, and answering one (as this "
        "machine's user, with their groups)"
    )
    approvals = sub.add_parser("approvals", help=about, description=about)
    qsub = approvals.add_subparsers(
        dest="action", metavar="ACTION", required=True, help="one of the actions below"
    )
    for action, text in (
        ("list", "the requests waiting for an answer"),
        ("history", "every request, newest first"),
        ("show", "one request, its arguments in full"),
        ("approve", "approve a request: its call runs once, when it is made again"),
        ("deny", "deny a request, saying why"),
        ("wait", "wait until a request is answered or expires"),
    ):
        one = qsub.add_parser(action, help=text, description=text)
        if action not in ("list", "history"):
            one.add_argument("id", help="the request's id (apr_...)")
        where = one.add_mutually_exclusive_group()
        where.add_argument("--queue", type=Path, help="the queue's file")
        where.add_argument(
            "--policy",
            type=Path,
            help="the queue this policy file names (default: the one in force)",
        )
        if action in ("approve", "deny"):
            one.add_argument("--reason", default="", help="why (the model reads a denial's)")
        if action == "approve":
            one.add_argument(
                "--arguments",
                metavar="JSON",
                help="approve the call with these arguments instead (a JSON object, checked "
                "against the tool's schema; the policy decides the edited call again)",
            )
        if action == "wait":
            one.add_argument("--timeout", type=float, default=3600.0, help="seconds (3600)")
        if action == "history":
            one.add_argument("--as", dest="subject", help="only requests of this subject")
            one.add_argument("--tool", help="only requests for this tool")
            one.add_argument("--state", help="pending, approved, denied, spent, expired")
        one.add_argument("--json", action="store_true", help="print JSON")


def _app_option(parser: argparse.ArgumentParser) -> None:
    """``--app MODULE:ATTR``, as every command that assembles the catalogue takes it."""
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="the application's Toolset, the installed packs' tools assembled into it",
    )
