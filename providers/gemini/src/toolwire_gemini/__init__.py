"""toolwire-gemini: the Google Gemini provider adapter for toolwire.

- :class:`GeminiProvider` (``"gemini"``): ``generateContent`` and
  ``streamGenerateContent`` on the Gemini Developer API, or on Vertex AI;
- :class:`PromptBlockedError`: Gemini refused the prompt (``promptFeedback``).

Installing the distribution registers the provider with the toolwire plugin
host (entry point ``toolwire.providers: gemini``). Runtime dependencies are
``toolwire`` and ``httpx`` only.
"""

from toolwire_gemini._errors import PromptBlockedError
from toolwire_gemini._provider import GeminiProvider, SchemaTarget

__version__ = "0.1.0"

__all__ = [
    "GeminiProvider",
    "PromptBlockedError",
    "SchemaTarget",
]
