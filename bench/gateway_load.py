"""The gateway under load: ``uv run python -m bench.gateway_load [--quick] [--json OUT]``.

Three servers on 127.0.0.1, each a process of its own, serving the same two tools
(``echo``, which returns at once, and ``wait10``, which returns after 10 ms):

- **direct**: the official SDK's ``MCPServer`` serving the tools itself (the floor);
- **toolwire**: ``toolwire mcp serve --transport http`` fronting that server (configured
  as an MCP server of its own), with toolwire-policy in force and its audit log written
  for every call;
- **fastmcp**: FastMCP's proxy (``create_proxy``), the peer gateway, fronting it too.

For each concurrency (1, 16, 64 clients, each its own Streamable HTTP session opened
before the clock starts) a fixed number of calls is split among the clients; the rows
give requests per second and the p50 / p99 latency of a call, for each server, with the
ratios to the direct server. Servers are measured in turn, in a rotating order, twice.
Then the gateway's memory: its resident set after a warm-up and after 10,000 more calls
made from sessions opened and closed in turn (200 calls each), so growth per call or per
session shows. Everything stops by itself; nothing leaves the machine.

The load generator shares the machine's cores with the servers, so the figures say how
the three compare here, not what a dedicated server would do.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONCURRENCY = (1, 16, 64)
TOOLS = ("echo", "wait10")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(
    port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}) before it listened")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout:g} s")


@contextlib.contextmanager
def _servers(work: Path) -> Iterator[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    procs: list[subprocess.Popen[bytes]] = []
    try:

        def start(what: str, cwd: Path, env: dict[str, str], *argv: str) -> int:
            """Start ``argv`` (``{port}`` filled in) and wait until it listens."""
            port = _port()
            proc = subprocess.Popen(
                [sys.executable, *(a.format(port=port) for a in argv)], cwd=cwd, env=env
            )
            procs.append(proc)
            _wait_listening(port, proc, what)
            pids[what] = proc.pid
            return port

        pids: dict[str, int] = {}
        servers = ("-m", "bench._gateway_servers")
        up = start("the upstream server", ROOT, env, *servers, "upstream", "{port}")
        url = f"http://127.0.0.1:{up}/mcp"

        config = work / "config" / "toolwire"
        config.mkdir(parents=True)
        (config / "mcp.json").write_text(json.dumps({"mcpServers": {"up": {"url": url}}}))
        # The organisation's policy in force, with its audit log: the gateway's real job.
        (config / "policy.toml").write_text(
            'deny = ["*_delete*"]\n\n[audit]\npath = "audit.jsonl"\n'
        )
        gw_env = {
            **env,
            "XDG_CONFIG_HOME": str(work / "config"),
            "XDG_DATA_HOME": str(work / "data"),
            "XDG_CACHE_HOME": str(work / "cache"),
            "TOOLWIRE_PLUGINS": "mcp",  # the upstream's tools only (policies always load)
        }
        serve = ("-m", "toolwire", "mcp", "serve", "--transport", "http", "--port", "{port}")
        gw = start("the toolwire gateway", work, gw_env, *serve)
        nl = start("the null proxy", ROOT, env, *servers, "null", "{port}", url)
        fm = start("the FastMCP proxy", ROOT, env, *servers, "fastmcp", "{port}", url)
        yield {
            "urls": {
                "direct": url,
                "null": f"http://127.0.0.1:{nl}/mcp",
                "toolwire": f"http://127.0.0.1:{gw}/mcp",
                "fastmcp": f"http://127.0.0.1:{fm}/mcp",
            },
            "names": {"direct": "", "null": "", "toolwire": "up_", "fastmcp": ""},
            "gateway_pid": pids["the toolwire gateway"],
            "audit": config / "audit.jsonl",
        }
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


async def _load(url: str, tool: str, clients: int, calls: int) -> dict[str, float]:
    """``calls`` calls of ``tool`` split among ``clients`` sessions (opened untimed)."""
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        for _ in range(max(1, 20 // clients)):  # warm each session and the server's path
            for s in sessions:
                await s.call_tool(tool, {"text": "warm"})
        latencies: list[float] = []
        share = [calls // clients + (1 if i < calls % clients else 0) for i in range(clients)]

        async def run(session: Any, n: int) -> None:
            for _ in range(n):
                start = time.perf_counter()
                result = await session.call_tool(tool, {"text": "hi"})
                latencies.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(f"{url} {tool}: {result.content}")

        start = time.perf_counter()
        await asyncio.gather(*(run(s, n) for s, n in zip(sessions, share, strict=True)))
        elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "rps": calls / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def _churn(url: str, tool: str, sessions: int, per: int) -> None:
    """``sessions`` sessions opened and closed in turn, 4 at a time, ``per`` calls each."""
    from mcp import Client

    async def one() -> None:
        async with Client(url) as s:
            for _ in range(per):
                await s.call_tool(tool, {"text": "hi"})

    for _ in range(sessions // 4):
        await asyncio.gather(*(one() for _ in range(4)))


#: mode -> (calls per concurrency, rounds per server, calls for the memory check)
MODES: dict[str, tuple[dict[int, int], int, int]] = {
    "full": ({1: 1000, 16: 1600, 64: 3200}, 2, 10_000),
    "quick": ({1: 300, 16: 480, 64: 640}, 1, 2_000),
    "smoke": ({1: 20, 16: 32, 64: 64}, 1, 200),
}


def _meta(mode: str, started: float) -> dict[str, Any]:
    import importlib.metadata as md
    import platform

    return {
        "mode": mode,
        "date": time.strftime("%Y-%m-%d"),
        "elapsed_s": round(time.monotonic() - started),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "mcp": md.version("mcp"),
        "fastmcp": md.version("fastmcp"),
    }


def measure(mode: str) -> dict[str, Any]:
    started = time.monotonic()
    calls, rounds, total = MODES[mode]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, _servers(Path(tmp)) as env:
        urls, names = env["urls"], env["names"]
        order = list(urls)
        for tool in TOOLS:
            for n in CONCURRENCY:
                got: dict[str, list[dict[str, float]]] = {k: [] for k in urls}
                for r in range(rounds):
                    turn = order[r % len(order) :] + order[: r % len(order)]
                    for kind in turn:
                        # FastMCP's proxy is an order of magnitude slower: a quarter of the
                        # calls gives its figures in a quarter of the time.
                        count = max(n, calls[n] // 4) if kind == "fastmcp" else calls[n]
                        got[kind].append(
                            asyncio.run(_load(urls[kind], names[kind] + tool, n, count))
                        )
                row: dict[str, Any] = {"tool": tool, "clients": n, "calls": calls[n]}
                for kind, runs in got.items():
                    row[kind] = {
                        "rps": statistics.median(x["rps"] for x in runs),
                        "p50_ms": statistics.median(x["p50_ms"] for x in runs),
                        "p99_ms": statistics.median(x["p99_ms"] for x in runs),
                    }
                d = row["direct"]
                row["toolwire_throughput_ratio"] = row["toolwire"]["rps"] / d["rps"]
                row["fastmcp_throughput_ratio"] = row["fastmcp"]["rps"] / d["rps"]
                row["toolwire_p99_ratio"] = row["toolwire"]["p99_ms"] / d["p99_ms"]
                row["null_throughput_ratio"] = row["null"]["rps"] / d["rps"]
                row["toolwire_vs_null"] = row["toolwire"]["rps"] / row["null"]["rps"]
                row["toolwire_p99_vs_null"] = row["toolwire"]["p99_ms"] / row["null"]["p99_ms"]
                rows.append(row)
                print(_line(row), flush=True)
        # Memory: warm, then 10,000 calls (2,000 quick) from sessions that come and go.
        url = urls["toolwire"]
        asyncio.run(_churn(url, "up_echo", 8, 50))
        before = _rss_mb(env["gateway_pid"])
        asyncio.run(_churn(url, "up_echo", max(4, total // 200), min(200, total // 4)))
        after = _rss_mb(env["gateway_pid"])
        audited = sum(1 for _ in env["audit"].open()) if env["audit"].exists() else 0
    memory = {
        "calls": total,
        "sessions": max(4, total // 200),
        "rss_before_mb": before,
        "rss_after_mb": after,
    }
    print(
        f"toolwire gateway memory: {before:.1f} MB -> {after:.1f} MB over {total:,} calls "
        f"in {memory['sessions']} sessions; {audited:,} audit records",
        flush=True,
    )
    return {
        "meta": _meta(mode, started),
        "rows": rows,
        "memory": memory,
        "audit_records": audited,
    }


def _line(row: dict[str, Any]) -> str:
    parts = [f"{row['tool']:<6} x{row['clients']:<3}"]
    for kind in ("direct", "null", "toolwire", "fastmcp"):
        r = row[kind]
        parts.append(f"{kind} {r['rps']:5.0f}/s p50 {r['p50_ms']:5.1f} p99 {r['p99_ms']:5.1f}")
    parts.append(
        f"vs direct: null {row['null_throughput_ratio']:.2f}x toolwire "
        f"{row['toolwire_throughput_ratio']:.2f}x fastmcp {row['fastmcp_throughput_ratio']:.2f}x; "
        f"toolwire vs null {row['toolwire_vs_null']:.2f}x (p99 {row['toolwire_p99_vs_null']:.2f}x)"
    )
    return " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls (a few minutes)")
    ap.add_argument("--smoke", action="store_true", help="a few calls: proves the harness runs")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    results = measure("smoke" if args.smoke else "quick" if args.quick else "full")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
