"""What a tool the gateway serves may use of the client whose call it is
(:class:`MCPCallContext`: logs, progress, questions, sampling), and the link through
which an upstream server's questions reach that client."""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import (
    Mapping,
    Sequence,
)
from typing import Any, Literal

import attrs
import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from toolwire import (
    PluginHost,
)
from toolwire_mcp.client._connection import MCPCallError
from toolwire_mcp.gateway._approve import (
    can_elicit,
)
from toolwire_mcp.gateway._catalogue import connection_of
from toolwire_mcp.gateway._rounds import CALL_ROUNDS
from toolwire_mcp.gateway._served_tasks import TASK_OFFER

__all__ = [
    "ELICIT_TIMEOUT",
    "LEVELS",
    "_SESSION_LEVELS",
    "Elicited",
    "MCPCallContext",
    "_ClientLink",
    "_elicited",
]

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: Each client session's logging/setLevel (protocols before 2026-07-28; from 2026-07-28
#: each request opts in with its own level, and the SDK filters).
_SESSION_LEVELS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
#: Seconds the client has to answer a request the gateway sends it during a call (an
#: approval, a tool's elicitation or sampling).
ELICIT_TIMEOUT = 120.0


class MCPCallContext:
    """What a tool served by the gateway can send its caller while it runs.

    Declare it as an injected parameter named ``mcp`` (``@tool_fn(injected=["mcp"])``):
    the gateway passes one per call; the application's own loops pass nothing, so give
    the parameter a default of None to run the tool elsewhere too. Every method is async
    (a sync tool cannot wait for the network). ``log`` and ``progress`` never raise: a
    client that is gone, or did not ask for logs or progress, is not the tool's failure.
    ``elicit`` and ``sample`` ask the client something and wait for the answer; they
    raise when the client cannot be asked. ``continue_as_task`` answers a client that
    takes tasks with the call's task, and the call goes on in it.
    """

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    async def log(self, message: Any, level: str = "info", logger: str | None = None) -> None:
        """Send a log message (``notifications/message``) at ``level``, if the client's
        level lets it through."""
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
        session = self._ctx.session
        try:
            wanted = _SESSION_LEVELS.get(connection_of(session))
        except TypeError:
            wanted = None
        if wanted is not None and LEVELS.index(level) < LEVELS.index(wanted):
            return
        with warnings.catch_warnings():
            # Logging is deprecated from 2026-07-28 on (still in the protocol, and what
            # earlier clients use): the call is made on purpose. No await in this block.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = session.send_log_message(
                level, message, logger=logger, related_request_id=self._ctx.request_id
            )
        with contextlib.suppress(Exception):
            await sending

    async def close_stream(self) -> None:
        """Close this call's SSE stream now; the client reconnects and resumes it (the
        result comes on the resumed stream). For a long call over a connection that
        proxies cut idle streams (SEP-1699). Nothing happens where the transport cannot
        resume (stdio, clients before 2025-11-25)."""
        close = getattr(self._ctx, "close_sse_stream", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()

    async def continue_as_task(self, message: str = "working") -> bool:
        """Go on as a task: the rest of this call may take long, so a client that takes
        tasks (it declared the 2026-07-28 tasks extension on the call) is answered now with
        the call's task, ``message`` its status message, and the call goes on in it (its
        result the task's). True when the call is a task now (or was already); False when
        it goes on as an ordinary call: the client takes no tasks, the gateway answers no
        call of this tool with one (``approval_wait=0``, and the tool neither task-only
        nor long-running), or the principal has as many under way as it may."""
        if not isinstance(message, str):
            raise TypeError("continue_as_task(message): the status message is a string")
        offer = TASK_OFFER.get()
        return offer is not None and offer.take(message)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress (``notifications/progress``), when the call asked for it; a
        call answered as a task says it in the task's status message instead."""
        offer = TASK_OFFER.get()
        if offer is not None and message is not None and offer.says(message):
            return
        with contextlib.suppress(Exception):  # a no-op when the caller asked for none
            await self._ctx.session.report_progress(progress, total, message)

    async def elicit(
        self,
        message: str,
        schema: Mapping[str, Any],
        *,
        timeout: float = ELICIT_TIMEOUT,
        before_task: bool = False,
    ) -> Elicited:
        """Ask the client's user for input (``elicitation/create``, form mode): ``schema``
        is the answer's JSON Schema, a flat object of strings, numbers, booleans and enums
        (defaults allowed). The answer comes back as it was given: ``action`` is
        ``"accept"`` (with ``content``), ``"decline"`` or ``"cancel"``; no answer within
        ``timeout`` seconds is ``"cancel"``.

        On a 2026-07-28 request (no back-channel), a client that takes tasks gets the
        call as a task the moment it asks, the question as the task's input request;
        ``before_task=True`` asks in a round of the call instead (its result asks, the
        client calls again with the answer, the tool runs again up to here: ask before
        you act), for a tool that gathers its input first and then goes on as a task
        (:meth:`continue_as_task`). A call that is a task already asks through it.

        Raises :class:`MCPCallError` when the client cannot ask (it declared no
        elicitation capability, or the connection has no back-channel during a call):
        the call fails with that reason instead of going on without the answer.
        """
        import anyio

        if not isinstance(message, str) or not isinstance(schema, Mapping):
            raise TypeError("elicit(message, schema): a string and a JSON Schema mapping")
        if not can_elicit(self._ctx):
            raise _cannot("ask its user for input (it declared no elicitation capability)")
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
        )
        offer = TASK_OFFER.get()
        if (
            offer is not None
            and offer.task is None
            and not before_task
            and not self._ctx.session.can_send_request
        ):
            # No back-channel for the question, and the client takes tasks: the call
            # becomes one, so the question can go as its input request.
            offer.take("waiting for an answer from its user")
        if offer is not None and offer.task is not None:
            # A call answered as a task asks through the task: an input request its
            # client answers with tasks/update (SEP-2663).
            got = await offer.ask(request.model_dump(by_alias=True, mode="json"), timeout)
            return _elicited(got)
        if not self._ctx.session.can_send_request:
            rounds = CALL_ROUNDS.get()
            if rounds is None:
                raise _cannot("ask its user during a call over this connection")
            # Asked in the call's result: the client calls again with the answer, and the
            # call runs again from its start up to here (_rounds).
            got = await rounds.ask(
                request.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
            dump = getattr(got, "model_dump", None)
            return _elicited(dump(by_alias=True, mode="json") if callable(dump) else got)
        try:
            with anyio.fail_after(timeout):
                answer = await self._ctx.session.send_request(
                    request, types.ElicitResult, metadata=self._related()
                )
        except TimeoutError:
            return Elicited("cancel")
        return Elicited(answer.action, dict(answer.content) if answer.content else None)

    async def sample(
        self,
        prompt: str | Sequence[Any],
        *,
        max_tokens: int,
        system: str | None = None,
        temperature: float | None = None,
        timeout: float = ELICIT_TIMEOUT,
    ) -> str:
        """Ask the client's model for a completion (``sampling/createMessage``) and return
        its text. ``prompt`` is the user's text, or a list of the SDK's
        ``SamplingMessage``. The client decides what runs (its user may review it, its
        policy limits it); a refusal, or no answer within ``timeout`` seconds, raises
        :class:`MCPCallError`, as does a client without the sampling capability."""
        import anyio

        caps = getattr(self._ctx.session, "client_capabilities", None)
        if getattr(caps, "sampling", None) is None:
            raise _cannot("sample its model (it declared no sampling capability)")
        if not self._ctx.session.can_send_request:
            raise _cannot("sample its model during a call over this connection")
        messages: list[types.SamplingMessage]
        if isinstance(prompt, str):
            messages = [
                types.SamplingMessage(
                    role="user", content=types.TextContent(type="text", text=prompt)
                )
            ]
        else:
            messages = [types.SamplingMessage.model_validate(m) for m in prompt]
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=messages,
                max_tokens=max_tokens,
                system_prompt=system,
                temperature=temperature,
            )
        )
        try:
            with anyio.fail_after(timeout):
                answer = await self._ctx.session.send_request(
                    request, types.CreateMessageResult, metadata=self._related()
                )
        except TimeoutError:
            raise _cannot(f"answer the sampling request within {timeout:g} s") from None
        except MCPError as exc:
            raise MCPCallError(f"the MCP client refused to sample: {exc.error.message}") from None
        content = answer.content
        blocks = content if isinstance(content, list) else [content]
        return "".join(b.text for b in blocks if isinstance(b, types.TextContent))

    async def ask(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """An upstream server's question, passed on to this client: ``(action, content)``."""
        answer = await self.elicit(message, schema)
        return answer.action, answer.content

    async def sample_request(
        self, params: types.CreateMessageRequestParams, timeout: float = ELICIT_TIMEOUT
    ) -> types.CreateMessageResult:
        """Send an upstream server's sampling request on to this client, as it is."""
        import anyio

        caps = getattr(self._ctx.session, "client_capabilities", None)
        if getattr(caps, "sampling", None) is None:
            raise _cannot("sample its model (it declared no sampling capability)")
        if not self._ctx.session.can_send_request:
            raise _cannot("sample its model during a call over this connection")
        try:
            with anyio.fail_after(timeout):
                answer: types.CreateMessageResult = await self._ctx.session.send_request(
                    types.CreateMessageRequest(params=params),
                    types.CreateMessageResult,
                    metadata=self._related(),
                )
        except TimeoutError:
            raise _cannot(f"answer the sampling request within {timeout:g} s") from None
        except MCPError as exc:
            raise MCPCallError(f"the MCP client refused to sample: {exc.error.message}") from None
        return answer

    def _related(self) -> Any:
        from mcp.shared.message import ServerMessageMetadata

        return ServerMessageMetadata(related_request_id=getattr(self._ctx, "request_id", None))


class _ClientLink:
    """What an upstream server may ask of the gateway's client during its call."""

    __slots__ = ("_caller", "plugins")

    def __init__(self, caller: MCPCallContext, plugins: PluginHost) -> None:
        self._caller = caller
        self.plugins = plugins

    async def ask(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        return await self._caller.ask(message, schema)

    async def sample(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return await self._caller.sample_request(params)


@attrs.frozen
class Elicited:
    """A user's answer to :meth:`MCPCallContext.elicit`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


def _cannot(what: str) -> MCPCallError:
    return MCPCallError(f"the MCP client cannot {what}")


def _elicited(answer: Any) -> Elicited:
    """A client's answer to a question asked through a task (a JSON object, unchecked):
    what ``elicit`` returns; anything else is ``cancel``."""
    if not isinstance(answer, Mapping) or answer.get("action") not in ("accept", "decline"):
        return Elicited("cancel")
    content = answer.get("content")
    if answer["action"] == "accept" and isinstance(content, Mapping):
        return Elicited("accept", dict(content))
    return Elicited(answer["action"])
