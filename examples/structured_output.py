"""Structured output: the final answer validated into a pydantic model, with model settings.

A tiny local Chat Completions server (127.0.0.1, started here) asks for a tool,
then answers with JSON. Its first answer leaves out a field, so the agent sends
the validation errors back and the model answers again; the second answer is
valid and comes back as a ``Forecast``. The request carries the schema as
``response_format`` (strict: it compiles losslessly) and the settings as
Chat Completions fields. Nothing leaves the machine and no key is needed.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Literal

from pydantic import BaseModel

from toolwire import Agent, ModelSettings, Session, Toolset, tool_fn
from toolwire_openai import OpenAIChatProvider


class Forecast(BaseModel):
    """Tomorrow's weather for one city."""

    city: str
    sky: Literal["clear", "cloudy", "rain"]
    high_c: float


@tool_fn
def get_weather(city: str) -> str:
    """Get tomorrow's weather.

    Args:
        city: The city to look up.
    """
    return f"{city}: clear, high of 21C"


class LocalServer(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []
    answers: ClassVar[list[str]] = [
        '{"city": "Oslo", "sky": "clear"}',  # high_c is missing: sent back with the errors
        '{"city": "Oslo", "sky": "clear", "high_c": 21}',
    ]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.bodies.append(body)
        if body["messages"][-1]["role"] == "user" and len(self.bodies) == 1:
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": self.answers.pop(0)}
        reply = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
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
    server = ThreadingHTTPServer(("127.0.0.1", 0), LocalServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with OpenAIChatProvider("gpt-4.1", base_url=base_url, api_key="local") as provider:
            agent = Agent(
                provider,
                Toolset("app", [get_weather]),
                output_type=Forecast,
                settings=ModelSettings(temperature=0.2, max_output_tokens=300),
                plugins=False,  # this example shows the loop alone
            )
            result = agent.run(Session(), "What is tomorrow like in Oslo?")
    finally:
        server.shutdown()
        server.server_close()

    forecast = result.output
    assert isinstance(forecast, Forecast)
    fmt = LocalServer.bodies[0]["response_format"]["json_schema"]
    print(f"schema sent as {fmt['name']!r}, strict={fmt['strict']}")
    print(f"settings sent: temperature={LocalServer.bodies[0]['temperature']}")
    print(f"requests: {len(LocalServer.bodies)} (the second answer was invalid and sent back)")
    print(f"forecast: {forecast!r}")


if __name__ == "__main__":
    main()
