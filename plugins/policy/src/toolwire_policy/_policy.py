"""The compiled policy: matching, constraints, quotas, redaction and auditing; approval is
``_approval``'s."""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import inspect
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from pathlib import Path
from typing import Any, NewType

import attrs

from toolwire import (
    HookContext,
    Principal,
    Tool,
    ToolCall,
    TypedCall,
)
from toolwire.approvals import ApprovalQueue
from toolwire_policy._approval import (
    ALLOW,
    APPROVAL_REASON,
    Deferred,
    Verdict,
    ask_approval,
)
from toolwire_policy._audit import AuditLog
from toolwire_policy._config import (
    ConstraintRule,
    PolicyConfig,
    PolicyFileError,
    QuotaStoreConfig,
    env_secret,
    parse_policy_text,
    read_policy_file,
)
from toolwire_policy._queue import open_queue, open_webhook, queued_approval
from toolwire_policy._quotas import (
    MemoryStore,
    QuotaStore,
    RedisStore,
    SqliteStore,
    StoreError,
    Want,
)
from toolwire_policy._recording import _Recording
from toolwire_policy._terms import (
    REDACTED,
    UNKNOWN_EFFECT_SOURCE,
    UNRECORDED,
    _globs,
    _in_event_loop,
    _matches,
    _names,
    call_arguments,
    revealed_arguments,
)

__all__ = ["REDACTED", "UNRECORDED", "Policy", "call_arguments", "revealed_arguments"]

logger = logging.getLogger("toolwire.policy")

#: The names an allow-list may match: only :func:`_mounted` makes them.
MountedNames = NewType("MountedNames", tuple[str, ...])


def _mounted(tool: Tool[Any, Any]) -> MountedNames:
    # The names an allow-list may match: those the tool is mounted and called by, and its
    # source's (named by the code that made it, never by the tool itself).
    source = tool.metadata.source
    if source is None:
        return MountedNames(tool.mounted_names)
    return MountedNames((*tool.mounted_names, f"{source}/{tool.origin.name}"))


@attrs.frozen
class AllowList:
    """The one way an allow-list matches a tool: by the names the application mounted it
    and the model calls it by (:func:`_mounted`), never by the name the tool chose for
    itself. A tool defined as ``deploy`` and mounted as ``evil_deploy`` is not allowed by
    ``allow = ["deploy"]``. (Deny lists match every name a tool has: being denied by a
    name it chose costs the tool nothing it could gain.)"""

    rx: re.Pattern[str] | None

    @classmethod
    def of(cls, globs: Iterable[str]) -> AllowList:
        return cls(_globs(globs))

    def admits(self, mounted: MountedNames) -> bool:
        return _matches(self.rx, mounted)


# Whom a rule is for: its subject and group globs compiled (None: every call).
_Whom = tuple["re.Pattern[str] | None", "re.Pattern[str] | None"] | None
# A constraint rule, its argument-name matcher (None: every argument), its deny regexes,
# whom it is for.
_Constraint = tuple[ConstraintRule, "re.Pattern[str] | None", tuple["re.Pattern[str]", ...], _Whom]


#: Tools whose compiled rules are kept by identity (more start the memory over).
_MAX_TOOLS = 4096

#: Calls in flight remembered before those past their lease are dropped.
_MAX_WINDOWS = 10_000


@attrs.frozen
class _Rule:
    """A ``[[rules]]`` table, its globs compiled."""

    subjects: re.Pattern[str] | None
    groups: re.Pattern[str] | None
    allow: AllowList
    deny: re.Pattern[str] | None
    approve: re.Pattern[str] | None


@attrs.frozen
class _Compiled:
    """What the policy says about one tool, independent of the call's arguments."""

    hidden: str | None  # why the tool is hidden and every call rejected
    needs_approval: str | None  # the approval reason, when calls need approval
    constraints: tuple[_Constraint, ...]
    redact_arguments: re.Pattern[str] | None
    redact_results: tuple[tuple[re.Pattern[str], _Whom], ...]


def _whom(subjects: list[str], groups: list[str]) -> _Whom:
    return (_globs(subjects), _globs(groups)) if subjects or groups else None


def _aimed_at(whom: _Whom, principal: Principal | None) -> bool:
    """Whether a rule for ``whom`` applies to a call for ``principal``."""
    if whom is None:
        return True
    if principal is None:
        return False
    return _matches(whom[0], (principal.subject,)) or _matches(
        whom[1], tuple(sorted(principal.groups))
    )


class Policy(_Recording):
    """An organisation policy compiled from a :class:`PolicyConfig`.

    Build one with :meth:`from_file` or :meth:`from_text` (or from a config
    you validated yourself); hook it up with :class:`PolicyPlugin`.
    """

    __slots__ = (
        "_allow",
        "_approve",
        "_by_tool",
        "_cache",
        "_deny",
        "_effects",
        "_inflight",
        "_inflight_lock",
        "_quotas",
        "_rules",
        "_trusted_mcp",
        "approvals",
        "audit_log",
        "clock",
        "config",
        "quota_store",
        "source",
        "version",
        "webhook",
    )

    def __init__(
        self,
        config: PolicyConfig,
        *,
        source: Path | None = None,
        audit_log: AuditLog | None = None,
        quota_store: QuotaStore | None = None,
        approvals: ApprovalQueue | None = None,
    ) -> None:
        self.config = config
        self.source = source
        #: Where calls needing approval wait for the people ``[approvals]`` names (None:
        #: the caller's own approver answers).
        if config.approvals is not None and approvals is None:
            approvals = open_queue(config.approvals, source or Path("<string>"))
        self.approvals = approvals
        #: Where new approval requests are told (``[approvals] webhook``), or None.
        self.webhook = (
            open_webhook(config.approvals, source or Path("<string>"))
            if config.approvals is not None
            else None
        )
        #: This policy's version: a digest of what it says (an approval records it).
        self.version = "sha256:" + hashlib.sha256(config.model_dump_json().encode()).hexdigest()
        self.audit_log = audit_log
        self._allow = AllowList.of(config.allow)
        self._deny = _globs(config.deny)
        self._approve = _globs(config.approve)
        self._trusted_mcp = _globs(config.trusted_mcp_servers)
        self._effects = [(_globs([glob]), str(effect)) for glob, effect in config.effects.items()]
        self._cache: dict[tuple[tuple[str, ...], tuple[str, ...], str], _Compiled] = {}
        #: id(tool) -> (the tool, its compiled rules): a call's four look-ups cost one.
        self._by_tool: dict[int, tuple[Tool[Any, Any], _Compiled]] = {}
        #: (the call, its redacted arguments, their fingerprint) of the last call audited:
        #: its decision and result records say the same arguments, worked out once.
        self._last_arguments = None
        self._quotas = tuple(
            (q, _globs(q.tools), _whom(q.subjects, q.groups)) for q in config.quotas
        )
        #: The clock quotas count by in memory (monotonic seconds); tests move it.
        self.clock: Callable[[], float] = time.monotonic
        #: Where quotas are counted: this process's memory unless ``[quota_store]`` says.
        self.quota_store: QuotaStore = quota_store or MemoryStore(lambda: self.clock())
        #: id of the model's ToolCall -> (it, its lease, the quotas it took, when): the
        #: calls this policy counted whose results have not come back.
        self._inflight: dict[int, tuple[ToolCall, str, tuple[Want, ...], float]] = {}
        self._inflight_lock = threading.Lock()
        self._rules = tuple(
            _Rule(
                _globs(r.subjects),
                _globs(r.groups),
                AllowList.of(r.allow),
                _globs(r.deny),
                _globs(r.approve),
            )
            for r in config.rules
        )

    def __repr__(self) -> str:
        src = str(self.source) if self.source is not None else "<config>"
        return f"<Policy from {src!r}>"

    # -- building ---------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        """Load a policy file; raises PolicyFileError naming the file and the key."""
        p = Path(path).expanduser()
        return cls._build(read_policy_file(p), p)

    @classmethod
    def from_text(cls, text: str, *, source: str | Path = "<string>") -> Policy:
        """Parse policy TOML (a relative audit path is relative to the current directory)."""
        return cls._build(parse_policy_text(text, source), Path(source))

    @classmethod
    def _build(cls, config: PolicyConfig, source: Path) -> Policy:
        audit = None
        if config.audit is not None:
            log_path = Path(config.audit.path).expanduser()
            if not log_path.is_absolute():
                base = source.parent if source.name != "<string>" else Path.cwd()
                log_path = base / log_path
            audit = AuditLog(log_path)
            try:
                audit.check()
            except OSError as exc:
                raise PolicyFileError(
                    source,
                    [("audit.path", f"cannot append to '{log_path}': {exc.strerror or exc}")],
                ) from None
        store = None
        if config.quota_store is not None:
            store = _store(config.quota_store, source)
        elif config.quotas and source.name != "<string>":
            # A policy file's quotas hold across the processes that use it (three runs of
            # `toolwire call` each passing a quota of two was the bug).
            store = _sqlite_store(quota_db_path(source), source)
        queue = open_queue(config.approvals, source) if config.approvals is not None else None
        return cls(config, source=source, audit_log=audit, quota_store=store, approvals=queue)

    # -- per tool -----------------------------------------------------------------------

    def _compiled(self, tool: Tool[Any, Any]) -> _Compiled:
        seen = self._by_tool.get(id(tool))
        if seen is not None and seen[0] is tool:  # a tool is immutable: the same answer
            return seen[1]
        hit = self._compile_for(tool)
        if len(self._by_tool) >= _MAX_TOOLS:
            self._by_tool.clear()  # bounded: tools made on the fly start it over
        self._by_tool[id(tool)] = (tool, hit)
        return hit

    def _compile_for(self, tool: Tool[Any, Any]) -> _Compiled:
        names = _names(tool)
        mounted = _mounted(tool)
        effect = self._effect(names, self._claimed(tool))
        key = (names, mounted, effect)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compile(tool.name, names, effect, mounted)
            self._cache[key] = hit
        return hit

    def _claimed(self, tool: Tool[Any, Any]) -> str:
        """The effect the tool claims, as far as this policy believes it: an MCP server's
        tool is destructive unless the server is in ``trusted_mcp_servers``."""
        source = tool.metadata.source
        if source == UNKNOWN_EFFECT_SOURCE:
            return str(self.config.unknown_effect)
        if source is not None and source.startswith("mcp:"):
            server = source[len("mcp:") :]
            if not _matches(self._trusted_mcp, (server,)):
                return "destructive"
        return tool.metadata.effect.value

    def _effect(self, names: tuple[str, ...], claimed: str) -> str:
        """The tool's effect for this policy: the first ``effects`` glob that matches, else
        what the tool claims."""
        for rx, effect in self._effects:
            if _matches(rx, names):
                return effect
        return claimed

    def _compile(
        self, wire: str, names: tuple[str, ...], effect: str, mounted: MountedNames
    ) -> _Compiled:
        cfg = self.config
        hidden = None
        if _matches(self._deny, names):
            hidden = f"tool `{wire}` is denied by the organisation policy"
        elif not self._allow.admits(mounted):
            # Allowed only by the name it is mounted and called by: a tool cannot pass an
            # allow-list with the name it chose for itself (deny matches every name).
            hidden = f"tool `{wire}` is not in the organisation policy's allow list"
        elif effect in cfg.deny_effects:
            hidden = f"tool `{wire}` is {effect}, and the organisation policy denies {effect} tools"
        approval = None
        if _matches(self._approve, names):
            approval = f"{APPROVAL_REASON}: the organisation policy requires approval for `{wire}`"
        elif effect in cfg.approve_effects:
            approval = (
                f"{APPROVAL_REASON}: `{wire}` is {effect}, and the organisation policy "
                f"requires approval for {effect} tools"
            )
        constraints = tuple(
            (
                rule,
                _globs(rule.arguments) if rule.arguments is not None else None,
                tuple(re.compile(p) for p in rule.deny_patterns),
                _whom(rule.subjects, rule.groups),
            )
            for rule in cfg.constraints
            if _matches(_globs(rule.tools), names)
        )
        redact = [r for r in cfg.redact if _matches(_globs(r.tools), names)]
        return _Compiled(
            hidden,
            approval,
            constraints,
            _globs((a for r in redact for a in r.arguments), fold=True),
            tuple(
                (re.compile(p), _whom(r.subjects, r.groups))
                for r in redact
                for p in r.result_patterns
            ),
        )

    def hidden_reason(self, tool: Tool[Any, Any], principal: Principal | None = None) -> str | None:
        """Why the policy hides ``tool`` from ``principal`` (denied, not allowed, denied
        effect, no principal where one is required), or None."""
        return self._for(tool, principal)[0]

    def is_visible(self, tool: Tool[Any, Any], principal: Principal | None = None) -> bool:
        return self.hidden_reason(tool, principal) is None

    def principal_refusal(self, principal: Principal | None) -> str | None:
        """Why no call may be made for ``principal`` (none where one is required, a method
        the policy does not accept), or None."""
        cfg = self.config
        if principal is None:
            if cfg.require_principal:
                return "the organisation policy requires calls to be made for a principal"
            return None
        methods = cfg.principal_methods
        if methods is not None and principal.method not in methods:
            return (
                f"the organisation policy does not accept principals established by "
                f"`{principal.method}` (it accepts: {', '.join(methods) or 'none'})"
            )
        return None

    def _for(
        self, tool: Tool[Any, Any], principal: Principal | None
    ) -> tuple[str | None, str | None, str]:
        """(why hidden, why approval is needed, which rule decided) for ``tool`` and
        ``principal``: the most specific rule that names the tool, else the top level."""
        refusal = self.principal_refusal(principal)
        if refusal is not None:
            return refusal, None, "principal"
        compiled = self._compiled(tool)
        if principal is None or not self._rules:
            return compiled.hidden, compiled.needs_approval, "top level"
        names = _names(tool)
        mounted = _mounted(tool)
        who = f"`{principal.subject}`"
        subject = (principal.subject,)
        groups = tuple(sorted(principal.groups))
        for level, label in ((0, "subject"), (1, "group")):
            deny = approve = allow = None
            for i, rule in enumerate(self._rules):
                aimed = rule.subjects if level == 0 else rule.groups
                if not _matches(aimed, subject if level == 0 else groups):
                    continue
                where = f"rules[{i}] ({label})"
                if deny is None and _matches(rule.deny, names):
                    deny = where
                if approve is None and _matches(rule.approve, names):
                    approve = where
                if allow is None and rule.allow.admits(mounted):
                    allow = where
            if deny is not None:
                return (
                    f"tool `{tool.name}` is denied to {who} by the organisation policy",
                    None,
                    deny,
                )
            if approve is not None:
                return (
                    None,
                    f"{APPROVAL_REASON}: the organisation policy requires approval for "
                    f"`{tool.name}` when called for {who}",
                    approve,
                )
            if allow is not None:
                return None, compiled.needs_approval, allow
        return compiled.hidden, compiled.needs_approval, "top level"

    def lint(self, tools: Iterable[Tool[Any, Any]]) -> list[dict[str, Any]]:
        """The rules that name nothing in ``tools`` (the assembled catalogue): each as
        ``{"rule", "pattern", "near"}``, ``near`` the closest real names. A rule that
        matches nothing is a rule that stopped working (a tool renamed by a release, a
        server renamed in a config): its deny no longer denies."""
        names: set[str] = set()
        servers: set[str] = set()
        for tool in tools:
            names.update(_names(tool))
            source = tool.metadata.source
            if source is not None and source.startswith("mcp:"):
                servers.add(source[len("mcp:") :])
        found = []
        for where, pattern in self._named_globs():
            if not _matches(_globs([pattern]), names):
                near = difflib.get_close_matches(pattern, sorted(names), n=3, cutoff=0.6)
                found.append({"rule": where, "pattern": pattern, "near": near})
        for i, pattern in enumerate(self.config.trusted_mcp_servers):
            if not _matches(_globs([pattern]), servers):
                near = difflib.get_close_matches(pattern, sorted(servers), n=3, cutoff=0.6)
                found.append(
                    {"rule": f"trusted_mcp_servers[{i}]", "pattern": pattern, "near": near}
                )
        return found

    def lint_text(self, tools: Iterable[Tool[Any, Any]]) -> list[str]:
        """:meth:`lint` as lines: ``deny = 'git_git_reset' matches nothing (did you mean
        git_reset?)``."""
        return [finding_text(f) for f in self.lint(tools)]

    def _named_globs(self) -> Iterator[tuple[str, str]]:
        """(where in the file, a tool-name glob) for every rule that names tools."""
        config = self.config
        tables: list[tuple[str, list[str]]] = [
            ("allow", config.allow),
            ("deny", config.deny),
            ("approve", config.approve),
        ]
        for i, rule in enumerate(config.rules):
            tables += [
                (f"rules[{i}].allow", rule.allow),
                (f"rules[{i}].deny", rule.deny),
                (f"rules[{i}].approve", rule.approve),
            ]
        tables += [(f"quotas[{i}].tools", q.tools) for i, q in enumerate(config.quotas)]
        tables += [(f"constraints[{i}].tools", c.tools) for i, c in enumerate(config.constraints)]
        tables += [(f"redact[{i}].tools", r.tools) for i, r in enumerate(config.redact)]
        for where, patterns in tables:
            for i, pattern in enumerate(patterns):
                yield f"{where}[{i}]", pattern
        for pattern in config.effects:
            yield f"effects[{pattern!r}]", pattern

    def explain(self, tool: Tool[Any, Any], principal: Principal | None) -> dict[str, Any]:
        """What the policy decides for ``tool`` called for ``principal``, and which rule
        made the decision (``toolwire-policy explain``)."""
        hidden, approval, rule = self._for(tool, principal)
        decision = "deny" if hidden is not None else "approve" if approval else "allow"
        return {
            "tool": tool.name,
            "principal": principal.to_dict() if principal is not None else None,
            "decision": decision,
            "reason": hidden or approval or "",
            "rule": rule,
            "effect": self._effect(_names(tool), self._claimed(tool)),
        }

    # -- per call -----------------------------------------------------------------------

    def constraint_violation(
        self,
        call: TypedCall[Any],
        arguments: Mapping[str, Any],
        principal: Principal | None = None,
    ) -> str | None:
        """The first argument constraint a call for ``principal`` breaks, as a reason; None
        if it keeps them."""
        for rule, names, patterns, whom in self._compiled(call.tool).constraints:
            if not _aimed_at(whom, principal):
                continue
            for where, text in _strings(arguments, names):
                if rule.max_length is not None and len(text) > rule.max_length:
                    return (
                        f"argument `{where}` is {len(text)} characters long; the organisation "
                        f"policy allows at most {rule.max_length} for `{call.name}`"
                    )
                for rx in patterns:
                    if rx.search(text):
                        return (
                            f"argument `{where}` matches a pattern the organisation policy "
                            f"denies for `{call.name}`: {rx.pattern!r}"
                        )
        return None

    def check(self, call: TypedCall[Any], context: HookContext) -> Verdict | Awaitable[Verdict]:
        """The verdict for one call (awaitable when an async approver is asked, or the
        quotas are counted in a shared store)."""
        compiled = self._compiled(call.tool)
        hidden, needs_approval = compiled.hidden, compiled.needs_approval
        if self._rules or context.principal is not None or self.config.require_principal:
            hidden, needs_approval, _ = self._for(call.tool, context.principal)
        if hidden is not None:
            return Verdict(False, hidden)
        if compiled.constraints:
            broken = self.constraint_violation(call, revealed_arguments(call), context.principal)
            if broken is not None:
                return Verdict(False, broken)
        wants = self._wants(call.tool, context.principal) if self._quotas else ()
        if not wants or self._counted(call):
            if needs_approval is None:
                return ALLOW
            if self.observing:  # would ask: nobody is asked, no approval is spent
                return Verdict(False, needs_approval)
            return self._ask(call, context, needs_approval)
        if not isinstance(self.quota_store, MemoryStore) and _in_event_loop():
            # A store across the network is asked off the event loop, with its deadline.
            return Deferred(lambda: self._take_then_approve(call, context, needs_approval, wants))
        # In memory, or from sync code with no loop to hold up: asked here (the store's
        # requests have their deadline).
        over = self._take(call, wants)
        if over is not None:
            return over
        return self._approval(call, context, needs_approval)

    async def _take_then_approve(
        self,
        call: TypedCall[Any],
        context: HookContext,
        needs_approval: str | None,
        wants: tuple[Want, ...],
    ) -> Verdict:
        over = await asyncio.to_thread(self._take, call, wants)
        if over is not None:
            return over
        verdict = self._approval(call, context, needs_approval)
        return await verdict if inspect.isawaitable(verdict) else verdict

    def _approval(
        self, call: TypedCall[Any], context: HookContext, needs_approval: str | None
    ) -> Verdict | Awaitable[Verdict]:
        """Approval after the quotas were taken: a call the approver refuses gives them
        back (it never ran)."""
        if needs_approval is None:
            return ALLOW
        if self.observing:  # would ask: the call runs, and keeps what it counted
            return Verdict(False, needs_approval)
        verdict = self._ask(call, context, needs_approval)
        if inspect.isawaitable(verdict):
            pending = verdict
            return Deferred(lambda: self._settle_later(call, pending))
        return self._settle(call, verdict)

    def _ask(
        self, call: TypedCall[Any], context: HookContext, reason: str
    ) -> Verdict | Awaitable[Verdict]:
        """Who approves: the queue's named approvers (``[approvals]``), else the caller's."""
        if self.approvals is not None:
            return queued_approval(self, self.approvals, call, context, reason)
        return ask_approval(call, context, reason)

    async def _settle_later(self, call: TypedCall[Any], pending: Awaitable[Verdict]) -> Verdict:
        return self._settle(call, await pending)

    def _settle(self, call: TypedCall[Any], verdict: Verdict) -> Verdict:
        if not verdict.allowed:
            self.finish(call, refund=True)
        return verdict

    def _wants(self, tool: Tool[Any, Any], principal: Principal | None) -> tuple[Want, ...]:
        """The quotas a call of ``tool`` for ``principal`` must fit in."""
        names = _names(tool)
        subject = principal.subject if principal is not None else ""
        # Counted per subject *and* how it was established: an OAuth `alice` and a
        # tokens-file `alice` are two principals, and share no count.
        method = principal.method if principal is not None else ""
        wants = []
        for i, (rule, tools, aimed) in enumerate(self._quotas):
            if not _matches(tools, names) or not _aimed_at(aimed, principal):
                continue
            whom = "all callers" if rule.shared else f"`{subject or 'anonymous'}`"
            key = json.dumps([i, tool.name, "*" if rule.shared else [method, subject]])
            wants.append(
                Want(key, rule.calls, rule.seconds, rule.concurrent, rule.lease, tool.name, whom)
            )
        return tuple(wants)

    def _counted(self, call: TypedCall[Any]) -> bool:
        """Whether this call was counted already: the same model call decided again after
        an approver rewrote its input (the executor asks the policies about the new input).
        Known by the identity of the model's ToolCall, which the rewritten call keeps."""
        if not call.edited:
            return False
        with self._inflight_lock:
            held = self._inflight.get(id(call.call))
        return held is not None and held[0] is call.call

    def _take(self, call: TypedCall[Any], wants: tuple[Want, ...]) -> Verdict | None:
        """Take ``wants`` for ``call``: None when taken, else the refusal."""
        lease = secrets.token_hex(12)
        try:
            over = self.quota_store.take(wants, lease)
        except StoreError as exc:
            logger.error("toolwire-policy cannot count quotas: %s", exc)
            return Verdict(
                False,
                "the organisation policy cannot count its quotas now, so the call was not "
                "run; try again later",
            )
        if over is not None:
            return Verdict(False, over)
        now = time.monotonic()
        with self._inflight_lock:
            if len(self._inflight) >= _MAX_WINDOWS:
                # Calls that never came back (refused after this policy let them
                # through): their slots' leases have run out.
                longest = max((q.lease for q, *_ in self._quotas), default=0)
                for key in [k for k, v in self._inflight.items() if v[3] <= now - longest]:
                    del self._inflight[key]
                # Still full (many calls refused after this policy let them through, well
                # within their lease): the oldest are forgotten. Their slots stay taken
                # in the store until their leases end; nothing is freed early.
                for key in list(self._inflight)[: len(self._inflight) - _MAX_WINDOWS + 1]:
                    del self._inflight[key]
            self._inflight[id(call.call)] = (call.call, lease, wants, now)
        return None

    def take_quota(self, tool: Tool[Any, Any], principal: Principal | None) -> str | None:
        """Count one call of ``tool`` for ``principal`` against every quota that applies
        (a concurrency slot is held until its lease ends); the refusal (with when to try
        again) when one is spent, else None. A refused call is not counted."""
        wants = self._wants(tool, principal)
        if not wants:
            return None
        try:
            return self.quota_store.take(wants, secrets.token_hex(12))
        except StoreError as exc:
            return f"the organisation policy cannot count its quotas now ({exc})"

    def finish(self, call: TypedCall[Any], *, refund: bool = False) -> None:
        """``call`` ended (its result came back): free its concurrency slots; ``refund``:
        it never ran, so its counts are given back too."""
        self._finish(call.call, refund=refund)

    def _finish(self, call: ToolCall, *, refund: bool = False) -> bool:
        """Free what ``call`` holds; True when this policy held anything for it."""
        with self._inflight_lock:
            held = self._inflight.pop(id(call), None)
        if held is None or held[0] is not call:
            return False
        _, lease, wants, _ = held
        if not refund and all(w.concurrent is None for w in wants):
            return True
        try:
            self.quota_store.finish(wants, lease, refund=refund)
        except StoreError as exc:  # the lease frees the slot in the end
            logger.warning("toolwire-policy cannot free a quota slot: %s", exc)
        return True

    def redact_arguments(self, tool: Tool[Any, Any], arguments: Any) -> Any:
        """The arguments with every value under a redacted name replaced by ``[REDACTED]``."""
        rx = self._compiled(tool).redact_arguments
        return arguments if rx is None else _redact(arguments, rx)

    def redact_content(
        self, tool: Tool[Any, Any], content: str, principal: Principal | None = None
    ) -> tuple[str, int]:
        """Result content of a call for ``principal`` with the policy's result patterns
        replaced; and how many were."""
        total = 0
        for rx, whom in self._compiled(tool).redact_results:
            if not _aimed_at(whom, principal):
                continue
            content, n = rx.subn(REDACTED, content)
            total += n
        return content, total

    def redact_structured(
        self, tool: Tool[Any, Any], value: Any, principal: Principal | None = None
    ) -> tuple[Any, int]:
        """A result's structured value for ``principal`` with the result patterns replaced
        in every string it holds (keys too); and how many were. The same patterns as the
        text's: a gateway's client never gets a value the model would have seen redacted."""
        total = 0
        for rx, whom in self._compiled(tool).redact_results:
            if not _aimed_at(whom, principal):
                continue
            value, n = _redact_strings(value, rx)
            total += n
        return value, total


def quota_db_path(source: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The default quota store of the policy file ``source``: a file of its own (the
    digest of its resolved path) under ``$XDG_DATA_HOME/toolwire/quotas``."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    digest = hashlib.sha256(str(source.expanduser().resolve()).encode("utf-8")).hexdigest()
    return Path(home) / "toolwire" / "quotas" / f"{digest[:32]}.sqlite"


def _store(config: QuotaStoreConfig, source: Path) -> QuotaStore | None:
    """The store ``[quota_store]`` names (None: this process's memory, by the policy's
    own clock)."""
    scheme, _, rest = config.url.partition("://")
    if scheme == "memory":
        return None
    if scheme == "sqlite":
        path = Path(rest).expanduser() if rest else quota_db_path(source)
        if not path.is_absolute():
            path = source.parent / path
        return _sqlite_store(path, source, config.timeout)
    return _redis_store(config, source)


def _sqlite_store(path: Path, source: Path, timeout: float = 2.0) -> QuotaStore:
    try:
        return SqliteStore(path, timeout=timeout)
    except StoreError as exc:
        raise PolicyFileError(
            source,
            [
                (
                    "quota_store",
                    f"{exc} (quotas are counted there so that every process using this "
                    'policy counts together; `[quota_store] url = "memory://"` counts in '
                    "each process instead)",
                )
            ],
        ) from None


def _redis_store(config: QuotaStoreConfig, source: Path) -> QuotaStore:
    """The ``[quota_store]`` the file names (its password from the environment)."""
    password = None
    if config.password_env is not None:
        password = env_secret(config.password_env, source, "quota_store.password_env")
    try:
        store = RedisStore(
            config.url,
            password=password,
            prefix=config.prefix,
            timeout=config.timeout,
            holder_timeout=config.holder_timeout,
        )
    except StoreError as exc:
        raise PolicyFileError(source, [("quota_store", str(exc))]) from None
    lacking = store.persistence()
    if lacking is not None:
        if config.require_persistence:
            raise PolicyFileError(
                source,
                [
                    (
                        "quota_store.require_persistence",
                        f"the quota store cannot be relied on across its restarts: {lacking}",
                    )
                ],
            )
        logger.warning(
            "toolwire-policy: the quota store %s: %s; a restart of it forgets every count "
            "(rate quotas start again). Turn on RDB snapshots or the append-only file, or "
            "set require_persistence = true to refuse such a store",
            store,
            lacking,
        )
    return store


def _strings(
    arguments: Mapping[str, Any], names: re.Pattern[str] | None
) -> Iterator[tuple[str, str]]:
    for name, value in arguments.items():
        if names is None or names.match(str(name)):
            yield from _walk(value, str(name))


def _walk(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{where}[{i}]")


def _redact_strings(value: Any, rx: re.Pattern[str]) -> tuple[Any, int]:
    """``value`` (JSON values) with ``rx`` replaced in every string, keys included."""
    if isinstance(value, str):
        return rx.subn(REDACTED, value)
    total = 0
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str):
                k, n = rx.subn(REDACTED, k)
                total += n
            out[k], n = _redact_strings(v, rx)
            total += n
        return out, total
    if isinstance(value, list):
        items = []
        for v in value:
            item, n = _redact_strings(v, rx)
            items.append(item)
            total += n
        return items, total
    return value, 0


def _redact(value: Any, rx: re.Pattern[str]) -> Any:
    if isinstance(value, dict):
        return {
            k: REDACTED if rx.match(str(k).lower()) else _redact(v, rx) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v, rx) for v in value]
    return value


def finding_text(finding: Mapping[str, Any]) -> str:
    """One finding of :meth:`Policy.lint` as a line (the rule, its pattern, the nearest
    real names)."""
    near = f" (did you mean {', '.join(finding['near'])}?)" if finding["near"] else ""
    return f"{finding['rule']} = {finding['pattern']!r} matches nothing{near}"
