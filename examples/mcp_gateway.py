"""MCP both ways, offline: serve a toolset over MCP, then use it as an MCP toolset.

Run with no arguments. The script starts itself a second time as an MCP server over
stdio (``python mcp_gateway.py serve``: what ``toolwire mcp serve --app ...`` does), then
mounts that server's tools with ``mcp_toolset`` under the prefix ``notes_``, puts a hook
in front of them, and runs the agent loop with the offline provider. The hook rejects a
call before it reaches the server, exactly as an installed policy would.
"""

import sys

from toolwire import (
    Agent,
    AgentFinished,
    Executor,
    HookSet,
    PluginHost,
    Reject,
    Session,
    ToolCallDecided,
    ToolResultReady,
    Toolset,
    tool_fn,
)
from toolwire.providers.test import TestProvider

NOTES = {"groceries": "milk, eggs", "plans": "ship the MCP gateway"}


@tool_fn
def read_note(title: str) -> str:
    """Read a note.

    Args:
        title: The note's title.
    """
    return NOTES.get(title, f"no note called {title!r}")


def serve() -> None:
    from toolwire_mcp import serve_mcp

    serve_mcp(Toolset("notes", [read_note]), plugins=PluginHost(autoload=False))


def main() -> None:
    from toolwire_mcp import close_all, mcp_toolset

    notes = mcp_toolset("notes", [sys.executable, __file__, "serve"])
    hooks = HookSet()

    @hooks.on(target="notes_read_note")
    def no_private_notes(call, context):
        if call.input["title"] == "plans":
            return Reject("plans are private")
        return None

    app = Toolset("app", hooks=hooks).add(notes, prefix="notes_")
    provider = TestProvider(
        script=[
            {
                "tool_calls": [
                    {"name": "notes_read_note", "arguments": {"title": "groceries"}},
                    {"name": "notes_read_note", "arguments": {"title": "plans"}},
                ]
            },
            {"text": "You need milk and eggs."},
        ]
    )
    agent = Agent(provider, app, executor=Executor(plugins=False), plugins=False)

    def show(event):
        if isinstance(event, ToolCallDecided):
            print(f"{event.call.name} {event.call.arguments}: {event.outcome}")
        elif isinstance(event, ToolResultReady):
            print(f"  -> {event.result.content}")
        elif isinstance(event, AgentFinished):
            print(f"assistant: {event.result.text}")

    try:
        question = "what do I need to buy, and what are my plans?"
        agent.run(Session().add_user(question), on_event=show)
    finally:
        close_all()


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["serve"] else main()
