"""What the client offers servers beyond tool calls: sampling and roots.

**Sampling** is off unless the application turns it on with :func:`enable_sampling`,
naming the provider that answers. Each ``sampling/createMessage`` is then a call of a
``mcp_sampling`` tool (source ``mcp:SERVER``) through an executor on the organisation's
policies: a policy can deny it (by name or by server), the audit log records it, and
its arguments carry what the server asked (the messages, the token budget). A server
gets at most ``max_requests`` answers and may ask for at most ``max_tokens``; a request
for tools, or with content that is not text, is refused.

**Roots** are the directories the application tells servers they may work in:
:func:`set_roots` (paths or ``file://`` URIs). Both are read when a connection opens:
set them before the first use of a server.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types

from toolwire.exceptions import UsageError

__all__ = ["disable_sampling", "enable_sampling", "roots", "sampling_enabled", "set_roots"]

logger = logging.getLogger("toolwire.mcp")

SAMPLING_TOOL = "mcp_sampling"
_MAX_SAMPLED_CHARS = 200_000  # of a request's messages: a server cannot send a novel


@attrs.define
class _Sampling:
    provider: Any
    max_requests: int
    max_tokens: int
    servers: frozenset[str] | None
    plugins: Any
    used: dict[str, int] = attrs.field(factory=dict)
    lock: threading.Lock = attrs.field(factory=threading.Lock)


_STATE: list[_Sampling | None] = [None]
_ROOTS: list[tuple[types.Root, ...]] = [()]


def enable_sampling(
    provider: Any,
    *,
    max_requests: int = 20,
    max_tokens: int = 4096,
    servers: Iterable[str] | None = None,
    plugins: Any = None,
) -> None:
    """Answer MCP servers' sampling requests with ``provider`` (a toolwire ``Provider``),
    under the policies of ``plugins`` (the default host). ``servers``: only these (by
    name); ``max_requests``: answers per server for this process; ``max_tokens``: the
    largest budget a request may ask for."""
    from toolwire.adapters import Provider

    if not isinstance(provider, Provider):
        raise UsageError(
            f"enable_sampling needs a toolwire Provider, got {type(provider).__name__}"
        )
    for value, what in ((max_requests, "max_requests"), (max_tokens, "max_tokens")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{what} must be a positive int, got {value!r}")
    names = None
    if servers is not None:
        names = frozenset(servers)
        if not all(isinstance(n, str) and n for n in names):
            raise UsageError("servers must be server names (non-empty strings)")
    _STATE[0] = _Sampling(provider, max_requests, max_tokens, names, plugins)


def disable_sampling() -> None:
    """Decline every sampling request again (the default)."""
    _STATE[0] = None


def sampling_enabled(server: str) -> bool:
    state = _STATE[0]
    return state is not None and (state.servers is None or server in state.servers)


_RELAY = [False]


def relay_sampling(on: bool) -> bool:
    """A gateway passes its upstream servers' sampling to its own clients (each request
    under the gateway's policies): the capability is declared to the servers it opens.
    True when this changed it (connections already open declared the old setting)."""
    changed = _RELAY[0] != on
    _RELAY[0] = on
    return changed


def offers_sampling(server: str) -> bool:
    """Whether the sampling capability is declared to ``server`` (when it is connected)."""
    return sampling_enabled(server) or _RELAY[0]


def _refused(text: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=text)


def _session(params: types.CreateMessageRequestParams) -> tuple[Any, str] | str:
    """The request as a toolwire session, and the text the policy sees; or why not."""
    from toolwire import Session

    session = Session()
    if params.system_prompt:
        session.add_system(params.system_prompt)
    shown: list[dict[str, str]] = []
    for message in params.messages:
        content = message.content
        blocks = content if isinstance(content, list) else [content]
        if not all(isinstance(b, types.TextContent) for b in blocks):
            return "only text can be sampled (no images, audio or tool use)"
        text = "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))
        if message.role == "assistant":
            session.add_assistant(text)
        else:
            session.add_user(text)
        shown.append({"role": message.role, "text": text})
    arguments = json.dumps(
        {"max_tokens": params.max_tokens, "system": params.system_prompt, "messages": shown},
        ensure_ascii=False,
    )
    if len(arguments) > _MAX_SAMPLED_CHARS:
        return f"the request is over {_MAX_SAMPLED_CHARS:,} characters"
    return session, arguments


async def answer_sampling(
    server: str, params: types.CreateMessageRequestParams, link: Any = None
) -> types.CreateMessageResult | types.ErrorData:
    """A server's ``sampling/createMessage``, answered as :func:`enable_sampling` says;
    without it, in a gateway, by the model of the client whose call it is (``link``)."""
    state = _STATE[0]
    enabled = state is not None and (state.servers is None or server in state.servers)
    if not enabled and link is None:
        return _refused("sampling is not enabled for this server")
    if params.tools or params.tool_choice:
        return _refused("sampling with tools is not supported")
    if state is None or not enabled:
        made = _session(params)
        if isinstance(made, str):
            return _refused(made)
        return await _relayed(link, server, params, made[1])
    if params.max_tokens > state.max_tokens:
        return _refused(
            f"maxTokens {params.max_tokens} is over this client's limit of {state.max_tokens}"
        )
    made = _session(params)
    if isinstance(made, str):
        return _refused(made)
    session, arguments = made
    with state.lock:
        used = state.used.get(server, 0)
        if used >= state.max_requests:
            return _refused(f"this client answers at most {state.max_requests} sampling requests")
        state.used[server] = used + 1
    return await _through_policies(state, server, session, arguments)


async def _relayed(
    link: Any, server: str, params: types.CreateMessageRequestParams, arguments: str
) -> types.CreateMessageResult | types.ErrorData:
    """Through the gateway's policies, then to its client's model, the answer as given."""
    answered: list[types.CreateMessageResult] = []

    async def via_client() -> str:
        result = await link.sample(params)
        answered.append(result)
        content = result.content
        blocks = content if isinstance(content, list) else [content]
        return "".join(b.text for b in blocks if isinstance(b, types.TextContent))

    decided = await _decided(link.plugins, server, arguments, via_client)
    if isinstance(decided, types.ErrorData):
        return decided
    given = answered[0]
    # The text as the result hooks left it (a policy may redact what goes back).
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=decided),
        model=given.model,
        stop_reason=given.stop_reason,
    )


async def _decided(
    plugins: Any, server: str, arguments: str, generate: Callable[[], Awaitable[str]]
) -> types.ErrorData | str:
    """Run ``generate`` as a call of the ``mcp_sampling`` tool (source ``mcp:SERVER``)
    through the policies of ``plugins``: its text as the result hooks left it, or why it
    did not run."""
    import toolwire as tw

    async def mcp_sampling(**_: Any) -> str:
        return await generate()

    tool = tw.raw_tool(
        SAMPLING_TOOL,
        f"The MCP server `{server}` asks this application's model for a completion.",
        {"type": "object"},
        mcp_sampling,
        metadata=tw.ToolMetadata(
            effect=tw.ToolEffect.READ_ONLY,
            capabilities=frozenset({tw.Capability.NETWORK}),
            source=f"mcp:{server}",
        ),
    )
    executor = tw.Executor(tools=tw.Toolset("sampling", [tool]), plugins=plugins)
    try:
        result = await executor.aexecute(tw.ToolCall(f"sample_{server}", SAMPLING_TOOL, arguments))
    finally:
        executor.close()
    if result.is_error:
        logger.info("MCP server `%s`: sampling refused: %s", server, result.content[:200])
        return _refused(result.content[:500] or "sampling failed")
    return result.content


async def _through_policies(
    state: _Sampling, server: str, session: Any, arguments: str
) -> types.CreateMessageResult | types.ErrorData:
    import toolwire as tw

    provider = state.provider
    empty = tw.resolve_turn(tw.Toolset("sampling"))
    answered: list[Any] = []

    async def generate() -> str:
        reply = await provider.agenerate(session, empty)
        answered.append(reply)
        return str(reply.text or "")

    decided = await _decided(state.plugins, server, arguments, generate)
    if isinstance(decided, types.ErrorData):
        return decided
    reply = answered[0]
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=decided),
        model=reply.model or getattr(provider, "model", None) or type(provider).__name__,
        stop_reason="maxTokens" if reply.finish_reason == "length" else "endTurn",
    )


# -- roots ------------------------------------------------------------------------------------


def set_roots(paths: Iterable[str | Path]) -> None:
    """Tell MCP servers they may work in these directories (paths or ``file://`` URIs);
    an empty list offers none (the default). A server whose ``ServerSpec.roots`` (its
    config's ``roots``) says its own is told those instead."""
    _ROOTS[0] = roots_of(paths)


def roots_of(paths: Iterable[str | Path]) -> tuple[types.Root, ...]:
    """Paths (made absolute now) or ``file://`` URIs as the roots a server is told."""
    if isinstance(paths, (str, Path)):
        raise UsageError("roots are a list of paths or file:// URIs, not one")
    made = []
    for item in paths:
        if isinstance(item, Path) or (isinstance(item, str) and not item.startswith("file://")):
            path = Path(item).expanduser().resolve()
            uri, name = path.as_uri(), path.name or str(path)
        elif isinstance(item, str):
            uri, name = item, item.rstrip("/").rsplit("/", 1)[-1] or item
        else:
            raise UsageError(f"a root is a path or a file:// URI, got {type(item).__name__}")
        made.append(types.Root(uri=uri, name=name))
    return tuple(made)


def roots(spec: Any = None) -> tuple[types.Root, ...]:
    """The roots a server is told: ``spec.roots`` when its spec names its own, else the
    process's (:func:`set_roots`)."""
    own = getattr(spec, "roots", None)
    if own is not None:
        return roots_of(own)
    return _ROOTS[0]
