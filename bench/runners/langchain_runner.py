"""langchain-core through what its chat models and agents (langgraph ToolNode) do.

* build: ``@tool(parse_docstring=True)`` per function -> ``StructuredTool``.
* render: ``convert_to_openai_tool(tool)`` per tool (what ``ChatOpenAI.bind_tools`` calls).
* decode: ``parse_tool_call(raw, return_id=True)`` (how ``langchain-openai`` turns the
  message's tool calls into ``AIMessage.tool_calls``: ``json.loads``), then
  ``tool._parse_input(args, id)``, the validation step of ``BaseTool.run``.
* round: ``parse_tool_call`` then ``tool.invoke(tool_call)`` per call, which validates,
  runs the function and returns a ``ToolMessage`` (what ToolNode does per call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from bench.runners._base import Runner


class LangChainRunner(Runner):
    name = "langchain-core"
    module = "langchain_core"
    distribution = "langchain-core"
    import_statement = "import langchain_core.tools"
    paths: ClassVar[dict[str, str]] = {
        "S1": "langchain_core.tools.tool(fn, parse_docstring=True); render = "
        "convert_to_openai_tool(tool) per tool",
        "S2": "parse_tool_call(raw, return_id=True) + StructuredTool._parse_input(args, id)",
        "S3": "parse_tool_call + StructuredTool.invoke(tool_call) -> ToolMessage per call",
        "S4": import_statement,
    }

    def setup(self) -> None:
        super().setup()
        from langchain_core.output_parsers.openai_tools import parse_tool_call
        from langchain_core.tools import tool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self._tool = tool
        self._convert = convert_to_openai_tool
        self._parse_tool_call = parse_tool_call

    def build(self, functions: Sequence[Callable[..., Any]]) -> dict[str, Any]:
        tool = self._tool
        return {fn.__name__: tool(fn, parse_docstring=True) for fn in functions}

    def render(self, built: dict[str, Any]) -> list[dict[str, Any]]:
        convert = self._convert
        return [convert(t) for t in built.values()]

    def decode(self, prepared: dict[str, Any], message: dict[str, Any]) -> list[Any]:
        parse = self._parse_tool_call
        out = []
        for raw in message["tool_calls"]:
            call = parse(raw, return_id=True)
            out.append(prepared[call["name"]]._parse_input(call["args"], call["id"]))
        return out

    def round(self, prepared: dict[str, Any], message: dict[str, Any]) -> list[Any]:
        parse = self._parse_tool_call
        out = []
        for raw in message["tool_calls"]:
            call = parse(raw, return_id=True)
            out.append(prepared[call["name"]].invoke(call))
        return out

    def result_parts(self, item: Any) -> tuple[str, str]:
        return item.tool_call_id, item.content
