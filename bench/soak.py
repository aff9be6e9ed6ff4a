"""The gateway under load and faults, for a bounded time: ``uv run python -m bench.soak
[--seconds N] [--json OUT]``. Exits 1, saying why, when something that must hold did not.

On 127.0.0.1, each a process of its own: the official SDK's ``MCPServer`` over HTTP
(``echo``, ``wait10``), a stdio ``MCPServer`` the gateway starts (``crash_echo``), and
``toolwire mcp serve --transport http`` fronting both, with toolwire-policy's audit log,
three principals (a tokens file), a short session idle timeout and a per-client cap. For
``--seconds`` (150 by default):

- **load**: alice's 16 sessions call ``echo`` and ``wait10`` without pause;
- **abandoned sessions**: mallory opens a 2025-11-25 session every 20 ms and never
  closes it (past the per-client cap the gateway answers 503, with Retry-After);
- **a crashing server**: the stdio server is SIGKILLed every 4 s while bob calls it;
- **a killed audit writer**: another process appends to the same audit log without
  pause and is SIGKILLed every 1.5 s, mid-write or not.

What must hold, checked at the end: no error in alice's calls (each within 30 s); every
503 says when to retry; each of bob's failed calls answered with a clear error within
5 s, and a fresh server answering after each kill; the gateway's memory, descriptors and
threads flat (after the idle timeout has closed mallory's sessions); every call of
alice's with its decision and its result record; the audit chain verifying, with any
break a killed writer left shown as a break, not as tampering.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.gateway_load import ROOT, _port, _rss_mb, _wait_listening

#: Seconds a session that sent nothing is kept by the gateway under soak.
SESSION_IDLE = 3
#: Sessions one principal may hold open at once under soak.
PER_CLIENT = 24
#: alice's sessions.
LOAD_SESSIONS = 16
TOKENS = {"alice": "alice-token", "bob": "bob-token", "mallory": "mallory-token"}

_WRITER = """
import sys, time
from pathlib import Path
from toolwire_policy._audit import AuditLog, utc_now

log = AuditLog(Path(sys.argv[1]))
log.check()
n = 0
print("writing", flush=True)
while True:
    n += 1
    log.write({"time": utc_now(), "event": "soak", "tool": "soak_writer", "n": n,
               "padding": "x" * (n % 1024)})
    time.sleep(0.001)
"""


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError("no Threads")


def _sample(pid: int) -> dict[str, float]:
    return {"rss_mb": _rss_mb(pid), "fds": _fds(pid), "threads": _threads(pid)}


def _children(pid: int, marker: str) -> list[int]:
    """The processes whose parent is ``pid`` and whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and marker.encode() in cmdline:
            found.append(int(entry))
    return found


@contextlib.contextmanager
def _gateway(work: Path) -> Iterator[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        up = _port()
        upstream = subprocess.Popen(
            [sys.executable, "-m", "bench._gateway_servers", "upstream", str(up)],
            cwd=ROOT,
            env=env,
        )
        procs.append(upstream)
        _wait_listening(up, upstream, "the upstream server")
        config = work / "config" / "toolwire"
        config.mkdir(parents=True)
        servers = {
            "up": {"url": f"http://127.0.0.1:{up}/mcp"},
            "crashy": {
                "command": sys.executable,
                "args": ["-m", "bench._gateway_servers", "stdio"],
                "env": {"PYTHONPATH": str(ROOT)},
            },
        }
        (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
        (config / "policy.toml").write_text(
            'deny = ["*_delete*"]\n\n[audit]\npath = "audit.jsonl"\n'
        )
        tokens = [
            {"sha256": "sha256:" + hashlib.sha256(t.encode()).hexdigest(), "subject": who}
            for who, t in TOKENS.items()
        ]
        (work / "tokens.json").write_text(json.dumps({"tokens": tokens}))
        gw = _port()
        gateway = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolwire",
                "mcp",
                "serve",
                "--transport",
                "http",
                "--port",
                str(gw),
                "--tokens",
                str(work / "tokens.json"),
                "--session-idle",
                str(SESSION_IDLE),
                "--sessions-per-client",
                str(PER_CLIENT),
            ],
            cwd=work,
            env={
                **env,
                "XDG_CONFIG_HOME": str(work / "config"),
                "XDG_DATA_HOME": str(work / "data"),
                "XDG_CACHE_HOME": str(work / "cache"),
                "TOOLWIRE_PLUGINS": "mcp",
            },
        )
        procs.append(gateway)
        _wait_listening(gw, gateway, "the toolwire gateway")
        yield {
            "url": f"http://127.0.0.1:{gw}/mcp",
            "pid": gateway.pid,
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


@contextlib.asynccontextmanager
async def _session(url: str, who: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[who]}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


class Soak:
    def __init__(self, url: str, gateway_pid: int, audit: Path, seconds: float) -> None:
        self.url, self.pid, self.audit, self.seconds = url, gateway_pid, audit, seconds
        self.stop = asyncio.Event()  # the faults
        self.stop_load = asyncio.Event()
        self.load = {"calls": 0, "errors": 0, "first_error": None, "max_ms": 0.0}
        self.abandoned = {"opened": 0, "refused": 0, "without_retry_after": 0, "other": 0}
        self.crash = {
            "kills": 0,
            "calls": 0,
            "errors": 0,
            "unclear": 0,
            "max_error_s": 0.0,
            "recovered": 0,
        }
        self.writer = {"kills": 0}
        self.samples: list[dict[str, float]] = []

    async def _alice(self, session: Any, n: int) -> None:
        tools = ("up_echo", "up_wait10")
        while not self.stop_load.is_set():
            started = time.perf_counter()
            try:
                result = await asyncio.wait_for(
                    session.call_tool(tools[n % 2], {"text": f"call {n}"}), 30
                )
                bad = result.is_error
                why = str(result.content)[:200]
            except Exception as exc:
                bad, why = True, f"{type(exc).__name__}: {exc}"[:200]
            ms = 1000 * (time.perf_counter() - started)
            self.load["calls"] += 1
            self.load["max_ms"] = max(self.load["max_ms"], ms)
            if bad:
                self.load["errors"] += 1
                self.load["first_error"] = self.load["first_error"] or why
            n += 2

    async def _mallory(self) -> None:
        import httpx

        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "abandons", "version": "1"},
            },
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKENS['mallory']}",
        }
        async with httpx.AsyncClient(timeout=10) as http:
            while not self.stop.is_set():
                answer = await http.post(self.url, json=hello, headers=headers)
                if answer.status_code == 200:
                    self.abandoned["opened"] += 1
                elif answer.status_code == 503:
                    self.abandoned["refused"] += 1
                    if not answer.headers.get("retry-after"):
                        self.abandoned["without_retry_after"] += 1
                else:
                    self.abandoned["other"] += 1
                await asyncio.sleep(0.02)

    async def _bob(self) -> None:
        async with _session(self.url, "bob") as session:
            kills_seen = 0
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    result = await asyncio.wait_for(
                        session.call_tool("crashy_crash_echo", {"text": "hi"}), 30
                    )
                    ok, text = not result.is_error, str(result.content)
                except Exception as exc:
                    ok, text = False, ""
                    self.crash["unclear"] += 1  # not an answer: an exception or no answer
                    print(f"soak: bob's call raised {type(exc).__name__}: {exc}", flush=True)
                took = time.perf_counter() - started
                self.crash["calls"] += 1
                if ok:
                    if kills_seen < self.crash["kills"]:
                        self.crash["recovered"] += 1
                        kills_seen = self.crash["kills"]
                else:
                    self.crash["errors"] += 1
                    self.crash["max_error_s"] = max(self.crash["max_error_s"], took)
                    if not text.strip():
                        self.crash["unclear"] += 1
                await asyncio.sleep(0.05)

    async def _killer(self) -> None:
        while not self.stop.is_set():
            await asyncio.sleep(4)
            for pid in _children(self.pid, "bench._gateway_servers stdio"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    self.crash["kills"] += 1

    async def _writer(self) -> None:
        while not self.stop.is_set():
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _WRITER,
                str(self.audit),
                stdout=asyncio.subprocess.PIPE,
            )
            assert proc.stdout is not None
            await asyncio.wait_for(proc.stdout.readline(), 60)
            await asyncio.sleep(1.5)
            proc.kill()
            await proc.wait()
            self.writer["kills"] += 1

    async def _sampler(self) -> None:
        while not self.stop.is_set():
            self.samples.append(_sample(self.pid))
            await asyncio.sleep(1)

    async def run(self) -> dict[str, Any]:
        async with contextlib.AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(_session(self.url, "alice"))
                for _ in range(LOAD_SESSIONS)
            ]
            load = [asyncio.create_task(self._alice(s, i)) for i, s in enumerate(sessions)]
            await asyncio.sleep(5)  # warm: every path taken, caches filled
            before = _sample(self.pid)
            warm_calls = self.load["calls"]
            started = time.perf_counter()
            faults = [
                asyncio.create_task(job())
                for job in (self._mallory, self._bob, self._killer, self._writer, self._sampler)
            ]
            await asyncio.sleep(self.seconds)
            # The faults stop; the load goes on until mallory's sessions are past their
            # idle timeout, so what is measured after is the gateway at rest under load.
            self.stop.set()
            await asyncio.gather(*faults)
            await asyncio.sleep(SESSION_IDLE + 3)
            after = _sample(self.pid)
            self.stop_load.set()
            await asyncio.gather(*load)
            elapsed = time.perf_counter() - started
        return {
            "seconds": self.seconds,
            "elapsed_s": round(elapsed, 1),
            "load": {
                **self.load,
                "calls_per_s": round((self.load["calls"] - warm_calls) / elapsed, 1),
            },
            "abandoned": self.abandoned,
            "crash": self.crash,
            "writer": self.writer,
            "before": before,
            "after": after,
            "peak_rss_mb": max([s["rss_mb"] for s in self.samples] + [after["rss_mb"]]),
        }


def _audit(path: Path) -> dict[str, Any]:
    """What the audit log holds: alice's calls by their records, and its chain."""
    from toolwire_policy._audit import read_records, verify_log

    decisions: dict[str, int] = {}
    results: dict[str, int] = {}
    writer = torn = 0
    for _, _, record in read_records(path):
        if record is None:
            torn += 1
            continue
        if record.get("event") == "soak":
            writer += 1
            continue
        principal = (record.get("principal") or {}).get("subject")
        if principal != "alice":
            continue
        counts = {"decision": decisions, "result": results}.get(record.get("event", ""))
        if counts is not None:
            key = f"{record.get('session_id')}/{record.get('call_id')}"
            counts[key] = counts.get(key, 0) + 1
    first = verify_log(path)
    # A break (a line a killed writer cut short, then a chain from it) is what a crash
    # leaves; verified again with those accepted, anything else is tampering.
    report = verify_log(path, accept_breaks=first.breaks) if first.breaks else first
    return {
        "alice_decisions": sum(decisions.values()),
        "alice_results": sum(results.values()),
        "alice_calls_unmatched": sum(1 for k in decisions.keys() ^ results.keys()),
        "writer_records": writer,
        "torn_lines": torn,
        "records": report.records,
        "segments": report.segments,
        "breaks": len(report.breaks),
        "problem": report.problem,
    }


def _failures(results: dict[str, Any]) -> list[str]:
    load, ab, crash, audit = (
        results["load"],
        results["abandoned"],
        results["crash"],
        results["audit"],
    )
    before, after = results["before"], results["after"]
    checks = [
        (load["calls"] > 0, "alice made no call"),
        (load["errors"] == 0, f"{load['errors']} of alice's calls failed: {load['first_error']}"),
        (ab["opened"] > 0 and ab["refused"] > 0, f"mallory's sessions were not capped: {ab}"),
        (ab["without_retry_after"] == 0, f"{ab['without_retry_after']} 503s said no Retry-After"),
        (ab["other"] == 0, f"{ab['other']} of mallory's requests got another status"),
        (crash["kills"] > 0, "the stdio server was never killed"),
        (crash["unclear"] == 0, f"{crash['unclear']} of bob's calls got no clear answer"),
        (crash["max_error_s"] < 5, f"an error took {crash['max_error_s']:.1f} s"),
        (
            crash["recovered"] >= crash["kills"] - 1,
            f"a fresh server answered after {crash['recovered']} of {crash['kills']} kills",
        ),
        (results["writer"]["kills"] > 0, "the audit writer was never killed"),
        (
            after["rss_mb"] - before["rss_mb"] < 32,
            f"memory grew {before['rss_mb']:.1f} -> {after['rss_mb']:.1f} MB",
        ),
        (after["fds"] - before["fds"] <= 8, f"descriptors grew {before['fds']} -> {after['fds']}"),
        (
            after["threads"] - before["threads"] <= 4,
            f"threads grew {before['threads']} -> {after['threads']}",
        ),
        (audit["problem"] is None, f"the audit chain does not verify: {audit['problem']}"),
        (
            audit["alice_calls_unmatched"] == 0,
            f"{audit['alice_calls_unmatched']} of alice's calls lack a decision or a result",
        ),
        (
            audit["alice_results"] == load["calls"],
            f"alice made {load['calls']} calls; the log has {audit['alice_results']} results",
        ),
    ]
    return [why for held, why in checks if not held]


def measure(seconds: float) -> dict[str, Any]:
    import importlib.metadata as md
    import platform

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, _gateway(Path(tmp)) as env:
        soak = Soak(env["url"], env["pid"], env["audit"], seconds)
        results = asyncio.run(soak.run())
        results["audit"] = _audit(env["audit"])
    results["meta"] = {
        "date": time.strftime("%Y-%m-%d"),
        "elapsed_s": round(time.monotonic() - started),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "mcp": md.version("mcp"),
    }
    results["failures"] = _failures(results)
    return results


def summary(r: dict[str, Any]) -> str:
    load, ab, crash, audit = r["load"], r["abandoned"], r["crash"], r["audit"]
    b, a = r["before"], r["after"]
    return "\n".join(
        [
            f"soak: {r['seconds']:g} s of faults ({r['elapsed_s']} s in all)",
            f"  load: {load['calls']:,} calls, {load['errors']} errors, "
            f"{load['calls_per_s']}/s, slowest {load['max_ms']:.0f} ms",
            f"  abandoned sessions: {ab['opened']} opened, {ab['refused']} refused with 503 "
            f"({ab['without_retry_after']} without Retry-After)",
            f"  crashing server: {crash['kills']} kills, {crash['calls']} calls, "
            f"{crash['errors']} clear errors (slowest {crash['max_error_s']:.2f} s), "
            f"{crash['recovered']} recoveries",
            f"  killed audit writer: {r['writer']['kills']} kills, "
            f"{audit['writer_records']:,} records",
            f"  gateway: {b['rss_mb']:.1f} -> {a['rss_mb']:.1f} MB (peak "
            f"{r['peak_rss_mb']:.1f}), {b['fds']} -> {a['fds']} descriptors, "
            f"{b['threads']} -> {a['threads']} threads",
            f"  audit: {audit['records']:,} records in {audit['segments']} segment(s), "
            f"{audit['breaks']} break(s), alice: {audit['alice_decisions']:,} decisions, "
            f"{audit['alice_results']:,} results; chain "
            + ("verifies" if audit["problem"] is None else f"FAILS: {audit['problem']}"),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=150, help="how long the faults run (150)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    results = measure(args.seconds)
    print(summary(results), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    for why in results["failures"]:
        print(f"soak: FAILED: {why}", file=sys.stderr)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
