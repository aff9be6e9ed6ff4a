"""The README's quick start: one tool, the offline provider, the Agent with what is installed."""

from toolwire import Agent, Session, Toolset, tool_fn
from toolwire.providers.test import TestProvider


@tool_fn
def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather.

    Args:
        city: The city to look up.
        unit: "celsius" or "fahrenheit".
    """
    return f"18 degrees {unit} in {city}"


def main() -> str:
    provider = TestProvider()  # or a real adapter: toolwire-openai, -anthropic, -gemini
    agent = Agent(provider, Toolset("app", [get_weather]))
    result = agent.run(Session("You are helpful."), "What's the weather in 'Paris'?")
    print(result.text)
    return result.text


if __name__ == "__main__":
    main()
