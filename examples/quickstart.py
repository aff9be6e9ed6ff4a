"""The README's quick start: one tool, the offline provider, a hand-written tool loop."""

from toolwire import NeedsTools, Session, Toolset, resolve_turn, run_turn, tool_fn
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
    tools = Toolset("app", [get_weather])
    session = Session("You are helpful.").add_user("What's the weather in 'Paris'?")
    provider = TestProvider()

    while isinstance(outcome := run_turn(provider, session, resolve_turn(tools)), NeedsTools):
        plan = outcome.round.apply_hooks()  # installed policies and your hooks decide
        plan.commit([call.complete(call.run()) for call in plan.pending])
    print(outcome.text)
    return outcome.text


if __name__ == "__main__":
    main()
