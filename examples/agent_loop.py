"""The agent loop with the offline provider: hooks, an executor with retries, and events.

A scripted TestProvider stands in for a model: it asks for three tools in one
round (one of them blocked by a hook), then answers. Nothing touches the network.
"""

from toolwire import (
    Agent,
    AgentFinished,
    Executor,
    HookSet,
    Reject,
    RetryHint,
    RoundCommitted,
    Session,
    ToolCallDecided,
    Toolset,
    tool_fn,
)
from toolwire.adapters import rejection_reason
from toolwire.providers.test import TestProvider

_failures = {"Lima": 1}
attempts: dict[str, int] = {}


@tool_fn(retry_hint=RetryHint(max_attempts=3, initial_backoff=0.01))
def get_weather(city: str) -> str:
    """Get the current weather.

    Args:
        city: The city to look up.
    """
    attempts[city] = attempts.get(city, 0) + 1
    if _failures.get(city, 0) > 0:  # a flaky upstream: the first call for Lima fails
        _failures[city] -= 1
        raise ConnectionError("upstream reset the connection")
    return f"18C and clear in {city}"


hooks = HookSet()


@hooks.on(get_weather)
def no_poles(call):
    if call.input.city.lower() in {"north pole", "south pole"}:
        return Reject("the poles are out of scope")
    return None


def main() -> None:
    provider = TestProvider(
        script=[
            {
                "tool_calls": [
                    {"name": "get_weather", "arguments": {"city": "Oslo"}},
                    {"name": "get_weather", "arguments": {"city": "Lima"}},
                    {"name": "get_weather", "arguments": {"city": "North Pole"}},
                ]
            },
            {"text": "Oslo and Lima are both 18C and clear; I can't check the North Pole."},
        ]
    )
    agent = Agent(
        provider,
        Toolset("weather", [get_weather]),
        hooks=[hooks],
        executor=Executor(max_concurrency=4),
    )

    def show(event: object) -> None:
        if isinstance(event, ToolCallDecided):
            why = f" ({event.reason})" if event.reason else ""
            print(f"round {event.round}: {event.call.arguments} -> {event.outcome}{why}")
        elif isinstance(event, RoundCommitted):
            for result in event.results:
                text = rejection_reason(result) or result.content
                print(f"round {event.round}: {result.call_id} committed: {text!r}")
        elif isinstance(event, AgentFinished):
            print(f"finished after {event.result.rounds} round(s)")

    session = Session("You are a terse weather assistant.")
    result = agent.run(session, "Weather in Oslo, Lima and at the North Pole?", on_event=show)
    print(f"attempts per city: {attempts}")
    print(f"assistant: {result.text}")
    print(f"session: {len(session.messages)} messages, {len(session.to_json())} bytes as JSON")


if __name__ == "__main__":
    main()
