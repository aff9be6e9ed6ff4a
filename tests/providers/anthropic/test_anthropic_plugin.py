"""Packaging: the public surface, a cheap import, and discovery through the entry point."""

from __future__ import annotations

import subprocess
import sys

import toolwire as tw
import toolwire_anthropic
from toolwire._plugins import PluginHost
from toolwire_anthropic import AnthropicProvider


def test_all_is_exactly_the_public_surface() -> None:
    public = {n for n in dir(toolwire_anthropic) if not n.startswith("_")}
    # `plugin` is the entry point's submodule: an attribute once the host has imported it
    # (which depends on what ran before in this process).
    public -= {"TYPE_CHECKING", "Any", "plugin"}
    assert [
        "DEFAULT_MAX_TOKENS",
        "STOP_REASONS",
        "AnthropicProvider",
        "supports_native_output",
    ] == toolwire_anthropic.__all__
    assert set(toolwire_anthropic.__all__) == public
    for name in toolwire_anthropic.__all__:
        assert getattr(toolwire_anthropic, name) is not None


def test_the_host_discovers_the_provider_through_its_entry_point() -> None:
    host = PluginHost(autoload=True, allow=["anthropic"], deny=[], strict=True)
    assert "anthropic" in host.providers()
    provider = host.provider("anthropic", model="claude-fake", api_key="k")
    try:
        assert isinstance(provider, AnthropicProvider)
        assert "claude-fake" == provider.model
        assert "anthropic" == provider.name
    finally:
        provider.close()
    record = next(r for r in host.plugins if r.name == "anthropic")
    assert "toolwire-anthropic" == record.distribution


def test_importing_the_plugin_is_cheap() -> None:
    code = (
        "import sys, toolwire_anthropic.plugin;"
        "bad = [m for m in ('anthropic', 'toolwire_anthropic._provider') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "" == out.stdout.strip()


def test_the_package_needs_no_anthropic_sdk() -> None:
    code = (
        "import sys; sys.modules['anthropic'] = None;"
        "import toolwire_anthropic; print(toolwire_anthropic.AnthropicProvider.name)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "anthropic" == out.stdout.strip()
    assert isinstance(tw.ProviderError, type)
