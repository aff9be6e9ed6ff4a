"""The hookspecs are the documentation: complete, annotated, and the generated doc is current."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from toolwire import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = hookspecs._hooks()
NAMES = [fn.__name__ for fn in HOOKS]


def test_the_hooks_are_the_documented_set() -> None:
    assert [
        "toolwire_register_toolsets",
        "toolwire_register_providers",
        "toolwire_register_backends",
        "toolwire_tool_decision",
        "toolwire_tool_description",
        "toolwire_tool_availability",
        "toolwire_tool_result",
        "toolwire_audit",
        "toolwire_audit_trails",
        "toolwire_redact_arguments",
        "toolwire_cli_commands",
        "toolwire_cli_terminal",
    ] == NAMES


@pytest.mark.parametrize("hook", HOOKS, ids=NAMES)
def test_every_hookspec_is_annotated_and_documented(hook: object) -> None:
    sig = inspect.signature(hook)  # type: ignore[arg-type]
    doc = inspect.getdoc(hook) or ""
    assert sig.return_annotation is not inspect.Signature.empty
    for name, param in sig.parameters.items():
        assert param.annotation is not inspect.Parameter.empty, name
        assert f":param {name}:" in doc, name
    assert "Calling rule:" in doc
    assert re.search(r"Added in 0\.\d+\.$", doc.rstrip())


def test_the_committed_hook_reference_is_current() -> None:
    committed = (ROOT / "docs" / "hooks.md").read_text()
    assert hookspecs.reference() == committed, (
        "docs/hooks.md is stale: run `python -m toolwire.hookspecs > docs/hooks.md`"
    )


def test_every_hook_is_in_the_reference() -> None:
    committed = (ROOT / "docs" / "hooks.md").read_text()
    assert NAMES == re.findall(r"^## `(toolwire_\w+)`$", committed, flags=re.M)


def test_every_hook_has_its_own_test() -> None:
    # (the command line's hooks are tried through installed distributions)
    here = Path(__file__).parent
    tests = (here / "test_plugins.py").read_text() + (here / "test_plugins_dist.py").read_text()
    missing = [name for name in NAMES if f"def test_{name}(" not in tests]
    assert [] == missing


def test_the_reference_keeps_its_code_fences_whole() -> None:
    # The generator once turned every ``` into `` while converting RST literals.
    text = (ROOT / "docs" / "hooks.md").read_text()
    fences = [line for line in text.splitlines() if line.startswith("``")]
    assert fences
    assert all(line in ("```python", "```") for line in fences), fences
    assert len(fences) == 2 * len(HOOKS)
