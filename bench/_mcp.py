"""The ``mcp`` scenario: toolwire-mcp against the official SDK used directly.

- ``mcp: tools/call via toolwire toolset``: one ``echo`` call to a stdio server through
  ``mcp_toolset`` and the executor (validation, hooks off, the connection's loop thread),
  against the SDK's ``Client.call_tool`` on its own connection to the same server script.
- ``mcp: tools/call via toolwire toolset in connected()``: the same, with the toolset's
  connection opened on the caller's loop by ``async with connected()``, as the SDK's
  ``async with Client(...)`` opens its own: no hop to the loop thread.
- ``mcp bound: the SDK's Client across a loop thread``: the SDK's ``Client.call_tool`` on
  a connection held by a loop thread of its own, awaited from the caller's loop
  (``run_coroutine_threadsafe`` + ``wrap_future``), against the same call made directly:
  what the two thread hand-offs of the loop-thread design cost at the least, beside the
  first row's target (toolwire only).
- ``mcp: tools/list 500 tools via toolwire server``: ``tools/list`` of 500 tools from
  ``build_server`` (toolwire's MCP server: turn resolution, metadata -> annotations)
  against the SDK's own low-level ``Server`` listing the same 500 tools; both in process.

Paired, order alternating; the ratio is toolwire / SDK.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._labels import BOUND_ONLY

N_LIST = 500


def _schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
        "description": f"tool {i}",
    }


async def _paired(
    floor: Callable[[], Awaitable[Any]], lib: Callable[[], Awaitable[Any]], reps: int, per: int
) -> tuple[list[float], list[float], list[float]]:
    for _ in range(max(3, per // 4)):  # warm both paths
        await floor()
        await lib()
    f_s: list[float] = []
    l_s: list[float] = []
    ratios: list[float] = []

    async def batch(op: Callable[[], Awaitable[Any]]) -> float:
        start = time.perf_counter_ns()
        for _ in range(per):
            await op()
        return (time.perf_counter_ns() - start) / per

    for rep in range(reps):
        if rep % 2 == 0:
            tf = await batch(floor)
            tl = await batch(lib)
        else:
            tl = await batch(lib)
            tf = await batch(floor)
        f_s.append(tf)
        l_s.append(tl)
        ratios.append(tl / tf)
    return f_s, l_s, ratios


async def _call_pair(
    reps: int, per: int, *, on_caller_loop: bool = False
) -> tuple[list[float], list[float], list[float]]:
    from mcp import Client, StdioServerParameters

    import toolwire as tw
    from toolwire_mcp import close_all, connected, mcp_toolset

    # By path: the benchmark runs in a scratch directory, and an MCP stdio server gets a
    # minimal environment (no PYTHONPATH), so `-m bench._mcp_server` would not import.
    command = [sys.executable, str(Path(__file__).with_name("_mcp_server.py"))]
    toolset = mcp_toolset("bench", command)
    executor = tw.Executor(tools=toolset, plugins=False)
    call = tw.ToolCall("c1", "echo", '{"text": "hi"}')
    params = StdioServerParameters(command=command[0], args=command[1:])
    block = connected("bench") if on_caller_loop else contextlib.nullcontext()
    try:
        async with Client(params) as client, block:

            async def floor() -> Any:
                result = await client.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "echo: hi"

            async def lib() -> Any:
                result = await executor.aexecute(call)
                assert result.content == "echo: hi", result

            return await _paired(floor, lib, reps, per)
    finally:
        executor.close()
        close_all()


async def _hop_pair(reps: int, per: int) -> tuple[list[float], list[float], list[float]]:
    from mcp import Client, StdioServerParameters

    command = [sys.executable, str(Path(__file__).with_name("_mcp_server.py"))]
    params = StdioServerParameters(command=command[0], args=command[1:])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="bench-hop", daemon=True)
    thread.start()
    opened: concurrent.futures.Future[Any] = concurrent.futures.Future()
    stop = asyncio.Event()

    async def hold() -> None:
        # The connection is opened and closed in one task of the thread's loop (anyio's
        # task groups), as toolwire-mcp's loop thread holds its own.
        try:
            async with Client(params) as held:
                opened.set_result(held)
                await stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    holder = asyncio.run_coroutine_threadsafe(hold(), loop)
    try:
        across = await asyncio.wrap_future(opened)
        async with Client(params) as client:

            async def floor() -> Any:
                result = await client.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "echo: hi"

            async def lib() -> Any:
                call = across.call_tool("echo", {"text": "hi"})
                result = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, loop))
                assert result.content[0].text == "echo: hi"

            return await _paired(floor, lib, reps, per)
    finally:
        loop.call_soon_threadsafe(stop.set)
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(holder)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def _list_pair(reps: int, per: int) -> tuple[list[float], list[float], list[float]]:
    import mcp_types as types
    from mcp import Client
    from mcp.server.lowlevel import Server

    import toolwire as tw
    from toolwire_mcp import build_server

    sdk_tools = [
        types.Tool(name=f"tool_{i}", description=f"Tool {i}.", input_schema=_schema(i))
        for i in range(N_LIST)
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=sdk_tools)

    sdk = Server("sdk", on_list_tools=list_tools)
    toolset = tw.Toolset(
        "bench", [tw.raw_tool(f"tool_{i}", f"Tool {i}.", _schema(i)) for i in range(N_LIST)]
    )
    ours = build_server(toolset, host=tw.PluginHost(autoload=False))
    async with Client(sdk) as a, Client(ours) as b:

        async def floor() -> Any:
            assert len((await a.session.list_tools()).tools) == N_LIST

        async def lib() -> Any:
            assert len((await b.session.list_tools()).tools) == N_LIST

        return await _paired(floor, lib, reps, per)


def rows(reps: int, quick: bool, libs: list[str]) -> list[dict[str, Any]]:
    """The scenario's two rows (floor = the SDK; toolwire's column), or skip rows."""
    out = []
    for label, measure, per in (
        ("mcp: tools/call via toolwire toolset", _call_pair, 20 if quick else 100),
        (
            "mcp: tools/call via toolwire toolset in connected()",
            functools.partial(_call_pair, on_caller_loop=True),
            20 if quick else 100,
        ),
        ("mcp bound: the SDK's Client across a loop thread", _hop_pair, 20 if quick else 100),
        ("mcp: tools/list 500 tools via toolwire server", _list_pair, 3 if quick else 10),
    ):
        row: dict[str, Any] = {
            "scenario": "mcp",
            "label": label,
            "unit": "µs/op",
            "floor": None,
            "libs": {},
        }
        for name in libs:
            if name != "toolwire":
                row["libs"][name] = {
                    "skipped": BOUND_ONLY
                    if label.startswith("mcp bound")
                    else f"not measured for {name} (toolwire-mcp only)"
                }
        try:
            import toolwire_mcp  # noqa: F401
        except ImportError:
            row["libs"]["toolwire"] = {"skipped": "toolwire-mcp is not installed"}
            out.append(row)
            continue
        f_s, l_s, ratios = asyncio.run(measure(reps, per))
        row["floor"] = {"median": statistics.median(f_s) / 1000, "samples": [s / 1000 for s in f_s]}
        row["libs"]["toolwire"] = {
            "median": statistics.median(l_s) / 1000,
            "samples": [s / 1000 for s in l_s],
            "ratio": statistics.median(ratios),
            "ratios": ratios,
        }
        out.append(row)
    return out
