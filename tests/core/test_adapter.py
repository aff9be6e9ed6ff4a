"""HttpProvider: the request loop, key and URL resolution, and malformed input, on a toy adapter.

The toy speaks a made-up API: ``POST /v1/echo`` answers ``{"text": ...}``; streamed, each
event is ``{"delta": ...}`` until an ``end`` event. HTTP goes through httpx's MockTransport.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, ClassVar

import attrs
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._adapter import HttpProvider, malformed
from toolwire._errors import (
    AuthenticationError,
    OverloadedError,
    ProviderError,
    StreamError,
)
from toolwire._http import ApiKey, ErrorMapper, SSEEvent, Transport
from toolwire.schema import CompiledTool, CompileReport, SchemaCompiler


def _compile_as_is(schema: Any, tool: str, options: Any) -> CompiledTool:
    return CompiledTool(tool, dict(schema), None, CompileReport(tool, "as-is"))


_COMPILER = SchemaCompiler("as-is", _compile_as_is)

KEY = "sk-adapter-SECRET-0123456789"
Handler = Callable[[httpx.Request], httpx.Response]


@attrs.define
class EchoStream:
    parts: list[str] = attrs.Factory(list)
    done: bool = False


class EchoProvider(HttpProvider[EchoStream]):
    name: ClassVar[str] = "echo"
    default_model: ClassVar[str] = "echo-1"
    default_base_url: ClassVar[str] = "https://echo.invalid"
    key_env: ClassVar[tuple[str, ...]] = ("ECHO_API_KEY",)
    base_url_env: ClassVar[tuple[str, ...]] = ("ECHO_BASE_URL",)
    path: ClassVar[str] = "/v1/echo"
    # Its error words (as a real adapter declares its provider's).
    error_mapper: ClassVar[ErrorMapper | None] = ErrorMapper(kind_status={"overloaded_error": 529})

    def _build_request(
        self, session: tw.Session, turn: tw.adapters.ResolvedTurn, *, stream: bool
    ) -> dict[str, Any]:
        return {"model": self.model, "n": len(session.messages), "stream": stream}

    def _decode_json(
        self, data: Mapping[str, Any], turn: tw.adapters.ResolvedTurn
    ) -> tw.adapters.AssistantReply:
        if data.get("error") is not None:
            raise self.transport.error_from_payload(data)
        text = data["text"]
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {text!r}")
        return tw.adapters.AssistantReply(text=text)

    def _new_stream(self, turn: tw.adapters.ResolvedTurn) -> EchoStream:
        return EchoStream()

    def _handle_event(self, state: EchoStream, event: SSEEvent) -> list[tw.adapters.StreamEvent]:
        if event.event == "end":
            state.done = True
            return []
        data = json.loads(event.data)
        if "error" in data:
            raise self.transport.error_from_payload(data, default=StreamError)
        delta = data["delta"]
        state.parts.append(delta)
        return [tw.adapters.TextDelta(delta)]

    def _stream_reply(
        self, state: EchoStream, turn: tw.adapters.ResolvedTurn
    ) -> tw.adapters.AssistantReply:
        if not state.done:
            raise StreamError("the stream ended without `end`", provider=self.name)
        return tw.adapters.AssistantReply(text="".join(state.parts))


class TypedEcho(EchoProvider):
    def _describe_error(self, exc: Exception) -> str:
        return f"{type(exc).__name__}: {exc}"


class TwoPaths(EchoProvider):
    def _request_path(self, *, stream: bool) -> str:
        return "/v1/stream" if stream else "/v1/echo"


def sse(*events: tuple[str, object]) -> bytes:
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class Server:
    """A MockTransport that answers every request with the next scripted response."""

    def __init__(self) -> None:
        self.replies: list[httpx.Response] = []
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies.pop(0)

    def json(self, payload: object, status: int = 200) -> None:
        self.replies.append(httpx.Response(status, json=payload))

    def stream(self, body: bytes) -> None:
        self.replies.append(
            httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
        )


@pytest.fixture
def server() -> Server:
    return Server()


def make(server: Server, cls: type[EchoProvider] = EchoProvider, **options: Any) -> EchoProvider:
    options.setdefault("api_key", KEY)
    mock = httpx.MockTransport(server)
    return cls(
        http_client=httpx.Client(transport=mock),
        async_http_client=httpx.AsyncClient(transport=mock),
        retry=tw.adapters.RetryPolicy.none(),
        **options,
    )


@pytest.fixture
def session() -> tw.Session:
    return tw.Session().add_user("hi")


@pytest.fixture
def turn() -> tw.adapters.ResolvedTurn:
    return tw.resolve_turn(tw.Toolset("t", []))


def _stream(
    provider: EchoProvider, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> list[Any]:
    return list(provider.stream(session, turn))


# -- the request loop -----------------------------------------------------------------


def test_generate_posts_the_body_to_path_and_decodes(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"text": "hello"})
    with make(server) as provider:
        reply = provider.generate(session, turn)
    assert "hello" == reply.text
    [request] = server.requests
    assert "https://echo.invalid/v1/echo" == str(request.url)
    assert {"model": "echo-1", "n": 1, "stream": False} == json.loads(request.content)
    assert f"Bearer {KEY}" == request.headers["authorization"]


async def test_agenerate(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"text": "hello"})
    async with make(server) as provider:
        reply = await provider.agenerate(session, turn)
    assert "hello" == reply.text


def test_stream_yields_deltas_then_the_reply(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"delta": "he"}), ("m", {"delta": "llo"}), ("end", {})))
    events = _stream(make(server), session, turn)
    assert [tw.adapters.TextDelta("he"), tw.adapters.TextDelta("llo")] == events[:-1]
    assert tw.adapters.ReplyCompleted(tw.adapters.AssistantReply(text="hello")) == events[-1]
    assert json.loads(server.requests[0].content)["stream"] is True


async def test_astream_yields_deltas_then_the_reply(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"delta": "hi"}), ("end", {})))
    events = [e async for e in make(server).astream(session, turn)]
    assert [
        tw.adapters.TextDelta("hi"),
        tw.adapters.ReplyCompleted(tw.adapters.AssistantReply(text="hi")),
    ] == events


def test_events_after_the_end_marker_are_drained_not_fed(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"delta": "a"}), ("end", {}), ("m", "not an object")))
    events = _stream(make(server), session, turn)
    assert tw.adapters.AssistantReply(text="a") == events[-1].reply


async def test_async_events_after_the_end_marker_are_drained_not_fed(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("end", {}), ("m", {"no": "delta"})))
    events = [e async for e in make(server).astream(session, turn)]
    assert [tw.adapters.ReplyCompleted(tw.adapters.AssistantReply())] == events


def test_request_path_can_differ_for_streaming(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"text": "x"})
    server.stream(sse(("end", {})))
    provider = make(server, TwoPaths)
    provider.generate(session, turn)
    _stream(provider, session, turn)
    assert ["/v1/echo", "/v1/stream"] == [r.url.path for r in server.requests]


def test_a_provider_without_path_says_so(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    class NoPath(EchoProvider):
        path = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="NoPath must set path or override _request_path"):
        make(server, NoPath).generate(session, turn)


class _Recording:
    """An event iterator that records whether it was closed."""

    def __init__(self, events: list[SSEEvent]) -> None:
        self.events = iter(events)
        self.closed = False

    def __iter__(self) -> Iterator[SSEEvent]:
        return self

    def __next__(self) -> SSEEvent:
        return next(self.events)

    def close(self) -> None:
        self.closed = True

    def __aiter__(self) -> AsyncIterator[SSEEvent]:
        return self

    async def __anext__(self) -> SSEEvent:
        try:
            return next(self.events)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize("stop", ["early", "malformed", "cut short"])
def test_the_event_iterator_is_closed_however_the_stream_ends(
    monkeypatch: pytest.MonkeyPatch,
    server: Server,
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
    stop: str,
) -> None:
    sent = [SSEEvent("m", '{"delta": "a"}')]
    if stop == "malformed":
        sent.append(SSEEvent("m", "{"))
    events = _Recording(sent)
    monkeypatch.setattr(Transport, "stream_sse", lambda *a, **k: events)
    stream = make(server).stream(session, turn)
    if stop == "early":
        next(stream)
        stream.close()
    else:
        with pytest.raises(StreamError):
            list(stream)
    assert events.closed


async def test_the_async_event_iterator_is_closed(
    monkeypatch: pytest.MonkeyPatch,
    server: Server,
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
) -> None:
    events = _Recording([SSEEvent("m", "[]")])
    monkeypatch.setattr(Transport, "astream_sse", lambda *a, **k: events)
    with pytest.raises(StreamError, match="malformed stream event"):
        [e async for e in make(server).astream(session, turn)]
    assert events.closed


# -- configuration --------------------------------------------------------------------


def test_a_missing_key_is_reported_on_the_first_request_not_at_construction(
    monkeypatch: pytest.MonkeyPatch,
    server: Server,
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
) -> None:
    monkeypatch.delenv("ECHO_API_KEY", raising=False)
    provider = make(server, api_key=None)
    assert [] == provider.render_tools(turn)
    message = "no API key for echo: pass api_key=... or set the environment variable ECHO_API_KEY"
    with pytest.raises(AuthenticationError) as caught:
        provider.generate(session, turn)
    assert (message, "echo") == (caught.value.message, caught.value.provider)
    with pytest.raises(AuthenticationError, match="ECHO_API_KEY"):
        _stream(provider, session, turn)
    assert [] == server.requests


async def test_a_missing_key_is_reported_by_the_async_calls(
    monkeypatch: pytest.MonkeyPatch,
    server: Server,
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
) -> None:
    monkeypatch.delenv("ECHO_API_KEY", raising=False)
    provider = make(server, api_key=None)
    with pytest.raises(AuthenticationError):
        await provider.agenerate(session, turn)
    with pytest.raises(AuthenticationError):
        [e async for e in provider.astream(session, turn)]
    assert [] == server.requests


def test_the_missing_key_message_names_the_hint_and_every_variable(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    provider = make(server, api_key=None, key_env=(), key_hint="pass token=...")
    with pytest.raises(AuthenticationError, match=r"no API key for echo: pass token=\.\.\.$"):
        provider.generate(session, turn)
    provider = make(server, api_key=None, key_env=("ECHO_A_UNSET", "ECHO_B_UNSET"))
    with pytest.raises(AuthenticationError, match=r"variable ECHO_A_UNSET or ECHO_B_UNSET$"):
        provider.generate(session, turn)


def test_a_key_that_is_not_required_may_be_missing(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"text": "local"})
    provider = make(server, api_key=None, key_env=(), key_required=False)
    assert "local" == provider.generate(session, turn).text
    assert "authorization" not in server.requests[0].headers


def test_key_and_base_url_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    server: Server,
    session: tw.Session,
    turn: tw.adapters.ResolvedTurn,
) -> None:
    monkeypatch.setenv("ECHO_API_KEY", "env-key-1234")
    monkeypatch.setenv("ECHO_BASE_URL", "http://proxy.invalid/root/")
    server.json({"text": "x"})
    provider = make(server, api_key=None)
    assert "http://proxy.invalid/root" == provider.base_url
    provider.generate(session, turn)
    assert "http://proxy.invalid/root/v1/echo" == str(server.requests[0].url)
    assert "Bearer env-key-1234" == server.requests[0].headers["authorization"]


def test_an_explicit_base_url_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    monkeypatch.setenv("ECHO_BASE_URL", "http://proxy.invalid")
    assert "http://mine.invalid" == make(server, base_url="http://mine.invalid").base_url


def test_no_base_url_at_all_is_an_error(server: Server) -> None:
    class Nowhere(EchoProvider):
        default_base_url: ClassVar[str] = ""
        base_url_env: ClassVar[tuple[str, ...]] = ()

    with pytest.raises(ValueError, match=r"Nowhere needs base_url=\.\.\."):
        make(server, Nowhere)


def test_retry_must_be_a_retry_policy() -> None:
    with pytest.raises(TypeError, match="retry must be a toolwire RetryPolicy, got int"):
        EchoProvider(api_key=KEY, retry=3)  # type: ignore[arg-type]


def test_repr_masks_a_key_in_the_url(server: Server) -> None:
    provider = make(server, base_url="https://echo.invalid/?key=abcdefgh")
    assert "abcdefgh" not in repr(provider)
    assert repr(provider).startswith("<EchoProvider 'echo' model='echo-1' base_url=")
    assert isinstance(provider.transport, Transport)


def test_close_closes_the_clients_the_transport_created(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    provider = EchoProvider(api_key=KEY)
    with provider as entered:
        assert entered is provider
        client = provider.transport._sync_client()
    assert client.is_closed


async def test_aclose_closes_the_async_client() -> None:
    provider = EchoProvider(api_key=KEY)
    async with provider as entered:
        assert entered is provider
        client = provider.transport._aclient()
    assert client.is_closed


# -- malformed input ------------------------------------------------------------------


def test_a_malformed_body_is_a_provider_error_not_a_key_error(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"txet": "typo"})
    with pytest.raises(ProviderError) as caught:
        make(server).generate(session, turn)
    assert type(caught.value) is ProviderError
    assert "malformed response: 'text'" == caught.value.message
    assert isinstance(caught.value.__cause__, KeyError)


def test_the_key_is_masked_in_a_malformed_body_message(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"text": {"echo": KEY}})
    with pytest.raises(ProviderError) as caught:
        make(server).generate(session, turn)
    assert KEY not in str(caught.value)
    assert "malformed response: text must be a string, got {'echo': '****'}" == (
        caught.value.message
    )


def test_describe_error_words_the_cause(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({})
    with pytest.raises(ProviderError, match=r"malformed response: KeyError: 'text'$"):
        make(server, TypedEcho).generate(session, turn)


def test_an_error_object_in_a_200_body_is_mapped(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.json({"error": {"type": "overloaded_error", "message": f"busy, {KEY}"}})
    with pytest.raises(OverloadedError) as caught:
        make(server).generate(session, turn)
    assert "busy, ****" == caught.value.message
    assert KEY not in (caught.value.body or "")


def test_a_malformed_event_is_a_stream_error_quoting_the_event(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"delta": "a"}), ("m", {"detla": KEY + "x" * 300})))
    with pytest.raises(StreamError) as caught:
        _stream(make(server), session, turn)
    message = caught.value.message
    assert message.startswith("malformed stream event: 'delta' in '{\"detla\": \"****xxx")
    assert message.endswith("…'")
    assert KEY not in message
    assert isinstance(caught.value.__cause__, KeyError)


def test_event_data_that_is_not_json_is_a_stream_error(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(b"event: m\ndata: {oops\n\n")
    with pytest.raises(StreamError, match=r"malformed stream event: .* in '\{oops'$"):
        _stream(make(server), session, turn)


def test_an_error_event_keeps_its_own_type(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"error": {"type": "overloaded_error", "message": KEY}})))
    with pytest.raises(OverloadedError) as caught:
        _stream(make(server), session, turn)
    assert "****" == caught.value.message
    server.stream(sse(("m", {"error": {"message": "no idea"}})))
    with pytest.raises(StreamError, match="no idea"):
        _stream(make(server), session, turn)


def test_a_stream_cut_short_raises_the_adapters_own_stream_error(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    server.stream(sse(("m", {"delta": "a"})))
    with pytest.raises(StreamError, match=r"the stream ended without `end`$"):
        _stream(make(server), session, turn)


def test_a_shape_error_while_finishing_is_a_malformed_stream_error(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    class BadFinish(EchoProvider):
        def _stream_reply(
            self, state: EchoStream, turn: tw.adapters.ResolvedTurn
        ) -> tw.adapters.AssistantReply:
            raise IndexError(f"part {KEY} missing")

    server.stream(sse(("end", {})))
    with pytest.raises(StreamError, match=r"malformed stream event: part \*\*\*\* missing$"):
        _stream(make(server, BadFinish), session, turn)


def test_other_exceptions_are_not_disguised(
    server: Server, session: tw.Session, turn: tw.adapters.ResolvedTurn
) -> None:
    class Buggy(EchoProvider):
        def _decode_json(
            self, data: Mapping[str, Any], turn: tw.adapters.ResolvedTurn
        ) -> tw.adapters.AssistantReply:
            raise RuntimeError("a bug, not a bad reply")

    server.json({"text": "x"})
    with pytest.raises(RuntimeError, match="a bug"):
        make(server, Buggy).generate(session, turn)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["m", "end", "error"]),
            st.one_of(
                st.text(max_size=30),
                st.recursive(
                    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.dictionaries(
                            st.sampled_from(["delta", "error", "x"]), inner, max_size=3
                        )
                    ),
                    max_leaves=8,
                ).map(json.dumps),
            ),
        ),
        max_size=6,
    )
)
def test_garbage_events_raise_only_provider_errors(events: list[tuple[str, str]]) -> None:
    provider = EchoProvider(api_key=KEY)
    turn = tw.resolve_turn(tw.Toolset("t", []))
    state = provider._new_stream(turn)
    with contextlib.suppress(ProviderError):
        for name, data in events:
            if not provider._stream_done(state):
                provider._feed(state, SSEEvent(name, data))
        provider._finish_stream(state, turn)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["text", "error", "x"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
            max_leaves=8,
        ),
        max_size=3,
    )
)
def test_garbage_bodies_raise_only_provider_errors(body: dict[str, Any]) -> None:
    provider = EchoProvider(api_key=KEY)
    turn = tw.resolve_turn(tw.Toolset("t", []))
    with contextlib.suppress(ProviderError):
        provider._decode_body(body, turn)


# -- helpers and the transport's scrubbing ---------------------------------------------


def test_malformed_names_the_kind() -> None:
    assert "malformed response: x" == malformed("p", "x", stream=False).message
    error = malformed("p", "y", stream=True)
    assert isinstance(error, StreamError)
    assert ("malformed stream event: y", "p") == (error.message, error.provider)


def test_transport_scrub_masks_the_key_and_its_url_quoted_form() -> None:
    key = "ab/cd+ef=="
    transport = Transport("p", "https://x.invalid", api_key=ApiKey(key))
    assert "k=**** q=****" == transport.scrub(f"k={key} q=ab%2Fcd%2Bef%3D%3D")


def test_transport_scrub_leaves_placeholder_keys_alone() -> None:
    assert "x marks the spot" == Transport("p", "https://x.invalid", api_key="x").scrub(
        "x marks the spot"
    )
    assert "nothing" == Transport("p", "https://x.invalid").scrub("nothing")


def test_transport_error_from_payload() -> None:
    transport = Transport("p", "https://x.invalid", api_key=KEY)
    error = transport.error_from_payload({"error": {"message": f"bad {KEY}"}})
    assert (ProviderError, "bad ****", "p") == (type(error), error.message, error.provider)
    assert KEY not in (error.body or "")
    stream_error = transport.error_from_payload({"what": 1}, default=StreamError)
    assert type(stream_error) is StreamError


def test_http_provider_is_exported_lazily() -> None:
    assert tw.adapters.HttpProvider is HttpProvider
    code = (
        "import sys, toolwire; "
        "print([m for m in ('httpx', 'toolwire._adapter') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == out.stdout.strip()


def test_cached_wire_caches_only_the_tools_own_description() -> None:
    from toolwire import tool_fn
    from toolwire._adapter import cached_wire

    @tool_fn
    def ping() -> str:
        """Ping."""
        return "pong"

    built: list[str] = []

    def build(text: str) -> dict[str, Any]:
        built.append(text)
        return {"description": text}

    first = cached_wire(ping, "Ping.", "k", lambda: build("Ping."), compiler=_COMPILER)
    assert first is cached_wire(ping, "Ping.", "k", lambda: build("Ping."), compiler=_COMPILER)
    for user in ("ada", "bob", "ada"):
        cached_wire(
            ping,
            f"Ping for {user}.",
            "k",
            lambda u=user: build(f"Ping for {u}."),
            compiler=_COMPILER,
        )
    assert ["Ping.", "Ping for ada.", "Ping for bob.", "Ping for ada."] == built
    assert 1 == len([k for k in ping.cache if isinstance(k, tuple) and k[0] == "k"])


def test_cached_wire_keeps_one_rendering_per_compiler() -> None:
    from toolwire import tool_fn
    from toolwire._adapter import cached_wire

    @tool_fn
    def pong() -> str:
        """Pong."""
        return "ping"

    other = SchemaCompiler("other", _COMPILER.compile)
    assert {"v": 1} == cached_wire(pong, "Pong.", "k", lambda: {"v": 1}, compiler=_COMPILER)
    assert {"v": 2} == cached_wire(pong, "Pong.", "k", lambda: {"v": 2}, compiler=other)
    assert {"v": 1} == cached_wire(pong, "Pong.", "k", lambda: {"v": 3}, compiler=_COMPILER)
