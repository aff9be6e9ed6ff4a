"""An MCP server that runs tool calls as tasks, written from the spec texts (#44).

Both wire versions, on the official SDK's low-level ``Server``:

- 2025-11-25 experimental tasks: the server declares ``capabilities.tasks`` (cancel, and
  ``requests.tools.call``); its tools say ``execution.taskSupport``; a ``tools/call``
  with ``task: {ttl}`` is answered with ``{"task": {...}}``; ``tasks/get``,
  ``tasks/result`` (held until the task ends) and ``tasks/cancel`` follow it. A question
  to the user (``ask``) goes as an ordinary ``elicitation/create`` while ``tasks/result``
  waits.
- 2026-07-28, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): declared in
  ``capabilities.extensions``; a call whose request declares the extension is answered
  with ``resultType: "task"``; one that does not is refused with -32021;
  ``tasks/get`` carries the result, the error or the ``inputRequests``, answered with
  ``tasks/update``; ``tasks/cancel``.

Tools: ``research`` (three stages, a status message each), ``ask`` (asks a colour),
``slow`` (runs until cancelled), ``miscounted`` (structured content its output schema
refuses), ``broken`` (fails with a JSON-RPC error), ``malformed``
(answers with a task no client can follow) and ``plain`` (no task). ``MCP_RECORD`` (a
file): every task's end is appended as a JSON line, so a test sees a cancellation reach
the server. ``MCP_NO_TASKS_CAPABILITY=1`` leaves ``capabilities.tasks`` out. Run as
``python tasks_server.py stdio`` or ``python tasks_server.py http PORT``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from pydantic import ConfigDict

RECORD = os.environ.get("MCP_RECORD")
EXTENSION = "io.modelcontextprotocol/tasks"
POLL_MS = 50
TEXT_IN = {"type": "object", "properties": {"topic": {"type": "string"}}}
COLOUR = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def _record(**entry: Any) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(text: str) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=text)]


class Task:
    def __init__(self, tool: str, args: dict[str, Any], modern: bool) -> None:
        self.id = uuid.uuid4().hex
        self.tool = tool
        self.args = args
        self.modern = modern
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.inputs: dict[str, Any] = {}
        self.answers: dict[str, Any] = {}
        self.changed = anyio.Event()
        self.answered = anyio.Event()
        self.scope: anyio.CancelScope | None = None

    def set(self, status: str, message: str | None = None) -> None:
        self.status, self.message, self.updated = status, message, _now()
        self.changed.set()
        self.changed = anyio.Event()

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.modern:
            out.update(ttlMs=60_000, pollIntervalMs=POLL_MS)
            if self.status == "completed":
                out["result"] = self.result
            elif self.status == "failed":
                out["error"] = self.error
            elif self.status == "input_required":
                out["inputRequests"] = self.inputs
        else:
            out.update(ttl=60_000, pollInterval=POLL_MS)
        return out


TASKS: dict[str, Task] = {}


async def _work(task: Task, ctx: Any) -> None:
    with anyio.CancelScope() as scope:
        task.scope = scope
        try:
            if task.tool == "research":
                for stage in ("Gathering sources", "Analyzing content", "Writing the report"):
                    task.set("working", stage)
                    await anyio.sleep(0.15)
                topic = task.args.get("topic", "?")
                result = types.CallToolResult(
                    content=_text(f"report on {topic}"), structured_content={"topic": topic}
                )
                task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.set("completed", "done")
            elif task.tool == "ask":
                answer = await _ask(task, ctx)
                result = types.CallToolResult(content=_text(f"colour: {answer}"))
                task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.set("completed")
            elif task.tool == "slow":
                task.set("working", "taking its time")
                await anyio.sleep(600)
            elif task.tool == "miscounted":  # structured content its schema refuses
                result = types.CallToolResult(
                    content=_text("many"), structured_content={"n": "many"}
                )
                task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.set("completed")
            elif task.tool == "broken":
                await anyio.sleep(0.05)
                task.error = {"code": -32603, "message": "the disk is on fire"}
                task.set("failed", "the disk is on fire")
        except anyio.get_cancelled_exc_class():
            task.set("cancelled", "cancelled by its caller")
            _record(task=task.id, tool=task.tool, status="cancelled")
            raise
    if task.status in ("completed", "failed"):
        _record(task=task.id, tool=task.tool, status=task.status)


async def _ask(task: Task, ctx: Any) -> str:
    if task.modern:  # 2026-07-28: an input request in the task, answered by tasks/update
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message="Your favourite colour?", requested_schema=COLOUR
            )
        )
        asked = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.inputs = {"colour-1": asked}
        task.set("input_required", "waiting for a colour")
        await task.answered.wait()
        answer = task.answers.get("colour-1") or {}
        task.inputs = {}
        task.set("working")
        return str((answer.get("content") or {}).get("colour", answer.get("action")))
    # 2025-11-25: the question goes to the client on its tasks/result request, while
    # that request waits for the task (tasks_result asks it).
    task.inputs = {"colour-1": "Your favourite colour?"}
    task.set("input_required", "waiting for a colour")
    await task.answered.wait()
    task.inputs = {}
    task.set("working")
    got = task.answers["colour-1"]
    return str((got.content or {}).get("colour", got.action))


def _tools() -> list[types.Tool]:
    def tool(name: str, support: str | None) -> types.Tool:
        execution = types.ToolExecution(task_support=support) if support else None
        return types.Tool(
            name=name, description=f"The {name} tool.", input_schema=TEXT_IN, execution=execution
        )

    counted = tool("miscounted", "required")
    counted.output_schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    return [
        counted,
        tool("research", "required"),
        tool("ask", "required"),
        tool("slow", "required"),
        tool("broken", "required"),
        tool("malformed", "required"),
        tool("plain", None),
    ]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=_text("plain answer"))


async def tasks_middleware(ctx: Any, call_next: Any) -> Any:
    """A call of a task tool is answered here with its task: a handler's answer must be a
    CallToolResult on the 2025-11-25 wire, a middleware's is its own."""
    params = dict(ctx.params or {})
    if ctx.method != "tools/call" or params.get("name") == "plain":
        return await call_next(ctx)
    meta = dict(params.get("_meta") or {})
    modern = "io.modelcontextprotocol/protocolVersion" in meta
    if modern:
        caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
        if EXTENSION not in (caps.get("extensions") or {}):
            raise MCPError(
                -32021,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
    elif not isinstance(params.get("task"), dict):
        raise MCPError(-32601, f"tool {params.get('name')} must be called as a task")
    if params.get("name") == "malformed":  # a task no client can follow
        bad = {"taskId": "", "status": "sleeping", "createdAt": _now(), "lastUpdatedAt": _now()}
        return {"resultType": "task", **bad} if modern else {"task": bad}
    task = Task(str(params.get("name")), dict(params.get("arguments") or {}), modern)
    TASKS[task.id] = task
    # The work outlives this request: a task of the server's own.
    running = asyncio.get_running_loop().create_task(_work(task, ctx))
    RUNNING.add(running)
    running.add_done_callback(RUNNING.discard)
    if modern:
        return {"resultType": "task", **task.view()}
    return {"task": task.view()}


def _task(params: Any) -> Task:
    task_id = params.get("taskId") if isinstance(params, dict) else getattr(params, "taskId", None)
    task = TASKS.get(task_id) if isinstance(task_id, str) else None
    if task is None:
        raise MCPError(-32602, f"unknown task {task_id!r}")
    return task


def _params(params: Any) -> dict[str, Any]:
    if isinstance(params, dict):
        return params
    return params.model_dump(by_alias=True) if params is not None else {}


async def tasks_get(ctx: Any, params: Any) -> dict[str, Any]:
    return _task(_params(params)).view()


async def tasks_result(ctx: Any, params: Any) -> dict[str, Any]:
    task = _task(_params(params))
    while task.status not in ("completed", "failed", "cancelled"):
        if task.status == "input_required" and not task.modern and task.inputs:
            for key, question in list(task.inputs.items()):
                task.answers[key] = await ctx.session.elicit_form(question, COLOUR)
            task.answered.set()
        await task.changed.wait()
    if task.status == "completed":
        assert task.result is not None
        return task.result
    if task.status == "failed":
        assert task.error is not None
        raise MCPError(task.error["code"], task.error["message"])
    raise MCPError(-32000, "task cancelled")


async def tasks_cancel(ctx: Any, params: Any) -> dict[str, Any]:
    task = _task(_params(params))
    if task.scope is not None and task.status not in ("completed", "failed", "cancelled"):
        task.scope.cancel()
    return {} if task.modern else task.view()


async def tasks_update(ctx: Any, params: Any) -> dict[str, Any]:
    given = _params(params)
    task = _task(given)
    for key, answer in (given.get("inputResponses") or {}).items():
        if key in task.inputs:  # unknown and answered keys are ignored (the spec's SHOULD)
            task.answers[key] = answer
    if task.answers:
        task.answered.set()
    return {}


class TaskParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")

    taskId: str
    inputResponses: dict[str, Any] | None = None


server = Server(
    "toolwire-tasks-test", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
)
for _method, _handler in (
    ("tasks/get", tasks_get),
    ("tasks/result", tasks_result),
    ("tasks/cancel", tasks_cancel),
    ("tasks/update", tasks_update),
):
    server.add_request_handler(_method, TaskParams, _handler)
server.extensions[EXTENSION] = {}
server.middleware.append(tasks_middleware)
RUNNING: set[asyncio.Task[None]] = set()


_plain_options = server.create_initialization_options


def _options(*args: Any, **kwargs: Any) -> Any:
    """The server's options with ``capabilities.tasks`` (2025-11-25), which the SDK's own
    capabilities have no place for; the HTTP app asks for them too."""
    options = _plain_options(*args, **kwargs)
    if os.environ.get("MCP_NO_TASKS_CAPABILITY") == "1":  # a server that forgot to say so
        return options
    tasks = types.ServerTasksCapability.model_validate(
        {"cancel": {}, "requests": {"tools": {"call": {}}}}
    )
    options.capabilities = options.capabilities.model_copy(update={"tasks": tasks})
    return options


server.create_initialization_options = _options  # type: ignore[method-assign]


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, _options())


def _http(port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(_stdio)
    else:
        _http(int(sys.argv[2]))
