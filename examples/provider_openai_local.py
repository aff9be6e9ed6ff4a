"""A real HTTP round trip with the OpenAI-compatible adapter, against a tiny local server.

The server (127.0.0.1, a random port, started inside this script) speaks just
enough Chat Completions: it asks for ``get_weather`` until it sees a tool
result, then answers with it. Nothing leaves the machine and no key is needed.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from toolwire import Agent, Session, Toolset, tool_fn
from toolwire_openai import OpenAICompatibleProvider


@tool_fn
def get_weather(city: str) -> str:
    """Get the current weather.

    Args:
        city: The city to look up.
    """
    return f"18C and clear in {city}"


class FakeChatCompletions(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.bodies.append(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": f"It is {last['content']}."}
            finish = "stop"
        else:
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        reply = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # keep stderr quiet
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with OpenAICompatibleProvider("local-model", base_url=base_url) as provider:
            agent = Agent(provider, Toolset("app", [get_weather]))
            result = agent.run(Session(), "What's the weather in Oslo?")
    finally:
        server.shutdown()
        server.server_close()

    first, second = FakeChatCompletions.bodies
    print(f"server: {base_url}")
    print(f"request 1 tools: {[t['function']['name'] for t in first['tools']]}")
    print(f"request 2 last message: {second['messages'][-1]}")
    print(
        f"assistant: {result.text} (usage: {result.usage.input_tokens} in, "
        f"{result.usage.output_tokens} out)"
    )


if __name__ == "__main__":
    main()
