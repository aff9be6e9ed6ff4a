"""MCP content blocks <-> the parts of a toolwire tool result.

From a server (:func:`result_output`): a result of text blocks is one text, joined by
blank lines; a result with media is a list of parts, in order, that the tool result
carries (``ToolResult.parts``):

- ``text``: the text itself;
- ``image`` / ``audio``: an :class:`~toolwire.Image` / :class:`~toolwire.Audio` (checked:
  base64, and the bytes of the declared type; a block that fails is a line saying why);
- ``resource_link``: a :class:`~toolwire.media.ResourceLink`
  (``[resource: name <uri> (mime type)]`` in the text);
- embedded ``resource``: a text resource's text under a ``[resource: uri]`` line, a
  blob resource as the image, audio or file it is.

A result with ``structuredContent`` (:func:`structured_output`) is a
:class:`~toolwire.Structured`: the model reads the server's text blocks (the spec has
servers put the serialised value there for exactly this), the value stays the call's
typed output (``ToolResult.structured``) for applications, policies and a gateway; with
no text block the model reads the value as JSON, once. The text is capped at
:data:`MAX_RESULT_CHARS`; a longer result is cut, and says so.

To a client (:func:`content_block`): each part as the MCP block for it.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from toolwire import Structured
from toolwire.media import Audio, File, Image, MediaError, Part, ResourceLink, Text, from_mcp_block

__all__ = [
    "MAX_RESULT_CHARS",
    "block_text",
    "content_block",
    "contents_output",
    "contents_text",
    "result_output",
    "result_text",
    "structured_output",
]

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


def _carries_media(block: Any) -> bool:
    return isinstance(block, (types.ImageContent, types.AudioContent, types.EmbeddedResource))


def _part(block: Any) -> Part:
    """One block as a part; media that fails its checks is a line saying why."""
    try:
        return from_mcp_block(block)
    except MediaError as exc:
        line = block_text(block).split("\n", 1)[0]
        return Text(f"{line[:-1]}; not usable: {exc}]")


def result_output(result: types.CallToolResult) -> str | list[Part]:
    """The tool's output: its text, or (when it carries media) its parts in order."""
    if not any(_carries_media(b) for b in result.content):
        return result_text(result)
    parts = [_part(b) for b in result.content]
    return [Text(_bounded(p.text)) if isinstance(p, Text) else p for p in parts]


def structured_output(result: types.CallToolResult) -> Structured[dict[str, Any]]:
    """A result with ``structuredContent``: the value, and what the model reads.

    With text blocks, the model reads the blocks as :func:`result_output` gives them
    (media too). Without, it reads the value as JSON, once; a string in it that is a media
    block's base64 data stands as that part's label line (``[image: image/png, 70
    bytes]``), and the media parts follow. The value itself is kept as the server sent
    it (a gateway's client gets the data).
    """
    structured = result.structured_content
    if any(isinstance(b, types.TextContent) for b in result.content):
        return Structured(structured, result_output(result))
    media = [p for p in (_part(b) for b in result.content) if not isinstance(p, Text)]
    if not media:
        return Structured(structured, _bounded(json.dumps(structured, ensure_ascii=False)))
    labels = {p.base64(): p.label() for p in media if isinstance(p, (Image, Audio, File))}
    text = json.dumps(_swap(structured, labels), ensure_ascii=False)
    return Structured(structured, [Text(_bounded(text)), *media])


def _swap(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, dict):
        return {k: _swap(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, table) for v in value]
    return value


def contents_output(result: types.ReadResourceResult) -> str | list[Part]:
    """A resource's contents: text, or parts when some are binary (an image, a PDF)."""
    if not any(isinstance(c, types.BlobResourceContents) for c in result.contents):
        return contents_text(result)
    out: list[Part] = []
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            out.append(Text(_bounded(item.text)))
        else:
            block = types.EmbeddedResource(type="resource", resource=item)
            out.append(_part(block))
    return out


def content_block(part: Part) -> Any:
    """A part as the MCP content block a client gets for it."""
    if isinstance(part, Text):
        return types.TextContent(type="text", text=part.text)
    if isinstance(part, ResourceLink):
        return types.ResourceLink(
            type="resource_link",
            uri=part.uri,
            name=part.name or part.uri,
            mime_type=part.media_type,
            description=part.description,
        )
    if part.data is None:  # a URL: the client may fetch it
        name = part.name or part.url or ""
        return types.ResourceLink(
            type="resource_link", uri=part.url or "", name=name, mime_type=part.media_type
        )
    if isinstance(part, Image):
        return types.ImageContent(type="image", data=part.base64(), mime_type=part.media_type)
    if isinstance(part, Audio):
        return types.AudioContent(type="audio", data=part.base64(), mime_type=part.media_type)
    assert isinstance(part, File)
    name = part.name or "file"
    uri = name if ":" in name else f"toolwire://result/{name}"
    text = part.text()
    resource: Any
    if text is not None:
        resource = types.TextResourceContents(uri=uri, text=text, mime_type=part.media_type)
    else:
        resource = types.BlobResourceContents(
            uri=uri, blob=part.base64(), mime_type=part.media_type
        )
    return types.EmbeddedResource(type="resource", resource=resource)


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
