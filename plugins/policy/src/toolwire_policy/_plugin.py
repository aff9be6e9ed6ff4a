"""PolicyPlugin: the hook implementations for a policy, failing closed."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from toolwire import (
    Hidden,
    HookContext,
    PolicyError,
    Reject,
    Tool,
    ToolDecision,
    ToolResult,
    TypedCall,
)
from toolwire.adapters import AuditEvent
from toolwire.hookspecs import hookimpl
from toolwire_policy._config import (
    DISTRIBUTION,
    PLUGIN_NAME,
    PROJECT_FILE,
    find_policy_file,
    policy_paths,
    project_trust,
)
from toolwire_policy._policy import Policy

__all__ = ["PolicyPlugin"]

logger = logging.getLogger("toolwire.policy")

_BLOCKED = (
    "the organisation policy (toolwire-policy) failed to load, so no tool may run until it is fixed"
)


class PolicyPlugin:
    """The hooks of an organisation policy, in one of three states.

    - *active*: a :class:`Policy` decides, hides, audits and redacts;
    - *inert*: no policy file was found; every hook returns None (no opinion);
    - *failed*: the policy could not be loaded; every call is rejected and
      every tool hidden (fail closed).

    The entry-point module ``toolwire_policy.plugin`` holds one built from the
    environment; register your own on a host to use a policy from code.
    """

    __slots__ = ("error", "policy", "searched")

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        error: PolicyError | None = None,
        searched: tuple[Path, ...] = (),
    ) -> None:
        if policy is not None and error is not None:
            raise ValueError("a PolicyPlugin has a policy or an error, not both")
        self.policy = policy
        self.error = error
        self.searched = searched

    @classmethod
    def from_file(cls, path: str | Path) -> PolicyPlugin:
        """An active plugin for a policy file; raises PolicyFileError if it is malformed."""
        return cls(Policy.from_file(path))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, cwd: Path | None = None
    ) -> PolicyPlugin:
        """The plugin for ``TOOLWIRE_POLICY`` or the default locations; never raises.

        A load failure is kept in ``error`` (see :meth:`raise_if_failed`).
        """
        env = os.environ if environ is None else environ
        try:
            path = find_policy_file(env, cwd=cwd)
            if path is None:
                searched = tuple(policy_paths(env, cwd=cwd))
                # Logged, not printed: a library application should not print this on every
                # start. `toolwire` (the CLI) shows it as a warning.
                logger.info(
                    "toolwire-policy is installed but found no policy file (looked for %s); "
                    "tool calls are not checked. Set TOOLWIRE_POLICY to a file, or "
                    "TOOLWIRE_POLICY_REQUIRED=1 to block tools without one.",
                    ", ".join(str(p) for p in searched),
                )
                return cls(searched=searched)
            return cls(Policy.from_file(path))
        except PolicyError as exc:
            return cls(error=exc)
        except Exception as exc:  # fail closed on anything unexpected too
            return cls(
                error=PolicyError(
                    f"toolwire-policy failed to load: {type(exc).__name__}: {exc}",
                    plugin=PLUGIN_NAME,
                    distribution=DISTRIBUTION,
                )
            )

    def __repr__(self) -> str:
        return f"<PolicyPlugin {self.state}>"

    @property
    def state(self) -> str:
        """``"active"``, ``"inert"`` or ``"failed"``."""
        if self.error is not None:
            return "failed"
        return "active" if self.policy is not None else "inert"

    @property
    def toolwire_inert(self) -> bool:
        """True when no policy file was found: every hook would answer None, so the host
        leaves this plugin's decision, description and availability hooks out."""
        return self.state == "inert"

    def status(self) -> str:
        """One line for ``toolwire plugins``: the policy file in use, or why there is none."""
        if self.error is not None:
            return f"failed (tool execution blocked): {self.error}"
        if self.policy is not None:
            audit = f", audit log {self.policy.audit_log.path}" if self.policy.audit_log else ""
            if self.policy.observing:
                return f"observing, not enforcing (mode = observe): {self.policy.source}{audit}"
            return f"active: {self.policy.source}{audit}"
        looked = ", ".join(str(p) for p in self.searched) or "the default locations"
        untrusted = ""
        project = self.searched[-1] if self.searched else None
        if project is not None and project.name == PROJECT_FILE:
            try:
                if project_trust(project) == "untrusted":
                    untrusted = (
                        f"; {project} is not trusted, so it is not used "
                        f"(`toolwire-policy trust` to use it)"
                    )
            except PolicyError:  # the trust store itself is bad: the load already said
                pass
        return f"inert: no policy file (looked for {looked}){untrusted}"

    def lint(self, tools: list[Tool[Any, Any]]) -> list[str]:
        """The policy's rules that name nothing in ``tools`` (the assembled catalogue), as
        warnings for ``toolwire plugins``, ``toolwire chat`` and gateway start."""
        if self.policy is None:
            return []
        return [f"{self.policy.source}: {line}" for line in self.policy.lint_text(tools)]

    def raise_if_failed(self) -> None:
        """Raise the load error, if any (the entry-point module does, so the host sees it)."""
        if self.error is not None:
            raise self.error

    # -- hooks --------------------------------------------------------------------------

    @hookimpl(tryfirst=True)
    def toolwire_tool_decision(
        self, call: TypedCall[Any], context: HookContext
    ) -> ToolDecision | Awaitable[ToolDecision | None] | None:
        """Reject calls the policy denies, breaks a constraint of, or that need approval."""
        if self.error is not None:
            return Reject(_BLOCKED)
        if self.policy is None:
            return None
        try:
            return self.policy.decide(call, context)
        except Exception as exc:  # fail closed
            logger.exception("toolwire-policy failed on call %s (%s)", call.id, call.name)
            return Reject(
                f"the organisation policy failed on this call ({type(exc).__name__}), "
                f"so it was not run"
            )

    @hookimpl(tryfirst=True)
    def toolwire_tool_availability(
        self, tool: Tool[Any, Any], context: HookContext
    ) -> Hidden | bool | None:
        """Hide tools the policy denies (every tool, when the policy failed to load)."""
        if self.error is not None:
            return False
        if self.policy is None:
            return None
        if self.policy.observing:
            return None  # shadow mode hides nothing
        try:
            why = self.policy.hidden_reason(tool, context.principal)
        except Exception:  # fail closed
            logger.exception("toolwire-policy failed on the availability of %s", tool.name)
            return False
        # Hidden, saying why: a call the model makes to it anyway is answered with the
        # policy's reason, and audited with it.
        return None if why is None else Hidden(why)

    @hookimpl(trylast=True)
    def toolwire_tool_result(
        self, call: TypedCall[Any], result: ToolResult, context: HookContext
    ) -> ToolResult | Awaitable[ToolResult | None] | None:
        """Audit the result and redact its content by the policy's result patterns."""
        if self.error is not None:
            return result.replace(content=_BLOCKED, is_error=True)
        if self.policy is None:
            return None
        return self.policy.on_result(call, result, context)

    @hookimpl(trylast=True)
    def toolwire_redact_arguments(
        self, tool: Tool[Any, Any], arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """What the audit log redacts, a record kept elsewhere (the CLI's conversation
        log) redacts too; a policy that failed to load lets no argument be kept."""
        if self.error is not None:
            raise self.error
        if self.policy is None:
            return None
        redacted = self.policy.redact_arguments(tool, arguments)
        return redacted if isinstance(redacted, dict) else None

    @hookimpl
    def toolwire_audit(self, event: AuditEvent, context: HookContext) -> None:
        """Write the attempts toolwire answered itself (unknown, not offered, hidden,
        invalid) and a switch that turned policies off, to the audit log."""
        if self.policy is None:
            return
        try:
            self.policy.audit_event(event, context)
        except OSError as exc:
            logger.error("cannot write the audit log %s: %s", self.policy.audit_log, exc)

    @hookimpl
    def toolwire_audit_trails(self, register: Callable[[Any], None]) -> None:
        """Offer the policy's audit log to the people it names as readers (``[audit]
        readers``, else its approvers): the approval console's audit page."""
        if self.policy is None or self.policy.audit_log is None:
            return
        config = self.policy.config
        readers = config.audit.readers if config.audit is not None else None
        if readers is None:
            readers = config.approvals.approvers if config.approvals is not None else []
        from toolwire_policy._trail import AuditLogTrail

        register(AuditLogTrail(self.policy.audit_log.path, readers))
