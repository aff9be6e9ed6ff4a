"""What the client offers servers (#26): sampling, off by default and under the policy
when on, and roots; against the real test server, which asks for both."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

import toolwire as tw
from toolwire.providers.test import TestProvider
from toolwire_mcp import (
    ServerSpec,
    close_all,
    disable_sampling,
    enable_sampling,
    mcp_toolset,
    roots,
    set_roots,
)


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    disable_sampling()
    set_roots([])


def _ask(spec: ServerSpec, **arguments: Any) -> tw.ToolResult:
    executor = tw.Executor(tools=mcp_toolset(spec.name, spec), plugins=False)
    try:
        return executor.execute(tw.ToolCall("c1", "ask_model", json.dumps(arguments)))
    finally:
        executor.close()


def _quiet_host() -> tw.PluginHost:
    return tw.PluginHost(autoload=False)


def test_sampling_is_off_by_default(stdio_spec: Callable[..., ServerSpec]) -> None:
    result = _ask(stdio_spec("off"), q="secret plans?")
    assert result.is_error
    assert "model said" not in result.content


def test_an_enabled_provider_answers_with_the_servers_messages(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    provider = TestProvider(script=[{"text": "forty-two"}])
    enable_sampling(provider, plugins=_quiet_host())
    result = _ask(stdio_spec("on"), q="the meaning?")
    assert (False, "model said: forty-two") == (result.is_error, result.content)
    [(session, turn)] = provider.requests
    assert [("system", "Be brief."), ("user", "the meaning?")] == [
        (m.role, m.text) for m in session.messages
    ]
    assert () == turn.tools  # the model gets no tools


def test_a_budget_over_the_limit_is_refused_before_the_provider_is_asked(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    provider = TestProvider(script=[{"text": "no"}])
    enable_sampling(provider, max_tokens=100, plugins=_quiet_host())
    result = _ask(stdio_spec("limited"), max_tokens=500)
    assert result.is_error
    assert "maxTokens 500 is over this client's limit of 100" in result.content
    assert [] == provider.requests


def test_a_server_not_named_is_not_offered_sampling(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    from toolwire_mcp import sampling_enabled

    provider = TestProvider(script=[{"text": "no"}])
    enable_sampling(provider, servers=["someone-else"], plugins=_quiet_host())
    assert not sampling_enabled("other")
    assert sampling_enabled("someone-else")
    result = _ask(stdio_spec("other"))
    assert result.is_error  # no sampling capability declared to it: its request fails
    assert "model said" not in result.content
    assert [] == provider.requests


def test_a_server_gets_at_most_max_requests_answers(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    provider = TestProvider(script=[{"text": "one"}, {"text": "two"}])
    enable_sampling(provider, max_requests=1, plugins=_quiet_host())
    spec = stdio_spec("counted")
    assert "model said: one" == _ask(spec).content
    second = _ask(spec)
    assert second.is_error
    assert "at most 1 sampling requests" in second.content
    assert 1 == len(provider.requests)


def test_a_policy_decides_each_sampling_request(stdio_spec: Callable[..., ServerSpec]) -> None:
    seen: list[tuple[str, str | None, str]] = []

    class NoSampling:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            seen.append((call.name, call.tool.metadata.source, json.dumps(call.input)))
            return tw.Reject("no model for servers")

    host = _quiet_host()
    host.register(NoSampling(), "corp", kind="policy")
    provider = TestProvider(script=[{"text": "never"}])
    enable_sampling(provider, plugins=host)
    result = _ask(stdio_spec("policed"), q="leak it")
    assert result.is_error
    assert "no model for servers" in result.content
    [(name, source, arguments)] = seen
    assert ("mcp_sampling", "mcp:policed") == (name, source)
    assert "leak it" in arguments  # what it asked
    assert '"max_tokens": 50' in arguments
    assert [] == provider.requests


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (
            types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user",
                        content=types.ImageContent(
                            type="image", data="aGk=", mime_type="image/png"
                        ),
                    )
                ],
                max_tokens=10,
            ),
            "only text can be sampled",
        ),
        (
            types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text="x" * 300_000)
                    )
                ],
                max_tokens=10,
            ),
            "over 200,000 characters",
        ),
    ],
)
def test_malformed_sampling_requests_are_refused(
    params: types.CreateMessageRequestParams, said: str
) -> None:
    from toolwire_mcp.client._client_features import answer_sampling

    provider = TestProvider(script=[{"text": "no"}])
    enable_sampling(provider, plugins=_quiet_host())
    answer = anyio.run(answer_sampling, "s", params)
    assert isinstance(answer, types.ErrorData)
    assert said in answer.message
    assert [] == provider.requests


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda: enable_sampling("openai"), "needs a toolwire Provider, got str"),
        (lambda: enable_sampling(TestProvider(), max_requests=0), "max_requests must be"),
        (lambda: enable_sampling(TestProvider(), max_tokens=True), "max_tokens must be"),
        (lambda: enable_sampling(TestProvider(), servers=[""]), "servers must be"),
        (lambda: set_roots([3]), "a root is a path or a file:// URI"),
    ],
)
def test_bad_settings_are_refused(call: Callable[[], Any], said: str) -> None:
    with pytest.raises(tw.UsageError, match=said):
        call()


def test_roots_are_offered_as_the_application_sets_them(tmp_path: Path) -> None:
    from toolwire_mcp.client._connection import Connection

    assert () == roots()  # none by default
    set_roots([tmp_path, "file:///srv/data/"])
    assert [(tmp_path.as_uri(), tmp_path.name), ("file:///srv/data/", "data")] == [
        (str(r.uri), r.name) for r in roots()
    ]
    conn = Connection(ServerSpec("r", command="true"))
    conn._roots = roots(conn.spec)  # as the connection reads them when it opens
    listed = anyio.run(conn._on_roots, None)
    assert [tmp_path.as_uri(), "file:///srv/data/"] == [str(r.uri) for r in listed.roots]


def test_a_server_may_have_roots_of_its_own_beside_the_processs(
    stdio_spec: Callable[..., ServerSpec], tmp_path: Path
) -> None:
    # #48: roots were the process's only, so one server's roots were every server's
    # (server-filesystem replaces its directories with the client's roots).
    import attrs

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    set_roots([tmp_path / "a"])
    enable_sampling(TestProvider(script=[{"text": "x"}] * 3), plugins=_quiet_host())
    own = attrs.evolve(stdio_spec("own"), roots=[str(tmp_path / "b"), "file:///srv/"])
    shared = stdio_spec("shared")
    nothing = attrs.evolve(stdio_spec("nothing"), roots=())
    said = [_ask(spec, roots=True) for spec in (own, shared, nothing)]
    assert f"model said: x ['{(tmp_path / 'b').as_uri()}', 'file:///srv/']" == said[0].content
    assert f"model said: x ['{(tmp_path / 'a').as_uri()}']" == said[1].content
    assert said[2].is_error  # offered none: no roots capability, the server's ask fails
    # From the config file, by its JSON name; a malformed one says so.
    from toolwire_mcp import ConfigError
    from toolwire_mcp._config import spec_from_entry

    entry = {"command": "srv", "roots": ["/data", "file:///x/"]}
    assert ("/data", "file:///x/") == spec_from_entry("s", entry, "f.json").roots
    with pytest.raises(ConfigError, match="roots must be a list of strings"):
        spec_from_entry("s", {"command": "srv", "roots": "/data"}, "f.json")
    with pytest.raises(ConfigError, match="not one"):
        ServerSpec("s", command="srv", roots="/data")  # type: ignore[arg-type]


# -- the legacy HTTP+SSE transport -----------------------------------------------------------

SSE_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("old")


@server.tool()
def shout(text: str) -> str:
    return text.upper()


server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
"""


def test_a_server_on_the_legacy_sse_transport_works(tmp_path: Path) -> None:
    import subprocess
    import sys

    from _mcp_support import free_port, wait_for_port

    from toolwire_mcp import load_config

    (tmp_path / "old_server.py").write_text(SSE_SERVER)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "old_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/sse"
        assert "sse" == ServerSpec("old", url=url).transport  # told by the path
        ts = mcp_toolset("old", url)
        result = tw.Executor(tools=ts, plugins=False).execute(
            tw.ToolCall("c1", "shout", '{"text": "hi"}')
        )
        # MCPServer gives a str result an output schema: the model reads the server's text,
        # the structured content is the call's typed output (#44).
        assert (False, "HI", {"result": "HI"}) == (
            result.is_error,
            result.content,
            result.structured,
        )
    finally:
        close_all()  # before the server goes: no broken stream to report
        proc.terminate()
        proc.wait(10)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"url": "http://h/x", "type": "sse"}}}))
    assert "sse" == load_config([config])["a"].transport
    config.write_text(json.dumps({"mcpServers": {"a": {"url": "http://h/sse", "type": "http"}}}))
    assert "http" == load_config([config])["a"].transport  # said: not guessed
