"""What the commands print: plain lines for people, JSON lines with ``--json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from toolwire._agent import AgentEvent, AgentFinished, ToolCallDecided, ToolResultReady
from toolwire._calls import rejection_reason

Emit = Callable[[dict[str, Any]], None]

_DECISION = {"run": "run", "handled": "complete", "rejected": "reject", "invalid": "reject"}


def _out(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


class _Events:
    """Turns the agent's events into CLI events, and remembers whether all went well."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.clean = True

    def __call__(self, event: AgentEvent) -> None:
        emit = self.emit
        if isinstance(event, ToolCallDecided):
            call = event.call
            emit({"event": "call", "id": call.id, "name": call.name, "arguments": call.arguments})
            decision: dict[str, Any] = {
                "event": "decision",
                "id": call.id,
                "decision": _DECISION[event.outcome],
                "source": "toolwire" if event.outcome == "invalid" else event.source,
            }
            if event.outcome in ("rejected", "invalid"):
                decision["reason"] = event.reason
                self.clean = False
            emit(decision)
        elif isinstance(event, ToolResultReady):
            r = event.result
            emit({"event": "result", "id": r.call_id, "content": r.content, "is_error": r.is_error})
            self.clean = self.clean and not r.is_error
        elif isinstance(event, AgentFinished) and event.result.status == "finished":
            emit({"event": "answer", "text": event.result.text})


def _indented(label: str, text: str) -> str:
    """``label: text`` on one line, or ``label:`` then the lines of ``text`` indented."""
    text = text.rstrip("\n")
    if "\n" not in text:
        return f"{label}: {text}"
    return f"{label}:\n" + "\n".join(f"    {line}" for line in text.splitlines())


def _printer(as_json: bool) -> Emit:
    explained: set[str] = set()  # calls whose rejection reason was already shown

    def emit(event: dict[str, Any]) -> None:
        if as_json:
            _out(sys.stdout, json.dumps(event))
            return
        kind = event["event"]
        if kind == "call":
            _out(sys.stdout, f"> {event['name']} {event['arguments']}")
        elif kind == "decision":
            if event["decision"] == "reject":
                explained.add(event["id"])
                source = f" by {event['source']}" if event.get("source") else ""
                _out(sys.stdout, f"  decision: rejected{source}: {event.get('reason', '')}")
            elif event["decision"] == "complete":
                _out(sys.stdout, "  decision: answered by a hook (not run)")
            else:
                _out(sys.stdout, "  decision: run")
        elif kind == "approval":
            if event["decision"] == "allow":
                _out(sys.stdout, f"  approval: approved ({event['reason']})")
            else:
                explained.add(event["id"])
                _out(sys.stdout, f"  approval: denied: {event['reason']}")
        elif kind == "result":
            reason = rejection_reason(event["content"])
            if reason is None:
                label = "  error" if event["is_error"] else "  result"
                _out(sys.stdout, _indented(label, event["content"]))
            elif event["id"] not in explained:
                _out(sys.stdout, _indented("  refused", reason))
        elif kind == "answer":
            _out(sys.stdout, f"assistant: {event['text']}")

    return emit
