"""#31: quotas through a real executor: counted once per call (an approver rewriting the
arguments does not count it again), concurrent calls, and counts several processes share
in a real redis-server (started for these tests on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw
from toolwire import HookContext, Principal
from toolwire_policy import Policy, PolicyFileError
from toolwire_policy._plugin import PolicyPlugin

ALICE = Principal("alice")
BOB = Principal("bob")


def _host(policy: Policy) -> tw.PluginHost:
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    return host


def _executor(policy: Policy, tools: list[Any], **kwargs: Any) -> tw.Executor:
    return tw.Executor(tools=tools, plugins=_host(policy), **kwargs)


@tw.tool_fn(effect="mutating")
def note(text: str) -> str:
    """Write a note."""
    return "noted " + text


def test_an_approver_rewriting_the_arguments_does_not_count_the_call_twice(
    make_policy: Any,
) -> None:
    # The executor asks the policies again about the rewritten input; the quota is the
    # call's, taken once.
    policy = make_policy('[[quotas]]\ntools = ["note"]\ncalls = 2\nseconds = 600\n')
    asked: list[str] = []

    def approver(request: Any) -> Any:
        asked.append(request.call.name)
        return tw.Modify({"text": "tidied"})

    executor = _executor(policy, [note], approval=approver)
    context = HookContext(principal=ALICE)
    results = [
        executor.execute(tw.ToolCall(f"c{i}", "note", '{"text": "x"}'), context=context)
        for i in range(3)
    ]
    assert ["noted tidied", "noted tidied"] == [r.content for r in results[:2]]
    assert results[2].is_error
    assert "at most 2 call(s) in 600 s for `alice`" in results[2].content
    assert 2 == len(asked)  # the refused third was never put to the approver


def test_a_call_the_policys_approver_refuses_gives_its_quota_back(make_policy: Any) -> None:
    policy = make_policy(
        'approve = ["note"]\n[[quotas]]\ntools = ["note"]\ncalls = 1\nseconds = 600\n'
    )
    answers = iter([False, True])
    context = HookContext(
        principal=ALICE, extra={"toolwire.approver": lambda call, why: next(answers)}
    )
    executor = _executor(policy, [note])
    refused = executor.execute(tw.ToolCall("c1", "note", '{"text": "x"}'), context=context)
    assert "declined" in refused.content
    ran = executor.execute(tw.ToolCall("c2", "note", '{"text": "x"}'), context=context)
    assert "noted x" == ran.content  # the declined call did not spend the one call


def test_concurrent_calls_are_limited_per_principal_and_freed_by_their_results(
    make_policy: Any,
) -> None:
    policy = make_policy('[[quotas]]\ntools = ["slow"]\nconcurrent = 2\n')
    release = threading.Event()
    started: list[str] = []

    @tw.tool_fn
    async def slow(n: int) -> str:
        """Wait until released."""
        started.append(str(n))
        while not release.is_set():
            await asyncio.sleep(0.01)
        return f"done {n}"

    executor = _executor(policy, [slow])

    async def run() -> list[tw.ToolResult]:
        def call(i: int, who: Principal) -> Any:
            return executor.aexecute(
                tw.ToolCall(f"c{i}", "slow", f'{{"n": {i}}}'), context=HookContext(principal=who)
            )

        first = [asyncio.ensure_future(call(i, ALICE)) for i in range(2)]
        while len(started) < 2:
            await asyncio.sleep(0.01)
        third = await call(2, ALICE)  # alice has two running: refused at once
        bobs = asyncio.ensure_future(call(3, BOB))  # bob's count is his own
        while len(started) < 3:
            await asyncio.sleep(0.01)
        release.set()
        done = [*(await asyncio.gather(*first)), third, await bobs]
        done.append(await call(4, ALICE))  # the results freed alice's slots
        return done

    results = asyncio.run(run())
    assert ["done 0", "done 1"] == [r.content for r in results[:2]]
    assert results[2].is_error
    assert (
        "at most 2 call(s) at once for `alice`; try again when one of them has finished"
        in results[2].content
    )
    assert ["done 3", "done 4"] == [r.content for r in results[3:]]


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_call_cancelled_while_it_runs_frees_its_slot_at_once(
    make_policy: Any, tmp_path: Any, parallel: int
) -> None:
    # Attack (#40.7): with concurrent = 1, a call cancelled while it ran kept its slot for
    # the whole lease (600 s); with a shared store every caller was locked out.
    policy = make_policy(
        '[audit]\npath = "audit.jsonl"\n[[quotas]]\ntools = ["slow"]\nconcurrent = 1\n'
    )

    @tw.tool_fn
    async def slow(n: int) -> str:
        """Wait for ever."""
        await asyncio.sleep(3600)
        return "never"

    @tw.tool_fn
    async def other(n: int) -> str:
        """Wait for ever too."""
        await asyncio.sleep(3600)
        return "never"

    executor = _executor(policy, [slow, other])
    context = HookContext(principal=ALICE)

    async def run() -> None:
        calls = [tw.ToolCall("c1", "slow", '{"n": 1}'), tw.ToolCall("c2", "other", '{"n": 2}')]
        running = asyncio.ensure_future(executor.aexecute_all(calls[:parallel], context=context))
        while not policy._inflight:  # the policy allowed the call and holds its slot
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        running.cancel()  # the caller gives up (Ctrl-C, a client that went away)
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(run())
    assert policy.take_quota(slow, ALICE) is None  # the slot is free at once
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    cancelled = [r for r in records if r["event"] == "cancelled"]
    assert [("c1", "slow", "cancelled")] == [
        (r["call_id"], r["tool"], r["decision"]) for r in cancelled if r["tool"] == "slow"
    ]


def test_a_slot_whose_call_never_reported_back_is_freed_by_its_lease(make_policy: Any) -> None:
    policy = make_policy(
        '[quota_store]\nurl = "memory://"\n[[quotas]]\ntools = ["note"]\nconcurrent = 1\n'
        "lease = 30\n"
    )
    now = [0.0]
    policy.clock = lambda: now[0]
    assert policy.take_quota(note, ALICE) is None  # taken, and nobody will finish it
    assert "at most 1 call(s) at once" in (policy.take_quota(note, ALICE) or "")
    now[0] = 31.0
    assert policy.take_quota(note, ALICE) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[quotas]]\ntools = ['a']\n", "needs calls \\(per seconds\\) or concurrent"),
        ("[[quotas]]\nconcurrent = 0\n", "concurrent"),
        ("[[quotas]]\nconcurrent = 1\nlease = 0\n", "lease"),
        ("[quota_store]\nurl = 'http://x'\n", "quota_store.url"),
        ("[quota_store]\nurl = 'redis://x'\ntimeout = 60\n", "quota_store.timeout"),
        ("[quota_store]\nurl = 'redis://x'\npassword_env = 'NO_SUCH_VAR_X'\n", "NO_SUCH_VAR_X"),
        ("[quota_store]\nurl = 'redis://x'\npasword_env = 'X'\n", "pasword_env"),
    ],
)
def test_a_malformed_quota_or_store_is_refused_by_name(
    make_policy: Any, text: str, said: str
) -> None:
    os.environ.pop("NO_SUCH_VAR_X", None)
    with pytest.raises(PolicyFileError, match=said):
        make_policy(text)


# -- a store several processes share ---------------------------------------------------------


def _shared(make_policy: Any, url: str, prefix: str, quotas: str) -> Policy:
    return make_policy(f'{quotas}\n[quota_store]\nurl = "{url}"\nprefix = "{prefix}"\n')


def _typed(call_id: str) -> tw.TypedCall[Any]:
    text = '{"text": "x"}'
    return tw.TypedCall(tw.ToolCall(call_id, "note", text), note, note.validate_json(text))


async def _decide(policy: Policy, tool: Any, who: Principal, call_id: str = "c1") -> Any:
    call = _typed(call_id)
    verdict = policy.check(call, HookContext(principal=who))
    return (await verdict) if hasattr(verdict, "__await__") else verdict


def test_two_processes_share_one_count_in_redis(
    make_policy: Any, redis_url: str, tmp_path: Path
) -> None:
    # Two policies stand for two gateway processes: alice's 3 calls are counted together.
    quotas = '[[quotas]]\ntools = ["note"]\ncalls = 3\nseconds = 600\n'
    one = _shared(make_policy, redis_url, "t1:", quotas)
    two = _shared(make_policy, redis_url, "t1:", quotas)

    async def run() -> list[Any]:
        return [
            await _decide(one, note, ALICE),
            await _decide(two, note, ALICE),
            await _decide(one, note, ALICE),
            await _decide(two, note, ALICE),
            await _decide(two, note, BOB),
        ]

    verdicts = asyncio.run(run())
    assert [True, True, True, False, True] == [v.allowed for v in verdicts]
    assert "at most 3 call(s) in 600 s for `alice`; try again in 600 s" in verdicts[3].reason


def test_concurrent_slots_in_redis_are_shared_and_freed(make_policy: Any, redis_url: str) -> None:
    quotas = '[[quotas]]\ntools = ["note"]\nconcurrent = 1\n'
    one = _shared(make_policy, redis_url, "t2:", quotas)
    two = _shared(make_policy, redis_url, "t2:", quotas)
    call = _typed("c1")

    async def run() -> list[bool]:
        first = one.check(call, HookContext(principal=ALICE))
        taken = (await first).allowed  # type: ignore[misc]
        other = (await _decide(two, note, ALICE, "c2")).allowed  # the slot is held
        one.finish(call)  # its result came back
        again = (await _decide(two, note, ALICE, "c3")).allowed
        return [taken, other, again]

    assert [True, False, True] == asyncio.run(run())


@pytest.mark.parametrize("server", ["closed", "silent"])
def test_a_store_that_cannot_be_reached_refuses_in_time(make_policy: Any, server: str) -> None:
    # Nobody listening, or a listener that never answers: the call is refused at the
    # store's deadline (fail closed), and nothing hangs.
    pytest.importorskip("redis")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if server == "silent":
        listener.listen(8)
    else:
        listener.close()
    policy = make_policy(
        f'[[quotas]]\ncalls = 5\n[quota_store]\nurl = "redis://127.0.0.1:{port}/0"\ntimeout = 0.2\n'
    )
    try:
        started = time.monotonic()
        verdict = asyncio.run(_decide(policy, note, ALICE))
        assert not verdict.allowed
        assert "cannot count its quotas now" in verdict.reason
        assert time.monotonic() - started < 5
        assert "127.0.0.1" not in repr(policy.quota_store)
    finally:
        listener.close()


# -- constraints and result redaction for some principals ------------------------------------

SCOPED = """
[[constraints]]
tools = ["note"]
groups = ["contractors"]
max_length = 5

[[redact]]
tools = ["lookup"]
subjects = ["bob"]
result_patterns = ["salary: \\\\d+"]
"""


@tw.tool_fn
def lookup(who: str) -> str:
    """Look someone up."""
    return f"{who}: salary: 1234"


def test_constraints_and_result_redaction_can_be_for_some_principals(make_policy: Any) -> None:
    policy = make_policy(SCOPED)
    contractor = Principal("carol", groups=["contractors"])
    executor = _executor(policy, [note, lookup])
    long = tw.ToolCall("c1", "note", '{"text": "a long note"}')
    assert (
        "noted a long note" == executor.execute(long, context=HookContext(principal=ALICE)).content
    )
    refused = executor.execute(long, context=HookContext(principal=contractor))
    assert "at most 5 for `note`" in refused.content
    ask = tw.ToolCall("c2", "lookup", '{"who": "dan"}')
    assert (
        "dan: salary: 1234" == executor.execute(ask, context=HookContext(principal=ALICE)).content
    )
    assert "dan: [REDACTED]" == executor.execute(ask, context=HookContext(principal=BOB)).content
    # nobody named: a rule for some principals does not apply
    assert "dan: salary: 1234" == executor.execute(ask).content


def test_a_redact_rule_for_some_principals_may_not_redact_arguments(make_policy: Any) -> None:
    with pytest.raises(PolicyFileError, match="result_patterns only"):
        make_policy('[[redact]]\nsubjects = ["bob"]\narguments = ["password"]\n')


def test_an_executor_makes_its_calls_for_its_principal(make_policy: Any) -> None:
    policy = make_policy('deny = ["note"]\n[[rules]]\nsubjects = ["alice"]\nallow = ["note"]\n')
    host = _host(policy)
    call = tw.ToolCall("c1", "note", '{"text": "x"}')
    alices = tw.Executor(tools=[note], plugins=host, principal=ALICE)
    assert "noted x" == alices.execute(call).content
    # A context naming someone else is kept: bob may not.
    assert alices.execute(call, context=HookContext(principal=BOB)).is_error
    assert tw.Executor(tools=[note], plugins=host).execute(call).is_error  # nobody
    with pytest.raises(tw.UsageError, match=r"must be a toolwire\.Principal"):
        tw.Executor(tools=[note], principal="alice")  # type: ignore[arg-type]


def test_calls_that_never_report_back_do_not_grow_the_policys_memory(
    make_policy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A caller whose calls the policy lets through and something later refuses (they never
    # reach the result hook) leaves entries behind until their leases end: bounded.
    import toolwire_policy._policy as policy_module

    monkeypatch.setattr(policy_module, "_MAX_WINDOWS", 20)
    policy = make_policy('[[quotas]]\ntools = ["note"]\ncalls = 1000\nseconds = 600\n')
    for i in range(200):
        verdict = policy.check(_typed(f"c{i}"), HookContext(principal=ALICE))
        assert verdict.allowed  # type: ignore[union-attr]
    assert len(policy._inflight) <= 20


def test_a_shared_store_counts_for_sync_code_too(make_policy: Any, redis_url: str) -> None:
    # Sync code (a round's apply_hooks, a script with no event loop) cannot await a hook:
    # with no loop to hold up, the store is asked right there.
    policy = _shared(make_policy, redis_url, "t3:", '[[quotas]]\ntools = ["note"]\ncalls = 1\n')
    first = policy.check(_typed("c1"), HookContext(principal=ALICE))
    second = policy.check(_typed("c2"), HookContext(principal=ALICE))
    assert not hasattr(first, "__await__")
    assert (True, False) == (first.allowed, second.allowed)  # type: ignore[union-attr]


def test_a_subject_established_two_ways_is_two_principals_for_quotas(make_policy: Any) -> None:
    # #40.10: quota counts were keyed by subject alone, so an OAuth `alice` and a
    # tokens-file `alice` (another person, or a service named alike) shared one count.
    policy = make_policy('[[quotas]]\ntools = ["note"]\ncalls = 1\nseconds = 600\n')
    by_oauth = Principal("alice", method="oauth")
    by_token = Principal("alice", method="token")
    assert policy.take_quota(note, by_oauth) is None
    assert policy.take_quota(note, by_token) is None  # a count of its own
    assert "at most 1 call(s) in 600 s for `alice`" in (policy.take_quota(note, by_oauth) or "")


# -- across a Redis outage (#47.4): a real redis-server, killed and restarted --------------------


def _redis(where: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing under CI (.ci/run installs it from Debian)")
        pytest.skip("redis-server is not installed")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(where), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


def test_a_slot_freed_during_a_redis_outage_is_released_when_it_returns(
    make_policy: Any, tmp_path: Path
) -> None:
    # #47.4: slots held by calls in flight when Redis died stayed taken after it came back
    # (for the whole lease: 600 s, that tool blocked for everyone).
    pytest.importorskip("redis")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    durable = ("--appendonly", "yes", "--appendfsync", "always", "--save", "")
    proc = _redis(tmp_path, port, *durable)
    try:
        policy = make_policy(
            '[[quotas]]\ntools = ["note"]\nconcurrent = 1\n'
            f'[quota_store]\nurl = "redis://127.0.0.1:{port}/0"\ntimeout = 0.3\n'
        )
        first = _typed("c1")
        assert asyncio.run(_verdict(policy, first)).allowed  # alice's call holds the slot
        proc.kill()  # the store dies while the call runs
        proc.wait(10)
        policy.finish(first)  # its result comes back during the outage: cannot be told
        proc = _redis(tmp_path, port, *durable)  # back, with the slot it persisted
        second = asyncio.run(_verdict(policy, _typed("c2")))
        assert (True, "") == (second.allowed, second.reason)  # released at once, not at 600 s
    finally:
        proc.kill()
        proc.wait(10)


async def _verdict(policy: Policy, call: Any) -> Any:
    verdict = policy.check(call, HookContext(principal=ALICE))
    return (await verdict) if hasattr(verdict, "__await__") else verdict


def test_a_store_that_forgets_its_counts_on_restart_is_said_or_refused(
    make_policy: Any, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # #47.4: with a Redis that does not persist, a restart forgot the counts (85 calls
    # passed a quota of 60). The session's server keeps no snapshot and no AOF.
    from toolwire_policy import PolicyFileError

    store = f'[quota_store]\nurl = "{redis_url}"\n'
    with pytest.raises(PolicyFileError, match="no RDB snapshot and no append-only file"):
        make_policy(f"[[quotas]]\ncalls = 5\n{store}require_persistence = true\n")
    make_policy(f"[[quotas]]\ncalls = 5\n{store}")
    assert "a restart of it forgets every count" in caplog.text


# -- a call refused after this policy let it through (found building #47.4) -----------------


class _LaterRejects:
    @tw.hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
        return tw.Reject("the second policy says no")


@pytest.mark.parametrize("path", ["executor", "agent"])
def test_a_call_another_hook_refuses_frees_its_slot_and_is_recorded(
    make_policy: Any, tmp_path: Path, path: str
) -> None:
    # A call this policy let through and another hook then refused never ran and never
    # reported back: its slot was held for the whole lease, and the audit log said
    # "allow" with nothing after it.
    policy = make_policy(
        '[audit]\npath = "audit.jsonl"\n[[quotas]]\ntools = ["note"]\nconcurrent = 1\n'
        "calls = 1\nseconds = 600\n"
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")
    host.register(_LaterRejects(), "second", kind="policy")
    context = HookContext(principal=ALICE)
    if path == "executor":
        executor = tw.Executor(tools=[note], plugins=host)
        result = executor.execute(tw.ToolCall("c1", "note", '{"text": "x"}'), context=context)
        assert "the second policy says no" in result.content
    else:
        from toolwire.providers.test import TestProvider

        provider = TestProvider(
            script=[
                {"tool_calls": [{"id": "c1", "name": "note", "arguments": '{"text": "x"}'}]},
                {"text": "done"},
            ]
        )
        agent = tw.Agent(provider, tw.Toolset("app", [note]), plugins=host, context=context)
        agent.run(tw.Session(), "note it")
    # the slot is free and the one call of the window given back: the call never ran
    assert (None, None) == (policy.take_quota(note, ALICE), None)
    events = [
        (r["event"], r["decision"])
        for r in map(json.loads, (tmp_path / "audit.jsonl").read_text().splitlines())
    ]
    assert [("decision", "allow"), ("refused", "reject")] == events[:2]


# -- slots with owners (#47.4): a killed holder's slot is reclaimed, a running one renewed ------

_HOLDER = """
import sys, time
from toolwire import HookContext, Principal, ToolCall, TypedCall, tool_fn
from toolwire_policy import Policy

@tool_fn(effect="mutating")
def note(text: str) -> str:
    '''Write a note.'''
    return text

policy = Policy.from_file(sys.argv[1])
text = '{"text": "x"}'
call = TypedCall(ToolCall("c1", "note", text), note, note.validate_json(text))
verdict = policy.check(call, HookContext(principal=Principal("alice")))
print("held" if verdict.allowed else "refused: " + verdict.reason, flush=True)
time.sleep(600)  # a call that runs long, until this process is killed
"""


def test_a_slot_is_renewed_while_its_holder_runs_and_freed_soon_after_it_is_killed(
    make_policy: Any, redis_url: str, tmp_path: Path
) -> None:
    # #47.4: a slot whose holder was killed stayed taken for its whole lease (600 s by
    # default, the tool blocked for everyone). Now it is stored for holder_timeout at a
    # time and renewed while its call runs.
    import sys

    text = (
        '[[quotas]]\ntools = ["note"]\nconcurrent = 1\nlease = 600\n'
        f'[quota_store]\nurl = "{redis_url}"\nprefix = "t4:"\nholder_timeout = 1.5\n'
    )
    path = tmp_path / "holder.toml"
    path.write_text(text)
    here = make_policy(text)
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    ) as holder:
        _hold_and_kill(here, holder)


def _hold_and_kill(here: Policy, holder: subprocess.Popen[str]) -> None:
    try:
        assert holder.stdout is not None
        assert "held" == holder.stdout.readline().strip()
        refused = policy_refuses(here)
        assert "at most 1 call(s) at once" in refused
        time.sleep(3.5)  # more than twice holder_timeout: the holder renewed its slot
        assert "at most 1 call(s) at once" in policy_refuses(here)
        holder.kill()  # the holder is gone for good, its call with it
        holder.wait(10)
        killed = time.monotonic()
        while policy_refuses(here):
            assert time.monotonic() - killed < 10, "the slot of a killed holder stayed taken"
            time.sleep(0.1)
        assert time.monotonic() - killed < 3  # within holder_timeout (and a renewal's slack)
    finally:
        holder.kill()
        holder.wait(10)


def policy_refuses(policy: Policy) -> str:
    """Why ``policy`` refuses a call of `note` for alice now ('' when it takes it, and the
    slot is given back at once)."""
    call = _typed("probe")
    verdict = asyncio.run(_verdict(policy, call))
    if verdict.allowed:
        policy.finish(call)
        return ""
    return str(verdict.reason)


# -- one machine's processes share an SQLite file (#45) -----------------------------------------

NOTE_APP = (
    "import toolwire as tw\n\n@tw.tool_fn(effect='mutating')\ndef note(text: str) -> str:\n"
    "    '''Write a note.'''\n    return 'noted ' + text\n\ntools = tw.Toolset('app', [note])\n"
)


def test_separate_toolwire_call_runs_share_a_quota_with_no_server(tmp_path: Path) -> None:
    # Reproducer: counted in each process's memory, three runs each passed a quota of two.
    import sys

    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    (config / "policy.toml").write_text(
        'principal_methods = ["cli"]\n[[quotas]]\ntools = ["note"]\ncalls = 2\nseconds = 3600\n'
    )
    (tmp_path / "app.py").write_text(NOTE_APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
    )

    def call(who: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolwire", "call", "note", '{"text": "x"}', "--app",
             "app:tools", "--as", who, "--approve"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert [0, 0] == [call("alice").returncode, call("alice").returncode]
    third = call("alice")
    assert 1 == third.returncode
    assert "at most 2 call(s) in 3600 s for `alice`" in third.stdout
    assert 0 == call("bob").returncode  # per principal
    [store] = (tmp_path / "data" / "toolwire" / "quotas").iterdir()
    assert 0o600 == store.stat().st_mode & 0o777


def test_two_processes_share_one_count_in_sqlite(tmp_path: Path) -> None:
    from toolwire_policy._quotas import SqliteStore, Want

    path = tmp_path / "q.sqlite"
    want = Want("k", calls=3, seconds=3600, concurrent=None, lease=600, tool="t", whom="alice")
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from toolwire_policy._quotas import SqliteStore, Want\n"
        "store = SqliteStore(Path(sys.argv[1]))\n"
        "w = Want('k', calls=3, seconds=3600, concurrent=None, lease=600, tool='t', whom='alice')\n"
        "print(sum(store.take([w], f'l{i}') is None for i in range(2)))\n"
    )
    python = __import__("sys").executable
    done = [
        subprocess.run(
            [python, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        for _ in range(2)
    ]
    assert 3 == sum(int(d.stdout) for d in done)  # 2 + 1: the second process was over
    assert SqliteStore(path).take([want], "mine") is not None


def test_a_slot_of_a_killed_process_is_free_and_windows_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    import toolwire_policy._quotas as quotas
    from toolwire_policy._quotas import SqliteStore, Want

    path = tmp_path / "q.sqlite"
    slot = Want("s", calls=None, seconds=60, concurrent=1, lease=600, tool="t", whom="alice")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\n"
         "from toolwire_policy._quotas import SqliteStore, Want\n"
         "w = Want('s', calls=None, seconds=60, concurrent=1, lease=600, tool='t', whom='a')\n"
         "assert SqliteStore(Path(sys.argv[1])).take([w], 'held') is None\n"
         "print('held', flush=True)\ntime.sleep(600)\n", str(path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert "held" == holder.stdout.readline().strip()
        store = SqliteStore(path)
        assert "at once" in (store.take([slot], "mine") or "")  # its holder runs
    finally:
        holder.kill()
        holder.wait(30)
        if holder.stdout is not None:
            holder.stdout.close()
    assert store.take([slot], "mine") is None  # its holder is gone: free at once
    store.finish([slot], "mine", refund=False)
    # A rate window passes with the machine's clock.
    now = [1_000_000.0]
    monkeypatch.setattr(quotas, "time", type("Clock", (), {"time": staticmethod(lambda: now[0])}))
    rate = Want("r", calls=1, seconds=60, concurrent=None, lease=600, tool="t", whom="alice")
    assert store.take([rate], "a") is None
    assert "try again in 60 s" in (store.take([rate], "b") or "")
    now[0] += 61
    assert store.take([rate], "c") is None
    store.finish([rate], "c", refund=True)  # never ran: given back
    assert store.take([rate], "d") is None


def test_a_store_file_open_to_others_or_unwritable_is_refused(tmp_path: Path) -> None:
    from toolwire_policy._quotas import SqliteStore, StoreError

    open_file = tmp_path / "open.sqlite"
    open_file.write_bytes(b"")
    open_file.chmod(0o644)  # others may read the counts (who called what, and when)
    with pytest.raises(StoreError, match="chmod 600"):
        SqliteStore(open_file)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    policy = tmp_path / "p.toml"
    policy.write_text(
        f'[quota_store]\nurl = "sqlite://{blocked}/q.sqlite"\n'
        '[[quotas]]\ntools = ["note"]\ncalls = 1\n'
    )
    with pytest.raises(PolicyFileError, match="memory://"):
        Policy.from_file(policy)  # fails closed, saying how to count per process instead
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not an sqlite file at all" * 100)
    garbage.chmod(0o600)
    with pytest.raises(StoreError, match="cannot be opened"):
        SqliteStore(garbage)


def test_memory_and_the_default_store_by_url(tmp_path: Path) -> None:
    from toolwire_policy._quotas import MemoryStore, SqliteStore

    def store(url: str | None) -> Any:
        text = '[[quotas]]\ntools = ["note"]\ncalls = 1\n'
        if url is not None:
            text = f'[quota_store]\nurl = "{url}"\n' + text
        (tmp_path / "p.toml").write_text(text)
        return Policy.from_file(tmp_path / "p.toml").quota_store

    assert isinstance(store("memory://"), MemoryStore)
    assert isinstance(store(None), SqliteStore)
    assert store("sqlite://").path == store(None).path
    assert tmp_path / "mine.sqlite" == store("sqlite://mine.sqlite").path  # beside the file
    assert isinstance(Policy.from_text('[[quotas]]\ntools = ["n"]\ncalls = 1\n').quota_store,
                      MemoryStore)  # fmt: skip
