"""An MCP ``CallToolResult`` -> the text of a toolwire tool result.

Tool results are text for every provider toolwire renders for, so each content block
becomes text, in order, joined by blank lines:

- ``text``: the text itself;
- ``image`` / ``audio``: ``[image: image/png, 1,234 bytes]`` (the data is not sent on:
  a model cannot read base64, and it would fill the context);
- ``resource_link``: ``[resource: name <uri> (mime type)]``;
- embedded ``resource``: a text resource's text under a ``[resource: uri]`` line, a
  blob resource as ``[resource: uri, mime type, N bytes]``.

With no content blocks, a valid ``structuredContent`` is the result, as compact JSON.
The whole text is capped at :data:`MAX_RESULT_CHARS`; a longer result is cut, and says so.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

__all__ = ["MAX_RESULT_CHARS", "result_text"]

MAX_RESULT_CHARS = 1_000_000


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n:,} bytes"


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.ResourceLink):
        mime = f" ({block.mime_type})" if block.mime_type else ""
        return f"[resource: {block.name} <{block.uri}>{mime}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource: {res.uri}]\n{res.text}"
        if isinstance(res, types.BlobResourceContents):
            mime = f", {res.mime_type}" if res.mime_type else ""
            return f"[resource: {res.uri}{mime}, {_size(res.blob)}]"
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content]"


def result_text(result: types.CallToolResult) -> str:
    """The result's content as one text (see the module docstring)."""
    parts = [_block(b) for b in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))]
    text = "\n\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        cut = len(text) - MAX_RESULT_CHARS
        text = f"{text[:MAX_RESULT_CHARS]}\n[... {cut:,} more characters cut]"
    return text
