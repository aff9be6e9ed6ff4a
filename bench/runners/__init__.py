"""Runner registry. Adding a library is one class in this package plus one line here."""

from __future__ import annotations

from bench.runners._base import Runner
from bench.runners.floor import FloorRunner
from bench.runners.langchain_runner import LangChainRunner
from bench.runners.openai_agents_runner import OpenAIAgentsRunner
from bench.runners.pydantic_ai_runner import PydanticAIRunner
from bench.runners.toolwire_runner import ToolwireRunner

#: The floor first; every ratio is against it.
RUNNERS: list[type[Runner]] = [
    FloorRunner,
    ToolwireRunner,
    PydanticAIRunner,
    OpenAIAgentsRunner,
    LangChainRunner,
]


def get_runner(name: str) -> type[Runner]:
    for cls in RUNNERS:
        if cls.name == name:
            return cls
    raise LookupError(f"no runner named {name!r}; known: {', '.join(c.name for c in RUNNERS)}")


__all__ = ["RUNNERS", "Runner", "get_runner"]
