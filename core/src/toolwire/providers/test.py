"""The built-in offline ``test`` provider: no network, deterministic.

Heuristic mode (the default): on a new user message it calls the offered
tools whose name words appear in the message (a tool that is not read-only only
when the message names it, every word of its name), or the required tool, or the
first read-only tool when at least one is required, with arguments generated from each
tool's JSON schema; once results are in, it answers with text that uses
them (or, when the turn has an output type, with JSON generated from its
schema). Scripted mode replays given replies, for tests and examples.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from toolwire._calls import ToolCall, rejection_reason
from toolwire._errors import ProviderError, UsageError
from toolwire._provider import Provider
from toolwire._round import AssistantReply
from toolwire._transcript import AssistantMessage, Session, ToolResultsMessage, Usage, UserMessage
from toolwire._turn import ResolvedTurn
from toolwire.hookspecs import RegisterProvider, hookimpl

__all__ = ["TestProvider", "example_arguments"]

_WORD = re.compile(r"[a-z0-9]+")
# Quoted text in the prompt; a quote inside a word (an apostrophe) does not open or close one.
_QUOTED = re.compile(r"(?<!\w)\"([^\"]+)\"(?!\w)|(?<!\w)'([^']+)'(?!\w)|`([^`]+)`")


class TestProvider(Provider):
    """Offline provider; ``script`` (optional) is a list of replies to replay in order.

    A scripted reply is an AssistantReply or a dict ``{"text": ..., "tool_calls":
    [{"name": ..., "arguments": {...} or "json text", "id": optional}]}``.
    """

    __test__ = False  # not a pytest test class
    name: ClassVar[str] = "test"
    default_model: ClassVar[str] = "offline"

    def __init__(
        self,
        model: str | None = None,
        *,
        script: Iterable[AssistantReply | Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(model)
        self._script = (
            [_to_reply(r, i) for i, r in enumerate(script)] if script is not None else None
        )
        self.requests: list[tuple[Session, ResolvedTurn]] = []

    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self.requests.append((session, turn))
        if self._script is not None:
            if not self._script:
                raise ProviderError(
                    f"the scripted test provider has no replies left (request "
                    f"{len(self.requests)}; give one reply per request in script=[...])",
                    provider=self.name,
                )
            return self._script.pop(0)
        return self._heuristic(session, turn)

    def _heuristic(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        last = session.last
        n_round = sum(1 for m in session if isinstance(m, AssistantMessage))
        usage = Usage(input_tokens=sum(len(_text_of(m)) for m in session) // 4 + 1, output_tokens=8)
        if isinstance(last, ToolResultsMessage):
            parts = []
            for r in last.results:
                reason = rejection_reason(r.content)
                if reason is not None:
                    parts.append(f"{r.tool_name} was rejected ({reason})")
                elif r.is_error:
                    parts.append(f"{r.tool_name} failed: {r.content}")
                else:
                    parts.append(f"{r.tool_name} returned: {_gist(r.content)}")
            text = "Here is what I found. " + "; ".join(parts) + "."
            return AssistantReply(
                _structured(turn, text, []),
                finish_reason="stop",
                usage=usage,
                model=self.model,
            )
        prompt = last.text if isinstance(last, UserMessage) else ""
        chosen = _choose(turn, prompt)
        if not chosen:
            text = f"(offline test provider) You said: {prompt}" if prompt else "(offline)"
            text = _structured(turn, text, _quoted(prompt))
            return AssistantReply(text, finish_reason="stop", usage=usage, model=self.model)
        if turn.parallel is False:
            chosen = chosen[:1]
        quoted = _quoted(prompt)
        calls = tuple(
            ToolCall(
                f"call_{n_round}_{i}",
                t.name,
                json.dumps(example_arguments(t.tool.input_schema, quoted), separators=(",", ":")),
            )
            for i, t in enumerate(chosen)
        )
        return AssistantReply("", calls, "tool_calls", usage, model=self.model)


def _structured(turn: ResolvedTurn, text: str, quoted: list[str]) -> str:
    """The answer as JSON valid for the turn's output schema, when it has one
    (strings are the prompt's quoted text, then the plain answer)."""
    if turn.output is None:
        return text
    value = example_arguments(turn.output.schema, [*quoted, text])
    return json.dumps(value, ensure_ascii=False)


def _gist(content: str, limit: int = 160) -> str:
    """A result as the answer quotes it: one line, at most ``limit`` characters."""
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    text = "; ".join(lines)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    if len(lines) > 1:
        text += f" ({len(lines)} lines)"
    return text


def _text_of(m: Any) -> str:
    return getattr(m, "text", "") or ""


def _choose(turn: ResolvedTurn, prompt: str) -> list[Any]:
    tools = list(turn.tools)
    if not tools:
        return []
    if turn.required_tool is not None:
        return [t for t in tools if t.name == turn.required_tool]
    words = set(_WORD.findall(prompt.lower()))
    scores = [_score(t, words) for t in tools]
    best = max(scores)
    # The tools that match the prompt best (so "get weather" picks get_weather, not every get_*).
    matched = [t for t, score in zip(tools, scores, strict=False) if best and score == best]
    if not matched and turn.requirement.kind == "at_least_one":
        matched = [t for t in tools if _reads_only(t)][:1]
    return matched


def _reads_only(t: Any) -> bool:
    return bool(t.tool.metadata.effect.value == "read_only")


def _score(t: Any, words: set[str]) -> int:
    """How well the prompt's words name tool ``t``. A tool that changes anything is chosen
    only when the prompt names it, every word of its name ("write file" for write_file):
    a demo never writes or deletes what the prompt did not ask for ("delete_file" is not
    write_file, though both are about a file)."""
    own = set(_WORD.findall(t.name.lower()))
    if not _reads_only(t):
        return len(own) if own and own <= words else 0
    return sum(1 for w in own if len(w) >= 3 and w in words)


def _quoted(prompt: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(prompt)]


def example_arguments(schema: Mapping[str, Any], strings: Sequence[str] = ()) -> Any:
    """A value valid for ``schema`` (defaults where given; quoted prompt text for strings)."""
    defs = schema.get("$defs", {})
    pool = list(strings)
    return _example(schema, defs, pool, 0, required=True)


def _example(
    s: Mapping[str, Any], defs: Mapping[str, Any], pool: list[str], depth: int, *, required: bool
) -> Any:
    if depth > 8:
        return None
    if "$ref" in s:
        ref = s["$ref"].rsplit("/", 1)[-1]
        return _example(defs.get(ref, {}), defs, pool, depth + 1, required=required)
    if "default" in s:
        return s["default"]
    if "const" in s:
        return s["const"]
    if s.get("enum"):
        return s["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in s:
            options = [o for o in s[key] if o.get("type") != "null"] or s[key]
            return _example(options[0], defs, pool, depth + 1, required=required)
    if s.get("allOf"):
        return _example(s["allOf"][0], defs, pool, depth + 1, required=required)
    t = s.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object" or "properties" in s:
        props = s.get("properties", {})
        req = set(s.get("required", ()))
        return {
            k: _example(v, defs, pool, depth + 1, required=True)
            for k, v in props.items()
            if k in req
        }
    if t == "array":
        if "prefixItems" in s:  # tuples: one value per position
            return [_example(x, defs, pool, depth + 1, required=True) for x in s["prefixItems"]]
        n = int(s.get("minItems", 1 if s.get("maxItems", 1) else 0))
        item = s.get("items", {})
        return [_example(item, defs, pool, depth + 1, required=True) for _ in range(n)]
    if t == "string":
        fmt = s.get("format")
        if fmt in _FORMATS:
            return _FORMATS[fmt]
        text = pool.pop(0) if pool else "example"
        min_len = int(s.get("minLength", 0))
        max_len = s.get("maxLength")
        text = text.ljust(min_len, "x")
        return text[: int(max_len)] if max_len is not None else text
    if t == "integer":
        return _integer(s)
    if t == "number":
        return _number(s)
    if t == "boolean":
        return False
    if t == "null":
        return None
    return "example"


# Values valid for the string formats pydantic emits (datetime, date, UUID, ...).
_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00",
    "duration": "PT1S",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
}


def _integer(s: Mapping[str, Any]) -> int:
    lo = s.get("minimum")
    if lo is None and "exclusiveMinimum" in s:
        lo = math.floor(s["exclusiveMinimum"]) + 1
    hi = s.get("maximum")
    if hi is None and "exclusiveMaximum" in s:
        hi = math.ceil(s["exclusiveMaximum"]) - 1
    value = math.ceil(lo) if lo is not None else (min(1, math.floor(hi)) if hi is not None else 1)
    step = s.get("multipleOf")
    if isinstance(step, int) and step > 0:
        value = -(-value // step) * step
    return int(value)


def _number(s: Mapping[str, Any]) -> float:
    lo = s.get("minimum", s.get("exclusiveMinimum"))
    hi = s.get("maximum", s.get("exclusiveMaximum"))
    if lo is not None and hi is not None:
        return (float(lo) + float(hi)) / 2
    if lo is not None:
        return float(lo) + (1.0 if "minimum" not in s else 0.0)
    if hi is not None:
        return float(hi) - (1.0 if "maximum" not in s else 0.0)
    return 1.0


def _to_reply(r: AssistantReply | Mapping[str, Any], i: int) -> AssistantReply:
    if isinstance(r, AssistantReply):
        return r
    if not isinstance(r, Mapping):
        raise UsageError(f"script[{i}] must be an AssistantReply or a dict, got {type(r).__name__}")
    calls = []
    for j, c in enumerate(r.get("tool_calls", ())):
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
            raise UsageError(
                f"script[{i}].tool_calls[{j}] must be a dict with a string 'name', got {c!r}"
            )
        args = c.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
        calls.append(ToolCall(str(c.get("id", f"call_{i}_{j}")), str(c["name"]), text))
    return AssistantReply(
        str(r.get("text", "")),
        tuple(calls),
        "tool_calls" if calls else "stop",
        model="scripted",
    )


# -- registration: the built-in provider is a plugin like any other ---------------------


@hookimpl
def toolwire_register_providers(register: RegisterProvider) -> None:
    """Register the offline ``test`` provider (entry point ``toolwire.providers: test``)."""
    register(TestProvider.name, TestProvider)
