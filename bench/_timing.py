"""Timing primitives: batches with gc off, calibration, paired ratios, child processes."""

from __future__ import annotations

import gc
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runners import Runner

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Bytecode cache of every child process (gitignored). Children must not run from source
#: each time (``PYTHONDONTWRITEBYTECODE=1`` in a developer's shell would make every fresh
#: process recompile whatever has no up-to-date ``__pycache__``): an installed package has
#: its bytecode. The prefix keeps the cache out of the source tree and site-packages.
PYCACHE = REPO_ROOT / "bench" / "results" / "pycache"


def time_batch(runner: Runner, op: str, args: tuple[Any, ...], n: int) -> int:
    """Run ``op(*args)`` n times back to back with gc disabled; return elapsed ns.

    Garbage made inside the batch is collected after it, untimed. (No ``gc.collect()`` here:
    with the peers imported, a full collection costs far more than the batch itself; see
    ``settle()``.)
    """
    fn = getattr(runner, op)
    gc.disable()
    try:
        if inspect.iscoroutinefunction(fn):

            async def batch() -> int:
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    await fn(*args)
                return time.perf_counter_ns() - t0

            return runner.loop.run_until_complete(batch())
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        return time.perf_counter_ns() - t0
    finally:
        gc.enable()


def settle() -> None:
    """Before a scenario: collect once, then freeze survivors so later collections are cheap."""
    gc.collect()
    gc.freeze()


def calibrate(runner: Runner, op: str, args: tuple[Any, ...], target_ns: int, warmup: int) -> int:
    """Warm up, then pick a batch size whose batch lasts about ``target_ns``."""
    for _ in range(warmup):
        runner.call(op, *args)
    if target_ns <= 0:
        return 1
    n = 1
    while True:
        elapsed = time_batch(runner, op, args, n)
        if elapsed >= target_ns / 4 or n >= 1 << 20:
            return max(1, round(n * target_ns / max(elapsed, 1)))
        n *= 2


def summarise(samples: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


def paired(
    floor: Runner,
    floor_args: tuple[Any, ...],
    others: dict[str, tuple[Runner, tuple[Any, ...]]],
    op: str,
    *,
    reps: int,
    target_ns: int,
    warmup: int,
    per: int,
) -> tuple[list[float], dict[str, tuple[list[float], list[float]]]]:
    """Per repetition, time the floor and each library back to back (order alternating).

    Returns the floor's per-unit samples (ns) and, per library, (per-unit samples, ratios).
    """
    settle()
    n_floor = calibrate(floor, op, floor_args, target_ns, warmup)
    sizes = {name: calibrate(r, op, a, target_ns, warmup) for name, (r, a) in others.items()}
    floor_samples: list[float] = []
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in others}
    for rep in range(reps):
        for name, (runner, args) in others.items():
            n = sizes[name]
            if rep % 2 == 0:
                tf = time_batch(floor, op, floor_args, n_floor) / n_floor
                tl = time_batch(runner, op, args, n) / n
            else:
                tl = time_batch(runner, op, args, n) / n
                tf = time_batch(floor, op, floor_args, n_floor) / n_floor
            floor_samples.append(tf / per)
            out[name][0].append(tl / per)
            out[name][1].append(tl / tf)
    return floor_samples, out


def base_env() -> dict[str, str]:
    """The environment of every child: ours, with bytecode cached under ``PYCACHE``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def warm_bytecode(statements: list[str]) -> float:
    """One untimed child running every import statement, so ``PYCACHE`` holds the bytecode
    the timed children need (a no-op beyond the imports once it does). Returns seconds."""
    t0 = time.perf_counter()
    run_child([sys.executable, "-c", "\n".join(statements)], cwd=Path.cwd(), env=child_env())
    return time.perf_counter() - t0


def run_child(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a child process; return wall ns, peak RSS (KiB, from wait4) and stdout."""
    if env is None:
        env = base_env()
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter_ns() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"child {argv!r} exited {proc.returncode}:\n{stderr[-2000:]}")
    return {"wall_ns": wall, "maxrss_kib": usage.ru_maxrss, "stdout": out.decode()}


def child_env() -> dict[str, str]:
    env = base_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def cold_build(runner_name: str) -> dict[str, Any]:
    """S1 cold: build + render the 50 tools in a fresh process (imports are not timed)."""
    res = run_child(
        [sys.executable, "-m", "bench._cold", runner_name], cwd=Path.cwd(), env=child_env()
    )
    return json.loads(res["stdout"].strip().splitlines()[-1])


# Peak RSS is read by the child itself (VmHWM, which exec resets). ru_maxrss from wait4 is
# not usable here: Linux carries the parent's high-water mark over fork/vfork + exec, so every
# child would report at least the harness's own size.
_PEAK_SUFFIX = """
try:
    with open("/proc/self/status") as _f:
        _peak = int(next(_l for _l in _f if _l.startswith("VmHWM")).split()[1])
except (OSError, StopIteration):
    import resource as _r
    _peak = _r.getrusage(_r.RUSAGE_SELF).ru_maxrss
print("BENCH_PEAK_KIB", _peak)
"""


def import_child(statement: str, cwd: Path) -> dict[str, Any]:
    """S4: ``python -c <statement>`` in a fresh process; wall ns and peak RSS KiB."""
    res = run_child([sys.executable, "-c", statement + "\n" + _PEAK_SUFFIX], cwd=cwd)
    res["peak_kib"] = int(res["stdout"].split("BENCH_PEAK_KIB")[-1].split()[0])
    return res
