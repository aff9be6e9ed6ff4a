"""Fixtures for the toolwire-openai tests: tools, a toolset, and one fixture per adapter.

Every adapter runs against the fake OpenAI server on 127.0.0.1 (``fake_openai``
from ``tests/providers/conftest.py``). ``adapter`` is parametrized over the four
providers; ``make`` builds a provider pointed at the fake and closes it after
the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _openai_support import ADAPTERS, Adapter
from fakes import FakeOpenAI
from pydantic import BaseModel, Field

import toolwire as tw
from toolwire_openai._common import OpenAIBase


@pytest.fixture
def lossy() -> tw.Tool[Any, Any]:
    """A tool whose schema strict mode cannot express losslessly (minLength)."""

    @tw.tool_input(name="lookup", output=str)
    class Lookup(BaseModel):
        """Look something up."""

        key: str = Field(min_length=3, description="The key.")

    return tw.tool_of(Lookup)


@pytest.fixture(params=sorted(ADAPTERS), ids=str)
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture
def make(fake_openai: FakeOpenAI, adapter: Adapter) -> Iterator[Callable[..., OpenAIBase]]:
    made: list[OpenAIBase] = []

    def build(**options: Any) -> OpenAIBase:
        provider = adapter.make(fake_openai, **options)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


@pytest.fixture
async def amake(fake_openai: FakeOpenAI, adapter: Adapter) -> Any:
    made: list[OpenAIBase] = []

    def build(**options: Any) -> OpenAIBase:
        provider = adapter.make(fake_openai, **options)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()
