"""Policy tests: a file of cases (who calls which tool with which arguments, and what the
policy must decide), run against a policy file as CI runs any test.

```toml
[[cases]]
name = "ops may reset"
principal = "alice"
groups = ["ops"]
tool = "git_reset"
arguments = { mode = "hard" }
expect = "ask"            # allow, deny or ask (needs a person's approval)
```

A case's tool comes from the assembled catalogue (the installed packs and servers, and
``--app``), or stands on its own when the case gives its ``effect`` (a tool of that name
and effect taking any arguments). Each case is decided by a fresh copy of the policy: no
audit record is written, no quota of one case counts for the next, nobody is asked.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from toolwire import HookContext, Principal, Tool, ToolCall, TypedCall, raw_tool
from toolwire_policy._approval import APPROVAL_REASON, Verdict
from toolwire_policy._config import PolicyFileError, read_policy_file
from toolwire_policy._policy import Policy
from toolwire_policy._quotas import MemoryStore

__all__ = ["Case", "CaseResult", "load_cases", "replay", "run_cases"]

#: The most cases one file may hold (a file is input: bounded).
MAX_CASES = 10_000
#: The most bytes a cases file may have.
MAX_BYTES = 4_000_000

Expect = Literal["allow", "deny", "ask"]


class Case(BaseModel):
    """One case of a policy test file."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = None
    principal: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None
    groups: list[Annotated[str, StringConstraints(min_length=1, max_length=500)]] = []
    method: Annotated[str, StringConstraints(min_length=1, max_length=100)] = "app"
    tool: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    effect: Literal["read_only", "mutating", "destructive"] | None = None
    expect: Expect


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: list[Case] = Field(default_factory=list, max_length=MAX_CASES)


@attrs.frozen
class CaseResult:
    """What the policy decided for one case: ``got`` (allow, deny or ask) and why."""

    case: Case
    got: Expect
    reason: str

    @property
    def passed(self) -> bool:
        return self.got == self.case.expect

    @property
    def label(self) -> str:
        return self.case.name or f"{self.case.principal or '(anonymous)'} -> {self.case.tool}"


def load_cases(path: Path) -> list[Case]:
    """The cases of a test file; raises PolicyFileError naming the file and the case."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PolicyFileError(path, [("", f"cannot read it: {exc.strerror or exc}")]) from None
    if len(raw) > MAX_BYTES:
        raise PolicyFileError(path, [("", f"it is over {MAX_BYTES:,} bytes")])
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyFileError(path, [("", f"not TOML: {exc}")]) from None
    try:
        return _File.model_validate(data).cases
    except ValidationError as exc:
        problems = [(".".join(str(p) for p in e["loc"]), str(e["msg"])) for e in exc.errors()]
        raise PolicyFileError(path, problems) from None


def run_cases(
    policy_path: Path, cases: Iterable[Case], catalogue: Mapping[str, Tool[Any, Any]]
) -> list[CaseResult]:
    """Decide each case under the policy file at ``policy_path``: toolwire-policy's TOML,
    or a Cedar policy set (``.cedar``, with toolwire-cedar installed). Raises
    PolicyFileError when it does not load, and ValueError naming a case whose tool is
    nowhere."""
    engine = _engine(policy_path)
    return [_decide(engine, case, catalogue) for case in cases]


def _engine(path: Path) -> Any:
    """What decides a case: a policy file's config (TOML), or a parsed Cedar policy set."""
    if path.suffix != ".cedar":
        return (read_policy_file(path), path)
    try:
        from toolwire_cedar import CedarPolicy, CedarPolicyError
    except ImportError:
        raise PolicyFileError(
            path, [("", "a Cedar policy needs toolwire-cedar installed")]
        ) from None
    try:
        return CedarPolicy.from_files(path)
    except CedarPolicyError as exc:
        raise PolicyFileError(path, [("", str(exc))]) from None


def _decide(engine: Any, case: Case, catalogue: Mapping[str, Tool[Any, Any]]) -> CaseResult:
    tool = _tool(case, catalogue)
    principal = (
        Principal(case.principal, groups=frozenset(case.groups), method=case.method)
        if case.principal is not None
        else None
    )
    try:
        value = tool.validate_python(case.arguments)
    except Exception as exc:
        raise ValueError(f"case {case.name or case.tool!r}: invalid arguments: {exc}") from None
    call = TypedCall(ToolCall("case", tool.name, tool.dump_input(value)), tool, value)
    if not isinstance(engine, tuple):  # Cedar: allow, deny, or allow with an @approval
        cedar = engine.decide(call, HookContext(principal=principal))
        if not cedar.allowed:
            return CaseResult(case, "deny", cedar.reason)
        return CaseResult(case, "ask" if cedar.approval else "allow", cedar.approval or "")
    # A fresh policy per case, writing no record and counting in memory: cases do not
    # touch the real audit log or a shared quota store, and do not count for each other.
    config, source = engine
    policy = Policy(config, source=source, audit_log=None, quota_store=MemoryStore())
    verdict = policy.check(call, HookContext(principal=principal))
    if not isinstance(verdict, Verdict):  # nobody is asked in a test: the approver is None
        raise ValueError(f"case {case.name or case.tool!r}: the policy could not decide it here")
    if verdict.allowed:
        return CaseResult(case, "allow", verdict.reason)
    got: Expect = "ask" if verdict.reason.startswith(APPROVAL_REASON) else "deny"
    return CaseResult(case, got, verdict.reason)


def _tool(case: Case, catalogue: Mapping[str, Tool[Any, Any]]) -> Tool[Any, Any]:
    if case.effect is not None:
        schema = {"type": "object", "additionalProperties": True}
        return raw_tool(case.tool, case.tool, schema, effect=case.effect)
    found = catalogue.get(case.tool)
    if found is None:
        raise ValueError(
            f"case {case.name or case.tool!r}: no tool `{case.tool}` in the catalogue "
            "(give the case an effect, or --app the toolset that has it)"
        )
    return found


def replay(
    candidate: Path, audit_log: Path, catalogue: Mapping[str, Tool[Any, Any]]
) -> tuple[int, list[dict[str, Any]]]:
    """Re-decide every decision an audit log records under the ``candidate`` policy file:
    how many were re-decided, and those whose decision would change (who, tool, the
    arguments as logged, the old and the new decision and the new reason).

    A call is re-decided with its tool from the catalogue, else a stand-in with the
    effect the record gives; with its arguments as logged (a value the old policy
    redacted is ``[REDACTED]`` here, which a constraint on it may see differently)."""
    from toolwire_policy._audit import read_records

    engine = _engine(candidate)
    changed: list[dict[str, Any]] = []
    decided = 0
    for number, _, record in read_records(audit_log):
        if record is None or record.get("event") != "decision" or not record.get("tool"):
            continue
        old = _old(record)
        principal = record.get("principal") or {}
        subject = principal.get("subject") if isinstance(principal, dict) else None
        arguments = record.get("arguments")
        effect = record.get("claimed_effect") or record.get("effect")
        tool = str(record["tool"])
        case = Case(
            principal=subject if isinstance(subject, str) and subject else None,
            groups=[str(g) for g in principal.get("groups", [])] if subject else [],
            method=str(principal.get("method") or "app") if subject else "app",
            tool=tool,
            arguments=arguments if isinstance(arguments, dict) else {},
            effect=None if tool in catalogue else (effect if effect in _EFFECTS else "destructive"),
            expect=old,
        )
        try:
            result = _decide(engine, case, catalogue)
        except ValueError as exc:  # the call's tool no longer takes these arguments
            result = CaseResult(case, "deny", str(exc))
        decided += 1
        if not result.passed:
            changed.append(
                {
                    "line": number,
                    "time": record.get("time"),
                    "principal": case.principal,
                    "tool": tool,
                    "arguments": case.arguments,
                    "old": old,
                    "new": result.got,
                    "reason": result.reason,
                }
            )
    return decided, changed


_EFFECTS = ("read_only", "mutating", "destructive")


def _old(record: Mapping[str, Any]) -> Expect:
    """What the policy that wrote the record decided (in shadow mode, what it would have)."""
    decision = record.get("would") or record.get("decision")
    if decision == "allow":
        return "allow"
    if decision == "ask":
        return "ask"
    reason = record.get("reason") or ""
    return "ask" if isinstance(reason, str) and reason.startswith(APPROVAL_REASON) else "deny"
