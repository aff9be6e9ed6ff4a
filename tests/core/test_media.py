"""Rich tool results (#27): parts, media checks, limits, redaction, sessions and receipts."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import attrs
import pytest
from _helpers import needs_tools
from pydantic import BaseModel

import toolwire as tw
from toolwire import media
from toolwire.exceptions import MediaError, TranscriptError


def png(width: int = 2, height: int = 2) -> bytes:
    """A real, decodable PNG (grey pixels), made with zlib alone."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = png()
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)


@pytest.fixture(autouse=True)
def _limits() -> Any:
    old = media.set_media_limits()
    yield
    media.set_media_limits(**attrs.asdict(old))


# -- making parts ----------------------------------------------------------------------------


def test_bytes_are_typed_by_their_signature() -> None:
    assert tw.Image(PNG).media_type == "image/png"
    assert tw.File(PDF).media_type == "application/pdf"
    assert tw.Audio(WAV).media_type == "audio/wav"
    assert media.sniff(b"\xff\xd8\xff\xe0 jpeg") == "image/jpeg"
    assert media.sniff(b"plain words") is None


def test_bytes_of_another_type_than_declared_are_refused() -> None:
    with pytest.raises(MediaError, match="declared image/jpeg, but its bytes are image/png"):
        tw.Image(PNG, media_type="image/jpeg")
    with pytest.raises(MediaError, match=r"application/pdf is not an image/\* type"):
        tw.Image(PDF)
    with pytest.raises(MediaError, match=r"not an audio/\* type"):
        tw.Audio(PNG)
    with pytest.raises(MediaError, match="say its media_type"):
        tw.Image(b"no signature here")
    with pytest.raises(MediaError, match="is not a media type"):
        tw.File(b"x", media_type="not a type")


def test_aliases_name_the_same_type() -> None:
    assert tw.Image(b"\xff\xd8\xff\xe0", media_type="image/jpg").media_type == "image/jpeg"
    assert tw.Audio(WAV, media_type="audio/x-wav").media_type == "audio/wav"


def test_exactly_one_source() -> None:
    with pytest.raises(MediaError, match="exactly one of data, path or url"):
        tw.Image(data=PNG, url="https://example.com/a.png")
    with pytest.raises(MediaError, match="exactly one of data, path or url"):
        tw.Image()
    with pytest.raises(MediaError, match="takes bytes, a path or an http"):
        tw.Image(12)  # type: ignore[arg-type]


def test_a_path_is_read_with_its_name(tmp_path: Path) -> None:
    f = tmp_path / "chart.png"
    f.write_bytes(PNG)
    image = tw.Image(f)
    assert (image.data, image.name, image.media_type) == (PNG, "chart.png", "image/png")
    doc = tmp_path / "notes.txt"
    doc.write_text("hello")
    assert tw.File(str(doc)).media_type == "text/plain"


def test_a_path_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(MediaError, match="not a regular file"):
        tw.File(fifo)
    with pytest.raises(MediaError, match="cannot read"):
        tw.File(tmp_path / "missing.pdf")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    media.set_media_limits(result_bytes=1000)
    big = tmp_path / "big.pdf"
    big.write_bytes(PDF + bytes(2000))
    with pytest.raises(MediaError, match="over the 1,000 bytes a result may carry"):
        tw.File(big)


def test_urls() -> None:
    image = tw.Image("https://example.com/cat.png")
    assert (image.url, image.data, image.media_type) == (
        "https://example.com/cat.png",
        None,
        "image/png",
    )
    inline = tw.Image("data:image/png;base64," + base64.b64encode(PNG).decode())
    assert (inline.data, inline.url) == (PNG, None)
    with pytest.raises(MediaError, match="http\\(s\\) or data: URL"):
        tw.Image(url="file:///etc/passwd", media_type="image/png")
    with pytest.raises(MediaError, match="base64 is malformed"):
        tw.Image("data:image/png;base64,@@@")
    with pytest.raises(MediaError, match="must be base64"):
        tw.Image("data:image/png,rawtext")
    with pytest.raises(MediaError, match="say its media_type"):
        tw.Image("https://example.com/render")
    with pytest.raises(MediaError, match="without spaces or control characters"):
        tw.Image("https://example.com/a.png\n[image: fake]")
    with pytest.raises(MediaError, match="name must be printable"):
        tw.Image(PNG, name="a\nb")


def test_a_part_never_shows_its_bytes() -> None:
    secret = b"\x89PNG\r\n\x1a\n" + b"SECRET" * 10
    assert "SECRET" not in repr(tw.Image(secret))
    assert "SECRET" not in str(tw.Image(secret))


# -- results ----------------------------------------------------------------------------------


@tw.tool_fn
def screenshot(caption: str) -> list[str | tw.Image]:
    """Take a screenshot."""
    return [caption, tw.Image(PNG)]


@tw.tool_fn
def report() -> tw.File:
    """A PDF report."""
    return tw.File(PDF, name="report.pdf")


@tw.tool_fn
def raw_png() -> bytes:
    """PNG bytes, typed by their signature."""
    return PNG


@tw.tool_fn
def lying() -> tw.Image:
    """Declares JPEG, returns PNG."""
    return tw.Image(PNG, media_type="image/jpeg")


def test_a_tool_returning_parts_gives_a_result_with_parts() -> None:
    result = tw.Executor(tools=[screenshot]).execute(
        tw.ToolCall("c1", "screenshot", '{"caption":"the page"}')
    )
    assert not result.is_error
    assert result.content == f"the page\n\n[image: image/png, {len(PNG):,} bytes]"
    assert result.parts == (media.Text("the page"), tw.Image(PNG))
    assert result.media == (tw.Image(PNG),)


def test_a_text_result_is_one_text_part() -> None:
    result = tw.ToolCall("c1", "x", "{}").result("hello")
    assert (result.rich, result.parts, result.media) == ((), (media.Text("hello"),), ())


def test_bytes_with_a_signature_are_media_and_other_bytes_are_json() -> None:
    result = tw.Executor(tools=[raw_png]).execute(tw.ToolCall("c1", "raw_png", "{}"))
    assert result.media == (tw.Image(PNG),)

    @tw.tool_fn
    def blob() -> bytes:
        """Bytes with no signature."""
        return b"abc"

    assert tw.Executor(tools=[blob]).execute(tw.ToolCall("c1", "blob", "{}")).content == '"abc"'


def test_media_tools_have_no_output_schema() -> None:
    assert screenshot.output_schema is None
    assert report.output_schema is None


def test_media_that_fails_its_type_is_an_error_result_not_a_crash() -> None:
    result = tw.Executor(tools=[lying]).execute(tw.ToolCall("c1", "lying", "{}"))
    assert result.is_error
    assert "declared image/jpeg, but its bytes are image/png" in result.content


def test_a_result_over_the_limit_is_an_error_result() -> None:
    media.set_media_limits(result_bytes=100)
    result = tw.ToolCall("c1", "report", "{}").complete(report, tw.File(PDF + bytes(200)))
    assert result.is_error
    assert "over the 100 bytes a tool result may carry" in result.content
    assert result.rich == ()


def test_a_result_over_the_limit_in_the_executor_loses_nothing_else() -> None:
    media.set_media_limits(result_bytes=100)
    results = tw.Executor(tools=[screenshot, report]).execute_all(
        [tw.ToolCall("c1", "report", "{}"), tw.ToolCall("c2", "screenshot", '{"caption":"x"}')]
    )
    assert [r.is_error for r in results] == [False, False]  # the PDF fits, the PNG fits
    media.set_media_limits(result_bytes=60)
    results = tw.Executor(tools=[screenshot, report]).execute_all(
        [tw.ToolCall("c1", "report", "{}"), tw.ToolCall("c2", "screenshot", '{"caption":"x"}')]
    )
    assert results[0].is_error is False
    assert results[0].media
    assert results[1].is_error is True
    assert "over the 60 bytes" in results[1].content


def test_the_limits_are_checked() -> None:
    with pytest.raises(tw.UsageError, match="result_bytes must be a positive int"):
        media.set_media_limits(result_bytes=0)
    with pytest.raises(tw.UsageError, match="session_bytes must be a positive int"):
        media.set_media_limits(session_bytes=True)  # type: ignore[arg-type]


def test_a_result_of_parts_can_be_made_by_hand() -> None:
    call = tw.ToolCall("c1", "x", "{}")
    result = call.result([media.Text("see"), tw.Image(PNG)])
    assert result.parts == (media.Text("see"), tw.Image(PNG))
    with pytest.raises(tw.UsageError, match="text or parts"):
        call.result(42)  # type: ignore[arg-type]


def test_redacting_the_content_redacts_the_parts() -> None:
    result = tw.ToolCall("c1", "x", "{}").result(["token sk-123 here", tw.Image(PNG), "end"])
    redacted = result.replace(content=result.content.replace("sk-123", "[REDACTED]"))
    assert redacted.parts == (media.Text("token [REDACTED] here"), tw.Image(PNG), media.Text("end"))
    withheld = result.replace(content="withheld by policy")
    assert withheld.parts == (media.Text("withheld by policy"),)
    assert withheld.media == ()


def test_a_rejection_sends_its_reason_alone() -> None:
    result = tw.ToolCall("c1", "x", "{}").result(["a", tw.Image(PNG)])
    rejected = result.replace(content=tw.adapters.REJECTION_PREFIX + "no")
    parts, is_error = rejected.model_parts()
    assert parts == (media.Text("The call was rejected and did not run: no"),)
    assert is_error


def test_receipts_cover_the_media() -> None:
    one = tw.ToolCall("c1", "x", "{}").result(tw.Image(PNG))
    same_size = tw.ToolCall("c1", "x", "{}").result(tw.Image(PNG[:-4] + b"\x00\x00\x00\x00"))
    assert same_size.content == one.content
    assert same_size.receipt().output != one.receipt().output  # the bytes differ: so do they
    at = one.receipt().timestamp
    from datetime import datetime

    when = datetime.fromisoformat(at.replace("Z", "+00:00"))
    assert same_size.receipt(at=when).digest != one.receipt(at=when).digest
    assert "PNG" not in one.receipt().output


# -- sessions ----------------------------------------------------------------------------------


def _session_with(result_of: Any, toolset: tw.Toolset) -> tw.Session:
    session = tw.Session()
    session.add_user("go")
    turn = tw.resolve_turn(toolset)
    rnd = needs_tools(session, turn, ("c1", "get_weather", '{"city":"Oslo"}'))
    rnd.commit([rnd.calls[0].complete(result_of)])
    return session


def test_a_session_with_parts_round_trips(toolset: tw.Toolset) -> None:
    session = _session_with(
        [
            "sunny",
            tw.Image(PNG),
            tw.File(PDF, name="f.pdf"),
            media.ResourceLink("file:///a.txt", "a", "text/plain"),
            tw.Image("https://example.com/x.png"),
        ],
        toolset,
    )
    text = session.to_json()
    again = tw.Session.from_json(text)
    assert again == session
    result = again.messages[-1].results[0]
    assert result.parts[1] == tw.Image(PNG)
    saved = json.loads(text)["messages"][-1]["results"][0]["parts"][1]
    assert saved == {
        "type": "image",
        "media_type": "image/png",
        "size": len(PNG),
        "data": base64.b64encode(PNG).decode(),
    }
    assert again.media_bytes() == len(PNG) + len(PDF)


@pytest.mark.parametrize(
    ("part", "why"),
    [
        (
            {"type": "image", "media_type": "image/png", "size": 3, "data": "@@@@"},
            "not valid base64",
        ),
        (
            {
                "type": "image",
                "media_type": "image/png",
                "size": 99,
                "data": base64.b64encode(PNG).decode(),
            },
            "but size says 99",
        ),
        (
            {
                "type": "image",
                "media_type": "image/jpeg",
                "size": len(PNG),
                "data": base64.b64encode(PNG).decode(),
            },
            "declared image/jpeg",
        ),
        (
            {
                "type": "image",
                "media_type": "application/pdf",
                "size": len(PDF),
                "data": base64.b64encode(PDF).decode(),
            },
            "not an image",
        ),
        ({"type": "video", "media_type": "video/mp4"}, "must be one of text, image"),
        (
            {"type": "image", "media_type": "image/png", "url": "ftp://x/y.png"},
            "http\\(s\\) or data",
        ),
        ({"type": "image", "media_type": "image/png"}, "data must be a string"),
        ({"type": "text"}, "text must be a string"),
        ("nope", "must be an object"),
    ],
)
def test_malformed_saved_parts_are_refused_naming_the_path(
    toolset: tw.Toolset, part: Any, why: str
) -> None:
    data = _session_with(["sunny", tw.Image(PNG)], toolset).to_dict()
    data["messages"][-1]["results"][0]["parts"][1] = part
    with pytest.raises(TranscriptError, match=why) as info:
        tw.Session.from_dict(data)
    assert "results[0].parts[1]" in str(info.value)


def test_a_saved_session_over_the_media_limit_is_refused(toolset: tw.Toolset) -> None:
    text = _session_with([tw.Image(PNG)], toolset).to_json()
    media.set_media_limits(session_bytes=len(PNG) - 1)
    with pytest.raises(TranscriptError, match="over its limit"):
        tw.Session.from_json(text)


def test_media_past_the_session_limit_is_left_out_and_says_so(toolset: tw.Toolset) -> None:
    media.set_media_limits(session_bytes=len(PNG) + 10)
    session = _session_with(["first", tw.Image(PNG)], toolset)
    session.add_user("again")
    turn = tw.resolve_turn(toolset)
    rnd = needs_tools(session, turn, ("c2", "get_weather", '{"city":"Oslo"}'))
    rnd.commit([rnd.calls[0].complete(["second", tw.Image(PNG)])])
    last = session.messages[-1].results[0]
    assert last.media == ()
    assert "left out: the session's media limit" in last.content
    assert last.content.startswith("second")
    assert session.media_bytes() == len(PNG)
    assert tw.Session.from_json(session.to_json()) == session


def test_a_hand_built_result_with_garbage_parts_is_refused(toolset: tw.Toolset) -> None:
    session = tw.Session()
    session.add_user("go")
    rnd = needs_tools(session, tw.resolve_turn(toolset), ("c1", "get_weather", '{"city":"Oslo"}'))
    bad = rnd.calls[0].complete("x")._replace(rich=("not a part",))
    with pytest.raises(TranscriptError, match="must be a tuple of parts"):
        rnd.commit([bad])
    assert len(session) == 1  # nothing written


def test_a_redacted_result_is_saved_redacted(toolset: tw.Toolset) -> None:
    session = tw.Session()
    session.add_user("go")
    rnd = needs_tools(session, tw.resolve_turn(toolset), ("c1", "get_weather", '{"city":"Oslo"}'))
    result = rnd.calls[0].complete(["key sk-123", tw.Image(PNG)])
    rnd.commit([result.replace(content=result.content.replace("sk-123", "[REDACTED]"))])
    assert "sk-123" not in session.to_json()


# -- fetching a URL, only when the application allows it ---------------------------------------


def _client(handler: Any) -> Any:
    import httpx

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), follow_redirects=False)


def _fetch(part: Any, handler: Any, **kwargs: Any) -> Any:
    import asyncio

    async def go() -> Any:
        async with _client(handler) as client:
            return await media.afetch(part, client=client, **kwargs)

    return asyncio.run(go())


def test_a_url_is_fetched_only_from_a_host_the_application_allows() -> None:
    import httpx

    asked: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200, content=PNG)

    part = tw.Image("https://cdn.example.com/chart.png")
    got = _fetch(part, serve, allow_hosts=["cdn.example.com"])
    assert (got.data, got.url, got.media_type) == (PNG, None, "image/png")
    for url, hosts in (
        ("https://evil.example.com/chart.png", ["cdn.example.com"]),
        ("http://cdn.example.com/chart.png", ["cdn.example.com"]),
        ("https://cdn.example.com/chart.png", []),
    ):
        with pytest.raises(MediaError, match="only https URLs"):
            _fetch(tw.Image(url), serve, allow_hosts=hosts)
    assert asked == ["https://cdn.example.com/chart.png"]  # nothing else was asked
    assert _fetch(tw.Image(PNG), serve, allow_hosts=[]) == tw.Image(PNG)  # data: as it is


@pytest.mark.parametrize(
    ("response", "why"),
    [
        ({"status_code": 302, "headers": {"location": "http://169.254.169.254/"}}, "answered 302"),
        ({"status_code": 404}, "answered 404"),
        ({"status_code": 200, "content": b"\xff\xd8\xff\xe0 a jpeg"}, "declared image/png"),
        ({"status_code": 200, "content": PNG + bytes(5000)}, "over the 1,000 bytes"),
    ],
)
def test_a_fetch_that_goes_wrong_is_a_media_error(response: dict[str, Any], why: str) -> None:
    import httpx

    media.set_media_limits(result_bytes=1000)
    part = tw.Image("https://cdn.example.com/chart.png")
    with pytest.raises(MediaError, match=why):
        _fetch(part, lambda request: httpx.Response(**response), allow_hosts=["cdn.example.com"])


def test_with_parts_makes_a_checked_copy() -> None:
    result = tw.ToolCall("c1", "x", "{}").result(["see", tw.Image("https://example.com/a.png")])
    fetched = result.with_parts(["see", tw.Image(PNG)])
    assert fetched.parts == (media.Text("see"), tw.Image(PNG))
    assert fetched.call_id == "c1"
    bad = result.with_parts([tw.File(PDF + bytes(10_000_000))])
    assert bad.is_error
    assert "over the" in bad.content


def test_a_tools_copy_of_a_media_line_does_not_keep_media_past_the_session_limit(
    toolset: tw.Toolset,
) -> None:
    media.set_media_limits(session_bytes=len(PNG) - 1)
    image = tw.Image(PNG)
    session = _session_with([image.label(), image], toolset)
    last = session.messages[-1].results[0]
    assert last.media == ()
    assert "left out: the session's media limit" in last.content


class Event(BaseModel):
    type: str = "text"
    detail: str = "x"


@tw.tool_fn
def event() -> Event:
    """An event."""
    return Event()


def test_an_applications_model_with_a_type_field_is_not_taken_for_an_mcp_block() -> None:
    result = tw.Executor(tools=[event]).execute(tw.ToolCall("c1", "event", "{}"))
    assert not result.is_error
    assert result.content == '{"type":"text","detail":"x"}'
    assert result.rich == ()
