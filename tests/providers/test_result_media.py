"""Tool-result media on every adapter (#27): native where the API takes it, a documented
fallback where not; every body checked against the official SDK's request types.

A workspace test: it needs the three provider distributions installed.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import pytest
from fakes import validate

import toolwire as tw
from toolwire import media
from toolwire.adapters import ResolvedTurn
from toolwire_anthropic import AnthropicProvider
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAICompatibleProvider, OpenAIResponsesProvider

BASE = "http://127.0.0.1:9"  # never contacted: only request bodies are built


def _png() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


PNG = _png()
PDF = b"%PDF-1.4\n%%EOF\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()


@tw.tool_fn
def capture(page: str) -> str:
    """Capture a page."""
    return page


def _session(*outputs: Any) -> tuple[tw.Session, ResolvedTurn]:
    """A session whose last round answers one ``capture`` call per output."""
    toolset = tw.Toolset("app", [capture])
    turn = tw.resolve_turn(toolset)
    session = tw.Session().add_user("look")
    calls = tuple(tw.ToolCall(f"c{i}", "capture", '{"page":"p"}') for i in range(len(outputs)))
    reply = tw.adapters.AssistantReply("", calls, "tool_calls")
    rnd = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(rnd, tw.NeedsTools)
    rnd.round.commit([c.complete(o) for c, o in zip(rnd.round.calls, outputs, strict=True)])
    return session, turn


MIXED = ["the page", tw.Image(PNG), tw.File(PDF, name="page.pdf"), tw.Audio(WAV)]


def test_anthropic_sends_image_and_document_blocks_inside_the_tool_result() -> None:
    session, turn = _session(MIXED)
    with AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_anthropic_request(body)
    result = body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"] == [
        {"type": "text", "text": "the page"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
            "title": "page.pdf",
        },
        {
            "type": "text",
            "text": f"[audio: audio/wav, {len(WAV)} bytes; not sent: Anthropic Messages takes no "
            "audio in a tool result]",
        },
    ]


def test_anthropic_sends_urls_and_plain_text_documents() -> None:
    session, turn = _session(
        [tw.Image("https://example.com/a.png"), tw.File(b"notes", media_type="text/plain")]
    )
    with AnthropicProvider("m", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_anthropic_request(body)
    blocks = body["messages"][-1]["content"][0]["content"]
    assert blocks[0] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/a.png"},
    }
    assert blocks[1]["source"] == {"type": "text", "media_type": "text/plain", "data": "notes"}


def test_responses_sends_input_image_and_input_file_items() -> None:
    session, turn = _session(MIXED)
    with OpenAIResponsesProvider("gpt-5", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_openai_responses_request(body)
    output = next(i for i in body["input"] if i.get("type") == "function_call_output")["output"]
    assert output[0] == {"type": "input_text", "text": "the page"}
    assert output[1] == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{B64_PNG}",
        "detail": "auto",
    }
    assert output[2] == {
        "type": "input_file",
        "detail": "auto",
        "file_data": f"data:application/pdf;base64,{B64_PDF}",
        "filename": "page.pdf",
    }
    assert output[3]["type"] == "input_text"
    assert "not sent: OpenAI Responses takes no audio" in output[3]["text"]


def test_chat_sends_the_text_in_the_tool_message_and_the_media_after_the_round() -> None:
    session, turn = _session(MIXED, "plain")
    with OpenAIChatProvider("gpt-4.1", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_openai_chat_request(body)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "user"]
    tool = body["messages"][2]["content"]
    assert tool.startswith("the page\n\n[image: image/png")
    assert "sent in the next user message" in tool
    assert "not sent: OpenAI Chat Completions takes no audio" in tool
    assert body["messages"][3]["content"] == "plain"
    assert body["messages"][4]["content"] == [
        {"type": "text", "text": "Media from the result of tool call c0 (capture):"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
        {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{B64_PDF}", "filename": "page.pdf"},
        },
    ]


def test_chat_audio_models_get_the_audio() -> None:
    session, turn = _session([tw.Audio(WAV)])
    with OpenAIChatProvider("gpt-4o-audio-preview", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn, stream=False)
    validate.validate_openai_chat_request(body)
    assert body["messages"][-1]["content"][1] == {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "wav"},
    }


def test_a_compatible_server_can_be_switched_to_text_only() -> None:
    session, turn = _session(MIXED)
    with OpenAICompatibleProvider("llama", base_url=BASE, result_media=False) as p:
        body = p.build_body(session, turn, stream=False)
        assert p.result_media is media.TEXT_ONLY
    validate.validate_openai_chat_request(body)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    assert "not sent: a text-only API takes no image" in body["messages"][-1]["content"]
    with OpenAICompatibleProvider("llava", base_url=BASE) as p:  # on by default
        body = p.build_body(session, turn, stream=False)
    assert body["messages"][-1]["role"] == "user"


def test_gemini_3_nests_images_and_pdfs_in_the_function_response() -> None:
    session, turn = _session(MIXED)
    with GeminiProvider("gemini-3-pro-preview", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn)
    validate.validate_gemini_request(body)
    parts = body["contents"][-1]["parts"]
    response = parts[0]["functionResponse"]
    assert response["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": B64_PNG, "displayName": "part1"}},
        {"inlineData": {"mimeType": "application/pdf", "data": B64_PDF, "displayName": "page.pdf"}},
    ]
    assert "attached as part1" in response["response"]["output"]
    assert parts[1] == {"text": "Media from the result of tool call c0 (capture):"}
    assert parts[2]["inlineData"]["mimeType"] == "audio/wav"


def test_gemini_2_sends_the_media_after_the_function_responses() -> None:
    session, turn = _session(MIXED, "plain")
    with GeminiProvider("gemini-2.5-flash", api_key="k", base_url=BASE) as p:
        body = p.build_body(session, turn)
    validate.validate_gemini_request(body)
    parts = body["contents"][-1]["parts"]
    assert [next(iter(x)) for x in parts] == [
        "functionResponse",
        "functionResponse",
        "text",
        "inlineData",
        "text",
        "inlineData",
        "text",
        "inlineData",
    ]
    assert "parts" not in parts[0]["functionResponse"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: AnthropicProvider("m", api_key="k", base_url=BASE),
        lambda: OpenAIResponsesProvider("m", api_key="k", base_url=BASE),
        lambda: OpenAIChatProvider("m", api_key="k", base_url=BASE),
        lambda: GeminiProvider("gemini-2.5-flash", api_key="k", base_url=BASE),
    ],
)
def test_a_rejected_or_redacted_result_sends_no_withheld_media(make: Any) -> None:
    toolset = tw.Toolset("app", [capture])
    turn = tw.resolve_turn(toolset)
    session = tw.Session().add_user("look")
    reply = tw.adapters.AssistantReply(
        "", (tw.ToolCall("c0", "capture", '{"page":"p"}'),), "tool_calls"
    )
    rnd = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(rnd, tw.NeedsTools)
    result = rnd.round.calls[0].complete(["secret sk-1", tw.Image(PNG)])
    rnd.round.commit([result.replace(content="withheld by policy")])
    with make() as p:
        kwargs = {} if isinstance(p, GeminiProvider) else {"stream": False}
        body = json.dumps(p.build_body(session, turn, **kwargs))
    assert B64_PNG not in body
    assert "sk-1" not in body


def test_unsent_media_is_reported() -> None:
    parts = (tw.Image(PNG), tw.Audio(WAV), tw.Image("https://example.com/a.png"))
    with OpenAIChatProvider("m", api_key="k", base_url=BASE) as p:
        assert p.result_media.report(parts) == [
            f"[audio: audio/wav, {len(WAV)} bytes]: OpenAI Chat Completions takes no audio "
            "in a tool result",
        ]
    with GeminiProvider("gemini-2.5-flash", api_key="k", base_url=BASE) as p:
        assert p.result_media.report(parts) == [
            "[image: image/png <https://example.com/a.png>]: Gemini 2 does not fetch URLs, and "
            "toolwire fetches none"
        ]


def test_the_docs_table_is_generated_from_the_adapters_data() -> None:
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "tools" / "gen_tables.py"
    done = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
