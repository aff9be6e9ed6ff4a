"""An MCP server for toolwire-mcp's tests, on the official SDK's low-level ``Server``.

Run as ``python mcp_server.py stdio`` or ``python mcp_server.py http PORT``. The
environment shapes it: ``MCP_RECORD`` (a file; every tools/call received is appended as a
JSON line, so a test can prove a call never reached the server), ``MCP_EXTRA_TOOLS`` (that
many more tools, ``extra_N``), ``MCP_PAGE_SIZE`` (tools/list page size; 0 = one page),
``MCP_TOOL_PREFIX`` (put before every tool name, to make two servers' names meet),
``MCP_RESOURCES`` (1: serve resources, a template, prompts and completions too).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

RECORD = os.environ.get("MCP_RECORD")
EXTRA = int(os.environ.get("MCP_EXTRA_TOOLS", "0"))
PAGE = int(os.environ.get("MCP_PAGE_SIZE", "0"))
PREFIX = os.environ.get("MCP_TOOL_PREFIX", "")
LIST_DELAY = float(os.environ.get("MCP_LIST_DELAY", "0"))  # seconds each tools/list takes
GROWN = [False]  # the `grow` tool adds the `grown` tool and says so (list_changed)

OBJ: dict[str, Any] = {"type": "object"}
TEXT_IN = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
SUM_OUT = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
LONG = "a.very.long.tool.name." + "x" * 80  # 102 characters, dots: legal in MCP only


def _tools() -> list[types.Tool]:
    ro = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    tools = [
        types.Tool(name="echo", description="Echo the text.", input_schema=TEXT_IN, annotations=ro),
        types.Tool(
            name="add",
            description="Add two integers.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            output_schema=SUM_OUT,
            annotations=ro,
        ),
        types.Tool(
            name="bad_sum",
            description="Structured output that breaks its schema.",
            input_schema=OBJ,
            output_schema=SUM_OUT,
            annotations=ro,
        ),
        types.Tool(name="fail", description="Always an isError result.", input_schema=OBJ),
        types.Tool(
            name="delete_all", description="Unannotated: destructive by default.", input_schema=OBJ
        ),
        types.Tool(
            name="media", description="Mixed content blocks.", input_schema=OBJ, annotations=ro
        ),
        types.Tool(
            name="media_file",
            description="An image in content and in structuredContent (as filesystem's "
            "read_media_file answers).",
            input_schema=OBJ,
            output_schema={
                "type": "object",
                "properties": {"content": {"type": "array", "items": {"type": "object"}}},
                "required": ["content"],
            },
            annotations=ro,
        ),
        types.Tool(name="hang", description="Never answers.", input_schema=OBJ, annotations=ro),
        types.Tool(name="die", description="Exits the server mid-call.", input_schema=OBJ),
        types.Tool(
            name="huge", description="Answers `mib` MiB of text.", input_schema=OBJ, annotations=ro
        ),
        types.Tool(
            name="pid", description="This server's process id.", input_schema=OBJ, annotations=ro
        ),
        types.Tool(name="warn", description="Logs a warning to the client.", input_schema=OBJ),
        types.Tool(
            name="typed",
            description="Text that is not its structured content (as MCPServer's int).",
            input_schema=OBJ,
            output_schema={
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            },
            annotations=ro,
        ),
        types.Tool(name="nap", description="Sleeps `seconds`.", input_schema=OBJ, annotations=ro),
        types.Tool(
            name="touch",
            description="Says the resource `uri` changed (notifications/resources/updated).",
            input_schema=OBJ,
            annotations=ro,
        ),
        types.Tool(
            name="ask_user",
            description="Asks the client's user for a colour (elicitation).",
            input_schema=OBJ,
            annotations=ro,
        ),
        types.Tool(
            name="ask_model",
            description="Asks the client's model (sampling) and the client's roots.",
            input_schema=OBJ,
            annotations=ro,
        ),
        types.Tool(
            name="slow",
            description="Works `seconds`, reporting progress every `every` seconds.",
            input_schema=OBJ,
            annotations=ro,
        ),
        types.Tool(
            name="files.read", description="A dotted name.", input_schema=OBJ, annotations=ro
        ),
        types.Tool(
            name="files_read",
            description="Meets files.read once dots go.",
            input_schema=OBJ,
            annotations=ro,
        ),
        types.Tool(
            name=LONG, description="A name over 64 characters.", input_schema=OBJ, annotations=ro
        ),
    ]
    tools.append(types.Tool(name="grow", description="Adds a tool.", input_schema=OBJ))
    tools.append(types.Tool(name="getenv", description="Reads a variable.", input_schema=OBJ))
    if GROWN[0]:
        tools.append(
            types.Tool(name="grown", description="Added by grow.", input_schema=OBJ, annotations=ro)
        )
    tools += [
        types.Tool(
            name=f"extra_{i}", description=f"Extra tool {i}.", input_schema=OBJ, annotations=ro
        )
        for i in range(EXTRA)
    ]
    for t in tools:
        t.name = PREFIX + t.name
    return tools


def _record(name: str, arguments: Any) -> None:
    if RECORD:
        with open(RECORD, "a") as f:
            f.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if LIST_DELAY:
        await anyio.sleep(LIST_DELAY)
    tools = _tools()
    if not PAGE:
        return types.ListToolsResult(tools=tools)
    start = int(params.cursor) if params and params.cursor else 0
    page = tools[start : start + PAGE]
    more = start + PAGE < len(tools)
    return types.ListToolsResult(tools=page, next_cursor=str(start + PAGE) if more else None)


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = params.name.removeprefix(PREFIX)
    args = params.arguments or {}
    _record(params.name, args)
    if name == "echo":
        return types.CallToolResult(content=_text(f"{PREFIX}echo: {args.get('text')}"))
    if name == "add":
        total = int(args["a"]) + int(args["b"])
        return types.CallToolResult(
            content=_text(json.dumps({"sum": total})), structured_content={"sum": total}
        )
    if name == "bad_sum":
        return types.CallToolResult(content=_text("{}"), structured_content={"sum": "many"})
    if name == "fail":
        return types.CallToolResult(content=_text("the disk is on fire"), is_error=True)
    if name == "media_file":
        block = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png")],
            structured_content={"content": [block]},
        )
    if name == "media":
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="a picture:"),
                types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
                types.ResourceLink(
                    type="resource_link",
                    name="readme",
                    uri="file:///r.md",
                    mime_type="text/markdown",
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(uri="file:///notes.txt", text="the notes"),
                ),
            ]
        )
    if name == "grow":
        GROWN[0] = True
        await BUS.publish(ToolsListChanged())  # 2026-07-28 clients: subscriptions/listen
        await ctx.session.send_tool_list_changed()  # handshake-era clients
        return types.CallToolResult(content=_text("grown"))
    if name == "getenv":
        return types.CallToolResult(content=_text(os.environ.get(str(args.get("name")), "<unset>")))
    if name == "hang":
        await anyio.sleep(3600)
    if name == "typed":
        return types.CallToolResult(content=_text("5"), structured_content={"result": 5})
    if name == "warn":
        await ctx.session.send_log_message("warning", "the disk is almost full", logger="disk")
        return types.CallToolResult(content=_text("warned"))
    if name == "pid":
        return types.CallToolResult(content=_text(str(os.getpid())))
    if name == "touch":
        uri = str(args.get("uri", "note://readme"))
        if str(ctx.protocol_version) >= "2026-07-28":
            await BUS.publish(ResourceUpdated(uri))  # their listen streams
        else:
            await ctx.session.send_resource_updated(uri)  # handshake-era clients
        return types.CallToolResult(content=_text("touched"))
    if name == "ask_user":
        return await _ask_user(ctx, params)
    if name == "ask_model":
        return await _ask_model(ctx, params, args)
    if name == "slow":
        seconds, every = float(args.get("seconds", 1)), float(args.get("every", 0.2))
        steps = max(1, int(seconds / every))
        for i in range(steps):
            await anyio.sleep(every)
            await ctx.session.report_progress(i + 1, steps, f"step {i + 1}")
        return types.CallToolResult(content=_text("worked"))
    if name == "nap":
        await anyio.sleep(float(args.get("seconds", 1)))
        return types.CallToolResult(content=_text("rested"))
    if name == "huge":
        return types.CallToolResult(content=_text("x" * (int(args.get("mib", 32)) << 20)))
    if name == "die":
        sys.stderr.write("dying now\n")
        sys.stderr.flush()
        os._exit(3)
    return types.CallToolResult(content=_text(f"called {params.name}"))


COLOUR = {
    "type": "object",
    "properties": {"colour": {"type": "string"}},
    "required": ["colour"],
}


async def _ask_user(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """Elicitation, as each protocol allows (see _ask_model)."""
    answered: Any = (params.input_responses or {}).get("colour")
    if answered is None and ctx.session.can_send_request:
        answered = await ctx.session.elicit_form("Your favourite colour?", COLOUR)
    if answered is None:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message="Your favourite colour?", requested_schema=COLOUR
            )
        )
        return types.InputRequiredResult(input_requests={"colour": request}, request_state="c")
    action = answered.get("action") if isinstance(answered, dict) else answered.action
    content = answered.get("content") if isinstance(answered, dict) else answered.content
    return types.CallToolResult(content=_text(f"{action}: {content}"))


async def _ask_model(
    ctx: Any, params: types.CallToolRequestParams, args: dict[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    """Sampling, as each protocol allows: mid-call over a back-channel (before
    2026-07-28), else as an input request in the result, answered on the retry."""
    question = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=str(args.get("q", "hi")))
    )
    tokens = int(args.get("max_tokens", 50))
    answered = (params.input_responses or {}).get("sample")
    if answered is None and ctx.session.can_send_request:
        try:
            answered = await ctx.session.create_message(
                [question], max_tokens=tokens, system_prompt="Be brief."
            )
        except MCPError as exc:
            return types.CallToolResult(content=_text(f"refused: {exc.error.message}"))
        roots = await ctx.session.list_roots() if args.get("roots") else None
        listed = [str(r.uri) for r in roots.roots] if roots else []
        return types.CallToolResult(content=_text(f"model said: {answered.content.text} {listed}"))
    if answered is None:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[question], max_tokens=tokens, system_prompt="Be brief."
            )
        )
        asks: dict[str, Any] = {"sample": request}
        if args.get("roots"):  # 2026-07-28: the roots are asked the same way
            asks["roots"] = types.ListRootsRequest()
        return types.InputRequiredResult(input_requests=asks, request_state="s")
    content = answered.get("content") if isinstance(answered, dict) else answered.content
    text = content.get("text") if isinstance(content, dict) else content.text
    if not args.get("roots"):
        return types.CallToolResult(content=_text(f"model said: {text}"))
    given = (params.input_responses or {}).get("roots")
    listed = given.get("roots") if isinstance(given, dict) else getattr(given, "roots", None)
    if listed is None:
        return types.CallToolResult(content=_text("no roots given"), is_error=True)
    uris = [str(r.get("uri") if isinstance(r, dict) else r.uri) for r in listed]
    return types.CallToolResult(content=_text(f"model said: {text} {uris}"))


# -- resources and prompts (MCP_RESOURCES=1) -------------------------------------------------

NOTES = {"note://readme": "read me first", "note://todo": "buy milk"}
LOGO = "iVBORw0KGgo="  # the PNG signature, base64


async def list_resources(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    listed = [types.Resource(uri=u, name=u.split("//")[1], mime_type="text/plain") for u in NOTES]
    listed.append(types.Resource(uri="note://logo", name="logo", mime_type="image/png"))
    return types.ListResourcesResult(resources=listed)


async def list_templates(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template="note://item/{id}", name="item")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    _record("resources/read", {"uri": uri})
    if uri == "note://logo":
        blob = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=LOGO)
        return types.ReadResourceResult(contents=[blob])
    if uri.startswith("note://item/"):
        text = f"item {uri.rsplit('/', 1)[1]}"
    elif uri in NOTES:
        text = NOTES[uri]
    else:
        raise MCPError(-32002, f"no resource {uri}")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
    )


async def list_prompts(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    greet = types.Prompt(
        name="greet",
        description="Greet someone.",
        arguments=[types.PromptArgument(name="who", required=True)],
    )
    return types.ListPromptsResult(prompts=[greet])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    who = (params.arguments or {}).get("who")
    if params.name != "greet" or not who:
        raise MCPError(types.INVALID_PARAMS, "greet needs `who`")
    return types.GetPromptResult(
        messages=[
            types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=f"Hi {who}")
            ),
            types.PromptMessage(
                role="assistant", content=types.TextContent(type="text", text="Hello!")
            ),
        ]
    )


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    _record("resources/subscribe", {"uri": str(params.uri)})
    return types.EmptyResult()


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    names = [n for n in ("ada", "alan", "grace") if n.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=names))


BUS = InMemorySubscriptionBus()
_WITH_RESOURCES: dict[str, Any] = (
    {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource,
        "on_list_prompts": list_prompts,
        "on_get_prompt": get_prompt,
        "on_completion": complete,
        "on_subscribe_resource": subscribe,
    }
    if os.environ.get("MCP_RESOURCES") == "1"
    else {}
)
server = Server(
    "toolwire-test",
    instructions="Echo with `echo`; `add` adds two integers.",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(BUS),
    **_WITH_RESOURCES,
)


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    pidfile = os.environ.get("MCP_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    sys.stderr.write("test server starting\n")
    sys.stderr.flush()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _http(port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    token = os.environ.get("MCP_REQUIRE_TOKEN")
    if token:
        inner = app

        async def app(scope: Any, receive: Any, send: Any) -> None:  # type: ignore[no-redef]
            headers = dict(scope.get("headers") or [])
            if (
                scope["type"] == "http"
                and headers.get(b"authorization") != f"Bearer {token}".encode()
            ):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
            await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(_stdio)
    elif sys.argv[1] == "http":
        _http(int(sys.argv[2]))
    elif sys.argv[1] == "silent":  # never answers initialize
        time.sleep(3600)
