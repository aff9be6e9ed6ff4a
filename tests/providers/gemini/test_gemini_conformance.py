"""Requests Gemini accepts: no OBJECT without properties is ever sent under ``parameters``.

The fake answers as Gemini does: 400 INVALID_ARGUMENT "properties: should be
non-empty for OBJECT type" for a declaration whose ``parameters`` holds an
object with no properties below the root. A tool whose schema would compile to
one (a map, an untyped object, a recursion cut short) is refused before any
request under ``schema_target="parameters"`` and goes as
``parametersJsonSchema`` under the default ``"auto"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from _gemini_support import enqueue_generate, validate_requests
from fakes import FakeGemini, gemini
from pydantic import BaseModel

import toolwire as tw
from toolwire.exceptions import SchemaCompileError
from toolwire_gemini import GeminiProvider


class Node(BaseModel):
    value: int
    children: list[Node] = []


def weigh(weights: dict[str, int]) -> str:
    """Weigh each item."""
    return str(sum(weights.values()))


def walk(root: Node) -> str:
    """Walk a tree."""
    return str(root.value)


def keep(data: dict[str, Any]) -> str:
    """Keep any object."""
    return "kept"


def test_the_fake_refuses_an_object_without_properties_as_gemini_does(
    fake_gemini: FakeGemini,
) -> None:
    # The reproducer: what the adapter sent for a map before it was refused.
    declaration = {
        "name": "weigh",
        "parameters": {
            "type": "object",
            "properties": {"weights": {"type": "object", "description": "each value: int"}},
        },
    }
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }
    response = httpx.post(
        f"{fake_gemini.base_url}/v1beta/models/gemini-fake:generateContent",
        json=body,
        headers={"x-goog-api-key": fake_gemini.default_api_key},
        timeout=10,
    )
    assert 400 == response.status_code
    assert "properties: should be non-empty for OBJECT type" in response.json()["error"]["message"]


@pytest.mark.parametrize("fn", [weigh, walk, keep], ids=["map", "recursion", "untyped"])
def test_under_parameters_the_tool_is_refused_before_any_request(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], fn: Any
) -> None:
    provider = make(schema_target="parameters")
    toolset = tw.Toolset("app", [tw.tool_fn(fn)])
    with pytest.raises(SchemaCompileError, match="OBJECT with no properties"):
        tw.run_turn(provider, tw.Session("s").add_user("go"), tw.resolve_turn(toolset))
    assert [] == fake_gemini.requests


@pytest.mark.parametrize("fn", [weigh, walk, keep], ids=["map", "recursion", "untyped"])
def test_by_default_the_tool_goes_as_json_schema_and_the_request_succeeds(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], fn: Any
) -> None:
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("done")]))
    toolset = tw.Toolset("app", [tw.tool_fn(fn)])
    outcome = tw.run_turn(make(), tw.Session("s").add_user("go"), tw.resolve_turn(toolset))
    assert isinstance(outcome, tw.Finished)
    [body] = validate_requests(fake_gemini)
    [declaration] = body["tools"][0]["functionDeclarations"]
    assert "parametersJsonSchema" in declaration
    assert "parameters" not in declaration
