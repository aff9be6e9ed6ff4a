"""Tools the Ray tests run on the cluster (a module, so workers import it by name)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import toolwire as tw

_CALLS = 0


def _count(path: str) -> None:
    with Path(path).open("a") as f:
        f.write("run\n")


@tw.tool_fn
def whoami(tag: str) -> str:
    """Say which process ran this."""
    return f"{tag}:{os.getpid()}"


@tw.tool_fn(local=True)
def here(tag: str) -> str:
    """A cheap tool that stays in the driver."""
    return f"{tag}:{os.getpid()}"


@tw.tool_fn(timeout=1.0)
def hang(seconds: float) -> str:
    """Sleep past the timeout."""
    time.sleep(seconds)
    return "late"


@tw.tool_fn(effect="mutating")
def crash(counter: str) -> str:
    """Count the run in a file, then kill the worker (not idempotent)."""
    _count(counter)
    os._exit(1)


@tw.tool_fn(retry_hint=tw.RetryHint(max_attempts=3, initial_backoff=0.0))
def crash_once(counter: str) -> str:
    """Idempotent: the first run kills its worker, the next one answers."""
    _count(counter)
    if len(Path(counter).read_text().splitlines()) == 1:
        os._exit(1)
    return "second time lucky"


@tw.tool_fn
def square(n: int) -> int:
    """n squared, after a little work."""
    time.sleep(0.001 * (n % 5))
    return n * n


class Unpicklable:
    def __reduce__(self) -> Any:
        raise TypeError("this object cannot be pickled")


@tw.tool_fn
def bad_output() -> str:
    """Return something that cannot travel back."""
    return Unpicklable()  # type: ignore[return-value]


@tw.tool_fn
def fails(text: str) -> str:
    """Raise on the worker."""
    raise ValueError(f"cannot handle {text!r}")


@tw.tool_fn(backend_options={"ray": {"actor": "counter-pack"}})
def counted() -> str:
    """Count calls in the actor's memory (one actor per pack)."""
    global _CALLS
    _CALLS += 1
    return f"{os.getpid()}:{_CALLS}"


@tw.tool_fn(backend_options={"ray": {"num_cpus": 1, "max_retries": 3}})
def wrong_options() -> str:
    """Asks for a Ray option toolwire does not allow."""
    return "never"


@tw.tool_fn(effect="destructive")
def wipe(counter: str) -> str:
    """Count the run (a denied call must never get here)."""
    _count(counter)
    return "wiped"


@tw.tool_fn
async def async_whoami(tag: str) -> str:
    """An async tool, awaited on the worker."""
    return f"{tag}:{os.getpid()}"


@tw.tool_fn
def draw(label: str) -> list[str | tw.Image | tw.File]:
    """Draw in a worker: text, a PNG made there and a PDF (media results, #27)."""
    png = b"\x89PNG\r\n\x1a\n" + os.getpid().to_bytes(4, "big") + bytes(16)
    return [f"{label} by {os.getpid()}", tw.Image(png), tw.File(b"%PDF-1.4\n", name="r.pdf")]
