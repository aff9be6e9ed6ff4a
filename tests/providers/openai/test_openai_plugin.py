"""The distribution's face: entry point, discovery by the host, exports, cheap import."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest
from fakes import FakeOpenAI

import toolwire as tw
import toolwire_openai
from toolwire import _plugins
from toolwire_openai import plugin

NAMES = ["openai", "openai-compatible", "openai-responses", "openrouter"]


def test_entry_point_is_installed() -> None:
    found = [
        ep
        for ep in importlib.metadata.entry_points(group="toolwire.providers")
        if ep.name == "openai"
    ]
    assert ["toolwire_openai.plugin"] == [ep.value for ep in found]
    assert "toolwire-openai" == found[0].dist.name  # type: ignore[union-attr]


def test_host_discovers_all_four_providers_through_the_entry_point(
    fake_openai: FakeOpenAI,
) -> None:
    host = _plugins.PluginHost(autoload=True, allow=["openai"], deny=[], strict=True)
    assert set(NAMES) <= set(host.providers())
    record = next(r for r in host.plugins if r.name == "openai")
    assert "toolwire-openai" == record.distribution
    provider = host.provider(
        "openai-responses",
        model="gpt-fake",
        api_key=fake_openai.default_api_key,
        base_url=fake_openai.base_url,
    )
    try:
        assert isinstance(provider, toolwire_openai.OpenAIResponsesProvider)
        assert "gpt-fake" == provider.model
    finally:
        provider.close()


@pytest.mark.parametrize("name", NAMES)
def test_each_registered_factory_builds_its_provider(name: str) -> None:
    registered: dict[str, object] = {}
    plugin.toolwire_register_providers(lambda n, f, **_: registered.__setitem__(n, f))
    assert NAMES == sorted(registered)
    factory = registered[name]
    provider = factory(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")  # type: ignore[operator]
    try:
        assert name == provider.name
    finally:
        provider.close()


def test_public_surface_is_exact() -> None:
    assert [
        "OpenAIChatProvider",
        "OpenAICompatibleProvider",
        "OpenAIResponsesProvider",
        "OpenAIStrictLimits",
        "OpenRouterProvider",
        "StrictMode",
        "is_reasoning_model",
    ] == toolwire_openai.__all__
    assert sorted(toolwire_openai.__all__) == toolwire_openai.__all__


def test_importing_the_plugin_loads_neither_the_adapters_nor_the_sdk() -> None:
    code = (
        "import sys, toolwire_openai.plugin;"
        "print('toolwire_openai._chat' in sys.modules, 'openai' in sys.modules);"
        "import toolwire_openai;"
        "print('openai' in sys.modules);"
        "toolwire_openai.OpenAIChatProvider;"
        "print('toolwire_openai._chat' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert ["False", "False", "False", "True", "False"] == out


def test_provider_is_a_toolwire_provider_with_the_requirement_flags() -> None:
    assert toolwire_openai.OpenAIChatProvider.supports_requirement is True
    assert toolwire_openai.OpenAICompatibleProvider.supports_requirement is False
    assert issubclass(toolwire_openai.OpenRouterProvider, tw.adapters.Provider)
