"""A tool that draws a PNG, and what each provider's API is sent for its result.

``draw_bars`` makes a real PNG from raw bytes (zlib and struct, no image library) and
returns it with a caption. The offline ``test`` provider runs the loop first; then each
real adapter talks to a tiny local server (127.0.0.1, a random port, started here) that
asks for the tool once and then answers. What the script prints is how each API carried
the image: natively inside the tool result (Anthropic, Responses, Gemini 3), in a user
message after the tool message (Chat Completions), or as a line of text when switched off.
Nothing leaves the machine and no key is needed.
"""

import json
import re
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from toolwire import Agent, Image, Session, ToolResultsMessage, Toolset, tool_fn
from toolwire.providers.test import TestProvider
from toolwire_anthropic import AnthropicProvider
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAICompatibleProvider, OpenAIResponsesProvider


def png(width: int, height: int, pixel: Any) -> bytes:
    """An RGB PNG whose pixel (x, y) is ``pixel(x, y)``, a tuple of three bytes."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@tool_fn
def draw_bars(values: list[int]) -> list[str | Image]:
    """Draw a bar chart of the values (each 0-10).

    Args:
        values: The bar heights, left to right.
    """
    width, height = 8 * len(values), 40

    def pixel(x: int, y: int) -> tuple[int, int, int]:
        bar = values[x // 8]
        return (40, 90, 200) if height - y <= bar * 4 and x % 8 < 6 else (255, 255, 255)

    return [f"a bar chart of {values}", Image(png(width, height, pixel))]


CALL = {"values": [3, 7, 5]}


class FakeAPIs(BaseHTTPRequestHandler):
    """One tool call, then an answer, in the shape of each API (chosen by the path)."""

    bodies: ClassVar[dict[str, dict[str, Any]]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        text = json.dumps(body)
        answered = "tool_result" in text or "function_call_output" in text or '"tool"' in text
        answered = answered or "functionResponse" in text
        api = self.path.rsplit("/", 1)[-1].split(":")[-1]
        self.bodies[api] = body
        reply = REPLIES[api](answered)
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # keep stderr quiet
        pass


ANSWER = "The chart shows three bars; the middle one is tallest."
ARGS = json.dumps(CALL)


def _chat(answered: bool) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "draw_bars", "arguments": ARGS},
    }
    message: dict[str, Any] = (
        {"role": "assistant", "content": ANSWER}
        if answered
        else {"role": "assistant", "content": None, "tool_calls": [call]}
    )
    finish = "stop" if answered else "tool_calls"
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def _responses(answered: bool) -> dict[str, Any]:
    item: dict[str, Any] = (
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        }
        if answered
        else {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "draw_bars",
            "arguments": ARGS,
            "status": "completed",
        }
    )
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [item],
    }


def _messages(answered: bool) -> dict[str, Any]:
    block: dict[str, Any] = (
        {"type": "text", "text": ANSWER}
        if answered
        else {"type": "tool_use", "id": "toolu_1", "name": "draw_bars", "input": CALL}
    )
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block],
        "stop_reason": "end_turn" if answered else "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _gemini(answered: bool) -> dict[str, Any]:
    part = {"text": ANSWER} if answered else {"functionCall": {"name": "draw_bars", "args": CALL}}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}


REPLIES = {
    "completions": _chat,
    "responses": _responses,
    "messages": _messages,
    "generateContent": _gemini,
}


def brief(value: Any) -> str:
    """JSON with every base64 payload cut to its first characters."""
    text = json.dumps(value)
    return re.sub(r"[A-Za-z0-9+/]{40,}={0,2}", lambda m: m.group()[:12] + "...", text)


def main() -> None:
    tools = Toolset("charts", [draw_bars])
    offline = Agent(TestProvider(), tools).run(Session(), f"draw_bars {ARGS}")
    print(f"offline: {offline.text}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAPIs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    adapters = [
        ("Anthropic Messages", "messages", AnthropicProvider("m", api_key="k", base_url=base)),
        ("OpenAI Responses", "responses", OpenAIResponsesProvider("m", api_key="k", base_url=base)),
        ("OpenAI Chat", "completions", OpenAIChatProvider("m", api_key="k", base_url=base)),
        ("Gemini 3", "generateContent", GeminiProvider("gemini-3-pro", api_key="k", base_url=base)),
        (
            "compatible, text only",
            "completions",
            OpenAICompatibleProvider("m", base_url=base, result_media=False),
        ),
    ]
    try:
        for label, api, provider in adapters:
            with provider:
                result = Agent(provider, tools).run(Session(), "Chart 3, 7 and 5.")
            body = FakeAPIs.bodies[api]
            sent = {
                "messages": lambda b: b["messages"][-1]["content"],
                "responses": lambda b: b["input"][-1]["output"],
                "completions": lambda b: b["messages"][2:],
                "generateContent": lambda b: b["contents"][-1]["parts"],
            }[api](body)
            print(f"\n{label}: {result.text}")
            print(f"  the tool result it was sent: {brief(sent)}")
            rounds = [m for m in result.session if isinstance(m, ToolResultsMessage)]
            media = [p for r in rounds[-1].results for p in r.media]
            print(f"  not sent as itself: {provider.result_media.report(media) or 'nothing'}")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
