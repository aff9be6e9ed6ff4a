"""What a bridge to another agent framework shares: one :class:`Governor` that puts a
framework's tool calls under the installed policies, and the :class:`Governed` answer it
gives for each.

A bridge maps, it does not decide. The framework hands over a call (its tool's name,
description, JSON schema and the arguments it validated) and a continuation that runs the
framework's own tool; the governor runs it as a toolwire tool through an
:class:`~toolwire.Executor` on the policies' host, so the decision hooks, quotas,
approvals bound to the call's fingerprint, result hooks (redaction) and the audit records
are the ones every other toolwire path has. The bridge then answers in the framework's own
way: the result, a refusal the model reads, or a pause for a person's approval.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import sys
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Literal

import attrs
import pydantic_core

from toolwire._calls import ToolCall, TypedCall, rejection_reason
from toolwire._display import review_arguments
from toolwire._errors import ToolDefinitionError, UsageError
from toolwire._execute.approval import call_fingerprint
from toolwire._execute.executor import Executor
from toolwire._exports import publish
from toolwire._hooks import AuditEvent, HookContext, Principal
from toolwire._metadata import ToolEffect, ToolMetadata, metadata_from_mcp_hints
from toolwire._sync import (
    Signal,
    carry_on,
    give_loop,
    give_unused,
    needs_a_task,
    run_on_pooled_loop,
    run_until_stopped,
    step_inline,
    take_loop,
)
from toolwire._tools import Tool, raw_tool, tool_of
from toolwire._toolset import Toolset

__all__ = [
    "FRAMEWORK",
    "UNKNOWN_EFFECT",
    "UNKNOWN_EFFECT_SOURCE",
    "Governed",
    "Governor",
    "Underway",
    "approval_question",
    "principal_in",
    "principal_of",
    "tools_of",
]

#: ``HookContext.extra[FRAMEWORK]``: the name of the framework a call came through
#: (``pydantic-ai``, ``openai-agents``, ...); the policy's audit records say it.
FRAMEWORK = "toolwire.framework"
# The policy plugin's approval keys (toolwire_policy.APPROVED / APPROVER): the bridge gives
# the approvals it holds, and learns through the approver which call needs one.
_APPROVED = "toolwire.approved"
_APPROVER = "toolwire.approver"

#: The effect of a tool nothing describes: never assumed read-only.
UNKNOWN_EFFECT = ToolEffect.DESTRUCTIVE
#: ``ToolMetadata.source`` of a foreign tool whose effect nobody declared (no mapping, no
#: hint): a policy may take such tools to have an effect of its own choosing
#: (toolwire-policy: ``unknown_effect``), and match them as ``bridge:unknown-effect/NAME``.
UNKNOWN_EFFECT_SOURCE = "bridge:unknown-effect"


@attrs.frozen
class Governed:
    """The policies' answer to one call, as a bridge passes it on.

    ``status``:

    - ``"ok"``: it ran; ``content`` is what the model is to read (after the result
      hooks), ``value`` what the framework's tool returned, and ``rewritten`` is true when
      a result hook changed the text (pass ``content``, not ``value``, then);
    - ``"error"``: it ran and failed; ``content`` says how (``raised`` holds the
      framework's own exception when its tool raised one, to re-raise in its own terms);
    - ``"refused"``: it did not run; ``content`` is the reason, for the model;
    - ``"approval"``: it did not run, and runs once a person approves exactly this call:
      ``content`` is why it needs one, ``approval`` the key that approves it
      (:meth:`Governor.approve`), spent by one call with the same arguments.
    """

    status: Literal["ok", "error", "refused", "approval"]
    content: str
    value: Any = None
    rewritten: bool = False
    approval: str | None = None
    raised: BaseException | None = None

    @property
    def ran(self) -> bool:
        return self.status in ("ok", "error")


class _Holder:
    """One call's continuation, and what it saw: its return value or its exception."""

    __slots__ = (
        "approval",
        "called",
        "error",
        "given",
        "here",
        "inline",
        "proceed",
        "refusal",
        "rewrite",
        "value",
    )

    def __init__(
        self, proceed: Callable[[dict[str, Any]], Any] | None, given: Any, rewrite: bool
    ) -> None:
        self.proceed = proceed
        self.given = given
        self.rewrite = rewrite
        self.called = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.refusal: str | None = None
        self.approval: tuple[str, str] | None = None
        #: Set when a sync caller runs the framework's tool itself (:meth:`Governor.run`).
        self.here: _Here | None = None
        #: Set when a sync caller's tool runs inline (:meth:`Governor.run`): the caller's
        #: async generator hooks, in force while the tool runs.
        self.inline: tuple[Any, Any] | None = None


class _Here:
    """A sync caller's side of a call: the body asks for the tool with ``wanted``'s
    arguments, and the caller runs the framework's tool and answers: into the coroutine
    it steps inline (``wanted`` has no future), else in ``wanted``'s future (the body
    stopped ``loop``)."""

    __slots__ = ("loop", "wanted")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.wanted: tuple[dict[str, Any], asyncio.Future[Any] | None] | None = None


#: What the body of a call stepped inline yields when it asks for the tool: the caller's
#: answer is sent in (or its exception thrown).
_ASKED = Signal("the tool asked for")


#: The sync caller's side for the next Governor.arun in this context (Governor.run sets it).
_HERE: contextvars.ContextVar[_Here | None] = contextvars.ContextVar(
    "toolwire_bridge_here", default=None
)


#: The caller's async generator hooks, for the next Governor.arun in this context to run its
#: tool inline, as if no loop were running (Governor.run sets it).
_INLINE: contextvars.ContextVar[tuple[Any, Any] | None] = contextvars.ContextVar(
    "toolwire_bridge_inline", default=None
)


#: The call a foreign tool's body runs for (set by Governor.arun around the executor).
_CURRENT: contextvars.ContextVar[_Holder] = contextvars.ContextVar("toolwire_bridge_call")


async def _continue(**arguments: Any) -> Any:
    """The body of every foreign tool: the framework's own tool, through the call's
    continuation."""
    holder = _CURRENT.get(None)
    if holder is None or holder.proceed is None:
        raise UsageError("a foreign tool runs only through Governor.arun, given proceed")
    if arguments != holder.given and not holder.rewrite:
        holder.refusal = (
            "a policy or approver rewrote the arguments of this call, and the framework "
            "cannot pass other arguments to its tool: the call was not run"
        )
        raise UsageError(holder.refusal)
    holder.called = True
    try:
        if holder.here is not None and needs_a_task():  # stepped inline (Governor.begin)
            holder.here.wanted = (arguments, None)
            answer = await _ASKED  # the caller runs the tool, and sends its answer in
        elif holder.here is not None:  # the sync caller runs it, its loop stopped
            answer_at = asyncio.get_running_loop().create_future()
            holder.here.wanted = (arguments, answer_at)
            holder.here.loop.stop()  # the caller's run_forever returns: it runs the tool
            answer = await answer_at
        elif holder.inline is not None:
            answer = _outside_the_loop(holder.proceed, arguments, holder.inline)
        else:
            answer = holder.proceed(arguments)
        if isinstance(answer, Awaitable):
            answer = await answer
    except BaseException as exc:
        holder.error = exc
        raise
    holder.value = answer
    return answer


def _outside_the_loop(
    proceed: Callable[[dict[str, Any]], Any], arguments: dict[str, Any], hooks: tuple[Any, Any]
) -> Any:
    """Run a sync caller's tool in its thread as that thread runs it without toolwire: the
    pooled loop deciding the call waits in this callback, marked not running (so a tool
    that runs a loop of its own, ``asyncio.run`` among them, may), with the caller's
    async generator hooks in force."""
    loop = asyncio.events._get_running_loop()
    ours = sys.get_asyncgen_hooks()
    asyncio.events._set_running_loop(None)
    sys.set_asyncgen_hooks(*hooks)
    try:
        return proceed(arguments)
    finally:
        sys.set_asyncgen_hooks(*ours)
        asyncio.events._set_running_loop(loop)


#: The source of an MCP tool whose server the framework does not name.
UNNAMED_MCP_SERVER = "(unnamed)"


def _mcp_metadata(annotations: Mapping[str, Any], server: str | None) -> ToolMetadata:
    """A foreign MCP tool's metadata from its annotations (wire names, or Python's)."""

    def hint(*keys: str) -> bool | None:
        for key in keys:
            value = annotations.get(key)
            if isinstance(value, bool):
                return value
        return None  # absent, or not a boolean: the spec's default

    named = server if isinstance(server, str) and server.strip() else UNNAMED_MCP_SERVER
    return metadata_from_mcp_hints(
        read_only=hint("readOnlyHint", "read_only_hint"),
        destructive=hint("destructiveHint", "destructive_hint"),
        idempotent=hint("idempotentHint", "idempotent_hint"),
        open_world=hint("openWorldHint", "open_world_hint"),
        source=f"mcp:{named}",
        timeout=None,  # the framework's own deadlines apply
        local=True,
    )


def _by_the_caller(arguments: dict[str, Any]) -> Any:
    raise UsageError("this call's tool is run by its caller (Governor.begin)")


class Underway:
    """A call the policies let through, whose tool the framework runs itself
    (:meth:`Governor.begin`): ``arguments`` are the ones decided (a policy's or an
    approver's rewrite included). :meth:`finish` with what the tool returned, or the
    exception it raised, gives the call's outcome (the result hooks ran, the audit
    records written); :meth:`cancel` when the framework did not run it after all."""

    __slots__ = ("_context", "_coro", "_here", "_loop", "_outcome", "_task", "arguments")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, Governed],
        context: contextvars.Context,
        here: _Here,
    ) -> None:
        self._loop: asyncio.AbstractEventLoop | None = loop
        #: The call, stepped inline in the caller's thread until it must wait (then in
        #: ``_task``, a task of ``_loop``): see toolwire._sync.
        self._coro: Coroutine[Any, Any, Governed] | None = coro
        self._context = context
        self._task: asyncio.Task[Governed] | None = None
        self._outcome: Governed | None = None
        self._here = here
        self.arguments: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<Underway {'ended' if self._loop is None else 'running'}>"

    def _step(self, value: Any = None, error: BaseException | None = None) -> bool:
        """Run the decision, ``value`` (or ``error``) the answer to the tool asked for
        inline, until the call's body asks for the tool (True: the caller runs it) or the
        call ends (False)."""
        loop, here = self._loop, self._here
        assert loop is not None
        coro = self._coro
        if coro is not None:
            try:
                yielded = step_inline(loop, coro, self._context, value, error)
            except StopIteration as stop:
                self._coro, self._outcome = None, stop.value
                return False
            except BaseException:
                self._coro = None
                raise
            if yielded is _ASKED:
                assert here.wanted is not None
                self.arguments = dict(here.wanted[0])
                return True
            # It waits for something, or runs what may ask for its task: in a task now.
            self._coro = None
            self._task = loop.create_task(carry_on(coro, yielded), context=self._context)
        task = self._task
        assert task is not None
        # Until the body asks (it stops the loop) or the call ends: no waiter task, no
        # more loop steps than the call's own.
        run_until_stopped(loop, task)
        if task.done() or here.wanted is None:
            return False
        self.arguments = dict(here.wanted[0])
        return True

    def _end(self) -> Governed:
        loop, self._loop = self._loop, None
        assert loop is not None
        task = self._task
        if task is None:  # it ended inline
            assert self._outcome is not None
            if not loop._ready:  # type: ignore[attr-defined]  # (the common case)
                give_unused(loop)
            else:  # what it left ready (a task a hook made) runs now, then is settled
                try:
                    loop.call_soon(loop.stop)
                    run_until_stopped(loop)
                finally:
                    give_loop(loop)
            return self._outcome
        try:
            if not task.done():
                run_until_stopped(loop, task)  # until the call ends
            if not task.done():  # as run_until_complete says it
                raise UsageError("the event loop was stopped before the call ended")
            return task.result()
        finally:
            give_loop(loop)

    def finish(self, value: Any = None, *, error: BaseException | None = None) -> Governed:
        """The framework ran the tool: what it returned (or ``error``, what it raised).
        Once; raises UsageError after the call ended."""
        if self._loop is None or self._here.wanted is None:
            raise UsageError("this call has ended already")
        if isinstance(error, StopIteration):  # a future cannot hold one, nor a coroutine
            error = RuntimeError(f"the tool raised StopIteration: {error}")
        try:
            while self._answer(value, error):  # asked again (a retry): the tool ran once
                value, error = None, UsageError("the framework runs its tool once a call")
        except BaseException:
            self.cancel()
            raise
        return self._end()

    def _answer(self, value: Any, error: BaseException | None) -> bool:
        """Answer the tool asked for, and run on: :meth:`_step`'s answer."""
        wanted = self._here.wanted
        assert wanted is not None
        self._here.wanted = None
        answer_at = wanted[1]
        if answer_at is None:  # asked inline
            return self._step(value, error)
        if error is not None:
            answer_at.set_exception(error)
        else:
            answer_at.set_result(value)
        return self._step()

    def cancel(self) -> None:
        """The framework did not run the tool: the call ends, nothing recorded as its result."""
        loop = self._loop
        if loop is None:
            return
        try:
            if self._coro is not None:  # cancelled where it asked, as a task would be
                # How it ended is nobody's now (a cancelled task's is not either).
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    self._step(error=asyncio.CancelledError())
            task = self._task
            if task is not None and not task.done():
                task.cancel()  # give_loop waits for it to end
        finally:
            self._loop = self._coro = None
            give_loop(loop)

    def __del__(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_running():  # never finished: let go of it
            loop.close()


class Governor:
    """Puts another framework's tool calls under the installed policies.

    ``framework`` names it in the audit records. ``plugins``: the host whose policies
    decide (``True``, the default: the process's host, found the way every toolwire path
    finds it, with ``TOOLWIRE_POLICY_REQUIRED`` and ``TOOLWIRE_DISABLE_POLICIES`` as
    everywhere; ``False``: its policies without its tool packs; or a
    :class:`~toolwire.PluginHost`). ``principal``: who calls are made for when the call
    names nobody. ``effects``: a tool's effect by its name, for tools the framework
    describes without one (else the framework's hint, else destructive: nothing unknown
    runs as read-only). ``app``: the application's name in the records (default: the
    framework's). ``approval_wait``: seconds a call waits for the people a policy names
    (the approval queue) before it is refused naming its request (default 0: at once;
    the same call made again runs once it is approved); ``on_approval_wait`` as the
    :class:`~toolwire.Executor`'s.
    """

    def __init__(
        self,
        framework: str,
        *,
        plugins: Any = True,
        principal: Principal | None = None,
        effects: Mapping[str, ToolEffect | str] | None = None,
        app: str = "",
        approval_wait: float = 0.0,
        on_approval_wait: Any = None,
    ) -> None:
        if not isinstance(framework, str) or not framework:
            raise UsageError("a Governor needs the framework's name")
        self.framework = framework
        self.app = app or framework
        self.principal = principal
        try:
            self.effects = {name: ToolEffect(e) for name, e in (effects or {}).items()}
        except ValueError as exc:
            raise UsageError(f"effects: {exc}") from None
        self.executor = Executor(
            plugins=plugins,
            max_concurrency=None,
            principal=principal,
            approval_wait=approval_wait,
            on_approval_wait=on_approval_wait,
        )
        self._approved: set[str] = set()
        self._lock = threading.Lock()
        self._tools: dict[tuple[str, str, str, ToolMetadata, str | None], Tool[Any, Any]] = {}
        # What every call's hooks are given besides who and where (one mapping, read-only:
        # the call's own approval state is found through _CURRENT), and the contexts made
        # of it, one per principal, session and model seen (bounded).
        self._extra: Mapping[str, Any] = types.MappingProxyType(
            {FRAMEWORK: framework, _APPROVED: _Spent(self), _APPROVER: _ask_the_bridge}
        )
        self._contexts: dict[tuple[Any, ...], HookContext] = {}
        # foreign_tool's answers by what it was given (most frameworks describe each call's
        # tool anew: its metadata need not be made again each time).
        self._recent: dict[tuple[Any, ...], Tool[dict[str, Any], Any]] = {}

    def __repr__(self) -> str:
        return f"<Governor {self.framework!r}>"

    # -- tools --------------------------------------------------------------------------

    def effect_of(self, name: str, hint: ToolEffect | str | None = None) -> ToolEffect:
        """A foreign tool's effect: the application's mapping, else the framework's hint,
        else destructive."""
        if name in self.effects:
            return self.effects[name]
        if hint is not None:
            try:
                return ToolEffect(hint)
            except ValueError:
                return UNKNOWN_EFFECT
        return UNKNOWN_EFFECT

    def foreign_tool(
        self,
        name: str,
        description: str,
        schema: Mapping[str, Any],
        *,
        effect: ToolEffect | str | None = None,
        metadata: ToolMetadata | None = None,
        mcp_annotations: Mapping[str, Any] | None = None,
        mcp_server: str | None = None,
        mcp_name: str | None = None,
    ) -> Tool[dict[str, Any], Any]:
        """A toolwire tool standing for a framework's tool (its name, description and
        argument schema), to decide and audit its calls; made once per shape. Its body is
        the continuation :meth:`arun` is given, run in this process. ``metadata``: a
        toolwire tool's own (a pack's tool the framework calls), else one with the
        effect :meth:`effect_of` finds and no timeout (the framework's own apply). Raises
        ToolDefinitionError for a schema that is no JSON schema (a bridge refuses that
        call).

        An MCP server's tool, as the framework describes it (``mcp_annotations``: its
        annotations as the wire names them, ``readOnlyHint`` ..., empty when it has none;
        ``mcp_server``: the server's name, when the framework knows it): its effect from
        the hints, with the spec's defaults (:func:`toolwire.adapters.metadata_from_mcp_hints`),
        unless the application's mapping names it; its source ``mcp:SERVER`` (else
        ``mcp:(unnamed)``), so a policy believes the hints only of the servers it trusts
        and matches ``mcp:SERVER/NAME``. ``mcp_name``: the tool's name on its server, when
        the framework calls it by another (a prefix): ``NAME`` is that one, as toolwire's
        own MCP mounts name it."""
        recent_key: tuple[Any, ...] | None = None
        if metadata is None:
            # Most frameworks describe each call's tool anew: the tool made for the same
            # description (its schema and annotations as JSON, the effect the application
            # maps the name to) is given back, its metadata not made again.
            try:
                recent_key = (
                    name,
                    description,
                    pydantic_core.to_json(schema),
                    effect,
                    None if mcp_annotations is None else pydantic_core.to_json(mcp_annotations),
                    mcp_server,
                    mcp_name,
                    self.effects.get(name),
                )
                recent = self._recent.get(recent_key)
            except Exception:  # not JSON, not hashable: made anew (and said what is wrong)
                recent_key = recent = None
            if recent is not None:
                return recent
        own = None
        if metadata is not None:
            meta = attrs.evolve(metadata, local=True)
        elif mcp_annotations is not None or mcp_server is not None:
            meta = _mcp_metadata(mcp_annotations or {}, mcp_server)
            own = mcp_name if mcp_name and mcp_name != name else None
            if name in self.effects:
                meta = attrs.evolve(meta, effect=self.effects[name])
        else:
            known = name in self.effects or _is_effect(effect)
            meta = ToolMetadata(
                effect=self.effect_of(name, effect),
                timeout=None,
                local=True,
                source=None if known else UNKNOWN_EFFECT_SOURCE,
            )
        key = (name, description, pydantic_core.to_json(schema).decode(), meta, own)
        with self._lock:
            tool = self._tools.get(key)
        if tool is None:
            if own is None:
                tool = raw_tool(name, description or name, schema, _continue, metadata=meta)
            else:  # made under the server's name, called by the framework's
                try:
                    made = raw_tool(own, description or name, schema, _continue, metadata=meta)
                except ToolDefinitionError:  # a name toolwire refuses: the framework's only
                    made = raw_tool(name, description or name, schema, _continue, metadata=meta)
                tool = made.renamed(name)
            with self._lock:
                if len(self._tools) > 4096:  # tools made on the fly: bounded
                    self._tools.clear()
                self._tools[key] = tool
        if recent_key is not None:
            with self._lock:
                if len(self._recent) > 4096:
                    self._recent.clear()
                self._recent[recent_key] = tool
        return tool

    # -- approvals ----------------------------------------------------------------------

    def approve(self, key: str) -> None:
        """A person approved the call ``key`` names (a :attr:`Governed.approval`): the
        next call with the same tool, arguments and principal runs, once."""
        if not isinstance(key, str) or not key.startswith("sha256:"):
            raise UsageError(f"not an approval key: {key!r}")
        with self._lock:
            self._approved.add(key)

    def forget(self, key: str) -> None:
        """Withdraw an approval not spent (a person said no after all)."""
        with self._lock:
            self._approved.discard(key)

    # -- calls --------------------------------------------------------------------------

    async def arun(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any] | str,
        proceed: Callable[[dict[str, Any]], Any] | None = None,
        *,
        call_id: str = "",
        principal: Principal | None = None,
        session_id: str = "",
        model: str = "",
        rewrite: bool = True,
    ) -> Governed:
        """Decide one call of ``tool`` with ``arguments`` and, when the policies allow
        it, run it: ``proceed(arguments)`` (sync or async: the framework's own tool) for a
        :meth:`foreign_tool`, the tool itself for a toolwire tool. ``arguments`` may be a
        mapping or the model's JSON text. ``rewrite=False``: the framework cannot pass
        other arguments to its tool, so a call whose arguments a hook or an approver
        rewrote is refused, saying so. Never raises for the call's own failures."""
        text = arguments if isinstance(arguments, str) else _json(arguments)
        call = ToolCall(call_id or "call", tool.name, text)
        foreign = tool.fn is _continue
        if foreign and proceed is None:
            raise UsageError(f"`{tool.name}` is a foreign tool: give proceed")
        holder = _Holder(proceed, None, rewrite)
        holder.here = _HERE.get()
        if holder.here is not None:
            _HERE.set(None)  # this call's, not the calls its tool makes
        holder.inline = _INLINE.get()
        if holder.inline is not None:
            _INLINE.set(None)
        context = self._context(principal, session_id, model)
        try:
            if foreign and text is not arguments:  # what toolwire wrote from the mapping
                given = tool._raw_check().written(text)
            else:
                given = tool.validate_json(text)
            typed = TypedCall(call, tool, given)
        except Exception as exc:
            reason = f"the arguments of `{tool.name}` are invalid: {exc}"
            host = self.executor._host
            if host is not None:  # an attempt no decision hook saw: audited all the same
                event = AuditEvent(
                    "invalid_arguments", reason, tool.name, call.id, text, "toolwire", call
                )
                host.audit(event, context)
            return Governed("refused", reason)
        holder.given = typed.input
        token = _CURRENT.set(holder)
        try:
            result = await self.executor.aexecute(typed, context=context)
        finally:
            _CURRENT.reset(token)
        if holder.approval is not None:
            key, why = holder.approval
            return Governed("approval", why, approval=key)
        refused = rejection_reason(result)
        if refused is not None:
            return Governed("refused", refused)
        if holder.refusal is not None:
            return Governed("refused", holder.refusal)
        if result.is_error:
            return Governed("error", result.content, raised=holder.error)
        value = holder.value if holder.called else result.content
        plain = _plain(tool, value) if holder.called else result.content
        return Governed("ok", result.content, value=value, rewritten=plain != result.content)

    def run(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any] | str,
        proceed: Callable[[dict[str, Any]], Any] | None = None,
        **options: Any,
    ) -> Governed:
        """Sync :meth:`arun`, for a framework that calls its tools synchronously. With an
        event loop running in this thread (a notebook, a framework's own loop), the call
        runs on a loop of its own in a worker thread, and this thread waits for it."""
        if asyncio.events._get_running_loop() is None:  # (get_running_loop would raise)
            return self._run_here(tool, arguments, proceed, options)
        # The wait is bounded by the call itself: the executor holds it to its timeout.
        with concurrent.futures.ThreadPoolExecutor(1, "toolwire-governor") as pool:
            context = contextvars.copy_context()
            job = pool.submit(
                context.run, asyncio.run, self.arun(tool, arguments, proceed, **options)
            )
            return job.result()

    def begin(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any] | str,
        **options: Any,
    ) -> Governed | Underway:
        """Decide a call whose tool the framework runs itself, between a hook before it and
        one after (CrewAI's): the outcome when the policies answered without it running
        (refused, an approval to ask for, a toolwire tool run here), else an
        :class:`Underway` with the arguments decided, for the framework to run and then
        :meth:`Underway.finish`. For sync code with no event loop running in its thread
        (else use :meth:`arun`): the call is decided in this thread, a loop of a pool
        marked running here, and no loop runs while the framework's tool does.
        ``options`` as :meth:`arun`'s.

        A call decided at once (sync hooks) runs no task: its hooks find no current task
        (``asyncio.current_task()`` is None). What waits (a hook's awaitable, a store
        across the network, a person) waits in a task of that loop, as with :meth:`arun`."""
        if asyncio.events._get_running_loop() is not None:
            raise UsageError("Governor.begin() is for sync code with no event loop running")
        coro = self.arun(tool, arguments, _by_the_caller, **options)
        try:
            loop = take_loop()
        except BaseException:
            coro.close()  # never started: closed, not left "never awaited"
            raise
        here = _Here(loop)
        context = contextvars.copy_context()
        context.run(_HERE.set, here)
        # Stepped in this thread until it must wait (toolwire._sync.step_inline): a call
        # decided at once runs no task and no loop step.
        underway = Underway(loop, coro, context, here)
        try:
            if underway._step():
                return underway
            return underway._end()
        except BaseException:
            underway.cancel()
            raise

    def _run_here(
        self,
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any] | str,
        proceed: Callable[[dict[str, Any]], Any] | None,
        options: dict[str, Any],
    ) -> Governed:
        """:meth:`run` with no loop running in this thread: the call is decided on a
        loop of a pool, and the framework's own tool runs here, as it runs without
        toolwire (on this thread, with no event loop running: frameworks take other
        paths inside one), in the context the call is decided in (a copy of the caller's,
        so what the tool sets in it stays there)."""
        if proceed is None:
            return run_on_pooled_loop(self.arun(tool, arguments, None, **options))
        token = _INLINE.set(sys.get_asyncgen_hooks())
        try:
            return run_on_pooled_loop(self.arun(tool, arguments, proceed, **options))
        finally:
            _INLINE.reset(token)

    def _context(self, principal: Principal | None, session_id: str, model: str) -> HookContext:
        who = principal or self.principal
        key = (who, session_id, model)
        try:
            found = self._contexts.get(key)
        except TypeError:  # not a principal (HookContext says so) or an odd session id
            return HookContext(
                app=self.app, session_id=session_id, model=model, principal=who, extra=self._extra
            )
        if found is None:
            found = HookContext(
                app=self.app, session_id=session_id, model=model, principal=who, extra=self._extra
            )
            with self._lock:
                if len(self._contexts) >= 1024:  # sessions come and go: bounded
                    self._contexts.clear()
                self._contexts[key] = found
        return found


def _ask_the_bridge(call: TypedCall[Any], reason: str) -> bool:
    """The approver a governed call's policies ask, only when the policy needs a person and
    no approval it holds fits: the bridge pauses in its framework's way, with the key that
    approves it (its call's, found in the context the call is decided in)."""
    holder = _CURRENT.get(None)
    if holder is not None:
        holder.approval = ("sha256:" + call_fingerprint(call), reason)
    return False


class _Spent:
    """The governor's approvals as the policy spends them: ``in`` then ``remove``, under
    the governor's lock, so one approval runs one call."""

    __slots__ = ("_governor",)

    def __init__(self, governor: Governor) -> None:
        self._governor = governor

    def __contains__(self, key: object) -> bool:
        with self._governor._lock:
            return key in self._governor._approved

    def remove(self, key: str) -> None:
        with self._governor._lock:
            self._governor._approved.remove(key)

    def discard(self, key: str) -> None:
        with self._governor._lock:
            self._governor._approved.discard(key)


def tools_of(*sources: Any) -> list[Tool[Any, Any]]:
    """The toolwire tools a bridge turns into its framework's: the installed tool packs
    (no sources), else each source's: a Toolset's tools, a tool, or an iterable of tools
    (functions and ``@tool_input`` models are made tools as ``tool_of`` makes them)."""
    if not sources:
        from toolwire._plugins.host import get_host

        return list(get_host().assemble().tools())
    found: list[Tool[Any, Any]] = []
    for source in sources:
        if isinstance(source, Toolset):
            found.extend(source.tools())
        elif isinstance(source, Tool):
            found.append(source)
        elif isinstance(source, Iterable) and not isinstance(source, (str, bytes, Mapping)):
            found.extend(tool_of(item) for item in source)
        else:
            found.append(tool_of(source))
    return found


def principal_of(found: Any) -> Principal | None:
    """A principal as a framework's run carries it: a :class:`~toolwire.Principal`, a
    subject (a non-empty string), or a mapping with ``subject`` (and ``groups``), as a
    run's serialisable inputs or state hold it; anything else is nobody (None)."""
    if found is None or isinstance(found, Principal):
        return found
    if isinstance(found, str) and found:
        return Principal(found)
    if isinstance(found, Mapping) and isinstance(found.get("subject"), str):
        groups = found.get("groups") or ()
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
            raise UsageError(f"a principal's groups must be a list of names, got {groups!r}")
        return Principal(found["subject"], groups=frozenset(str(g) for g in groups))
    return None


def principal_in(container: Any) -> Principal | None:
    """The principal a framework's run context holds: the context itself when it is one,
    else what it holds under the key or attribute ``principal`` (:func:`principal_of`)."""
    if container is None or isinstance(container, Principal):
        return container
    if isinstance(container, Mapping):
        return principal_of(container.get("principal"))
    return principal_of(getattr(container, "principal", None))


def queued_request(outcome: Governed, tool: str) -> str | None:
    """The approval request a refusal names when the call waits for the people the policy
    names (the approval queue, filed by this process for ``tool``, still pending): the id a
    bridge pauses its framework with, to resume once they answered. None otherwise."""
    if outcome.status != "refused":  # every call a bridge makes asks: the common answer first
        return None
    from toolwire._approvals import PENDING, filed_request

    found = filed_request(outcome.content, tool)
    return found[1].id if found is not None and found[1].state() == PENDING else None


def approval_question(name: str, arguments: Mapping[str, Any], reason: str) -> str | None:
    """What a person is asked about a call a bridge pauses for: its tool, every argument
    (``review_arguments``) and why; None when the arguments are too long to show in full
    (the call is then refused, not asked about)."""
    shown = review_arguments(dict(arguments))
    if shown is None:
        return None
    return f"The organisation policy asks you to approve a call of `{name}` ({reason}):\n{shown}"


def _is_effect(value: Any) -> bool:
    try:
        ToolEffect(value)
    except ValueError:
        return False
    return True


def _json(arguments: Mapping[str, Any]) -> str:
    try:
        return pydantic_core.to_json(dict(arguments), fallback=str).decode()
    except Exception as exc:  # a value JSON cannot carry at all
        raise UsageError(f"the call's arguments cannot be written as JSON: {exc}") from None


def _plain(tool: Tool[Any, Any], value: Any) -> str:
    try:
        return tool.dump_output(value)
    except Exception:
        return ""


publish(globals())
