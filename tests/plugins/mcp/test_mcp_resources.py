"""Resources and prompts (#26): an MCP server's, through the client (the ``read_resource``
tool, the :func:`mcp_server` handle), and through the gateway (its own and its upstream
servers'), checked with the official SDK's ``Client`` and the real test server."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _mcp_support import calls_in
from mcp import Client, MCPError

import toolwire as tw
from toolwire_mcp import (
    MCPCallError,
    ServerSpec,
    build_server,
    mcp_server,
    mcp_toolset,
    prompt,
    resource,
)


@pytest.fixture
def notes(stdio_spec: Callable[..., ServerSpec]) -> ServerSpec:
    """The test server with resources, a template, a prompt and completions."""
    return stdio_spec("notes", MCP_RESOURCES="1")


def _run(toolset: tw.Toolset, name: str, arguments: dict[str, Any]) -> tw.ToolResult:
    executor = tw.Executor(tools=toolset, plugins=False)
    try:
        return executor.execute(tw.ToolCall("c1", name, json.dumps(arguments)))
    finally:
        executor.close()


# -- the client: a read tool for the model, a handle for the application --------------------


def test_a_server_with_resources_gets_a_read_tool_the_model_can_use(
    notes: ServerSpec, record: Path
) -> None:
    ts = mcp_toolset("notes", notes)
    read = ts.get("read_resource")
    assert read is not None
    assert read.metadata.effect is tw.ToolEffect.READ_ONLY
    assert "mcp:notes" == read.metadata.source  # a policy matches it as the server's
    assert "- note://readme (readme)" in read.description
    assert "- note://item/{id} (item)" in read.description
    assert "read me first" == _run(ts, "read_resource", {"uri": "note://readme"}).content
    assert "item 7" == _run(ts, "read_resource", {"uri": "note://item/7"}).content
    logo = _run(ts, "read_resource", {"uri": "note://logo"})
    assert "[image: note://logo, image/png, 8 bytes]" == logo.content  # never raw bytes
    assert logo.media[0].data == b"\x89PNG\r\n\x1a\n"  # the image itself, for the model
    missing = _run(ts, "read_resource", {"uri": "note://nope"})
    assert missing.is_error
    assert "no resource note://nope" in missing.content
    assert ["note://readme", "note://item/7", "note://logo", "note://nope"] == [
        c["arguments"]["uri"] for c in calls_in(record)
    ]


def test_a_server_without_resources_gets_no_read_tool(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    assert mcp_toolset("plain", stdio_spec("plain")).get("read_resource") is None


def test_a_policy_decides_each_read_like_any_call(notes: ServerSpec, record: Path) -> None:
    class NoSecrets:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            if call.name == "read_resource" and "todo" in str(call.input):
                return tw.Reject("the to-do list is private")
            return None

    host = tw.PluginHost(autoload=False)
    host.register(NoSecrets(), "corp", kind="policy")
    ts = mcp_toolset("notes", notes)
    executor = tw.Executor(tools=ts, plugins=host)
    try:
        denied = executor.execute(tw.ToolCall("c1", "read_resource", '{"uri": "note://todo"}'))
    finally:
        executor.close()
    assert denied.is_error
    assert "the to-do list is private" in denied.content
    assert [] == calls_in(record)


def test_the_handle_lists_reads_and_renders(notes: ServerSpec) -> None:
    ts = mcp_toolset("notes", notes)
    server = mcp_server(ts)
    assert mcp_server("notes")._conn is server._conn  # by name, the same connection
    assert {"resources", "prompts", "completions"} <= server.capabilities()
    assert ["note://readme", "note://todo", "note://logo"] == [
        str(r.uri) for r in server.resources()
    ]
    assert ["note://item/{id}"] == [t.uri_template for t in server.resource_templates()]
    assert "buy milk" == server.read_resource("note://todo").contents[0].text
    [greet] = server.prompts()
    assert ("greet", "who") == (greet.name, greet.arguments[0].name)
    session = server.prompt_session("greet", {"who": "Ada"})
    assert [("user", "Hi Ada"), ("assistant", "Hello!")] == [
        (m.role, m.text) for m in session.messages
    ]
    ref = types.PromptReference(type="ref/prompt", name="greet")
    assert ["ada", "alan"] == anyio.run(server.acomplete, ref, "who", "a")
    with pytest.raises(MCPCallError, match="refused prompts/get of `greet`: greet needs `who`"):
        server.get_prompt("greet")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda s: s.read_resource(""), "uri must be a non-empty string"),
        (lambda s: s.get_prompt("greet", {"who": 3}), "a mapping of strings to strings"),
        (lambda s: s.get_prompt(None), "name must be a non-empty string"),
    ],
)
def test_the_handle_refuses_malformed_input(
    notes: ServerSpec, call: Callable[[Any], Any], said: str
) -> None:
    with pytest.raises(tw.UsageError, match=said):
        call(mcp_server(notes))


def test_mcp_server_refuses_what_is_not_a_server() -> None:
    with pytest.raises(tw.UsageError, match="holds no MCP server's tool"):
        mcp_server(tw.Toolset("plain"))
    with pytest.raises(tw.UsageError, match="no MCP server named `ghost`"):
        mcp_server("ghost")
    with pytest.raises(tw.UsageError, match="got int"):
        mcp_server(3)  # type: ignore[arg-type]


# -- the gateway: the application's own resources and prompts --------------------------------


@resource("app://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting."""
    return "hello"


@resource("app://pixel")
def pixel() -> bytes:
    """One pixel."""
    return b"\x89PNG\r\n\x1a\n"


@resource("app://users/{user}/card")
async def card(user: str) -> str:
    """A user's card."""
    return f"card of {user}"


@resource("app://broken")
def broken() -> int:
    """Returns the wrong type."""
    return 3


@prompt(choices={"tone": ["formal", "friendly", "funny"]})
def review(code: str, tone: str = "formal") -> list[Any]:
    """Review some code."""
    return [f"Review this ({tone}):\n{code}", ("assistant", "Looking at it.")]


def _gateway(**options: Any) -> Any:
    return build_server(
        tw.Toolset("app"),
        host=tw.PluginHost(autoload=False),
        resources=[greeting, pixel, card, broken],
        prompts=[review],
        **options,
    )


def _with(server: Any, fn: Callable[[Client], Any]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await fn(client)

    return anyio.run(main)


def test_the_gateway_serves_the_applications_resources() -> None:
    async def go(c: Client) -> Any:
        listed = (await c.list_resources()).resources
        templates = (await c.list_resource_templates()).resource_templates
        text = await c.read_resource("app://greeting")
        blob = await c.read_resource("app://pixel")
        templated = await c.read_resource("app://users/ada/card")
        return listed, templates, text, blob, templated

    listed, templates, text, blob, templated = _with(_gateway(), go)
    assert ["app://greeting", "app://pixel", "app://broken"] == [str(r.uri) for r in listed]
    assert ("greeting", "A greeting.") == (listed[0].name, listed[0].description)
    assert ["app://users/{user}/card"] == [t.uri_template for t in templates]
    assert ("hello", "text/plain") == (text.contents[0].text, text.contents[0].mime_type)
    assert ("iVBORw0KGgo=", "application/octet-stream") == (
        blob.contents[0].blob,
        blob.contents[0].mime_type,
    )
    assert "card of ada" == templated.contents[0].text


@pytest.mark.parametrize(
    ("uri", "said"),
    [("app://nothing", "no resource 'app://nothing'"), ("app://broken", "expected str or bytes")],
)
def test_an_unknown_or_failing_resource_is_an_error_not_a_crash(uri: str, said: str) -> None:
    async def go(c: Client) -> Any:
        with pytest.raises(MCPError) as caught:
            await c.read_resource(uri)
        return caught.value.error.message

    assert said in _with(_gateway(), go)


def test_the_gateway_serves_the_applications_prompts_and_completes_their_arguments() -> None:
    async def go(c: Client) -> Any:
        [listed] = (await c.list_prompts()).prompts
        got = await c.get_prompt("review", {"code": "x = 1"})
        ref = types.PromptReference(type="ref/prompt", name="review")
        done = await c.complete(ref, {"name": "tone", "value": "f"})
        with pytest.raises(MCPError) as missing:
            await c.get_prompt("review", {})
        with pytest.raises(MCPError) as unknown:
            await c.get_prompt("nope", {})
        return listed, got, done, missing.value.error.message, unknown.value.error.message

    listed, got, done, missing, unknown = _with(_gateway(), go)
    assert [("code", True), ("tone", False)] == [(a.name, a.required) for a in listed.arguments]
    assert "Review some code." == listed.description
    assert [("user", "Review this (formal):\nx = 1"), ("assistant", "Looking at it.")] == [
        (m.role, m.content.text) for m in got.messages
    ]
    assert ["formal", "friendly", "funny"] == done.completion.values
    assert "needs the argument code" in missing
    assert "no prompt `nope`" in unknown


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"resources": ["app://x"]}, "resources must be toolwire_mcp.Resource, got str"),
        ({"prompts": [greeting]}, "prompts must be toolwire_mcp.Prompt, got Resource"),
        ({"resources": [greeting, greeting]}, "the resource 'app://greeting' is given twice"),
        ({"prompts": [review, review]}, "the prompt review is given twice"),
    ],
)
def test_malformed_resources_and_prompts_are_refused(options: dict[str, Any], said: str) -> None:
    with pytest.raises(tw.UsageError, match=said):
        build_server(tw.Toolset("app"), host=tw.PluginHost(autoload=False), **options)


def _star(*parts: str) -> str:
    return ""


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: resource("no-scheme")(greeting.read), "a URI with a scheme"),
        (lambda: resource("app://{a}{b}")(lambda a, b: ""), "app://"),
        (lambda: resource("app://u/{id}")(lambda: ""), "takes no parameter id"),
        (lambda: prompt(name="bad name!")(lambda: ""), "a prompt name is"),
        (lambda: prompt(_star), "are not arguments"),
    ],
)
def test_malformed_definitions_are_refused(make: Callable[[], Any], said: str) -> None:
    with pytest.raises(tw.ToolDefinitionError, match=said):
        make()


# -- the gateway: its upstream servers' resources and prompts, under policy -----------------


def test_the_gateway_passes_its_upstream_servers_resources_and_prompts_on(
    notes: ServerSpec, record: Path
) -> None:
    app = tw.Toolset("app").add(mcp_toolset("notes", notes), prefix="notes_")

    async def go(c: Client) -> Any:
        listed = (await c.list_resources()).resources
        read = await c.read_resource("note://readme")
        templated = await c.read_resource("note://item/9")
        logo = await c.read_resource("note://logo")
        prompts = (await c.list_prompts()).prompts
        got = await c.get_prompt("notes_greet", {"who": "Ada"})
        ref = types.PromptReference(type="ref/prompt", name="notes_greet")
        done = await c.complete(ref, {"name": "who", "value": "g"})
        return listed, read, templated, logo, prompts, got, done

    server = build_server(app, host=tw.PluginHost(autoload=False), resources=[greeting])
    listed, read, templated, logo, prompts, got, done = _with(server, go)
    # URIs kept (a link in a result still resolves); names take the server's prefix.
    assert [("app://greeting", "greeting"), ("note://readme", "notes_readme")] == [
        (str(r.uri), r.name) for r in listed[:2]
    ]
    assert "read me first" == read.contents[0].text
    assert "item 9" == templated.contents[0].text
    assert ("iVBORw0KGgo=", "image/png") == (logo.contents[0].blob, logo.contents[0].mime_type)
    assert ["notes_greet"] == [p.name for p in prompts]
    assert ["Hi Ada", "Hello!"] == [m.content.text for m in got.messages]
    assert ["grace"] == done.completion.values
    assert ["note://readme", "note://item/9", "note://logo"] == [
        c["arguments"]["uri"] for c in calls_in(record)
    ]


def test_a_policy_that_hides_or_rejects_reads_holds_at_the_gateway(
    notes: ServerSpec, record: Path
) -> None:
    class Guard:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Reject("private") if "todo" in str(call.input) else None

    host = tw.PluginHost(autoload=False)
    host.register(Guard(), "corp", kind="policy")
    app = tw.Toolset("app").add(mcp_toolset("notes", notes), prefix="notes_")

    async def go(c: Client) -> Any:
        with pytest.raises(MCPError) as caught:
            await c.read_resource("note://todo")
        return caught.value.error.message, await c.read_resource("note://readme")

    said, allowed = _with(build_server(app, host=host), go)
    assert "private" in said
    assert "read me first" == allowed.contents[0].text
    assert ["note://readme"] == [c["arguments"]["uri"] for c in calls_in(record)]

    # The read tool switched off: the server's resources are neither listed nor readable.
    hidden = tw.Toolset("app").add(
        mcp_toolset("notes", notes), prefix="notes_", exclude=["read_resource"]
    )

    async def gone(c: Client) -> Any:
        with pytest.raises(MCPError) as caught:
            await c.read_resource("note://readme")
        return (await c.list_resources()).resources, caught.value.error.message

    listed, refused = _with(build_server(hidden, host=tw.PluginHost(autoload=False)), gone)
    assert [] == listed
    assert "no resource 'note://readme'" in refused


def test_the_cli_serves_resources_and_prompts_and_refuses_a_wrong_attribute(
    tmp_path: Path,
) -> None:
    import subprocess

    (tmp_path / "served.py").write_text(
        "from toolwire_mcp import prompt, resource\n"
        "@resource('app://hi')\n"
        "def hi() -> str:\n"
        "    return 'hi'\n"
        "@prompt\n"
        "def ask(topic: str) -> str:\n"
        "    return f'Tell me about {topic}'\n"
        "resources = [hi]\n"
        "prompts = [ask]\n"
        "not_a_list = hi\n"
    )
    env = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    wrong = subprocess.run(
        [sys.executable, "-m", "toolwire", "mcp", "serve", "--resources", "served:not_a_list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert 2 == wrong.returncode
    assert "--resources names a Resource; expected a list" in wrong.stderr

    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "toolwire",
            "mcp",
            "serve",
            "--resources",
            "served:resources",
            "--prompts",
            "served:prompts",
        ],
        env=env,
        cwd=str(tmp_path),
    )

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=60) as c:
            read = await c.read_resource("app://hi")
            got = await c.get_prompt("ask", {"topic": "MCP"})
            return read.contents[0].text, got.messages[0].content.text

    assert ("hi", "Tell me about MCP") == anyio.run(main)


def test_a_server_with_the_capability_and_no_resource_gets_no_read_tool() -> None:
    # The SDK's MCPServer declares resources always (mcp-server-time, mcp-server-git).
    from toolwire_mcp.client._toolset import _known, _with_resources

    conn = object()
    assert [] == _with_resources(conn, [], [], [])  # type: ignore[arg-type]
    # A resource list that failed: the tool stays (reads may work), saying the list is
    # unknown; a template list that failed is no templates.
    resources, templates = _known(None, [])
    assert [] == resources
    assert "could not be read" in templates[0].uri_template
    assert ([1], []) == _known([1], None)


def _update_listener() -> tuple[list[str], Any, Callable[[Any], Any]]:
    """The URIs of the resources/updated notifications a client receives, the event set at
    the first, and the client's message handler that records them."""
    updates: list[str] = []
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            got.set()

    return updates, got, on_message


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_subscription_goes_upstream_and_the_update_comes_back(notes: ServerSpec) -> None:
    # The upstream server speaks 2026-07-28: the subscription is its listen stream's.
    app = tw.Toolset("app").add(mcp_toolset("notes", notes), prefix="notes_")
    updates, got, on_message = _update_listener()

    async def main() -> None:
        server = build_server(app, host=tw.PluginHost(autoload=False))
        async with Client(server, mode="legacy", message_handler=on_message) as c:
            await c.subscribe_resource("note://readme")
            await c.call_tool("notes_touch", {"uri": "note://todo"})  # not subscribed to
            await c.call_tool("notes_touch", {"uri": "note://readme"})
            with anyio.fail_after(10):
                await got.wait()

    anyio.run(main)
    assert ["note://readme"] == updates


def test_a_read_a_policy_answers_itself_is_served_with_its_answer(
    notes: ServerSpec, record: Path
) -> None:
    class Canned:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Complete("the policy's own copy") if "readme" in str(call.input) else None

    host = tw.PluginHost(autoload=False)
    host.register(Canned(), "corp", kind="policy")
    app = tw.Toolset("app").add(mcp_toolset("notes", notes), prefix="notes_")

    async def go(c: Client) -> Any:
        return await c.read_resource("note://readme")

    read = _with(build_server(app, host=host), go)
    assert ("note://readme", "the policy's own copy") == (
        str(read.contents[0].uri),
        read.contents[0].text,
    )
    assert [] == calls_in(record)  # never reached the server


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_application_tells_subscribers_its_own_resource_changed(mode: str) -> None:
    # #48: a subscription to the application's own resource was accepted, and nothing
    # could ever say the resource changed.
    import threading

    from toolwire_mcp import resource_updated

    updates, got, on_message = _update_listener()

    async def change() -> None:
        assert 0 == resource_updated("app://nobody/serves/this")
        # From another thread, as an application's own worker would.
        done: list[int] = []
        worker = threading.Thread(target=lambda: done.append(greeting.updated()))
        worker.start()
        worker.join()
        # Served (by this gateway, and any other still alive); nobody subscribed: not sent.
        assert done[0] >= 1
        assert card.updated("app://users/ada/card") >= 1

    async def main() -> None:
        async with Client(_gateway(), mode=mode, message_handler=on_message) as c:
            if mode == "legacy":
                await c.subscribe_resource("app://users/ada/card")
                await change()
                with anyio.fail_after(10):
                    await got.wait()
                return
            # 2026-07-28: the subscription is a listen stream's.
            uri = "app://users/ada/card"
            async with c.listen(resource_subscriptions=[uri]) as sub:
                await change()
                with anyio.fail_after(10):
                    async for event in sub:
                        updates.append(str(getattr(event, "uri", event)))
                        break

    anyio.run(main)
    # Only the resource subscribed to (the SDK may hand a listen event to both).
    assert {"app://users/ada/card"} == set(updates)
    with pytest.raises(tw.ToolDefinitionError, match="takes the URI"):
        card.updated()
    with pytest.raises(tw.ToolDefinitionError, match="is not resource"):
        greeting.updated("app://other")
