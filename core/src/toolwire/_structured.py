"""A tool's output with a structured value beside what the model reads (#44)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, get_args, get_origin

import attrs

from toolwire._exports import publish

__all__ = ["Structured", "structured_value_type"]

OutT = TypeVar("OutT")


@attrs.frozen
class Structured(Generic[OutT]):
    """A tool's output with a structured value beside what the model reads.

    ``value`` is the call's typed output for applications, policies and an MCP gateway
    (:attr:`ToolResult.structured`, as JSON values: a pydantic model becomes its dict);
    ``text`` is what the model reads (text, or parts: text and media, as a tool may
    return). With no ``text`` the model reads the value as JSON, once. An MCP server's
    result with both text blocks and ``structuredContent`` reaches a toolwire tool so:
    the model reads the server's text, the application gets the value::

        @tool_fn
        def forecast(city: str) -> Structured[Forecast]:  # the output schema: Forecast's
            return Structured(Forecast(city=city, celsius=21.5), text=f"21.5 °C in {city}")
    """

    value: OutT
    text: str | Sequence[Any] | None = None


def structured_value_type(output_type: Any) -> Any:
    """The type whose schema describes a tool's output: ``X`` of ``Structured[X]``, none
    for a bare ``Structured``, else the output type itself."""
    if output_type is Structured:
        return None
    if get_origin(output_type) is Structured:
        return get_args(output_type)[0]
    return output_type


publish(globals())
