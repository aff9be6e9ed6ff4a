"""toolwire.bridges: the Governor every framework bridge is built on. Its answers for each
kind of call, and its refusals of what it is given that it cannot check (a framework's
schema, arguments, an approval key): clear errors, never a tool run unchecked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import toolwire as tw
from toolwire.bridges import FRAMEWORK, Governed, Governor, Underway

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}


class Decides:
    """A policy plugin: denies `drop_*`, asks approval for `send_*` through the policy
    keys (as toolwire-policy does), rewrites `shout`'s argument, and keeps what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, Any]] = []

    @tw.hookimpl
    def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: tw.HookContext) -> Any:
        self.seen.append((call.name, context.extra.get(FRAMEWORK), context.principal))
        if call.name.startswith("drop_"):
            return tw.Reject("dropping is denied")
        if call.name.startswith("send_"):
            approved = context.extra.get("toolwire.approved")
            key = "sha256:" + tw.call_fingerprint(call)
            if approved is not None and key in approved:
                approved.remove(key)
                return None
            asker = context.extra.get("toolwire.approver")
            assert asker is not None
            if asker(call, "requires approval: sending"):
                return None
            return tw.Reject("requires approval: sending")
        if call.name == "shout":
            return tw.RunNormally({"to": call.input["to"].upper()})
        return None


@pytest.fixture
def policy() -> Decides:
    return Decides()


@pytest.fixture
def governor(policy: Decides) -> Governor:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    return Governor("testframe", plugins=host, principal=tw.Principal("alice"))


def run(governor: Governor, name: str, args: Any, proceed: Any, **kw: Any) -> Governed:
    tool = governor.foreign_tool(name, f"The {name} tool.", SCHEMA, effect=kw.pop("effect", None))
    return asyncio.run(governor.arun(tool, args, proceed, **kw))


def test_an_allowed_call_runs_the_frameworks_tool_once(governor: Governor, policy: Decides) -> None:
    ran: list[dict[str, Any]] = []
    out = run(governor, "lookup", {"to": "x"}, lambda a: ran.append(a) or "found", call_id="c1")
    assert ("ok", "found", "found", False) == (out.status, out.content, out.value, out.rewritten)
    assert [{"to": "x"}] == ran
    assert [("lookup", "testframe", tw.Principal("alice"))] == policy.seen


def test_a_denied_call_does_not_run_and_says_why(governor: Governor) -> None:
    out = run(governor, "drop_db", {"to": "x"}, lambda a: pytest.fail("ran"))
    assert "refused" == out.status
    assert "dropping is denied" in out.content


def test_an_approval_is_bound_to_the_arguments_and_spent_once(governor: Governor) -> None:
    ran: list[Any] = []

    def send(a: dict[str, Any]) -> str:
        ran.append(a)
        return "sent"

    first = run(governor, "send_mail", {"to": "bob"}, send)
    assert ("approval", []) == (first.status, ran)
    assert first.approval is not None
    assert first.approval.startswith("sha256:")
    governor.approve(first.approval)
    other = run(governor, "send_mail", {"to": "eve"}, send)  # not what was approved
    assert ("approval", []) == (other.status, ran)
    assert ("ok", "sent") == (run(governor, "send_mail", {"to": "bob"}, send).status, "sent")
    assert "approval" == run(governor, "send_mail", {"to": "bob"}, send).status  # spent
    assert [{"to": "bob"}] == ran


def test_calls_at_once_each_get_the_key_of_their_own_arguments(governor: Governor) -> None:
    # One context is shared by the calls of a principal and session: the key a call needs
    # is its own, however its decision interleaves with another's.
    tool = governor.foreign_tool("send_mail", "Send.", SCHEMA)

    async def both() -> list[Governed]:
        async def proceed(a: dict[str, Any]) -> str:
            await asyncio.sleep(0)
            return "sent"

        return await asyncio.gather(
            *(governor.arun(tool, {"to": to}, proceed, session_id="s") for to in ("bob", "eve"))
        )

    bob, eve = asyncio.run(both())
    assert ("approval", "approval") == (bob.status, eve.status)
    assert bob.approval != eve.approval
    governor.approve(str(eve.approval))
    assert "approval" == run(governor, "send_mail", {"to": "bob"}, lambda a: "sent").status
    assert "ok" == run(governor, "send_mail", {"to": "eve"}, lambda a: "sent").status


def test_what_the_hooks_are_given_besides_the_call_is_read_only(policy: Decides) -> None:
    class Writes:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: tw.HookContext) -> Any:
            context.extra["toolwire.approved"] = {"sha256:" + tw.call_fingerprint(call)}  # type: ignore[index]
            return None

    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    host.register(Writes(), "writes", kind="policy")  # asked first (pluggy: last in, first)
    governor = Governor("testframe", plugins=host)
    out = run(governor, "send_mail", {"to": "bob"}, lambda a: pytest.fail("ran"))
    assert not out.ran  # the plugin could not approve this call (nor every one after it)
    assert "failed" in out.content


def test_a_rewrite_the_framework_cannot_pass_is_refused(governor: Governor) -> None:
    out = run(governor, "shout", {"to": "bob"}, lambda a: pytest.fail("ran"), rewrite=False)
    assert "refused" == out.status
    assert "cannot pass other arguments" in out.content
    took = run(governor, "shout", {"to": "bob"}, lambda a: a["to"], rewrite=True)
    assert ("ok", "BOB") == (took.status, took.value)


def test_the_frameworks_own_exception_comes_back_to_re_raise(governor: Governor) -> None:
    class FrameworkRetry(Exception):
        pass

    def fails(a: Any) -> Any:
        raise FrameworkRetry("try another city")

    out = run(governor, "lookup", {"to": "x"}, fails)
    assert "error" == out.status
    assert isinstance(out.raised, FrameworkRetry)


def test_an_async_continuation_is_awaited(governor: Governor) -> None:
    async def later(a: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "later " + a["to"]

    assert "later x" == run(governor, "lookup", {"to": "x"}, later).value


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"to": 3}, "invalid"),  # not what the schema says
        ({}, "invalid"),
        ("{not json", "invalid"),
        ("[1, 2]", "invalid"),
    ],
)
def test_arguments_the_schema_refuses_are_refused_not_run(
    governor: Governor, args: Any, said: str
) -> None:
    out = run(governor, "lookup", args, lambda a: pytest.fail("ran"))
    assert "refused" == out.status
    assert said in out.content


@pytest.mark.parametrize(
    "schema",
    [{"type": "object", "properties": {"a": {"type": "no-such-type"}}}, {"type": 3}],
)
def test_a_schema_that_is_no_json_schema_is_refused_at_once(
    governor: Governor, schema: Any
) -> None:
    with pytest.raises(tw.ToolDefinitionError):
        governor.foreign_tool("odd", "odd", schema)


def test_arguments_json_cannot_carry_are_a_usage_error(governor: Governor) -> None:
    tool = governor.foreign_tool("lookup", "", SCHEMA)
    out = asyncio.run(governor.arun(tool, {"to": float("nan")}, lambda a: "x"))
    assert "refused" == out.status  # NaN is no JSON number: the schema refuses it


@pytest.mark.parametrize("key", ["", "abc", None, 3, "md5:00"])
def test_only_an_approval_key_approves(governor: Governor, key: Any) -> None:
    with pytest.raises(tw.UsageError, match="not an approval key"):
        governor.approve(key)


def test_effects_unknown_tools_count_as_destructive() -> None:
    governor = Governor("f", plugins=False, effects={"lookup": "read_only"})
    assert tw.ToolEffect.READ_ONLY == governor.effect_of("lookup", "destructive")  # mapping wins
    assert tw.ToolEffect.MUTATING == governor.effect_of("write", "mutating")  # the hint
    assert tw.ToolEffect.DESTRUCTIVE == governor.effect_of("write")  # nothing said
    assert tw.ToolEffect.DESTRUCTIVE == governor.effect_of("write", "harmless")  # nonsense
    with pytest.raises(tw.UsageError, match="effects"):
        Governor("f", effects={"x": "harmless"})
    with pytest.raises(tw.UsageError, match="framework's name"):
        Governor("")


def test_a_foreign_tool_runs_only_through_arun(governor: Governor) -> None:
    tool = governor.foreign_tool("lookup", "", SCHEMA)
    with pytest.raises(tw.UsageError, match="give proceed"):
        asyncio.run(governor.arun(tool, {"to": "x"}))
    # Called some other way (an executor of its own), it runs nothing and says so.
    result = tw.Executor(plugins=False).execute(
        tw.TypedCall(tw.ToolCall("c", "lookup", '{"to": "x"}'), tool, {"to": "x"})
    )
    assert result.is_error
    assert "only through Governor.arun" in result.content


def test_run_is_sync_and_works_inside_an_event_loop_too(governor: Governor) -> None:
    tool = governor.foreign_tool("lookup", "", SCHEMA)
    assert "ok" == governor.run(tool, {"to": "x"}, lambda a: "y").status

    async def inside() -> str:  # a notebook, a framework's own loop: run on one of its own
        return governor.run(tool, {"to": "x"}, lambda a: "z").value  # type: ignore[no-any-return]

    assert "z" == asyncio.run(inside())


def test_run_runs_a_sync_frameworks_tool_here_with_no_loop_running(governor: Governor) -> None:
    # A sync framework's tool is often sync code that runs a coroutine of its own with
    # asyncio.run: it failed under governance ("cannot be called from a running event
    # loop") when its body ran inside the loop the call was decided on.
    import contextvars
    import threading

    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    where = contextvars.ContextVar("where", default="elsewhere")
    where.set("the caller's context")
    seen: list[Any] = []

    async def fetch(to: str) -> str:
        return f"fetched {to}"

    def body(arguments: dict[str, Any]) -> str:
        seen.append((threading.current_thread(), where.get()))
        return asyncio.run(fetch(arguments["to"]))

    out = governor.run(tool, {"to": "x"}, body)
    assert ("ok", "fetched x") == (out.status, out.value), out.content
    assert [(threading.current_thread(), "the caller's context")] == seen
    # The framework's own failure still comes back to be raised, and a refusal runs nothing.
    failing = governor.run(tool, {"to": "x"}, lambda a: (_ for _ in ()).throw(KeyError("k")))
    assert ("error", KeyError) == (failing.status, type(failing.raised))
    stopped = governor.run(tool, {"to": "x"}, lambda a: next(iter(())))
    assert "error" == stopped.status  # a StopIteration is a failure, not a hang
    drop = governor.foreign_tool("drop_table", "", SCHEMA)
    assert "refused" == governor.run(drop, {"to": "x"}, lambda a: pytest.fail("ran")).status


def test_a_sync_tool_runs_as_its_thread_runs_it_and_an_interrupt_leaves_nothing_broken(
    governor: Governor,
) -> None:
    # Run inline while the pooled loop waits in its callback: the tool must see no loop
    # running, the caller's async generator hooks, and may run a loop of its own; an
    # interrupt in it reaches the caller, and the next call decides as before.
    import sys

    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    caller_hooks = sys.get_asyncgen_hooks()
    seen: list[Any] = []

    async def agen() -> Any:
        yield "from a generator"

    async def first() -> Any:
        async for item in agen():
            return item
        return None

    def body(arguments: dict[str, Any]) -> Any:
        seen.append((asyncio.events._get_running_loop(), sys.get_asyncgen_hooks()))
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(first())
        finally:
            loop.close()

    out = governor.run(tool, {"to": "x"}, body)
    assert ("ok", "from a generator") == (out.status, out.value), out.content
    assert [(None, caller_hooks)] == seen
    assert asyncio.events._get_running_loop() is None

    def interrupted(arguments: dict[str, Any]) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        governor.run(tool, {"to": "x"}, interrupted)
    assert asyncio.events._get_running_loop() is None
    assert sys.get_asyncgen_hooks() == caller_hooks
    assert ("ok", "x") == (lambda o: (o.status, o.value))(
        governor.run(tool, {"to": "x"}, lambda a: a["to"])
    )


def test_sync_calls_from_many_threads_reuse_a_few_loops_and_leave_nothing_behind(
    governor: Governor,
) -> None:
    import concurrent.futures
    import gc

    import toolwire._sync as sync

    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")

    def call(i: int) -> Any:
        # A new thread per call, as LangGraph runs a sync tool: the loops are pooled,
        # not made per thread, so the file descriptors do not grow with the calls.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(governor.run, tool, {"to": str(i)}, lambda a: a["to"]).result()

    with concurrent.futures.ThreadPoolExecutor(4) as outer:
        values = [o.value for o in outer.map(call, range(200))]
    assert [str(i) for i in range(200)] == values
    gc.collect()
    assert len(sync._idle) <= sync.MAX_IDLE
    for loop in sync._idle:
        assert (False, False) == (loop.is_running(), loop.is_closed())
        assert [] == [t for t in asyncio.all_tasks(loop) if not t.done()]


def test_begin_decides_and_the_framework_runs_its_tool_then_finishes(
    governor: Governor, policy: Decides
) -> None:
    from toolwire.bridges import Underway

    lookup = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    started = governor.begin(lookup, {"to": "x"}, call_id="c1")
    assert isinstance(started, Underway)
    assert {"to": "x"} == started.arguments
    done = started.finish("found")
    assert ("ok", "found") == (done.status, done.value)
    with pytest.raises(tw.UsageError, match="ended already"):
        started.finish("again")
    # A policy's rewrite is what the framework is given to run.
    shout = governor.foreign_tool("shout", "", SCHEMA, effect="read_only")
    rewritten = governor.begin(shout, {"to": "x"})
    assert isinstance(rewritten, Underway)
    assert {"to": "X"} == rewritten.arguments
    rewritten.cancel()
    # Refused, or waiting for a person: nothing for the framework to run.
    drop = governor.foreign_tool("drop_table", "", SCHEMA)
    refused = governor.begin(drop, {"to": "x"})
    assert isinstance(refused, Governed)
    assert refused.status == "refused"
    assert refused.content.endswith("dropping is denied")
    send = governor.foreign_tool("send_mail", "", SCHEMA)
    asked = governor.begin(send, {"to": "x"})
    assert isinstance(asked, Governed)
    assert "approval" == asked.status
    # The tool's own failure is the call's outcome, to raise again.
    failing = governor.begin(lookup, {"to": "x"})
    assert isinstance(failing, Underway)
    failed = failing.finish(error=KeyError("k"))
    assert ("error", KeyError) == (failed.status, type(failed.raised))


def test_begin_is_for_sync_code_and_leaves_no_loop_behind(governor: Governor) -> None:
    import toolwire._sync as sync

    lookup = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")

    async def inside() -> None:
        with pytest.raises(tw.UsageError, match="no event loop running"):
            governor.begin(lookup, {"to": "x"})

    asyncio.run(inside())
    for _ in range(50):  # begun and cancelled, begun and finished: the pool stays small
        started = governor.begin(lookup, {"to": "x"})
        assert not isinstance(started, Governed)
        started.cancel()
        again = governor.begin(lookup, {"to": "y"})
        assert not isinstance(again, Governed)
        again.finish("z")
    assert 1 <= len(sync._idle) <= sync.MAX_IDLE
    for loop in sync._idle:
        assert [] == [t for t in asyncio.all_tasks(loop) if not t.done()]


def test_begin_decides_a_call_its_hooks_answer_at_once_here_without_a_task() -> None:
    # Sync hooks: the call is stepped in the caller's thread, a pooled loop marked running
    # (a hook may ask for it) and no task made (the documented difference from arun).
    import threading

    seen: list[Any] = []

    class Looks:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: Any) -> Any:
            running = asyncio.get_running_loop()
            seen.append((threading.current_thread(), asyncio.current_task(), running))
            return tw.RunNormally({"to": call.input["to"] + "!"})

        @tw.hookimpl
        def toolwire_tool_result(self, call: Any, result: tw.ToolResult, context: Any) -> Any:
            seen.append((threading.current_thread(), asyncio.current_task()))
            return result.replace(content=result.content.upper())

    governor = Governor("testframe", plugins=_host_of(Looks()))
    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    started = governor.begin(tool, {"to": "x"})
    assert isinstance(started, Underway)
    assert {"to": "x!"} == started.arguments
    done = started.finish("found")
    assert ("ok", "FOUND", "found") == (done.status, done.content, done.value)
    here = threading.current_thread()
    assert [here, None] == list(seen[0][:2])
    assert seen[0][2] is not None
    assert (here, None) == seen[1]
    assert asyncio.events._get_running_loop() is None  # marked running only while deciding


def test_begin_with_hooks_that_wait_waits_in_a_task_as_arun_does() -> None:
    # Async hooks (a deadline of their own, a step given up), a hook's awaitable and an
    # async result hook: each finds its task, and the outcome is arun's.
    class Waits:
        def __init__(self) -> None:
            self.tasks: list[Any] = []

        @tw.hookimpl
        async def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: Any) -> Any:
            async with asyncio.timeout(5):
                await asyncio.sleep(0)
            self.tasks.append(asyncio.current_task())
            if call.input["to"] == "no":
                return tw.Reject("not to no")
            return tw.RunNormally({"to": call.input["to"] + "!"})

        @tw.hookimpl
        async def toolwire_tool_result(self, call: Any, result: tw.ToolResult, context: Any) -> Any:
            async with asyncio.timeout(5):
                await asyncio.sleep(0)
            self.tasks.append(asyncio.current_task())
            return result.replace(content=result.content.replace("secret", "[redacted]"))

    class Defers:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: Any) -> Any:
            async def later() -> None:
                async with asyncio.timeout(5):
                    await asyncio.sleep(0)
                assert asyncio.current_task() is not None

            return later()

    waits = Waits()
    governor = Governor("testframe", plugins=_host_of(waits, Defers()))
    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    started = governor.begin(tool, {"to": "x"})
    assert isinstance(started, Underway), started
    assert {"to": "x!"} == started.arguments
    done = started.finish("the secret")
    assert ("ok", "the [redacted]") == (done.status, done.content)
    assert 2 == len(waits.tasks)
    assert None not in waits.tasks
    refused = governor.begin(tool, {"to": "no"})
    assert isinstance(refused, Governed)
    assert refused.content.endswith("not to no")
    same = asyncio.run(governor.arun(tool, {"to": "x"}, lambda a: "the secret " + a["to"]))
    assert ("ok", "the [redacted] x!") == (same.status, same.content)
    # A pack's tool the framework runs keeps its timeout: its deadline needs the task.
    timed = governor.foreign_tool("lookup", "", SCHEMA, metadata=tw.ToolMetadata(timeout=5))
    started = governor.begin(timed, {"to": "y"})
    assert isinstance(started, Underway), started
    assert ("ok", "y!") == (lambda o: (o.status, o.value))(started.finish("y!"))
    _no_task_left()


def test_a_task_a_sync_hook_starts_runs_by_the_calls_end_and_nothing_is_left() -> None:
    noted: list[str] = []
    notes: list[asyncio.Task[None]] = []

    class Notes:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: tw.TypedCall[Any], context: Any) -> Any:
            async def note() -> None:
                noted.append(call.input["to"])
                await asyncio.get_running_loop().create_future()  # waits past the call's end

            notes.append(asyncio.get_running_loop().create_task(note()))  # and forgotten

    governor = Governor("testframe", plugins=_host_of(Notes()))
    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    for to in ("a", "b"):
        started = governor.begin(tool, {"to": to})
        assert isinstance(started, Underway)
        assert "ok" == started.finish("y").status
    assert ["a", "b"] == noted
    assert [True, True] == [t.cancelled() for t in notes]
    _no_task_left()


def test_a_call_cancelled_where_it_asked_for_the_tool_is_audited_as_cancelled() -> None:
    events: list[str] = []

    class Audits:
        @tw.hookimpl
        def toolwire_audit(self, event: Any, context: Any) -> None:
            events.append(event.kind)

    governor = Governor("testframe", plugins=_host_of(Audits()))
    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    started = governor.begin(tool, {"to": "x"})
    assert isinstance(started, Underway)
    started.cancel()
    started.cancel()  # once is enough
    assert "cancelled" in events
    with pytest.raises(tw.UsageError, match="ended already"):
        started.finish("late")
    _no_task_left()


def _host_of(*plugins: Any) -> tw.PluginHost:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    for i, plugin in enumerate(plugins):
        host.register(plugin, f"p{i}", kind="policy")
    return host


def _no_task_left() -> None:
    import toolwire._sync as sync

    for loop in sync._idle:
        assert (False, False) == (loop.is_running(), loop.is_closed())
        assert [] == [t for t in asyncio.all_tasks(loop) if not t.done()]
        assert not loop._ready  # type: ignore[attr-defined]


def test_an_mcp_tools_hints_give_its_effect_and_its_server_its_source() -> None:
    governor = Governor("f", plugins=False, effects={"pinned": "mutating"})

    def meta(name: str, annotations: Any, server: str | None = "files") -> tw.ToolMetadata:
        tool = governor.foreign_tool(
            name, "", SCHEMA, mcp_annotations=annotations, mcp_server=server
        )
        return tool.metadata

    read = meta("read", {"readOnlyHint": True, "openWorldHint": False})
    assert (tw.ToolEffect.READ_ONLY, "mcp:files", True) == (
        read.effect,
        read.source,
        read.idempotent,
    )
    assert tw.ToolEffect.MUTATING == meta("write", {"destructive_hint": False}).effect
    assert tw.ToolEffect.DESTRUCTIVE == meta("silent", {}).effect  # the spec's default
    # Not a boolean: a claim nobody can read, so the default (never read-only).
    assert tw.ToolEffect.DESTRUCTIVE == meta("odd", {"readOnlyHint": "yes"}).effect
    assert "mcp:(unnamed)" == meta("where", {}, server=None).source
    assert "mcp:(unnamed)" == meta("blank", {}, server="  ").source
    # The application's mapping names the effect; the source still says whose tool it is.
    pinned = meta("pinned", {"readOnlyHint": True})
    assert (tw.ToolEffect.MUTATING, "mcp:files") == (pinned.effect, pinned.source)


def test_an_mcp_tool_a_framework_prefixes_keeps_the_servers_name_for_it() -> None:
    # CrewAI calls a server's `wipe` `files_wipe`: the tool is known by the server's
    # name too (its origin), as toolwire's own MCP mounts know it, so a policy's
    # `mcp:files/wipe` matches it (tests/plugins/policy: the rule itself).
    governor = Governor("f", plugins=False)

    def tool(name: str, own: str | None) -> Any:
        return governor.foreign_tool(name, "", SCHEMA, mcp_server="files", mcp_name=own)

    wipe = tool("files_wipe", "wipe")
    assert ("files_wipe", "wipe", "mcp:files") == (
        wipe.name,
        wipe.origin.name,
        wipe.metadata.source,
    )
    assert ("files_wipe",) == wipe.mounted_names  # an allow list never matches `wipe`
    assert tool("files_wipe", "wipe") is wipe  # made once per shape
    # A name toolwire cannot take: the framework's name alone.
    odd = tool("files_odd", "has space")
    assert ("files_odd", "files_odd") == (odd.name, odd.origin.name)
    # Not an MCP tool: the name is the framework's.
    plain = governor.foreign_tool("plain", "", SCHEMA, mcp_name="other")
    assert "plain" == plain.origin.name


def test_a_toolwire_tool_runs_through_the_executor(governor: Governor) -> None:
    @tw.tool_fn
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    out = asyncio.run(governor.arun(add, {"a": 2, "b": 3}))
    assert ("ok", "5") == (out.status, out.content)


def test_a_policy_that_failed_to_load_blocks_every_call() -> None:
    class Broken:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            raise RuntimeError("the policy is broken")

    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(Broken(), "broken", kind="policy")
    governor = Governor("f", plugins=host)
    out = run(governor, "lookup", {"to": "x"}, lambda a: pytest.fail("ran"))
    assert "refused" == out.status


def test_a_foreign_tool_runs_here_with_the_frameworks_own_timeouts(governor: Governor) -> None:
    tool = governor.foreign_tool("lookup", "", SCHEMA, effect="read_only")
    assert (None, True, tw.ToolEffect.READ_ONLY) == (
        tool.metadata.timeout,
        tool.metadata.local,
        tool.metadata.effect,
    )
    own = tw.ToolMetadata(effect="mutating", timeout=5.0)
    pack = governor.foreign_tool("write", "", SCHEMA, metadata=own)
    assert (5.0, True, tw.ToolEffect.MUTATING) == (
        pack.metadata.timeout,
        pack.metadata.local,
        pack.metadata.effect,
    )


def test_arguments_the_schema_refuses_are_audited_as_an_attempt(policy: Decides) -> None:
    seen: list[tuple[str, str]] = []

    class Listens:
        @tw.hookimpl
        def toolwire_audit(self, event: Any, context: Any) -> None:
            seen.append((event.kind, event.tool))

    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    host.register(Listens(), "ears", kind="policy")
    governor = Governor("testframe", plugins=host)
    out = run(governor, "lookup", {"to": 3}, lambda a: pytest.fail("ran"))
    assert "refused" == out.status
    assert ("invalid_arguments", "lookup") in seen


def test_tools_of_takes_toolsets_tools_functions_and_refuses_the_rest() -> None:
    from toolwire.bridges import tools_of

    @tw.tool_fn
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def sub(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    found = tools_of(tw.Toolset("s", [add]), add, [sub])
    assert ["add", "add", "sub"] == [t.name for t in found]
    for bad in (3, "add", {"name": "add"}, [object()]):
        with pytest.raises(Exception, match="expected a Tool"):
            tools_of(bad)


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (tw.Principal("alice"), tw.Principal("alice")),
        ("alice", tw.Principal("alice")),
        ({"subject": "bob", "groups": ["ops"]}, tw.Principal("bob", groups=frozenset({"ops"}))),
        ("", None),
        (None, None),
        (42, None),
        ({"groups": ["ops"]}, None),  # no subject: nobody
    ],
)
def test_principal_of_reads_what_a_run_can_carry(found: Any, expected: Any) -> None:
    from toolwire.bridges import principal_in, principal_of

    assert expected == principal_of(found)
    assert expected == principal_in({"principal": found})

    class Deps:
        principal = found

    assert expected == principal_in(Deps())


def test_principal_groups_must_be_a_list() -> None:
    from toolwire.bridges import principal_of

    with pytest.raises(tw.UsageError, match="groups must be a list"):
        principal_of({"subject": "bob", "groups": "ops"})


def test_an_approval_question_shows_every_argument_or_is_not_asked() -> None:
    from toolwire.bridges import approval_question

    shown = approval_question("send_mail", {"to": "bob", "body": "hi\x1b[2J"}, "requires approval")
    assert shown is not None
    assert '"to": "bob"' in shown
    assert "\x1b" not in shown  # control characters escaped, as every question shows them
    assert approval_question("send_mail", {"body": "x" * 100_000}, "r") is None


@pytest.mark.parametrize("who", [{"subject": "alice"}, "alice", ["alice"]])
def test_what_is_no_principal_is_a_usage_error(governor: Governor, who: Any) -> None:
    with pytest.raises(tw.UsageError, match="principal"):
        run(governor, "read", {"to": "bob"}, lambda a: pytest.fail("ran"), principal=who)


def test_a_tool_described_again_is_the_same_tool_until_its_description_changes() -> None:
    governor = Governor("testframe", plugins=tw.PluginHost(autoload=False, disable_policies=False))
    schema: dict[str, Any] = {"type": "object", "properties": {"to": {"type": "string"}}}
    hints: dict[str, Any] = {"readOnlyHint": True}
    first = governor.foreign_tool("send", "Send.", schema)
    assert first is governor.foreign_tool("send", "Send.", schema)  # made once
    schema["properties"]["to"]["type"] = "integer"  # changed in place by the framework
    changed = governor.foreign_tool("send", "Send.", schema)
    assert changed is not first
    assert {"type": "integer"} == changed.input_schema["properties"]["to"]
    governor.effects["send"] = tw.ToolEffect.READ_ONLY  # the application maps it now
    assert tw.ToolEffect.READ_ONLY == governor.foreign_tool("send", "Send.", schema).metadata.effect
    mcp = governor.foreign_tool("look", "Look.", schema, mcp_annotations=hints, mcp_server="s")
    assert tw.ToolEffect.READ_ONLY == mcp.metadata.effect
    hints["readOnlyHint"] = False  # its server said otherwise
    again = governor.foreign_tool("look", "Look.", schema, mcp_annotations=hints, mcp_server="s")
    assert tw.ToolEffect.READ_ONLY != again.metadata.effect
