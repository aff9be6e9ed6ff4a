"""A tool pack and a policy, registered inline on a fresh plugin host (no entry points).

Installed as distributions, the same objects would be found through the
``toolwire.toolsets`` and ``toolwire.policies`` entry points; registering them
directly is how a plugin's own tests exercise it.
"""

from toolwire import (
    Agent,
    HookContext,
    PluginHost,
    Reject,
    Session,
    ToolEffect,
    ToolResultsMessage,
    Toolset,
    hookimpl,
    tool_fn,
)
from toolwire.adapters import rejection_reason
from toolwire.providers.test import TestProvider


@tool_fn
def get_forecast(city: str, days: int = 3) -> str:
    """Get the weather forecast.

    Args:
        city: The city to look up.
        days: How many days ahead.
    """
    return f"{days} sunny days in {city}"


@tool_fn(effect=ToolEffect.DESTRUCTIVE)
def purge_cache() -> str:
    """Purge the forecast cache."""
    return "purged"


class WeatherPack:
    """A tool pack: contributes a toolset (its module would be the entry point)."""

    @hookimpl
    def toolwire_register_toolsets(self, register):
        register(Toolset("weather", [get_forecast, purge_cache]), prefix="wx_")


class OrgPolicy:
    """A policy: sees every call first, and has the last word on results."""

    @hookimpl
    def toolwire_tool_decision(self, call, context):
        if call.metadata.effect is ToolEffect.DESTRUCTIVE and context.extra.get("env") == "prod":
            return Reject(f"`{call.name}` is destructive and this is production")
        return None

    @hookimpl
    def toolwire_tool_description(self, tool, description):
        return f"{description} [org policy applies]"


def main() -> None:
    host = PluginHost(autoload=False, strict=True)
    host.register(WeatherPack(), "weather")
    host.register(OrgPolicy(), "org", kind="policy")
    for record in host.plugins:
        print(f"plugin {record.kind:<8} {record.name:<8} {record.status}")

    toolset = host.assemble(Toolset("app"))
    for tool in toolset.tools():
        print(f"tool {tool.name:<16} from {toolset.source(tool.name)}")

    context = HookContext(app="forecasts", extra={"env": "prod"})
    provider = TestProvider(
        script=[
            {
                "tool_calls": [
                    {"name": "wx_get_forecast", "arguments": {"city": "Oslo", "days": 2}},
                    {"name": "wx_purge_cache", "arguments": {}},
                ]
            },
            {"text": "Two sunny days in Oslo. I could not purge the cache."},
        ]
    )
    agent = Agent(provider, toolset, plugins=host, context=context)
    session = Session()
    result = agent.run(session, "Forecast for Oslo, then purge the cache.")

    _, turn = provider.requests[0]
    print(f"offered: {[(t.name, t.description) for t in turn.tools]}")
    for message in session.messages:
        if isinstance(message, ToolResultsMessage):
            for r in message.results:
                print(f"result {r.tool_name}: {rejection_reason(r) or r.content}")
    print(f"assistant: {result.text}")


if __name__ == "__main__":
    main()
