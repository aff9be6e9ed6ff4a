"""The providers' per-model rules, as the fake servers enforce them (#28).

Each ``*_rules`` function looks at a request body the way the real API does and returns
the real API's 400 error body for a setting the model refuses, or None. They are written
here from the providers' documentation and public error reports, independently of
toolwire's profile tables, so a test can show an adapter's request would have earned the
400 (before profiles) and is now refused, or sent without the setting, before it leaves.

:func:`responder` wraps a canned success: the fake answers with the 400 when a rule fires.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ._server import JSONResponse, RecordedRequest

__all__ = ["anthropic_rules", "gemini_rules", "openai_rules", "responder"]


def _openai_error(message: str, param: str, code: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


# OpenAI's reasoning models take no sampling settings; the open-weight gpt-oss (served by
# vLLM, OpenRouter...) reasons too, and takes them.
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5(?!-chat)|codex-mini)")
_OPENAI_EFFORT = re.compile(r"^(o\d|gpt-5(?!-chat)|codex-mini|gpt-oss)")


def openai_rules(body: dict[str, Any]) -> dict[str, Any] | None:
    """Chat Completions and Responses."""
    model = str(body.get("model", ""))
    reasoning = bool(_OPENAI_REASONING.match(model))
    for key in ("temperature", "top_p"):
        if reasoning and key in body:
            return _openai_error(
                f"Unsupported value: '{key}' does not support {body[key]} with this model. "
                f"Only the default (1) value is supported.",
                key,
                "unsupported_value",
            )
    effort = body.get("reasoning_effort") or (body.get("reasoning") or {}).get("effort")
    if effort is not None and not _OPENAI_EFFORT.match(model):
        param = "reasoning_effort" if "reasoning_effort" in body else "reasoning.effort"
        return _openai_error(
            f"Unsupported parameter: '{param}' is not supported with this model.",
            param,
            "unsupported_parameter",
        )
    # The SDK's `stop` docstring: "Not supported with latest reasoning models o3 and o4-mini".
    if "stop" in body and re.match(r"^o[34]", model):
        return _openai_error(
            "Unsupported parameter: 'stop' is not supported with this model.",
            "stop",
            "unsupported_parameter",
        )
    return None


def _anthropic_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _recursive(schema: Any) -> bool:
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    for name, sub in defs.items():
        if f'"#/$defs/{name}"' in json.dumps(sub):
            return True
    return '"#"' in json.dumps(schema)


def anthropic_rules(body: dict[str, Any]) -> dict[str, Any] | None:
    """The Messages API."""
    model = str(body.get("model", ""))
    v45 = bool(re.search(r"claude-(opus|sonnet|haiku)-4-5", model))
    if v45 and "temperature" in body and "top_p" in body:
        return _anthropic_error(
            "`temperature` and `top_p` cannot both be specified for this model. Please use "
            "only one."
        )
    thinking = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
    if thinking and "temperature" in body and body["temperature"] != 1:
        return _anthropic_error(
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        )
    config = body.get("output_config") or {}
    if "effort" in config and "claude-opus-4-5" not in model:
        return _anthropic_error(
            "output_config.effort: This model does not support the effort parameter."
        )
    schema = (config.get("format") or {}).get("schema")
    if schema is not None and _recursive(schema):
        return _anthropic_error(
            "output_config.format.schema: Recursive schemas are not supported by structured "
            "outputs."
        )
    return None


def gemini_rules(body: dict[str, Any], model: str) -> dict[str, Any] | None:
    """generateContent (the model is in the path, not the body)."""
    level = ((body.get("generationConfig") or {}).get("thinkingConfig") or {}).get("thinkingLevel")
    if level is None:
        return None
    error = None
    if not model.startswith("gemini-3"):
        error = "Thinking level is not supported for this model."
    elif model.startswith("gemini-3-pro") and level not in ("LOW", "HIGH"):
        error = f"Thinking level {level} is not supported for this model."
    if error is None:
        return None
    return {"error": {"code": 400, "message": error, "status": "INVALID_ARGUMENT"}}


def responder(
    rules: Callable[[RecordedRequest], dict[str, Any] | None], ok: dict[str, Any]
) -> Callable[[RecordedRequest], JSONResponse]:
    """A fake's response: the provider's 400 when a rule fires, else ``ok``."""

    def answer(request: RecordedRequest) -> JSONResponse:
        error = rules(request)
        return JSONResponse(error, status=400) if error is not None else JSONResponse(ok)

    return answer
