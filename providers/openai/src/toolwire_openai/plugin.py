"""The entry point: registers the four OpenAI-shaped providers with the toolwire host.

Importing this module is cheap: the adapters are imported when a provider is
first created, not when the host collects registrations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolwire.hookspecs import hookimpl

if TYPE_CHECKING:
    from toolwire.adapters import Provider
    from toolwire.hookspecs import RegisterProvider

__all__ = ["PROVIDERS", "toolwire_register_providers"]

#: Provider name -> class name in ``toolwire_openai``.
PROVIDERS = {
    "openai": "OpenAIChatProvider",
    "openai-responses": "OpenAIResponsesProvider",
    "openrouter": "OpenRouterProvider",
    "openai-compatible": "OpenAICompatibleProvider",
}


def _factory(class_name: str) -> Any:
    def make(**options: Any) -> Provider:
        import toolwire_openai

        cls = getattr(toolwire_openai, class_name)
        provider: Provider = cls(**options)
        return provider

    make.__name__ = make.__qualname__ = class_name
    make.__doc__ = f"Create a toolwire_openai.{class_name} (options go to its constructor)."
    return make


@hookimpl
def toolwire_register_providers(register: RegisterProvider) -> None:
    """Register ``openai``, ``openai-responses``, ``openrouter`` and ``openai-compatible``."""
    from toolwire_openai._schema import COMPILERS

    for name, class_name in PROVIDERS.items():
        register(name, _factory(class_name), schema_compiler=COMPILERS[name])
