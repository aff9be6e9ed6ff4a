"""Entry point: ``uv run python -m bench.run [--quick | --smoke] [--only S2,S3,pydantic-ai]``.

Prints one table (scenario x library: median with unit, and the median paired ratio to the
floor) and writes every sample to ``bench/results/latest.json``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/run.py` also works
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import _timing
from bench import scenarios as sc
from bench.fixture_tools import ASSISTANT_MESSAGE, TOOL_FUNCTIONS
from bench.runners import RUNNERS, Runner

MODES = {
    # reps: paired repetitions in process; target: ns per timed batch
    "full": sc.Config(
        "full",
        reps=60,
        heavy_reps=25,
        target_ns=50_000_000,
        warmup=5,
        cold_reps=15,
        import_reps=20,
        child_warmup=True,
    ),
    "quick": sc.Config(
        "quick",
        reps=15,
        heavy_reps=7,
        target_ns=10_000_000,
        warmup=3,
        cold_reps=3,
        import_reps=3,
        child_warmup=False,
    ),
    "smoke": sc.Config(
        "smoke",
        reps=2,
        heavy_reps=1,
        target_ns=0,
        warmup=1,
        cold_reps=1,
        import_reps=1,
        child_warmup=False,
        child_libs=False,
    ),
}
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="mode", const="quick", help="< 2 min")
    mode.add_argument(
        "--smoke", action="store_const", dest="mode", const="smoke", help="seconds; for the test"
    )
    mode.add_argument("--full", action="store_const", dest="mode", const="full", help="the default")
    p.set_defaults(mode="full")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated scenario ids and/or library names, e.g. S2,S3,pydantic-ai "
        f"(scenarios: {', '.join(sc.scenario_ids())}; libraries: "
        f"{', '.join(c.name for c in RUNNERS if c.name != 'floor')}); the floor always runs",
    )
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"default: {DEFAULT_JSON}")
    p.add_argument("--reps", type=int, help="override the repetitions of the chosen mode")
    return p.parse_args(argv)


def _version(dist: str | None) -> str | None:
    if dist is None:
        return None
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _check(floor: sc.State, state: sc.State) -> dict[str, Any]:
    """Correctness before timing: rendered tools, decoded inputs, results in call order."""
    r = state.runner
    problems: list[str] = []
    rendered = r.call("render", state.built)
    names = [t["function"]["name"] for t in rendered]
    if names != [f.__name__ for f in TOOL_FUNCTIONS]:
        problems.append(f"render: tool names/order differ: {names[:5]}...")
    for t in rendered:
        if (
            t.get("type") != "function"
            or t["function"].get("parameters", {}).get("type") != "object"
        ):
            problems.append(f"render: {t['function'].get('name')} is not an OpenAI function tool")
            break
    fns = {f.__name__: f for f in TOOL_FUNCTIONS}
    called = [fns[tc["function"]["name"]] for tc in ASSISTANT_MESSAGE["tool_calls"]]
    decoded_floor = floor.runner.call("decode", floor.prepared, ASSISTANT_MESSAGE)
    expected = [
        floor.runner.normalise_input(v, f) for v, f in zip(decoded_floor, called, strict=True)
    ]
    decoded = r.call("decode", state.prepared, ASSISTANT_MESSAGE)
    got = [r.normalise_input(v, f) for v, f in zip(decoded, called, strict=True)]
    if got != expected:
        for i, (g, e) in enumerate(zip(got, expected, strict=False)):
            if g != e:
                problems.append(f"decode: call {i}: {g!r} != floor {e!r}")
        if len(got) != len(expected):
            problems.append(f"decode: {len(got)} inputs, expected {len(expected)}")
    results = [r.result_parts(m) for m in r.call("round", state.prepared, ASSISTANT_MESSAGE)]
    want = [
        (tc["id"], f"{tc['function']['name']} ok: input {i}")
        for i, tc in enumerate(ASSISTANT_MESSAGE["tool_calls"])
    ]
    if results != want:
        problems.append(f"round: results {results!r} != expected {want!r}")
    return {"passed": not problems, "problems": problems}


def _setup(runner: Runner) -> sc.State:
    runner.setup()
    state = sc.State(runner)
    state.built = runner.build(TOOL_FUNCTIONS)
    state.prepared = runner.call("prepare", state.built)
    return state


def _cpu_since(start: os.times_result) -> dict[str, float]:
    """CPU seconds used since ``start``: this process, its (waited-for) children, total.

    On a loaded machine wall time stretches but CPU time does not: report both.
    """
    now = os.times()
    own = (now.user - start.user) + (now.system - start.system)
    children = (now.children_user - start.children_user) + (
        now.children_system - start.children_system
    )
    return {
        "self": round(own, 2),
        "children": round(children, 2),
        "total": round(own + children, 2),
    }


def fmt_value(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def render_table(rows: list[dict[str, Any]], libs: list[str]) -> str:
    header = ["scenario", "unit", "floor", *libs]
    lines = [header]
    notes: dict[str, int] = {}
    for row in rows:
        cells = [row["label"], row["unit"]]
        cells.append(fmt_value(row["floor"]["median"]) if row.get("floor") else "-")
        for lib in libs:
            entry = row["libs"].get(lib)
            if entry is None:
                cells.append("")
            elif "skipped" in entry:
                key = entry["skipped"]
                notes.setdefault(key, len(notes) + 1)
                cells.append(f"skip[{notes[key]}]")
            else:
                cell = fmt_value(entry["median"])
                if "ratio" in entry:
                    cell += f" ({entry['ratio']:.2f}x)"
                cells.append(cell)
        lines.append(cells)
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append(
            "| " + " | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
        )
        if n == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for reason, n in notes.items():
        out.append(f"[{n}] {reason}")
    return "\n".join(out)


def _no_ambient_policy() -> None:
    """Measure toolwire itself: no policy file from the machine (``~/.config/toolwire``)
    or the working directory (the repository's example ``toolwire-policy.toml``) may
    apply to the runs, as in the tests. A policy's own cost is not what S1-S4 measure."""
    import tempfile

    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="bench-config-")
    os.environ.pop("TOOLWIRE_POLICY", None)
    os.chdir(tempfile.mkdtemp(prefix="bench-cwd-"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.json = args.json.resolve()
    _no_ambient_policy()
    config = MODES[args.mode]
    if args.reps:
        config = sc.Config(**{**config.__dict__, "reps": args.reps})
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    known_scen = set(sc.scenario_ids())
    known_libs = {c.name for c in RUNNERS}
    unknown = only - known_scen - known_libs
    if unknown:
        print(
            f"--only: unknown {sorted(unknown)}; "
            f"scenarios {sorted(known_scen)}, libraries {sorted(known_libs)}",
            file=sys.stderr,
        )
        return 2
    want_scen = [s for s in sc.SCENARIOS if not (only & known_scen) or s.id in only]
    want_libs = [
        c for c in RUNNERS if c.name != "floor" and (not (only & known_libs) or c.name in only)
    ]

    started = time.perf_counter()
    cpu_started = os.times()
    floor_cls = RUNNERS[0]
    floor = _setup(floor_cls())
    libs: dict[str, sc.State] = {}
    skipped: dict[str, str] = {}
    checks: dict[str, Any] = {}
    for cls in want_libs:
        runner = cls()
        reason = runner.unavailable_reason()
        if reason:
            skipped[cls.name] = reason
            print(f"skip {cls.name}: {reason}", file=sys.stderr)
            continue
        try:
            state = _setup(runner)
            check = _check(floor, state)
        except Exception as exc:
            check = {
                "passed": False,
                "problems": [f"{type(exc).__name__}: {exc}", traceback.format_exc()],
            }
        checks[cls.name] = check
        if check["passed"]:
            libs[cls.name] = state
            print(f"check {cls.name}: ok", file=sys.stderr)
        else:
            skipped[cls.name] = f"{cls.name} failed its correctness check (see JSON)"
            print(f"check {cls.name}: FAILED\n  " + "\n  ".join(check["problems"]), file=sys.stderr)
    checks["floor"] = {"passed": True, "problems": []}

    if {s.id for s in want_scen} & {"S1", "S4", "discovery"}:
        statements = ["import bench.runners", "import bench._cold", floor.runner.import_statement]
        if config.child_libs:
            statements += [
                c.import_statement
                for c in want_libs
                if c.import_statement and sc._module_installed(c.module)
            ]
        if "toolwire" in libs:
            statements.append("import toolwire._plugins")
        took = _timing.warm_bytecode(statements)
        print(f"bytecode cache warm ({took:.1f} s, {_timing.PYCACHE})", file=sys.stderr)

    bench = sc.Bench(config=config, floor=floor, libs=libs, skipped=skipped)
    rows: list[dict[str, Any]] = []
    scenario_notes: dict[str, str] = {}
    for scen in want_scen:
        t0 = time.perf_counter()
        print(f"running {scen.id}: {scen.description}", file=sys.stderr)
        new_rows = scen.run(bench)
        for row in new_rows:
            if row.get("skipped"):
                scenario_notes[row["label"]] = row["skipped"]
                print(f"  {row['label']}: skipped: {row['skipped']}")
            else:
                rows.append(row)
        print(f"  {scen.id} took {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    for st in [floor, *libs.values()]:
        st.runner.close()

    lib_names = [c.name for c in want_libs]
    print()
    print(f"toolwire bench ({config.mode}; medians; ratio = median of paired ratios to the floor)")
    print(render_table(rows, lib_names))

    results = {
        "meta": {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "mode": config.mode,
            "config": config.__dict__,
            "python": sys.version,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "gc": "disabled during each timed batch; "
            "gc.collect() + gc.freeze() before each scenario",
            "ratio": "per repetition, floor and library timed back to back in one process "
            "(order alternating); the ratio reported is the median of those ratios",
            "elapsed_s": round(time.perf_counter() - started, 2),
            "cpu_s": _cpu_since(cpu_started),
        },
        "libraries": {
            c.name: {
                "version": _version(c.distribution),
                "paths": c.paths,
                "status": "measured"
                if c.name in libs or c.name == "floor"
                else skipped.get(c.name),
            }
            for c in [floor_cls, *want_libs]
        },
        "checks": checks,
        "skipped_scenarios": scenario_notes,
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(sc.dump(results))
    cpu = results["meta"]["cpu_s"]
    print(
        f"\nwrote {args.json} ({results['meta']['elapsed_s']} s wall; CPU {cpu['total']} s = "
        f"{cpu['self']} s harness + {cpu['children']} s child processes)"
    )
    failed = [name for name, c in checks.items() if not c["passed"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
