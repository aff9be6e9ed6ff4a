"""The floor: pure pydantic, nothing else.

One ``create_model`` per tool generated from the signature (no docstring parsing; the
description is the docstring as written), ``validate_json`` on the argument string, a plain
dict from name to function. Render wraps ``model_json_schema()`` (computed once at build) in
the OpenAI tool dict.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from bench import _sse
from bench.runners._base import Runner


class _FloorTool:
    __slots__ = ("description", "fn", "model", "name", "schema", "validate_json")

    def __init__(self, fn: Callable[..., Any], create_model: Any) -> None:
        hints = typing.get_type_hints(fn)
        fields: dict[str, Any] = {}
        for p in inspect.signature(fn).parameters.values():
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (hints[p.name], default)
        self.fn = fn
        self.name = fn.__name__
        self.description = inspect.cleandoc(fn.__doc__ or "")
        self.model = create_model(f"{self.name}_args", **fields)
        self.validate_json = self.model.__pydantic_validator__.validate_json
        self.schema = self.model.model_json_schema()


class FloorRunner(Runner):
    name = "floor"
    module = "pydantic"
    distribution = "pydantic"
    import_statement = "from pydantic import TypeAdapter, create_model"
    paths: ClassVar[dict[str, str]] = {
        "S1": "create_model() from inspect.signature + get_type_hints per function; "
        "model_json_schema() wrapped in the OpenAI tool dict; re-render rewraps the stored schema",
        "S2": "Model.__pydantic_validator__.validate_json(arguments) per call",
        "S3": "S2, then fn(**model.__dict__) and "
        "{'role': 'tool', 'tool_call_id', 'content'} per call",
        "S4": import_statement,
        "hooks": "S3 (no hooks): the target is a ratio to the plain round",
        "streaming": "bytes joined and split on blank lines, json.loads per data line, "
        "argument fragments appended per call and joined (bench/_sse.py floor_assemble)",
        "discovery": "fresh process after `import pydantic`: entry_points(group=...) + "
        "ep.load() per fake dist, each module building one create_model() at import",
        "executor": "await asyncio.gather(*(twin(**model.__dict__) ...)) over the 8 already "
        "validated inputs + one result dict per call",
    }

    def setup(self) -> None:
        super().setup()
        from pydantic import create_model

        self._create_model = create_model

    def build(self, functions: Sequence[Callable[..., Any]]) -> dict[str, _FloorTool]:
        create_model = self._create_model
        return {fn.__name__: _FloorTool(fn, create_model) for fn in functions}

    def render(self, built: dict[str, _FloorTool]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.schema,
                },
            }
            for t in built.values()
        ]

    def decode(self, prepared: dict[str, _FloorTool], message: dict[str, Any]) -> list[Any]:
        out = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            out.append(prepared[f["name"]].validate_json(f["arguments"]))
        return out

    def round(self, prepared: dict[str, _FloorTool], message: dict[str, Any]) -> list[Any]:
        out = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            tool = prepared[f["name"]]
            value = tool.validate_json(f["arguments"])
            content = tool.fn(**value.__dict__)
            out.append({"role": "tool", "tool_call_id": tc["id"], "content": content})
        return out

    def setup_stream(self, built: Any, message: dict[str, Any]) -> dict[str, Any]:
        return {fmt: (fmt, _sse.chunks(_sse.stream_bytes(fmt, message))) for fmt in _sse.FORMATS}

    def stream_assemble(self, prepared: Any) -> list[tuple[str, str, str]]:
        fmt, reads = prepared
        return _sse.floor_assemble(fmt, reads)

    def setup_parallel(self, built: dict[str, _FloorTool], message: dict[str, Any]) -> Any:
        import asyncio

        jobs = []
        for tc in message["tool_calls"]:
            f = tc["function"]
            tool = built[f["name"]]
            value = tool.validate_json(f["arguments"])
            jobs.append((tc["id"], _sse.async_twin(tool.fn), value.__dict__))
        return asyncio.gather, jobs

    async def execute_parallel(self, prepared: Any) -> list[dict[str, Any]]:
        gather, jobs = prepared
        outs = await gather(*(fn(**kwargs) for _, fn, kwargs in jobs))
        return [
            {"role": "tool", "tool_call_id": cid, "content": out}
            for (cid, _, _), out in zip(jobs, outs, strict=True)
        ]

    def discovery_snippet(self, n_plugins: int) -> tuple[str, str, str]:
        """The floor of plugin discovery: the group's entry points, each module loaded (and
        its one pydantic model built at import). See scenarios.make_floor_distributions."""
        setup = "import pydantic\nfrom importlib.metadata import entry_points\n"
        timed = "mods = [ep.load() for ep in entry_points(group='bench.floor.toolsets')]\n"
        check = f"assert len(mods) == {n_plugins} and all(hasattr(m, 'Args') for m in mods)\n"
        return setup, timed, check

    def normalise_input(self, item: Any, fn: Callable[..., Any]) -> dict[str, Any]:
        return dict(item)

    def result_parts(self, item: dict[str, Any]) -> tuple[str, str]:
        return item["tool_call_id"], item["content"]


class FloorStrictBound(FloorRunner):
    """S1's bound, not a library (not in RUNNERS): the floor's build, then each tool's
    schema compiled by toolwire-openai's ``compile_openai_strict`` as the adapter sends it
    (strict when lossless). What any design sending OpenAI strict schemas pays at the
    least: pydantic's model and schema plus the compile, nothing of toolwire's own."""

    name = "floor-strict-bound"

    def setup(self) -> None:
        super().setup()
        from toolwire_openai._schema import compile_openai_strict

        self._compile = compile_openai_strict

    def render(self, built: dict[str, _FloorTool]) -> list[dict[str, Any]]:
        out = []
        for t in built.values():
            parameters, report = self._compile(t.schema, tool=t.name)
            function = {
                "name": t.name,
                "description": t.description,
                "parameters": parameters,
                "strict": report.strict,
            }
            out.append({"type": "function", "function": function})
        return out
