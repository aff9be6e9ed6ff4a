"""The executor: ordered checks, error results, timeouts, retries, parallelism, outputs."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

import toolwire as tw
from toolwire._calls import rejection_reason


def typed(tool: tw.Tool[Any, Any], arguments: str = "{}", id: str = "c1") -> tw.TypedCall[Any]:
    return tw.TypedCall(tw.ToolCall(id, tool.name, arguments), tool, tool.validate_json(arguments))


class Recorder:
    """An injectable backoff sleep that records the delays it was asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@tw.tool_fn
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tw.tool_fn(capabilities=["network"])
def fetch(url: str) -> str:
    """Fetch a URL."""
    return f"fetched {url}"


# -- lookup and checks ---------------------------------------------------------------------


def test_a_typed_call_runs_and_its_output_is_serialised() -> None:
    result = tw.Executor().execute(typed(add, '{"a": 2, "b": 3}'))
    assert tw.ToolResult("c1", "add", '{"a": 2, "b": 3}', "5", False) == result


def test_a_raw_call_is_looked_up_and_validated() -> None:
    ex = tw.Executor(tools=tw.Toolset("t", [add]))
    assert "5" == ex.execute(tw.ToolCall("c1", "add", '{"a": 2, "b": 3}')).content


def test_an_unknown_tool_is_an_error_result() -> None:
    result = tw.Executor(tools=[add]).execute(tw.ToolCall("c1", "nope", "{}"))
    assert result.is_error
    assert "unknown tool `nope`" == rejection_reason(result)


def test_a_capability_outside_the_allow_list_is_a_sandbox_violation() -> None:
    ex = tw.Executor(allowed_capabilities=[tw.Capability.PURE_COMPUTATION])
    result = ex.execute(typed(fetch, '{"url": "x"}'))
    assert result.is_error
    assert "sandbox violation: tool `fetch` requires network" == rejection_reason(result)


def test_every_capability_is_allowed_by_default() -> None:
    assert "fetched x" == tw.Executor().execute(typed(fetch, '{"url": "x"}')).content


def test_the_capability_check_comes_before_schema_validation() -> None:
    ex = tw.Executor(tools=[fetch], allowed_capabilities=())
    result = ex.execute(tw.ToolCall("c1", "fetch", "not json"))
    assert "sandbox violation: tool `fetch` requires network" == rejection_reason(result)


def test_an_unavailable_tool_is_not_run() -> None:
    ran = []
    ex = tw.Executor(is_available=lambda tool: tool.name != "add")
    ex.validator(add, lambda call: ran.append(call) and None)
    result = ex.execute(typed(add, '{"a": 1, "b": 1}'))
    assert "tool `add` is currently unavailable" == rejection_reason(result)
    assert [] == ran


def test_a_per_tool_availability_check_applies_to_that_tool_only() -> None:
    ex = tw.Executor()
    ex.availability(add, lambda tool: False)
    assert ex.execute(typed(add, '{"a": 1, "b": 1}')).is_error
    assert not ex.execute(typed(fetch, '{"url": "x"}')).is_error


def test_an_availability_check_that_raises_fails_closed() -> None:
    def broken(tool: tw.Tool[Any, Any]) -> bool:
        raise RuntimeError("no idea")

    result = tw.Executor(is_available=broken).execute(typed(add, '{"a": 1, "b": 1}'))
    assert "tool `add` is currently unavailable" == rejection_reason(result)


def test_invalid_raw_arguments_keep_pydantic_detail() -> None:
    ex = tw.Executor(tools=[add])
    result = ex.execute(tw.ToolCall("c1", "add", '{"a": "x"}'))
    assert result.is_error
    assert (
        "tool `add` arguments did not match the expected schema:\n"
        "- a: Input should be a valid integer, unable to parse string as an integer\n"
        "- b: Field required"
    ) == rejection_reason(result)


@pytest.mark.parametrize(
    ("verdict", "reason"),
    [("b must be positive", "b must be positive"), (False, "validation failed")],
)
def test_a_validator_refusal_is_an_error_result(verdict: Any, reason: str) -> None:
    ex = tw.Executor(validate=lambda call: verdict)
    result = ex.execute(typed(add, '{"a": 1, "b": -1}'))
    assert f"tool `add` arguments were refused: {reason}" == rejection_reason(result)


def test_a_validator_raising_value_error_refuses_with_its_message() -> None:
    ex = tw.Executor()

    @ex.validator(add)
    async def check(call: tw.TypedCall[Any]) -> None:
        if call.input.b < 0:
            raise ValueError("b must be positive")

    assert "tool `add` arguments were refused: b must be positive" == rejection_reason(
        ex.execute(typed(add, '{"a": 1, "b": -1}'))
    )
    assert "1" == ex.execute(typed(add, '{"a": 1, "b": 0}')).content


def test_a_tool_exception_is_an_error_result() -> None:
    @tw.tool_fn
    def boom() -> str:
        raise ValueError("bad input")

    result = tw.Executor().execute(typed(boom))
    assert tw.ToolResult("c1", "boom", "{}", "tool `boom` failed: ValueError: bad input", True) == (
        result
    )


def test_dispatch_raises_for_an_error_result_and_returns_a_success() -> None:
    ex = tw.Executor(tools=[add])
    assert "3" == ex.dispatch(tw.ToolCall("c1", "add", '{"a": 1, "b": 2}')).content
    with pytest.raises(tw.ToolExecutionError, match="unknown tool `nope`") as info:
        ex.dispatch(tw.ToolCall("c2", "nope", "{}"))
    assert info.value.result is not None
    assert info.value.result.is_error


def test_a_tool_input_class_without_implementation_is_an_error_result() -> None:
    @tw.tool_input
    class Lookup(BaseModel):
        key: str

    tool = tw.tool_of(Lookup)
    result = tw.Executor().execute(typed(tool, '{"key": "k"}'))
    assert result.is_error
    assert result.content.startswith("tool `lookup` has no implementation")


def test_injected_values_are_passed_and_missing_ones_are_named() -> None:
    @tw.tool_fn
    def greet(name: str, prefix: Annotated[str, tw.Injected]) -> str:
        return f"{prefix} {name}"

    call = typed(greet, '{"name": "Ada"}')
    assert "Hi Ada" == tw.Executor(injected={"prefix": "Hi"}).execute(call).content
    missing = tw.Executor().execute(call)
    assert missing.is_error
    assert "needs injected value(s) 'prefix'" in missing.content


def test_the_executor_takes_only_calls() -> None:
    with pytest.raises(TypeError, match="TypedCall or ToolCall objects, got str"):
        tw.Executor().execute("add")  # type: ignore[arg-type]


async def test_the_sync_variant_refuses_to_run_inside_an_event_loop() -> None:
    with pytest.raises(RuntimeError, match=r"use `await executor.aexecute\(...\)`"):
        tw.Executor().execute(typed(add, '{"a": 1, "b": 1}'))


def test_max_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_concurrency must be an int >= 1 or None, got 0"):
        tw.Executor(max_concurrency=0)


# -- output validation ---------------------------------------------------------------------


def test_output_of_the_wrong_type_is_an_error_result() -> None:
    @tw.tool_fn
    def count() -> int:
        return "many"  # type: ignore[return-value]

    result = tw.Executor().execute(typed(count))
    assert result.is_error
    assert result.content.startswith(
        "tool `count` returned output that does not match its output type int:\n- (output): "
    )


def test_a_str_tool_returning_something_else_is_an_error_result() -> None:
    @tw.tool_fn
    def name() -> str:
        return 42  # type: ignore[return-value]

    result = tw.Executor().execute(typed(name))
    assert "tool `name` returned int, but its output type is str" == result.content


def test_output_validation_can_be_turned_off() -> None:
    @tw.tool_fn
    def count() -> int:
        return "many"  # type: ignore[return-value]

    assert "many" == tw.Executor(validate_output=False).execute(typed(count)).content


class Point(BaseModel):
    x: int
    y: int


def test_model_outputs_are_validated_and_serialised() -> None:
    @tw.tool_fn
    def origin() -> Point:
        return {"x": 0, "y": 0}  # type: ignore[return-value]

    assert '{"x":0,"y":0}' == tw.Executor().execute(typed(origin)).content


def test_on_result_can_redact_and_fails_closed() -> None:
    seen: list[str] = []

    def redact(call: tw.TypedCall[Any], result: tw.ToolResult) -> tw.ToolResult | None:
        seen.append(call.name)
        return call.complete("[redacted]") if call.name == "add" else None

    ex = tw.Executor(on_result=redact)
    assert "[redacted]" == ex.execute(typed(add, '{"a": 1, "b": 1}')).content
    assert "fetched x" == ex.execute(typed(fetch, '{"url": "x"}')).content
    assert ["add", "fetch"] == seen

    def broken(call: tw.TypedCall[Any], result: tw.ToolResult) -> None:
        raise RuntimeError("oops")

    failed = tw.Executor(on_result=broken).execute(typed(add, '{"a": 1, "b": 1}'))
    assert "result hook failed (RuntimeError)" == failed.content
    assert failed.is_error


# -- timeouts ------------------------------------------------------------------------------


async def test_an_async_tool_that_hangs_times_out() -> None:
    never = asyncio.Event()

    @tw.tool_fn(timeout=0.05)
    async def hang() -> str:
        await never.wait()
        return "never"

    result = await tw.Executor().aexecute(typed(hang))
    assert tw.ToolResult("c1", "hang", "{}", "tool `hang` timed out after 0.05 s", True) == result


async def test_a_blocking_tool_that_hangs_times_out_and_its_thread_is_left_alone() -> None:
    release = threading.Event()

    @tw.tool_fn(timeout=0.05, blocking=True)
    def hang() -> str:
        release.wait(5)
        return "late"

    ex = tw.Executor()
    try:
        result = await ex.aexecute(typed(hang))
    finally:
        release.set()
        ex.close()
    assert "tool `hang` timed out after 0.05 s" == result.content


async def test_a_tool_raising_timeout_error_itself_is_a_failure_not_a_timeout() -> None:
    @tw.tool_fn
    async def slow() -> str:
        raise TimeoutError("upstream")

    result = await tw.Executor().aexecute(typed(slow))
    assert "tool `slow` failed: TimeoutError: upstream" == result.content


async def test_the_timeout_interceptor_caps_every_tool() -> None:
    never = asyncio.Event()

    @tw.tool_fn(timeout=None)
    async def hang() -> str:
        await never.wait()
        return "never"

    ex = tw.Executor(interceptors=[tw.TimeoutInterceptor(0.05)])
    assert "tool `hang` timed out after 0.05 s" == (await ex.aexecute(typed(hang))).content


# -- sync inline vs blocking ----------------------------------------------------------------


async def test_sync_tools_run_inline_and_blocking_ones_in_a_worker_thread() -> None:
    threads: dict[str, int] = {}

    @tw.tool_fn
    def inline() -> str:
        threads["inline"] = threading.get_ident()
        return "ok"

    @tw.tool_fn(blocking=True)
    def blocking() -> str:
        threads["blocking"] = threading.get_ident()
        return "ok"

    ex = tw.Executor()
    await ex.aexecute_all([typed(inline, id="a"), typed(blocking, id="b")])
    ex.close()
    assert threading.get_ident() == threads["inline"]
    assert threading.get_ident() != threads["blocking"]


# -- retries -------------------------------------------------------------------------------


def flaky(failures: int, exc: BaseException, **options: Any) -> tuple[tw.Tool[Any, Any], list[int]]:
    attempts: list[int] = []

    @tw.tool_fn(name="flaky", **options)
    def tool() -> str:
        attempts.append(1)
        if len(attempts) <= failures:
            raise exc
        return "ok"

    return tool, attempts


def test_a_tool_with_a_retry_hint_is_retried_with_exponential_backoff() -> None:
    hint = tw.RetryHint(max_attempts=4, initial_backoff=0.1, jitter=0.5)
    tool, attempts = flaky(3, ConnectionError("reset"), retry_hint=hint)
    sleep = Recorder()
    result = tw.Executor(sleep=sleep, rng=lambda: 0.5).execute(typed(tool))
    assert "ok" == result.content
    assert 4 == len(attempts)
    # base * (1 - jitter * rand): 0.1, 0.2, 0.4 each times 0.75 (jitter only shortens)
    assert [0.075, 0.15, 0.3] == pytest.approx(sleep.delays)


def test_retries_stop_at_max_attempts_and_say_how_many_there_were() -> None:
    tool, attempts = flaky(
        10, ConnectionError("reset"), retry_hint=tw.RetryHint(3, initial_backoff=0.01)
    )
    result = tw.Executor(sleep=Recorder(), rng=lambda: 0.0).execute(typed(tool))
    assert 3 == len(attempts)
    assert "tool `flaky` failed: ConnectionError: reset (after 3 attempts)" == result.content


def test_without_a_retry_hint_there_is_exactly_one_attempt() -> None:
    tool, attempts = flaky(1, ConnectionError("reset"))
    sleep = Recorder()
    result = tw.Executor(sleep=sleep).execute(typed(tool))
    assert result.is_error
    assert (1, []) == (len(attempts), sleep.delays)


def test_a_non_transient_error_is_not_retried() -> None:
    tool, attempts = flaky(1, ValueError("bad"), retry_hint=tw.RetryHint(3))
    result = tw.Executor(sleep=Recorder()).execute(typed(tool))
    assert "tool `flaky` failed: ValueError: bad" == result.content
    assert 1 == len(attempts)


def test_retry_after_from_the_error_replaces_the_backoff() -> None:
    error = tw.exceptions.RateLimitError("slow down", provider="x", status=429, retry_after=2.5)
    tool, _ = flaky(1, error, retry_hint=tw.RetryHint(3, initial_backoff=0.1, max_backoff=10))
    sleep = Recorder()
    assert "ok" == tw.Executor(sleep=sleep, rng=lambda: 0.0).execute(typed(tool)).content
    assert [2.5] == sleep.delays


def test_retry_after_is_capped_at_max_backoff() -> None:
    error = tw.exceptions.RateLimitError("slow down", retry_after=600)
    tool, _ = flaky(1, error, retry_hint=tw.RetryHint(3, max_backoff=5))
    sleep = Recorder()
    tw.Executor(sleep=sleep).execute(typed(tool))
    assert [5.0] == sleep.delays


def test_the_retry_classifier_is_configurable() -> None:
    tool, attempts = flaky(2, KeyError("k"), retry_hint=tw.RetryHint(3, initial_backoff=0))
    ex = tw.Executor(sleep=Recorder(), retry_if=lambda exc: isinstance(exc, KeyError))
    assert "ok" == ex.execute(typed(tool)).content
    assert 3 == len(attempts)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), True),
        (ConnectionError(), True),
        (tw.exceptions.ServerError("x"), True),
        (tw.exceptions.BadRequestError("x"), False),
        (ValueError(), False),
    ],
)
def test_is_transient(exc: BaseException, expected: bool) -> None:
    assert expected == tw.exceptions.is_transient(exc)


async def test_cancellation_during_backoff_propagates_and_stops_retrying() -> None:
    tool, attempts = flaky(5, ConnectionError("reset"), retry_hint=tw.RetryHint(5))
    sleeping = asyncio.Event()

    async def sleep(seconds: float) -> None:
        sleeping.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(tw.Executor(sleep=sleep).aexecute(typed(tool)))
    await sleeping.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 1 == len(attempts)


async def test_a_timed_out_attempt_is_retried_for_a_tool_with_a_hint() -> None:
    calls: list[int] = []

    @tw.tool_fn(timeout=0.05, retry_hint=tw.RetryHint(2, initial_backoff=0))
    async def sometimes() -> str:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Event().wait()
        return "second"

    assert "second" == (await tw.Executor(sleep=Recorder()).aexecute(typed(sometimes))).content


# -- execute_all -----------------------------------------------------------------------------


async def test_execute_all_respects_the_concurrency_bound() -> None:
    in_flight = 0
    peak = 0

    @tw.tool_fn
    async def work(n: int) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await asyncio.sleep(0)
        in_flight -= 1
        return n

    calls = [typed(work, f'{{"n": {i}}}', id=f"c{i}") for i in range(20)]
    results = await tw.Executor(max_concurrency=3).aexecute_all(calls)
    assert 3 == peak
    assert [str(i) for i in range(20)] == [r.content for r in results]


async def test_execute_all_keeps_input_order_when_tools_finish_out_of_order() -> None:
    gates = [asyncio.Event() for _ in range(4)]
    finished: list[int] = []

    @tw.tool_fn
    async def wait(n: int) -> int:
        await gates[n].wait()
        finished.append(n)
        if n > 0:
            gates[n - 1].set()
        return n

    gates[3].set()
    calls = [typed(wait, f'{{"n": {i}}}', id=f"c{i}") for i in range(4)]
    results = await tw.Executor().aexecute_all(calls)
    assert [3, 2, 1, 0] == finished
    assert ["c0", "c1", "c2", "c3"] == [r.call_id for r in results]
    assert ["0", "1", "2", "3"] == [r.content for r in results]


async def test_a_run_alone_tool_is_a_barrier() -> None:
    log: list[str] = []
    in_flight: set[str] = set()

    @tw.tool_fn
    async def step(name: str) -> str:
        in_flight.add(name)
        log.append(f"start {name} with {sorted(in_flight - {name})}")
        await asyncio.sleep(0)
        in_flight.discard(name)
        return name

    @tw.tool_fn(run_alone=True)
    async def migrate() -> str:
        log.append(f"start migrate with {sorted(in_flight)}")
        await asyncio.sleep(0)
        return "migrated"

    calls = [
        typed(step, '{"name": "a"}', id="1"),
        typed(step, '{"name": "b"}', id="2"),
        typed(migrate, id="3"),
        typed(step, '{"name": "c"}', id="4"),
    ]
    results = await tw.Executor().aexecute_all(calls)
    assert [
        "start a with []",
        "start b with ['a']",
        "start migrate with []",
        "start c with []",
    ] == (log)
    assert ["a", "b", "migrated", "c"] == [r.content for r in results]


def test_execute_all_mixes_errors_and_successes_in_order() -> None:
    ex = tw.Executor(tools=[add])
    results = ex.execute_all(
        [
            tw.ToolCall("1", "add", '{"a": 1, "b": 1}'),
            tw.ToolCall("2", "nope", "{}"),
            tw.ToolCall("3", "add", "{"),
        ]
    )
    assert ["1", "2", "3"] == [r.call_id for r in results]
    assert [False, True, True] == [r.is_error for r in results]


async def test_cancelling_a_timed_call_from_outside_is_not_reported_as_a_timeout() -> None:
    started = asyncio.Event()

    @tw.tool_fn(timeout=10)
    async def hang() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    task = asyncio.ensure_future(tw.Executor().aexecute(typed(hang)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_an_interceptor_of_the_wrong_shape_fails_when_the_executor_is_built() -> None:
    def one_argument(request: Any) -> Any:
        return request

    with pytest.raises(tw.UsageError, match=r"interceptors\[1\] \(.*one_argument\) must take two"):
        tw.Executor(interceptors=[tw.LoggingInterceptor(), one_argument])
    with pytest.raises(tw.UsageError, match=r"interceptors\[0\] must be callable .* got str"):
        tw.Executor(interceptors=["log"])  # type: ignore[list-item]


def test_interceptors_of_the_right_shape_are_accepted() -> None:
    async def two(request: Any, next: Any) -> Any:
        return await next(request)

    class WithCall:
        def __call__(self, request: Any, next: Any, /) -> Any:
            return next(request)

    tw.Executor(interceptors=[two, WithCall(), tw.TimeoutInterceptor(1.0)])


def test_an_interceptor_is_checked_once_and_a_wrong_one_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An executor made per request (the MCP gateway's) checks the same function again:
    # a function found right is not read again; one found wrong is refused each time.
    import inspect

    from toolwire._execute import interceptors

    async def two(request: Any, next: Any) -> Any:
        return await next(request)

    def one(request: Any) -> Any:
        return request

    read: list[Any] = []
    signature = inspect.signature
    monkeypatch.setattr(interceptors.inspect, "signature", lambda f: read.append(f) or signature(f))
    for _ in range(3):
        tw.Executor(interceptors=[two])
        with pytest.raises(tw.UsageError, match="must take two"):
            tw.Executor(interceptors=[one])
    assert [two, one, one, one] == read


def _swallowing(name: str, grace: float, **metadata: Any) -> Any:
    """An async tool that catches its cancellation and goes on ``grace`` seconds."""

    async def body(text: str) -> str:
        """Ignore cancellation."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(grace)
        return "late success"

    body.__name__ = name
    return tw.tool_fn(body, metadata=tw.ToolMetadata(**metadata))


async def test_a_tool_that_swallows_cancellation_still_times_out() -> None:
    # Attack (#11.18): the tool caught the cancellation, ran on past its timeout and
    # returned; its late output was committed as a success.
    stubborn = _swallowing("stubborn", 0.1, timeout=0.05)
    executor = tw.Executor(tools=[stubborn], plugins=False)
    result = await executor.aexecute(tw.ToolCall("c1", "stubborn", '{"text": "x"}'))
    assert result.is_error
    assert "timed out after 0.05 s" in result.content
    assert "late success" not in result.content
    # The task is usable afterwards: the deadline's cancel request was withdrawn.
    await asyncio.sleep(0)


@pytest.mark.parametrize("batch", [False, True])
async def test_a_tool_that_ignores_cancellation_is_answered_at_its_timeout(batch: bool) -> None:
    # Attack (#25.15): an async tool that kept running after its cancellation got its
    # timeout result, but aexecute waited as long as it ran (4 s for a 0.5 s timeout).
    ended = asyncio.Event()

    @tw.tool_fn(timeout=0.2)
    async def deaf() -> str:
        """Ignore every cancellation for a while."""
        for _ in range(40):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.1)
        ended.set()
        return "late success"

    @tw.tool_fn(timeout=0.2)
    async def quick() -> str:
        return "done"

    executor = tw.Executor(tools=[deaf, quick], plugins=False)
    loop = asyncio.get_running_loop()
    start = loop.time()
    if batch:
        results = await executor.aexecute_all(
            [tw.ToolCall("c1", "deaf", "{}"), tw.ToolCall("c2", "quick", "{}")]
        )
    else:
        results = [await executor.aexecute(tw.ToolCall("c1", "deaf", "{}"))]
    waited = loop.time() - start
    assert (True, "tool `deaf` timed out after 0.2 s") == (results[0].is_error, results[0].content)
    assert waited < 2.0  # not the 4 s the tool keeps running for
    assert not ended.is_set()
    await asyncio.wait_for(ended.wait(), 10)  # it ends on its own, unwaited


def _slow_first() -> tuple[tw.Tool[Any, Any], list[int]]:
    """An idempotent tool whose first attempt runs past its timeout (honouring its
    cancellation) and whose retry, after a backoff longer than the grace, answers."""
    attempts: list[int] = []

    @tw.tool_fn(
        timeout=0.05,
        retry_hint=tw.RetryHint(max_attempts=3, initial_backoff=0.3, jitter=0),
        idempotent=True,
    )
    async def lookup(key: str) -> str:
        """Slow the first time."""
        attempts.append(1)
        if len(attempts) == 1:
            await asyncio.sleep(5)  # cut at 0.05 s
        return f"found {key}"

    return lookup, attempts


@pytest.mark.parametrize("how", ["aexecute", "aexecute_all", "aexecute_all alone"])
async def test_a_call_retrying_after_a_timeout_is_answered_by_its_retry(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    # #47.5: an idempotent tool whose first attempt timed out was retried, but the caller
    # got the timeout (with a warning that the tool "ignored its cancellation") and the
    # retry's success was dropped: the executor took the retry for a stuck tool.
    lookup, attempts = _slow_first()

    @tw.tool_fn(timeout=5)
    async def other() -> str:
        return "other"

    executor = tw.Executor(tools=[lookup, other], plugins=False)
    call = tw.ToolCall("c1", "lookup", '{"key": "k"}')
    if how == "aexecute":
        result = await executor.aexecute(call)
    elif how == "aexecute_all":
        result, _ = await executor.aexecute_all([call, tw.ToolCall("c2", "other", "{}")])
    else:
        [result] = await executor.aexecute_all([call])
    assert (False, "found k", 2) == (result.is_error, result.content, len(attempts))
    assert "ignored its cancellation" not in caplog.text


def test_a_call_retrying_after_a_timeout_is_answered_by_its_retry_in_execute() -> None:
    lookup, attempts = _slow_first()
    executor = tw.Executor(tools=[lookup], plugins=False)
    result = executor.execute(tw.ToolCall("c1", "lookup", '{"key": "k"}'))
    assert ("found k", 2) == (result.content, len(attempts))


async def test_a_batch_shares_one_deadline_that_cuts_only_the_calls_still_running() -> None:
    from toolwire._execute.attempts import _deadlines

    seen: list[int] = []

    @tw.tool_fn(timeout=0.1)
    async def hang() -> str:
        await asyncio.Event().wait()
        return "never"

    @tw.tool_fn(timeout=0.1)
    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
        return "late success"

    @tw.tool_fn(timeout=0.1)
    async def quick() -> str:
        seen.append(_deadlines(asyncio.get_running_loop()).live)
        return "done"

    executor = tw.Executor(tools=[hang, stubborn, quick], plugins=False)
    calls = [
        tw.ToolCall(f"c{i}", name, "{}") for i, name in enumerate(["hang", "stubborn", "quick"])
    ]
    results = await executor.aexecute_all(calls)
    assert [(r.content, r.is_error) for r in results] == [
        ("tool `hang` timed out after 0.1 s", True),
        ("tool `stubborn` timed out after 0.1 s", True),
        ("done", False),
    ]
    assert seen == [1]  # one deadline for the three calls, not one each
    assert _deadlines(asyncio.get_running_loop()).live == 0
    await asyncio.sleep(0)  # the tasks' cancel requests were withdrawn: nothing is pending


async def test_a_retry_in_a_batch_has_a_deadline_of_its_own() -> None:
    # The batch's deadline times first attempts only: a retry that starts late must not be
    # cut by it (here it would be, 0.1 s into the retry).
    attempts: list[int] = []

    @tw.tool_fn(timeout=0.3, retry_hint=tw.RetryHint(2, initial_backoff=0))
    async def flaky() -> str:
        attempts.append(1)
        await asyncio.sleep(0.2)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return "second"

    @tw.tool_fn(timeout=0.3)
    async def quick() -> str:
        return "done"

    executor = tw.Executor(tools=[flaky, quick], plugins=False)
    results = await executor.aexecute_all(
        [tw.ToolCall("c1", "flaky", "{}"), tw.ToolCall("c2", "quick", "{}")]
    )
    assert [r.content for r in results] == ["second", "done"]
    assert len(attempts) == 2


async def test_cancelling_a_timed_batch_from_outside_is_not_reported_as_timeouts() -> None:
    started: list[str] = []

    @tw.tool_fn(timeout=10)
    async def hang(n: int) -> str:
        started.append(str(n))
        await asyncio.Event().wait()
        return "never"

    executor = tw.Executor(tools=[hang], plugins=False)
    task = asyncio.ensure_future(
        executor.aexecute_all([tw.ToolCall(f"c{n}", "hang", f'{{"n": {n}}}') for n in range(3)])
    )
    while len(started) < 3:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    from toolwire._execute.attempts import _deadlines

    assert _deadlines(asyncio.get_running_loop()).live == 0


async def test_calls_with_different_timeouts_each_end_at_their_own() -> None:
    # One loop timer serves every deadline: a later, shorter deadline must re-arm it (the
    # fast call is cut before the quick one ends, not with the slow one), and a call that
    # ends in time is not cut when another times out. Checked by the order things happen.
    never = asyncio.Event()
    events: list[str] = []

    def hanging(name: str, seconds: float) -> tw.Tool[Any, Any]:
        async def hang() -> str:
            try:
                await never.wait()
            except asyncio.CancelledError:
                events.append(f"{name} cut")
                raise
            return "never"

        return tw.tool_fn(hang, name=name, timeout=seconds)

    @tw.tool_fn(timeout=5)
    async def quick() -> str:
        await asyncio.sleep(0.5)
        events.append("quick done")
        return "done"

    slow, fast = hanging("slow", 2.0), hanging("fast", 0.05)
    executor = tw.Executor(tools=[slow, fast, quick], plugins=False)
    results = await executor.aexecute_all(
        [
            tw.ToolCall("c1", "slow", "{}"),
            tw.ToolCall("c2", "fast", "{}"),
            tw.ToolCall("c3", "quick", "{}"),
        ]
    )
    assert [r.content for r in results] == [
        "tool `slow` timed out after 2.0 s",
        "tool `fast` timed out after 0.05 s",
        "done",
    ]
    assert ["fast cut", "quick done", "slow cut"] == events


async def test_the_shared_deadline_timer_keeps_no_finished_call() -> None:
    from toolwire._execute.attempts import _deadlines

    @tw.tool_fn(timeout=30)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    executor = tw.Executor(tools=[echo], plugins=False)
    for i in range(300):
        await executor.aexecute_all(
            [tw.ToolCall(f"c{i}-{j}", "echo", '{"text": "x"}') for j in range(4)]
        )
    clock = _deadlines(asyncio.get_running_loop())
    assert clock.live == 0
    assert len(clock.heap) <= 64


def test_the_deadline_timers_do_not_keep_a_closed_loop_alive() -> None:
    import gc
    import weakref

    from toolwire._execute.attempts import _CLOCKS

    @tw.tool_fn(timeout=30)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    loop = asyncio.new_event_loop()
    try:
        executor = tw.Executor(tools=[echo], plugins=False)
        loop.run_until_complete(executor.aexecute(tw.ToolCall("c1", "echo", '{"text": "x"}')))
        assert loop in _CLOCKS
    finally:
        loop.close()
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None


def test_two_tools_of_one_name_are_a_collision_not_the_last_one() -> None:
    # Attack (#11.30): Executor(tools=[a, a_v2]) silently kept the last tool of a name.
    @tw.tool_fn(name="lookup")
    def lookup_v1(key: str) -> str:
        """Look up (v1)."""
        return "v1"

    @tw.tool_fn(name="lookup")
    def lookup_v2(key: str) -> str:
        """Look up (v2)."""
        return "v2"

    with pytest.raises(tw.exceptions.NameCollisionError, match="lookup"):
        tw.Executor(tools=[lookup_v1, lookup_v2], plugins=False)


async def test_a_tool_calling_sys_exit_is_a_failed_call_not_the_end_of_the_program() -> None:
    # Attack (#11.20): SystemExit from a tool escaped the Executor (and the Agent).
    import sys

    @tw.tool_fn
    def quit_now(code: int) -> str:
        """Exit."""
        sys.exit(code)

    @tw.tool_fn
    async def aquit(code: int) -> str:
        """Exit, async."""
        raise SystemExit(code)

    executor = tw.Executor(tools=[quit_now, aquit], plugins=False)
    results = await executor.aexecute_all(
        [tw.ToolCall("c1", "quit_now", '{"code": 3}'), tw.ToolCall("c2", "aquit", '{"code": 4}')]
    )
    assert [r.is_error for r in results] == [True, True]
    assert "SystemExit" in results[0].content


def test_retry_is_decided_by_status_where_there_is_one() -> None:
    # Attack (#11.31): ProviderError(status=503) was not retried while
    # ServerError(status=400) was: the class decided, not the status.
    from toolwire.exceptions import ProviderError, RateLimitError, ServerError, is_transient

    assert is_transient(ProviderError("busy", provider="p", status=503))
    assert is_transient(ProviderError("slow down", provider="p", status=429))
    assert not is_transient(ServerError("bad", provider="p", status=400))
    assert is_transient(ServerError("no status", provider="p"))  # the class decides then
    quota = RateLimitError("quota", provider="p", status=429)
    quota.transient = False  # an adapter marking a permanent error: the object decides
    assert not is_transient(quota)
    assert not is_transient(tw.exceptions.DeadlineExceededError("late", provider="p"))
    assert is_transient(TimeoutError())
    assert not is_transient(ValueError())


async def test_on_tool_error_sees_the_exception_a_call_ended_with_once_after_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts: list[int] = []

    @tw.tool_fn(retry_hint=tw.RetryHint(3, initial_backoff=0.001))
    def flaky(n: int) -> str:
        """Fails twice, or always when n is 0."""
        attempts.append(n)
        if n == 0 or len(attempts) < 3:
            raise ConnectionError(f"try {len(attempts)}")
        return "ok"

    seen: list[tuple[str, str]] = []

    def keep(call: Any, exc: BaseException) -> None:
        seen.append((call.name, str(exc)))
        raise RuntimeError("the observer broke")

    executor = tw.Executor(tools=[flaky], plugins=False, on_tool_error=keep)
    ok = await executor.aexecute(tw.ToolCall("c1", "flaky", '{"n": 1}'))
    assert ("ok", []) == (ok.content, seen)  # retried to success: no error to see
    attempts.clear()
    failed = await executor.aexecute(tw.ToolCall("c2", "flaky", '{"n": 0}'))
    assert failed.is_error
    assert "try 3" in failed.content
    assert [("flaky", "try 3")] == seen  # once, the last attempt's
    assert "on_tool_error for flaky call c2" in caplog.text


async def test_a_tool_that_honours_cancellation_runs_in_the_callers_task() -> None:
    # An async tool with a timeout runs in a task of its own, so one that swallows its
    # cancellation can be answered at its timeout all the same; a tool that says it ends
    # when cancelled (toolwire's MCP tools) runs inline, its timeout held all the same.
    ran_in: list[Any] = []

    async def where(text: str) -> str:
        ran_in.append(asyncio.current_task())
        await asyncio.sleep(0)
        return text

    def made(name: str, honours: bool, timeout: float = 5.0) -> Any:
        meta = tw.ToolMetadata(timeout=timeout, honours_cancellation=honours)
        return tw.raw_tool(name, "Where it runs.", {"type": "object"}, where, metadata=meta)

    executor = tw.Executor(tools=[made("own", False), made("inline", True)], plugins=False)
    for name in ("own", "inline"):
        result = await executor.aexecute(tw.ToolCall("c", name, '{"text": "x"}'))
        assert "x" == result.content
    caller = asyncio.current_task()
    assert [False, True] == [task is caller for task in ran_in]

    # Says it honours cancellation, and does not.
    claims_but_swallows = _swallowing("claims_but_swallows", 0.2, timeout=0.05,
                                      honours_cancellation=True)  # fmt: skip
    late = tw.Executor(tools=[claims_but_swallows], plugins=False)
    result = await late.aexecute(tw.ToolCall("c", "claims_but_swallows", '{"text": "x"}'))
    # Held to its word: answered when it ended, but its late output is still refused.
    assert result.is_error
    assert "timed out after 0.05 s" in result.content
    with pytest.raises(tw.ToolDefinitionError, match="honours_cancellation must be a bool"):
        tw.ToolMetadata(honours_cancellation="yes")  # type: ignore[arg-type]


def test_sync_execute_reuses_a_few_loops_and_each_call_ends_whole() -> None:
    # Executor.execute once made and closed an event loop a call (asyncio.run); it runs on
    # a pooled loop now, and each call still ends as asyncio.run ends one.
    import os

    left: list[asyncio.Task[Any]] = []
    loops: list[asyncio.AbstractEventLoop] = []  # kept: no id of one reused by another

    @tw.tool_fn(timeout=5)
    async def spawns(text: str) -> str:
        """Leaves a task behind."""
        loop = asyncio.get_running_loop()
        if all(seen is not loop for seen in loops):
            loops.append(loop)
        left.append(loop.create_task(asyncio.sleep(60)))
        return text

    executor = tw.Executor(tools=[spawns], plugins=False)
    executor.execute(tw.ToolCall("c0", "spawns", '{"text": "x"}'))
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for i in range(200):
        assert "x" == executor.execute(tw.ToolCall(f"c{i}", "spawns", '{"text": "x"}')).content
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) <= fds + 2  # no loop (selector, pipe) a call
    assert all(t.cancelled() for t in left)  # what a call left running was cancelled
    assert len(loops) <= 2  # the calls ran on a loop of the pool, not one made a call
