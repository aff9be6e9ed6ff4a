"""Tool metadata: what a tool does (effect), what it needs (capabilities), how it may be
retried (RetryHint), and the ToolMetadata that carries them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from types import MappingProxyType
from typing import (
    Any,
    Literal,
    Union,
)

import attrs

from toolwire._backoff import backoff
from toolwire._errors import ToolDefinitionError
from toolwire._exports import publish

__all__ = ["Capability", "RetryHint", "ToolEffect", "ToolMetadata", "metadata_from_mcp_hints"]


class ToolEffect(str, Enum):
    """What running a tool does to the world. The values are the wire strings."""

    READ_ONLY = "read_only"
    MUTATING = "mutating"
    DESTRUCTIVE = "destructive"

    @property
    def rank(self) -> int:
        return _EFFECT_RANK[self]


_EFFECT_RANK = {ToolEffect.READ_ONLY: 0, ToolEffect.MUTATING: 1, ToolEffect.DESTRUCTIVE: 2}


class Capability(str, Enum):
    """What a tool needs from its sandbox; the executor checks these against an allow-list."""

    PURE_COMPUTATION = "pure_computation"
    NETWORK = "network"
    FILESYSTEM = "filesystem"
    SUBPROCESS = "subprocess"
    ENVIRONMENT = "environment"
    CRYPTOGRAPHY = "cryptography"


EffectLike = Union[ToolEffect, Literal["read_only", "mutating", "destructive"]]
"""A ToolEffect or its wire string."""
CapabilityLike = Union[
    Capability,
    Literal[
        "pure_computation", "network", "filesystem", "subprocess", "environment", "cryptography"
    ],
]
"""A Capability or its wire string."""


def _to_effect(value: EffectLike) -> ToolEffect:
    if isinstance(value, ToolEffect):
        return value
    try:
        return ToolEffect(value)
    except ValueError:
        allowed = ", ".join(repr(e.value) for e in ToolEffect)
        raise ToolDefinitionError(
            f"effect must be one of {allowed}, got {value!r} ({type(value).__name__})"
        ) from None


def _to_capabilities(value: CapabilityLike | Iterable[CapabilityLike]) -> frozenset[Capability]:
    if isinstance(value, (str, Capability)):
        value = (value,)
    try:
        items = list(value)
    except TypeError:
        raise ToolDefinitionError(
            f"capabilities must be an iterable of Capability, got {type(value).__name__}"
        ) from None
    out = set()
    for item in items:
        try:
            out.add(item if isinstance(item, Capability) else Capability(item))
        except ValueError:
            allowed = ", ".join(repr(c.value) for c in Capability)
            raise ToolDefinitionError(
                f"unknown capability {item!r}; expected one of {allowed}"
            ) from None
    return frozenset(out)


def _positive_or_none(name: str, *, allow_zero: bool = False) -> Callable[[Any, Any, Any], None]:
    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolDefinitionError(
                f"{name} must be a number of seconds, got {value!r} ({type(value).__name__})"
            )
        if value < 0 or (value == 0 and not allow_zero) or value != value:
            bound = ">= 0" if allow_zero else "> 0"
            raise ToolDefinitionError(f"{name} must be {bound} seconds, got {value!r}")

    return check


@attrs.frozen
class RetryHint:
    """Retry advice for an idempotent tool.

    ``max_attempts`` counts every attempt including the first (>= 1);
    ``initial_backoff`` is the delay before the first retry, doubled each time
    up to ``max_backoff``, less up to ``jitter`` (a fraction) of it: the formula of
    :mod:`toolwire._backoff`, shared with the HTTP retry policy.
    """

    max_attempts: int
    initial_backoff: float = attrs.field(
        default=0.2, validator=_positive_or_none("RetryHint.initial_backoff", allow_zero=True)
    )
    max_backoff: float = attrs.field(
        default=30.0, validator=_positive_or_none("RetryHint.max_backoff", allow_zero=True)
    )
    jitter: float = 0.3

    def __attrs_post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise ToolDefinitionError(
                f"RetryHint.max_attempts must be an int >= 1, got {self.max_attempts!r} "
                f"({type(self.max_attempts).__name__})"
            )
        if self.max_attempts < 1:
            raise ToolDefinitionError(
                f"RetryHint.max_attempts must be >= 1 (it counts the first attempt), "
                f"got {self.max_attempts}"
            )
        if not 0 <= self.jitter <= 1:
            raise ToolDefinitionError(f"RetryHint.jitter must be in [0, 1], got {self.jitter!r}")

    @classmethod
    def idempotent_transport(cls) -> RetryHint:
        """Three attempts, 200 ms initial backoff: for idempotent network calls."""
        return cls(max_attempts=3, initial_backoff=0.2)

    def delay(self, retry: int, *, rand: float = 0.0, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first retry).

        ``rand`` in [0, 1) scales the jitter (subtracted, so the delay never exceeds
        ``max_backoff``); a Retry-After value replaces the computed delay, capped at
        ``max_backoff``.
        """
        if retry_after is not None and retry_after >= 0:
            return float(min(retry_after, self.max_backoff))
        return backoff(
            retry,
            initial=self.initial_backoff,
            maximum=self.max_backoff,
            jitter=self.jitter,
            fraction=rand,
        )


def _retry_implies_idempotent(self: ToolMetadata) -> bool:
    return self.retry_hint is not None


def _to_backend_options(value: Any) -> Mapping[str, Mapping[str, Any]]:
    if not isinstance(value, Mapping):
        raise ToolDefinitionError(
            f"backend_options must map a backend's name to its options "
            f'({{"ray": {{"num_cpus": 2}}}}), got {type(value).__name__}'
        )
    out: dict[str, Mapping[str, Any]] = {}
    for name, options in value.items():
        if not isinstance(name, str) or not isinstance(options, Mapping):
            raise ToolDefinitionError(
                f"backend_options must map a backend's name to a mapping of options, got "
                f"{name!r}: {type(options).__name__}"
            )
        out[name] = MappingProxyType(dict(options))
    return MappingProxyType(out)


@attrs.frozen
class ToolMetadata:
    """What a tool is like, beyond its schema: effect, retry advice, sandbox needs, timeout,
    and where its body may run (``local``, ``backend_options``).

    Setting ``retry_hint`` makes the tool idempotent; saying otherwise is an error.
    """

    effect: ToolEffect = attrs.field(default=ToolEffect.READ_ONLY, converter=_to_effect)
    retry_hint: RetryHint | None = None
    idempotent: bool = attrs.field(
        default=attrs.Factory(_retry_implies_idempotent, takes_self=True)
    )
    typical_duration: float | None = attrs.field(
        default=None, validator=_positive_or_none("typical_duration", allow_zero=True)
    )
    version: str | None = None
    capabilities: frozenset[Capability] = attrs.field(
        default=frozenset({Capability.PURE_COMPUTATION}), converter=_to_capabilities
    )
    timeout: float | None = attrs.field(default=30.0, validator=_positive_or_none("timeout"))
    #: The (async) tool ends soon after it is cancelled: it never catches the cancellation
    #: to go on. The executor then holds it to its timeout inline, without the task it
    #: otherwise runs an async tool in, to answer one that swallows its cancellation at
    #: the timeout all the same (that task costs a call about 10 µs). toolwire's MCP
    #: tools say so.
    honours_cancellation: bool = False
    blocking: bool = False
    run_alone: bool = False
    #: Run in the executor's process even under a remote backend (a cheap tool).
    local: bool = False
    #: Options for executor backends, by backend name: ``{"ray": {"num_cpus": 2}}``.
    backend_options: Mapping[str, Mapping[str, Any]] = attrs.field(
        factory=dict, converter=_to_backend_options, hash=False
    )
    #: Where the tool comes from, as the code that made it names it (not as the tool
    #: says): ``"mcp:git"`` for a tool of the MCP server configured as ``git``. Policies
    #: match ``SOURCE/NAME`` (``mcp:git/*``) and decide how far to trust its claims.
    source: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.retry_hint is not None and not isinstance(self.retry_hint, RetryHint):
            raise ToolDefinitionError(
                f"retry_hint must be a RetryHint, got {type(self.retry_hint).__name__}"
            )
        if self.retry_hint is not None and self.idempotent is False:
            raise ToolDefinitionError(
                "a tool with a retry_hint is idempotent by definition; drop idempotent=False "
                "or the retry hint"
            )
        for flag in ("idempotent", "honours_cancellation"):
            if not isinstance(getattr(self, flag), bool):
                raise ToolDefinitionError(
                    f"{flag} must be a bool, got {type(getattr(self, flag)).__name__}"
                )
        if self.source is not None and (not isinstance(self.source, str) or not self.source):
            raise ToolDefinitionError(f"source must be a non-empty string, got {self.source!r}")
        if self.version is not None and (not isinstance(self.version, str) or not self.version):
            raise ToolDefinitionError(f"version must be a non-empty string, got {self.version!r}")

    @property
    def max_attempts(self) -> int:
        return self.retry_hint.max_attempts if self.retry_hint else 1


def metadata_from_mcp_hints(
    *,
    read_only: bool | None,
    destructive: bool | None,
    idempotent: bool | None,
    open_world: bool | None,
    source: str | None = None,
    timeout: float | None = 30.0,
    local: bool = False,
) -> ToolMetadata:
    """ToolMetadata from an MCP tool's annotation hints, with the spec's defaults for what
    is missing (None): ``readOnlyHint`` false, ``destructiveHint`` true, ``idempotentHint``
    false, ``openWorldHint`` true. A tool that says nothing is a destructive,
    non-idempotent tool that reaches the network, so approval gates it. The one mapping
    every path that reads an MCP tool's hints uses (toolwire-mcp's client, the bridges).

    Hints are claims of the server: ``source`` (``mcp:SERVER``) lets an organisation
    policy believe them only of the servers it trusts.
    """

    def hint(value: bool | None, default: bool) -> bool:
        return default if value is None else bool(value)

    is_read_only = hint(read_only, False)
    if is_read_only:
        effect = ToolEffect.READ_ONLY
    elif hint(destructive, True):
        effect = ToolEffect.DESTRUCTIVE
    else:
        effect = ToolEffect.MUTATING
    return ToolMetadata(
        effect=effect,
        idempotent=is_read_only or hint(idempotent, False),
        capabilities=frozenset({Capability.NETWORK}) if hint(open_world, True) else frozenset(),
        timeout=timeout,
        source=source,
        local=local,
    )


publish(globals())
