"""MCP tasks, as the gateway: a call that waits for an approver is answered as a task.

A call a policy files for approval (``[approvals]``) may wait an hour for a person. A
client that declares the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``)
on its ``tools/call`` need not hold its request open that long: once the call starts to
wait, the gateway answers with a task (``resultType: "task"``), the call goes on waiting
in the gateway, and the client polls ``tasks/get`` (its status message says which request
waits for whom) until the task carries the call's result: run once when approved, the
denial's reason, or the refusal naming the request when the wait passes. A call that does
not wait is answered as it always is. A client that does not declare the extension is
held with progress notifications, as before.

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
import json
import logging
import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import mcp_types as types
from mcp import MCPError
from pydantic import ConfigDict, Field

from toolwire_mcp._auth import principal_of
from toolwire_mcp._tasks import TASKS_EXTENSION

__all__ = ["KEEP", "MAX_TASKS", "PER_PRINCIPAL", "TASK_OFFER", "TaskOffer", "install_tasks"]

logger = logging.getLogger("toolwire.mcp")

#: Tasks waiting at once for one principal (past it, a call is held as before).
PER_PRINCIPAL = 20
#: Tasks kept in all (waiting or ended).
MAX_TASKS = 1000
#: Seconds an ended task is kept for its client to read.
KEEP = 3600.0
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
#: The poll interval asked of clients (milliseconds).
POLL_MS = 2000


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
        return out


class TaskStore:
    """The gateway's tasks, by id (see the module docstring)."""

    def __init__(self, per_principal: int = PER_PRINCIPAL, most: int = MAX_TASKS) -> None:
        self.per_principal = per_principal
        self.most = most
        self._tasks: dict[str, ServedTask] = {}

    def _sweep(self) -> None:
        now = time.time()
        for task in list(self._tasks.values()):
            if task.status != "working" and now > task.created + task.ttl:
                del self._tasks[task.id]

    def room_for(self, owner: str) -> bool:
        self._sweep()
        working = sum(1 for t in self._tasks.values() if t.owner == owner and t.status == "working")
        return working < self.per_principal and len(self._tasks) < self.most

    def add(self, owner: str, tool: str, ttl: float, message: str | None) -> ServedTask:
        now = time.time()
        task = ServedTask(secrets.token_hex(16), owner, tool, now, ttl, message=message)
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
        self.task = self.store.add(self.owner, self.tool, self.ttl, message)
        self.started.set()
        return True


#: The offer of the call running in this context (set by the middleware).
TASK_OFFER: contextvars.ContextVar[TaskOffer | None] = contextvars.ContextVar(
    "toolwire_mcp_task_offer", default=None
)


def _owner(ctx: Any) -> str:
    principal = principal_of(ctx)
    return "" if principal is None else json.dumps(principal.to_dict(), sort_keys=True)


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


class _TaskParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")

    task_id: str = Field(alias="taskId", max_length=512)


def install_tasks(server: Any, approval_wait: float, store: TaskStore | None = None) -> TaskStore:
    """Serve tasks on ``server`` (the module docstring): the extension is declared, a
    middleware turns a waiting call into a task, and ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel`` are answered."""
    tasks = store if store is not None else TaskStore()
    ttl = approval_wait + KEEP

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call" or not _declares_tasks(ctx.params):
            return await call_next(ctx)
        tool = str((ctx.params or {}).get("name", ""))
        offer = TaskOffer(tasks, _owner(ctx), tool, ttl)
        token = TASK_OFFER.set(offer)
        try:
            run = asyncio.ensure_future(call_next(ctx))  # the call, with the offer in reach
        finally:
            TASK_OFFER.reset(token)
        waited = asyncio.ensure_future(offer.started.wait())
        try:
            await asyncio.wait({run, waited}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            run.cancel()
            waited.cancel()
            raise
        if run.done() and offer.task is None:
            waited.cancel()
            return run.result()
        waited.cancel()
        task = offer.task
        assert task is not None
        task.run = run
        run.add_done_callback(lambda done: _ended(task, done))
        if run.done():  # ended in the same step it began to wait
            _ended(task, run)
        logger.info("MCP task %s: `%s` waits for its approvers", task.id, tool)
        return {"resultType": "task", **task.view()}

    async def tasks_get(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        return {"resultType": "complete", **tasks.get(params.task_id, _owner(ctx)).view()}

    async def tasks_update(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        tasks.get(params.task_id, _owner(ctx))  # nothing is asked of clients: acknowledged
        return {"resultType": "complete"}

    async def tasks_cancel(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        task = tasks.get(params.task_id, _owner(ctx))
        if task.run is not None and not task.run.done():
            task.run.cancel()
        return {"resultType": "complete"}

    server.extensions[TASKS_EXTENSION] = {}
    server.middleware.append(middleware)
    for method, handler in (
        ("tasks/get", tasks_get),
        ("tasks/update", tasks_update),
        ("tasks/cancel", tasks_cancel),
    ):
        server.add_request_handler(method, _TaskParams, handler)
    return tasks
