"""The Ray backend's benchmark: throughput of CPU-bound tools, and the per-call overhead.

``uv run python -m bench.ray_backend [--quick] [--json out.json]``

1. Throughput: N calls of a 50 ms CPU-bound tool through ``Executor.execute_all``,
   in-process (the body runs on the event loop, one at a time) and with the ``ray``
   backend on a local cluster of 1 and then 2 workers.
2. Overhead: one trivial call at a time, through the executor with the Ray backend,
   against raw ``ray.get(f.remote(...))`` of the same function on the same cluster:
   paired batches, the ratio of the medians (target <= 1.2x).
3. A projection for more workers, with the model written next to it.

Each cluster is started here and shut down before the next (Ray's uv propagation off:
the workers run this interpreter).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # read when Ray is imported

import ray

import toolwire as tw
from bench import ray_tools
from toolwire_ray import RayBackend

WORK_S = ray_tools.WORK_S


def _calls(name: str, n: int, args: str) -> list[tw.ToolCall]:
    return [tw.ToolCall(f"c{i}", name, args) for i in range(n)]


def _throughput(executor: tw.Executor, n: int) -> float:
    start = time.perf_counter()
    results = executor.execute_all(_calls("burn", n, "{}"))
    elapsed = time.perf_counter() - start
    assert all(not r.is_error for r in results), results[0].content
    return elapsed


def _overhead(backend: RayBackend, batch: int, reps: int) -> dict[str, float]:
    """One call at a time, through ``Executor.aexecute`` on one event loop (the agent's
    path), against ``ray.get(f.remote())`` of the same function: paired batches."""
    executor = tw.Executor(tools=[ray_tools.ping], backend=backend, plugins=False)
    raw = ray.remote(ray_tools.ping.fn).options(max_retries=0)
    one = tw.ToolCall("c", "ping", "{}")
    loop = asyncio.new_event_loop()

    async def ours_batch() -> None:
        for _ in range(batch):
            await executor.aexecute(one)

    def raw_batch() -> None:
        for _ in range(batch):
            ray.get(raw.remote())

    loop.run_until_complete(ours_batch())  # warm both paths: workers up, functions exported
    raw_batch()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(reps):
        start = time.perf_counter()
        loop.run_until_complete(ours_batch())
        ours.append((time.perf_counter() - start) / batch)
        start = time.perf_counter()
        raw_batch()
        theirs.append((time.perf_counter() - start) / batch)
    loop.close()
    executor.close()
    mine, raw_s = statistics.median(ours), statistics.median(theirs)
    return {"toolwire_ms": mine * 1e3, "raw_ms": raw_s * 1e3, "ratio": mine / raw_s}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_backend", description=__doc__)
    p.add_argument("--quick", action="store_true", help="40 calls, fewer repetitions")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    n = 40 if args.quick else 200
    batch, reps = (20, 5) if args.quick else (50, 9)
    started = time.perf_counter()

    inprocess = tw.Executor(tools=[ray_tools.burn], plugins=False)
    _throughput(inprocess, 2)
    local_s = _throughput(inprocess, n)
    inprocess.close()

    rows = []
    overhead: dict[str, float] = {}
    for workers in (1, 2):
        backend = RayBackend(num_cpus=workers)
        backend.connect()
        try:
            executor = tw.Executor(tools=[ray_tools.burn], backend=backend, plugins=False)
            _throughput(executor, workers * 2)  # start the workers
            ray_s = _throughput(executor, n)
            executor.close()
            rows.append({"workers": workers, "inprocess_s": local_s, "ray_s": ray_s})
            if workers == 2:
                overhead = _overhead(backend, batch, reps)
        finally:
            backend.close()

    per_call = overhead["toolwire_ms"] / 1e3
    # The model: a call costs its work plus the per-call overhead, and w workers run w
    # calls at a time: T(w) = ceil(n / w) * (work + overhead). It ignores scheduling
    # contention past the driver's own limits; measured at w = 1 and 2 only.
    projection = [
        {
            "workers": w,
            "seconds": -(-n // w) * (WORK_S + per_call),
            "speedup": local_s / (-(-n // w) * (WORK_S + per_call)),
        }
        for w in (4, 8, 16, 32)
    ]
    results = {
        "meta": {
            "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "mode": "quick" if args.quick else "full",
            "calls": n,
            "work_ms": WORK_S * 1e3,
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": platform.platform(terse=True),
            "ray": ray.__version__,
            "elapsed_s": round(time.perf_counter() - started, 1),
        },
        "throughput": rows,
        "overhead": overhead,
        "projection": projection,
    }
    for row in rows:
        print(
            f"{n} calls x {WORK_S * 1e3:.0f} ms: in-process {row['inprocess_s']:.2f} s, "
            f"ray ({row['workers']} worker(s)) {row['ray_s']:.2f} s"
        )
    print(
        f"per call: toolwire+ray {overhead['toolwire_ms']:.2f} ms, raw ray.get(f.remote()) "
        f"{overhead['raw_ms']:.2f} ms, ratio {overhead['ratio']:.2f}x (target <= 1.20x)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
