"""``tool_fn(..., flat=True)``: a single model parameter's fields as the tool's parameters (#12)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

import toolwire as tw
from toolwire.providers.test import TestProvider


class Forecast(BaseModel):
    city: str
    """The city."""
    days: int = Field(1, ge=1, description="How many days.")


def forecast(request: Forecast) -> str:
    """Forecast the weather."""
    return f"{request.city} for {request.days} days"


async def aforecast(request: Forecast, unit: Annotated[str, tw.Injected]) -> str:
    """Forecast the weather, asynchronously."""
    return f"{request.city} in {unit}"


def test_the_default_nests_the_model_under_its_parameter_name() -> None:
    tool = tw.tool_fn(forecast)
    assert ["request"] == list(tool.input_schema["properties"])


def test_flat_makes_the_models_fields_the_tools_parameters() -> None:
    tool = tw.tool_fn(forecast, flat=True)
    schema = tool.input_schema
    assert ["city", "days"] == list(schema["properties"])
    assert "The city." == schema["properties"]["city"]["description"]
    assert {"default": 1, "minimum": 1} == {
        k: schema["properties"]["days"][k] for k in ("default", "minimum")
    }
    assert "Forecast the weather." == tool.description
    value = tool.validate_json('{"city": "Oslo", "days": 3}')
    assert isinstance(value, Forecast)
    assert "Oslo for 3 days" == tool.call(value)
    with pytest.raises(Exception, match="greater than or equal to 1"):
        tool.validate_json('{"city": "Oslo", "days": 0}')


def test_flat_runs_through_the_agent_with_injected_values_beside_it() -> None:
    tool = tw.tool_fn(aforecast, flat=True)
    assert ["city", "days"] == list(tool.input_schema["properties"])
    session = tw.Session().add_user("go")
    provider = TestProvider(
        script=[
            {"tool_calls": [{"name": "aforecast", "arguments": {"city": "Lima"}}]},
            {"text": "ok"},
        ]
    )
    executor = tw.Executor(injected={"unit": "celsius"}, plugins=False)
    tw.Agent(provider, tw.Toolset("app", [tool]), executor=executor, plugins=False).run(session)
    assert "Lima in celsius" == session.messages[-2].results[0].content  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "fn",
    [
        lambda city, days: "",
        lambda city: "",
    ],
    ids=["two-parameters", "not-a-model"],
)
def test_flat_needs_exactly_one_model_parameter(fn: Any) -> None:
    fn.__annotations__ = {k: (str if k == "city" else int) for k in fn.__code__.co_varnames}
    with pytest.raises(tw.ToolDefinitionError, match="flat=True needs exactly one parameter"):
        tw.tool_fn(fn, name="bad", flat=True)
