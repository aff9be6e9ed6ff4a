"""Fixtures for the toolwire-anthropic tests: tools, a toolset, a session, providers.

Every provider runs against the fake Anthropic server on 127.0.0.1
(``fake_anthropic`` from ``tests/providers/conftest.py``); ``make`` / ``amake``
build providers pointed at it and close them after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from _anthropic_support import Make
from fakes import FakeAnthropic

from toolwire_anthropic import AnthropicProvider


def _build(fake: FakeAnthropic, made: list[AnthropicProvider], options: dict[str, Any]) -> Any:
    opts: dict[str, Any] = {
        "model": "claude-fake",
        "base_url": fake.base_url,
        "api_key": fake.default_api_key,
    }
    opts.update(options)
    provider = AnthropicProvider(**opts)
    made.append(provider)
    return provider


@pytest.fixture
def make(fake_anthropic: FakeAnthropic) -> Iterator[Make]:
    made: list[AnthropicProvider] = []
    yield lambda **options: _build(fake_anthropic, made, options)
    for provider in made:
        provider.close()


@pytest.fixture
async def amake(fake_anthropic: FakeAnthropic) -> AsyncIterator[Make]:
    made: list[AnthropicProvider] = []
    yield lambda **options: _build(fake_anthropic, made, options)
    for provider in made:
        await provider.aclose()
