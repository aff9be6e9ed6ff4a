"""RayBackend: tool bodies as Ray tasks (or calls on a tool pack's actor).

The executor keeps every decision; this backend gets one attempt of one body (the
function and its keyword arguments, already validated and approved), sends it to
the cluster and awaits the output:

- a plain tool runs as a task with ``max_retries=0`` (a non-idempotent tool never
  runs twice because a worker died: retries are the executor's, for idempotent tools
  with a retry hint), with the tool's Ray options (``num_cpus``, ``num_gpus``,
  ``memory``, ``resources``, ``runtime_env``, ...);
- a tool whose options name an ``actor`` runs on that actor, one per name per
  backend (``actor_scope="driver"``, the default) or per cluster (``"cluster"``, a
  named detached actor), so a pack can keep a model, a client or a cache across calls;
- past the tool's timeout the task is cancelled (forced: a hung body cannot be
  interrupted otherwise; an actor that hangs is killed and made again on the next
  call) and the call ends with the same timeout result as in-process;
- a dead worker, an input or output that cannot be pickled, code that cannot be
  imported on the worker: a ``ToolBackendError`` with its ``kind``; the remote
  traceback goes to the ``toolwire.ray`` log, never to the model.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import pickle
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from toolwire.adapters import BackendCall, ToolBackend
from toolwire.exceptions import ToolBackendError, ToolTimeoutError, UsageError

__all__ = ["RAY_OPTIONS", "RayBackend"]

logger = logging.getLogger("toolwire.ray")

RAY_OPTIONS = frozenset(
    {
        "num_cpus",
        "num_gpus",
        "memory",
        "resources",
        "runtime_env",
        "accelerator_type",
        "scheduling_strategy",
        "label_selector",
    }
)
"""The Ray options a tool may set in ``backend_options={"ray": {...}}`` (besides
``actor`` and ``actor_scope``); ``max_retries`` is not one: retries are toolwire's."""

_ACTOR_SCOPES = ("driver", "cluster")
_MAX_TASKS = 512  # remote functions kept (one per tool and options)


def _body(
    fn: Any, kwargs: dict[str, Any] | None = None, is_async: bool = False, **more: Any
) -> Any:
    """What runs on the worker: the tool's implementation, awaited there if async
    (``kwargs`` as a dict for an actor's method, as keywords for a task)."""
    if isinstance(fn, tuple):
        fn = _resolve(*fn)
    out = fn(**(kwargs or {}), **more)
    if is_async:
        out = asyncio.run(out)
    return out


@functools.lru_cache(maxsize=1024)
def _resolve(module: str, name: str) -> Callable[..., Any]:
    """The implementation of the tool ``module.name`` (imported on the worker)."""
    tool = getattr(importlib.import_module(module), name)
    return getattr(tool, "fn", tool)  # type: ignore[no-any-return]  # _portable checked it


def _portable(fn: Callable[..., Any]) -> Any:
    """How to send a tool's implementation: by name when the module holds the tool
    under the function's name (``@tool_fn`` replaces the function with the tool, so
    pickle would send the function by value, with copies of its module's globals: a
    pack's module state would not live across calls), else the function itself."""
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "." in name or "<" in name:
        # The script being run is not a module a worker can import (its `__main__` is
        # Ray's own): a tool defined there goes by value, as Ray sends such functions.
        return fn
    held = getattr(sys.modules.get(module), name, None)
    if held is fn or getattr(held, "fn", None) is fn:
        return (module, name)
    return fn


def _named(module: str, name: str, is_async: bool) -> Callable[..., Any]:
    """A task body for the tool ``module.name``: Ray exports it once per tool, and each
    call sends only the tool's own keyword arguments (as a raw ``f.remote(**kwargs)``)."""

    def run(**kwargs: Any) -> Any:
        out = _resolve(module, name)(**kwargs)
        if is_async:
            out = asyncio.run(out)
        return out

    run.__name__ = run.__qualname__ = name  # what Ray's logs and dashboard show
    return run


def _by_value(fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """A task body carrying the implementation itself (pickled by value: a function of
    the script being run, or one defined inside another). A plain function, not a
    ``functools.partial``: ``ray.remote`` takes functions and classes only."""

    def run(**kwargs: Any) -> Any:
        out = fn(**kwargs)
        if is_async:
            out = asyncio.run(out)
        return out

    run.__name__ = run.__qualname__ = getattr(fn, "__name__", "tool")
    return run


class _ToolActor:
    """A tool pack's actor: the process (and its module state) lives across calls."""

    def run(self, fn: Callable[..., Any], kwargs: dict[str, Any], is_async: bool) -> Any:
        return _body(fn, kwargs, is_async)


class RayBackend(ToolBackend):
    """Runs tool bodies on a Ray cluster.

    - ``address``: the cluster (``"ray://host:10001"``, ``"auto"``); default
      ``RAY_ADDRESS``, else a local cluster started on first use (and shut down by
      :meth:`close`). An already initialised Ray (``ray.init`` in your code) is used
      as it is.
    - ``num_cpus``: the local cluster's CPUs (default: the machine's).
    - ``runtime_env``: for the job (a real cluster needs the application's tool
      packs there: ``{"pip": ["toolwire-fs"]}`` or ``{"py_modules": [...]}``). A
      local cluster gets the driver's ``sys.path`` as ``PYTHONPATH`` unless given
      one, so the application's own modules import on its workers.
    - ``options``: Ray options for every task (a tool's own win over them).
    - ``init_options``: more keywords for ``ray.init``.

    Connecting starts or joins the cluster (seconds for a local one): call
    :meth:`connect` at start-up, or the first tool call does it.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        namespace: str = "toolwire",
        runtime_env: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        if num_cpus is not None and (
            isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
        ):
            raise UsageError(f"num_cpus must be an int >= 1, got {num_cpus!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.namespace = namespace
        self.runtime_env = dict(runtime_env) if runtime_env is not None else None
        self.options = _checked(dict(options or {}), "RayBackend(options=...)")
        self.init_options = dict(init_options or {})
        self._lock = threading.Lock()
        self._owned = False
        self._connected = False
        self._actors: dict[str, Any] = {}
        self._tasks: dict[Any, Any] = {}  # (function, async, options) -> remote function

    def __repr__(self) -> str:
        where = self.address or os.environ.get("RAY_ADDRESS") or "local"
        return f"<RayBackend {where} connected={self._connected}>"

    # -- the cluster ------------------------------------------------------------------

    def connect(self) -> None:
        """Join the cluster, or start a local one; a no-op once connected."""
        with self._lock:
            if self._connected:
                return
            if self._address() is None and "ray" not in sys.modules:
                # A local cluster runs this interpreter with these packages: Ray's
                # `uv run` propagation (ship the project, re-run uv on every worker)
                # is not needed and, offline, hangs. Read when Ray is imported.
                os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
            import ray

            if not ray.is_initialized():
                ray.init(**self._init_kwargs())
                self._owned = True
            else:
                _warn_uv_propagation()
            self._connected = True

    def _address(self) -> str | None:
        return self.address or os.environ.get("RAY_ADDRESS") or None

    def _init_kwargs(self) -> dict[str, Any]:
        address = self._address()
        kwargs: dict[str, Any] = {
            "namespace": self.namespace,
            "include_dashboard": False,
            "log_to_driver": False,  # a tool's prints are not the command's output
        }
        env = self.runtime_env
        if address is None:
            if self.num_cpus is not None:
                kwargs["num_cpus"] = self.num_cpus
            if env is None:
                path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
                env = {"env_vars": {"PYTHONPATH": path}}
        else:
            kwargs["address"] = address
        if env is not None:
            kwargs["runtime_env"] = env
        kwargs.update(self.init_options)
        return kwargs

    def close(self) -> None:
        """Kill this backend's driver-scoped actors; shut the cluster down if this
        backend started it (a cluster it joined keeps running)."""
        with self._lock:
            if not self._connected:
                return
            import ray

            for actor, scope in self._actors.values():
                if scope == "driver":
                    try:
                        ray.kill(actor, no_restart=True)
                    except Exception:
                        logger.debug("actor already gone", exc_info=True)
            self._actors.clear()
            self._tasks.clear()
            if self._owned and ray.is_initialized():
                ray.shutdown()
            self._owned = False
            self._connected = False

    # -- one body ---------------------------------------------------------------------

    async def run(self, call: BackendCall) -> Any:
        if not self._connected:
            self.connect()
        import ray

        options = {**self.options, **call.options}
        actor_key = options.pop("actor", None)
        scope = options.pop("actor_scope", "driver")
        try:
            _checked(options, f"tool `{call.name}`'s backend_options['ray']")
        except UsageError as exc:
            raise ToolBackendError(str(exc), kind="bad_options") from None
        kwargs = dict(call.kwargs)
        actor = None
        try:
            if actor_key is not None:
                actor = self._actor(str(actor_key), scope, options)
                ref = actor.run.remote(_portable(call.fn), kwargs, call.is_async)
            else:
                ref = self._task(call, options).remote(**kwargs)
        except (TypeError, pickle.PicklingError, AttributeError) as exc:
            # Serialising the function or its input failed, in the driver: nothing ran.
            logger.info("tool %s call %s: cannot send to Ray: %s", call.name, call.call_id, exc)
            # The detail quotes the input (it may hold secrets): the log has it, not the model.
            raise ToolBackendError(
                "its input cannot be sent to a Ray worker (it cannot be pickled)",
                kind="unpicklable",
            ) from None
        future = asyncio.wrap_future(ref.future())
        try:
            if call.timeout is None:
                return await future
            return await asyncio.wait_for(future, call.timeout)
        except TimeoutError:
            self._stop(ref, actor, actor_key)
            if not self._owned:
                _warn_uv_propagation()  # the likely reason, when it applies
            raise ToolTimeoutError(call.timeout or 0.0) from None
        except asyncio.CancelledError:
            self._stop(ref, actor, actor_key)
            raise
        except ray.exceptions.RayError as exc:
            raise self._mapped(exc, call, actor_key) from None

    def _task(self, call: BackendCall, options: Mapping[str, Any]) -> Any:
        """The remote function for this tool and these options, made once and kept."""
        fn = call.fn
        try:
            key: Any = (fn, call.is_async, tuple(sorted(options.items())))
            found = self._tasks.get(key)
        except TypeError:  # an unhashable option value (a runtime_env dict): no cache
            key, found = None, None
        if found is not None:
            return found
        import ray

        target = _portable(fn)
        if isinstance(target, tuple):
            body = _named(target[0], target[1], call.is_async)
        else:
            body = _by_value(fn, call.is_async)
        task = ray.remote(body).options(max_retries=0, retry_exceptions=False, **options)
        if key is not None:
            with self._lock:
                if len(self._tasks) >= _MAX_TASKS:
                    self._tasks.pop(next(iter(self._tasks)))
                self._tasks[key] = task
        return task

    def _actor(self, key: str, scope: Any, options: Mapping[str, Any]) -> Any:
        if scope not in _ACTOR_SCOPES:
            raise ToolBackendError(
                f"actor_scope must be one of {', '.join(_ACTOR_SCOPES)}, got {scope!r}",
                kind="bad_options",
            )
        with self._lock:
            found = self._actors.get(key)
            if found is not None:
                return found[0]
            import ray

            settings: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0, **options}
            if scope == "cluster":
                settings.update(
                    name=f"toolwire-tools:{key}",
                    namespace=self.namespace,
                    lifetime="detached",
                    get_if_exists=True,
                )
            actor = ray.remote(_ToolActor).options(**settings).remote()
            self._actors[key] = (actor, scope)
            return actor

    def _stop(self, ref: Any, actor: Any, actor_key: Any) -> None:
        """Stop a body that ran out of time (or whose caller went away)."""
        import ray

        try:
            if actor is None:
                ray.cancel(ref, force=True)  # kills the worker: a hung body cannot be interrupted
            else:
                # An actor's method cannot be forced; the actor is killed and made again.
                ray.kill(actor, no_restart=True)
                with self._lock:
                    self._actors.pop(str(actor_key), None)
        except Exception:
            logger.debug("could not stop a timed-out Ray task", exc_info=True)

    def _mapped(self, exc: Exception, call: BackendCall, actor_key: Any) -> Exception:
        """A Ray failure as the executor reports it: the tool's own exception (as
        in-process), or a ToolBackendError with its kind; the detail goes to the log."""
        import ray

        logger.info("tool %s call %s failed on Ray:\n%s", call.name, call.call_id, exc)
        text = str(exc)
        if isinstance(exc, (ray.exceptions.WorkerCrashedError, ray.exceptions.ActorDiedError)):
            if actor_key is not None:
                with self._lock:
                    self._actors.pop(str(actor_key), None)
            return ToolBackendError(
                "the Ray worker running it died", kind="worker_died", transient=True
            )
        if isinstance(exc, (ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError)):
            return ToolBackendError(
                "its result was lost on Ray", kind="object_lost", transient=True
            )
        if isinstance(exc, ray.exceptions.TaskCancelledError):
            return ToolBackendError("it was cancelled on Ray", kind="cancelled")
        if isinstance(exc, ray.exceptions.RuntimeEnvSetupError):
            return ToolBackendError(
                "Ray could not set up its runtime_env", kind="unavailable", transient=True
            )
        if isinstance(exc, ray.exceptions.RayTaskError):
            cause = getattr(exc, "cause", None)
            if "No module named" in text or isinstance(cause, ray.exceptions.RaySystemError):
                return ToolBackendError(
                    "its code could not be loaded on the Ray worker (is the package "
                    "installed there? see runtime_env)",
                    kind="remote_import",
                )
            if isinstance(cause, (TypeError, pickle.PicklingError)) and _pickling(text):
                return ToolBackendError(
                    "its output cannot be sent back from the Ray worker (it cannot be pickled)",
                    kind="unpicklable",
                )
            if isinstance(cause, Exception):
                return cause  # the tool's own failure, reported as in-process
        if isinstance(exc, ray.exceptions.RaySystemError):
            # Raised in this process, at once: the result came back and would not unpickle.
            return ToolBackendError(
                "its output came back from the Ray worker but cannot be unpickled here "
                "(a class this process cannot import or build?)",
                kind="unpicklable",
            )
        return ToolBackendError(f"it failed on Ray ({type(exc).__name__})", kind="ray_error")


UV_HINT = (
    "this process runs under `uv run` and started Ray itself with Ray's `uv run` "
    "propagation on (RAY_ENABLE_UV_RUN_RUNTIME_ENV is not 0): Ray re-runs `uv run` for "
    "every worker, which can hang (offline, or on a project uv cannot resolve there), and "
    "then every call waits out its timeout. Set RAY_ENABLE_UV_RUN_RUNTIME_ENV=0 in the "
    "environment before Ray is imported (a local cluster runs this interpreter and its "
    "packages already), or give ray.init() the runtime_env your workers need"
)


def _uv_propagation() -> bool:
    """Whether Ray was imported under `uv run` with its uv propagation on."""
    if not os.environ.get("UV_RUN_RECURSION_DEPTH") and not os.environ.get("UV"):
        return False
    constants = sys.modules.get("ray._private.ray_constants")
    on = getattr(constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", None)
    if on is None:
        raw = os.environ.get("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "1").strip().lower()
        on = raw not in ("0", "false", "no", "off")
    return bool(on)


def _warn_uv_propagation() -> None:
    if _uv_propagation():
        logger.warning("%s", UV_HINT)


def _checked(options: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(options) - RAY_OPTIONS - {"actor", "actor_scope"})
    if "max_retries" in unknown:
        raise UsageError(
            f"{where}: max_retries is not a tool's option: retries are toolwire's (a "
            f"retry_hint on an idempotent tool)"
        )
    if unknown:
        raise UsageError(
            f"{where}: unknown Ray option(s) {', '.join(unknown)}; known: "
            f"{', '.join(sorted(RAY_OPTIONS))}, actor, actor_scope"
        )
    return options


def _pickling(text: str) -> bool:
    """Whether a remote traceback ends in pickling the output (after the body returned)."""
    return "cloudpickle" in text and "in dump" in text
