"""The runner interface: one class per library measured by the harness.

A runner turns the shared fixture into the library's own objects and drives them through
the code path that library's agents use. The harness never imports a library itself: it
calls ``setup()`` and then the operations below, timing them in batches.

Any operation may be a plain method or an ``async def``; the harness runs coroutine
functions on ``self.loop`` (created by ``setup()``), timing whole batches inside the loop,
which is how an agent runtime that is already in a loop would call them.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

NOT_AVAILABLE_YET = "runner not available yet"


class Runner:
    """Base class. Subclass it, fill the class attributes and the four core operations.

    Core operations (S1-S3):

    * ``build(functions)`` -> the library's tool objects for the 50 fixture functions.
    * ``render(built)`` -> list of OpenAI Chat Completions tool dicts
      (``{"type": "function", "function": {"name", "description", "parameters"}}``).
    * ``prepare(built)`` -> whatever per-request state the library keeps between calls
      (a tool manager, a name->tool map); made once, outside the timed region.
    * ``decode(prepared, message)`` -> one validated, typed input per tool call of the
      assistant message, in call order.
    * ``round(prepared, message)`` -> the library's tool-result messages, in call order,
      after running each (sync) tool.
    * ``normalise_input(item, fn)`` -> a ``dict`` of argument name -> validated value for one
      decoded input of the fixture function ``fn``, used to check ``decode`` against the floor
      (never timed).
    * ``result_parts(item)`` -> ``(tool_call_id, content_str)`` of one result message.

    Optional operations for the later scenarios (leave them out until they exist; the
    scenario then skips with a printed reason):

    * ``round_with_hooks(prepared, message, n_hooks)`` -- S3 with n decision hooks that are
      registered through plugins (``setup_hooks(built, n_hooks)`` makes the prepared state).
    * ``discovery_snippet`` -- Python source run in a fresh process that assembles the first
      toolset; the harness times it with 0 and 50 fake plugin distributions installed.
    * ``stream_assemble(prepared, message)`` -- streaming tool-call assembly (split the message
      into deltas in ``prepare``); ``execute_parallel(prepared, message)`` -- the executor
      running 8 async tools in parallel.
    """

    #: Name shown in the table and used by ``--only``.
    name: ClassVar[str] = ""
    #: Importable top-level module, checked before anything runs.
    module: ClassVar[str] = ""
    #: Distribution name whose version goes into the results.
    distribution: ClassVar[str | None] = None
    #: Statement timed by S4 in a fresh process.
    import_statement: ClassVar[str] = ""
    #: For a library whose top-level import is lazy: the imports a program actually makes,
    #: timed as a second S4 row (empty: not reported).
    working_set_statement: ClassVar[str] = ""
    #: Human description of the exact code path, per scenario id (goes into the JSON).
    paths: ClassVar[dict[str, str]] = {}

    loop: asyncio.AbstractEventLoop

    # -- availability and setup -------------------------------------------------------

    def unavailable_reason(self) -> str | None:
        """Why this runner cannot run here, or None when it can."""
        if self.module and importlib.util.find_spec(self.module) is None:
            return (
                f"{self.module!r} is not installed (uv sync --all-packages --all-groups --inexact)"
            )
        for op in ("build", "render", "decode", "round"):
            if getattr(type(self), op) is getattr(Runner, op):
                return f"{self.name} {NOT_AVAILABLE_YET} ({op}() is not implemented)"
        return None

    def setup(self) -> None:
        """Import the library and create the event loop; not timed (S4 times imports)."""
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        loop = getattr(self, "loop", None)
        if loop is not None and not loop.is_closed():
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    # -- core operations -----------------------------------------------------------------

    def build(self, functions: Sequence[Callable[..., Any]]) -> Any:
        raise NotImplementedError

    def render(self, built: Any) -> list[dict[str, Any]]:
        raise NotImplementedError

    def build_render(self, functions: Sequence[Callable[..., Any]]) -> list[dict[str, Any]]:
        """S1 cold/warm: build then render. Override as ``async def`` if ``render`` is async."""
        return self.render(self.build(functions))

    def prepare(self, built: Any) -> Any:
        return built

    def decode(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def round(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def normalise_input(self, item: Any, fn: Callable[..., Any]) -> dict[str, Any]:
        return dict(item)

    def result_parts(self, item: Any) -> tuple[str, str]:
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------

    def call(self, op: str, *args: Any) -> Any:
        """Run one operation once, sync or async (used for checks and warm-up)."""
        result = getattr(self, op)(*args)
        if asyncio.iscoroutine(result):
            return self.loop.run_until_complete(result)
        return result

    def supports(self, op: str) -> bool:
        return callable(getattr(self, op, None))
