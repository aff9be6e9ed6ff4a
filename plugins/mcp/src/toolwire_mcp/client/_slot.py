"""A process-wide handler the application sets (elicitation, progress, login)."""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar

__all__ = ["Slot"]

_H = TypeVar("_H")


class Slot(Generic[_H]):
    """Holds one handler: set under a lock, read without one (a reference read is atomic)."""

    __slots__ = ("_lock", "_value", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._value: _H | None = None
        self._lock = threading.Lock()

    def set(self, handler: _H | None) -> None:
        """``handler`` from now on (None: none); anything not callable is refused."""
        if handler is not None and not callable(handler):
            raise TypeError(f"the {self._what} must be callable, got {_kind(handler)}")
        with self._lock:
            self._value = handler

    def get(self) -> _H | None:
        return self._value


def _kind(value: Any) -> str:
    return type(value).__name__
