"""``toolwire-policy``: check an audit log's chain, read it, and explain a decision.

    toolwire-policy trust [FILE] [--remove]
    toolwire-policy audit verify FILE [--accept-break LINE ...] [--head DIGEST ...]
    toolwire-policy audit show FILE [--as SUBJECT] [--since 1h] [--tool GLOB] [--json]
    toolwire-policy explain TOOL [--as SUBJECT [--group G ...] [--method M]] [--policy FILE]
                                 [--app MODULE:ATTR]
    toolwire-policy check [--policy FILE] [--app MODULE:ATTR] [--strict] [--json]
    toolwire-policy test CASES [--policy FILE] [--app MODULE:ATTR] [--json]
    toolwire-policy replay AUDIT_LOG --candidate FILE [--app MODULE:ATTR] [--json]
    toolwire-policy approvals list|history|show ID|approve ID|deny ID|wait ID
                              [--queue FILE | --policy FILE] [--reason TEXT] [--json]

Exit status: 0 ok; 1 the chain is broken (verify), the tool is denied (explain), or the
policy does not load, or a rule names nothing and --strict was given (check), or a case
decided otherwise than it expects (test), or a recorded decision would change under the
candidate (replay), or a request cannot be answered, or was denied or expired (approvals);
2 usage error (an unreadable file, an unknown tool, a bad duration).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from toolwire.adapters import terminal_text
from toolwire_policy._cli import ABOUT, arguments

__all__ = ["main"]

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class _Usage(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toolwire-policy", description=f"toolwire-policy: {ABOUT}")
    arguments(p)
    return p


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    m = _DURATION.match(text.strip())
    if not m:
        raise _Usage(f"--since takes a duration like 30m, 1h or 2d, got {text!r}")
    return datetime.now(UTC) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def _when(record: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(record.get("time", "")).replace("Z", "+00:00"))
    except ValueError:
        return None


def _verify(path: Path, accept_breaks: list[int], heads: list[str]) -> int:
    from toolwire_policy._audit import verify_log

    report = verify_log(path, accept_breaks=accept_breaks, heads=heads)
    if report.ok:
        if report.breaks:
            at = ", ".join(str(n) for n in report.breaks)
            print(
                f"{path}: {report.records} records in {report.segments} chains, each whole; "
                f"records cut short at line(s) {at}, accepted; head {report.head}"
            )
        else:
            print(f"{path}: {report.records} records, the chain is whole; head {report.head}")
        return 0
    print(f"{path}: BROKEN at line {report.line}: {report.problem}", file=sys.stderr)
    print(f"(the {report.records} records before it are whole)", file=sys.stderr)
    return 1


def _show(args: argparse.Namespace) -> int:
    from toolwire_policy._audit import read_records

    since = _since(args.since)
    for number, _, record in read_records(args.file):
        if record is None:
            print(f"line {number}: not a record", file=sys.stderr)
            continue
        principal = record.get("principal") or {}
        if args.subject is not None and principal.get("subject") != args.subject:
            continue
        if args.tool is not None and not fnmatch.fnmatchcase(str(record.get("tool")), args.tool):
            continue
        when = _when(record)
        if since is not None and (when is None or when < since):
            continue
        # A record holds what a model, a tool and a caller chose: nothing in it may act on
        # the terminal, and a newline in a field cannot print a fake record.
        if args.json:
            print(terminal_text(json.dumps(record, ensure_ascii=False), multiline=False))
            continue
        who = principal.get("subject") or "(anonymous)"
        reason = f": {record['reason']}" if record.get("reason") else ""
        line = (
            f"{record.get('seq', '?'):>6} {record.get('time')} {who:<16} "
            f"{record.get('event')} {record.get('tool')} {record.get('decision')}{reason}"
        )
        print(terminal_text(line, multiline=False))
    return 0


def _app(spec: str) -> Any:
    import importlib
    import os

    from toolwire import Toolset

    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise _Usage(f"--app takes MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise _Usage(f"--app {spec}: {exc}") from None
    if not isinstance(found, Toolset):
        raise _Usage(f"--app {spec} is a {type(found).__name__}, not a toolwire.Toolset")
    return found


def _explain(args: argparse.Namespace) -> int:
    from toolwire import Principal, get_host
    from toolwire_policy._config import find_policy_file
    from toolwire_policy._policy import Policy

    path = args.policy or find_policy_file()
    if path is None:
        raise _Usage("no policy file is in force (and none was given with --policy)")
    policy = Policy.from_file(path)
    tools = get_host().assemble(_app(args.app) if args.app else None)
    tool = tools.get(args.tool)
    if tool is None:
        names = [t.name for t in tools.tools()]
        near = difflib.get_close_matches(args.tool, names, n=1)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        if not args.app:  # an application's own tools are only known from its toolset
            hint += "; an application's tool needs --app MODULE:ATTR (its Toolset)"
        known = ", ".join(names) or "none"
        raise _Usage(f"no tool `{args.tool}` in the assembled toolset (known: {known}){hint}")
    principal = None
    if args.subject is not None:
        principal = Principal(args.subject, groups=args.groups, method=args.method)
    elif args.groups:
        raise _Usage("--group needs --as (whose group it is)")
    found = policy.explain(tool, principal)
    if args.json:
        print(terminal_text(json.dumps({"policy": str(path), **found}, indent=2)))
    else:
        who = f"`{principal.subject}`" if principal else "an anonymous caller"
        lines = [f"{found['tool']} for {who}: {found['decision']}"]
        if found["reason"]:
            lines.append(f"  why: {found['reason']}")
        lines.append(f"  decided by: {found['rule']} of {path}")
        for line in lines:  # a tool's name is its maker's choice: escaped
            print(terminal_text(line, multiline=False))
    return 1 if found["decision"] == "deny" else 0


def _check(args: argparse.Namespace) -> int:
    from toolwire import get_host
    from toolwire_policy._config import PolicyFileError, find_policy_file
    from toolwire_policy._policy import Policy, finding_text

    path = args.policy or find_policy_file()
    if path is None:
        raise _Usage("no policy file is in force (and none was given with --policy)")
    try:
        policy = Policy.from_file(path)
    except PolicyFileError as exc:
        print(terminal_text(str(exc)), file=sys.stderr)
        return 1
    tools = get_host().assemble(_app(args.app) if args.app else None).tools()
    findings = policy.lint(tools)
    if args.json:
        out = {"policy": str(path), "tools": len(tools), "unmatched": findings}
        print(terminal_text(json.dumps(out, indent=2)))
    else:
        for f in findings:
            print(terminal_text(f"warning: {finding_text(f)}", multiline=False))
        verdict = "ok" if not findings else f"{len(findings)} rule(s) name nothing"
        print(f"{path}: {verdict} ({len(tools)} tools in the catalogue)")
    return 1 if findings and args.strict else 0


def _test(args: argparse.Namespace) -> int:
    from toolwire import get_host
    from toolwire_policy._cases import load_cases, run_cases
    from toolwire_policy._config import PolicyFileError, find_policy_file

    path = args.policy or find_policy_file()
    if path is None:
        raise _Usage("no policy file is in force (and none was given with --policy)")
    try:
        cases = load_cases(args.cases)
    except PolicyFileError as exc:
        raise _Usage(str(exc)) from None
    tools = get_host().assemble(_app(args.app) if args.app else None)
    catalogue = {t.name: t for t in tools.tools()}
    try:
        results = run_cases(path, cases, catalogue)
    except PolicyFileError as exc:
        print(terminal_text(str(exc)), file=sys.stderr)
        return 1
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    failed = [r for r in results if not r.passed]
    if args.json:
        rows = [
            {"case": r.label, "expect": r.case.expect, "got": r.got, "reason": r.reason}
            for r in results
        ]
        out = {"policy": str(path), "cases": len(results), "failed": len(failed), "results": rows}
        print(terminal_text(json.dumps(out, indent=2)))
    else:
        for r in results:
            if r.passed:
                line = f"ok    {r.label}: {r.got}"
            else:
                why = f" ({r.reason})" if r.reason else ""
                line = f"FAIL  {r.label}: expected {r.case.expect}, got {r.got}{why}"
            print(terminal_text(line, multiline=False))
        print(f"{len(results) - len(failed)} of {len(results)} cases as expected under {path}")
    return 1 if failed else 0


def _replay(args: argparse.Namespace) -> int:
    from toolwire import get_host
    from toolwire_policy._cases import replay
    from toolwire_policy._config import PolicyFileError

    if not args.log.is_file():
        raise _Usage(f"{args.log}: no such audit log")
    tools = get_host().assemble(_app(args.app) if args.app else None)
    catalogue = {t.name: t for t in tools.tools()}
    try:
        decided, changed = replay(args.candidate, args.log, catalogue)
    except PolicyFileError as exc:
        print(terminal_text(str(exc)), file=sys.stderr)
        return 1
    if args.json:
        out = {"candidate": str(args.candidate), "decided": decided, "changed": changed}
        print(terminal_text(json.dumps(out, indent=2)))
    else:
        for c in changed:
            who = c["principal"] or "(anonymous)"
            args_text = json.dumps(c["arguments"], ensure_ascii=False)
            line = f"line {c['line']}: {who} {c['tool']} {args_text}: {c['old']} -> {c['new']}" + (
                f" ({c['reason']})" if c["reason"] else ""
            )
            print(terminal_text(line, multiline=False))
        print(f"{len(changed)} of {decided} decisions would change under {args.candidate}")
    return 1 if changed else 0


def _trust(args: argparse.Namespace) -> int:
    from toolwire_policy._config import trust_policy_file, untrust_policy_file

    if args.remove:
        print("forgotten" if untrust_policy_file(args.file) else "it was not trusted")
        return 0
    path = trust_policy_file(args.file)
    print(f"trusted: {path.resolve()} applies to toolwire commands run in {path.resolve().parent}")
    return 0


def _queue(args: argparse.Namespace) -> Any:
    from toolwire.approvals import ApprovalQueue, default_queue_path
    from toolwire_policy._config import find_policy_file, read_policy_file

    if args.queue is not None:
        return ApprovalQueue(args.queue)
    path = args.policy or find_policy_file()
    if path is not None:
        from toolwire_policy._queue import open_queue

        config = read_policy_file(path)
        if config.approvals is not None:
            return open_queue(config.approvals, Path(path))
        if args.policy is not None:
            raise _Usage(f"{path} has no [approvals] table, so it files no requests")
    return ApprovalQueue(default_queue_path())


def _request_lines(r: Any) -> list[str]:
    when = datetime.fromtimestamp(r.created, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    until = datetime.fromtimestamp(r.expires, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        f"{r.id}  {r.state()}",
        f"  tool:      {r.tool}",
        f"  asked by:  {r.subject or '(anonymous)'} at {when}",
        f"  why:       {r.reason}",
        f"  approvers: {', '.join(r.approvers)} (until {until})",
    ]
    if r.answered_by:
        lines.append(f"  answered:  {r.answered_by}" + (f": {r.answer}" if r.answer else ""))
    lines.append("  arguments:")
    lines.extend("    " + line for line in r.arguments.splitlines())
    if r.edited is not None:
        lines.append(f"  approved with these instead: {r.edited}")
    return lines


def _approvals(args: argparse.Namespace) -> int:
    from toolwire.approvals import ApprovalError
    from toolwire_policy._queue import local_approver

    try:
        queue = _queue(args)
        if args.action in ("list", "history"):
            if args.action == "list":
                found = queue.pending()
            else:
                found = queue.history(subject=args.subject, tool=args.tool, state=args.state)
            if args.json:
                print(terminal_text(json.dumps([r.to_dict() for r in found], indent=2)))
            else:
                for r in found:
                    who = r.subject or "(anonymous)"
                    line = f"{r.id}  {r.state():8} {r.tool}  asked by {who}  ({r.reason})"
                    print(terminal_text(line, multiline=False))
                if not found:
                    print("no requests" if args.action == "history" else "no requests waiting")
            return 0
        if args.action == "show":
            request = queue.get(args.id)
            if request is None:
                raise ApprovalError(f"there is no approval request {args.id!r}")
        elif args.action == "wait":
            request = queue.wait(args.id, args.timeout)
        else:
            edited = None
            if getattr(args, "arguments", None) is not None:
                try:
                    edited = json.loads(args.arguments)
                except ValueError as exc:
                    raise _Usage(f"--arguments is not JSON: {exc}") from None
            request = queue.answer(
                args.id,
                approve=args.action == "approve",
                by=local_approver(),
                reason=args.reason,
                arguments=edited,
            )
    except ApprovalError as exc:
        print(terminal_text(f"toolwire-policy: {exc}", multiline=False), file=sys.stderr)
        return 1
    if args.json:
        print(terminal_text(json.dumps(request.to_dict(), indent=2)))
    else:
        print(terminal_text("\n".join(_request_lines(request))))
    if args.action == "wait":
        return 0 if request.state() in ("approved", "spent") else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_parser().parse_args(argv))


def run(args: argparse.Namespace, prog: str = "toolwire-policy") -> int:
    """Run the command ``args`` name (parsed by a parser :func:`arguments` filled)."""
    command = args.policy_command
    try:
        if command == "trust":
            return _trust(args)
        if command == "audit":
            if not args.file.is_file():
                raise _Usage(f"{args.file}: no such audit log")
            if args.action == "verify":
                return _verify(args.file, args.accept_breaks, args.heads)
            return _show(args)
        if command == "check":
            return _check(args)
        if command == "test":
            return _test(args)
        if command == "replay":
            return _replay(args)
        if command == "approvals":
            return _approvals(args)
        return _explain(args)
    except _Usage as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a policy file that does not load: said, not a traceback
        from toolwire.exceptions import ToolwireError

        if isinstance(exc, ToolwireError):
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
