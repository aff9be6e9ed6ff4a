"""toolwire-ray on a real local Ray cluster (started once for these tests, then shut down).

Only the tool's body runs on the cluster: policies, hooks, validation, approval and
commit stay in the driver. Runs are counted in files, so "not run again" and "never
reached a worker" are facts about processes, not about mocks.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray_tools as rt

import toolwire as tw
from toolwire.exceptions import UsageError
from toolwire_ray import RayBackend

TOOLS = [
    rt.whoami,
    rt.here,
    rt.hang,
    rt.crash,
    rt.crash_once,
    rt.square,
    rt.bad_output,
    rt.fails,
    rt.counted,
    rt.wrong_options,
    rt.wipe,
    rt.async_whoami,
    rt.draw,
]


@pytest.fixture(scope="module")
def backend() -> Iterator[RayBackend]:
    made = RayBackend(num_cpus=2)
    made.connect()
    yield made
    made.close()


def _round(*calls: tuple[str, dict[str, Any]], hooks: tw.HookSet | None = None) -> tw.ToolRound:
    tools = tw.Toolset("ray-tests", TOOLS)
    turn = tw.resolve_turn(
        tools, availability=tw.Availability.all(), hooks=[hooks] if hooks else [], plugins=False
    )
    reply = tw.adapters.AssistantReply(
        tool_calls=tuple(
            tw.ToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)
        )
    )
    outcome = tw.adapters.decode_reply(tw.Session().add_user("go"), turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    return outcome.round


def _run(backend: RayBackend, *calls: tuple[str, dict[str, Any]], **options: Any) -> list[Any]:
    executor = tw.Executor(backend=backend, plugins=False, **options)
    try:
        return executor.execute_all(_round(*calls).calls)
    finally:
        executor.close()


def _runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_tool_runs_in_a_worker_and_a_local_tool_in_the_driver(backend: RayBackend) -> None:
    remote, local, awaited = _run(
        backend,
        ("whoami", {"tag": "a"}),
        ("here", {"tag": "b"}),
        ("async_whoami", {"tag": "c"}),
    )
    assert remote.content.startswith("a:")
    assert f"a:{os.getpid()}" != remote.content
    assert f"b:{os.getpid()}" == local.content
    assert awaited.content.startswith("c:")
    assert f"c:{os.getpid()}" != awaited.content


def test_media_parts_come_back_from_a_worker_unchanged(backend: RayBackend) -> None:
    (result,) = _run(backend, ("draw", {"label": "chart"}))
    assert not result.is_error, result.content
    text, image, pdf = result.parts
    worker = int(text.text.rsplit(" ", 1)[1])
    assert worker != os.getpid()
    assert image == tw.Image(b"\x89PNG\r\n\x1a\n" + worker.to_bytes(4, "big") + bytes(16))
    assert pdf == tw.File(b"%PDF-1.4\n", name="r.pdf")


def test_a_hung_tool_is_cancelled_at_its_timeout(backend: RayBackend) -> None:
    (result,) = _run(backend, ("hang", {"seconds": 60}))
    assert result.is_error
    assert "tool `hang` timed out after 1.0 s" == result.content
    # The worker was freed: the cluster still runs the next call.
    (after,) = _run(backend, ("square", {"n": 3}))
    assert "9" == after.content


def test_a_dead_worker_is_a_typed_error_and_a_plain_tool_is_not_run_again(
    backend: RayBackend, tmp_path: Path
) -> None:
    counter = tmp_path / "crash.txt"
    (result,) = _run(backend, ("crash", {"counter": str(counter)}), approval=lambda r: tw.Allow())
    assert result.is_error
    assert "tool `crash` could not run on the ray backend: the Ray worker running it died" == (
        result.content
    )
    assert 1 == _runs(counter)


def test_an_idempotent_tool_with_a_retry_hint_is_retried_after_its_worker_died(
    backend: RayBackend, tmp_path: Path
) -> None:
    counter = tmp_path / "once.txt"
    (result,) = _run(backend, ("crash_once", {"counter": str(counter)}))
    assert (False, "second time lucky") == (result.is_error, result.content)
    assert 2 == _runs(counter)


def test_a_hundred_parallel_calls_keep_their_order(backend: RayBackend) -> None:
    calls = [("square", {"n": n}) for n in range(100)]
    results = _run(backend, *calls, max_concurrency=16)
    assert [str(n * n) for n in range(100)] == [r.content for r in results]
    assert [f"c{i}" for i in range(100)] == [r.call_id for r in results]


def test_unpicklable_input_and_output_are_clear_errors(backend: RayBackend) -> None:
    class Handle:
        def __reduce__(self) -> Any:
            raise TypeError("a live handle cannot be pickled")

    @tw.tool_fn(injected=["handle"])
    def uses_handle(text: str, handle: Any) -> str:
        """Needs an injected handle."""
        return text

    executor = tw.Executor(
        tools=[uses_handle], backend=backend, plugins=False, injected={"handle": Handle()}
    )
    sent = executor.execute(tw.ToolCall("c1", "uses_handle", '{"text": "x"}'))
    executor.close()
    assert sent.is_error
    assert sent.content == (
        "tool `uses_handle` could not run on the ray backend: its input cannot be sent to a "
        "Ray worker (it cannot be pickled)"
    )
    (back,) = _run(backend, ("bad_output", {}))
    assert back.is_error
    assert back.content == (
        "tool `bad_output` could not run on the ray backend: its output cannot be sent back "
        "from the Ray worker (it cannot be pickled)"
    )


def test_a_tools_own_error_reads_as_in_process_and_the_traceback_goes_to_the_log(
    backend: RayBackend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="toolwire.ray"):
        (result,) = _run(backend, ("fails", {"text": "x"}))
    assert "tool `fails` failed: ValueError: cannot handle 'x'" == result.content
    assert "ray_tools.py" not in result.content
    assert 'ray_tools.py", line' in caplog.text  # the remote traceback, for the operator


def test_policies_and_approval_decide_before_anything_reaches_the_cluster(
    backend: RayBackend, tmp_path: Path
) -> None:
    counter = tmp_path / "wipe.txt"
    hooks = tw.HookSet("policy", guard=True)
    hooks.on(rt.wipe, lambda call: tw.Reject("no wiping") if "deny" in call.input.counter else None)
    denied = _round(("wipe", {"counter": str(counter) + ".deny"}), hooks=hooks)
    executor = tw.Executor(backend=backend, plugins=False)
    executor.execute_and_commit(denied.apply_hooks())
    # Approval denied: the executor refuses before sending.
    refused = tw.Executor(backend=backend, plugins=False, approval=lambda r: tw.Deny("no"))
    (result,) = refused.execute_all(_round(("wipe", {"counter": str(counter)})).calls)
    executor.close()
    refused.close()
    assert result.is_error
    assert 0 == _runs(counter)
    assert not Path(str(counter) + ".deny").exists()


def test_a_pack_actor_keeps_state_across_calls(backend: RayBackend) -> None:
    first, second, third = (_run(backend, ("counted", {}))[0].content for _ in range(3))
    pids = {first.split(":")[0], second.split(":")[0], third.split(":")[0]}
    assert 1 == len(pids)  # one actor
    assert str(os.getpid()) not in pids
    counts = [int(x.split(":")[1]) for x in (first, second, third)]
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2]


def test_ray_options_toolwire_does_not_allow_are_refused(backend: RayBackend) -> None:
    (result,) = _run(backend, ("wrong_options", {}))
    assert result.is_error
    assert "max_retries is not a tool's option: retries are toolwire's" in result.content
    with pytest.raises(UsageError, match="unknown Ray option"):
        RayBackend(options={"num_cpu": 1})


def test_code_the_worker_cannot_import_is_a_clear_error(
    backend: RayBackend, tmp_path: Path
) -> None:
    # A module only the driver can import (a runtime_env without it on the path).
    pkg = tmp_path / "driver_only_mod.py"
    pkg.write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import driver_only_mod

        tool = tw.tool_fn(driver_only_mod.shout, name="shout", description="Shout.")
        executor = tw.Executor(tools=[tool], backend=backend, plugins=False)
        result = executor.execute(tw.ToolCall("c1", "shout", '{"text": "x"}'))
        executor.close()
    finally:
        sys.path.remove(str(tmp_path))
    assert result.is_error
    assert "its code could not be loaded on the Ray worker" in result.content


def test_the_backend_is_a_plugin_chosen_by_name_or_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = tw.PluginHost(strict=True)
    assert "ray" in host.backends()
    monkeypatch.setenv("TOOLWIRE_BACKEND", "ray")
    executor = tw.Executor(plugins=host)
    assert isinstance(executor.backend, RayBackend)
    assert executor.backend is host.backend("ray")


def test_the_cli_runs_tools_on_ray(tmp_path: Path) -> None:
    (tmp_path / "rayapp.py").write_text(
        "import os, sys\n"
        "import toolwire as tw\n\n"
        "@tw.tool_fn\n"
        "def whereami() -> str:\n"
        '    """Say which program runs this tool."""\n'
        "    return os.path.basename(sys.argv[0])\n\n"
        'tools = tw.Toolset("rayapp", [whereami])\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    base = [sys.executable, "-m", "toolwire", "chat", "whereami?", "--app", "rayapp:tools"]
    on_ray = subprocess.run(
        [*base, "--backend", "ray"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert 0 == on_ray.returncode, on_ray.stderr
    assert "  result: default_worker.py" in on_ray.stdout.splitlines()  # a Ray worker
    here = subprocess.run(
        base, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert "  result: __main__.py" in here.stdout.splitlines()  # the command's own process


# -- #25.17: the first thing a user writes ---------------------------------------------------

SCRIPT = '''
import asyncio, os, sys
import toolwire as tw
from toolwire_ray import RayBackend


class Unloadable:
    def __reduce__(self):
        return (_rebuild, ())


class BigUnloadable:  # over Ray's inline limit: it comes back through the object store
    def __reduce__(self):
        return (_rebuild_big, (b"x" * 2_000_000,))


def _rebuild_big(data):
    return _rebuild()


def _rebuild():
    if os.environ.get("IN_DRIVER") == "1":
        raise RuntimeError("this process cannot rebuild it")
    return "rebuilt"


@tw.tool_fn(timeout=60)
def shout(text: str) -> str:
    """Shout."""
    return text.upper() + " from " + os.path.basename(sys.argv[0])


@tw.tool_fn(timeout=60)
async def whisper(text: str) -> str:
    """Whisper."""
    return text.lower()


@tw.tool_fn(timeout=60)
def odd() -> str:
    """An output this process cannot unpickle."""
    return Unloadable()


@tw.tool_fn(timeout=60)
def odd_big() -> str:
    """A large output this process cannot unpickle."""
    return BigUnloadable()


os.environ["IN_DRIVER"] = "1"
backend = RayBackend(num_cpus=1)
executor = tw.Executor(tools=[shout, whisper, odd, odd_big], plugins=False, backend=backend)
calls = [("shout", '{"text": "hi"}'), ("whisper", '{"text": "HI"}')]
calls += [("odd", "{}"), ("odd_big", "{}")]
for name, args in calls:
    print(executor.execute(tw.ToolCall("c", name, args)).content)
executor.close()
backend.close()
'''


def test_a_tool_defined_in_the_script_being_run_runs_on_a_worker(tmp_path: Path) -> None:
    # Attack (#25.17): a tool defined in the user's script (`__main__`) failed on every
    # worker ("module '__main__' has no attribute ..."); it now goes by value. A result
    # this process cannot unpickle fails at once, with its own kind, not at the timeout.
    (tmp_path / "app.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    done = subprocess.run(
        [sys.executable, "app.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert 0 == done.returncode, done.stderr[-2000:]
    assert [
        "HI from default_worker.py",
        "hi",
        "tool `odd` could not run on the ray backend: its output came back from the Ray "
        "worker but cannot be unpickled here (a class this process cannot import or build?)",
        "tool `odd_big` could not run on the ray backend: its output came back from the Ray "
        "worker but cannot be unpickled here (a class this process cannot import or build?)",
    ] == done.stdout.splitlines()[-4:]


def test_rays_uv_propagation_under_uv_run_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    # #25.17: an application's own ray.init() under `uv run` hangs in Ray's uv
    # propagation; toolwire-ray says why and what to do when it joins such a cluster.
    import importlib

    from toolwire_ray import _backend

    constants = importlib.import_module("ray._private.ray_constants")
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    monkeypatch.setattr(constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", True)
    assert _backend._uv_propagation()
    assert "Set RAY_ENABLE_UV_RUN_RUNTIME_ENV=0 in the environment" in _backend.UV_HINT
    monkeypatch.setattr(constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", False)
    assert not _backend._uv_propagation()
