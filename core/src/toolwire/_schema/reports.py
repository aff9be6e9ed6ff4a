"""What a schema compiler returns: the compiled tool, its loss report and each change,
and the text ``toolwire check`` prints."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from toolwire._exports import publish

Severity = Literal["info", "warning", "error"]
SchemaTarget = Literal["parameters", "parametersJsonSchema", "input_schema", "output_config.format"]


# -- records ------------------------------------------------------------------------------


@attrs.frozen
class SchemaChange:
    """One change a compiler made: where (a JSON pointer), what kind, how bad, and why."""

    path: str
    kind: str
    severity: Severity
    message: str

    def __str__(self) -> str:
        return f"{self.severity} #{self.path} {self.kind}: {self.message}"


@attrs.frozen
class CompileReport:
    """What compiling one tool's schema for one provider changed or lost.

    ``target`` is the request field the schema goes into (``parameters``,
    ``parametersJsonSchema``, ``input_schema``); ``strict`` is the strict flag
    to send (None when the provider has none). ``strict_blockers`` lists what
    strict mode would have lost when it was not used.
    """

    tool: str
    provider: str
    target: str = "parameters"
    changes: tuple[SchemaChange, ...] = ()
    strict: bool | None = None
    strict_blockers: tuple[SchemaChange, ...] = ()

    @property
    def lossless(self) -> bool:
        """True when every change is ``info``: the compiled schema means what the tool expects."""
        return all(c.severity == "info" for c in self.changes)

    @property
    def warnings(self) -> tuple[SchemaChange, ...]:
        return tuple(c for c in self.changes if c.severity != "info")

    @property
    def infos(self) -> tuple[SchemaChange, ...]:
        return tuple(c for c in self.changes if c.severity == "info")


@attrs.frozen(eq=False)
class CompiledTool:
    """A tool's schema compiled for one provider (cached on the tool; do not mutate ``schema``).

    When the compiler changed what the model's arguments look like (OpenAI strict makes
    optional fields required and nullable), it supplies ``restore``: pass the model's
    argument object through :meth:`restore_arguments` before validation so that
    omitted-means-default fields get their defaults back.
    """

    name: str
    schema: dict[str, Any]
    strict: bool | None
    report: CompileReport
    target: SchemaTarget = "parameters"
    original_schema: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    restore: Callable[[dict[str, Any]], dict[str, Any]] | None = attrs.field(
        default=None, repr=False
    )

    @property
    def restores_defaults(self) -> bool:
        """True when the model's arguments need :meth:`restore_arguments` before validation."""
        return self.restore is not None

    def restore_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The model's arguments as the tool expects them (unchanged when nothing to restore)."""
        return arguments if self.restore is None else self.restore(arguments)


def format_report(reports: Iterable[CompileReport], *, verbose: bool = False) -> str:
    """Human-readable text for ``toolwire check``: warnings and errors always, ``info``
    changes when ``verbose``, why strict mode is off, and a summary line."""
    reports = list(reports)
    lines: list[str] = []
    lossless = failed = 0
    for r in reports:
        errors = [c for c in r.changes if c.severity == "error"]
        warnings = [c for c in r.changes if c.severity == "warning"]
        infos = [c for c in r.changes if c.severity == "info"]
        if errors:
            failed += 1
            status = "cannot be compiled"
        elif warnings:
            status = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
        else:
            lossless += 1
            status = "lossless"
        extra = [r.target]
        if r.strict is not None:
            extra.append(f"strict: {'on' if r.strict else 'off'}")
        detail = f" ({', '.join(extra)})" if extra else ""
        lines.append(f"tool `{r.tool}` for {r.provider}{detail}: {status}")
        shown = [*errors, *warnings, *(infos if verbose else ())]
        for c in shown:
            lines.append(f"  {c.severity:<7} #{c.path} {c.kind}: {c.message}")
        if infos and not verbose:
            lines.append(f"  ({len(infos)} lossless change{'s' if len(infos) != 1 else ''})")
        if r.strict is False and r.strict_blockers:
            lines.append("  strict mode is off because strict mode would lose:")
            for c in r.strict_blockers:
                lines.append(f"    #{c.path} {c.kind}: {c.message}")
    n = len(reports)
    providers = sorted({r.provider for r in reports})
    lines.append(
        f"{n} tool{'s' if n != 1 else ''} checked for {', '.join(providers) or '-'}: "
        f"{lossless} lossless, {n - lossless - failed} with warnings, {failed} failed"
    )
    return "\n".join(lines)


publish(globals())
