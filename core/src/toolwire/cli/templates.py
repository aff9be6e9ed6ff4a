"""``toolwire new pack NAME`` / ``toolwire new policy NAME``: a ready distribution.

Each template is a complete package: a ``pyproject.toml`` with the entry point, the
plugin module, a README, and tests that install-time discovery works (the host finds
the plugin through its entry point) and that the tool or the rule does its job.
"""

from __future__ import annotations

import re
from pathlib import Path

from toolwire._errors import UsageError
from toolwire._version import __version__

__all__ = ["KINDS", "new_package"]

KINDS = ("pack", "policy")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")

_PYPROJECT = """[project]
name = "{dist}"
version = "0.1.0"
description = "{about}"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["toolwire>={toolwire}"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points."{group}"]
{name} = "{module}.plugin"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

_PACK_INIT = '''"""{dist}: {about}"""

from __future__ import annotations

import toolwire as tw

__all__ = ["greet", "toolset"]


@tw.tool_fn
def greet(name: str, excited: bool = False) -> str:
    """Greet someone by name.

    Args:
        name: Who to greet.
        excited: End with an exclamation mark.
    """
    return f"Hello, {{name}}{{'!' if excited else '.'}}"


def toolset() -> tw.Toolset:
    """The pack's tools (the plugin registers this toolset)."""
    return tw.Toolset("{name}", [greet])
'''

_PACK_PLUGIN = '''"""The entry point of {dist} (group ``toolwire.toolsets``).

Keep it cheap to import: the tools are imported when the host asks for them.
"""

from __future__ import annotations

from typing import Any

from toolwire import hookimpl


@hookimpl
def toolwire_register_toolsets(register: Any) -> None:
    from {module} import toolset

    register(toolset())
'''

_PACK_TEST = '''"""{dist}: the host discovers the pack through its entry point; its tool works."""

from __future__ import annotations

import toolwire as tw


def test_the_host_discovers_the_pack() -> None:
    host = tw.PluginHost(allow=["{name}"], strict=True)
    toolset = host.assemble(tw.Toolset("app", []))
    assert "greet" in toolset
    assert "app/{name}/{name}" == toolset.source("greet")


def test_the_tool_runs_through_the_executor() -> None:
    from {module} import toolset

    executor = tw.Executor(tools=toolset(), plugins=False)
    result = executor.execute(tw.ToolCall("c1", "greet", '{{"name": "Ada", "excited": true}}'))
    assert "Hello, Ada!" == result.content


def test_bad_arguments_are_answered_not_raised() -> None:
    from {module} import toolset

    executor = tw.Executor(tools=toolset(), plugins=False)
    result = executor.execute(tw.ToolCall("c1", "greet", '{{"excited": "very"}}'))
    assert result.is_error
'''

_POLICY_INIT = '''"""{dist}: {about}"""

from __future__ import annotations

import os
import re
from typing import Any

import toolwire as tw

__all__ = ["DENY_ENV", "decide", "redact"]

DENY_ENV = "{env}"
_SECRET = re.compile(r"(?i)(api[_-]?key|secret|token)\\s*[:=]\\s*\\S+")


def denied_tools() -> set[str]:
    """The tool names this policy rejects: ``{env}`` (comma separated)."""
    return {{n.strip() for n in os.environ.get(DENY_ENV, "").split(",") if n.strip()}}


def decide(call: Any) -> tw.Reject | None:
    """Reject a call of a denied tool; None lets the other hooks decide."""
    if call.name in denied_tools():
        return tw.Reject(f"the {name} policy does not allow `{{call.name}}`")
    return None


def redact(result: tw.ToolResult) -> tw.ToolResult | None:
    """Replace what looks like a credential in a result before the model reads it."""
    cleaned = _SECRET.sub("[REDACTED]", result.content)
    return result.replace(content=cleaned) if cleaned != result.content else None
'''

_POLICY_PLUGIN = '''"""The entry point of {dist} (group ``toolwire.policies``).

A policy fails closed: if this module cannot be imported, or a hook raises, the host
rejects the calls it could not decide. Keep the import cheap and the hooks simple.
"""

from __future__ import annotations

from typing import Any

from toolwire import hookimpl
from {module} import decide, redact


@hookimpl
def toolwire_tool_decision(call: Any) -> Any:
    return decide(call)


@hookimpl
def toolwire_tool_result(result: Any) -> Any:
    return redact(result)
'''

_POLICY_TEST = '''"""{dist}: the host loads the policy through its entry point; it decides calls.

``cases.toml`` beside this file holds the policy's cases (who calls which tool with which
arguments, and what the installed policies must decide); add one per rule you write.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw

CASES: list[dict[str, Any]] = tomllib.loads(
    (Path(__file__).with_name("cases.toml")).read_text(encoding="utf-8")
)["cases"]


@tw.tool_fn
def read_notes() -> str:
    """Read the notes."""
    return "api_key = sk-live-0123456789"


@tw.tool_fn
def drop_table(name: str) -> str:
    """Drop a table."""
    return "dropped"


def _plan(
    host: tw.PluginHost,
    session: tw.Session,
    name: str,
    args: str,
    principal: tw.Principal | None = None,
) -> tw.ToolRoundPlan:
    tools = host.assemble(tw.Toolset("app", [read_notes, drop_table]))
    turn = tw.resolve_turn(tools, plugins=host, context=tw.HookContext(principal=principal))
    reply = tw.adapters.AssistantReply(tool_calls=(tw.ToolCall("c1", name, args),))
    outcome = tw.adapters.decode_reply(session.add_user("go"), turn, reply)
    assert isinstance(outcome, tw.NeedsTools)
    return outcome.round.apply_hooks()


def test_the_host_loads_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("{env}", "drop_table")
    host = tw.PluginHost(strict=True).discover()  # policies load when the host starts
    assert any(r.name == "{name}" and r.kind == "policy" for r in host.plugins)
    plan = _plan(host, tw.Session(), "drop_table", '{{"name": "users"}}')
    assert [] == list(plan.pending)
    assert ["the {name} policy does not allow `drop_table`"] == [r.reason for r in plan.rejected]


@pytest.mark.parametrize("case", CASES, ids=[c.get("name", c["tool"]) for c in CASES])
def test_case(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("{env}", "drop_table")
    host = tw.PluginHost(strict=True).discover()
    who = case.get("principal")
    principal = tw.Principal(who, groups=frozenset(case.get("groups", ()))) if who else None
    arguments = json.dumps(case.get("arguments", {{}}))
    plan = _plan(host, tw.Session(), case["tool"], arguments, principal)
    assert not plan.issues, f"the case's call is not valid: {{plan.issues}}"
    got = "allow" if plan.pending else "deny"
    assert case["expect"] == got, [r.reason for r in plan.rejected]


def test_results_are_redacted_before_the_model_reads_them() -> None:
    host = tw.PluginHost(strict=True)
    session = tw.Session()
    plan = _plan(host, session, "read_notes", "{{}}")
    executor = tw.Executor(plugins=host)
    executor.execute_and_commit(plan)
    executor.close()
    assert isinstance(session.last, tw.ToolResultsMessage)
    assert "[REDACTED]" == session.last.results[0].content
'''

_POLICY_CASES = """# The cases of {dist}: who calls which tool with which arguments, and what the
# installed policies must decide (allow or deny). `pytest` decides each one through the
# host, as a model's call is decided (tests/test_{name}.py). It is the format of
# `toolwire-policy test CASES` too (where `expect` may also be `ask`), so the same file can
# prove a TOML or Cedar policy: see toolwire-policy's README, "Policy tests in CI".

[[cases]]
name = "reading notes is allowed"
tool = "read_notes"
expect = "allow"

[[cases]]
name = "nobody may drop a table"
principal = "alice"
groups = ["ops"]
tool = "drop_table"
arguments = {{ name = "users" }}
expect = "deny"
"""

_README = """# {dist}

{about}

```sh
pip install -e ".[test]"   # installs the package and its entry point
pytest                     # the host discovers it; its {what} works
toolwire plugins           # lists `{name}` among the {kinds}
```

`src/{module}/plugin.py` is the entry point (group `{group}`); {more}
"""


def _render(template: str, **values: str) -> str:
    return template.format(**values)


#: The official distributions, whose names (and modules) a new package must not take.
OFFICIAL = frozenset(
    {
        "toolwire",
        "toolwire-fs",
        "toolwire-http",
        "toolwire-mcp",
        "toolwire-policy",
        "toolwire-ray",
        "toolwire-openai",
        "toolwire-anthropic",
        "toolwire-gemini",
        "toolwire-cedar",
        "toolwire-pydantic-ai",
        "toolwire-langchain",
        "toolwire-openai-agents",
        "toolwire-crewai",
        "toolwire-adk",
    }
)


def new_package(kind: str, name: str, where: Path) -> list[Path]:
    """Write a ``kind`` (``pack`` or ``policy``) package called ``name`` under ``where``;
    returns the files written. UsageError for a bad kind or name, or when the target
    directory exists (nothing is overwritten)."""
    if kind not in KINDS:
        raise UsageError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not _NAME.match(name):
        raise UsageError(
            f"a name is lower-case letters and digits, words joined by - or _ "
            f"(like `weather` or `acme-rules`), got {name!r}"
        )
    slug = name.replace("-", "_")
    dist = f"toolwire-{name.replace('_', '-')}"
    if dist in OFFICIAL:
        raise UsageError(
            f"`{dist}` is an official toolwire distribution: a package of that name (and "
            f"module `toolwire_{slug}`) would shadow it, or be shadowed by it, when both are "
            f"installed; choose another name (like `{name}-extra` or `acme-{name}`)"
        )
    module = f"toolwire_{slug}"
    root = where / dist
    if root.exists():
        raise UsageError(f"{root} already exists; choose another name or directory")
    values = {
        "dist": dist,
        "name": slug,
        "module": module,
        "toolwire": __version__,
        "env": f"TOOLWIRE_{slug.upper()}_DENY",
    }
    if kind == "pack":
        values.update(
            about="A toolwire tool pack.",
            group="toolwire.toolsets",
            what="tool",
            kinds="tool packs",
            more="the tools live in `src/{module}/__init__.py`.".format(**values),
        )
        files = {
            "src/{module}/__init__.py": _PACK_INIT,
            "src/{module}/plugin.py": _PACK_PLUGIN,
            f"tests/test_{slug}.py": _PACK_TEST,
        }
    else:
        values.update(
            about="A toolwire policy: it decides every tool call of every application.",
            group="toolwire.policies",
            what="rule",
            kinds="policies",
            more=(
                "the rules live in `src/{module}/__init__.py`: calls of the tools named in "
                "`{env}` are rejected, and credentials are redacted from results; "
                "`tests/cases.toml` holds the cases the policy must decide, one per rule."
            ).format(**values),
        )
        files = {
            "src/{module}/__init__.py": _POLICY_INIT,
            "src/{module}/plugin.py": _POLICY_PLUGIN,
            f"tests/test_{slug}.py": _POLICY_TEST,
            "tests/cases.toml": _POLICY_CASES,
        }
    files["pyproject.toml"] = _PYPROJECT
    files["README.md"] = _README
    written = []
    for rel, template in files.items():
        path = root / rel.format(**values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(template, **values), encoding="utf-8")
        written.append(path)
    (root / "src" / module / "py.typed").write_text("", encoding="utf-8")
    return written
