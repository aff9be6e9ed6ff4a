"""The deadlines of MCP calls in flight (toolwire_mcp.client._inflight): one loop timer per
connection, a late call's cancellation withdrawn, a cut the SDK takes for its own made
again, and what the caller is told."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

import toolwire as tw
from toolwire_mcp import MCPCallError, connected, mcp_toolset
from toolwire_mcp._config import ServerSpec
from toolwire_mcp.client import _inflight
from toolwire_mcp.client._inflight import Call, IdleClock


@attrs.define
class _Conn:
    """What a Call reads of its connection."""

    spec: ServerSpec
    _last_used: float = 0.0


def _conn(timeout: float = 30.0, max_call_time: float = 600.0) -> _Conn:
    spec = attrs.evolve(ServerSpec("srv", command="true"), timeout=timeout)
    return _Conn(attrs.evolve(spec, max_call_time=max_call_time))


def test_back_to_back_calls_arm_the_loop_timer_once() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        armed = 0
        call_at = loop.call_at

        def counting(*args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            nonlocal armed
            armed += 1
            return call_at(*args, **kwargs)

        loop.call_at = counting  # type: ignore[method-assign]
        clock = IdleClock(loop)
        conn = _conn()
        for _ in range(50):
            call = Call(conn, "echo", None)
            clock.add(call)
            await asyncio.sleep(0)
            call.alive()  # progress moves the deadline on: no timer for that either
            clock.remove(call)
        assert not clock.calls
        return armed

    assert 1 == asyncio.run(main())


def test_a_silent_call_is_cut_at_its_idle_deadline_and_told_so() -> None:
    async def main() -> tuple[str, int]:
        clock = IdleClock(asyncio.get_running_loop())
        call = Call(_conn(timeout=0.05), "nap", None)
        clock.add(call)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            assert 0 == call.withdraw()  # nobody else cancelled it
            told = str(call.late())
        finally:
            clock.remove(call)
        task = asyncio.current_task()
        assert task is not None
        return told, task.cancelling()

    told, cancelling = asyncio.run(main())
    assert "MCP server `srv` did not answer the call to `nap` within 0.05 s" == told
    assert 0 == cancelling  # withdrawn: a later timeout in this task works as it should


def test_progress_moves_the_idle_deadline_but_not_the_overall_limit() -> None:
    async def main() -> tuple[float, str]:
        clock = IdleClock(asyncio.get_running_loop())
        call = Call(_conn(timeout=0.1, max_call_time=0.35), "slow", None)
        clock.add(call)
        started = asyncio.get_running_loop().time()
        try:
            while True:
                await asyncio.sleep(0.05)
                call.alive()  # a word from the server every 0.05 s: never idle for 0.1 s
        except asyncio.CancelledError:
            call.withdraw()
            return asyncio.get_running_loop().time() - started, str(call.late())
        finally:
            clock.remove(call)

    took, told = asyncio.run(main())
    assert 0.3 <= took < 2.0
    assert told.endswith("did not finish the call to `slow` within 0.35 s (max_call_time)")


def test_a_cut_the_callee_swallows_is_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_inflight, "RECUT", 0.05)

    async def main() -> tuple[int, int, float]:
        loop = asyncio.get_running_loop()
        clock = IdleClock(loop)
        call = Call(_conn(timeout=0.05), "stubborn", None)
        clock.add(call)
        try:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                first = loop.time()  # as a library's own handler might: the wait goes on
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                return call.cuts, call.withdraw(), loop.time() - first
            return call.cuts, -1, 0.0  # not cut again
        finally:
            clock.remove(call)

    cuts, left, between = asyncio.run(main())
    assert 2 == cuts
    assert between >= 0.04  # RECUT later, not at once (a timer re-armed in the past spins)
    assert 0 == left  # both cuts withdrawn


def test_a_cut_withdrawn_leaves_another_cancellation_of_the_call_standing() -> None:
    async def main() -> tuple[int, bool]:
        withdrawn: list[int] = []
        started = asyncio.Event()
        calls: list[Call] = []

        async def call_it() -> None:
            call = Call(_conn(), "nap", None)
            calls.append(call)
            started.set()
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                withdrawn.append(call.withdraw())  # as the connection does
                raise

        task = asyncio.create_task(call_it())
        await started.wait()
        task.cancel()  # the caller's own cancellation, and the deadline's in the same turn
        calls[0].cut(asyncio.get_running_loop().time())
        with pytest.raises(asyncio.CancelledError):
            await task
        return withdrawn[0], task.cancelled()

    left, cancelled = asyncio.run(main())
    assert 1 == left  # the cut's withdrawn; the caller's stands
    assert cancelled


# -- with a real server ------------------------------------------------------------------------


def test_a_late_call_on_the_callers_loop_leaves_its_task_uncancelled(stdio_spec: Any) -> None:
    spec = stdio_spec("late", timeout=0.5)
    ts = mcp_toolset("late", spec)
    executor = tw.Executor(tools=ts, plugins=False)

    async def main() -> tuple[tw.ToolResult, int, bool, tw.ToolResult]:
        async with connected("late"):
            late = await executor.aexecute(tw.ToolCall("c1", "hang", "{}"))
            task = asyncio.current_task()
            assert task is not None
            cancelling = task.cancelling()
            timed_out = False
            try:  # a deadline of the caller's own, after: it fires as a timeout
                async with asyncio.timeout(0.05):
                    await asyncio.sleep(1)
            except TimeoutError:
                timed_out = True
            again = await executor.aexecute(tw.ToolCall("c2", "echo", '{"text": "on"}'))
            return late, cancelling, timed_out, again

    late, cancelling, timed_out, again = asyncio.run(main())
    assert late.is_error
    assert "did not answer the call to `hang` within 0.5 s" in late.content
    assert 0 == cancelling
    assert timed_out
    assert "echo: on" == again.content


def test_a_direct_call_past_its_deadline_raises_mcp_call_error(stdio_spec: Any) -> None:
    from toolwire_mcp.client._registry import connection_for

    spec = stdio_spec("direct", timeout=0.5)
    mcp_toolset("direct", spec)
    conn = connection_for(spec)

    async def main() -> str:
        async with connected("direct"):
            with pytest.raises(MCPCallError) as raised:
                await conn.call("hang", {})
            return str(raised.value)

    assert "did not answer the call to `hang` within 0.5 s" in asyncio.run(main())


def test_what_a_cut_call_raised_is_told_as_late_only_when_the_cut_caused_it() -> None:
    from toolwire_mcp.client._connection import _the_cuts_doing

    assert _the_cuts_doing(asyncio.CancelledError(), 0)  # the cut's own cancellation
    assert not _the_cuts_doing(asyncio.CancelledError(), 1)  # somebody else's too: cancels
    assert _the_cuts_doing(RuntimeError("the SDK made an error of it"), 0)
    assert not _the_cuts_doing(KeyboardInterrupt(), 0)  # stays what it is


def test_a_connected_block_leaves_no_timer_of_its_calls_on_its_loop(stdio_spec: Any) -> None:
    from toolwire_mcp.client._registry import connection_for

    spec = stdio_spec("tidy")
    ts = mcp_toolset("tidy", spec)
    executor = tw.Executor(tools=ts, plugins=False)
    conn = connection_for(spec)

    async def main() -> tuple[bool, bool, list[Any]]:
        async with connected("tidy"):
            result = await executor.aexecute(tw.ToolCall("c1", "echo", '{"text": "a"}'))
            local = conn._local
            assert local is not None
            assert local._clock is not None
            clock = local._clock
            armed = clock.handle is not None  # the deadlines' timer, while the block lasts
        scheduled = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
        left = [t for t in scheduled if not t.cancelled() and t._callback == clock._fire]
        return armed, result.content == "echo: a", left

    armed, answered, left = asyncio.run(main())
    assert armed
    assert answered
    assert [] == left


def test_a_call_outside_a_task_is_refused_before_it_is_sent() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        said: asyncio.Future[str] = loop.create_future()

        def in_a_callback() -> None:  # the loop runs it, in no task: nothing could cut it
            try:
                Call(_conn(), "echo", None)
            except Exception as exc:
                said.set_result(f"{type(exc).__name__}: {exc}")
            else:
                said.set_result("made")

        loop.call_soon(in_a_callback)
        return await said

    assert "RuntimeError: an MCP call runs in an asyncio task" == asyncio.run(main())
