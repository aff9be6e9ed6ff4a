"""Shared fixtures: two small tools and a toolset holding them (fresh for every test)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

import toolwire as tw


@pytest.fixture
def weather() -> tw.Tool[BaseModel, str]:
    @tw.tool_fn
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather.

        Args:
            city: The city name.
            days: How many days.
        """
        return f"sunny in {city} for {days} days"

    return get_weather


@pytest.fixture
def search() -> type[BaseModel]:
    @tw.tool_input(name="search_docs", output=list[str])
    class SearchDocs(BaseModel):
        """Search the docs."""

        query: str = Field(description="What to look for.")
        limit: int = 3

    return SearchDocs


@pytest.fixture
def toolset(weather: tw.Tool[BaseModel, str], search: type[BaseModel]) -> tw.Toolset:
    return tw.Toolset("app", [weather, search])


@pytest.fixture
def session() -> tw.Session:
    return tw.Session("You are terse.", id="s1")
