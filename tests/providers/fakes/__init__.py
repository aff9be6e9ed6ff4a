"""Local fake servers that speak the providers' wire formats, for adapter tests.

Fixtures (``tests/providers/conftest.py``): ``fake_openai``, ``fake_anthropic``,
``fake_gemini``. Builders: ``openai_chat``, ``openai_responses``,
``anthropic_messages``, ``gemini`` (plain dicts and event lists), ``errors``
(provider-shaped error responses). Checks: ``validate`` (request bodies and
canned responses against the official SDK types).
"""

from . import anthropic_messages, errors, gemini, openai_chat, openai_responses, validate
from ._providers import FakeAnthropic, FakeGemini, FakeOpenAI, sse_response
from ._server import (
    CloseConnection,
    FakeServer,
    JSONResponse,
    RawResponse,
    RecordedRequest,
    Responder,
    Response,
    SSEResponse,
    encode_sse,
    rechunk,
)
from .openai_chat import Call
from .validate import (
    validate_anthropic_request,
    validate_gemini_request,
    validate_openai_chat_request,
    validate_openai_responses_request,
)

__all__ = [
    "Call",
    "CloseConnection",
    "FakeAnthropic",
    "FakeGemini",
    "FakeOpenAI",
    "FakeServer",
    "JSONResponse",
    "RawResponse",
    "RecordedRequest",
    "Responder",
    "Response",
    "SSEResponse",
    "anthropic_messages",
    "encode_sse",
    "errors",
    "gemini",
    "openai_chat",
    "openai_responses",
    "rechunk",
    "sse_response",
    "validate",
    "validate_anthropic_request",
    "validate_gemini_request",
    "validate_openai_chat_request",
    "validate_openai_responses_request",
]
