"""Audit trails a policy offers to be read: the records it wrote and whether their chain
is whole, for the approval console (and anything else that shows an organisation its log).

A policy plugin registers one through the ``toolwire_audit_trails`` hook; whoever shows
it asks :meth:`PluginHost.audit_trails`. The trail decides who may read it
(:meth:`AuditTrail.readable_by`): a reader sees nothing the trail did not hand it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from toolwire._exports import publish
from toolwire._hooks import Principal

__all__ = ["AuditTrail", "ChainCheck"]


@attrs.frozen(kw_only=True)
class ChainCheck:
    """What verifying a trail found: ``whole`` when nothing in it was edited, removed or
    reordered; ``records`` checked; ``head`` (the last record's digest, to keep elsewhere
    as an anchor); ``problem``, the first thing that fails it, when not whole."""

    whole: bool
    records: int
    head: str
    problem: str | None = None


@runtime_checkable
class AuditTrail(Protocol):
    """An audit log a policy offers to be read (``toolwire_audit_trails``)."""

    @property
    def name(self) -> str:
        """What the trail is, for a reader: the plugin and where the log is kept."""
        ...

    def readable_by(self, principal: Principal) -> bool:
        """Whether ``principal`` may read this trail (its records show every call's
        arguments as the policy redacts them, and who made it)."""
        ...

    def records(
        self,
        *,
        limit: int = 200,
        subject: str | None = None,
        tool: str | None = None,
        decision: str | None = None,
    ) -> Sequence[Mapping[str, Any]]:
        """The newest records, newest first, at most ``limit``; only those of the
        principal ``subject``, of a tool matching the glob ``tool``, or with that
        ``decision`` when given. Each record is a JSON object with at least ``time``,
        ``event``, ``tool``, ``decision``, ``reason`` and ``principal``."""
        ...

    def verify(self) -> ChainCheck:
        """Check the trail's chain from its first record."""
        ...


publish(globals())
