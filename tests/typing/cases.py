# Checked by mypy (tests/typing/test_typing.py), never imported by pytest.
# A line that mypy must reject ends with "# rejected: <error code>"; every other line must pass.
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from toolwire import HookSet, Reject, RunNormally, ToolMetadata, TypedCall, tool_fn, tool_input


@tool_input(name="weather")
class WeatherArgs(BaseModel):
    city: str


@tool_input
class SearchArgs(BaseModel):
    query: str


# tool_input returns the decorated class itself, with its own type.
args: WeatherArgs = WeatherArgs(city="Paris")
WeatherArgs.model_validate({"city": "Oslo"})
not_args: SearchArgs = WeatherArgs(city="Paris")  # rejected: assignment


def weather_hook(call: TypedCall[WeatherArgs]) -> Reject | None:
    return Reject("no") if call.input.city == "Atlantis" else None


def weather_hook_ctx(call: TypedCall[WeatherArgs], context: object) -> RunNormally[WeatherArgs]:
    return RunNormally(call.input)


def search_hook(call: TypedCall[SearchArgs]) -> None:
    return None


hooks = HookSet()
hooks.on(WeatherArgs, weather_hook)
hooks.on(WeatherArgs, weather_hook_ctx)
hooks.on(WeatherArgs, search_hook)  # rejected: arg-type
hooks.on(None, weather_hook)
hooks.on("weather", search_hook)


@hooks.on(WeatherArgs)
def decorated(call: TypedCall[WeatherArgs]) -> None:
    return None


@hooks.on(SearchArgs)  # rejected: arg-type
def decorated_wrong(call: TypedCall[WeatherArgs]) -> None:
    return None


hooks.on(WeatherArgs, 42)  # rejected: call-overload
hooks.describe("weather", lambda tool, text: text.upper())
hooks.hide(None, lambda tool: tool.name != "weather")
hooks.hide("weather", lambda tool: False)
hooks.hide(None, "not a hook")  # rejected: call-overload


@tool_fn
def add(a: int, b: int) -> int:
    return a + b


ToolMetadata(effect="mutating", capabilities=["network"])
ToolMetadata(effect="explosive")  # rejected: arg-type
ToolMetadata(capabilities=[3])  # rejected: list-item


def any_hook(call: TypedCall[Any]) -> None:
    return None


async def async_weather_hook(call: TypedCall[WeatherArgs]) -> Reject:
    return Reject("later")


def plain_implementation(city: str) -> str:
    return city


hooks.on(WeatherArgs, async_weather_hook)
hooks.on(add, any_hook)
hooks.on(plain_implementation, any_hook)
hooks.on(plain_implementation, weather_hook)  # rejected: arg-type
