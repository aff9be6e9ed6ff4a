"""How an executor runs a batch's calls: one at a time or together (bounded), each
async call with a timeout in a task that is not waited for past it, the batch's first
attempts sharing one deadline per timeout, calls that must run alone on their own.

The :class:`_Scheduling` methods are the Executor's (it inherits them); they need only
what the class declares below.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from toolwire._execute.attempts import _ON_STUCK, _SHARED, ABANDON_GRACE, _deadlines, _Shared
from toolwire._execute.jobs import _Job
from toolwire._hooks import AuditEvent

if TYPE_CHECKING:
    from toolwire._calls import TypedCall
    from toolwire._execute.interceptors import Next
    from toolwire._plugins import PluginHost

logger = logging.getLogger("toolwire.execute")


def may_stick(job: _Job) -> bool:
    """An async tool with a timeout, run here: it may swallow its cancellation (unless it
    says it honours it)."""
    plan = job.plan
    return (
        plan is not None
        and plan.is_async
        and plan.timeout is not None
        and plan.remote is None
        and not plan.honours_cancellation
    )


class _Scheduling:
    """The executor's scheduling methods (a mixin of Executor)."""

    if TYPE_CHECKING:
        max_concurrency: int | None
        _chain: Next | None
        _on_result: Any
        _host: PluginHost | None

        @property
        def _host_results(self) -> bool: ...

        def _runner(self) -> Callable[[_Job], Coroutine[Any, Any, None]]: ...

        async def _run(self, job: _Job) -> None: ...

        async def _observe(self, job: _Job, call: TypedCall[Any]) -> None: ...

    async def _alone(self, job: _Job) -> None:
        """One call: inline, or in a task that is not waited for past its timeout."""
        if not may_stick(job):
            await self._run(job)
            return
        loop = asyncio.get_running_loop()
        await self._gather(loop, [job], [loop.create_task(self._run(job))])

    async def _gather(
        self,
        loop: asyncio.AbstractEventLoop,
        jobs: Sequence[_Job],
        tasks: Sequence[asyncio.Task[Any]],
    ) -> None:
        """Wait for the calls' tasks, as ``asyncio.gather`` does; a call whose deadline cut
        it and that has not ended ABANDON_GRACE later (an async tool that swallowed its
        cancellation) gets its timeout result then, and its task is left to end on its
        own, unwaited."""
        batch = _Batch(loop, dict(zip(tasks, jobs, strict=True)))
        try:
            await batch.done
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        for job, task in zip(jobs, tasks, strict=True):
            if job.abandoned:
                if self._on_result is not None or self._host_results:
                    assert job.call is not None
                    await self._observe(job, job.call)
            else:
                task.result()  # what the call's task raised (a cancellation) propagates

    async def _parallel(self, jobs: list[_Job]) -> None:
        if len(jobs) == 1:
            await self._alone(jobs[0])
            return
        bound = self.max_concurrency
        loop = asyncio.get_running_loop()
        shared: list[_Shared] = []
        if bound is None or bound >= len(jobs):
            run = self._runner()
            tasks = [loop.create_task(run(j)) for j in jobs]
            if self._chain is None:
                shared = _share_deadlines(loop, jobs, tasks)
        else:
            queue = iter(jobs)
            tasks = [asyncio.ensure_future(self._worker(queue)) for _ in range(bound)]
        try:
            if bound is None or bound >= len(jobs):
                await self._gather(loop, jobs, tasks)
            else:
                await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        finally:
            if shared:
                clock = _deadlines(loop)
                for group in shared:
                    clock.end(group)

    async def _worker(self, queue: Iterator[_Job]) -> None:
        for job in queue:
            await self._run(job)

    async def _run_all(self, jobs: Sequence[_Job]) -> None:
        runnable = [j for j in jobs if j.result is None]
        if not runnable:
            return
        try:
            if len(runnable) == 1 and not may_stick(runnable[0]):
                await self._runner()(runnable[0])  # one call, inline: _alone's common case
            else:
                await self._run_runnable(runnable)
        except BaseException:
            # Cancelled (or stopped) with calls that will have no result: the policies
            # are told, so what they hold for a call (a quota slot) is freed however it
            # ended, and the audit log says the call never answered.
            self._unanswered([j for j in runnable if j.result is None and not j.abandoned])
            raise

    def _unanswered(self, jobs: Sequence[_Job]) -> None:
        host = self._host
        if host is None:
            return
        for job in jobs:
            call = job.call
            if call is None:
                continue
            event = AuditEvent(
                "cancelled",
                "the call was cancelled before it gave a result",
                tool=call.name,
                call_id=call.id,
                arguments=call.call.arguments,
                call=call.call,
            )
            try:
                host.audit(event, job.context)
            except Exception:  # the host logs a hook's failure; never mask the cancellation
                logger.exception("the audit of cancelled call %s failed", call.id)

    async def _run_runnable(self, runnable: list[_Job]) -> None:
        if len(runnable) == 1:
            await self._alone(runnable[0])
            return
        segment: list[_Job] = []
        for job in runnable:
            assert job.plan is not None
            if job.plan.run_alone:
                if segment:
                    await self._parallel(segment)
                    segment = []
                await self._alone(job)
            else:
                segment.append(job)
        if segment:
            await self._parallel(segment)


#: Tasks of calls answered at their timeout that have not ended yet (see _abandon).
_STUCK: set[asyncio.Task[Any]] = set()


class _Batch:
    """The calls of one batch on their way: ``done`` resolves when each has ended or been
    answered at its timeout (see Executor._gather)."""

    __slots__ = ("done", "jobs", "left")

    def __init__(self, loop: asyncio.AbstractEventLoop, jobs: dict[asyncio.Task[Any], _Job]):
        self.done: asyncio.Future[None] = loop.create_future()
        self.jobs = jobs
        self.left = len(jobs)
        for task, job in jobs.items():
            if may_stick(job):
                _ON_STUCK[task] = self.cut
            task.add_done_callback(self.ended)

    def ended(self, task: asyncio.Task[Any]) -> None:
        _ON_STUCK.pop(task, None)
        if not self.jobs[task].abandoned:  # (an abandoned one was counted then)
            self._count()

    def _count(self) -> None:
        self.left -= 1
        if not self.left and not self.done.done():
            self.done.set_result(None)

    def cut(self, task: asyncio.Task[Any]) -> None:
        """The deadline of the attempt running in ``task`` cut it: see ABANDON_GRACE later
        whether that attempt has ended."""
        task.get_loop().call_later(ABANDON_GRACE, self.stuck, task, self.jobs[task].attempt)

    def stuck(self, task: asyncio.Task[Any], attempt: int) -> None:
        """Attempt ``attempt``'s deadline cut it ABANDON_GRACE ago: abandoned if that
        attempt is still running (a tool that swallowed its cancellation). A call whose
        cut attempt ended and that is retrying (or waiting to) is not stuck: its answer is
        the retry's."""
        job = self.jobs[task]
        if task.done() or job.abandoned or self.done.done() or job.attempt != attempt:
            return
        call, plan = job.call, job.plan
        assert call is not None
        assert plan is not None
        assert plan.timeout is not None
        job.abandoned = True
        job.result = call.error(f"tool `{call.name}` timed out after {float(plan.timeout)!r} s")
        job.error_type = "timeout"
        logger.warning(
            "tool=%s call=%s ignored its cancellation at its %g s timeout; answered with a "
            "timeout, and the tool is left to end on its own",
            call.name,
            call.id,
            plan.timeout,
        )
        _STUCK.add(task)  # kept alive until it ends (the loop holds tasks weakly)
        task.add_done_callback(_STUCK.discard)
        self._count()


def _share_deadlines(
    loop: asyncio.AbstractEventLoop, jobs: Sequence[_Job], tasks: Sequence[asyncio.Task[Any]]
) -> list[_Shared]:
    """One deadline per timeout for the first attempts of a batch's async calls, whose
    tasks were just made (see _Shared). They start in the loop's next step, together, so
    the deadline is the one each would set: one clock read and one timer entry per batch
    instead of a deadline (and a wrapper coroutine) per call. Retries, calls run by a
    backend and sync tools keep a deadline of their own."""
    groups: dict[float, _Shared] = {}
    for job, task in zip(jobs, tasks, strict=True):
        plan = job.plan
        if plan is None or not plan.is_async or plan.remote is not None:
            continue
        seconds = plan.timeout
        if seconds is None:
            continue
        group = groups.get(seconds)
        if group is None:
            group = groups[seconds] = _Shared(loop.time() + seconds)
        group.members.append((job, task))
        job.timing = _SHARED
    if not groups:
        return []
    clock = _deadlines(loop)
    for group in groups.values():
        clock.add(loop, group)
    return list(groups.values())
