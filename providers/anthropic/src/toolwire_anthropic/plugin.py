"""The entry point: registers ``anthropic`` with the toolwire host.

Importing this module is cheap: the adapter is imported when the provider is
first created, not when the host collects registrations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire.adapters import Provider
    from toolwire.hookspecs import RegisterProvider

__all__ = ["toolwire_register_providers"]


def _make(**options: Any) -> Provider:
    """Create a toolwire_anthropic.AnthropicProvider (options go to its constructor)."""
    from toolwire_anthropic import AnthropicProvider

    return AnthropicProvider(**options)


_make.__name__ = _make.__qualname__ = "AnthropicProvider"


@hookimpl
def toolwire_register_providers(register: RegisterProvider) -> None:
    """Register ``anthropic``."""
    from toolwire_anthropic._schema import COMPILER

    register("anthropic", _make, schema_compiler=COMPILER)
