"""Smoke-test the built wheels, installed alone into a clean environment (.ci/run).

Run with that environment's interpreter, from a directory outside the source tree:
every distribution imports from site-packages (not from the workspace), registers
through its entry point, and the main paths work offline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

import toolwire as tw
from toolwire.providers.test import TestProvider

WORKSPACE_MARKERS = ("/core/src/", "/providers/", "/plugins/")


PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


@tw.tool_fn
def shot() -> list[tw.Image]:
    """A screenshot."""
    return [tw.Image(PNG)]


class City(BaseModel):
    name: str
    population: int


def main() -> int:
    for module in ("toolwire", "toolwire_openai", "toolwire_anthropic", "toolwire_gemini",
                   "toolwire_fs", "toolwire_http", "toolwire_policy", "toolwire_mcp",
                   "toolwire_ray", "toolwire_cedar", "toolwire_pydantic_ai",
                   "toolwire_langchain", "toolwire_openai_agents"):  # fmt: skip
        imported = __import__(module)
        where = str(Path(imported.__file__ or "").resolve())
        assert "site-packages" in where, f"{module} comes from {where}, not the wheel"
        assert getattr(imported, "__version__", "0.1.0") == tw.__version__, module
    host = tw.get_host()
    providers = set(host.providers())
    assert {"openai", "openai-responses", "openrouter", "openai-compatible", "anthropic",
            "gemini", "test"} <= providers, providers  # fmt: skip
    assert "ray" in host.backends()
    toolset = host.assemble(tw.Toolset("app", []))
    for name in ("read_file", "list_dir", "fetch_url"):
        assert name in toolset, name
    assert not host.blocked, host.blocked
    Path("notes.txt").write_text("remember the milk\n")
    result = tw.Agent(TestProvider(), tw.Toolset("app", [])).run(
        tw.Session(), "list the files here"
    )
    assert "notes.txt" in result.text, result.text
    city = tw.Agent(TestProvider(), tw.Toolset("app", []), output_type=City).run(
        tw.Session(), "Tell me about 'Oslo'"
    )
    assert isinstance(city.output, City), city.output
    assert city.output.name == "Oslo", city.output
    # The model profiles ship inside the provider wheels (package data, not code).
    from toolwire import profiles

    for provider, model, family in (
        ("openai", "o3", "o3 / o4-mini"),
        ("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5 / Haiku 4.5"),
        ("gemini", "gemini-2.5-flash", "Gemini 2.5"),
    ):
        assert profiles.profile_for(provider, model).family == family, (provider, model)
    # A tool result with an image, through the executor, as the wheels run it.
    result = tw.Executor(tools=[shot]).execute(tw.ToolCall("c1", "shot", "{}"))
    assert result.media == (tw.Image(PNG),), result
    cli = Path(sys.executable).with_name("toolwire")
    done = subprocess.run(
        [str(cli), "chat", "list the files here", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["event"] == "answer", events
    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True)
    print(f"smoke: {version.stdout.strip()}, {len(providers)} providers, "
          f"{len(list(toolset.tools()))} tools, backends {host.backends()}: ok")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
