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

__all__ = ["MAX_RESULT_CHARS", "block_text", "contents_text", "result_text"]

MAX_RESULT_CHARS = 1_000_000


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n:,} bytes"


def block_text(block: Any) -> str:
    """One content block as text: text as it is, anything else as a line saying what."""
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
    parts = [block_text(b) for b in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))]
    return _bounded("\n\n".join(parts))


def contents_text(result: types.ReadResourceResult) -> str:
    """A resource's contents as one text: text as it is, binary as a line that says what
    it is (its media type and size) until results carry media (#27)."""
    parts = []
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            parts.append(item.text)
        elif isinstance(item, types.BlobResourceContents):
            mime = f", {item.mime_type}" if item.mime_type else ""
            parts.append(f"[binary resource {item.uri}{mime}, {_size(item.blob)}]")
    return _bounded("\n\n".join(parts))


def _bounded(text: str) -> str:
    if len(text) > MAX_RESULT_CHARS:
        cut = len(text) - MAX_RESULT_CHARS
        text = f"{text[:MAX_RESULT_CHARS]}\n[... {cut:,} more characters cut]"
    return text
