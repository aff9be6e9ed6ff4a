"""toolwire-anthropic: the Anthropic Messages API as a toolwire provider.

:class:`AnthropicProvider` (``"anthropic"``) renders tools through toolwire's
schema compiler, encodes the Session (all results of a round in one user
message, thinking blocks sent back with their signatures), decodes replies
and SSE streams, and maps errors to toolwire's typed errors.

Installing the distribution registers it with the toolwire plugin host
(entry point ``toolwire.providers: anthropic``). Runtime dependencies are
``toolwire`` and ``httpx`` only.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "STOP_REASONS",
    "AnthropicProvider",
    "supports_native_output",
]

from toolwire.adapters import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from toolwire_anthropic._decode import STOP_REASONS
    from toolwire_anthropic._provider import (
        DEFAULT_MAX_TOKENS,
        AnthropicProvider,
        supports_native_output,
    )

# The host imports ``toolwire_anthropic.plugin`` to collect registrations; the adapter
# (and its transport) is imported on first use, as toolwire's own lazy exports are.
_LAZY = {
    "AnthropicProvider": "toolwire_anthropic._provider",
    "DEFAULT_MAX_TOKENS": "toolwire_anthropic._provider",
    "STOP_REASONS": "toolwire_anthropic._decode",
    "supports_native_output": "toolwire_anthropic._provider",
}


__getattr__, __dir__ = _lazy_exports("toolwire_anthropic", _LAZY, globals())
