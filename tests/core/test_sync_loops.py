"""Running coroutines from sync code on pooled loops (toolwire._sync): what is ready runs
without the loop's poll, and everything else runs as asyncio's own loop runs it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import selectors
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import toolwire._sync as sync


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float | None]]:
    """The timeouts of every poll a selector makes (a system call that lets go of the GIL)."""
    seen: list[float | None] = []
    original = selectors.DefaultSelector.select

    def select(self: Any, timeout: float | None = None) -> Any:
        seen.append(timeout)
        return original(self, timeout)

    monkeypatch.setattr(selectors.DefaultSelector, "select", select)
    # A pool of its own: what earlier tests left on theirs decides nothing here.
    monkeypatch.setattr(sync, "_idle", [])
    yield seen
    for loop in sync._idle:
        loop.close()


def test_a_run_that_never_waits_makes_no_poll(polls: list[float | None]) -> None:
    async def decide(n: int) -> int:
        await asyncio.sleep(0)  # a step given up, as a hook's await may
        inner = asyncio.get_running_loop().create_task(asyncio.sleep(0, n + 1))
        return await inner

    assert 3 == sync.run_on_pooled_loop(decide(2))
    assert [] == polls
    assert asyncio.events._get_running_loop() is None


def test_a_run_that_waits_for_a_timer_or_another_thread_ends_as_asyncio_runs_it(
    polls: list[float | None],
) -> None:
    async def timer() -> str:
        await asyncio.sleep(0.01)
        return "timer"

    async def other_thread() -> str:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        threading.Timer(0.01, loop.call_soon_threadsafe, (answer.set_result, "thread")).start()
        return await answer

    assert "timer" == sync.run_on_pooled_loop(timer())
    assert "thread" == sync.run_on_pooled_loop(other_thread())
    assert polls  # these had to wait: the loop's own run_forever waited for them


def test_inside_a_run_the_loop_is_running_in_this_thread_with_its_asyncgen_hooks() -> None:
    caller_hooks = sys.get_asyncgen_hooks()
    seen: list[Any] = []

    async def look() -> None:
        loop = asyncio.get_running_loop()
        seen.append((loop.is_running(), asyncio.current_task() is not None))
        seen.append(sys.get_asyncgen_hooks().firstiter == loop._asyncgen_firstiter_hook)  # type: ignore[attr-defined]

    sync.run_on_pooled_loop(look())
    assert [(True, True), True] == seen
    assert caller_hooks == sys.get_asyncgen_hooks()


def test_an_error_and_an_interrupt_leave_the_loop_reusable() -> None:
    async def fails() -> None:
        raise ValueError("no")

    async def interrupted() -> None:
        raise KeyboardInterrupt

    async def fine() -> str:
        await asyncio.sleep(0)
        return "fine"

    with pytest.raises(ValueError, match="no"):
        sync.run_on_pooled_loop(fails())
    with pytest.raises(KeyboardInterrupt):
        sync.run_on_pooled_loop(interrupted())
    # No stop left queued by the interrupted run: the next run goes to its end.
    for _ in range(sync.MAX_IDLE + 1):
        assert "fine" == sync.run_on_pooled_loop(fine())


def test_an_interrupt_goes_up_to_the_caller_and_is_not_logged_as_never_retrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(KeyboardInterrupt):
            sync.run_on_pooled_loop(interrupted())
        gc.collect()
    assert "never retrieved" not in caplog.text


def test_a_run_given_its_task_ends_with_it_and_leaves_nothing_queued() -> None:
    loop = sync.take_loop()
    try:

        async def answer() -> int:
            await asyncio.sleep(0)
            return 7

        task = loop.create_task(answer())
        sync.run_until_stopped(loop, task)
        assert 7 == task.result()
        assert not loop._ready  # type: ignore[attr-defined]  # no stop left for the next run
    finally:
        sync.give_loop(loop)


def test_a_loop_of_another_class_runs_by_its_own_run_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    class Own(asyncio.SelectorEventLoop):
        def run_forever(self) -> None:
            ran.append("run_forever")
            super().run_forever()

    monkeypatch.setattr(sync, "_idle", [])
    monkeypatch.setattr(asyncio, "new_event_loop", Own)

    async def answer() -> int:
        return 42

    assert 42 == sync.run_on_pooled_loop(answer())
    assert ["run_forever"] == ran
    for loop in sync._idle:
        loop.close()


def test_a_stopped_loop_returns_to_its_caller_and_runs_on_from_there() -> None:
    # What Governor.begin does: the run stops its loop half-way, the caller acts, and the
    # loop runs on to the end.
    loop = sync.take_loop()
    try:
        gate: asyncio.Future[str] = loop.create_future()

        async def halves() -> str:
            asyncio.get_running_loop().stop()
            return "then " + await gate

        task = loop.create_task(halves())
        task.add_done_callback(sync.stop_when_done)
        sync.run_until_stopped(loop)
        assert not task.done()
        gate.set_result("done")
        sync.run_until_stopped(loop)
        assert "then done" == task.result()
    finally:
        sync.give_loop(loop)


def test_a_stop_from_inside_the_run_does_not_end_it_early() -> None:
    async def stops_its_loop() -> str:
        asyncio.get_running_loop().stop()
        await asyncio.sleep(0)
        return "to the end"

    assert "to the end" == sync.run_on_pooled_loop(stops_its_loop())
    assert 1 == sync.run_on_pooled_loop(asyncio.sleep(0, 1))


def test_what_was_ready_when_the_run_ended_runs_in_that_run() -> None:
    seen: list[int] = []

    async def queues() -> str:
        loop = asyncio.get_running_loop()
        loop.call_soon(seen.append, 1)
        loop.call_soon(seen.append, 2)
        return "done"

    assert "done" == sync.run_on_pooled_loop(queues())
    assert [1, 2] == seen  # not left to run during the next call on that loop


def test_an_async_generator_a_run_left_open_is_closed_at_its_end() -> None:
    closed: list[str] = []

    async def numbers() -> Any:
        try:
            yield 1
            yield 2
        finally:
            closed.append("closed")

    kept: list[Any] = []

    async def half() -> int:
        gen = numbers()
        kept.append(gen)  # still referenced: not finalized by the collector
        return await gen.__anext__()

    assert 1 == sync.run_on_pooled_loop(half())
    assert ["closed"] == closed  # as asyncio.run closes it


def test_a_sync_call_leaves_no_timer_and_a_later_deadline_still_cuts(
    polls: list[float | None],
) -> None:
    import toolwire as tw

    @tw.tool_fn(timeout=0.2)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @tw.tool_fn(timeout=0.3)  # its deadline later than the first call's: no new timer
    async def stuck(text: str) -> str:
        """Never answers in time."""
        await asyncio.sleep(5)
        return text

    @tw.tool_fn
    def plain(text: str) -> str:
        """Answers at once."""
        return text

    executor = tw.Executor(tools=[echo, stuck, plain], plugins=False)
    assert "x" == executor.execute(tw.ToolCall("c1", "echo", '{"text": "x"}')).content
    assert all(not loop._scheduled for loop in sync._idle)  # type: ignore[attr-defined]
    polls.clear()
    assert "y" == executor.execute(tw.ToolCall("c2", "plain", '{"text": "y"}')).content
    assert [] == polls  # no timer of the last call's left: nothing to poll for
    # The deadline clock was disarmed, not broken: a later call's deadline still fires.
    cut = executor.execute(tw.ToolCall("c3", "stuck", '{"text": "z"}'))
    assert cut.is_error
    assert "timed out" in cut.content


# -- coroutines stepped inline ----------------------------------------------------------------


def _drive(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    """Step ``coro`` inline until it ends or yields; carried on in a task from there."""
    import contextvars

    context = contextvars.copy_context()
    try:
        yielded = sync.step_inline(loop, coro, context)
    except StopIteration as stop:
        return "inline", stop.value
    task = loop.create_task(sync.carry_on(coro, yielded), context=context)
    return "task", loop.run_until_complete(task)


def test_a_coroutine_stepped_inline_sees_its_loop_and_no_task_until_it_asks_for_one() -> None:
    loop = sync.take_loop()
    seen: list[Any] = []

    async def look() -> str:
        running = asyncio.get_running_loop()
        seen.append((running is loop, asyncio.current_task(), sync.needs_a_task()))
        await sync.in_a_task()
        seen.append((asyncio.current_task() is not None, sync.needs_a_task()))
        async with asyncio.timeout(5):  # it has its task now
            await asyncio.sleep(0)
        return "done"

    try:
        assert ("task", "done") == _drive(loop, look())
        assert [(True, None, True), (True, False)] == seen
        assert asyncio.events._get_running_loop() is None  # marked only while it stepped
        assert not loop.is_running()
        seen.clear()

        async def quick() -> bool:  # never asks for its task: it ends inline
            return asyncio.current_task() is None

        assert ("inline", True) == _drive(loop, quick())

        async def in_one_already() -> bool:
            await sync.in_a_task()  # in a task: nothing, no step given up
            return asyncio.current_task() is not None

        assert sync.run_on_pooled_loop(in_one_already())
    finally:
        sync.give_loop(loop)


def test_what_a_task_sends_reaches_the_coroutine_carried_on() -> None:
    # A future's result and exception, and the task's cancellation, reach the coroutine
    # that yielded the future inline, as they would had it been the task's from the start.
    loop = sync.take_loop()
    try:
        for outcome in ("result", "error", "cancel"):
            got: list[Any] = []

            async def waits(outcome: str = outcome, got: list[Any] = got) -> None:
                fut = asyncio.get_running_loop().create_future()
                if outcome == "result":
                    loop.call_soon(fut.set_result, 5)
                elif outcome == "error":
                    loop.call_soon(fut.set_exception, KeyError("k"))
                try:
                    got.append(await fut)
                except BaseException as exc:
                    got.append(type(exc))
                    raise

            import contextvars

            context = contextvars.copy_context()
            coro = waits()
            yielded = sync.step_inline(loop, coro, context)
            assert isinstance(yielded, asyncio.Future)
            task = loop.create_task(sync.carry_on(coro, yielded), context=context)
            if outcome == "cancel":
                loop.call_soon(task.cancel)
            raises = pytest.raises((KeyError, asyncio.CancelledError))
            with raises if outcome != "result" else _no_raise():
                loop.run_until_complete(task)
            assert {"result": [5], "error": [KeyError], "cancel": [asyncio.CancelledError]}[
                outcome
            ] == got
    finally:
        sync.give_loop(loop)


def test_a_task_cancelled_before_its_first_step_cancels_the_coroutine_carried_on() -> None:
    import contextvars

    got: list[Any] = []

    async def gives_a_step_up() -> None:
        try:
            await asyncio.sleep(0)  # a bare yield: None
        except asyncio.CancelledError:
            got.append("cancelled")
            raise
        got.append("went on")

    loop = sync.take_loop()
    try:
        context = contextvars.copy_context()
        coro = gives_a_step_up()
        assert sync.step_inline(loop, coro, context) is None
        task = loop.create_task(sync.carry_on(coro, None), context=context)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            loop.run_until_complete(task)
        assert ["cancelled"] == got
        # Awaited rather than stepped by a task, it goes on the same way.
        coro, got[:] = gives_a_step_up(), []
        yielded = sync.step_inline(loop, coro, context)

        async def awaits() -> None:
            await sync.carry_on(coro, yielded)

        loop.run_until_complete(awaits())
        assert ["went on"] == got
    finally:
        sync.give_loop(loop)


def test_a_loop_given_back_unused_is_settled_when_something_was_queued_on_it() -> None:
    loop = sync.take_loop()
    left = loop.create_task(asyncio.sleep(100))  # its first step queued, never run
    sync.give_unused(loop)
    assert left.cancelled()  # cancelled and waited for, as give_loop settles
    assert loop in sync._idle
    assert [] == [t for t in asyncio.all_tasks(loop) if not t.done()]
    clean = sync.take_loop()
    sync.give_unused(clean)
    assert clean in sync._idle


@contextlib.contextmanager
def _no_raise() -> Iterator[None]:
    yield
