"""Any toolwire toolset served over MCP: ``serve_mcp`` and ``toolwire mcp serve``.

What is served is the assembled toolset: the application's tools, the installed tool
packs and the configured MCP servers, so one toolwire process can front many MCP
servers under one name space. Every ``tools/call`` goes the way a ``toolwire call``
goes: the organisation's policies and the decision hooks, approval (a mutating or
destructive call runs when ``approve`` is set or the client's user says yes through MCP
elicitation; otherwise it is denied; a policy decides before either), the
executor (validation, timeouts, retries, output validation) and the result hooks (the
audit log). A rejection comes back as an MCP tool error carrying the reason.
``tools/list`` applies availability and description hooks, and maps each tool's metadata
to annotations and its output schema to ``outputSchema``.

Streamable HTTP binds 127.0.0.1 unless told otherwise, takes an optional bearer token
(read from an environment variable) and bounds each request's size.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import os
import secrets
import signal
import warnings
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any, Literal

import attrs
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from toolwire import (
    Allow,
    ApprovalGate,
    ApprovalRequest,
    Availability,
    Defer,
    Deny,
    Executor,
    HookContext,
    NeedsTools,
    NotAvailable,
    PluginHost,
    Session,
    ToolCall,
    ToolResultsMessage,
    Toolset,
    UnknownTool,
    get_host,
    resolve_turn,
)
from toolwire.adapters import AssistantReply, decode_reply
from toolwire.exceptions import UsageError
from toolwire.media import Text
from toolwire_mcp._content import content_block
from toolwire_mcp.client._client_features import relay_sampling
from toolwire_mcp.client._connection import RESOURCE_LISTENERS, MCPCallError
from toolwire_mcp.client._progress import CALL_ASKER, CALL_PROGRESS
from toolwire_mcp.client._registry import close_all
from toolwire_mcp.client._toolset import RAW_READS, on_toolsets_changed
from toolwire_mcp.gateway._approve import (
    APPROVE_KEY,
    approval_of,
    approval_request,
    ask_approval,
    can_elicit,
    too_long_to_ask,
)
from toolwire_mcp.gateway._auth import (
    CURRENT_PRINCIPAL,
    guarded,
    load_tokens,
    principal_key,
    principal_of,
)
from toolwire_mcp.gateway._catalogue import RESOURCE_NOT_FOUND, Announcer, Catalogue, connection_of
from toolwire_mcp.gateway._context import (
    _SESSION_LEVELS,
    ELICIT_TIMEOUT,
    Elicited,
    MCPCallContext,
    _ClientLink,
)
from toolwire_mcp.gateway._jwt import OAuthResource, load_oauth
from toolwire_mcp.gateway._listing import (
    _advertised_output,
    _declares_headers,
    _is_task_tool,
    _mcp_tool,
)
from toolwire_mcp.gateway._rounds import CALL_ROUNDS, Signer, elicit_result, until_asked
from toolwire_mcp.gateway._served import Prompt, Resource, check_served
from toolwire_mcp.gateway._served_tasks import (
    TASK_OFFER,
    TaskServer,
    install_tasks,
)
from toolwire_mcp.gateway._sessions import (
    MAX_SESSIONS,
    SESSION_IDLE,
    SESSIONS_PER_CLIENT,
    session_limits,
)

__all__ = ["Elicited", "MCPCallContext", "build_server", "serve_mcp"]

logger = logging.getLogger("toolwire.mcp.server")

APP = "toolwire-mcp"


MAX_REQUEST_BYTES = 1 << 20
#: Milliseconds a client waits before reconnecting a dropped stream (the SSE `retry`).
RETRY_MS = 1000
_IDS = itertools.count(1)


#: Seconds a served call waits for the approvers a policy names (the approval queue).
APPROVAL_WAIT = 600.0


def build_server(
    toolset: Toolset | None = None,
    *,
    host: PluginHost | None = None,
    approve: bool = False,
    name: str = "toolwire",
    elicit: bool = True,
    elicit_timeout: float = ELICIT_TIMEOUT,
    resources: Iterable[Resource] = (),
    prompts: Iterable[Prompt] = (),
    approval_wait: float = APPROVAL_WAIT,
    task_only: Iterable[str] = (),
) -> Server[Any]:
    """The MCP server (the SDK's low-level ``Server``) for the assembled toolset, with the
    application's ``resources`` and ``prompts`` (:func:`toolwire_mcp.resource`,
    :func:`toolwire_mcp.prompt`) and those of the upstream MCP servers it fronts.

    A mutating or destructive call needs an approval: ``approve=True`` gives it to
    every call; otherwise, when the client supports MCP elicitation (and ``elicit``),
    the user is asked through the client, with ``elicit_timeout`` seconds to answer;
    otherwise the call is denied. Policies decide before any of this: an approval
    never overrides a policy's rejection.

    A call a policy files in the approval queue (its ``[approvals]``) is held for up to
    ``approval_wait`` seconds (default 600; 0: refused at once, naming its request),
    with a progress notification when the wait begins and every few seconds of it (to
    a client that asked for progress); once an approver answers, it is decided again
    (an approval runs it once); past the wait, the refusal names the request, and the
    same call made later runs once it is approved.

    ``task_only``: the names of tools served only as tasks (a job that outlives any
    request a client could hold open): a 2026-07-28 client that does not declare the
    tasks extension is refused with -32021 naming it, a 2025-11-25 call without ``task``
    with -32601, and the tool list says their task support is ``required``.
    """
    if not elicit_timeout > 0:
        raise UsageError(f"elicit_timeout must be a positive number, got {elicit_timeout!r}")
    try:
        own_resources, own_prompts = check_served(resources, prompts)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    only = frozenset(_names(task_only, "task_only"))
    plugins = get_host() if host is None else host
    # Upstream servers may ask for a model: this gateway passes it to its own clients.
    # Servers already connected (an --app module's own mcp_toolset) were told otherwise
    # when they connected: they reconnect, on their next use, with the capability.
    if relay_sampling(True):
        close_all()
    tools = plugins.assemble(toolset)
    context = HookContext(app=APP, provider="mcp")
    # Binds an approval answered across two requests (2026-07-28 clients) to the call it
    # was asked for: the client holds request_state, so it is signed.
    key = secrets.token_bytes(32)

    def state_of(request: ApprovalRequest, ctx: Any) -> str:
        # The principal too: an answer asked of alice's client cannot be replayed by bob's
        # request for the same call.
        text = f"{request.tool_name}\0{request.arguments_json}\0{principal_key(ctx)}"
        return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def call_bind(ctx: Any, params: Any) -> str:
        """What a call's requestState is bound to: its tool, arguments and principal."""
        text = json.dumps(
            [params.name, params.arguments or {}, principal_key(ctx)],
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    signer = Signer(key, call_bind)

    def approver_for(
        ctx: Any, params: types.CallToolRequestParams, asked: list[ApprovalRequest]
    ) -> Callable[[ApprovalRequest], Awaitable[Allow | Deny | Defer]]:
        async def approver(request: ApprovalRequest) -> Allow | Deny | Defer:
            if approve:
                return Allow()
            if elicit and can_elicit(ctx):
                refused = too_long_to_ask(request)
                if refused is not None:
                    return refused
                if ctx.session.can_send_request:  # a back-channel: ask now, and wait
                    return await ask_approval(ctx, request, elicit_timeout)
                # No back-channel: ask in the result, decide when the client calls again
                # (an approval given in an earlier round of this call stands for it).
                rounds = CALL_ROUNDS.get()
                bound = state_of(request, ctx)
                given = rounds.approved if rounds is not None else None
                if given is not None and hmac.compare_digest(given[0], bound):
                    return approval_of(elicit_result(given[1]), request)
                answer = (params.input_responses or {}).get(APPROVE_KEY)
                if (
                    answer is not None
                    and rounds is not None
                    and rounds.asking is not None
                    and hmac.compare_digest(rounds.asking, bound)
                ):
                    rounds.approved = (bound, answer)
                    return approval_of(answer, request)
                asked.append(request)
                return Defer()
            return Deny(
                f"`{request.tool_name}` is {request.effect.value}, and this MCP server runs "
                f"mutating and destructive tools only when started with --approve or when "
                f"the client can ask the user (MCP elicitation)"
            )

        return approver

    announcer = Announcer()

    # A listed tool is rebuilt only when its name, description or tool changes: a list of
    # 500 tools costs a dict lookup per tool, not 500 pydantic models.
    made: dict[tuple[str, str, int], tuple[Any, types.Tool]] = {}

    def context_of(ctx: Any) -> HookContext:
        """The gateway's context, with the principal the request's token names."""
        principal = principal_of(ctx)
        return context if principal is None else attrs.evolve(context, principal=principal)

    def listed(ctx: Any = None) -> list[types.Tool]:
        turn = resolve_turn(
            tools, hooks=plugins.hook_sets(), context=context_of(ctx), plugins=plugins
        )
        out = []
        for rt in turn.tools:
            key = (rt.name, rt.description, id(rt.tool))
            hit = made.get(key)
            if hit is None or hit[0] is not rt.tool:
                hit = made[key] = (
                    rt.tool,
                    _mcp_tool(rt.name, rt.description, rt.tool, rt.name in only),
                )
            out.append(hit[1])
        return out

    headed: dict[int, tuple[Any, bool]] = {}  # id(tool) -> (it, declares Mcp-Param headers)

    def input_schema_of(name: str) -> Mapping[str, Any] | None:
        """The input schema the SDK checks a 2026-07-28 call's ``Mcp-Param-*`` headers
        against. Without this it lists every tool to find one schema, on every call.
        A schema that declares no header validates nothing, so None says the same at the
        cost of a dict lookup; one that does is looked up as this caller's tools/list
        shows it (a tool hidden from them is not there)."""
        tool = tools.get(name)
        if tool is None:
            return None
        hit = headed.get(id(tool))
        if hit is None or hit[0] is not tool:
            hit = headed[id(tool)] = (tool, _declares_headers(tool.input_schema))
        if not hit[1]:
            return None
        principal = CURRENT_PRINCIPAL.get()
        called = context if principal is None else attrs.evolve(context, principal=principal)
        turn = resolve_turn(tools, hooks=plugins.hook_sets(), context=called, plugins=plugins)
        shown = next((rt.tool for rt in turn.tools if rt.name == name), None)
        return None if shown is None else dict(shown.input_schema)

    listen = ListenHandler(announcer.bus)

    async def on_listen(ctx: Any, params: Any) -> Any:
        announcer.remember(ctx)  # where updates are announced from (an own resource's)
        return await listen(ctx, params)

    async def on_list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        announcer.remember(ctx)
        return types.ListToolsResult(tools=listed(ctx))

    async def on_call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await _call(ctx, params)

    async def _call(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        announcer.remember(ctx)
        tool_name, arguments = params.name, params.arguments or {}
        # The call takes the path a model's call takes in the agent loop: the turn is
        # resolved as tools/list resolves it (a tool that is off or hidden is not
        # offered), the reply decoded (validation issues; every refusal audited), the
        # decision hooks applied (policies first), then the executor runs what is left
        # (approval, timeouts, retries, output validation, result hooks) and commits.
        hooks = plugins.hook_sets()
        called = context_of(ctx)
        if tools.get(tool_name) is None or tools.is_off(tool_name):
            # Not offered to anyone: the whole turn, so the refusal is audited as it was.
            turn = resolve_turn(tools, hooks=hooks, context=called, plugins=plugins)
        else:
            # The called tool alone, through the same availability hooks: what tools/list
            # shows this caller of it, without resolving every other tool on every call.
            turn = resolve_turn(
                tools,
                availability=Availability.only(tool_name),
                hooks=hooks,
                context=called,
                plugins=plugins,
            )
        session = Session().add_user(f"MCP tools/call {tool_name}")
        call = ToolCall(f"mcp_{next(_IDS)}", tool_name, json.dumps(arguments))
        outcome = decode_reply(
            session, turn, AssistantReply("", (call,), "tool_calls"), enforce_requirement=False
        )
        if not isinstance(outcome, NeedsTools):  # pragma: no cover - a reply with one call
            return _error(f"the call to `{tool_name}` was not decoded as a tool call")
        if any(isinstance(i, (UnknownTool, NotAvailable)) for i in outcome.round.issues):
            # Not in this client's tools/list (unknown, off, hidden): refused alike.
            return _error(f"unknown tool `{tool_name}`")
        # The turn carries the host's hook sets (resolved with them): applied once.
        plan = await outcome.round.aapply_hooks(context=called)
        asked: list[ApprovalRequest] = []
        caller = MCPCallContext(ctx)

        async def waiting(request: Any, waited: float) -> None:
            said = (
                f"waiting for approval: request {request.id} ({request.tool}) waits for "
                f"{', '.join(request.approvers)}"
            )
            # A client that takes tasks gets one: its request is answered now, and the
            # task says what it waits for (_served_tasks).
            offer = TASK_OFFER.get()
            if offer is not None and offer.take(said):
                return
            # Else the client hears it, and its request's timeout (which progress
            # resets, in clients that allow it) need not pass.
            await caller.progress(waited, None, said)

        raised: list[BaseException] = []
        executor = Executor(
            approval=approver_for(ctx, params, asked),
            approval_gate=ApprovalGate.MUTATING_AND_ABOVE,
            plugins=plugins,
            injected={"mcp": MCPCallContext(ctx)},
            approval_wait=approval_wait,
            on_approval_wait=waiting,
            # A served tool's MCPError is a protocol error (the SDK's convention): the
            # call ends with it (recorded and audited as failed all the same).
            on_tool_error=lambda call, exc: (
                raised.append(exc) if isinstance(exc, MCPError) else None
            ),
        )
        # An upstream server's progress on the call goes on to this client, as progress
        # of its own call.
        relay = CALL_PROGRESS.set(caller.progress)
        # An upstream server's question (elicitation) is this client's to answer, and its
        # request for a model (sampling) this client's model's, under this gateway's policies.
        asker = CALL_ASKER.set(_ClientLink(caller, plugins))
        # With no back-channel (a 2026-07-28 request), a question ends the round: its
        # result asks the client, who calls again with the answer (_rounds).
        rounds = None if ctx.session.can_send_request else signer.rounds(ctx, params)
        asking = CALL_ROUNDS.set(rounds)
        try:
            if rounds is None:
                run = await executor.aexecute_and_commit(plan)
            else:
                ran = await until_asked(executor.aexecute_and_commit(plan), rounds)
                if ran is None:  # a question this round has no answer to
                    assert rounds.needed is not None
                    question, request = rounds.needed
                    return types.InputRequiredResult(
                        input_requests={question: request},
                        request_state=signer.state(ctx, params, rounds),
                    )
                run = ran
        finally:
            CALL_ROUNDS.reset(asking)
            CALL_ASKER.reset(asker)
            CALL_PROGRESS.reset(relay)
            executor.close()
        last = session.last
        if run.pending and asked:
            assert rounds is not None  # asked in the result only with no back-channel
            return types.InputRequiredResult(
                input_requests={APPROVE_KEY: approval_request(asked[0])},
                request_state=signer.state(ctx, params, rounds, asking=state_of(asked[0], ctx)),
            )
        if run.pending or not isinstance(last, ToolResultsMessage) or not last.results:
            return _error(f"the call to `{tool_name}` needs an approval this server cannot ask for")
        result = last.results[0]
        if raised and result.is_error:  # the tool's protocol error: the call's own
            raise raised[-1]
        structured = None
        tool = tools.get(tool_name)
        if not result.is_error and tool is not None and _advertised_output(tool):
            # The result's structured value (an upstream server's structuredContent, a
            # tool's Structured output, as the policies left it); else the tool's output is
            # its JSON text (a typed tool's output, serialised once).
            value = result.structured
            if value is None:
                first = result.parts[0] if result.rich and result.parts else None
                try:
                    value = json.loads(first.text if isinstance(first, Text) else result.content)
                except ValueError:
                    value = None
            if not isinstance(value, dict):
                # The schema was advertised: a result without conforming structured
                # content is refused by every client, so it is an error result here.
                return _error(
                    f"tool `{tool_name}` returned output that does not match its output "
                    f"schema (expected a JSON object)"
                )
            structured = value
        if result.rich:  # images, audio, files: MCP content blocks, in order
            parts, is_error = result.model_parts()
            content = [content_block(p) for p in parts]
        else:
            text, is_error = result.for_model()
            content = [types.TextContent(type="text", text=text)]
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=is_error
        )

    async def on_set_logging_level(
        ctx: Any, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        with contextlib.suppress(TypeError):  # a connection that cannot be held weakly
            _SESSION_LEVELS[connection_of(ctx.session)] = params.level
        return types.EmptyResult()

    catalogue = Catalogue(own_resources, own_prompts, tools, plugins, context, announcer)

    async def on_list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await catalogue.resources())

    async def on_list_resource_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=await catalogue.templates())

    async def on_read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        own = catalogue.own_resource(uri)
        if own is not None:
            resource, parts = own
            try:
                return await resource.contents(uri, parts)
            except Exception as exc:
                logger.warning("resource %r failed: %r", uri, exc)
                raise MCPError(types.INTERNAL_ERROR, f"reading {uri!r} failed: {exc}") from None
        upstream = await catalogue.upstream_of(uri)
        if upstream is None or upstream.read_tool is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r}")
        # A read of an upstream server's resource is a call of that server's read tool,
        # decided as any call is (policies, hooks, the audit log); the client gets the
        # contents as the server gave them.
        box: dict[str, types.ReadResourceResult] = {}
        token = RAW_READS.set(box)
        try:
            result = await _call(
                ctx,
                types.CallToolRequestParams(name=upstream.read_tool, arguments={"uri": uri}),
            )
        finally:
            RAW_READS.reset(token)
        if isinstance(result, types.InputRequiredResult) or result.is_error:
            said = "" if isinstance(result, types.InputRequiredResult) else _said(result)
            raise MCPError(types.INVALID_REQUEST, said or f"the read of {uri!r} needs an approval")
        raw = box.get(uri)
        if raw is None:
            # A decision hook answered the read without running it (Complete): its
            # output is the contents.
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(uri=uri, mime_type="text/plain", text=_said(result))
                ]
            )
        return raw

    async def on_subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        announcer.remember(ctx)  # where an update is announced from
        await catalogue.subscribe(ctx, str(params.uri), True)
        return types.EmptyResult()

    async def on_unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        await catalogue.subscribe(ctx, str(params.uri), False)
        return types.EmptyResult()

    async def on_list_prompts(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await catalogue.prompts())

    async def on_get_prompt(
        ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        arguments = dict(params.arguments or {})
        own = catalogue.own_prompts.get(params.name)
        if own is not None:
            try:
                return await own.messages(arguments)
            except ValueError as exc:
                raise MCPError(types.INVALID_PARAMS, str(exc)) from None
            except Exception as exc:
                logger.warning("prompt %s failed: %r", params.name, exc)
                raise MCPError(types.INTERNAL_ERROR, f"prompt `{params.name}` failed") from None
        found = await catalogue.upstream_prompt(params.name)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"no prompt `{params.name}`")
        upstream, original = found
        try:
            return await upstream.conn.prompt(original, arguments)
        except MCPCallError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    async def on_completion(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        return await catalogue.complete(params)

    with warnings.catch_warnings():
        # logging/setLevel is deprecated from 2026-07-28 on; clients of earlier versions
        # still use it, and the gateway serves them.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server = TaskServer(
            name,
            version=_version(),
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            get_tool_input_schema=input_schema_of,
            on_set_logging_level=on_set_logging_level,
            on_completion=on_completion,
            on_subscriptions_listen=on_listen,
            on_list_resources=on_list_resources,
            on_list_resource_templates=on_list_resource_templates,
            on_read_resource=on_read_resource,
            on_subscribe_resource=on_subscribe,
            on_unsubscribe_resource=on_unsubscribe,
            on_list_prompts=on_list_prompts,
            on_get_prompt=on_get_prompt,
        )
        # A long-running tool, or a call that waits for its approvers, as a task to a
        # client that takes tasks.
        install_tasks(
            server,
            approval_wait,
            lambda name: _is_task_tool(tools.get(name)),
            task_only=only.__contains__,
        )
        missing = sorted(n for n in only if tools.get(n) is None)
        if missing:  # a name that matches nothing is said, as a policy rule's is
            logger.warning("task_only names no tool served here (yet): %s", ", ".join(missing))
        on_toolsets_changed(announcer)  # held weakly: as long as this server's handlers
        RESOURCE_LISTENERS.add(catalogue.updated)  # the same
        return server


def _names(given: Iterable[str], what: str) -> list[str]:
    if isinstance(given, str):
        raise UsageError(f"{what} takes a list of tool names, not one string")
    names = list(given)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise UsageError(f"{what} takes tool names, got {bad[0]!r}")
    return names


def _said(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _warn_sync_policies(host: PluginHost) -> None:
    """A sync policy hook stalls every client's calls while it runs, and a hook that
    blocks is rejected only when it returns: say so when the server starts."""
    hooks = host.sync_policy_hooks()
    if hooks:
        logger.warning(
            "policy hooks %s are sync: while one runs, this server serves no other call, "
            "and one that blocks is rejected only when it returns. A policy that can block "
            "(a network call, a prompt) should be written as async hooks",
            ", ".join(hooks),
        )


def _version() -> str:
    from toolwire_mcp._version import __version__

    return __version__


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


# -- running it -----------------------------------------------------------------------------


def serve_mcp(
    toolset: Toolset | None = None,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    token_env: str | None = None,
    approve: bool = False,
    plugins: PluginHost | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    elicit: bool = True,
    resources: Iterable[Resource] = (),
    prompts: Iterable[Prompt] = (),
    tokens_file: str | os.PathLike[str] | None = None,
    oauth: OAuthResource | str | os.PathLike[str] | None = None,
    session_idle: float = SESSION_IDLE,
    max_sessions: int = MAX_SESSIONS,
    sessions_per_client: int = SESSIONS_PER_CLIENT,
    approval_wait: float = APPROVAL_WAIT,
    console: bool = False,
    console_queue: str | os.PathLike[str] | None = None,
    task_only: Iterable[str] = (),
) -> None:
    """Serve ``toolset`` (assembled with the installed plugins) over MCP until stopped.

    ``transport="stdio"`` talks on this process's stdin/stdout (what an MCP client that
    launches us expects); ``"http"`` serves Streamable HTTP at ``http://host:port/mcp``.
    ``token_env`` names an environment variable holding the bearer token HTTP clients
    must send. ``elicit``: ask the client's user to approve mutating and destructive
    calls when the client supports MCP elicitation (see :func:`build_server`).
    ``resources`` and ``prompts``: the application's own, served beside those of the
    upstream MCP servers (:func:`toolwire_mcp.resource`, :func:`toolwire_mcp.prompt`).
    ``tokens_file`` (HTTP): a JSON file of the tokens clients may send, each by its
    SHA-256 with the principal it names (see :func:`load_tokens`): every call is then
    made for that principal, and the policies decide by it. ``oauth`` (HTTP): the gateway
    as an OAuth 2.1 resource server, accepting bearer JWTs from one authorization server
    (an :class:`OAuthResource`, or the TOML file :func:`load_oauth` reads); each token's
    claims name its principal. Tokens from the file are accepted beside the JWTs.

    Sessions (HTTP, 2025-11-25 clients): one that sent nothing for ``session_idle``
    seconds is closed; at most ``max_sessions`` are open in all and
    ``sessions_per_client`` for one principal (or one address, for requests that name
    nobody); a client over either is answered 503 with ``Retry-After``.
    ``approval_wait``: as :func:`build_server`'s. ``console`` (HTTP, with
    ``tokens_file`` or an ``oauth`` file with a ``[console]`` table): serve the approval
    console at ``/console`` beside the gateway (sign-in by the same tokens, or with the
    identity provider; the queue ``console_queue``, else the default one).

    The upstream MCP servers (the configured ones, and any in ``toolset``) are served
    from the serving event loop while it runs (:func:`connected`): a proxied call goes
    straight to its server, with no hop to the connection thread.
    """

    import anyio

    from toolwire_mcp.client._registry import connected

    if console and (transport != "http" or (tokens_file is None and oauth is None)):
        raise UsageError("the console is served over HTTP, with --tokens or --oauth (its sign-in)")
    if transport == "stdio" and (tokens_file is not None or oauth is not None or token_env):
        # The client that starts a stdio server is its only caller: there is no request
        # to carry a credential, and a principal the operator meant to require would be
        # silently missing.
        raise UsageError("tokens, OAuth and --token-env apply to the HTTP transport only")
    server = build_server(
        toolset,
        host=plugins,
        approve=approve,
        elicit=elicit,
        resources=resources,
        prompts=prompts,
        approval_wait=approval_wait,
        task_only=task_only,
    )
    _warn_sync_policies(plugins if plugins is not None else get_host())
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        from toolwire_mcp.client._stdio import bounded_stdin

        async def run_stdio() -> None:
            # stdin read with a bound on each message (the SDK's reader has none);
            # stdout is the SDK's own.
            async with (
                connected(),
                bounded_stdin() as lines,
                stdio_server(stdin=lines) as (read, write),
            ):
                # Handshake-era clients are told the tool list may change (it does when
                # an upstream server's does; 2026-07-28 ones learn it from listen).
                options = server.create_initialization_options(
                    NotificationOptions(tools_changed=True)
                )
                await server.run(read, write, options)

        anyio.run(run_stdio)
        return
    if transport != "http":
        raise UsageError(f"transport must be 'stdio' or 'http', got {transport!r}")
    for name, value, least in (
        ("session_idle", session_idle, 1),
        ("max_sessions", max_sessions, 1),
        ("sessions_per_client", sessions_per_client, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= least:
            raise UsageError(f"{name} must be a positive number, got {value!r}")
    principals = load_tokens(tokens_file) if tokens_file is not None else None
    if oauth is not None and not isinstance(oauth, OAuthResource):
        oauth = load_oauth(oauth)
    token = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise UsageError(f"the environment variable {token_env} (the bearer token) is not set")
    import uvicorn

    from toolwire_mcp.gateway._events import BoundedEventStore

    # Resumable streams: a client whose connection dropped comes back with Last-Event-ID
    # and gets what it missed (a priming event, and `retry` says when to reconnect).
    app = server.streamable_http_app(
        host=host,
        transport_security=loopback_security(host),
        session_idle_timeout=float(session_idle),
        max_sessions=int(max_sessions),
        max_request_body_size=max_request_bytes,
        event_store=BoundedEventStore(),
        retry_interval=RETRY_MS,
    )
    served: Any = guarded(
        session_limits(app, idle=float(session_idle), per_client=int(sessions_per_client)),
        token=token,
        max_bytes=max_request_bytes,
        principals=principals,
        oauth=oauth,
    )
    if console:
        from toolwire_mcp.gateway._console import beside, open_console
        from toolwire_mcp.gateway._signin import SignIn

        signin = None
        if oauth is not None and oauth.console is not None:
            signin = SignIn(oauth)
        elif principals is None:
            raise UsageError(
                "the console signs people in with --tokens, or with the identity provider "
                "of an --oauth file that has a [console] table (the console's client_id)"
            )
        shown = (plugins if plugins is not None else get_host()).audit_trails()
        panel = open_console(
            console_queue, principals or {}, base="/console", host=host, trails=shown,
            signin=signin,
        )  # fmt: skip
        served = beside(served, panel)
    config = uvicorn.Config(
        served,
        host=host,
        port=port,
        log_level="warning",
    )
    http = _server_class(uvicorn.Server)(config)

    async def run_http() -> None:
        async with connected():
            await http.serve()

    # As uvicorn.run, with the server's run inside the block: the loop uvicorn would pick.
    loop_factory = getattr(config, "get_loop_factory", lambda: None)()
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(run_http())
    # The signal that stopped the server ends the process as it would have, now that the
    # upstream connections are closed (a stdio server's process has ended).
    for sig in reversed(http.deferred_signals):
        signal.raise_signal(sig)


def _server_class(base: type[Any]) -> type[Any]:
    """uvicorn's Server, except that the signals it caught are kept for the caller to
    raise again after the serving loop's cleanup: uvicorn raises them as ``serve()`` ends,
    which would end the process inside ``connected()``, before the upstream servers are
    closed. (With a uvicorn that keeps no ``_captured_signals``, its own behaviour stays.)"""

    class _Server(base):  # type: ignore[misc]
        deferred_signals: list[int]

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.deferred_signals = []

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    caught = getattr(self, "_captured_signals", None)
                    if isinstance(caught, list):
                        self.deferred_signals = list(caught)
                        caught.clear()

    return _Server


def loopback_security(host: str) -> Any:
    """DNS-rebinding protection for a gateway on any loopback address: only its own Host,
    and no browser page of another origin (a request with no Origin, from a client that
    is not a browser, is served). The SDK turns this on for 127.0.0.1, localhost and ::1
    only, so a gateway on 127.0.0.2 served a page of any origin. None (the SDK's choice)
    for an address that is not loopback."""
    import ipaddress

    from mcp.server.transport_security import TransportSecuritySettings

    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return None
    if not loopback:
        return None
    names = {f"[{host}]" if ":" in host else host}
    if host in ("127.0.0.1", "localhost", "::1"):  # one machine's names for one address
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return TransportSecuritySettings(
        allowed_hosts=sorted(f"{n}:*" for n in names),
        allowed_origins=sorted(f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")),
    )
