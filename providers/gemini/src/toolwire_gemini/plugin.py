"""The entry point: registers ``gemini`` with the toolwire host.

Importing this module is cheap: the adapter is imported when a provider is
first created; the schema compiler when the host collects registrations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire.adapters import Provider
    from toolwire.hookspecs import RegisterProvider

__all__ = ["toolwire_register_providers"]


def gemini(**options: Any) -> Provider:
    """Create a toolwire_gemini.GeminiProvider (options go to its constructor)."""
    from toolwire_gemini import GeminiProvider

    return GeminiProvider(**options)


@hookimpl
def toolwire_register_providers(register: RegisterProvider) -> None:
    """Register ``gemini`` and its schema compiler (for ``toolwire check``)."""
    from toolwire_gemini._schema import COMPILER

    register("gemini", gemini, schema_compiler=COMPILER)
