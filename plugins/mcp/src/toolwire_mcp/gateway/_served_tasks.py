"""MCP tasks, as the gateway: a long call, or one that waits for an approver, as a task.

A served tool that declares itself long-running (its ``typical_duration`` is at least
:data:`TASK_DURATION` seconds: ``@tool_fn(typical_duration=60)``) is answered as a task
to every client that declares the 2026-07-28 tasks extension on its call: the request is
answered at once with the task, the tool runs in the gateway, its progress becomes the
task's status message, and the finished task carries its result (a tool's error as a
completed task whose result says ``isError``; a protocol error as a failed task).

A call a policy files for approval (``[approvals]``) may wait an hour for a person. A
client that declares the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``)
on its ``tools/call`` need not hold its request open that long: once the call starts to
wait, the gateway answers with a task (``resultType: "task"``), the call goes on waiting
in the gateway, and the client polls ``tasks/get`` (its status message says which request
waits for whom) until the task carries the call's result: run once when approved, the
denial's reason, or the refusal naming the request when the wait passes. A call that does
not wait is answered as it always is. A client that does not declare the extension is
held with progress notifications, as before.

A client of the 2025-11-25 protocol, whose tasks were experimental, gets the same for a
long-running tool, which the tool list says may run as a task (``execution.taskSupport``:
``optional``) and the server's capabilities say it runs (``tasks.requests.tools.call``):
its ``tools/call`` with ``task: {ttl}`` is answered with ``{"task": ...}``, ``tasks/get``
says how it stands, ``tasks/result`` waits for its end and answers with the call's result
(the questions its tool asks go to the client on that request, as elicitation requests),
and ``tasks/cancel`` cancels it. Without ``task``, the call is an ordinary one.

Tasks are kept in this process, so a client may reconnect and poll again; each is
visible only to the principal that made it (another principal's ``tasks/get`` gets the
same error as an unknown id), at most :data:`PER_PRINCIPAL` wait at once per principal
(past it a call is held, not refused) and :data:`MAX_TASKS` in all, and each is kept
:data:`KEEP` seconds past the end of its wait. ``tasks/cancel`` cancels the wait (the
call does not run). A gateway restart loses its tasks (the approval request itself
survives in the queue: the same call made again runs once approved).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import anyio
import attrs
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.shared.inbound import decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from toolwire_mcp.client._tasks import TASKS_EXTENSION
from toolwire_mcp.gateway._auth import principal_key

__all__ = [
    "KEEP",
    "MAX_TASKS",
    "PER_PRINCIPAL",
    "TASK_DURATION",
    "TASK_OFFER",
    "TaskOffer",
    "TaskServer",
    "install_tasks",
]

logger = logging.getLogger("toolwire.mcp")

#: A served tool whose ``typical_duration`` is at least this (seconds) runs as a task.
TASK_DURATION = 5.0
#: Tasks waiting at once for one principal (past it, a call is held as before).
PER_PRINCIPAL = 20
#: Tasks kept in all (waiting or ended).
MAX_TASKS = 1000
#: Seconds an ended task is kept for its client to read.
KEEP = 3600.0
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
ENDED = frozenset({"completed", "failed", "cancelled"})
#: Questions one task may have waiting at once.
MAX_INPUTS = 16
#: The poll interval asked of clients (milliseconds).
POLL_MS = 1000
#: The shortest a 2025-11-25 client's task is kept, whatever ttl it asks (seconds).
MIN_TTL = 60.0
#: How long a question forwarded on a 2025-11-25 ``tasks/result`` waits for its answer.
FORWARD_WAIT = 600.0
RELATED_TASK = "io.modelcontextprotocol/related-task"


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(eq=False)
class ServedTask:
    id: str
    owner: str
    tool: str
    created: float
    ttl: float
    status: str = "working"
    message: str | None = None
    updated: float = 0.0
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    run: asyncio.Future[Any] | None = None
    #: The questions the task's call waits on (``inputRequests``), by key, and their answers.
    inputs: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    answers: dict[str, asyncio.Future[dict[str, Any]]] = attrs.field(factory=dict)
    asked: int = 0
    #: Made by a 2025-11-25 client's task-augmented call (its views have that shape).
    legacy: bool = False

    def legacy_view(self) -> dict[str, Any]:
        """The task as a 2025-11-25 ``Task``."""
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _stamp(self.created),
            "lastUpdatedAt": _stamp(self.updated or self.created),
            "ttl": int(self.ttl * 1000),
            "pollInterval": POLL_MS,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        return out

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _stamp(self.created),
            "lastUpdatedAt": _stamp(self.updated or self.created),
            "ttlMs": int(self.ttl * 1000),
            "pollIntervalMs": POLL_MS,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.status == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = dict(self.inputs)
        return out

    async def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """Put a question to the client as an input request of this task (the task is
        ``input_required`` while any waits) and wait up to ``timeout`` seconds for the
        answer ``tasks/update`` brings; None when none came."""
        if len(self.inputs) >= MAX_INPUTS:
            return None
        self.asked += 1
        key = f"input-{self.asked}"  # never used twice in a task
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.inputs[key], self.answers[key] = request, answer
        self.status, self.updated = "input_required", time.time()
        try:
            return await asyncio.wait_for(answer, timeout)
        except TimeoutError:
            return None
        finally:
            self.inputs.pop(key, None)
            self.answers.pop(key, None)
            if not self.inputs and self.status == "input_required":
                self.status, self.updated = "working", time.time()

    def answer(self, responses: Mapping[str, Any]) -> None:
        """``tasks/update``: each response to a question still waiting resolves it; a key
        never asked, or answered already, is ignored (the spec's SHOULD)."""
        for key, response in responses.items():
            waiting = self.answers.get(key) if isinstance(key, str) else None
            if waiting is not None and not waiting.done() and isinstance(response, Mapping):
                waiting.set_result(dict(response))


class TaskStore:
    """The gateway's tasks, by id (see the module docstring)."""

    def __init__(self, per_principal: int = PER_PRINCIPAL, most: int = MAX_TASKS) -> None:
        self.per_principal = per_principal
        self.most = most
        self._tasks: dict[str, ServedTask] = {}

    def _sweep(self) -> None:
        now = time.time()
        for task in list(self._tasks.values()):
            if task.status in ENDED and now > task.created + task.ttl:
                del self._tasks[task.id]

    def room_for(self, owner: str) -> bool:
        self._sweep()
        working = sum(1 for t in self._tasks.values() if t.owner == owner and t.status not in ENDED)
        return working < self.per_principal and len(self._tasks) < self.most

    def add(
        self, owner: str, tool: str, ttl: float, message: str | None, *, legacy: bool = False
    ) -> ServedTask:
        now = time.time()
        task = ServedTask(
            secrets.token_hex(16), owner, tool, now, ttl, message=message, legacy=legacy
        )
        self._tasks[task.id] = task
        return task

    def get(self, task_id: Any, owner: str) -> ServedTask:
        """The task, when ``owner`` made it; else the error an unknown id gets."""
        self._sweep()
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or not secrets.compare_digest(task.owner, owner):
            raise MCPError(types.INVALID_PARAMS, "unknown task")
        return task

    def __len__(self) -> int:
        return len(self._tasks)


@attrs.define(eq=False)
class TaskOffer:
    """One ``tools/call`` whose client declared the tasks extension: the call's approval
    wait takes it (:meth:`take`) when there is room, and the request is answered with a
    task from then on."""

    store: TaskStore
    owner: str
    tool: str
    ttl: float
    started: asyncio.Event = attrs.field(factory=asyncio.Event)
    task: ServedTask | None = None
    legacy: bool = False

    async def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The call's question to its client, as an input request of its task (see
        :meth:`ServedTask.ask`); only when the call is a task."""
        assert self.task is not None
        return await self.task.ask(request, timeout)

    def says(self, message: str) -> bool:
        """A running task's status message is now ``message`` (its progress: a task gets
        no progress notification); False when the call is no task."""
        if self.task is None:
            return False
        self.task.message = message
        self.task.updated = time.time()
        return True

    def take(self, message: str) -> bool:
        """The call waits (``message`` says for whom): True when it is now a task (its
        status message is kept up to date; no progress notification is sent), False when
        there is no room (the request is held, as without the extension)."""
        if self.task is not None:
            self.task.message = message
            self.task.updated = time.time()
            return True
        if not self.store.room_for(self.owner):
            return False
        self.task = self.store.add(self.owner, self.tool, self.ttl, message, legacy=self.legacy)
        self.started.set()
        return True


#: The offer of the call running in this context (set by the middleware).
TASK_OFFER: contextvars.ContextVar[TaskOffer | None] = contextvars.ContextVar(
    "toolwire_mcp_task_offer", default=None
)


def _declares_tasks(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    caps = (
        meta.get("io.modelcontextprotocol/clientCapabilities")
        if isinstance(meta, Mapping)
        else None
    )
    extensions = caps.get("extensions") if isinstance(caps, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _ended(task: ServedTask, run: asyncio.Future[Any]) -> None:
    """The call behind a task ended: the task carries its result or error."""
    task.updated = time.time()
    task.ttl = max(task.ttl, task.updated - task.created + KEEP)
    if run.cancelled():
        task.status, task.message = "cancelled", "cancelled by its client"
        return
    exc = run.exception()
    if exc is None:
        result = run.result()
        task.result = (
            dict(result)
            if isinstance(result, Mapping)
            else result.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
        task.result.pop("resultType", None)
        task.status, task.message = "completed", None
    elif isinstance(exc, MCPError):
        task.error = {"code": exc.error.code, "message": exc.error.message}
        task.status, task.message = "failed", exc.error.message
    else:
        logger.error("the call behind MCP task %s failed: %r", task.id, exc)
        task.error = {"code": types.INTERNAL_ERROR, "message": "internal error"}
        task.status, task.message = "failed", "internal error"


def _asks(result: Any) -> bool:
    """A call's result that asks its client for input (SEP-2322's ``InputRequiredResult``):
    a round of the call, not its end."""
    if isinstance(result, Mapping):
        return result.get("resultType") == "input_required"
    return getattr(result, "result_type", None) == "input_required"


class _TaskParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")

    task_id: str = Field(alias="taskId", max_length=512)


def _missing_extension() -> MCPError:
    return MCPError(
        -32021,
        f"Missing required client capability: the {TASKS_EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _legacy_ttl(asked: Mapping[str, Any], most: float) -> float:
    """The seconds a 2025-11-25 client's task is kept: what it asked (``ttl``, ms), within
    :data:`MIN_TTL` and the gateway's own."""
    ttl = asked.get("ttl")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
        return most
    return min(max(ttl / 1000, MIN_TTL), most)


class TaskServer(Server):
    """The SDK's low-level server, whose capabilities for a 2025-11-25 client say that
    tool calls run as tasks (``tasks``: ``requests.tools.call``, ``cancel``); the SDK has
    no place for them (it implements no tasks version)."""

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        found = super().get_capabilities(*args, **kwargs)
        if kwargs.get("protocol_version") in MODERN_PROTOCOL_VERSIONS:
            return found  # the 2026-07-28 extension says it (capabilities.extensions)
        tasks = types.ServerTasksCapability.model_validate(
            {"cancel": {}, "requests": {"tools": {"call": {}}}}
        )
        return found.model_copy(update={"tasks": tasks})


def install_tasks(
    server: Any,
    approval_wait: float,
    long_running: Callable[[str], bool],
    store: TaskStore | None = None,
    *,
    task_only: Callable[[str], bool] = lambda name: False,
) -> TaskStore:
    """Serve tasks on ``server`` (the module docstring): the extension is declared, a
    middleware answers a long-running tool's call (``long_running(name)``), or a call that
    starts to wait for its approvers, with a task, and ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel`` are answered, each only to a request that declares the extension;
    for a 2025-11-25 client, a call with ``task`` of a long-running or task-only tool is a
    task, followed with ``tasks/get``, ``tasks/result`` and ``tasks/cancel``. A tool
    ``task_only(name)`` says is served only as a task: a call that cannot be one is
    refused, saying so.

    On 2026-07-28 a task-only tool that is not long-running runs in the call until it
    becomes a task (its tool's ``continue_as_task()``, a question, an approval wait), so
    it may first gather input in rounds of the call (SEP-2663's MRTR composition), and a
    call of it that ends before is answered as a task already completed."""
    tasks = store if store is not None else TaskStore()
    ttl = max(approval_wait, 0.0) + KEEP

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        tool = str(params.get("name", ""))
        if _modern(ctx):
            if not _declares_tasks(params):
                if task_only(tool):
                    raise _missing_extension()
                return await call_next(ctx)
            legacy, kept = False, ttl
            now = long_running(tool)
            if not now and approval_wait <= 0 and not task_only(tool):
                return await call_next(ctx)  # it cannot become a task: as it always was
        else:
            asked = params.get("task")
            # 2025-11-25: a call the client asked to run as a task, of a tool the list
            # says may (a long-running one); any other is an ordinary call.
            if not isinstance(asked, Mapping) and task_only(tool):
                raise MCPError(
                    types.METHOD_NOT_FOUND,
                    f"`{tool}` runs only as a task: call it with `task` (its taskSupport "
                    "is required)",
                )
            if not isinstance(asked, Mapping) or not (task_only(tool) or long_running(tool)):
                return await call_next(ctx)
            legacy, kept, now = True, _legacy_ttl(asked, ttl), True
        offer = TaskOffer(tasks, principal_key(ctx), tool, kept, legacy=legacy)
        if now and not offer.take(f"running `{tool}`") and task_only(tool):
            # No room for another task (else run as an ordinary call): this one cannot be.
            raise MCPError(
                types.INVALID_REQUEST,
                f"`{tool}` runs only as a task, and no more can start for you now (at most "
                f"{tasks.per_principal} under way at once): wait for one to end",
            )
        token = TASK_OFFER.set(offer)
        try:
            run = asyncio.ensure_future(call_next(ctx))  # the call, with the offer in reach
        finally:
            TASK_OFFER.reset(token)
        if offer.task is None:
            waited = asyncio.ensure_future(offer.started.wait())
            try:
                await asyncio.wait({run, waited}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                run.cancel()
                waited.cancel()
                raise
            waited.cancel()
            if run.done() and offer.task is None:
                result = run.result()
                # A task-only tool's call that ended in the call: its client gets the
                # task it must (a round that asks its client is no end).
                if not task_only(tool) or _asks(result) or not offer.take(f"`{tool}` ran"):
                    return result
        task = offer.task
        assert task is not None
        task.run = run
        if run.done():
            _ended(task, run)
        else:
            run.add_done_callback(lambda done: _ended(task, done))
        logger.info("MCP task %s: `%s` runs as a task (%s)", task.id, tool, task.message)
        if legacy:
            return {"task": task.legacy_view()}
        return {"resultType": "task", **task.view()}

    def _task_of(ctx: Any, params: _TaskParams) -> ServedTask:
        modern = _modern(ctx)
        if modern and not _declares_tasks(ctx.params):
            raise _missing_extension()
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        named = headers.get("mcp-name") if headers is not None else None
        if named is not None and decode_header_value(named) != params.task_id:
            # Streamable HTTP: the routing header names the task (SEP-2663); one that
            # names another is refused, as the SDK refuses a tools/call's (SEP-2243). One
            # left out is taken (pydantic-ai's task client sends none): the body decides.
            raise MCPError(HEADER_MISMATCH, "the Mcp-Name header does not name this task")
        task = tasks.get(params.task_id, principal_key(ctx))
        if task.legacy == modern:  # a task of the other wire version: not this one's to see
            raise MCPError(types.INVALID_PARAMS, "unknown task")
        return task

    def _removed(ctx: Any, method: str) -> None:
        """A method of the other wire version: not found (the conformance suite asks
        -32601 of ``tasks/result`` on 2026-07-28)."""
        raise MCPError(types.METHOD_NOT_FOUND, f"Method not found: {method}")

    async def tasks_get(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        task = _task_of(ctx, params)
        if task.legacy:
            return task.legacy_view()
        return {"resultType": "complete", **task.view()}

    async def tasks_update(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        if not _modern(ctx):
            _removed(ctx, "tasks/update")
        given = (params.model_extra or {}).get("inputResponses")
        _task_of(ctx, params).answer(given if isinstance(given, Mapping) else {})
        return {"resultType": "complete"}

    async def tasks_cancel(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        task = _task_of(ctx, params)
        if task.run is not None and not task.run.done():
            task.run.cancel()
            if task.legacy:  # its answer is the task as it now stands
                task.status, task.message = "cancelled", "cancelled by its client"
                task.updated = time.time()
        if task.legacy:
            return task.legacy_view()
        return {"resultType": "complete"}

    async def tasks_result(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        if _modern(ctx):
            _removed(ctx, "tasks/result")
        task = _task_of(ctx, params)
        return await _legacy_result(ctx, task, ttl)

    server.extensions[TASKS_EXTENSION] = {}
    server.middleware.append(middleware)
    for method, handler in (
        ("tasks/get", tasks_get),
        ("tasks/update", tasks_update),
        ("tasks/cancel", tasks_cancel),
        ("tasks/result", tasks_result),
    ):
        server.add_request_handler(method, _TaskParams, handler)
    return tasks


async def _legacy_result(ctx: Any, task: ServedTask, most: float) -> dict[str, Any]:
    """``tasks/result`` (2025-11-25): wait for the task's end, forwarding each question
    its call asks to the client on this request; then the call's result, its error, or
    the cancellation. The wait ends at the longest a gateway's task may take (``most``
    seconds from its start: its approval wait and the time an ended task is kept), even
    when the client asked to keep the task for less."""
    forwarded: dict[str, asyncio.Task[None]] = {}
    deadline = task.created + max(task.ttl, most)
    try:
        while task.status not in ENDED:
            for key, request in list(task.inputs.items()):
                if key not in forwarded:
                    forwarded[key] = asyncio.ensure_future(_forward(ctx, task, key, request))
            if time.time() > deadline:
                raise MCPError(types.INTERNAL_ERROR, f"task {task.id} took too long to end")
            if task.run is not None and not task.run.done():
                await asyncio.wait({task.run}, timeout=0.05)
            else:
                await asyncio.sleep(0.01)  # the end is being written down
    finally:
        for waiting in forwarded.values():
            waiting.cancel()
    if task.status == "completed" and task.result is not None:
        meta = dict(task.result.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": task.id}
        return {**task.result, "_meta": meta}
    if task.status == "failed" and task.error is not None:
        raise MCPError(
            int(task.error.get("code", types.INTERNAL_ERROR)), str(task.error["message"])
        )
    raise MCPError(types.INTERNAL_ERROR, f"task {task.id} was cancelled")


async def _forward(ctx: Any, task: ServedTask, key: str, request: dict[str, Any]) -> None:
    """One question of a 2025-11-25 task, sent to its client on the ``tasks/result``
    request (related to the task); its answer is the task's input response. A question
    the client cannot take, or does not answer in time, is cancelled."""
    from mcp.shared.message import ServerMessageMetadata

    answer: dict[str, Any] = {"action": "cancel"}
    try:
        asked = types.ElicitRequest.model_validate(request)
        with anyio.fail_after(FORWARD_WAIT):
            got = await ctx.session.send_request(
                asked,
                types.ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        answer = got.model_dump(by_alias=True, mode="json", exclude_none=True)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the tool hears a cancelled question, not the cause
        logger.info("MCP task %s: its question was not answered: %s", task.id, exc)
    task.answer({key: answer})
