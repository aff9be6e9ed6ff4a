"""openai-agents through ``FunctionTool`` and the Chat Completions converter.

* build: ``function_tool(fn, strict_mode=False)`` per function. Strict mode is off because
  the strict schema rejects ``dict[str, int]`` parameters (UserError: additionalProperties),
  and the floor's schemas are not strict either.
* render: ``agents.models.chatcmpl_converter.Converter.tool_to_openai(tool)`` per tool
  (reads ``FunctionTool.params_json_schema``), what ``OpenAIChatCompletionsModel`` sends.
* decode: the ``_prepare_arguments`` closure that ``FunctionTool.on_invoke_tool`` runs on
  every call (``json.loads`` + ``params_pydantic_model(**data)`` + ``to_call_args``), taken
  from the tool itself so it is the exact code.
* round: ``await tool.on_invoke_tool(ToolContext(...), arguments)`` per call (sync tools
  go through ``asyncio.to_thread``), then ``ItemHelpers.tool_call_output_item`` per result.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from bench.runners._base import Runner


def _find_in_closure(fn: Any, name: str, depth: int = 0) -> Any:
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # pragma: no cover - empty cell
            continue
        if callable(value) and getattr(value, "__name__", "") == name:
            return value
        if depth < 3 and getattr(value, "__closure__", None):
            found = _find_in_closure(value, name, depth + 1)
            if found is not None:
                return found
    return None


class OpenAIAgentsRunner(Runner):
    name = "openai-agents"
    module = "agents"
    distribution = "openai-agents"
    import_statement = "import agents"
    paths: ClassVar[dict[str, str]] = {
        "S1": "function_tool(fn, strict_mode=False); render = "
        "chatcmpl_converter.Converter.tool_to_openai(tool) (FunctionTool.params_json_schema)",
        "S2": "the _prepare_arguments closure of FunctionTool.on_invoke_tool "
        "(json.loads + params_pydantic_model(**data) + to_call_args)",
        "S3": "await FunctionTool.on_invoke_tool(ToolContext, arguments) (sync tool -> "
        "asyncio.to_thread) + ItemHelpers.tool_call_output_item per call",
        "S4": import_statement,
    }

    def setup(self) -> None:
        super().setup()
        from agents import function_tool
        from agents.items import ItemHelpers
        from agents.models.chatcmpl_converter import Converter
        from agents.tool_context import ToolContext
        from openai.types.responses import ResponseFunctionToolCall

        self._function_tool = function_tool
        self._to_openai = Converter.tool_to_openai
        self._ToolContext = ToolContext
        self._output_item = ItemHelpers.tool_call_output_item
        self._ResponseFunctionToolCall = ResponseFunctionToolCall

    def build(self, functions: Sequence[Callable[..., Any]]) -> dict[str, Any]:
        ft = self._function_tool
        return {fn.__name__: ft(fn, strict_mode=False) for fn in functions}

    def render(self, built: dict[str, Any]) -> list[dict[str, Any]]:
        to_openai = self._to_openai
        return [to_openai(t) for t in built.values()]

    def prepare(self, built: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        prepared = {}
        for name, tool in built.items():
            impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", tool.on_invoke_tool)
            prepare_arguments = _find_in_closure(impl, "_prepare_arguments")
            if prepare_arguments is None:
                raise RuntimeError(
                    "openai-agents changed: FunctionTool.on_invoke_tool no longer closes over "
                    "_prepare_arguments; update bench/runners/openai_agents_runner.py"
                )
            prepared[name] = (tool, prepare_arguments)
        return prepared

    def decode(self, prepared: dict[str, tuple[Any, Any]], message: dict[str, Any]) -> list[Any]:
        out = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            name = f["name"]
            out.append(prepared[name][1](f["arguments"], name))
        return out

    async def round(
        self, prepared: dict[str, tuple[Any, Any]], message: dict[str, Any]
    ) -> list[Any]:
        out = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            name, args = f["name"], f["arguments"]
            raw = self._ResponseFunctionToolCall(
                arguments=args, call_id=tc["id"], name=name, type="function_call"
            )
            ctx = self._ToolContext(
                context=None,
                tool_name=name,
                tool_call_id=tc["id"],
                tool_arguments=args,
                tool_call=raw,
            )
            result = await prepared[name][0].on_invoke_tool(ctx, args)
            out.append(self._output_item(raw, result))
        return out

    def normalise_input(self, item: Any, fn: Callable[..., Any]) -> dict[str, Any]:
        # to_call_args passes positional-or-keyword parameters positionally.
        bound = inspect.signature(fn).bind(*item.args, **item.kwargs)
        return dict(bound.arguments)

    def result_parts(self, item: Any) -> tuple[str, str]:
        return item["call_id"], item["output"]
