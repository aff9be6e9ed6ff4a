"""The tools the conformance suite's tasks scenarios call (io.modelcontextprotocol/tasks,
SEP-2663; the suite's 0.2 alphas), as a toolwire toolset.

``toolwire mcp serve --transport http --app tasks_app:tools --task-only failing_job``
serves them. A tool that declares itself long-running (``typical_duration``) is answered
as a task to a client that declares the extension; the others are ordinary calls.
``failing_job`` is served only as a task (``--task-only``): a client without the
extension is refused (-32021), as the suite's ``tasks-required-task-error`` asks.
``test_tool_with_task`` is task-only too, but not long-running: it asks for a name in a
round of the call, then goes on as a task (``tasks-mrtr-composition``).
"""

from __future__ import annotations

import asyncio

from mcp import MCPError
from mcp_types import INTERNAL_ERROR

import toolwire as tw
from toolwire_mcp import MCPCallContext

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}
USER_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tw.tool_fn
def greet(name: str = "World") -> str:
    """Greets someone (an ordinary call)."""
    return f"Hello, {name}!"


@tw.tool_fn(typical_duration=60)
async def slow_compute(seconds: float = 0, label: str = "") -> str:
    """Sleeps ``seconds`` seconds, then answers (a task)."""
    await asyncio.sleep(seconds)
    return f"computed {label} after {seconds:g} s"


@tw.tool_fn(typical_duration=60)
async def failing_job() -> str:
    """Fails after a second: a tool error (a task that completes with isError)."""
    await asyncio.sleep(1)
    raise RuntimeError("the job failed")


@tw.tool_fn(typical_duration=60)
async def protocol_error_job() -> str:
    """Ends in a protocol error (the MCP SDK's ``MCPError``, as a tool raises one): a
    failed task carrying it, where any other exception is a tool's error result."""
    raise MCPError(INTERNAL_ERROR, "the job broke down, as the suite asks")


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def confirm_delete(filename: str, mcp: MCPCallContext | None = None) -> str:
    """Asks before it deletes: one question inside the task (an input request)."""
    assert mcp is not None
    answer = await mcp.elicit(f"Delete {filename}?", CONFIRM)
    confirmed = answer.accepted and (answer.content or {}).get("confirm") is True
    return f"deleted {filename}" if confirmed else f"kept {filename}"


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def multi_input(mcp: MCPCallContext | None = None) -> str:
    """Asks two questions at once: two input requests waiting together."""
    assert mcp is not None
    first, second = await asyncio.gather(
        mcp.elicit("Your name?", NAME), mcp.elicit("Confirm?", CONFIRM)
    )
    return f"answered: {first.action}, {second.action}"


@tw.tool_fn(injected=["mcp"])
async def test_tool_with_task(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028 (the suite's name)
    """Asks for a name in the call (SEP-2322's rounds), then goes on as a task."""
    assert mcp is not None
    answer = await mcp.elicit("Your user name?", USER_NAME, before_task=True)
    name = (answer.content or {}).get("name", "nobody") if answer.accepted else "nobody"
    await mcp.continue_as_task(f"greeting {name}")
    await asyncio.sleep(0.5)
    return f"Hello, {name}!"


tools = tw.Toolset(
    "tasks",
    [
        greet,
        slow_compute,
        failing_job,
        protocol_error_job,
        confirm_delete,
        multi_input,
        test_tool_with_task,
    ],
)
