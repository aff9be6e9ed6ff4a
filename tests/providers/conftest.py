"""Fixtures that serve the provider fakes on 127.0.0.1.

One server per provider is started for the whole session (cheap, and the
port stays stable); each test gets it reset: empty queue, no recorded
requests, the default API key. When the test itself passed, teardown fails
it if a request found nothing enqueued or an enqueued response was never
requested; call ``fake.reset()`` in a test that leaves responses on purpose.

Test modules under ``tests/providers`` import the builders with
``from fakes import openai_chat, ...`` (this directory is on ``sys.path``
because it holds this conftest and no ``__init__.py``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import pytest
from fakes import FakeAnthropic, FakeGemini, FakeOpenAI, FakeServer

import toolwire as tw

_CALL_FAILED = pytest.StashKey[bool]()
_F = TypeVar("_F", bound=FakeServer)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


def _per_test(fake: _F, request: pytest.FixtureRequest) -> Iterator[_F]:
    fake.reset()
    yield fake
    try:
        # A failed test has already said what went wrong; leftovers would be noise.
        if not request.node.stash.get(_CALL_FAILED, False):
            fake.assert_all_consumed()
    finally:
        fake.reset()


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def _fake_anthropic_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="session")
def _fake_gemini_server() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


@pytest.fixture
def fake_openai(
    _fake_openai_server: FakeOpenAI, request: pytest.FixtureRequest
) -> Iterator[FakeOpenAI]:
    """OpenAI Chat Completions and Responses; ``base_url`` ends in ``/v1``."""
    yield from _per_test(_fake_openai_server, request)


@pytest.fixture
def fake_anthropic(
    _fake_anthropic_server: FakeAnthropic, request: pytest.FixtureRequest
) -> Iterator[FakeAnthropic]:
    """Anthropic Messages; ``base_url`` is the server root."""
    yield from _per_test(_fake_anthropic_server, request)


@pytest.fixture
def fake_gemini(
    _fake_gemini_server: FakeGemini, request: pytest.FixtureRequest
) -> Iterator[FakeGemini]:
    """Gemini generateContent / streamGenerateContent; ``base_url`` is the root."""
    yield from _per_test(_fake_gemini_server, request)


# -- the tools and session every adapter's tool loop runs on ---------------------------


@pytest.fixture
def get_weather() -> tw.Tool[Any, str]:
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
def get_time() -> tw.Tool[Any, str]:
    @tw.tool_fn
    def get_time(zone: str) -> str:
        """Get the time in a time zone.

        Args:
            zone: An IANA zone name.
        """
        return f"12:00 in {zone}"

    return get_time


@pytest.fixture
def toolset(get_weather: tw.Tool[Any, str], get_time: tw.Tool[Any, str]) -> tw.Toolset:
    return tw.Toolset("app", [get_weather, get_time])


@pytest.fixture
def session() -> tw.Session:
    return tw.Session("You are terse.", id="s1").add_user("Weather in Paris, and the time?")
