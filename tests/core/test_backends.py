"""Executor backends in core: where a tool's body runs, with every decision kept here.

A small backend that runs bodies in a thread (and can fail the ways a remote one
does) checks the executor's side of the contract; toolwire-ray's tests run the same
on a real Ray cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from typing import Any

import pytest

import toolwire as tw
from toolwire.adapters import BackendCall, ToolBackend
from toolwire.exceptions import ToolBackendError, ToolTimeoutError, UsageError


class ThreadBackend(ToolBackend):
    """Runs each body in a fresh thread; ``fail`` makes it fail like a remote backend."""

    name = "thread"

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.calls: list[BackendCall] = []

    async def run(self, call: BackendCall) -> Any:
        self.calls.append(call)
        if self.fail is not None:
            raise self.fail
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        loop = asyncio.get_running_loop()

        def body() -> None:
            try:
                out = call.fn(**call.kwargs)
                if call.is_async:
                    out = asyncio.run(out)
                settle = functools.partial(_settle, done, (threading.get_ident(), out), None)
            except BaseException as exc:  # handed to the awaiting side
                settle = functools.partial(_settle, done, None, exc)
            # A timed-out body may finish after the test's loop is gone.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle)

        threading.Thread(target=body, daemon=True).start()
        try:
            _, out = await asyncio.wait_for(done, call.timeout)
        except TimeoutError:
            raise ToolTimeoutError(call.timeout or 0) from None
        return out


def _settle(done: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if done.done():  # the caller stopped waiting (timeout)
        return
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(value)


@tw.tool_fn(backend_options={"thread": {"cpus": 2}})
def where(text: str) -> str:
    """Say which thread ran this."""
    return f"{text}:{threading.get_ident()}"


@tw.tool_fn(local=True)
def cheap(text: str) -> str:
    """A cheap tool that stays in-process."""
    return f"{text}:{threading.get_ident()}"


@tw.tool_fn(timeout=0.2)
def hang() -> str:
    """Never finishes in time."""
    threading.Event().wait(2)
    return "late"


@tw.tool_fn
async def later(n: int) -> int:
    """An async tool."""
    await asyncio.sleep(0)
    return n + 1


def _run(executor: tw.Executor, *calls: tuple[str, str]) -> list[tw.ToolResult]:
    tools = tw.Toolset("t", [where, cheap, hang, later])
    turn = tw.resolve_turn(tools, availability=tw.Availability.all(), plugins=False)
    reply = tw.adapters.AssistantReply(
        tool_calls=tuple(tw.ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls))
    )
    outcome = tw.adapters.decode_reply(tw.Session().add_user("go"), turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    return executor.execute_all(outcome.round.calls)


def test_the_body_runs_on_the_backend_and_local_tools_stay_here() -> None:
    backend = ThreadBackend()
    executor = tw.Executor(backend=backend, plugins=False)
    here = threading.get_ident()
    remote, local, nxt = _run(
        executor, ("where", '{"text": "a"}'), ("cheap", '{"text": "b"}'), ("later", '{"n": 1}')
    )
    assert remote.content.startswith("a:")
    assert remote.content != f"a:{here}"
    assert f"b:{here}" == local.content  # local=True: in-process
    assert "2" == nxt.content  # an async body, awaited where it ran
    call = backend.calls[0]
    assert ("where", {"text": "a"}, {"cpus": 2}) == (
        call.name,
        dict(call.kwargs),
        dict(call.options),
    )
    assert call.timeout == 30.0
    assert not call.is_async
    assert ["where", "later"] == [c.name for c in backend.calls]
    assert "thread" in repr(executor)


def test_a_remote_timeout_ends_the_call_like_an_in_process_one() -> None:
    (result,) = _run(tw.Executor(backend=ThreadBackend(), plugins=False), ("hang", "{}"))
    assert result.is_error
    assert "tool `hang` timed out after 0.2 s" == result.content


def test_a_backend_failure_is_a_typed_error_result_and_not_retried_for_a_plain_tool() -> None:
    backend = ThreadBackend(ToolBackendError("its worker died", kind="worker_died", transient=True))
    (result,) = _run(tw.Executor(backend=backend, plugins=False), ("where", '{"text": "a"}'))
    assert result.is_error
    assert "tool `where` could not run on the thread backend: its worker died" == result.content
    assert 1 == len(backend.calls)  # not idempotent: never run twice


def test_an_idempotent_tool_is_retried_after_a_transient_backend_failure() -> None:
    attempts: list[int] = []

    @tw.tool_fn(retry_hint=tw.RetryHint(max_attempts=3, initial_backoff=0.0))
    def lookup(key: str) -> str:
        """Read a value."""
        attempts.append(1)
        return key.upper()

    class Flaky(ThreadBackend):
        async def run(self, call: BackendCall) -> Any:
            self.calls.append(call)
            if len(self.calls) == 1:
                raise ToolBackendError("worker died", kind="worker_died", transient=True)
            return call.fn(**call.kwargs)

    backend = Flaky()
    executor = tw.Executor(tools=[lookup], backend=backend, plugins=False)
    result = executor.dispatch(tw.ToolCall("c1", "lookup", '{"key": "k"}'))
    assert "K" == result.content
    assert 2 == len(backend.calls)
    assert 1 == len(attempts)


def test_the_tools_own_exception_is_reported_as_in_process() -> None:
    backend = ThreadBackend(ValueError("bad key"))
    (result,) = _run(tw.Executor(backend=backend, plugins=False), ("where", '{"text": "a"}'))
    assert "tool `where` failed: ValueError: bad key" == result.content


def test_a_policy_rejection_never_reaches_the_backend() -> None:
    backend = ThreadBackend()
    hooks = tw.HookSet()
    hooks.on(where, lambda call: tw.Reject("not today"))
    tools = tw.Toolset("t", [where])
    turn = tw.resolve_turn(tools, hooks=[hooks], plugins=False)
    reply = tw.adapters.AssistantReply(tool_calls=(tw.ToolCall("c1", "where", '{"text": "a"}'),))
    outcome = tw.adapters.decode_reply(tw.Session().add_user("go"), turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    tw.Executor(backend=backend, plugins=False).execute_and_commit(outcome.round.apply_hooks())
    assert [] == backend.calls


def test_backend_by_name_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    host = tw.PluginHost(autoload=False, strict=False, allow=None, deny=(), hook_timeout=5.0)

    class Plugin:
        @tw.hookimpl
        def toolwire_register_backends(self, register: Any) -> None:
            register("thread", ThreadBackend)

    host.register(Plugin(), "thread-plugin", kind="backend")
    by_name = tw.Executor(backend="thread", plugins=host)
    assert isinstance(by_name.backend, ThreadBackend)
    monkeypatch.setenv("TOOLWIRE_BACKEND", "thread")
    from_env = tw.Executor(plugins=host)
    assert from_env.backend is by_name.backend  # the host's shared instance
    monkeypatch.setenv("TOOLWIRE_BACKEND", "inprocess")
    assert tw.Executor(plugins=host).backend is None
    assert tw.Executor(backend="inprocess", plugins=host).backend is None
    with pytest.raises(UsageError, match="backend must be a ToolBackend"):
        tw.Executor(backend=3, plugins=host)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad", [["ray"], {"ray": 2}, {3: {}}], ids=["list", "not-a-mapping", "not-a-name"]
)
def test_backend_options_are_checked_when_the_tool_is_made(bad: Any) -> None:
    with pytest.raises(tw.exceptions.ToolDefinitionError, match="backend_options"):
        tw.ToolMetadata(backend_options=bad)


def test_metadata_with_backend_options_stays_hashable_and_comparable() -> None:
    a = tw.ToolMetadata(backend_options={"ray": {"num_cpus": 1}})
    b = tw.ToolMetadata(backend_options={"ray": {"num_cpus": 1}})
    assert a == b
    assert hash(a) == hash(b)
