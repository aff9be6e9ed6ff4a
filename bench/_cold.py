"""Child process for S1 cold: ``python -m bench._cold <runner>``; prints one JSON line."""

from __future__ import annotations

import gc
import json
import sys
import time


def main() -> None:
    from bench.fixture_tools import TOOL_FUNCTIONS
    from bench.runners import Runner, get_runner
    from bench.runners.floor import FloorStrictBound

    if sys.argv[1] == FloorStrictBound.name:  # S1's bound, not a library
        runner: Runner = FloorStrictBound()
    else:
        runner = get_runner(sys.argv[1])()
    runner.setup()  # imports the library: not timed here (S4 measures imports)
    gc.disable()
    t0 = time.perf_counter_ns()
    rendered = runner.call("build_render", TOOL_FUNCTIONS)
    elapsed = time.perf_counter_ns() - t0
    gc.enable()
    runner.close()
    print(json.dumps({"ns": elapsed, "tools": len(rendered)}))


if __name__ == "__main__":
    main()
