"""pydantic-ai-slim through the layers its agent loop calls, without a model round trip.

* build: ``Tool(fn)`` per function (griffe docstring parsing + ``_function_schema``),
  collected in a ``FunctionToolset``.
* render: what one agent request does: a fresh ``ToolManager(toolset).for_run_step(ctx)``
  (``FunctionToolset.get_tools`` -> ``Tool.prepare_tool_def`` per tool), then
  ``OpenAIChatModel.customize_request_parameters`` (the profile's JSON-schema transformer)
  and ``OpenAIChatModel._map_tool_definition`` per tool.
* decode: ``ToolCallPart(...)`` from the OpenAI tool call, then
  ``ToolManager.validate_tool_call`` (which ends in ``args_validator.validate_json``).
* round: decode all calls (the graph validates up front), then
  ``ToolManager.execute_tool_call`` per call (sync functions are handed to a worker thread
  by ``run_in_executor``, as in a real run), then ``ToolReturnPart`` per result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from bench.runners._base import Runner


class PydanticAIRunner(Runner):
    name = "pydantic-ai"
    module = "pydantic_ai"
    distribution = "pydantic-ai-slim"
    import_statement = "import pydantic_ai"
    paths: ClassVar[dict[str, str]] = {
        "S1": "Tool(fn) -> FunctionToolset; render = ToolManager(toolset).for_run_step(ctx) "
        "(get_tools -> Tool.prepare_tool_def) + OpenAIChatModel.customize_request_parameters "
        "+ OpenAIChatModel._map_tool_definition",
        "S2": "ToolCallPart(...) + ToolManager.validate_tool_call (prepared ToolManager)",
        "S3": "S2 for all calls, then ToolManager.execute_tool_call per call "
        "(sync tool -> worker thread) + ToolReturnPart",
        "S4": import_statement,
    }

    def setup(self) -> None:
        super().setup()
        from pydantic_ai import RunContext, Tool
        from pydantic_ai.messages import ToolCallPart, ToolReturnPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage

        self.Tool = Tool
        self.FunctionToolset = FunctionToolset
        self.ToolManager = ToolManager
        self.ToolCallPart = ToolCallPart
        self.ToolReturnPart = ToolReturnPart
        self.ModelRequestParameters = ModelRequestParameters
        self.RunContext = RunContext
        self.RunUsage = RunUsage
        # No request is ever sent: the client is only constructed.
        self.model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="sk-bench-offline"))
        self._step = 0

    def build(self, functions: Sequence[Callable[..., Any]]) -> Any:
        return self.FunctionToolset([self.Tool(fn) for fn in functions])

    async def _manager(self, toolset: Any) -> Any:
        self._step += 1
        ctx = self.RunContext(
            deps=None, model=self.model, usage=self.RunUsage(), run_step=self._step
        )
        return await self.ToolManager(toolset=toolset).for_run_step(ctx)

    async def render(self, built: Any) -> list[dict[str, Any]]:
        manager = await self._manager(built)
        params = self.model.customize_request_parameters(
            self.ModelRequestParameters(function_tools=manager.tool_defs)
        )
        settings: dict[str, Any] = {}
        return [self.model._map_tool_definition(t, settings) for t in params.function_tools]

    async def build_render(self, functions: Sequence[Callable[..., Any]]) -> list[dict[str, Any]]:
        return await self.render(self.build(functions))

    async def prepare(self, built: Any) -> Any:
        return await self._manager(built)

    async def decode(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        out = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            call = self.ToolCallPart(
                tool_name=f["name"], args=f["arguments"], tool_call_id=tc["id"]
            )
            validated = await prepared.validate_tool_call(call)
            if not validated.args_valid:
                raise validated.validation_error
            out.append(validated)
        return out

    async def round(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        validated_calls = await self.decode(prepared, message)
        out = []
        for validated in validated_calls:
            result = await prepared.execute_tool_call(validated)
            call = validated.call
            out.append(
                self.ToolReturnPart(
                    tool_name=call.tool_name, content=result, tool_call_id=call.tool_call_id
                )
            )
        return out

    def normalise_input(self, item: Any, fn: Callable[..., Any]) -> dict[str, Any]:
        return dict(item.validated_args)

    def result_parts(self, item: Any) -> tuple[str, str]:
        return item.tool_call_id, item.model_response_str()
