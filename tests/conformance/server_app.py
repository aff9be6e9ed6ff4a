"""The tools the MCP conformance suite's server scenarios call, as a toolwire toolset.

``toolwire mcp serve --transport http --app server_app:tools`` serves them, through the
same policies, executor and gateway as any application's tools (image, audio and resource
results included).
"""

from __future__ import annotations

import asyncio
import base64
import json

import mcp_types as types

import toolwire as tw
from toolwire_mcp import MCPCallContext, prompt, resource

# A 1x1 PNG, the image the resource and prompt scenarios want.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@tw.tool_fn
def test_simple_text() -> str:
    """Returns simple text content."""
    return "This is a simple text response for testing."


@tw.tool_fn
def test_error_handling() -> str:
    """Always fails, so the client sees an error result."""
    raise RuntimeError("This tool intentionally returns an error for testing")


# A minimal WAV file (a RIFF header and no samples), the audio the scenario wants.
WAV = (
    b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00"
    b"\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
)


@tw.tool_fn
def test_image_content() -> tw.Image:
    """Returns an image."""
    return tw.Image(PNG)


@tw.tool_fn
def test_audio_content() -> tw.Audio:
    """Returns audio."""
    return tw.Audio(WAV, media_type="audio/wav")


@tw.tool_fn
def test_embedded_resource() -> tw.File:
    """Returns an embedded resource."""
    return tw.File(
        b"This is an embedded resource content.",
        media_type="text/plain",
        name="test://embedded-resource",
    )


@tw.tool_fn
def test_multiple_content_types() -> list[str | tw.Image | tw.File]:
    """Returns text, an image and a resource."""
    return [
        "Multiple content types test:",
        tw.Image(PNG),
        tw.File(
            b'{"test":"data","value":123}',
            media_type="application/json",
            name="test://mixed-content-resource",
        ),
    ]


@tw.tool_fn(injected=["mcp"])
async def test_tool_with_logging(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Sends three log messages while it runs."""
    for i, text in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if i:
            await asyncio.sleep(0.05)
        if mcp is not None:
            await mcp.log(text)
    return "Tool with logging executed successfully"


@tw.tool_fn(injected=["mcp"])
async def test_tool_with_progress(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Reports progress 0, 50 and 100 of 100 while it runs."""
    for i, done in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        if mcp is not None:
            await mcp.progress(done, 100)
    return "Tool with progress executed successfully"


@tw.tool_fn(injected=["mcp"])
async def test_elicitation(message: str, mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Asks the client's user for a user name and an e-mail address."""
    assert mcp is not None, "served over MCP only"
    answer = await mcp.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={answer.action}, content={answer.content}"


@tw.tool_fn(injected=["mcp"])
async def test_elicitation_sep1034_defaults(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Asks for a form whose every field has a default (SEP-1034)."""
    assert mcp is not None, "served over MCP only"
    answer = await mcp.elicit(
        "Please review your profile",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        },
    )
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


def _choices(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


@tw.tool_fn(injected=["mcp"])
async def test_elicitation_sep1330_enums(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Asks for a form with every enum shape (SEP-1330)."""
    assert mcp is not None, "served over MCP only"
    options = ["option1", "option2", "option3"]
    answer = await mcp.elicit(
        "Please choose",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {
                    "type": "string",
                    "oneOf": _choices(
                        ("value1", "First Option"),
                        ("value2", "Second Option"),
                        ("value3", "Third Option"),
                    ),
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": _choices(
                            ("value1", "First Choice"),
                            ("value2", "Second Choice"),
                            ("value3", "Third Choice"),
                        )
                    },
                },
            },
        },
    )
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@tw.tool_fn(injected=["mcp"])
async def test_sampling(prompt: str, mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Asks the client's model to answer the prompt."""
    assert mcp is not None, "served over MCP only"
    return f"LLM response: {await mcp.sample(prompt, max_tokens=100)}"


@tw.tool_fn(injected=["mcp"])
async def test_reconnection(mcp: MCPCallContext | None = None) -> str:  # noqa: PT028
    """Closes its stream mid-call; the client resumes it and gets the result (SEP-1699)."""
    if mcp is not None:
        await mcp.close_stream()
    await asyncio.sleep(0.3)
    return "Reconnection test completed"


tools = tw.Toolset(
    "conformance",
    [
        test_simple_text,
        test_error_handling,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_tool_with_logging,
        test_tool_with_progress,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
        test_sampling,
        test_reconnection,
    ],
)


@resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients subscribe to."""
    return "Watched resource content."


@resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for an ID, from a resource template."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


resources = [static_text, static_binary, watched_resource, template_data]


@prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[object]:
    """A prompt that embeds a resource."""
    embedded = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        ),
    )
    return [("user", embedded), "Please process the embedded resource above."]


@prompt
def test_prompt_with_image() -> list[object]:
    """A prompt with an image."""
    image = types.ImageContent(
        type="image", data=base64.b64encode(PNG).decode("ascii"), mime_type="image/png"
    )
    return [("user", image), "Please analyze the image above."]


prompts = [
    test_simple_prompt,
    test_prompt_with_arguments,
    test_prompt_with_embedded_resource,
    test_prompt_with_image,
]
