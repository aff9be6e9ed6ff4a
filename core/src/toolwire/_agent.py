"""A convenience tool loop: request, decode, hook, execute, commit, repeat until the answer.

Everything it uses is public and passed in (provider, toolset, session, hook
sets, executor), so an application or the ``toolwire chat`` command can hand
it the plugin host's pieces. The loop itself is written once, as a generator
of commands and events (``_loop``); the sync and async drivers carry out the
commands (a provider request, applying hooks, executing a plan).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Union

import attrs

from toolwire._calls import ToolCall, ToolResult
from toolwire._decode import InvalidArguments
from toolwire._errors import RoundLimitError, UsageError
from toolwire._execute.executor import Executor
from toolwire._execute.hosting import _resolve_host
from toolwire._execute.paused import RoundExecution
from toolwire._exports import publish
from toolwire._hooks import HookContext, HookSet, Principal
from toolwire._output import ModelSettings, output_spec
from toolwire._provider import (
    Provider,
    ReplyCollector,
    ReplyCompleted,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from toolwire._round import (
    AssistantReply,
    Finished,
    ToolRound,
    ToolRoundPlan,
    decode_reply,
)
from toolwire._toolset import Toolset
from toolwire._transcript import AssistantMessage, Session, ToolResultsMessage, Usage
from toolwire._turn import Requirement, ResolvedTurn, Turn

if TYPE_CHECKING:
    from toolwire._otel import ChatSpan, Tracing

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentFinished",
    "AgentResult",
    "ApprovalNeeded",
    "RoundCommitted",
    "ToolCallDecided",
    "ToolResultReady",
    "arun_agent",
    "run_agent",
]


@attrs.frozen
class ToolCallDecided:
    """What happened to one call of the model, after hooks and before execution.

    ``outcome``: ``run`` (pending, goes to the executor), ``handled`` (a hook
    answered it), ``rejected`` (a hook rejected it, ``reason`` says why) or
    ``invalid`` (a recoverable issue: unknown tool, not offered, bad arguments;
    for bad arguments ``reason`` lists the errors per field).
    ``source`` names the hook (or plugin, ``plugin:NAME``) that rejected or answered
    the call; empty for ``run`` and ``invalid`` (toolwire's own checks).
    """

    round: int
    call: ToolCall
    outcome: Literal["run", "handled", "rejected", "invalid"]
    reason: str = ""
    source: str = ""


@attrs.frozen
class ToolResultReady:
    """One committed tool result (in the assistant's order)."""

    round: int
    result: ToolResult


@attrs.frozen
class RoundCommitted:
    """A tool round is in the session; ``results`` in the assistant's order."""

    round: int
    results: tuple[ToolResult, ...]


@attrs.frozen
class ApprovalNeeded:
    """The approver deferred: nothing ran or was committed; resume ``run`` with the decisions.

    ``executor.resume(event.run, approvals)`` commits the round; run the agent
    on the same session again to continue the conversation.
    """

    round: int
    run: RoundExecution


@attrs.frozen
class AgentResult:
    """How a loop ended.

    ``status``: ``finished`` (the model answered; ``text`` is the answer and, with
    an ``output_type``, ``output`` the validated value),
    ``stopped`` (``stop_when`` returned true after a round) or
    ``approval_pending`` (``pending`` is the RoundExecution to resume).
    """

    status: Literal["finished", "stopped", "approval_pending"]
    text: str
    session: Session
    rounds: int
    usage: Usage
    message: AssistantMessage | None = None
    pending: RoundExecution | None = None
    #: The answer validated into the agent's ``output_type`` (None without one).
    output: Any = None


@attrs.frozen
class AgentFinished:
    """The last event of a loop."""

    result: AgentResult


AgentEvent = Union[
    TextDelta,
    ToolCallStarted,
    ToolCallDelta,
    ReplyCompleted,
    ToolCallDecided,
    ToolResultReady,
    RoundCommitted,
    ApprovalNeeded,
    AgentFinished,
]


# commands the loop yields to its driver
@attrs.frozen
class _Request:
    turn: ResolvedTurn


@attrs.frozen
class _Hook:
    round: ToolRound


@attrs.frozen
class _Execute:
    plan: ToolRoundPlan


_Loop = Generator[Union[AgentEvent, _Request, _Hook, _Execute], Any, None]


class Agent:
    """The tool loop, ready to run on sessions.

    - ``provider``, ``toolset``: what to ask and which tools to offer;
    - ``executor``: runs the pending calls (default ``Executor()``);
    - ``plugins``: the plugin host whose hook sets (policies first, then tool
      packs) run before ``hooks``, every round: ``True`` (the default) is the
      process's host (``toolwire.get_host()``), ``False`` none; a default
      executor uses the same host for result hooks and failed policies;
    - ``hooks``: the application's hook sets, applied every round after the
      plugins' and before the toolset's own;
    - ``turn``: the turn for a request that follows a user message (default:
      default availability, optional requirement);
    - ``follow_up``: the turn for requests after a tool round; by default
      ``turn`` with ``Requirement.optional()``, so a forced tool call
      (``at_least_one`` / ``specific``) is forced once, not forever;
    - ``context``: the HookContext (default: session id, provider, model);
    - ``principal``: who the calls are made for (a Principal; in every round's
      HookContext, so policies decide by it; None: anonymous);
    - ``max_rounds`` (20): tool rounds per run; the model asking for tools
      once more raises RoundLimitError (that reply is not committed);
    - ``stop_when(results) -> bool``: checked after each committed round;
    - ``tracing``: a Tracing for ``chat`` spans (give the executor its own
      for ``execute_tool`` spans; a default executor gets this one);
    - ``output_type``: the final answer's type (a pydantic model, dataclass,
      TypedDict or any type pydantic validates): rendered in the provider's native
      structured-output form, validated into ``AgentResult.output``; an answer that
      does not match is sent back to the model with the errors, at most
      ``output_retries`` (2) times, then OutputValidationError is raised;
    - ``settings``: the ModelSettings of every request (``run(settings=...)`` layers
      a run's own on top, the turn's own go under both).
    """

    def __init__(
        self,
        provider: Provider,
        toolset: Toolset,
        *,
        executor: Executor | None = None,
        hooks: Sequence[HookSet] = (),
        turn: Turn | None = None,
        follow_up: Turn | None = None,
        context: HookContext | None = None,
        max_rounds: int = 20,
        stop_when: Callable[[tuple[ToolResult, ...]], bool] | None = None,
        tracing: Tracing | None = None,
        enforce_requirement: bool = True,
        plugins: Any = True,
        output_type: Any = None,
        output_retries: int = 2,
        settings: ModelSettings | None = None,
        principal: Principal | None = None,
    ) -> None:
        if not isinstance(provider, Provider):
            raise UsageError(f"provider must be a toolwire Provider, got {type(provider).__name__}")
        if not isinstance(toolset, Toolset):
            raise UsageError(f"toolset must be a Toolset, got {type(toolset).__name__}")
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 0:
            raise UsageError(f"max_rounds must be an int >= 0, got {max_rounds!r}")
        if isinstance(output_retries, bool) or not isinstance(output_retries, int):
            raise UsageError(f"output_retries must be an int >= 0, got {output_retries!r}")
        if output_retries < 0:
            raise UsageError(f"output_retries must be an int >= 0, got {output_retries!r}")
        if settings is not None and not isinstance(settings, ModelSettings):
            raise UsageError(f"settings must be a ModelSettings, got {type(settings).__name__}")
        self.output = output_spec(output_type) if output_type is not None else None
        self.output_retries = output_retries
        self.settings = settings
        self.provider = provider
        host = _resolve_host(plugins)
        # Installed tool packs join the application's tools; plugins=False leaves them
        # out, and the policies apply all the same (host is then a PolicyHost).
        self.toolset = host.assemble(toolset)
        self.host = host
        self.executor = (
            executor if executor is not None else Executor(tracing=tracing, plugins=host)
        )
        # The application's sets; the host's are read every round (a policy registered
        # after this agent was made still applies). A set the caller passed that the host
        # also supplies (code written as hooks=host.hook_sets()) is not applied twice.
        self.hooks = tuple(hooks)
        self.turn = turn if turn is not None else Turn()
        self.follow_up = (
            follow_up
            if follow_up is not None
            else attrs.evolve(self.turn, requirement=Requirement.optional())
        )
        if principal is not None and not isinstance(principal, Principal):
            raise UsageError(
                f"principal must be a toolwire.Principal, got {type(principal).__name__}"
            )
        if principal is not None and context is not None:
            if context.principal not in (None, principal):
                raise UsageError("principal= and context.principal name different principals")
            context = attrs.evolve(context, principal=principal)
        self.principal = principal if principal is not None else getattr(context, "principal", None)
        self.context = context
        self.max_rounds = max_rounds
        self.stop_when = stop_when
        self.tracing = tracing
        self.enforce_requirement = enforce_requirement

    def __repr__(self) -> str:
        return f"<Agent provider={self.provider!r} toolset={self.toolset.name!r}>"

    def restore(self, data: Any, session: Session) -> RoundExecution:
        """Rebuild a paused round saved with ``result.pending.to_dict()``.

        ``session`` is the session restored from JSON; the pending calls are
        validated against the turn this agent would offer on it, with this
        agent's hook context, and the guard hooks of that turn (the host's
        policies, guard hook sets) run on them again when the run is resumed.
        The data is as trusted as the session JSON it was stored with, and
        must be consumed once (resuming it twice runs its calls twice).
        Resume it with ``agent.executor.resume(...)``, then run the agent on
        the session again.
        """
        ctx = self._context(session)
        config = self.follow_up if isinstance(session.last, ToolResultsMessage) else self.turn
        turn = self._resolve(config, ctx, self.settings)
        return RoundExecution.from_dict(data, session, turn, context=ctx)

    # -- the loop, once -------------------------------------------------------------------

    def _context(self, session: Session) -> HookContext:
        if self.context is not None:
            return self.context
        return HookContext(
            session_id=session.id,
            provider=self.provider.name,
            model=self.provider.model,
            principal=self.principal,
        )

    def _plugins(self) -> Any:
        """Whose policies decide this agent's rounds (resolve_turn's ``plugins``)."""
        return self.host

    def _hook_sets(self) -> tuple[HookSet, ...]:
        host_sets = self.host.hook_sets()
        return (*host_sets, *(h for h in self.hooks if all(h is not s for s in host_sets)))

    def _settings(self, settings: ModelSettings | None) -> ModelSettings | None:
        """A run's settings on top of the agent's (once per run)."""
        if settings is None or self.settings is None:
            return settings if settings is not None else self.settings
        return self.settings.merged(settings)

    def _resolve(
        self, config: Turn, ctx: HookContext, settings: ModelSettings | None
    ) -> ResolvedTurn:
        """``config`` for this agent; ``settings`` are the run's, already merged."""
        return config.resolve(
            self.toolset,
            hooks=self._hook_sets(),
            context=ctx,
            plugins=self._plugins(),
            output_type=self.output,
            settings=settings,
        )

    def _loop(self, session: Session, settings: ModelSettings | None) -> _Loop:
        ctx = self._context(session)
        settings = self._settings(settings)
        usage = Usage()
        rounds = 0
        retries = 0
        resuming = isinstance(session.last, ToolResultsMessage)
        config = self.follow_up if resuming else self.turn
        while True:
            turn = self._resolve(config, ctx, settings)
            reply: AssistantReply = yield _Request(turn)
            if reply.usage is not None:
                usage = usage + reply.usage
            outcome = decode_reply(
                session, turn, reply, enforce_requirement=self.enforce_requirement
            )
            if isinstance(outcome, Finished):
                error = outcome.output_error
                if error is not None:
                    if retries >= self.output_retries:
                        raise error
                    # The answer stays in the session; the errors go back as the user's reply.
                    retries += 1
                    session.add_user(error.feedback)
                    config = self.follow_up
                    continue
                yield AgentFinished(
                    AgentResult(
                        "finished",
                        outcome.text,
                        session,
                        rounds,
                        usage,
                        outcome.message,
                        output=outcome.output,
                    )
                )
                return
            round_ = outcome.round
            if rounds >= self.max_rounds:
                round_.discard()
                names = ", ".join(f"`{c.name}`" for c in round_.tool_calls)
                raise RoundLimitError(
                    f"the agent loop reached max_rounds={self.max_rounds}: after {rounds} tool "
                    f"round(s) the model asked for tools again ({names}); that reply was not "
                    f"committed. Raise max_rounds, or end the loop earlier with stop_when"
                )
            rounds += 1
            plan: ToolRoundPlan = yield _Hook(round_)
            yield from _decisions(rounds, round_, plan)
            run: RoundExecution = yield _Execute(plan)
            if run.pending:
                yield ApprovalNeeded(rounds, run)
                yield AgentFinished(
                    AgentResult("approval_pending", "", session, rounds, usage, round_.message, run)
                )
                return
            last = session.last
            committed = last.results if isinstance(last, ToolResultsMessage) else ()
            for r in committed:
                yield ToolResultReady(rounds, r)
            yield RoundCommitted(rounds, committed)
            if self.stop_when is not None and self.stop_when(committed):
                yield AgentFinished(
                    AgentResult("stopped", "", session, rounds, usage, round_.message)
                )
                return
            config = self.follow_up

    def _span(self) -> AbstractContextManager[ChatSpan | None]:
        if self.tracing is None:
            return nullcontext()
        return self.tracing.chat_span(self.provider)

    # -- sync -----------------------------------------------------------------------------

    def stream(
        self,
        session: Session,
        prompt: str | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> Iterator[AgentEvent]:
        """Run the loop, yielding every event (provider stream events included)."""
        return self._drive(session, prompt, streaming=True, settings=settings)

    def run(
        self,
        session: Session,
        prompt: str | None = None,
        *,
        on_event: Callable[[AgentEvent], Any] | None = None,
        stream: bool = False,
        settings: ModelSettings | None = None,
    ) -> AgentResult:
        """Run the loop to its end; ``on_event`` sees each event.

        With ``stream=True`` the provider streams and its events are included;
        ``settings`` go on top of the agent's for this run.
        """
        for event in self._drive(session, prompt, streaming=stream, settings=settings):
            if on_event is not None:
                on_event(event)
            if isinstance(event, AgentFinished):
                return event.result
        raise AssertionError("the agent loop ended without finishing")  # pragma: no cover

    def _drive(
        self,
        session: Session,
        prompt: str | None,
        *,
        streaming: bool,
        settings: ModelSettings | None = None,
    ) -> Iterator[Any]:
        _check_settings(settings)
        if prompt is not None:
            session.add_user(prompt)
        loop = self._loop(session, settings)
        value: Any = None
        while True:
            try:
                item = loop.send(value)
            except StopIteration:
                return
            value = None
            if isinstance(item, _Request):
                value = yield from self._request(session, item.turn, streaming)
            elif isinstance(item, _Hook):
                value = item.round.apply_hooks()
            elif isinstance(item, _Execute):
                value = self.executor.execute_and_commit(item.plan)
            else:
                yield item

    def _request(
        self, session: Session, turn: ResolvedTurn, streaming: bool
    ) -> Generator[StreamEvent, None, AssistantReply]:
        with self._span() as span:
            if streaming:
                collector = ReplyCollector()
                events = self.provider.stream(session, turn)
                try:
                    for event in events:
                        yield event
                        if collector.feed(event):
                            break
                finally:
                    close = getattr(events, "close", None)
                    if close is not None:
                        close()
                reply = collector.result()
            else:
                reply = self.provider.generate(session, turn)
            if span is not None:
                span.record(reply)
        return reply

    # -- async ----------------------------------------------------------------------------

    def astream(
        self,
        session: Session,
        prompt: str | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Async :meth:`stream`."""
        return self._adrive(session, prompt, streaming=True, settings=settings)

    async def arun(
        self,
        session: Session,
        prompt: str | None = None,
        *,
        on_event: Callable[[AgentEvent], Any] | None = None,
        stream: bool = False,
        settings: ModelSettings | None = None,
    ) -> AgentResult:
        """Async :meth:`run`; ``on_event`` may be sync or async."""
        async for event in self._adrive(session, prompt, streaming=stream, settings=settings):
            if on_event is not None:
                out = on_event(event)
                if hasattr(out, "__await__"):
                    await out
            if isinstance(event, AgentFinished):
                return event.result
        raise AssertionError("the agent loop ended without finishing")  # pragma: no cover

    async def _adrive(
        self,
        session: Session,
        prompt: str | None,
        *,
        streaming: bool,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[Any]:
        _check_settings(settings)
        if prompt is not None:
            session.add_user(prompt)
        loop = self._loop(session, settings)
        value: Any = None
        while True:
            try:
                item = loop.send(value)
            except StopIteration:
                return
            value = None
            if isinstance(item, _Request):
                with self._span() as span:
                    reply: AssistantReply
                    if streaming:
                        collector = ReplyCollector()
                        async for event in self.provider.astream(session, item.turn):
                            yield event
                            if collector.feed(event):
                                break
                        reply = collector.result()
                    else:
                        reply = await self.provider.agenerate(session, item.turn)
                    if span is not None:
                        span.record(reply)
                value = reply
            elif isinstance(item, _Hook):
                value = await item.round.aapply_hooks()
            elif isinstance(item, _Execute):
                value = await self.executor.aexecute_and_commit(item.plan)
            else:
                yield item


def _check_settings(settings: Any) -> None:
    if settings is not None and not isinstance(settings, ModelSettings):
        raise UsageError(f"settings must be a ModelSettings, got {type(settings).__name__}")


def _decisions(rounds: int, round_: ToolRound, plan: ToolRoundPlan) -> Iterator[ToolCallDecided]:
    outcome: dict[str, tuple[Literal["run", "handled", "rejected", "invalid"], str, str]] = {}
    for c in plan.pending:
        outcome[c.id] = ("run", "", "")
    for h in plan.handled:
        outcome[h.call.id] = ("handled", "", h.source)
    for r in plan.rejected:
        outcome[r.call.id] = ("rejected", r.reason, r.source)
    for issue in plan.issues:
        reason = issue.reason
        if isinstance(issue, InvalidArguments) and issue.errors:
            reason = f"{reason}:\n{issue.detail()}"  # per field, as the model reads it
        outcome[issue.call.id] = ("invalid", reason, "")
    for call in round_.tool_calls:
        kind, reason, source = outcome.get(call.id, ("invalid", "", ""))
        yield ToolCallDecided(rounds, call, kind, reason, source)


def run_agent(
    provider: Provider,
    toolset: Toolset,
    session: Session,
    prompt: str | None = None,
    *,
    on_event: Callable[[AgentEvent], Any] | None = None,
    stream: bool = False,
    **options: Any,
) -> AgentResult:
    """Run the tool loop once: ``Agent(provider, toolset, **options).run(session, prompt)``."""
    return Agent(provider, toolset, **options).run(
        session, prompt, on_event=on_event, stream=stream
    )


async def arun_agent(
    provider: Provider,
    toolset: Toolset,
    session: Session,
    prompt: str | None = None,
    *,
    on_event: Callable[[AgentEvent], Any] | None = None,
    stream: bool = False,
    **options: Any,
) -> AgentResult:
    """Async :func:`run_agent`."""
    return await Agent(provider, toolset, **options).arun(
        session, prompt, on_event=on_event, stream=stream
    )


publish(globals())
