"""``toolwire-cedar``: the Cedar schema of the assembled catalogue, and a policy's check.

    toolwire-cedar schema [--app MODULE:ATTR] [--out FILE]
    toolwire-cedar check POLICY [--schema FILE] [--app MODULE:ATTR] [--strict]

``check`` parses the policy, validates it against the schema when given, and warns of
each policy whose action or resource names nothing in the assembled catalogue, with the
nearest real names (``--strict``: an error).

Exit status: 0 ok; 1 the policy does not parse or validate, or (``--strict``) names what
is not in the catalogue; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toolwire-cedar", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    schema = sub.add_parser("schema", help="write the Cedar schema of the assembled catalogue")
    schema.add_argument("--app", metavar="MODULE:ATTR", help="the application's Toolset too")
    schema.add_argument("--out", type=Path, help="write it here (default: standard output)")
    check = sub.add_parser("check", help="parse a Cedar policy, and validate it against a schema")
    check.add_argument("policy", type=Path)
    check.add_argument("--schema", type=Path, help="the Cedar schema (JSON)")
    check.add_argument("--app", metavar="MODULE:ATTR", help="the application's Toolset too")
    check.add_argument(
        "--strict", action="store_true", help="a policy naming no tool or toolset is an error"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from toolwire.adapters import terminal_text
    from toolwire_cedar._engine import CedarPolicy, CedarPolicyError, schema_for

    args = _parser().parse_args(argv)
    from toolwire import get_host
    from toolwire_policy.__main__ import _app, _Usage

    try:
        app = _app(args.app) if args.app else None
    except _Usage as exc:
        print(f"toolwire-cedar: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "check":
        try:
            policy = CedarPolicy.from_files(args.policy, args.schema)
        except CedarPolicyError as exc:
            print(terminal_text(str(exc)), file=sys.stderr)
            return 1
        tools = get_host().assemble(app).tools()
        findings = policy.lint(tools)
        for line in findings:
            print(terminal_text(f"warning: {line}", multiline=False))
        validated = f", validated against {args.schema}" if args.schema else ""
        verdict = "ok" if not findings else f"{len(findings)} name(s) match nothing"
        print(f"{args.policy}: {verdict} ({len(tools)} tools in the catalogue{validated})")
        return 1 if findings and args.strict else 0
    tools = get_host().assemble(app).tools()
    schema, untyped = schema_for(tools)
    text = json.dumps(schema, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    for lost in untyped:  # said, not silently dropped
        print(f"toolwire-cedar: Cedar has no type for {lost}: left out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
