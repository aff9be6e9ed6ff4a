"""Rich tool results: text, images, audio, files and resource links, as ordered parts.

A tool returns an :class:`Image`, :class:`Audio`, :class:`File`, :class:`ResourceLink`,
an MCP content block, bytes with a recognised signature, or a list of these (and text):
its result then carries the parts in order (``ToolResult.parts``), and ``content`` stays
the text, with one placeholder line per media part (``[image: image/png, 4,033 bytes]``),
which is also what a text-only provider is sent.

Media is checked when it is made: the bytes must be of the declared type when their
signature says what they are (a PNG declared ``image/jpeg`` is refused), an image must
be an ``image/*``, audio an ``audio/*``; a URL source is ``http(s)``. The size limits
(:func:`current_limits`) are checked when a result is built (an error result, never a crash) and
when a session grows. Nothing here logs or reprs the bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

import attrs

from toolwire._errors import FetchError, MediaError, TranscriptError, UsageError
from toolwire._exports import publish
from toolwire._jsondata import field, optional

__all__ = [
    "Structured",
    "structured_value_type",
    "COMMON_IMAGES",
    "TEXT_ONLY",
    "Audio",
    "File",
    "Image",
    "MediaLimits",
    "MediaSupport",
    "Part",
    "ResourceLink",
    "Text",
    "sniff",
    "afetch",
    "current_limits",
    "from_mcp_block",
    "set_media_limits",
]

MiB = 1024 * 1024


@attrs.frozen
class MediaLimits:
    """How much media a result and a session may carry (bytes of decoded data).

    ``result_bytes`` bounds one tool result's media (an over-limit result becomes an error
    result that says so); ``session_bytes`` bounds a session's (media past it is left out
    of the commit, replaced by a line that says so, and a saved session past it is refused).
    """

    result_bytes: int = 8 * MiB
    session_bytes: int = 32 * MiB


class _Limits:
    now = MediaLimits()


def current_limits() -> MediaLimits:
    """The media limits in force (change them with :func:`set_media_limits`)."""
    return _Limits.now


def set_media_limits(
    *, result_bytes: int | None = None, session_bytes: int | None = None
) -> MediaLimits:
    """Change the media limits for this process (each a positive number of bytes); returns
    the limits that were in force, to put back with ``set_media_limits(**attrs.asdict(old))``."""
    given = {"result_bytes": result_bytes, "session_bytes": session_bytes}
    for name, value in given.items():
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise UsageError(f"{name} must be a positive int, got {value!r}")
    old = _Limits.now
    _Limits.now = attrs.evolve(old, **{k: v for k, v in given.items() if v is not None})
    return old


# -- what bytes are ---------------------------------------------------------------------

_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"%PDF-", 0, "application/pdf"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"ID3", 0, "audio/mpeg"),
)


def sniff(data: bytes) -> str | None:
    """The media type ``data``'s signature says it is, or None when it says nothing."""
    for magic, at, media_type in _SIGNATURES:
        if data.startswith(magic, at):
            return media_type
    if data[:4] == b"RIFF" and len(data) >= 12:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(data[8:12])
    if len(data) >= 2 and data[0] == 0xFF and data[1] in (0xFB, 0xF3, 0xF2):
        return "audio/mpeg"
    return None


#: Types that name the same thing (the signature's name is on the right).
_ALIASES = {
    "image/jpg": "image/jpeg",
    "audio/mp3": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-flac": "audio/flac",
}


def _textual(media_type: str) -> bool:
    top, _, sub = media_type.partition("/")
    return (
        top == "text"
        or sub in ("json", "xml", "yaml", "x-yaml", "javascript", "toml", "csv")
        or sub.endswith(("+json", "+xml"))
    )


def _canonical(media_type: str) -> str:
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def _token_ok(media_type: str) -> bool:
    top, sep, sub = media_type.partition("/")
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789!#$&-^_.+")
    return bool(sep and top and sub) and set(top) <= allowed and set(sub) <= allowed


def _guess(name: str) -> str | None:
    """The media type a file name's extension says (``mimetypes``, imported on first use:
    it costs a cold start milliseconds every text result would pay)."""
    import mimetypes

    return mimetypes.guess_type(name)[0]


def _size_text(n: int) -> str:
    return f"{n:,} bytes"


# -- the parts ------------------------------------------------------------------------


@attrs.frozen
class Text:
    """A text part."""

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    kind: ClassVar[str] = "text"


@attrs.frozen
class ResourceLink:
    """A link to a resource the model or the application may fetch (an MCP resource link);
    every provider is sent its placeholder line."""

    uri: str = attrs.field(validator=attrs.validators.instance_of(str))
    name: str = ""
    media_type: str | None = None
    description: str | None = None
    kind: ClassVar[str] = "resource_link"

    def placeholder(self) -> str:
        mime = f" ({self.media_type})" if self.media_type else ""
        return f"[resource: {self.name or self.uri} <{self.uri}>{mime}]"


@attrs.frozen(init=False, repr=False)
class _Media:
    """Bytes or a URL, with a media type (checked against the bytes' signature)."""

    data: bytes | None
    url: str | None
    media_type: str
    name: str | None
    kind: ClassVar[str] = "file"
    _prefix: ClassVar[str] = ""

    def __init__(
        self,
        source: bytes | str | os.PathLike[str] | None = None,
        *,
        data: Any = None,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        media_type: str | None = None,
        name: str | None = None,
    ) -> None:
        what = type(self).__name__
        if source is not None:
            if isinstance(source, (bytes, bytearray, memoryview)):
                data = bytes(source) if data is None else data
            elif isinstance(source, str) and source.startswith(("http://", "https://", "data:")):
                url = source if url is None else url
            elif isinstance(source, (str, os.PathLike)):
                path = source if path is None else path
            else:
                raise MediaError(
                    f"{what}(source) takes bytes, a path or an http(s) URL, "
                    f"got {type(source).__name__}"
                )
        given = [k for k, v in (("data", data), ("path", path), ("url", url)) if v is not None]
        if len(given) != 1:
            raise MediaError(
                f"{what} takes exactly one of data, path or url, got {given or 'none'}"
            )
        if name is not None and (
            not isinstance(name, str) or len(name) > 1024 or not name.isprintable()
        ):
            raise MediaError(f"{what}.name must be printable text of at most 1,024 characters")
        if path is not None:
            data = _read(path, what)
            name = name or os.path.basename(os.fspath(path))
            media_type = media_type or sniff(data) or _guess(os.fspath(path))
        elif url is not None:
            if not isinstance(url, str):
                raise MediaError(f"{what}.url must be a string, got {type(url).__name__}")
            if url.startswith("data:"):
                data, media_type = _data_url(url, media_type, what)
                url = None
            elif not url.startswith(("http://", "https://")):
                raise MediaError(f"{what}.url must be an http(s) or data: URL, got {url[:80]!r}")
            elif len(url) > 8192 or not url.isprintable() or " " in url:
                raise MediaError(
                    f"{what}.url must be one URL, without spaces or control characters"
                )
            else:
                media_type = media_type or _guess(url.split("?", 1)[0])
        if data is not None:
            if isinstance(data, (bytearray, memoryview)):
                data = bytes(data)
            if not isinstance(data, bytes):
                raise MediaError(f"{what}.data must be bytes, got {type(data).__name__}")
            media_type = media_type or sniff(data)
        if media_type is None:
            raise MediaError(f"{what}: say its media_type (nothing in its bytes or name says it)")
        self.__attrs_init__(data, url, _checked_type(self, media_type, data), name)

    @property
    def size(self) -> int:
        """Bytes of data (0 for a URL source)."""
        return len(self.data) if self.data is not None else 0

    def base64(self) -> str:
        """The data as base64 text (empty for a URL source)."""
        return base64.b64encode(self.data).decode("ascii") if self.data is not None else ""

    def data_url(self) -> str:
        """The data as a ``data:`` URL, or the URL itself for a URL source."""
        if self.data is None:
            return self.url or ""
        return f"data:{self.media_type};base64,{self.base64()}"

    def sha256(self) -> str:
        return hashlib.sha256(
            self.data if self.data is not None else (self.url or "").encode()
        ).hexdigest()

    def label(self, note: str = "") -> str:
        """The line that names this part: ``[image: image/png, 4,033 bytes]`` (with ``note``
        after a semicolon)."""
        named = f"{self.name}, " if self.name else ""
        if self.data is None:
            what = f"{named}{self.media_type} <{self.url}>"
        else:
            what = f"{named}{self.media_type}, {_size_text(self.size)}"
        return f"[{self.kind}: {what}; {note}]" if note else f"[{self.kind}: {what}]"

    def text(self) -> str | None:
        """The text of a text file (``text/*``, JSON, XML, YAML in UTF-8), else None."""
        if self.data is None or not _textual(self.media_type):
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def placeholder(self) -> str:
        """What stands for this part in ``content`` (and goes to a provider that cannot
        take it): its label line, and under it the text of a text file (so policies,
        redaction and every model see that text)."""
        text = self.text()
        return self.label() if text is None else f"{self.label()}\n{text}"

    def __repr__(self) -> str:  # never the bytes
        src = f"url={self.url!r}" if self.data is None else f"{_size_text(self.size)}"
        named = f", name={self.name!r}" if self.name else ""
        return f"{type(self).__name__}({self.media_type}, {src}{named})"


@attrs.frozen(init=False, repr=False)
class Image(_Media):
    """An image (``image/*``): ``Image(data|path|url, media_type=None, name=None)``."""

    kind: ClassVar[str] = "image"
    _prefix: ClassVar[str] = "image/"


@attrs.frozen(init=False, repr=False)
class Audio(_Media):
    """Audio (``audio/*``): ``Audio(data|path|url, media_type=None, name=None)``."""

    kind: ClassVar[str] = "audio"
    _prefix: ClassVar[str] = "audio/"


@attrs.frozen(init=False, repr=False)
class File(_Media):
    """A file (a PDF, a text document, any other type): ``File(data|path|url, media_type=None,
    name=None)``. At toolwire's MCP gateway it is an embedded resource whose URI is
    ``name`` when that is a URI (``file:///reports/q3.pdf``), else
    ``toolwire://result/NAME`` (``toolwire://result/file`` with no name)."""

    kind: ClassVar[str] = "file"


Part = Union[Text, Image, Audio, File, ResourceLink]
PART_TYPES = (Text, Image, Audio, File, ResourceLink)
MEDIA_TYPES = (Image, Audio, File)


def _read(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise MediaError(f"{what}: cannot read {os.fspath(path)!r}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise MediaError(f"{what}: {os.fspath(path)!r} is not a regular file")
        if st.st_size > _Limits.now.result_bytes:
            raise MediaError(
                f"{what}: {os.fspath(path)!r} is {_size_text(st.st_size)}, over the "
                f"{_size_text(_Limits.now.result_bytes)} a result may carry"
            )
        data = f.read(_Limits.now.result_bytes + 1)
    if len(data) > _Limits.now.result_bytes:
        raise MediaError(f"{what}: {os.fspath(path)!r} grew past the media limit while read")
    return data


def _data_url(url: str, media_type: str | None, what: str) -> tuple[bytes, str | None]:
    head, sep, body = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        raise MediaError(f"{what}: a data: URL must be base64 (data:TYPE;base64,...)")
    if len(body) > (_Limits.now.result_bytes * 4) // 3 + 4:
        raise MediaError(f"{what}: the data: URL is over the media limit")
    try:
        data = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise MediaError(f"{what}: the data: URL's base64 is malformed") from None
    return data, media_type or head[: -len(";base64")] or None


def _checked_type(part: _Media, media_type: str, data: bytes | None) -> str:
    what = type(part).__name__
    if not isinstance(media_type, str):
        raise MediaError(f"{what}.media_type must be a string, got {type(media_type).__name__}")
    canonical = _canonical(media_type)
    if not _token_ok(canonical):
        raise MediaError(f"{what}: {media_type[:80]!r} is not a media type")
    if part._prefix and not canonical.startswith(part._prefix):
        raise MediaError(f"{what}: {canonical} is not an {part._prefix}* type")
    if data is not None:
        found = sniff(data)
        if found is not None and found != canonical:
            raise MediaError(f"{what}: declared {canonical}, but its bytes are {found}")
    return canonical


# -- outputs -> parts ----------------------------------------------------------------

_MCP_KINDS = frozenset({"text", "image", "audio", "resource", "resource_link"})


_MCP_MODULES = ("mcp_types", "mcp")


def _is_mcp_block(value: Any) -> bool:
    """An MCP SDK content block (never an application's own model that has a ``type``)."""
    if isinstance(value, (str, bytes, Mapping)):
        return False
    module = type(value).__module__.partition(".")[0]
    return module in _MCP_MODULES and getattr(value, "type", None) in _MCP_KINDS


def is_rich(output: Any) -> bool:
    """Does a tool's output carry parts (media, links, MCP blocks) rather than one value?"""
    if isinstance(output, PART_TYPES) or _is_mcp_block(output):
        return True
    if isinstance(output, bytes):
        return sniff(output) is not None
    if isinstance(output, (list, tuple)):
        return any(isinstance(x, PART_TYPES) or _is_mcp_block(x) for x in output)
    return False


#: The MCP SDK's content block classes, by name (a tool annotated with one returns parts).
_MCP_BLOCK_CLASSES = frozenset(
    {"TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource"}
)


def mentions_parts(tp: Any) -> bool:
    """Does a type annotation name a part class (``Image``, ``list[Image | str]``) or an
    MCP content block class (``ImageContent``, ``list[ContentBlock]``)? Such a tool
    returns parts, so it has no output schema (an MCP block is no structured output)."""
    if isinstance(tp, type):
        if issubclass(tp, PART_TYPES):
            return True
        module = tp.__module__.partition(".")[0]
        if module in _MCP_MODULES and tp.__name__ in _MCP_BLOCK_CLASSES:
            return True
    return any(mentions_parts(a) for a in get_args(tp))


def from_mcp_block(block: Any) -> Part:
    """One MCP content block (an ``mcp_types`` object) as a part; media is checked."""
    kind = block.type
    if kind == "text":
        return Text(str(block.text))
    if kind in ("image", "audio"):
        return _kind_for(kind)(data=_b64(block.data, kind), media_type=block.mime_type)
    if kind == "resource_link":
        return ResourceLink(
            str(block.uri), block.name or "", block.mime_type, getattr(block, "description", None)
        )
    res = block.resource
    uri = str(res.uri)
    if getattr(res, "blob", None) is not None:
        data = _b64(res.blob, "resource")
        mime = res.mime_type or sniff(data) or "application/octet-stream"
        return _kind_for(mime.partition("/")[0])(data=data, media_type=mime, name=uri)
    text = str(res.text)
    if len(text) > _Limits.now.result_bytes:
        raise MediaError(
            f"the resource block is over the {_size_text(_Limits.now.result_bytes)} media limit"
        )
    mime = res.mime_type if res.mime_type and _textual(_canonical(res.mime_type)) else "text/plain"
    return File(data=text.encode("utf-8"), media_type=mime, name=uri)


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise MediaError(f"the {what} block's data must be base64 text")
    if len(text) > (_Limits.now.result_bytes * 4) // 3 + 4:
        raise MediaError(
            f"the {what} block is over the {_size_text(_Limits.now.result_bytes)} media limit"
        )
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise MediaError(f"the {what} block's base64 data is malformed") from None


def to_parts(output: Any, dump: Any) -> tuple[Part, ...]:
    """A rich output as parts; ``dump`` serialises any other item to text."""
    items: Iterable[Any] = output if isinstance(output, (list, tuple)) else (output,)
    parts: list[Part] = []
    for item in items:
        if isinstance(item, PART_TYPES):
            parts.append(item)
        elif isinstance(item, str):
            parts.append(Text(item))
        elif _is_mcp_block(item):
            parts.append(from_mcp_block(item))
        elif isinstance(item, bytes) and (found := sniff(item)) is not None:
            kind = (
                Image
                if found.startswith("image/")
                else Audio
                if found.startswith("audio/")
                else File
            )
            parts.append(kind(data=item, media_type=found))
        else:
            parts.append(Text(dump(item)))
    return tuple(parts)


def media_bytes(parts: Iterable[Part]) -> int:
    return sum(p.size for p in parts if isinstance(p, MEDIA_TYPES))


def placeholder(part: Part) -> str:
    return part.text if isinstance(part, Text) else part.placeholder()


def render(parts: Sequence[Part]) -> str:
    """The text of parts: text parts as they are, other parts as their placeholder lines."""
    return "\n\n".join(placeholder(p) for p in parts)


def over_limit(parts: Sequence[Part]) -> str | None:
    """Why ``parts`` carry too much media for one result, or None."""
    cap = _Limits.now.result_bytes
    total = media_bytes(parts)
    if total > cap:
        return (
            f"the result's media is {_size_text(total)}, over the {_size_text(cap)} "
            f"a tool result may carry"
        )
    return None


def reconcile(content: str, parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts as ``content`` says they are now.

    ``content`` is ``render(parts)`` unless a hook changed it (redacted a secret,
    replaced it): then the text between the media placeholders still in ``content`` is the
    text, and a media part whose placeholder is gone is gone (a hook withholds media by
    removing its line).
    """
    if content == render(parts):
        return parts
    out: list[Part] = []
    rest = content
    for p in parts:
        if isinstance(p, Text):
            continue
        mark = p.placeholder()
        at = rest.find(mark)
        if at < 0:
            continue
        before = rest[:at].strip("\n")
        if before:
            out.append(Text(before))
        out.append(p)
        rest = rest[at + len(mark) :]
    tail = rest.strip("\n")
    if tail:
        out.append(Text(tail))
    return tuple(out)


# -- saved form ------------------------------------------------------------------------

_SAVED: dict[str, type[Image] | type[Audio] | type[File]] = {
    "image": Image,
    "audio": Audio,
    "file": File,
}


def _kind_for(top: str) -> type[Image] | type[Audio] | type[File]:
    """The part class for a media type's top level (``image``, ``audio``; else a file)."""
    return _SAVED.get(top, File)


def part_to_dict(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ResourceLink):
        out: dict[str, Any] = {"type": "resource_link", "uri": part.uri, "name": part.name}
        if part.media_type is not None:
            out["media_type"] = part.media_type
        if part.description is not None:
            out["description"] = part.description
        return out
    d: dict[str, Any] = {"type": part.kind, "media_type": part.media_type}
    if part.name is not None:
        d["name"] = part.name
    if part.data is not None:
        d["size"] = part.size
        d["data"] = part.base64()
    else:
        d["url"] = part.url
    return d


def part_from_dict(d: Mapping[str, Any], where: str) -> Part:
    """A saved part, checked as a tool's part is (type, signature, size)."""
    kind = d.get("type")
    if kind == "text":
        return Text(field(d, "text", where, str))
    if kind == "resource_link":
        return ResourceLink(
            field(d, "uri", where, str),
            field(d, "name", where, str, ""),
            optional(d, "media_type", where, str),
            optional(d, "description", where, str),
        )
    cls = _SAVED.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise TranscriptError(
            f"{where}.type must be one of text, image, audio, file, resource_link; got {kind!r:.40}"
        )
    media_type = field(d, "media_type", where, str)
    name = optional(d, "name", where, str)
    url = optional(d, "url", where, str)
    try:
        if url is not None:
            return cls(url=url, media_type=media_type, name=name)
        raw = field(d, "data", where, str)
        size = field(d, "size", where, int)
        if len(raw) > (_Limits.now.result_bytes * 4) // 3 + 4:
            raise MediaError(
                f"its data is over the {_size_text(_Limits.now.result_bytes)} media limit"
            )
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise MediaError("its data is not valid base64") from None
        if len(data) != size:
            raise MediaError(f"its data is {_size_text(len(data))}, but size says {size:,}")
        return cls(data=data, media_type=media_type, name=name)
    except MediaError as exc:
        raise TranscriptError(f"{where}: {exc}") from None


# -- a structured value beside what the model reads (#44) -------------------------------

OutT = TypeVar("OutT")


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

    # A plain slotted class, not attrs, and in this module, not one of its own: it is
    # made at import, where each costs the cold start (an attrs class and a module, about
    # 0.4 ms between them).
    __slots__ = ("text", "value")

    def __init__(self, value: OutT, text: str | Sequence[Any] | None = None) -> None:
        self.value = value
        self.text = text

    def __repr__(self) -> str:
        return f"Structured(value={self.value!r}, text={self.text!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Structured:
            return NotImplemented
        return (self.value, self.text) == (other.value, other.text)

    __hash__ = None  # type: ignore[assignment]  # its value may be a dict


def structured_value_type(output_type: Any) -> Any:
    """The type whose schema describes a tool's output: ``X`` of ``Structured[X]``, none
    for a bare ``Structured``, else the output type itself."""
    if output_type is Structured:
        return None
    if get_origin(output_type) is Structured:
        return get_args(output_type)[0]
    return output_type


publish(globals())


# -- what an API takes ------------------------------------------------------------------

#: The image types every API with image input takes (PNG, JPEG, GIF, WebP).
COMMON_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@attrs.frozen
class MediaSupport:
    """What one API takes in a tool result, natively: the adapters' capability data
    (docs/media.md's table is generated from it).

    ``image``, ``audio`` and ``file`` are the media types sent as themselves; ``urls`` the
    kinds (``image``, ``file``) whose URL the API fetches itself; ``where`` says where the
    media goes (``in the tool result``, or after the results for an API whose tool result
    takes text only). Anything else is sent as its placeholder line, saying why.
    """

    api: str
    image: frozenset[str] = frozenset()
    audio: frozenset[str] = frozenset()
    file: frozenset[str] = frozenset()
    urls: frozenset[str] = frozenset()
    where: str = "in the tool result"

    def sends(self, part: Part) -> bool:
        """Is ``part`` sent as itself (not as a line of text)?"""
        if not isinstance(part, MEDIA_TYPES):
            return False
        taken: frozenset[str] = getattr(self, part.kind)
        if part.media_type not in taken:
            return False
        return part.data is not None or part.kind in self.urls

    def why_not(self, part: Part) -> str:
        """Why ``part`` is not sent as itself (for its placeholder line)."""
        if not isinstance(part, MEDIA_TYPES):
            return ""
        taken: frozenset[str] = getattr(self, part.kind)
        if not taken:
            return f"{self.api} takes no {part.kind} in a tool result"
        if part.media_type not in taken:
            return f"{self.api} takes {', '.join(sorted(taken))} only"
        return f"{self.api} does not fetch URLs, and toolwire fetches none"

    def as_text(self, part: Part) -> str:
        """What is sent in place of a part that is not sent as itself: its label saying
        why (a text file: its label and its text)."""
        if isinstance(part, Text):
            return part.text
        if isinstance(part, ResourceLink) or part.text() is not None:
            return part.placeholder()
        return part.label(f"not sent: {self.why_not(part)}")

    def report(self, parts: Iterable[Part]) -> list[str]:
        """One line per part that is not sent as itself, saying why (empty: all are)."""
        return [
            f"{p.label()}: {self.why_not(p)}"
            for p in parts
            if isinstance(p, MEDIA_TYPES) and not self.sends(p) and p.text() is None
        ]


TEXT_ONLY = MediaSupport("a text-only API")


# -- fetching a URL, when the application allows it --------------------------------------


async def afetch(
    part: Part,
    *,
    allow_hosts: Iterable[str],
    timeout: float = 10.0,
    client: Any = None,
) -> Part:
    """``part`` with its URL fetched into data, when the application allows that host.

    toolwire never fetches a URL on its own: an API that does not fetch URLs is sent the
    part's line. An application that wants such a model to see the image calls this (in a
    result hook, say) with the hosts it trusts: only ``https`` URLs of exactly those hosts,
    no redirects, the whole read bounded by the result media limit and ``timeout``; the
    bytes must be of the part's type. Anything else raises :class:`MediaError`. A part
    without a URL is returned as it is.
    """
    import httpx

    if not isinstance(part, MEDIA_TYPES) or part.url is None:
        return part
    url = httpx.URL(part.url)
    hosts = {h.lower() for h in allow_hosts}
    if url.scheme != "https" or url.host.lower() not in hosts:
        raise MediaError(f"{part.label()}: only https URLs of {sorted(hosts)} may be fetched")
    from toolwire._http.bounded import ACCEPT_ENCODING, aread_body  # loads httpx: here
    from toolwire._sync import in_a_task

    await in_a_task()  # its deadline needs its task (before a client it must close)
    cap = _Limits.now.result_bytes
    own = client is None
    http = client or httpx.AsyncClient(follow_redirects=False, timeout=timeout, trust_env=False)
    what = f"{part.label()}: the answer of {url.host}"
    try:
        import anyio

        with anyio.fail_after(timeout):
            # Only identity, gzip and deflate, decoded by the one bounded reader: the
            # media limit counts the bytes as they are decompressed.
            headers = {"Accept-Encoding": ACCEPT_ENCODING}
            async with http.stream("GET", url, headers=headers, follow_redirects=False) as response:
                if response.status_code != 200:
                    raise MediaError(f"{part.label()}: the server answered {response.status_code}")
                data, _ = await aread_body(response, cap, what=what)
    except TimeoutError:
        raise MediaError(f"{part.label()}: not fetched within {timeout:g} s") from None
    except FetchError as exc:
        if exc.reason == "too_large":
            raise MediaError(f"{part.label()}: over the {_size_text(cap)} media limit") from None
        raise MediaError(str(exc)) from None
    except httpx.HTTPError as exc:
        raise MediaError(f"{part.label()}: cannot fetch it: {type(exc).__name__}") from None
    finally:
        if own:
            await http.aclose()
    return type(part)(data=bytes(data), media_type=part.media_type, name=part.name)
