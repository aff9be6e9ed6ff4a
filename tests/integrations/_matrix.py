"""What every framework row of the governance matrix shares: the one policy file, the
tools' behaviour (each framework defines the four tools in its own terms, and they report
here when they run), and what a row answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

import toolwire as tw

#: The one policy every framework is governed by.
POLICY = """
deny = ["drop_*"]
approve = ["send_mail", "write_file"]

[audit]
path = "audit.jsonl"

[[redact]]
result_patterns = ['sk-[a-z0-9]+']

[[quotas]]
tools = ["search"]
calls = 1
seconds = 600

[[rules]]
subjects = ["mallory"]
deny = ["lookup"]
"""

#: The effects the application gives (the frameworks' tools say none): unknown tools
#: count as destructive.
EFFECTS = {"lookup": "read_only", "search": "read_only", "send_mail": "mutating"}

ALICE = tw.Principal("alice")
MALLORY = tw.Principal("mallory")


class Runs:
    """The tools' bodies, shared by every framework: each call that really ran is kept."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def lookup(self, query: str) -> str:
        """Look a query up."""
        self.ran.append(("lookup", {"query": query}))
        return f"found {query}; api key sk-abc123"

    def search(self, query: str) -> str:
        """Search for a query."""
        self.ran.append(("search", {"query": query}))
        return f"results for {query}"

    def drop_table(self, name: str) -> str:
        """Drop a table."""
        self.ran.append(("drop_table", {"name": name}))
        return f"dropped {name}"

    def send_mail(self, to: str) -> str:
        """Send a mail."""
        self.ran.append(("send_mail", {"to": to}))
        return f"sent to {to}"


@attrs.frozen
class Seen:
    """What the model read as the tool's answer (``text``), or the run paused for a
    person's approval (``paused``: the row's own handle to resume it by)."""

    text: str | None
    paused: Any = None
    #: The framework itself refused (raised) before any tool ran: its words.
    raised: str | None = None


class Row(Protocol):
    """One framework: runs a real agent of its own whose test model calls one tool."""

    framework: str

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen: ...

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen: ...

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        """Like :meth:`call`, the agent's tools being the toolwire pack ``pack`` made the
        framework's own (the bridge's ``toolset``/``tools``)."""
        ...


RowFactory = Callable[[tw.PluginHost, Runs, Path], Row]
