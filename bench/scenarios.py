"""The scenario registry. Each scenario returns table rows; a row holds the floor's and
each library's result (median, unit, median paired ratio) or a skip reason.

Later scenarios (hooks, discovery, streaming, executor) are registered already: they run
for runners that implement the optional operations named in ``bench/runners/_base.py``
and otherwise skip with a printed reason. They never produce numbers they did not measure.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import _timing
from bench._labels import BOUND_ONLY
from bench.fixture_tools import ASSISTANT_MESSAGE, TOOL_FUNCTIONS
from bench.runners import Runner, get_runner
from bench.runners.floor import FloorStrictBound

N_TOOLS = len(TOOL_FUNCTIONS)
N_CALLS = len(ASSISTANT_MESSAGE["tool_calls"])
NOT_YET = "toolwire runner not available yet"


@dataclass
class Config:
    mode: str
    reps: int
    #: Repetitions for S1 warm rebuild, whose batches are one 50-tool build each.
    heavy_reps: int
    target_ns: int
    warmup: int
    cold_reps: int
    import_reps: int
    #: One untimed run of every child process first (full mode).
    child_warmup: bool
    #: Child-process scenarios (S1 cold, S4) cover the libraries too, not just the floor.
    child_libs: bool = True


SMOKE_CHILD_SKIP = "smoke mode: child-process scenarios (S1 cold, S4) measure the floor only"


@dataclass
class State:
    runner: Runner
    built: Any = None
    prepared: Any = None


@dataclass
class Bench:
    config: Config
    floor: State
    libs: dict[str, State]
    #: Runners that did not run, with the reason (not installed, not implemented, failed check).
    skipped: dict[str, str] = field(default_factory=dict)


Row = dict[str, Any]


def _row(scenario: str, label: str, unit: str) -> Row:
    return {"scenario": scenario, "label": label, "unit": unit, "floor": None, "libs": {}}


def _skip_all(bench: Bench, row: Row, reason_for: Callable[[str], str]) -> None:
    for name in [*bench.libs, *bench.skipped]:
        row["libs"][name] = {"skipped": bench.skipped.get(name) or reason_for(name)}


def _fill(
    row: Row, name: str, samples_ns: list[float], ratios: list[float] | None, scale: float
) -> None:
    entry: dict[str, Any] = {
        "median": statistics.median(samples_ns) / scale,
        "samples": [s / scale for s in samples_ns],
    }
    if ratios is not None:
        entry["ratio"] = statistics.median(ratios)
        entry["ratios"] = ratios
    if name == "floor":
        row["floor"] = entry
    else:
        row["libs"][name] = entry


def _skipped_libs(bench: Bench, row: Row) -> None:
    for name, reason in bench.skipped.items():
        row["libs"][name] = {"skipped": reason}


def _inproc(
    bench: Bench, scenario: str, label: str, unit: str, op: str, per: int, reps: int | None = None
) -> Row:
    row = _row(scenario, label, unit)
    cfg = bench.config

    def args(state: State) -> tuple[Any, ...]:
        if op == "build_render":
            return (TOOL_FUNCTIONS,)
        if op == "render":
            return (state.built,)
        return (state.prepared, ASSISTANT_MESSAGE)

    others = {name: (st.runner, args(st)) for name, st in bench.libs.items()}
    floor_samples, results = _timing.paired(
        bench.floor.runner,
        args(bench.floor),
        others,
        op,
        reps=reps or cfg.reps,
        target_ns=cfg.target_ns,
        warmup=cfg.warmup,
        per=per,
    )
    _fill(row, "floor", floor_samples, None, 1000.0)
    for name, (samples, ratios) in results.items():
        _fill(row, name, samples, ratios, 1000.0)
    _skipped_libs(bench, row)
    return row


def s1(bench: Bench) -> list[Row]:
    cfg = bench.config
    cold = _row("S1", "S1 cold build+render", "µs/tool")
    names = list(bench.libs) if cfg.child_libs else []
    for name in bench.libs:
        if name not in names:
            cold["libs"][name] = {"skipped": SMOKE_CHILD_SKIP}
    if cfg.child_warmup:  # untimed first run: bytecode caches, page cache
        for name in ["floor", *names]:
            _timing.cold_build(name)
    bound = _row("S1", "S1 bound: floor + OpenAI strict compile", "µs/tool")
    # toolwire's target beside what sending OpenAI strict schemas costs at the least (the
    # floor's build, then toolwire-openai's compile; see FloorStrictBound).
    with_bound = "toolwire" in names and importlib.util.find_spec("toolwire_openai") is not None
    if with_bound and cfg.child_warmup:
        _timing.cold_build(FloorStrictBound.name)
    floor_ns: list[float] = []
    lib_ns: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    bound_ns: list[float] = []
    bound_ratios: list[float] = []
    for _ in range(cfg.cold_reps):
        f = _timing.cold_build("floor")["ns"]
        floor_ns.append(f / N_TOOLS)
        for name in names:
            ns = _timing.cold_build(name)["ns"]
            lib_ns[name].append(ns / N_TOOLS)
            ratios[name].append(ns / f)
        if with_bound:
            ns = _timing.cold_build(FloorStrictBound.name)["ns"]
            bound_ns.append(ns / N_TOOLS)
            bound_ratios.append(ns / f)
    _fill(cold, "floor", floor_ns, None, 1000.0)
    for name in names:
        _fill(cold, name, lib_ns[name], ratios[name], 1000.0)
    _skipped_libs(bench, cold)
    if with_bound:
        _fill(bound, "floor", floor_ns, None, 1000.0)
        _fill(bound, "toolwire", bound_ns, bound_ratios, 1000.0)
        for name in [*bench.libs, *bench.skipped]:
            if name != "toolwire":
                bound["libs"][name] = {"skipped": BOUND_ONLY}
    else:
        _skip_all(bench, bound, lambda name: BOUND_ONLY)
        if "toolwire" in bench.libs and not cfg.child_libs:
            bound["libs"]["toolwire"] = {"skipped": SMOKE_CHILD_SKIP}
    warm = _inproc(
        bench, "S1", "S1 warm rebuild+render", "µs/tool", "build_render", N_TOOLS, cfg.heavy_reps
    )
    rerender = _inproc(bench, "S1", "S1 re-render", "µs/tool", "render", N_TOOLS)
    return [cold, bound, warm, rerender]


def s2(bench: Bench) -> list[Row]:
    return [
        _inproc(bench, "S2", "S2 decode", "µs/call", "decode", N_CALLS),
        _bound(bench, "S2", "S2 bound: the returned objects alone", "µs/call", "decode", N_CALLS),
    ]


def s3(bench: Bench) -> list[Row]:
    return [
        _inproc(bench, "S3", "S3 round", "µs/round", "round", 1),
        _bound(bench, "S3", "S3 bound: the returned objects alone", "µs/round", "round", 1),
    ]


class _AsFloorOp:
    """A runner whose ``<op>_objects`` is timed under the floor's ``op`` name."""

    def __init__(self, runner: Runner, op: str) -> None:
        self.loop = runner.loop
        setattr(self, op, getattr(runner, f"{op}_objects"))

    def call(self, op: str, *args: Any) -> Any:
        return getattr(self, op)(*args)


def _bound(bench: Bench, scenario: str, label: str, unit: str, op: str, per: int) -> Row:
    """toolwire's runner making only the objects its path returns (``<op>_objects``: the
    floor's validation and the records, no checks between them) against the floor's ``op``:
    the least any design returning those objects can cost, beside the target."""
    row = _row(scenario, label, unit)
    state = bench.libs.get("toolwire")
    if state is None:
        _skip_all(bench, row, lambda name: BOUND_ONLY)
        return row
    cfg = bench.config
    message_args = (bench.floor.prepared, ASSISTANT_MESSAGE)
    runner: Any = _AsFloorOp(state.runner, op)
    floor_samples, results = _timing.paired(
        bench.floor.runner,
        message_args,
        {"toolwire": (runner, (state.prepared, ASSISTANT_MESSAGE))},
        op,
        reps=cfg.reps,
        target_ns=cfg.target_ns,
        warmup=cfg.warmup,
        per=per,
    )
    _fill(row, "floor", floor_samples, None, 1000.0)
    samples, ratios = results["toolwire"]
    _fill(row, "toolwire", samples, ratios, 1000.0)
    for name in [*bench.libs, *bench.skipped]:
        if name != "toolwire":
            row["libs"][name] = {"skipped": BOUND_ONLY}
    return row


def s4(bench: Bench) -> list[Row]:
    """Imports in fresh processes; S4 also covers runners that cannot run S1-S3 yet
    (such as toolwire before its runner exists) as long as their module is installed."""
    cfg = bench.config
    wall = _row("S4", "S4 import (over bare python)", "ms")
    rss = _row("S4", "S4 import peak RSS", "MiB")
    runners: dict[str, Runner] = {}
    for name, st in bench.libs.items():
        if cfg.child_libs:
            runners[name] = st.runner
        else:
            for row in (wall, rss):
                row["libs"][name] = {"skipped": SMOKE_CHILD_SKIP}
    for name, reason in bench.skipped.items():
        cls = get_runner(name)
        if cfg.child_libs and cls.import_statement and _module_installed(cls.module):
            runners[name] = cls()
        else:
            for row in (wall, rss):
                row["libs"][name] = {"skipped": reason}
    statements = {"floor": bench.floor.runner.import_statement}
    statements.update({name: r.import_statement for name, r in runners.items()})
    # A library whose top-level import is lazy also reports what a program really
    # imports (its working set), so the cheap ``import X`` cannot flatter it.
    working = {
        name: r.working_set_statement for name, r in runners.items() if r.working_set_statement
    }
    statements.update({f"{name}{_WS}": stmt for name, stmt in working.items()})
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        bare_stmt = "pass"
        if cfg.child_warmup:  # untimed: bytecode and page cache
            for stmt in [bare_stmt, *statements.values()]:
                _timing.import_child(stmt, cwd)
        over: dict[str, list[float]] = {n: [] for n in statements}
        peak: dict[str, list[float]] = {n: [] for n in statements}
        bare_ms: list[float] = []
        bare_mib: list[float] = []
        for _ in range(cfg.import_reps):
            bare = _timing.import_child(bare_stmt, cwd)
            bare_ms.append(bare["wall_ns"] / 1e6)
            bare_mib.append(bare["peak_kib"] / 1024)
            for name, stmt in statements.items():
                res = _timing.import_child(stmt, cwd)
                over[name].append((res["wall_ns"] - bare["wall_ns"]) / 1e6)
                peak[name].append(res["peak_kib"] / 1024)
    floor_over = over.pop("floor")
    floor_peak = peak.pop("floor")
    _fill(wall, "floor", floor_over, None, 1.0)
    _fill(rss, "floor", floor_peak, None, 1.0)
    ws = _row("S4", "S4 working-set import (over bare python)", "ms")
    _fill(ws, "floor", floor_over, None, 1.0)
    for key in [k for k in over if k.endswith(_WS)]:
        name = key[: -len(_WS)]
        samples = over.pop(key)
        peak.pop(key)
        ratios = [a / b for a, b in zip(samples, floor_over, strict=True)]
        _fill(ws, name, samples, ratios, 1.0)
    ws["statements"] = {"floor": statements["floor"], **working}
    for name in over:
        _fill(
            wall,
            name,
            over[name],
            [a / b for a, b in zip(over[name], floor_over, strict=True)],
            1.0,
        )
        _fill(
            rss, name, peak[name], [a / b for a, b in zip(peak[name], floor_peak, strict=True)], 1.0
        )
    wall["bare_python_ms"] = statistics.median(bare_ms)
    rss["bare_python_mib"] = statistics.median(bare_mib)
    wall["statements"] = {k: v for k, v in statements.items() if not k.endswith(_WS)}
    return [wall, ws, rss] if working else [wall, rss]


_WS = "#working-set"


def _module_installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _optional(
    bench: Bench,
    scenario: str,
    label: str,
    unit: str,
    op: str,
    measure: Callable[[Bench, Row, dict[str, State]], None],
) -> Row:
    row = _row(scenario, label, unit)
    able = {name: st for name, st in bench.libs.items() if st.runner.supports(op)}
    for name in [*bench.libs, *bench.skipped]:
        if name not in able:
            reason = bench.skipped.get(name)
            if name == "toolwire":
                reason = NOT_YET
            row["libs"][name] = {
                "skipped": reason or f"not measured for {name} ({op}() not provided)"
            }
    if able:
        measure(bench, row, able)
    else:
        row["skipped"] = NOT_YET
    return row


def _paired_ops(
    cfg: Config,
    floor: tuple[Runner, str, tuple[Any, ...]],
    lib: tuple[Runner, str, tuple[Any, ...]],
) -> tuple[list[float], list[float], list[float]]:
    """Floor and library timed back to back per repetition (order alternating), each through
    its own operation. Returns (floor ns/op, library ns/op, library/floor ratios)."""
    _timing.settle()
    n_f = _timing.calibrate(*floor, cfg.target_ns, cfg.warmup)
    n_l = _timing.calibrate(*lib, cfg.target_ns, cfg.warmup)
    f_s: list[float] = []
    l_s: list[float] = []
    ratios: list[float] = []
    for rep in range(cfg.reps):
        if rep % 2 == 0:
            tf = _timing.time_batch(*floor, n_f) / n_f
            tl = _timing.time_batch(*lib, n_l) / n_l
        else:
            tl = _timing.time_batch(*lib, n_l) / n_l
            tf = _timing.time_batch(*floor, n_f) / n_f
        f_s.append(tf)
        l_s.append(tl)
        ratios.append(tl / tf)
    return f_s, l_s, ratios


def _expected_results() -> list[tuple[str, str]]:
    return [
        (tc["id"], f"{tc['function']['name']} ok: input {i}")
        for i, tc in enumerate(ASSISTANT_MESSAGE["tool_calls"])
    ]


def hooks(bench: Bench) -> list[Row]:
    """S3 with 0/1/3/10 decision hooks registered through plugins (runner: setup_hooks +
    round_with_hooks). Ratio: against the floor's S3 round, paired."""
    rows = []
    for n_hooks in (0, 1, 3, 10):

        def measure(bench: Bench, row: Row, able: dict[str, State], n_hooks: int = n_hooks) -> None:
            floor = bench.floor
            for name, st in able.items():
                prepared = st.runner.call("setup_hooks", st.built, n_hooks)
                got = [
                    st.runner.result_parts(m)
                    for m in st.runner.call("round_with_hooks", prepared, ASSISTANT_MESSAGE)
                ]
                if got != _expected_results():  # correctness before timing
                    row["libs"][name] = {"skipped": f"wrong results with hooks: {got!r}"}
                    continue
                f_s, l_s, ratios = _paired_ops(
                    bench.config,
                    (floor.runner, "round", (floor.prepared, ASSISTANT_MESSAGE)),
                    (st.runner, "round_with_hooks", (prepared, ASSISTANT_MESSAGE)),
                )
                _fill(row, "floor", f_s, None, 1000.0)
                _fill(row, name, l_s, ratios, 1000.0)

        rows.append(
            _optional(
                bench,
                "hooks",
                f"hooks: S3 + {n_hooks} plugin hooks",
                "µs/round",
                "round_with_hooks",
                measure,
            )
        )
    return rows


#: The workspace's own tool packs and policy: left out of the rows compared to the floor
#: (the floor loads only the 50 fake packs), loaded in the "+ the workspace's packs" row.
WORKSPACE_PLUGINS = "fs,http,mcp,policy"


def _discovery_src(setup_src: str, timed_src: str, check_src: str) -> str:
    return (
        "import time\n"
        + setup_src
        + "\n_t0 = time.perf_counter_ns()\n"
        + timed_src
        + "\n_t1 = time.perf_counter_ns()\n"
        + check_src
        + "\nprint(_t1 - _t0)\n"
    )


def _snippet(runner: Runner, n_plugins: int) -> str:
    setup_src, timed_src, *rest = runner.discovery_snippet(n_plugins)
    return _discovery_src(setup_src, timed_src, rest[0] if rest else "")


def discovery(bench: Bench) -> list[Row]:
    """First toolset assembly in a fresh process with 0 and 50 fake plugin distributions.

    The runner's ``discovery_snippet(n_plugins)`` returns ``(setup_src, timed_src[,
    check_src])``; the harness writes ``n_plugins`` fake distributions (below) onto
    ``PYTHONPATH`` and times ``timed_src`` after ``setup_src`` in a fresh interpreter, then
    runs ``check_src`` (untimed) to prove the plugins were really loaded. The first run of
    each configuration is an untimed warm-up (bytecode of the fake modules).

    The floor does the same with its own 50 distributions (an entry point group, each
    module building its one pydantic model at import): ``entry_points(group=...)`` and
    ``ep.load()`` for each. Floor and library runs alternate; the ratio is the median of
    the paired ratios. Those rows leave the workspace's own packs out of the host
    (``TOOLWIRE_DISABLE_PLUGINS``); a last row times the 50 with them, absolute only.
    """
    rows = []
    for n_plugins, workspace in ((0, False), (50, False), (50, True)):
        label = f"discovery: {n_plugins} plugin dists"
        if workspace:
            label += " + the workspace's packs"

        def measure(
            bench: Bench,
            row: Row,
            able: dict[str, State],
            n_plugins: int = n_plugins,
            workspace: bool = workspace,
        ) -> None:
            # Fresh processes swing by +-20 %: at least 7 pairs outside smoke mode.
            reps = bench.config.import_reps
            if bench.config.mode != "smoke":
                reps = max(reps, 7)
            with tempfile.TemporaryDirectory() as tmp:
                floor_site = Path(tmp) / "floor"
                floor_site.mkdir()
                make_floor_distributions(floor_site, n_plugins)
                floor_env = _timing.child_env()
                floor_env["PYTHONPATH"] = f"{floor_site}:{floor_env['PYTHONPATH']}"
                floor_src = _snippet(bench.floor.runner, n_plugins)
                floor_ns: list[float] = []
                for name, st in able.items():
                    site = Path(tmp) / name
                    site.mkdir()
                    make_fake_distributions(site, n_plugins)
                    env = _timing.child_env()
                    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
                    if not workspace:
                        env["TOOLWIRE_DISABLE_PLUGINS"] = WORKSPACE_PLUGINS
                    src = _snippet(st.runner, n_plugins)

                    # Run beside the sites, not in them: toolwire reads no entry point
                    # from the working directory (a planted *.dist-info decides nothing).
                    def lib_run(src: str = src, env: dict = env) -> float:
                        res = _timing.run_child([sys.executable, "-c", src], cwd=Path(tmp), env=env)
                        return float(res["stdout"].split()[-1])

                    def floor_run() -> float:
                        res = _timing.run_child(
                            [sys.executable, "-c", floor_src], cwd=Path(tmp), env=floor_env
                        )
                        return float(res["stdout"].split()[-1])

                    lib_run()  # untimed: bytecode of the fake modules
                    floor_run()
                    samples, ratios = [], []
                    for rep in range(reps):
                        if rep % 2 == 0:
                            f, t = floor_run(), lib_run()
                        else:
                            t, f = lib_run(), floor_run()
                        floor_ns.append(f)
                        samples.append(t)
                        ratios.append(t / f)
                    _fill(row, name, samples, None if workspace else ratios, 1e6)
                if not workspace:
                    _fill(row, "floor", floor_ns, None, 1e6)

        rows.append(_optional(bench, "discovery", label, "ms", "discovery_snippet", measure))
    return rows


_FLOOR_PLUGIN = '''"""Fake floor pack NNN (bench): one pydantic model, built at import."""

from pydantic import create_model


def fake_tool_NNN(query: str, limit: int = 10) -> str:
    """Look NNN up."""
    return query


Args = create_model("fake_tool_NNN_args", query=(str, ...), limit=(int, 10))
'''

FLOOR_GROUP = "bench.floor.toolsets"


def make_floor_distributions(site: Path, n: int) -> None:
    """The floor's ``n`` distributions: one entry point each in ``FLOOR_GROUP`` naming a
    module that builds one pydantic model from its function's fields at import."""
    _write_distributions(site, n, "bench_floor_plugin", FLOOR_GROUP, _FLOOR_PLUGIN)


_FAKE_PLUGIN = '''"""Fake tool pack NNN (bench): one tool, registered through the toolsets hook."""

from toolwire import Toolset, tool_fn
from toolwire.hookspecs import hookimpl


@tool_fn
def fake_tool_NNN(query: str, limit: int = 10) -> str:
    """Look NNN up.

    Args:
        query: what to look up.
        limit: at most this many results.
    """
    return query


@hookimpl
def toolwire_register_toolsets(register):
    register(Toolset("fake_NNN", [fake_tool_NNN]))
'''


def make_fake_distributions(site: Path, n: int, group: str = "toolwire.toolsets") -> None:
    """Write ``n`` installed-looking tool packs: a dist-info with one entry point in ``group``
    naming a module that has a ``toolwire_register_toolsets`` hookimpl registering a one-tool
    ``Toolset`` (the tool built with ``tool_fn`` at import, as most tool packs do)."""
    _write_distributions(site, n, "bench_fake_plugin", group, _FAKE_PLUGIN)


def _write_distributions(site: Path, n: int, prefix: str, group: str, template: str) -> None:
    """``n`` modules ``{prefix}_NNN`` from ``template`` (NNN replaced), each with a
    dist-info (METADATA, RECORD, one entry point ``fake_NNN`` in ``group``)."""
    for i in range(n):
        mod = f"{prefix}_{i:03d}"
        (site / f"{mod}.py").write_text(template.replace("NNN", f"{i:03d}"))
        info = site / f"{mod}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {mod}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[{group}]\nfake_{i:03d} = {mod}\n")
        (info / "RECORD").write_text("")


def _calls_key(calls: list[tuple[str, str, str]]) -> list[tuple[str, str, Any]]:
    return [(i, n, json.loads(a)) for i, n, a in calls]


def streaming(bench: Bench) -> list[Row]:
    """Streaming tool-call assembly throughput, per provider wire format (bench/_sse.py):
    the floor's minimal assembler and the library's adapter on the same bytes, paired.
    Unit MB/s (higher is better); the ratio is still library time / floor time."""
    from bench import _sse

    floor = bench.floor
    floor_streams = floor.runner.call("setup_stream", floor.built, ASSISTANT_MESSAGE)
    want = _calls_key(_sse.calls_of(ASSISTANT_MESSAGE))
    per_lib: dict[str, dict[str, Any]] = {}
    for name, st in bench.libs.items():
        if st.runner.supports("stream_assemble"):
            per_lib[name] = st.runner.call("setup_stream", st.built, ASSISTANT_MESSAGE)
    rows = []
    for fmt in _sse.FORMATS:
        size = len(_sse.stream_bytes(fmt, ASSISTANT_MESSAGE))

        def measure(
            bench: Bench, row: Row, able: dict[str, State], fmt: str = fmt, size: int = size
        ) -> None:
            fargs = (floor_streams[fmt],)
            row["stream_bytes"] = size
            for name, st in able.items():
                prepared = per_lib[name].get(fmt)
                if not isinstance(prepared, tuple):
                    row["libs"][name] = {"skipped": prepared or f"{fmt} not provided"}
                    continue
                try:
                    got = _calls_key(st.runner.call("stream_assemble", prepared))
                except Exception as exc:
                    row["libs"][name] = {"skipped": f"{fmt} failed: {type(exc).__name__}: {exc}"}
                    continue
                if got != want or _calls_key(floor.runner.stream_assemble(fargs[0])) != want:
                    row["libs"][name] = {"skipped": f"{fmt}: assembled calls differ: {got!r}"}
                    continue
                f_s, l_s, ratios = _paired_ops(
                    bench.config,
                    (floor.runner, "stream_assemble", fargs),
                    (st.runner, "stream_assemble", (prepared,)),
                )
                # bytes per ns * 1e3 = MB/s (10^6 bytes per second)
                _fill(row, "floor", [size * 1e3 / t for t in f_s], None, 1.0)
                _fill(row, name, [size * 1e3 / t for t in l_s], ratios, 1.0)
                row["libs"][name]["us_per_stream"] = statistics.median(l_s) / 1000

        rows.append(
            _optional(bench, "streaming", f"streaming: {fmt}", "MB/s", "stream_assemble", measure)
        )
    return rows


def executor(bench: Bench) -> list[Row]:
    """The executor with 8 parallel async tools against ``asyncio.gather`` of the same 8
    coroutines (inputs validated beforehand on both sides), paired; plus the overhead per
    call, (library - floor) / 8, median of the per-repetition differences."""
    floor = bench.floor
    per_call = _row("executor", "executor overhead per call", "µs/call")

    def measure(bench: Bench, row: Row, able: dict[str, State]) -> None:
        fprep = floor.runner.call("setup_parallel", floor.built, ASSISTANT_MESSAGE)
        fgot = [floor.runner.result_parts(r) for r in floor.runner.call("execute_parallel", fprep)]
        for name, st in able.items():
            prep = st.runner.call("setup_parallel", st.built, ASSISTANT_MESSAGE)
            got = [st.runner.result_parts(r) for r in st.runner.call("execute_parallel", prep)]
            if got != _expected_results() or fgot != _expected_results():
                row["libs"][name] = {"skipped": f"wrong results: {got!r} / floor {fgot!r}"}
                continue
            f_s, l_s, ratios = _paired_ops(
                bench.config,
                (floor.runner, "execute_parallel", (fprep,)),
                (st.runner, "execute_parallel", (prep,)),
            )
            _fill(row, "floor", f_s, None, 1000.0)
            _fill(row, name, l_s, ratios, 1000.0)
            diffs = [(tl - tf) / N_CALLS for tl, tf in zip(l_s, f_s, strict=True)]
            _fill(per_call, name, diffs, None, 1000.0)

    total = _optional(
        bench,
        "executor",
        "executor: 8 parallel async tools",
        "µs/round",
        "execute_parallel",
        measure,
    )
    return [total, per_call] if per_call["libs"] else [total]


_INPROC_TOOLS = """
import time
_t0 = time.perf_counter_ns()
import toolwire
_tools = toolwire.get_host().assemble(toolwire.Toolset("app", [])).tools()
_t1 = time.perf_counter_ns()
assert _tools, "no tools: the workspace's packs were not found"
print(_t1 - _t0)
"""


def _toolwire_command() -> list[str] | None:
    """The installed ``toolwire`` console script (next to this interpreter), or None."""
    script = Path(sys.executable).with_name("toolwire")
    return [str(script)] if script.exists() else None


def s5(bench: Bench) -> list[Row]:
    """The command's start-up in fresh processes, bytecode cached (one untimed run first).

    ``toolwire --help``: wall time over bare python (``python -c pass``, run alternately),
    absolute: the target is at most 60 ms over. ``toolwire tools`` with the workspace's
    packs: wall time, as a ratio to what a program pays in-process for the same work
    (``import toolwire`` + ``get_host()`` + ``assemble().tools()``, timed inside a fresh
    interpreter), paired run by run: the target is at most 2x.
    """
    help_row = _row("S5", "S5 toolwire --help (over bare python)", "ms")
    tools_row = _row("S5", "S5 toolwire tools (to in-process assembly)", "ms")
    command = _toolwire_command()
    reason = None
    if "toolwire" not in bench.libs:
        reason = bench.skipped.get("toolwire") or NOT_YET
    elif command is None:
        reason = "the toolwire console script is not installed next to this python"
    elif not bench.config.child_libs:
        reason = SMOKE_CHILD_SKIP
    if reason is not None:
        for row in (help_row, tools_row):
            row["libs"]["toolwire"] = {"skipped": reason}
        return [help_row, tools_row]
    assert command is not None
    env = _timing.child_env()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)

        def wall_ms(argv: list[str]) -> float:
            return _timing.run_child(argv, cwd=cwd, env=env)["wall_ns"] / 1e6

        def inproc_ms() -> float:
            res = _timing.run_child([sys.executable, "-c", _INPROC_TOOLS], cwd=cwd, env=env)
            return float(res["stdout"].split()[-1]) / 1e6

        bare = [sys.executable, "-c", "pass"]
        for argv in (bare, [*command, "--help"], [*command, "tools"]):  # untimed first runs
            wall_ms(argv)
        inproc_ms()
        bare_ms, over, tools_ms, inproc, ratios = [], [], [], [], []
        for rep in range(bench.config.import_reps):
            if rep % 2 == 0:
                b, h = wall_ms(bare), wall_ms([*command, "--help"])
                i, t = inproc_ms(), wall_ms([*command, "tools"])
            else:
                h, b = wall_ms([*command, "--help"]), wall_ms(bare)
                t, i = wall_ms([*command, "tools"]), inproc_ms()
            bare_ms.append(b)
            over.append(h - b)
            tools_ms.append(t)
            inproc.append(i)
            ratios.append(t / i)
    _fill(help_row, "floor", bare_ms, None, 1.0)
    _fill(help_row, "toolwire", over, None, 1.0)
    _fill(tools_row, "floor", inproc, None, 1.0)
    _fill(tools_row, "toolwire", tools_ms, ratios, 1.0)
    help_row["floor_is"] = "bare python (python -c pass), wall ms; toolwire: ms over it"
    tools_row["floor_is"] = "import toolwire + get_host() + assemble().tools(), in-process ms"
    _skipped_libs(bench, help_row)
    _skipped_libs(bench, tools_row)
    for row in (help_row, tools_row):
        for name in bench.libs:
            if name != "toolwire":
                row["libs"][name] = {"skipped": "toolwire's command only"}
    return [help_row, tools_row]


def mcp(bench: Bench) -> list[Row]:
    """toolwire-mcp's per-call overhead and its server's tools/list, against the SDK."""
    from bench import _mcp

    quick = bench.config.mode != "full"
    return _mcp.rows(bench.config.reps, quick, [*bench.libs, *bench.skipped])


@dataclass(frozen=True)
class Scenario:
    id: str
    description: str
    run: Callable[[Bench], list[Row]]
    #: Runs with --smoke too.
    smoke: bool = True


SCENARIOS: list[Scenario] = [
    Scenario("S1", "build 50 tools + render OpenAI tool dicts: cold, warm, re-render", s1),
    Scenario("S2", "8 JSON-string tool calls -> validated typed inputs", s2),
    Scenario("S3", "S2 + run the 8 sync tools + 8 tool-result messages in order", s3),
    Scenario("S4", "import in a fresh process: wall time over bare python, peak RSS", s4),
    Scenario("S5", "toolwire --help and toolwire tools: fresh process start-up", s5),
    Scenario("hooks", "S3 with 0/1/3/10 decision hooks registered through plugins", hooks),
    Scenario(
        "discovery", "first toolset assembly, fresh process, 0 and 50 plugin dists", discovery
    ),
    Scenario(
        "streaming",
        "SSE tool-call assembly throughput per provider format (runner: stream_assemble)",
        streaming,
    ),
    Scenario(
        "executor",
        "executor overhead, 8 parallel async tools (runner: execute_parallel)",
        executor,
    ),
    Scenario(
        "mcp",
        "toolwire-mcp: a tools/call through the MCP toolset, tools/list of 500 tools served",
        mcp,
        smoke=False,
    ),
]


def scenario_ids() -> list[str]:
    return [s.id for s in SCENARIOS]


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str)
