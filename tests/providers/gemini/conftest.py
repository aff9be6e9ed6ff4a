"""Fixtures for the toolwire-gemini tests: tools, a toolset, and providers pointed at the fake.

Every provider talks to the fake Gemini server on 127.0.0.1 (``fake_gemini``
from ``tests/providers/conftest.py``); ``make``/``amake`` build one and close
it after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fakes import FakeGemini

from toolwire._http import RetryPolicy
from toolwire_gemini import GeminiProvider

FAST_RETRY = RetryPolicy(
    max_retries=2, initial_backoff=0.0, max_backoff=0.0, jitter=0.0, respect_retry_after=False
)


def _options(fake: FakeGemini, options: dict[str, Any]) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "model": "gemini-fake",
        "base_url": fake.base_url,
        "api_key": fake.default_api_key,
        "retry": FAST_RETRY,
    }
    opts.update(options)
    return opts


@pytest.fixture
def make(fake_gemini: FakeGemini) -> Iterator[Callable[..., GeminiProvider]]:
    made: list[GeminiProvider] = []

    def build(**options: Any) -> GeminiProvider:
        provider = GeminiProvider(**_options(fake_gemini, options))
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


@pytest.fixture
async def amake(fake_gemini: FakeGemini) -> AsyncIterator[Callable[..., GeminiProvider]]:
    made: list[GeminiProvider] = []

    def build(**options: Any) -> GeminiProvider:
        provider = GeminiProvider(**_options(fake_gemini, options))
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()
