"""A policy decision per call, toolwire-policy's TOML beside a Cedar policy set:
``uv run python -m bench.policy_engines [--quick] [--json OUT]``.

A catalogue of 50 and of 500 tools; a policy that allows the read tools, asks approval for
the mutating ones and forbids a constraint's pattern, written once in TOML and once in
Cedar (pre-parsed policy set, one request per call; the principal's entities parsed once),
and Cedar validated against the catalogue's generated schema (parsed once). Each engine
decides the same calls (a tool picked in turn, a principal with two groups), no audit
log: the decision alone.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import toolwire as tw


def _catalogue(n: int) -> list[tw.Tool[Any, Any]]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    effects = ("read_only", "mutating")
    return [
        tw.raw_tool(f"tool_{i}", f"Tool {i}.", schema, lambda **a: "ok", effect=effects[i % 2])
        for i in range(n)
    ]


def _toml(n: int) -> str:
    reads = ", ".join(f'"tool_{i}"' for i in range(0, n, 2))
    writes = ", ".join(f'"tool_{i}"' for i in range(1, n, 2))
    return (
        f"allow = [{reads}, {writes}]\napprove = [{writes}]\n\n"
        "[[constraints]]\narguments = [\"path\"]\ndeny_patterns = ['\\.env$']\n"
    )


def _cedar(n: int) -> str:
    reads = ", ".join(f'Toolwire::Action::"tool_{i}"' for i in range(0, n, 2))
    writes = ", ".join(f'Toolwire::Action::"tool_{i}"' for i in range(1, n, 2))
    return (
        f'@id("reads")\npermit(principal, action in [{reads}], resource);\n\n'
        f'@id("writes")\n@approval("a write")\n'
        f"permit(principal, action in [{writes}], resource);\n\n"
        '@id("no-env")\nforbid(principal, action, resource) when '
        '{ context.input has path && context.input.path like "*.env" };\n'
    )


def _calls(tools: list[tw.Tool[Any, Any]], n: int) -> list[tw.TypedCall[Any]]:
    calls = []
    for i in range(n):
        tool = tools[(i * 7) % len(tools)]
        value = {"path": "notes.txt" if i % 5 else "prod.env"}
        calls.append(tw.TypedCall(tw.ToolCall(f"c{i}", tool.name, json.dumps(value)), tool, value))
    return calls


def _per_call(decide: Any, calls: list[tw.TypedCall[Any]], context: tw.HookContext) -> float:
    start = time.perf_counter()
    for call in calls:
        decide(call, context)
    return (time.perf_counter() - start) / len(calls)


def measure(rounds: int, per_round: int) -> dict[str, Any]:
    from toolwire_cedar import CedarPolicy, schema_for
    from toolwire_policy import Policy

    started = time.monotonic()
    context = tw.HookContext(principal=tw.Principal("alice", groups=frozenset({"ops", "dev"})))
    rows = []
    for n in (50, 500):
        tools = _catalogue(n)
        calls = _calls(tools, per_round)
        toml = Policy.from_text(_toml(n))
        cedar = CedarPolicy(_cedar(n), source="bench.cedar")
        typed = CedarPolicy(_cedar(n), source="bench.cedar", schema=schema_for(tools)[0])
        # Both decide alike (the bench would be meaningless otherwise).
        for call in calls[:50]:
            t, c = toml.check(call, context), cedar.decide(call, context)
            t_allowed = getattr(t, "allowed", False)
            assert t_allowed == (c.allowed and c.approval is None), call.name
            assert c == typed.decide(call, context), call.name

        toml_runs, cedar_runs, typed_runs = [], [], []
        for _ in range(rounds):
            toml_runs.append(_per_call(toml.check, calls, context))
            cedar_runs.append(_per_call(cedar.decide, calls, context))
            typed_runs.append(_per_call(typed.decide, calls, context))
        row = {
            "tools": n,
            "toml_us": statistics.median(toml_runs) * 1e6,
            "cedar_us": statistics.median(cedar_runs) * 1e6,
            "cedar_schema_us": statistics.median(typed_runs) * 1e6,
        }
        rows.append(row)
        print(
            f"{n:>4} tools: toolwire-policy {row['toml_us']:7.1f} µs/decision, "
            f"Cedar {row['cedar_us']:7.1f} µs/decision, "
            f"with its schema {row['cedar_schema_us']:7.1f} µs/decision",
            flush=True,
        )
    import importlib.metadata as md

    return {
        "meta": {
            "date": _dt.date.today().isoformat(),
            "elapsed_s": round(time.monotonic() - started),
            "rounds": rounds,
            "calls": per_round,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "cedarpy": md.version("cedarpy"),
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few rounds")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    results = measure(3 if args.quick else 15, 200 if args.quick else 2000)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
