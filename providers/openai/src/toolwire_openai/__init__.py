"""toolwire-openai: OpenAI provider adapters for toolwire.

- :class:`OpenAIChatProvider` (``"openai"``): Chat Completions;
- :class:`OpenAIResponsesProvider` (``"openai-responses"``): the Responses API;
- :class:`OpenRouterProvider` (``"openrouter"``): OpenRouter's Chat Completions;
- :class:`OpenAICompatibleProvider` (``"openai-compatible"``): vLLM, Ollama,
  llama.cpp and other servers with an OpenAI-compatible ``/chat/completions``.

Installing the distribution registers all four with the toolwire plugin host
(entry point ``toolwire.providers: openai``). Runtime dependencies are
``toolwire`` and ``httpx`` only.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

from toolwire.adapters import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from toolwire_openai._chat import (
        OpenAIChatProvider,
        OpenAICompatibleProvider,
        OpenRouterProvider,
    )
    from toolwire_openai._common import StrictMode
    from toolwire_openai._responses import OpenAIResponsesProvider, is_reasoning_model
    from toolwire_openai._schema import OpenAIStrictLimits

# The adapters are imported on first use: the host imports ``toolwire_openai.plugin``
# (and so this package) to collect registrations, which must stay cheap.
_LAZY = {
    "OpenAIChatProvider": "toolwire_openai._chat",
    "OpenAICompatibleProvider": "toolwire_openai._chat",
    "OpenAIResponsesProvider": "toolwire_openai._responses",
    "OpenAIStrictLimits": "toolwire_openai._schema",
    "OpenRouterProvider": "toolwire_openai._chat",
    "StrictMode": "toolwire_openai._common",
    "is_reasoning_model": "toolwire_openai._responses",
}


__getattr__, __dir__ = _lazy_exports("toolwire_openai", _LAZY, globals())


__all__ = [
    "OpenAIChatProvider",
    "OpenAICompatibleProvider",
    "OpenAIResponsesProvider",
    "OpenAIStrictLimits",
    "OpenRouterProvider",
    "StrictMode",
    "is_reasoning_model",
]
