"""The Executor: the per-call pipeline (checks, approval, interceptors, retries, timeouts,
output validation), and dispatch, run_plan and resume.

Its stages are methods because they share the executor's per-tool cache and
configuration; how a batch's calls are scheduled is in ``scheduling`` (a mixin), which
host and backend it uses in ``hosting``, what it takes from plans and approvals in
``plans``, and each call's state in ``jobs``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from pydantic import ValidationError

from toolwire._backends import BackendCall, ToolBackend
from toolwire._calls import (
    HandledCall,
    RejectedCall,
    ToolCall,
    ToolResult,
    TypedCall,
    rejection_content,
    rejection_reason,
)
from toolwire._decisions import arun_hooks
from toolwire._errors import (
    ApprovalPendingError,
    EventLoopError,
    ToolBackendError,
    ToolExecutionError,
    ToolTimeoutError,
    UsageError,
)
from toolwire._execute.approval import (
    Approval,
    ApprovalGate,
    ApprovalRequest,
    Approver,
    call_fingerprint,
)
from toolwire._execute.attempts import (
    _CUT,
    _OVER,
    _SHARED,
    _ApprovalMismatch,
    _NotRetryable,
    _OutputMismatch,
    _raise_if_cut,
    _refuse_if_cut,
    _retry_after,
    _with_timeout,
    is_transient,
)
from toolwire._execute.deciding import _Deciding
from toolwire._execute.hosting import _resolve_host, resolve_backend
from toolwire._execute.interceptors import (
    Interceptor,
    Next,
    ToolRequest,
    _checked_interceptor,
    _link,
)
from toolwire._execute.jobs import (
    _effect_of,
    _errors_text,
    _Job,
    _matcher,
    _maybe_await,
    _PreparedTool,
)
from toolwire._execute.paused import RoundExecution
from toolwire._execute.plans import (
    _AUDITED,
    _approval_map,
    _audit_refusal,
    _guards_for,
    _plan_calls,
)
from toolwire._execute.scheduling import _Scheduling
from toolwire._exports import publish
from toolwire._hooks import _EMPTY_CONTEXT, AuditEvent, HookContext, HookSet, Principal
from toolwire._media import Structured
from toolwire._metadata import Capability
from toolwire._round import (
    ToolRound,
    ToolRoundPlan,
)
from toolwire._sync import run_on_pooled_loop
from toolwire._tools import Tool
from toolwire._toolset import Toolset

if TYPE_CHECKING:
    from toolwire._otel import Tracing

logger = logging.getLogger("toolwire.execute")
_T = TypeVar("_T")


#: A job's error_type that is no refusal to report: none (a hook answered the call itself)
#: or one audited already (an unknown tool, invalid arguments).
_NOT_REFUSALS = frozenset({None, *_AUDITED})


class Executor(_Deciding, _Scheduling):
    """Runs tool calls: checks, approval, interceptors, timeout, retry, parallelism.

    Options (all keyword-only):

    - ``tools``: a Toolset (or tools) to look raw ToolCalls up in; TypedCalls
      carry their tool.
    - ``allowed_capabilities``: the sandbox allow-list (default: every Capability).
    - ``is_available`` / ``validate``: checks for every tool (``fn(tool) -> bool``;
      ``fn(call) -> None | bool | str``, a string or False or a ValueError
      being the refusal); per-tool ones with :meth:`availability` / :meth:`validator`.
    - ``approval``: the approver, ``fn(ApprovalRequest) -> Allow | Deny | Modify
      | Defer`` (sync or async); ``approval_gate``: which effects it sees
      (``always`` by default).
    - ``interceptors``: wrap each attempt; the first one is the outermost.
    - ``max_concurrency``: calls in flight in ``execute_all`` (None: no bound).
    - ``validate_output``: check outputs against the tool's output type.
    - ``retry_if``: the retry classifier (default :func:`is_transient`).
    - ``injected``: values for tools' injected parameters, by parameter name.
    - ``on_result``: ``fn(call, result) -> ToolResult | None`` sees every result
      of a typed call (observe, or return a redacted result); if it raises,
      the call gets an error result (fail closed).
    - ``on_tool_error``: ``fn(call, exception)`` for each call a tool's exception
      ended (after its retries), before the exception becomes the call's error
      result: to keep it, or to pass a kind of failure on (the MCP gateway ends a call
      with an ``MCPError`` its tool raised). Sync; what it raises is logged.
    - ``tracing``: a :class:`toolwire.Tracing` for OpenTelemetry spans.
    - ``clock``, ``sleep``, ``rng``: injectable time source, backoff sleep, jitter.
    - ``plugins``: the plugin host whose result hooks see every result (after
      ``on_result``) and whose failed policies block every call: ``True`` (the
      default) is the process's host (``toolwire.get_host()``), ``False`` its
      policies without its tool packs (a policy is turned off only by
      ``TOOLWIRE_DISABLE_POLICIES``).
    - ``approval_wait``: seconds a call may wait for the people a policy names (the
      approval queue, :mod:`toolwire.approvals`; default 0: refused at once, naming its
      request, to be made again once approved); ``on_approval_wait``: ``fn(request,
      seconds)`` when a wait begins and every few seconds of it (sync or async). Waiting
      is cancellable; an answered call is decided again (an approval runs it once).
    - ``principal``: who the calls it decides (``execute``, ``execute_all``) are made
      for when their context names nobody (a :class:`toolwire.Principal`; a context
      that names one is kept; a plan keeps the context its round was decided with).
    - ``thread_pool``: where ``blocking=True`` tools run (default: a pool of
      ``max_concurrency`` threads, made on first use).
    - ``backend``: where tool bodies run: a :class:`toolwire.ToolBackend`, the name
      of a registered one (``"ray"``), or None for ``TOOLWIRE_BACKEND`` (unset:
      in-process). Everything that decides a call stays here; tools marked
      ``local=True`` (or that the backend does not accept) run in-process.

    Sync tools run inline on the event loop (no thread hop) unless declared
    ``blocking=True``. A timeout cannot preempt an inline sync tool: it applies
    to async tools and to blocking (threaded) tools, whose thread is left to
    finish on its own once the call has timed out. An async tool that swallows
    its cancellation is answered at its timeout all the same (after a 0.1 s
    grace) and left to end on its own.
    """

    def __init__(
        self,
        *,
        tools: Toolset | Iterable[Any] | None = None,
        allowed_capabilities: Iterable[Capability | str] | None = None,
        is_available: Callable[[Tool[Any, Any]], Any] | None = None,
        validate: Callable[[TypedCall[Any]], Any] | None = None,
        approval: Approver | None = None,
        approval_gate: ApprovalGate | str = ApprovalGate.ALWAYS,
        interceptors: Iterable[Interceptor | Callable[..., Any]] = (),
        max_concurrency: int | None = 8,
        validate_output: bool = True,
        retry_if: Callable[[BaseException], bool] = is_transient,
        injected: Mapping[str, Any] | None = None,
        on_result: Callable[[TypedCall[Any], ToolResult], Any] | None = None,
        on_tool_error: Callable[[TypedCall[Any], BaseException], Any] | None = None,
        tracing: Tracing | None = None,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        thread_pool: concurrent.futures.Executor | None = None,
        plugins: Any = True,
        backend: ToolBackend | str | None = None,
        principal: Principal | None = None,
        approval_wait: float = 0.0,
        on_approval_wait: Callable[[Any, float], Any] | None = None,
    ) -> None:
        if not isinstance(approval_wait, (int, float)) or not approval_wait >= 0:
            raise UsageError(f"approval_wait must be seconds >= 0, got {approval_wait!r}")
        self._approval_wait = float(approval_wait)
        self._on_approval_wait = on_approval_wait
        if principal is not None and not isinstance(principal, Principal):
            raise UsageError(
                f"principal must be a toolwire.Principal, got {type(principal).__name__}"
            )
        self.principal = principal
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise UsageError(
                f"max_concurrency must be an int >= 1 or None, got {max_concurrency!r}"
            )
        self._tools: dict[str, Tool[Any, Any]] = {}
        if tools is not None:
            if isinstance(tools, Toolset):
                self._tools = {t.name: t for t in tools.tools()}  # names checked on assembly
            else:
                # The same rule as a Toolset: two tools of one name is an error, not "the
                # last one wins" (which would run a different tool than the one offered).
                self._tools = {t.name: t for t in Toolset("executor", tools).tools()}
        self._toolset = tools if isinstance(tools, Toolset) else None
        self._allowed = (
            frozenset(Capability)
            if allowed_capabilities is None
            else frozenset(Capability(c) for c in allowed_capabilities)
        )
        self._is_available = is_available
        self._validate = validate
        self._approver = approval
        self._gate = ApprovalGate(approval_gate)
        self._interceptors = tuple(_checked_interceptor(i, n) for n, i in enumerate(interceptors))
        self.max_concurrency = max_concurrency
        self.validate_output = validate_output
        self._retry_if = retry_if
        self._injected = dict(injected or {})
        self._on_result = on_result
        self._on_tool_error = on_tool_error
        self._host = _resolve_host(plugins)
        self.backend = resolve_backend(backend, self._host)
        # The host's result hooks (tool packs, then policies) see every result after
        # ``on_result``; looked up once. A host with none costs nothing per call.
        self._tracing = tracing
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._pool = thread_pool
        self._own_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._availability: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]] = []
        self._validators: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]] = []
        self._prepared: dict[Tool[Any, Any], _PreparedTool] = {}
        self._chain = self._build_chain()

    def __repr__(self) -> str:
        where = f" backend={self.backend.name!r}" if self.backend is not None else ""
        return (
            f"<Executor max_concurrency={self.max_concurrency} "
            f"interceptors={len(self._interceptors)} approval={self._approver is not None}"
            f"{where}>"
        )

    # -- configuration ------------------------------------------------------------------

    def availability(self, target: Any, fn: Callable[..., Any] | None = None) -> Any:
        """Register ``fn(tool) -> bool`` deciding whether ``target`` may run now.

        ``target`` is a tool, a @tool_input class, a function tool or a wire
        name. Usable as a decorator. A check that raises counts as unavailable.
        """

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._availability.append((_matcher(target), f))
            self._prepared.clear()
            return f

        return register if fn is None else register(fn)

    def validator(self, target: Any, fn: Callable[..., Any] | None = None) -> Any:
        """Register ``fn(call) -> None | bool | str`` validating ``target``'s calls.

        Runs after schema validation. None or True passes; False, a string
        (the reason) or a raised ValueError refuses the call. May be async.
        """

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._validators.append((_matcher(target), f))
            self._prepared.clear()
            return f

        return register if fn is None else register(fn)

    def close(self) -> None:
        """Shut down the executor's own thread pool (threads still running are not waited
        for). A backend is not closed: it may be shared (a registered backend is one per
        process); close a backend you made yourself when you are done with it."""
        pool, self._own_pool = self._own_pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def _prepare(self, tool: Tool[Any, Any]) -> _PreparedTool:
        plan = self._prepared.get(tool)
        if plan is None:
            plan = self._prepared[tool] = _PreparedTool(self, tool)
        return plan

    def _thread_pool(self) -> concurrent.futures.Executor:
        if self._pool is not None:
            return self._pool
        if self._own_pool is None:
            self._own_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.max_concurrency or 32, thread_name_prefix="toolwire-tool"
            )
        return self._own_pool

    def _build_chain(self) -> Next | None:
        if not self._interceptors:
            return None

        async def innermost(request: ToolRequest) -> ToolResult:
            return await self._attempt(
                self._prepare(request.call.tool), request.call, request.approved
            )

        chain: Next = innermost
        for icpt in reversed(self._interceptors):
            chain = _link(icpt, chain)
        return chain

    # -- stage 1: lookup and checks (deciding.py) ------------------------------------------

    # -- stage 2: approval ----------------------------------------------------------------

    # -- stage 3: running -----------------------------------------------------------------

    async def _attempt(
        self,
        plan: _PreparedTool,
        call: TypedCall[Any],
        approved: str | None,
        shared: _Job | None = None,
    ) -> ToolResult:
        """One attempt: run the tool under its timeout, validate its output. Raises on failure.

        ``shared``: the job whose first attempt this is, timed by its batch's shared
        deadline (see _share_deadlines) rather than a deadline of its own.
        """
        if approved is not None and call_fingerprint(call) != approved:
            raise _ApprovalMismatch(
                f"the arguments of tool `{call.name}` changed after they were approved; "
                f"the call was not run"
            )
        tool = plan.tool
        timeout = plan.timeout
        if plan.remote is not None:
            fn, kwargs = tool.invocation(call.input, **plan.injected)
            out = await plan.remote.run(
                BackendCall(tool, fn, kwargs, plan.is_async, timeout, call.id, plan.remote_options)
            )
        elif plan.is_async:
            aw = tool.call(call.input, **plan.injected)
            if timeout is None:
                out = await aw
            elif shared is None:
                out = await _with_timeout(aw, timeout)
            else:  # as _with_timeout does, inline: the batch's deadline is already set
                try:
                    out = await aw
                except asyncio.CancelledError:
                    _raise_if_cut(shared.timing == _CUT, timeout)
                    raise
                _refuse_if_cut(shared.timing == _CUT, timeout)
        elif plan.blocking:
            loop = asyncio.get_running_loop()
            ctx = contextvars.copy_context()
            fut = loop.run_in_executor(
                self._thread_pool(),
                functools.partial(ctx.run, tool.call, call.input, **plan.injected),
            )
            out = await (fut if timeout is None else _with_timeout(fut, timeout))
        else:
            out = tool.call(call.input, **plan.injected)
            if hasattr(out, "__await__"):
                out = await (out if timeout is None else _with_timeout(out, timeout))
        if plan.out_adapter is not None:
            try:
                if type(out) is Structured:  # Structured[X]: the value is checked as an X
                    out = Structured(plan.out_adapter.validate_python(out.value), out.text)
                else:
                    out = plan.out_adapter.validate_python(out)
            except ValidationError as exc:
                raise _OutputMismatch(
                    f"tool `{call.name}` returned output that does not match its output type "
                    f"{_type_name(tool.output_type)}:\n{_errors_text(exc, '(output)')}"
                ) from None
        elif plan.out_str and not isinstance(out, str):
            raise _OutputMismatch(
                f"tool `{call.name}` returned {type(out).__name__}, but its output type is str"
            )
        return call.complete(out)

    async def _run_job(self, job: _Job) -> None:
        """Retries around interceptors around one attempt; sets job.result."""
        call, plan = job.call, job.plan
        assert call is not None
        assert plan is not None
        if plan.missing is not None:
            job.result = call.error(plan.missing)
            job.error_type = "not_runnable"
            return
        chain = self._chain
        attempt = 1
        while True:
            job.attempt = attempt
            try:
                if chain is None:
                    if job.timing == _SHARED:
                        try:
                            result = await self._attempt(plan, call, job.approved, job)
                        finally:
                            if job.timing == _SHARED:
                                job.timing = _OVER  # a retry has a deadline of its own
                    else:
                        result = await self._attempt(plan, call, job.approved)
                else:
                    result = await chain(ToolRequest(call, attempt, job.context, job.approved))
                job.attempt = 0
                break
            except (Exception, SystemExit) as exc:
                job.attempt = 0  # this attempt ended: a retry is not a stuck tool
                # SystemExit from a tool is the tool failing, not the program ending (a
                # KeyboardInterrupt still stops the program; cancellation still cancels).
                if (
                    not isinstance(exc, Exception)
                    or attempt >= plan.max_attempts
                    or isinstance(exc, _NotRetryable)
                    or not self._retry_if(exc)
                ):
                    result = self._failure(call, exc, attempt, job)
                    break
                assert plan.hint is not None
                delay = plan.hint.delay(
                    attempt - 1, rand=self._rng(), retry_after=_retry_after(exc)
                )
                logger.info(
                    "tool=%s call=%s attempt=%d failed (%s); retrying in %.3f s",
                    call.name,
                    call.id,
                    attempt,
                    type(exc).__name__,
                    delay,
                )
                # A cancellation here propagates: the failed attempt is over and
                # the next one has not started, so nothing is left half done.
                await self._sleep(delay)
                attempt += 1
        if job.abandoned:
            return  # the executor answered it at its timeout and moved on
        job.result = result
        if self._on_result is not None or self._host_results:
            await self._observe(job, call)

    @property
    def _host_results(self) -> bool:
        # Read at each use (the host caches it): a policy registered after this executor
        # was made still sees every result.
        return self._host is not None and bool(self._host._result_pipeline())

    async def _observe_handled(self, plan: ToolRoundPlan) -> None:
        """Results hooks answered (Complete) pass the same result hooks as results that ran
        (once per plan: the plan's handled results are replaced in place)."""
        if (
            not plan.handled
            or plan._observed
            or not (self._on_result is not None or self._host_results)
        ):
            return
        handled = []
        for h in plan.handled:
            job = _Job(h.call.call, plan.context)
            job.result = h.result
            await self._observe(job, h.call)
            assert job.result is not None
            handled.append(attrs.evolve(h, result=job.result))
        plan.handled = tuple(handled)
        plan._observed = True

    def _failure(
        self, call: TypedCall[Any], exc: BaseException, attempts: int, job: _Job
    ) -> ToolResult:
        if self._on_tool_error is not None:
            try:
                self._on_tool_error(call, exc)
            except Exception as raised:
                logger.warning(
                    "on_tool_error for %s call %s failed: %r", call.name, call.id, raised
                )
        if isinstance(exc, ToolTimeoutError):  # in-process (_ToolTimeout) or a backend's
            text = f"tool `{call.name}` timed out after {float(exc.seconds)!r} s"
            job.error_type = "timeout"
        elif isinstance(exc, ToolBackendError):
            where = self.backend.name if self.backend is not None else "backend"
            text = f"tool `{call.name}` could not run on the {where} backend: {exc}"
            job.error_type = exc.kind
        elif isinstance(exc, _ApprovalMismatch):
            job.error_type = exc.kind
            return call.error(rejection_content(exc.message))
        elif isinstance(exc, _NotRetryable):
            text = exc.message
            job.error_type = exc.kind
        elif getattr(type(exc), "toolwire_plain", False) is True:
            # The exception carries the tool's own words (an MCP server's isError text):
            # its class name would only wrap them twice.
            text = f"tool `{call.name}` failed: {exc}"
            job.error_type = type(exc).__qualname__
        else:
            text = f"tool `{call.name}` failed: {type(exc).__name__}: {exc}"
            job.error_type = type(exc).__qualname__
        if attempts > 1:
            text += f" (after {attempts} attempts)"
        return call.error(text)

    async def _observe(self, job: _Job, call: TypedCall[Any]) -> None:
        assert job.result is not None
        if self._on_result is not None:
            await self._observe_with(job, call, self._on_result)
        if self._host_results:
            assert self._host is not None
            host = self._host
            ctx = job.context
            await self._observe_with(job, call, lambda c, r: host.atool_result(c, r, ctx), own=True)

    async def _observe_with(
        self,
        job: _Job,
        call: TypedCall[Any],
        hook: Callable[[TypedCall[Any], ToolResult], Any],
        own: bool = False,
    ) -> None:
        """``own``: the host's result hooks (they await each plugin's in a task)."""
        assert job.result is not None
        try:
            given = hook(call, job.result)
            new = await given if own else await _maybe_await(given)
        except Exception as exc:
            # The model sees the exception type; the message (it may hold internal detail)
            # goes to the log only, as for decision hooks.
            logger.warning("result hook for %s call %s failed: %r", call.name, call.id, exc)
            job.result = call.error(f"result hook failed ({type(exc).__name__})")
            job.error_type = "result_hook_failed"
            return
        if new is None:
            return
        if not isinstance(new, ToolResult) or not new.answers(call.call):
            job.result = call.error(
                f"result hook returned {type(new).__name__} that does not answer call "
                f"`{call.id}`; return None or a ToolResult for the same call"
            )
            job.error_type = "result_hook_failed"
            return
        job.result = new

    async def _run(self, job: _Job) -> None:
        if self._tracing is None:
            await self._run_job(job)
            return
        with self._tracing.tool_span(job.raw, _effect_of(job)) as span:
            await self._run_job(job)
            span.record(job.result, job.error_type)

    def _runner(self) -> Callable[[_Job], Coroutine[Any, Any, None]]:
        return self._run_job if self._tracing is None else self._run

    def _for_whom(self, context: HookContext | None) -> HookContext | None:
        """``context`` with this executor's principal, when it names nobody."""
        if self.principal is None or (context is not None and context.principal is not None):
            return context
        return attrs.evolve(context or _EMPTY_CONTEXT, principal=self.principal)

    async def _process(
        self,
        calls: Sequence[TypedCall[Any] | ToolCall],
        context: HookContext | None,
        approvals: Iterable[Approval] | Mapping[str, Approval],
        guards: Sequence[HookSet] | None = None,
    ) -> tuple[list[_Job], list[ApprovalRequest]]:
        """Check every call, decide approval, run what may run.

        ``guards`` None: the calls come from a plan whose hooks ran. Otherwise the host's
        policies (and the guard hooks among ``guards``, a restored round's hook sets) see
        each call before anything else: a call no hook has seen is never run unjudged.
        """
        jobs: list[_Job] = []
        blocked = self._host.blocked_notices if self._host is not None else ()
        host = self._host
        own = host.hook_sets()[0] if host is not None else None
        for c in calls:
            raw = c.call if isinstance(c, TypedCall) else c
            if blocked and isinstance(raw, ToolCall):
                # A policy failed to load: nothing runs (fail closed), whatever the hooks said.
                job = _Job(raw, context)
                job.refuse(f"tool `{raw.name}` was not run: {blocked[0]}", "policy_blocked")
                jobs.append(job)
                continue
            if not isinstance(raw, ToolCall):
                raise UsageError(
                    f"the executor takes TypedCall or ToolCall objects, got {type(c).__name__}"
                )
            job = _Job(raw, context)
            call_guards = guards
            guard = c._guard if isinstance(c, TypedCall) and guards == () else None
            if guard is not None:
                # A call from a round whose hooks (and installed policies) must decide it:
                # decided once, here or by the round's own loop.
                decided = await guard.adecide(c, context)
                if isinstance(decided, RejectedCall):
                    job.result = decided.result
                    job.error_type = "policy_rejected"
                    jobs.append(job)
                    continue
                if isinstance(decided, HandledCall):
                    job.result = decided.result
                    jobs.append(job)
                    continue
                c = decided
                if own is None or any(s is own for s in guard.sets):
                    call_guards = None  # this executor's policies were among them
            validate = self._check(job, c)
            if job.error_type in _AUDITED and host is not None:
                _audit_refusal(host, job, context)
            elif (
                call_guards is not None
                and job.result is None
                and isinstance(c, ToolCall)
                and self._toolset is not None
                and self._toolset.collected_hooks()
            ):
                # A raw call on this executor's toolset: its own hook sets decide it, after
                # the policies, as they do for a round (the Agent's and `toolwire call`'s).
                assert job.call is not None
                sets = [own] if own else []
                sets.extend(s for s in call_guards if all(s is not p for p in sets))
                sets.extend(self._toolset.collected_hooks())
                decided = await arun_hooks(job.call, sets, context or _EMPTY_CONTEXT)
                call_guards = None
                if isinstance(decided, (RejectedCall, HandledCall)):
                    job.result = decided.result
                    if isinstance(decided, RejectedCall):
                        job.error_type = "policy_rejected"
                    jobs.append(job)
                    continue
                job.call = decided
            if (
                call_guards is not None
                and job.result is None
                and (call_guards or (host is not None and host.hook_sets()[0]))
            ):
                # (The host's policies read again: one registered meanwhile applies.)
                assert job.call is not None
                decided = await self._policies_on(job.call, context, call_guards)
                if isinstance(decided, str):
                    when = "when its paused round was resumed" if call_guards else "by a policy"
                    job.refuse(
                        f"tool `{raw.name}` was rejected {when}: {decided}", "policy_rejected"
                    )
                else:
                    job.call = decided  # as the policies left it: a rewrite runs rewritten
            if validate and job.result is None:
                assert job.plan is not None
                assert job.call is not None
                await self._run_validators(job, job.plan, job.call)
            jobs.append(job)
        given = _approval_map(approvals, jobs) if approvals else {}
        if self._approver is not None or given:
            pending = await self._approve(jobs, given)
            if pending:
                return jobs, pending
        if host is not None:
            # Refused before running (a decision hook, an approver, a check after the
            # hooks): a policy that let the call through hears it never ran.
            for job in jobs:
                if job.result is not None and job.error_type not in _NOT_REFUSALS:
                    raw = job.call.call if job.call is not None else job.raw
                    reason = rejection_reason(job.result) or job.result.content
                    event = AuditEvent(
                        "refused", reason, raw.name, raw.id, raw.arguments, "toolwire", raw
                    )
                    host.audit(event, context)
        if self._tracing is not None:
            for job in jobs:  # calls refused before running: unknown, sandbox, invalid, denied
                if job.result is not None:
                    with self._tracing.tool_span(job.raw, _effect_of(job)) as span:
                        span.record(job.result, job.error_type)
        await self._run_all(jobs)
        if self._approval_wait:
            from toolwire._execute.waiting import wait_for_approvers  # only when asked for

            await wait_for_approvers(
                jobs, self._approval_wait, self._on_approval_wait, lambda j: self._again(j, context)
            )
        return jobs, []

    async def _again(self, job: _Job, context: HookContext | None) -> ToolResult:
        """A call an approver answered, decided (and run) anew."""
        jobs, _ = await self._process((job.call or job.raw,), context, (), ())
        result = jobs[0].result
        assert result is not None
        return result

    # -- public API -----------------------------------------------------------------------

    async def aexecute(
        self,
        call: TypedCall[Any] | ToolCall,
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> ToolResult:
        """Run one call; every failure is an error result (never raised).

        Raises ApprovalPendingError only when the approver deferred.
        """
        # A call that did not come through a round's hooks: the host's policies decide it.
        jobs, pending = await self._process((call,), self._for_whom(context), approvals, ())
        if pending:
            raise ApprovalPendingError(tuple(pending))
        result = jobs[0].result
        assert result is not None
        return result

    def execute(
        self,
        call: TypedCall[Any] | ToolCall,
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> ToolResult:
        """Sync :meth:`aexecute` (runs an event loop; not for use inside one)."""
        return _run_sync(self.aexecute(call, context=context, approvals=approvals), "execute")

    async def aexecute_all(
        self,
        calls: Iterable[TypedCall[Any] | ToolCall],
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Run calls in parallel (at most ``max_concurrency`` at once); results in input order.

        Async tools are awaited concurrently; sync tools run inline, ``blocking``
        ones in worker threads; a ``run_alone`` tool waits for everything
        before it, runs by itself, then the rest continue. Approval is decided
        for every call before any runs: if one is deferred nothing runs and
        ApprovalPendingError carries every pending request.
        """
        jobs, pending = await self._process(list(calls), self._for_whom(context), approvals, ())
        if pending:
            raise ApprovalPendingError(tuple(pending))
        return [j.result for j in jobs if j.result is not None]

    def execute_all(
        self,
        calls: Iterable[TypedCall[Any] | ToolCall],
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Sync :meth:`aexecute_all`."""
        return _run_sync(
            self.aexecute_all(calls, context=context, approvals=approvals), "execute_all"
        )

    async def adispatch(
        self, call: TypedCall[Any] | ToolCall, *, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`aexecute`, but an error result raises ToolExecutionError (``.result``)."""
        result = await self.aexecute(call, context=context)
        if result.is_error:
            raise ToolExecutionError(_error_text(result), result=result)
        return result

    def dispatch(
        self, call: TypedCall[Any] | ToolCall, *, context: HookContext | None = None
    ) -> ToolResult:
        """Sync :meth:`adispatch`."""
        return _run_sync(self.adispatch(call, context=context), "dispatch")

    async def arun_plan(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Run a plan's pending calls (or a bare round's calls); results in the plan's order."""
        plan = await self._decided(plan)
        calls, context = _plan_calls(plan)
        jobs, pending = await self._process(calls, context, approvals, _guards_for(plan))
        if pending:
            raise ApprovalPendingError(tuple(pending))
        results = [j.result for j in jobs if j.result is not None]
        if isinstance(plan, ToolRoundPlan):
            await self._observe_handled(plan)  # so plan.commit writes the observed results
        return results

    def run_plan(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Sync :meth:`arun_plan`."""
        return _run_sync(self.arun_plan(plan, approvals=approvals), "run_plan")

    async def aexecute_and_commit(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> RoundExecution:
        """Run the pending calls and commit the round (handled + rejected + issues + results).

        If an approval is deferred, nothing runs and nothing is committed: the
        RoundExecution carries the pending requests; resume with :meth:`aresume`.
        """
        calls, context = _plan_calls(plan)
        # Refuse before anything runs: resuming a committed round again, or a round whose
        # session moved on, must not run its tools a second time.
        (plan.round if isinstance(plan, ToolRoundPlan) else plan)._check_writable()
        plan = await self._decided(plan)
        if self._approval_wait and isinstance(plan, ToolRoundPlan):
            from toolwire._execute.waiting import wait_in_plan  # only when asked for

            plan = await wait_in_plan(plan, self._approval_wait, self._on_approval_wait)
        calls, context = _plan_calls(plan)
        jobs, pending = await self._process(calls, context, approvals, _guards_for(plan))
        if pending:
            return RoundExecution(plan, (), tuple(pending), False)
        results = tuple(j.result for j in jobs if j.result is not None)
        if isinstance(plan, ToolRoundPlan):
            await self._observe_handled(plan)
        plan.commit(results)
        return RoundExecution(plan, results, (), True)

    def execute_and_commit(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> RoundExecution:
        """Sync :meth:`aexecute_and_commit`."""
        return _run_sync(self.aexecute_and_commit(plan, approvals=approvals), "execute_and_commit")

    async def aresume(
        self,
        plan: ToolRoundPlan | ToolRound | RoundExecution,
        approvals: Iterable[Approval] | Mapping[str, Approval],
    ) -> RoundExecution:
        """Continue a plan whose approval was deferred, with the decisions made since.

        Each Approval is bound to the fingerprint that was reviewed: a call
        whose arguments changed since gets an error result and is not run.
        Calls without a decision go to the approver again.
        """
        target = plan.plan if isinstance(plan, RoundExecution) else plan
        return await self.aexecute_and_commit(target, approvals=approvals)

    def resume(
        self,
        plan: ToolRoundPlan | ToolRound | RoundExecution,
        approvals: Iterable[Approval] | Mapping[str, Approval],
    ) -> RoundExecution:
        """Sync :meth:`aresume`."""
        return _run_sync(self.aresume(plan, approvals), "resume")


def _error_text(result: ToolResult) -> str:

    reason = rejection_reason(result)
    return reason if reason is not None else result.content


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _run_sync(coro: Coroutine[Any, Any, _T], what: str) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        # A loop of the pool: asyncio.run's own makes and closes a loop a call (about
        # 100 µs); each run still ends as asyncio.run ends one (toolwire._sync).
        return run_on_pooled_loop(coro)
    coro.close()
    raise EventLoopError(
        f"Executor.{what}() runs its own event loop and cannot be called inside a running "
        f"one; use `await executor.a{what}(...)` in async code"
    )


publish(globals())
