"""The benchmark harness runs end to end (smoke mode) and every library passes its check.

Nothing here asserts anything about speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS = ("pydantic_ai", "langchain_core", "agents")


@pytest.fixture(scope="module")
def smoke_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    for module in PEERS:
        pytest.importorskip(module, reason="bench dependency group not installed")
    out = tmp_path_factory.mktemp("bench") / "results.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--json", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc, out


def test_smoke_run_exits_zero(smoke_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, _ = smoke_run
    assert 0 == proc.returncode, proc.stderr[-3000:]


def test_smoke_run_prints_the_table(
    smoke_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, _ = smoke_run
    header = next(line for line in proc.stdout.splitlines() if line.startswith("| scenario"))
    for column in ("floor", "pydantic-ai", "openai-agents", "langchain-core", "toolwire"):
        assert column in header
    for label in ("S1 cold", "S1 warm", "S1 re-render", "S2 decode", "S3 round", "S4 import"):
        assert any(line.startswith(f"| {label}") for line in proc.stdout.splitlines()), label


def test_smoke_run_writes_json_with_every_check_passed(
    smoke_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = smoke_run
    results = json.loads(out.read_text())
    checks = results["checks"]
    assert {"floor", "pydantic-ai", "openai-agents", "langchain-core"} <= set(checks)
    assert {} == {name: c["problems"] for name, c in checks.items() if not c["passed"]}
    assert "smoke" == results["meta"]["mode"]
    measured = {
        name for row in results["rows"] for name, entry in row["libs"].items() if "median" in entry
    }
    assert {"pydantic-ai", "openai-agents", "langchain-core"} <= measured
    # discovery and the executor's per-call overhead have no floor of their own
    assert all(row["floor"]["median"] > 0 for row in results["rows"] if row["floor"])


def test_toolwire_runs_every_scenario(
    smoke_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = smoke_run
    results = json.loads(out.read_text())
    assert {} == results["skipped_scenarios"]
    toolwire = {
        row["label"] for row in results["rows"] if "median" in row["libs"].get("toolwire", {})
    }
    for label in (
        "S2 decode",
        "S3 round",
        "hooks: S3 + 3 plugin hooks",
        "discovery: 50 plugin dists",
        "streaming: openai-chat",
        "executor: 8 parallel async tools",
        "executor overhead per call",
    ):
        assert label in toolwire, label


def test_the_bounds_are_measured_for_toolwire_only(
    smoke_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = smoke_run
    rows = {row["label"]: row for row in json.loads(out.read_text())["rows"]}
    for label in (
        "S2 bound: the returned objects alone",
        "S3 bound: the returned objects alone",
        "mcp bound: the SDK's Client across a loop thread",
    ):
        row = rows[label]
        assert row["floor"]["median"] > 0
        assert "ratio" in row["libs"]["toolwire"]
        others = {name: entry for name, entry in row["libs"].items() if name != "toolwire"}
        assert others
        reasons = {entry.get("skipped") for entry in others.values()}
        assert len(reasons) == 1
        assert "measured for toolwire only" in reasons.pop()


_BOUND_CHECK = """
from bench.fixture_tools import ASSISTANT_MESSAGE as M, TOOL_FUNCTIONS
from bench.runners.toolwire_runner import ToolwireRunner

runner = ToolwireRunner()
runner.setup()
prepared = runner.prepare(runner.build(TOOL_FUNCTIONS))
path, bound = runner.decode(prepared, M), runner.decode_objects(prepared, M)
assert len(path) == 8, path
assert [(c.call, c.tool, c.input) for c in path] == [(c.call, c.tool, c.input) for c in bound]
assert runner.round(prepared, M) == runner.round_objects(prepared, M)
runner.close()
print("same")
"""


def _says_same(script: str) -> None:
    """Run ``script`` in a fresh interpreter at the repository root: it prints "same"."""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (0, "same\n") == (proc.returncode, proc.stdout), proc.stderr[-3000:]


def test_the_bound_operations_make_what_the_paths_return() -> None:
    _says_same(_BOUND_CHECK)


def test_the_readme_results_are_written_from_a_run(
    smoke_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    # No figure in bench/README.md is typed by hand: bench.readme writes the run's table
    # and each target beside its measured ratio between the markers.
    _, out = smoke_run
    readme = tmp_path / "README.md"
    readme.write_text(
        "# bench\n\nbefore\n<!-- results:start -->\nSTALE\n<!-- results:end -->\nafter\n"
    )
    args = [sys.executable, "-m", "bench.readme", str(out), "--readme", str(readme)]
    assert 1 == subprocess.run([*args, "--check"], cwd=REPO_ROOT, check=False).returncode
    subprocess.run(args, cwd=REPO_ROOT, check=True)
    text = readme.read_text()
    assert "STALE" not in text
    assert text.startswith("# bench\n\nbefore\n<!-- results:start -->")
    assert text.endswith("<!-- results:end -->\nafter\n")
    results = json.loads(out.read_text())
    s2 = next(r for r in results["rows"] if r["label"].startswith("S2"))
    ratio = s2["libs"]["toolwire"]["ratio"]
    status = "met" if ratio <= 1.8 else "**missed**"
    assert f"| S2 decode <= 1.80x | {ratio:.2f}x | {status} |" in text
    assert 0 == subprocess.run([*args, "--check"], cwd=REPO_ROOT, check=False).returncode


def test_the_readme_has_the_results_markers() -> None:
    text = (REPO_ROOT / "bench" / "README.md").read_text()
    assert text.count("<!-- results:start -->") == 1
    assert text.index("<!-- results:start -->") < text.index("<!-- results:end -->")


def test_the_ray_section_is_written_from_a_ray_run(tmp_path: Path) -> None:
    # The shape bench.ray_backend writes (its numbers here are the test's own): the
    # section reports each row, the projection with its model, and the overhead target.
    run = {
        "meta": {
            "date": "2026-01-01 00:00 UTC",
            "mode": "quick",
            "calls": 40,
            "work_ms": 50.0,
            "cpus": 2,
            "python": "3.11.7",
            "platform": "Linux",
            "ray": "2.60.0",
            "elapsed_s": 20.0,
        },
        "throughput": [
            {"workers": 1, "inprocess_s": 2.0, "ray_s": 2.1},
            {"workers": 2, "inprocess_s": 2.0, "ray_s": 1.05},
        ],
        "overhead": {"toolwire_ms": 1.5, "raw_ms": 1.3, "ratio": 1.5 / 1.3},
        "projection": [{"workers": 4, "seconds": 0.52, "speedup": 3.85}],
    }
    out = tmp_path / "ray.json"
    out.write_text(json.dumps(run))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- ray:start -->\nSTALE\n<!-- ray:end -->\ny\n")
    args = [sys.executable, "-m", "bench.readme", "--ray", str(out), "--readme", str(readme)]
    subprocess.run(args, cwd=REPO_ROOT, check=True)
    text = readme.read_text()
    assert "STALE" not in text
    assert "| ray backend, 2 worker(s) (measured) | 1.05 | 1.90x |" in text
    assert "| ray backend, 4 workers (projected) | 0.52 | 3.85x |" in text
    assert "Per-call overhead: 1.15x raw (target <= 1.20x: met)." in text
    assert text.endswith("<!-- ray:end -->\ny\n")


def test_the_readme_has_the_ray_markers() -> None:
    text = (REPO_ROOT / "bench" / "README.md").read_text()
    assert text.count("<!-- ray:start -->") == 1
    assert text.index("<!-- ray:start -->") < text.index("<!-- ray:end -->")


def _gateway_row(tool: str, clients: int, toolwire_rps: float, toolwire_p99: float) -> Any:
    def cell(rps: float, p99: float) -> dict[str, float]:
        return {"rps": rps, "p50_ms": 1.0, "p99_ms": p99}

    row = {
        "tool": tool,
        "clients": clients,
        "calls": 100,
        "direct": cell(1000, 10),
        "null": cell(400, 20),
        "toolwire": cell(toolwire_rps, toolwire_p99),
        "fastmcp": cell(50, 300),
    }
    row["toolwire_vs_null"] = toolwire_rps / 400
    row["toolwire_p99_vs_null"] = toolwire_p99 / 20
    return row


@pytest.mark.parametrize(
    ("rps", "p99", "status"), [(360, 30, "met"), (300, 30, "**missed**"), (360, 50, "**missed**")]
)
def test_the_gateway_section_is_written_from_a_gateway_run(
    tmp_path: Path, rps: float, p99: float, status: str
) -> None:
    # The shape bench.gateway_load writes (the numbers are the test's own): every row, the
    # memory line, and the targets against the null proxy, met or missed.
    run = {
        "meta": {
            "mode": "smoke",
            "date": "2026-01-01",
            "elapsed_s": 9,
            "cpus": 2,
            "python": "3.11.7",
            "mcp": "2.3.0",
            "fastmcp": "4.2.3",
        },
        "rows": [_gateway_row("echo", 1, 380, 25), _gateway_row("echo", 64, rps, p99)],
        "memory": {"calls": 200, "sessions": 4, "rss_before_mb": 90.0, "rss_after_mb": 90.5},
        "audit_records": 1234,
    }
    data = tmp_path / "gateway.json"
    data.write_text(json.dumps(run))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- gateway:start -->\nSTALE\n<!-- gateway:end -->\ny\n")
    subprocess.run(
        [sys.executable, "-m", "bench.readme", "--gateway", str(data), "--readme", str(readme)],
        cwd=REPO_ROOT,
        check=True,
    )
    text = readme.read_text()
    assert "STALE" not in text
    assert "| echo | 1 | 1000/s, p50 1.0 ms, p99 10.0 ms | 400/s" in text
    assert "90.0 MB after warming, 90.5 MB after 200 more calls from 4 sessions" in text
    assert "opened and closed in turn (+0.5 MB); 1,234 audit records" in text
    assert f"the null proxy's: {status} in this run." in text


def test_the_readme_has_the_gateway_markers() -> None:
    text = (REPO_ROOT / "bench" / "README.md").read_text()
    assert text.count("<!-- gateway:start -->") == 1
    assert text.index("<!-- gateway:start -->") < text.index("<!-- gateway:end -->")


def _soak_run(**changes: Any) -> dict[str, Any]:
    """The shape bench.soak writes (the numbers are the test's own)."""
    run: dict[str, Any] = {
        "seconds": 120,
        "elapsed_s": 129.0,
        "load": {
            "calls": 900,
            "errors": 0,
            "first_error": None,
            "max_ms": 80.0,
            "calls_per_s": 7.0,
        },
        "abandoned": {"opened": 50, "refused": 70, "without_retry_after": 0, "other": 0},
        "crash": {
            "kills": 3,
            "calls": 60,
            "errors": 3,
            "unclear": 0,
            "max_error_s": 0.1,
            "recovered": 3,
        },
        "writer": {"kills": 5},
        "before": {"rss_mb": 90.0, "fds": 40, "threads": 3},
        "after": {"rss_mb": 91.0, "fds": 41, "threads": 3},
        "peak_rss_mb": 92.0,
        "audit": {
            "alice_decisions": 900,
            "alice_results": 900,
            "alice_calls_unmatched": 0,
            "writer_records": 4000,
            "torn_lines": 1,
            "records": 5800,
            "segments": 2,
            "breaks": 1,
            "problem": None,
        },
        "meta": {
            "date": "2026-01-01",
            "elapsed_s": 140,
            "cpus": 2,
            "python": "3.11.7",
            "mcp": "2.3.0",
        },
    }
    for path, value in changes.items():
        part, key = path.split("__")
        run[part] = {**run[part], key: value}
    return run


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({}, None),
        ({"load__errors": 2}, "2 of alice's calls failed"),
        ({"abandoned__without_retry_after": 1}, "1 503s said no Retry-After"),
        ({"abandoned__refused": 0}, "mallory's sessions were not capped"),
        ({"crash__unclear": 1}, "1 of bob's calls got no clear answer"),
        ({"crash__max_error_s": 6.0}, "an error took 6.0 s"),
        ({"crash__recovered": 1}, "a fresh server answered after 1 of 3 kills"),
        ({"after__rss_mb": 150.0}, "memory grew 90.0 -> 150.0 MB"),
        ({"after__fds": 60}, "descriptors grew 40 -> 60"),
        ({"audit__problem": "line 3 was edited"}, "does not verify: line 3 was edited"),
        ({"audit__alice_calls_unmatched": 2}, "2 of alice's calls lack a decision or a result"),
        ({"audit__alice_results": 899}, "alice made 900 calls; the log has 899 results"),
    ],
)
def test_the_soak_fails_on_each_thing_that_must_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any], said: str | None
) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    from bench.soak import _failures

    run = _soak_run(**changes)
    failures = _failures(run)
    assert failures == ([] if said is None else [f for f in failures if said in f])
    assert len(failures) == (0 if said is None else 1)
    run["failures"] = failures
    data = tmp_path / "soak.json"
    data.write_text(json.dumps(run))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- soak:start -->\nSTALE\n<!-- soak:end -->\ny\n")
    subprocess.run(
        [sys.executable, "-m", "bench.readme", "--soak", str(data), "--readme", str(readme)],
        cwd=REPO_ROOT,
        check=True,
    )
    text = readme.read_text()
    assert "STALE" not in text
    assert "| alice's load (16 sessions) | 900 calls at 7.0/s" in text
    if said is None:
        assert "Every check: held." in text
    else:
        assert said in text.split("Every check: **failed**: ")[1]


@pytest.mark.parametrize(("added", "status"), [(40.0, "met"), (400.0, "**missed**")])
def test_the_bridges_section_is_written_from_a_bridges_run(
    tmp_path: Path, added: float, status: str
) -> None:
    run = {
        "policy_floor_us": 70.0,
        "meta": {
            "date": "2026-01-01",
            "elapsed_s": 30,
            "rounds": 5,
            "calls": 20,
            "cpus": 2,
            "python": "3.11.7",
            "pydantic_ai": "2.68.0",
            "langchain": "1.4.7",
        },
        "rows": [
            {
                "framework": "pydantic-ai",
                "alone_us": 1500.0,
                "hook_us": 30.0,
                "bridge_us": added,
                "policy_us": 100.0,
                "governed_us": 1630.0 + added,
                "added_us": 130.0 + added,
                "allowed_us": 150.0,
                "met": added <= 150.0,
                "met_whole": False,
            }
        ],
    }
    data = tmp_path / "bridges.json"
    data.write_text(json.dumps(run))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- bridges:start -->\nSTALE\n<!-- bridges:end -->\ny\n")
    subprocess.run(
        [sys.executable, "-m", "bench.readme", "--bridges", str(data), "--readme", str(readme)],
        cwd=REPO_ROOT,
        check=True,
    )
    text = readme.read_text()
    assert "STALE" not in text
    assert (
        f"| pydantic-ai | 1500 | 30 µs | {added:.0f} µs | 100 µs "
        f"| {1630 + added:.0f} (+{130 + added:.0f}) | <= 150 µs | {status} |"
    ) in text
    assert "within 10% or 50 µs: 0 of 1 frameworks" in text
    assert "the two chained audit records): 70 µs" in text


def test_the_readme_has_the_soak_markers() -> None:
    text = (REPO_ROOT / "bench" / "README.md").read_text()
    assert text.count("<!-- soak:start -->") == 1
    assert text.index("<!-- soak:start -->") < text.index("<!-- soak:end -->")


_S1_BOUND_CHECK = """
import json, subprocess, sys
from bench.fixture_tools import TOOL_FUNCTIONS
from bench.runners.floor import FloorStrictBound
from bench.runners.toolwire_runner import ToolwireRunner

bound = FloorStrictBound()
bound.setup()
ours = ToolwireRunner()
ours.setup()
b = bound.render(bound.build(TOOL_FUNCTIONS))
t = ours.render(ours.build(TOOL_FUNCTIONS))
# The same compile work: each tool strict (or not) alike, the same properties required.
assert [f["function"].get("strict") for f in b] == [f["function"].get("strict") for f in t]
assert [sorted(f["function"]["parameters"]["required"]) for f in b] == [
    sorted(f["function"]["parameters"]["required"]) for f in t
]
child = subprocess.run([sys.executable, "-m", "bench._cold", "floor-strict-bound"],
                       capture_output=True, text=True, check=True)
assert json.loads(child.stdout.splitlines()[-1])["tools"] == len(TOOL_FUNCTIONS)
print("same")
"""


def test_the_s1_bound_compiles_what_toolwire_sends() -> None:
    # S1's bound (the floor's build and toolwire-openai's strict compile) must do the
    # compile work toolwire's render does, or it bounds nothing.
    _says_same(_S1_BOUND_CHECK)


@pytest.mark.parametrize("name", ["bridges", "engines", "soak", "approvals"])
def test_the_readme_has_each_generated_sections_markers(name: str) -> None:
    text = (REPO_ROOT / "bench" / "README.md").read_text()
    assert text.count(f"<!-- {name}:start -->") == 1
    assert text.index(f"<!-- {name}:start -->") < text.index(f"<!-- {name}:end -->")


def test_the_engines_section_is_written_from_an_engines_run(tmp_path: Path) -> None:
    run = {
        "meta": {
            "date": "2026-01-01",
            "elapsed_s": 3,
            "rounds": 3,
            "calls": 200,
            "cpus": 2,
            "python": "3.11.7",
            "cedarpy": "4.12.2",
        },
        "rows": [{"tools": 50, "toml_us": 6.7, "cedar_us": 94.8, "cedar_schema_us": 101.2}],
    }
    data = tmp_path / "engines.json"
    data.write_text(json.dumps(run))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- engines:start -->\nSTALE\n<!-- engines:end -->\ny\n")
    subprocess.run(
        [sys.executable, "-m", "bench.readme", "--engines", str(data), "--readme", str(readme)],
        cwd=REPO_ROOT,
        check=True,
    )
    text = readme.read_text()
    assert "STALE" not in text
    assert "| 50 | 6.7 | 94.8 | 101.2 |" in text


def test_the_approvals_bench_runs_and_its_section_is_written(tmp_path: Path) -> None:
    """bench.approvals --quick against a real console process, then its README section."""
    data = tmp_path / "approvals.json"
    subprocess.run(
        [sys.executable, "-m", "bench.approvals", "--quick", "--json", str(data)],
        cwd=REPO_ROOT,
        check=True,
        timeout=600,
    )
    run = json.loads(data.read_text())
    # Both stores (PostgreSQL's rows where a server can be started: always under CI).
    stores = ["sqlite", "postgresql"] if os.environ.get("CI") else ["sqlite"]
    seen = [(r["store"], r["waiting"]) for r in run["rows"]]
    assert [(s, n) for s in stores for n in (10, 1000)] == seen[: 2 * len(stores)]
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- approvals:start -->\nSTALE\n<!-- approvals:end -->\ny\n")
    subprocess.run(
        [sys.executable, "-m", "bench.readme", "--approvals", str(data), "--readme", str(readme)],
        cwd=REPO_ROOT,
        check=True,
    )
    text = readme.read_text()
    assert "STALE" not in text
    assert "| sqlite | 1,000 |" in text
    assert "against the target of 200 ms" in text
