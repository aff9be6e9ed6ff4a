"""What the policy's hooks do with a call and its result: decide (check, audit, answer),
write the decision and result records of the audit log, redact a result and hold back
media the policy does not allow, and record the host's own audit events (a mixin of
:class:`~toolwire_policy.Policy`)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import threading
from collections.abc import (
    Awaitable,
    Callable,
)
from typing import TYPE_CHECKING, Any

from toolwire import (
    HookContext,
    Principal,
    Reject,
    RunNormally,
    Tool,
    ToolCall,
    ToolDecision,
    ToolResult,
    TypedCall,
)
from toolwire.adapters import AuditEvent
from toolwire.media import Audio, File, Image
from toolwire.media import Text as MediaText
from toolwire_policy._approval import (
    APPROVAL_REASON,
    Deferred,
    Verdict,
)
from toolwire_policy._audit import AuditLog, fingerprint, utc_now
from toolwire_policy._config import (
    PLUGIN_NAME,
    PolicyConfig,
)
from toolwire_policy._quotas import (
    MemoryStore,
    QuotaStore,
    Want,
)
from toolwire_policy._terms import (
    FRAMEWORK,
    UNRECORDED,
    _globs,
    _in_event_loop,
    _names,
    call_arguments,
)

logger = logging.getLogger("toolwire.policy")


class _Recording:
    """The hooks' work of a :class:`~toolwire_policy.Policy` (a part of it)."""

    __slots__ = ("_last_arguments",)
    #: (the call, its redacted arguments, their fingerprint) of the last call audited:
    #: its decision and result records say the same arguments, worked out once.
    _last_arguments: tuple[TypedCall[Any], dict[str, Any], str] | None

    if TYPE_CHECKING:
        config: PolicyConfig
        audit_log: AuditLog | None
        quota_store: QuotaStore
        clock: Callable[[], float]
        _inflight: dict[int, tuple[ToolCall, str, tuple[Want, ...], float]]
        _inflight_lock: threading.Lock

        def check(
            self, call: TypedCall[Any], context: HookContext
        ) -> Verdict | Awaitable[Verdict]: ...

        def redact_arguments(self, tool: Tool[Any, Any], arguments: Any) -> Any: ...

        def redact_content(
            self, tool: Tool[Any, Any], content: str, principal: Principal | None = None
        ) -> tuple[str, int]: ...

        def redact_structured(
            self, tool: Tool[Any, Any], value: Any, principal: Principal | None = None
        ) -> tuple[Any, int]: ...

        def finish(self, call: TypedCall[Any], *, refund: bool = False) -> None: ...

        def _finish(self, call: ToolCall, *, refund: bool = False) -> bool: ...

        def _effect(self, names: tuple[str, ...], claimed: str) -> str: ...

        def _claimed(self, tool: Tool[Any, Any]) -> str: ...

    # -- the hooks' work ----------------------------------------------------------------

    def decide(
        self, call: TypedCall[Any], context: HookContext
    ) -> ToolDecision | Awaitable[ToolDecision | None] | None:
        """Check, audit, and answer: None (run) or Reject. Awaitable with an async approver."""
        verdict = self.check(call, context)
        if inspect.isawaitable(verdict):
            pending = verdict
            return Deferred(lambda: self._decide_later(call, context, pending))
        return self._conclude(call, context, verdict)

    async def _decide_later(
        self, call: TypedCall[Any], context: HookContext, pending: Awaitable[Verdict]
    ) -> ToolDecision | None:
        return self._conclude(call, context, await pending)

    @property
    def observing(self) -> bool:
        """Shadow mode (``mode = "observe"``): decisions are audited, not enforced."""
        return self.config.mode == "observe"

    def _conclude(
        self, call: TypedCall[Any], context: HookContext, verdict: Verdict
    ) -> ToolDecision | None:
        try:
            self.audit_decision(call, context, verdict)
        except OSError as exc:
            logger.error("cannot write the audit log %s: %s", self.audit_log, exc)
            return Reject(
                "the organisation policy cannot write its audit log, so no tool may run; "
                "tell the operator"
            )
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "tool=%s call=%s decision=%s reason=%s arguments=%s",
                call.name,
                call.id,
                "allow" if verdict.allowed else "reject",
                verdict.reason,
                json.dumps(self.redact_arguments(call.tool, call_arguments(call)), default=str),
            )
        if self.observing:
            return None  # shadow mode: recorded as "would reject", and run
        if verdict.allowed and verdict.input is not None:
            return RunNormally(verdict.input)  # an approver's edit, decided again
        return None if verdict.allowed else Reject(verdict.reason)

    def audit_decision(self, call: TypedCall[Any], context: HookContext, verdict: Verdict) -> None:
        """Write the decision record (when an audit log is configured); raises OSError."""
        if self.audit_log is None:
            return
        audit = self.config.audit
        assert audit is not None
        redacted, digest = self._audited_arguments(call)
        record = self._record("decision", call, context)
        record["decision"] = "allow" if verdict.allowed else "reject"
        record["fingerprint"] = digest
        record["reason"] = verdict.reason or None
        record["approval"] = verdict.approval
        if self.observing:
            # Shadow mode: what the policy would have done, and that it let the call run.
            would = "allow"
            if not verdict.allowed:
                asks = verdict.reason.startswith(APPROVAL_REASON)
                would = "ask" if asks else "reject"
            record["decision"], record["mode"], record["would"] = "allow", "observe", would
        claimed = call.tool.metadata.effect.value
        # As this policy took it (an untrusted MCP server's claim is not believed).
        record["effect"] = self._effect(_names(call.tool), self._claimed(call.tool))
        if record["effect"] != claimed:
            record["claimed_effect"] = claimed
        if audit.arguments:
            record["arguments"] = redacted
        if verdict.input is not None:  # approved with other arguments: what runs, recorded
            edited = call.with_input(verdict.input)
            shown = self.redact_arguments(call.tool, call_arguments(edited))
            record["edited_fingerprint"] = fingerprint(shown)
            if audit.arguments:
                record["edited_arguments"] = shown
        self.audit_log.write(record)

    def _audited_arguments(self, call: TypedCall[Any]) -> tuple[dict[str, Any], str]:
        """A call's arguments as its records say them (redacted) and their fingerprint,
        worked out once for the decision and the result of the same call."""
        last = self._last_arguments
        if last is not None and last[0] is call:
            return last[1], last[2]
        redacted = self.redact_arguments(call.tool, call_arguments(call))
        digest = fingerprint(redacted)
        self._last_arguments = (call, redacted, digest)
        return redacted, digest

    def on_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext
    ) -> ToolResult | Awaitable[ToolResult | None] | None:
        """Redact the result's content by the result patterns, withhold media the policy
        does not allow, and audit it. Awaitable when the call's concurrency slot is held
        in a shared store and an event loop runs: the store is told off the loop, and the
        result comes back once the slot is free (a call right after it finds it so)."""
        if self._inflight:
            if _in_event_loop() and self._holds_shared(call):

                async def later() -> ToolResult | None:
                    await asyncio.to_thread(self.finish, call)
                    return self._on_result(call, result, context)

                return Deferred(later)
            self.finish(call)
        return self._on_result(call, result, context)

    def _holds_shared(self, call: TypedCall[Any]) -> bool:
        """Whether ``call`` holds a slot in a store other than this process's memory."""
        if isinstance(self.quota_store, MemoryStore):
            return False
        with self._inflight_lock:
            held = self._inflight.get(id(call.call))
        return (
            held is not None
            and held[0] is call.call
            and any(w.concurrent is not None for w in held[2])
        )

    def _on_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext
    ) -> ToolResult | None:
        content, count = self.redact_content(call.tool, result.content, context.principal)
        structured = result.structured
        if structured is not None:
            structured, more = self.redact_structured(call.tool, structured, context.principal)
            count += more
        if count and not self.observing:
            final = result.replace(content=content, structured=structured)
        else:  # shadow mode: counted ("would redact"), not redacted
            final = result
        withheld: list[str] = []
        if final.rich and not self.observing:
            final, withheld = self._media_allowed(final)
        content = final.content
        audit = self.config.audit
        if self.audit_log is not None and audit is not None and audit.results:
            _, digest = self._audited_arguments(call)
            record = self._record("result", call, context)
            record["decision"] = "error" if result.is_error else "ok"
            record["fingerprint"] = digest
            record["content_sha256"] = hashlib.sha256(content.encode("utf-8")).hexdigest()
            record["content_length"] = len(content)
            if final.structured is not None:  # what a gateway's client gets beside the text
                canonical = json.dumps(
                    final.structured, sort_keys=True, separators=(",", ":"), ensure_ascii=False
                )
                record["structured_sha256"] = hashlib.sha256(
                    canonical.encode("utf-8", "surrogatepass")
                ).hexdigest()
            record["redactions"] = count
            if self.observing:
                record["mode"] = "observe"  # the redactions counted were not made
            if result.rich:  # what media went to the model: type, size, digest (no bytes)
                record["media"] = [_media_record(p) for p in final.media]
                if withheld:
                    record["media_withheld"] = withheld
            # A receipt over (tool, the arguments the model sent, the content the session
            # holds, the time): `toolwire.adapters.Receipt(tool, output, timestamp, digest)
            # .verify(arguments)` checks a transcript's result against this log.
            receipt = final.receipt()
            record["receipt"] = {"timestamp": receipt.timestamp, "digest": receipt.digest}
            try:
                self.audit_log.write(record)
            except OSError as exc:
                # The call ran, but its result is on no record: it is not returned as a
                # success. The caller is told the tool ran and its result was withheld
                # (the decision record says it was allowed), and the operator is told why.
                logger.error("cannot write the audit log %s: %s", self.audit_log, exc)
                return call.error(UNRECORDED)
        if count or withheld:
            return final
        return None

    def _media_allowed(self, result: ToolResult) -> tuple[ToolResult, list[str]]:
        """The result with each media part the policy does not allow replaced by its label
        saying why (the part itself is gone), and the withheld parts' labels. It works on
        the parts, not on the text: a tool's own text may hold a copy of a media line."""
        cfg = self.config
        if cfg.result_media is None and cfg.max_result_bytes is None:
            return result, []
        allowed = _globs(cfg.result_media) if cfg.result_media is not None else None
        parts = result.parts
        media = [p for p in parts if isinstance(p, (Image, Audio, File))]
        total = sum(p.size for p in media)
        too_big = cfg.max_result_bytes is not None and total > cfg.max_result_bytes
        kept: list[Any] = []
        withheld = []
        for part in parts:
            why = None
            if not isinstance(part, (Image, Audio, File)):
                kept.append(part)
                continue
            if cfg.result_media is not None and not (
                allowed is not None and allowed.fullmatch(part.media_type)
            ):
                why = f"{part.media_type} is not in the policy's result_media"
            elif too_big:
                why = (
                    f"the result's media ({total:,} bytes) is over the policy's "
                    f"max_result_bytes ({cfg.max_result_bytes:,})"
                )
            if why is None:
                kept.append(part)
            else:
                kept.append(MediaText(part.label(f"withheld: {why}")))
                withheld.append(part.label())
        if not withheld:
            return result, []
        return result.with_parts(kept), withheld

    def audit_event(self, event: AuditEvent, context: HookContext) -> None:
        """Write an attempt toolwire answered itself (or a policy switched off); raises
        OSError. The raw argument text is fingerprinted, never written. A ``cancelled``
        call frees what it held (its concurrency slots) first, however it ended."""
        if event.kind == "cancelled" and event.call is not None:
            self._finish(event.call)
        # Refused after this policy let it through (another hook, an approver, a check): it
        # never ran, so its counts are given back, and the log says so. A call this policy
        # never let through was recorded by its own decision.
        if event.kind == "refused" and (
            event.call is None or not self._finish(event.call, refund=True)
        ):
            return
        if self.audit_log is None:
            return
        record = self._base(event.kind, event.call_id, event.tool, context)
        if event.kind == "cancelled":
            record["decision"] = "cancelled"
        elif event.kind == "refused":
            record["decision"] = "reject"
        else:
            record["decision"] = "reject" if event.call_id else None
        record["reason"] = event.reason or None
        record["source"] = event.source
        if event.call_id:
            digest = hashlib.sha256(event.arguments.encode("utf-8", "surrogatepass"))
            record["fingerprint"] = "sha256:" + digest.hexdigest()
        self.audit_log.write(record)

    def _record(self, event: str, call: TypedCall[Any], context: HookContext) -> dict[str, Any]:
        return self._base(event, call.id, call.name, context)

    def _base(self, event: str, call_id: str, tool: str, context: HookContext) -> dict[str, Any]:
        record: dict[str, Any] = {
            "time": utc_now(),
            "event": event,
            "call_id": call_id or None,
            "tool": tool or None,
            "decision": None,
            "plugin": PLUGIN_NAME,
            "fingerprint": None,
            "reason": None,
            "app": context.app or None,
            "session_id": context.session_id or None,
            "provider": context.provider or None,
            "model": context.model or None,
            "principal": context.principal.to_dict() if context.principal is not None else None,
        }
        framework = context.extra.get(FRAMEWORK)
        if isinstance(framework, str) and framework:
            record["framework"] = framework[:100]  # a bridge's call: which framework made it
        audit = self.config.audit
        if audit is not None and audit.context_keys:
            keys = _globs(audit.context_keys)
            extra = {
                str(k): v
                for k, v in context.extra.items()
                if keys is not None and keys.match(str(k)) and _plain(v)
            }
            record["context"] = extra
        return record


def _media_record(part: Any) -> dict[str, Any]:
    if not hasattr(part, "sha256"):  # a resource link: where it points, nothing fetched
        return {"kind": part.kind, "uri": part.uri}
    return {
        "kind": part.kind,
        "media_type": part.media_type,
        "bytes": part.size,
        "sha256": part.sha256(),
    }


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
