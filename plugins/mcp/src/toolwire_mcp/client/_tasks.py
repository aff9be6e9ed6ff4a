"""MCP tasks, as a client: a call the server runs as a task is followed to its end.

A server may answer a ``tools/call`` with a task (work that outlives one request) rather
than its result. toolwire follows the task on both wire versions, so the caller (an
``Agent``, ``toolwire call``, a framework bridge) sees an ordinary result:

- **2026-07-28, the tasks extension** (``io.modelcontextprotocol/tasks``, SEP-2663): the
  client declares the extension on each request (:class:`TasksExtension`, given to the
  SDK's ``Client``); the server decides per call whether to answer with a task
  (``resultType: "task"``). toolwire polls ``tasks/get``, answers the task's input
  requests (elicitation, sampling, roots: through the same handlers as a direct request)
  with ``tasks/update``, and reads the result (or the error) the terminal task carries.
- **2025-11-25, experimental tasks**: a tool whose ``execution.taskSupport`` is
  ``required`` is called with ``task: {ttl}`` (:func:`call_as_task`); toolwire polls
  ``tasks/get`` and asks for ``tasks/result``, during which the server's questions arrive
  as ordinary requests.

On both, the poll interval the server asks for is honoured (within 50 ms and 5 s), each
status the task reports reaches the caller as progress (``task ID: working: ...``) and
moves the call's idle deadline on, and a caller that is cancelled or whose deadline
passes cancels the task on the server (``tasks/cancel``, best effort, within 5 s).
Everything a server says about a task is checked before it is used.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal, Protocol

import anyio
import attrs
import mcp_types as types
from mcp import MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "TASKS_EXTENSION",
    "TaskError",
    "TasksExtension",
    "TaskWatch",
    "Watch",
    "WATCH",
    "call_as_task",
    "call_tool",
    "require_task_calls",
    "runs_task_calls",
    "task_support",
]

logger = logging.getLogger("toolwire.mcp")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The poll interval a server may ask for is held within these (seconds).
MIN_POLL, MAX_POLL, DEFAULT_POLL = 0.05, 5.0, 1.0
#: How long a task's cancellation may take to be acknowledged, after its caller is gone.
CANCEL_WAIT = 5.0
#: Input requests answered for one task, at most (a server cannot ask forever).
MAX_INPUT_ROUNDS = 100
#: Seconds one request about a task (``tasks/get``, ``tasks/update``) may take, when the
#: call gave no deadline of its own (the connection's scope holds the whole call).
POLL_REQUEST_TIMEOUT = 60.0

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]


class TaskError(RuntimeError):
    """A task ended without a result (failed, cancelled by the server) or a server said
    something about a task that cannot be used; the message says which."""


class _Task(BaseModel):
    """The fields of a task both wire versions share, as a server's message gives them."""

    model_config = ConfigDict(extra="ignore")

    task_id: str = Field(alias="taskId", min_length=1, max_length=512)
    status: Status
    status_message: str | None = Field(default=None, alias="statusMessage", max_length=10_000)


class _LegacyTask(_Task):
    poll_interval: float | None = Field(default=None, alias="pollInterval", ge=0)


class _LegacyCreated(BaseModel):
    model_config = ConfigDict(extra="ignore")

    task: _LegacyTask


class CreatedTask(types.Result):
    """A 2026-07-28 ``CreateTaskResult``: the task a server answered a call with."""

    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId", min_length=1, max_length=512)
    status: Status
    status_message: str | None = Field(default=None, alias="statusMessage", max_length=10_000)
    poll_interval_ms: float | None = Field(default=None, alias="pollIntervalMs", ge=0)


class _DetailedTask(_Task):
    """A 2026-07-28 ``tasks/get`` answer: the task, with what its status carries."""

    poll_interval_ms: float | None = Field(default=None, alias="pollIntervalMs", ge=0)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


_INPUT_REQUEST: TypeAdapter[Any] = TypeAdapter(types.InputRequest)


class _TaskRequestParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class _UpdateParams(_TaskRequestParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class _TaskRequest(types.Request[_TaskRequestParams, str]):
    """``tasks/get``, ``tasks/result``, ``tasks/cancel``: ``Mcp-Name`` carries the task id."""

    name_param: ClassVar[str | None] = "taskId"


class _UpdateRequest(types.Request[_UpdateParams, str]):
    name_param: ClassVar[str | None] = "taskId"


class _Any(types.Result):
    """A result taken as it is (checked by the caller)."""

    model_config = ConfigDict(extra="allow")


class Watch(Protocol):
    """What one call's task reports to: ``alive()`` when the server answered (the idle
    deadline moves on), ``progress(n, message)`` when the task's status changed. The
    connection's call in flight is one; :class:`TaskWatch` makes one of two callables."""

    def alive(self) -> None: ...

    def progress(self, n: float, said: str) -> Awaitable[None]: ...


@attrs.frozen
class TaskWatch:
    """A :class:`Watch` made of two callables."""

    alive: Callable[[], None]
    progress: Callable[[float, str], Awaitable[None]]


#: The watch of the call running in this context, set by the connection around each call
#: (the 2026-07-28 claim reads it: the SDK resolves a claimed result in the call's task).
WATCH: contextvars.ContextVar[Watch | None] = contextvars.ContextVar(
    "toolwire_mcp_task_watch", default=None
)


def task_support(tool: types.Tool) -> str | None:
    """A listed tool's ``execution.taskSupport`` (2025-11-25): ``required``, ``optional``,
    or None (forbidden, or not said)."""
    execution = getattr(tool, "execution", None)
    mode = getattr(execution, "task_support", None)
    return mode if mode in ("required", "optional") else None


def _interval(seconds: float | None) -> float:
    if seconds is None:
        return DEFAULT_POLL
    return min(max(seconds, MIN_POLL), MAX_POLL)


def _said(task: _Task) -> str:
    text = f"task {task.task_id}: {task.status}"
    return f"{text}: {task.status_message}" if task.status_message else text


async def _send(
    session: ClientSession,
    method: str,
    task_id: str,
    model: type[BaseModel],
    timeout: float,
    **more: Any,
) -> Any:
    """One ``tasks/*`` request, its answer checked as ``model``."""
    if more:
        params: Any = _UpdateParams(taskId=task_id, **more)
        request: Any = _UpdateRequest(method=method, params=params)
    else:
        request = _TaskRequest(method=method, params=_TaskRequestParams(taskId=task_id))
    raw = await session.send_request(request, _Any, request_read_timeout_seconds=timeout)
    try:
        return model.model_validate(raw.model_dump(by_alias=True, exclude_none=True))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "(the answer)"
        why = f"the server's answer to {method} is malformed: {where}: {first['msg']}"
        raise TaskError(why) from None


async def _cancel(session: ClientSession, task_id: str) -> None:
    """Ask the server to cancel a task its caller no longer waits for (best effort)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT):
        try:
            await _send(session, "tasks/cancel", task_id, _Any, CANCEL_WAIT)
            logger.info("MCP task %s: cancelled on the server", task_id)
        except Exception as exc:  # the caller is gone either way: said, not raised
            logger.warning("MCP task %s: its cancellation was not taken: %s", task_id, exc)


class _Follow:
    """The reports of one task: a status the caller has not seen is said once."""

    def __init__(self, watch: Watch | None) -> None:
        self.watch = watch
        self.last: tuple[str, str | None] | None = None
        self.count = 0

    async def heard(self, task: _Task) -> None:
        if self.watch is None:
            return
        self.watch.alive()
        now = (task.status, task.status_message)
        if now != self.last:
            self.last = now
            self.count += 1
            await self.watch.progress(self.count, _said(task))


async def call_tool(
    client: Any,
    name: str,
    arguments: dict[str, Any],
    limit: float,
    on_progress: Any,
    support: str | None,
) -> types.CallToolResult:
    """One tool call on ``client`` (the SDK's ``Client``): as a 2025-11-25 task when the
    tool's listing says it must be (``support``: ``required``), or may be (``optional``)
    and the server says it runs task-augmented calls (its progress then comes as the
    task's statuses, and no request is held open for the whole call), else as an ordinary
    call, whose task, if a 2026-07-28 server answers with one, :class:`TasksExtension`
    follows."""
    legacy = support is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS
    if legacy and support == "optional" and runs_task_calls(client.server_capabilities):
        support = "required"
    if support == "required" and legacy:
        require_task_calls(client.server_capabilities)
        final = await call_as_task(
            client.session, name, arguments, limit=limit, watch=WATCH.get(),
            on_progress=on_progress,
        )  # fmt: skip
        if not final.is_error:  # checked against the tool's output schema, as call_tool does
            await client.session.validate_tool_result(name, final)
        return final
    # No clock of the SDK's: the connection's own scope holds the call to its deadlines
    # (the idle one, moved on by progress, and ``limit``), and a second clock costs a
    # timer per call. A task the server answers with is polled with a deadline per request.
    result: types.CallToolResult = await client.call_tool(
        name, arguments, read_timeout_seconds=math.inf, progress_callback=on_progress
    )
    return result


# -- 2025-11-25: experimental tasks ---------------------------------------------------------


def runs_task_calls(capabilities: Any) -> bool:
    """Whether a 2025-11-25 server declares task-augmented tool calls
    (``capabilities.tasks.requests.tools.call``)."""
    tasks = getattr(capabilities, "tasks", None)
    tools = getattr(getattr(tasks, "requests", None), "tools", None)
    return getattr(tools, "call", None) is not None


def require_task_calls(capabilities: Any) -> None:
    """A tool that must run as a task, on a 2025-11-25 server that declares no
    task-augmented tool calls: refused here, saying so, rather than sent to fail."""
    if not runs_task_calls(capabilities):
        raise TaskError(
            "it must run as a task, and the server does not declare task-augmented tool "
            "calls (capabilities.tasks.requests.tools.call)"
        )


async def call_as_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    *,
    limit: float,
    watch: Watch | None = None,
    on_progress: Any = None,
) -> types.CallToolResult:
    """Call ``name`` as a task on a 2025-11-25 connection and follow it to its result.

    ``limit`` bounds the whole (seconds); the task asks to be kept that long and a minute
    more. A server that runs the call at once (no task) is answered as it answers.
    """
    ttl = int((limit + 60.0) * 1000)
    params = {"name": name, "arguments": arguments, "task": {"ttl": ttl}}
    raw = await _raw_call(session, params, limit, on_progress)
    if "task" not in raw:  # run at once: an ordinary result
        return types.CallToolResult.model_validate(raw)
    try:
        task = _LegacyCreated.model_validate(raw).task
    except ValidationError as exc:
        why = exc.errors()[0]["msg"]
        raise TaskError(f"the server answered `{name}` with a malformed task: {why}") from None
    follow = _Follow(watch)
    await follow.heard(task)
    started = anyio.current_time()
    done = False

    async def poll(current: _LegacyTask) -> None:
        while current.status not in TERMINAL:
            every = current.poll_interval
            await anyio.sleep(_interval(None if every is None else every / 1000))
            try:
                current = await _send(session, "tasks/get", task.task_id, _LegacyTask, limit)
            except Exception as exc:  # the result request still says how it ended
                logger.debug("MCP task %s: tasks/get failed: %s", task.task_id, exc)
                return
            if current.task_id != task.task_id:
                return
            await follow.heard(current)

    failure: BaseException | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(poll, task)  # it raises nothing: said as the result's error
            left = max(limit - (anyio.current_time() - started), 0.001)
            try:
                answer = await _send(session, "tasks/result", task.task_id, _Any, left)
            except MCPError as exc:  # the task ended with this error: it is not cancelled
                failure = TaskError(f"task {task.task_id} failed: {_error_text(exc.error)}")
            except Exception as exc:  # outside the group: not wrapped in an ExceptionGroup
                failure = exc
            else:
                done = True
            if failure is not None and isinstance(failure, TaskError):
                done = True
            group.cancel_scope.cancel()
        if failure is not None:
            raise failure
    except BaseException:
        if not done:
            await _cancel(session, task.task_id)
        raise
    return types.CallToolResult.model_validate(answer.model_dump(by_alias=True, exclude_none=True))


async def _raw_call(
    session: ClientSession, params: dict[str, Any], limit: float, on_progress: Any
) -> dict[str, Any]:
    """A task-augmented ``tools/call`` on a 2025-11-25 connection.

    Its answer (a ``CreateTaskResult``) is not the ``CallToolResult`` the SDK checks a
    ``tools/call`` answer against, so it is sent through the session's own stamp and
    dispatcher (its private pieces: the one place toolwire uses them) and checked here.
    """
    stamp = getattr(session, "_stamp", None)
    dispatcher = getattr(session, "_dispatcher", None)
    if stamp is None or dispatcher is None:
        raise TaskError("this version of the mcp SDK cannot send a task-augmented call")
    data: dict[str, Any] = {"method": "tools/call", "params": params}
    opts: dict[str, Any] = {"timeout": limit}
    if on_progress is not None:
        opts["on_progress"] = on_progress
    stamp(data, opts)
    raw = await dispatcher.send_raw_request("tools/call", data["params"], opts)
    if not isinstance(raw, dict):
        raise TaskError("the server's answer to a task-augmented call is not an object")
    return raw


# -- 2026-07-28: the tasks extension ----------------------------------------------------------


class TasksExtension(ClientExtension):
    """The client side of ``io.modelcontextprotocol/tasks`` for the SDK's ``Client``: a
    call a server answers with a task is followed to its result (module docstring)."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [
            ResultClaim(
                result_type="task",
                model=CreatedTask,
                resolve=self._resolve,
                protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            )
        ]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        return await follow_task(created, ctx.session, ctx.read_timeout_seconds, WATCH.get())


async def follow_task(
    created: CreatedTask,
    session: ClientSession,
    limit: float | None,
    watch: Watch | None,
) -> types.CallToolResult:
    """Poll a 2026-07-28 task to its end, answering its input requests on the way."""
    task_id = created.task_id
    follow = _Follow(watch)
    current = _DetailedTask(
        taskId=task_id, status=created.status, statusMessage=created.status_message,
        pollIntervalMs=created.poll_interval_ms,
    )  # fmt: skip
    await follow.heard(current)
    per = limit if limit is not None and math.isfinite(limit) else POLL_REQUEST_TIMEOUT
    answered: set[str] = set()
    rounds = 0
    done = False
    try:
        if current.status in ("completed", "failed"):
            # Ended before it was answered: a CreateTaskResult carries no result, so the
            # task is read once for it.
            current = await _send(session, "tasks/get", task_id, _DetailedTask, per)
            if current.task_id != task_id:
                raise TaskError(f"tasks/get for {task_id} answered about task {current.task_id}")
        while True:
            if current.status == "completed":
                done = True
                if current.result is None:
                    raise TaskError(f"task {task_id} completed with no result")
                return types.CallToolResult.model_validate(current.result)
            if current.status == "failed":
                done = True
                raise TaskError(f"task {task_id} failed: {_error_text(current.error)}")
            if current.status == "cancelled":
                done = True
                why = f": {current.status_message}" if current.status_message else ""
                raise TaskError(f"task {task_id} was cancelled by the server{why}")
            if current.status == "input_required" and current.input_requests:
                fresh = {k: v for k, v in current.input_requests.items() if k not in answered}
                if fresh:
                    rounds += len(fresh)
                    if rounds > MAX_INPUT_ROUNDS:
                        many = f"task {task_id} asked for input over {MAX_INPUT_ROUNDS} times"
                        raise TaskError(many)
                    responses = await _answer_inputs(session, fresh)
                    answered.update(fresh)
                    await _send(
                        session, "tasks/update", task_id, _Any, per, inputResponses=responses
                    )
                    current = await _send(session, "tasks/get", task_id, _DetailedTask, per)
                    await follow.heard(current)
                    continue
            seconds = None if current.poll_interval_ms is None else current.poll_interval_ms / 1000
            await anyio.sleep(_interval(seconds))
            current = await _send(session, "tasks/get", task_id, _DetailedTask, per)
            if current.task_id != task_id:
                raise TaskError(f"tasks/get for {task_id} answered about task {current.task_id}")
            await follow.heard(current)
    except BaseException:
        if not done:
            await _cancel(session, task_id)
        raise


def _error_text(error: Any) -> str:
    if isinstance(error, types.ErrorData):
        error = error.model_dump()
    if not isinstance(error, Mapping):
        return "(no error given)"
    message = error.get("message")
    code = error.get("code")
    text = message if isinstance(message, str) and message else "(no message)"
    return f"{text} (code {code})" if isinstance(code, int) else text


async def _answer_inputs(session: ClientSession, asked: Mapping[str, Any]) -> dict[str, Any]:
    """Each input request answered through the client's own handlers (an elicitation as
    a direct ``elicitation/create`` is: the same trust, the same questions to the user)."""
    out: dict[str, Any] = {}
    for key, raw in asked.items():
        try:
            request = _INPUT_REQUEST.validate_python(raw)
        except ValidationError:
            raise TaskError(f"the task's input request `{key:.80}` is malformed") from None
        meta = request.params.meta if getattr(request, "params", None) is not None else None
        ctx = ClientRequestContext(session=session, request_id=key, meta=meta)
        response = await session.dispatch_input_request(ctx, request)
        if isinstance(response, types.ErrorData):
            raise TaskError(f"the task's input request `{key:.80}` was refused: {response.message}")
        out[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
    return out
