"""Structured final output and model settings: what a turn asks of the model besides tools.

:class:`OutputSpec` (made by :func:`output_spec` from a type) is the answer's shape: the
neutral JSON Schema each adapter renders in its provider's native form, and the
validation of the answer's text into a value. :class:`ModelSettings` is one typed
object for the sampling and length settings every adapter maps onto its own request
fields (a setting a provider has no field for is refused before the request, never
dropped in silence).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from typing import Any, Literal

import attrs
from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from toolwire._errors import OutputValidationError, UsageError
from toolwire._exports import publish
from toolwire._schema.neutral import _CleanJsonSchema

__all__ = ["ModelSettings", "OutputSpec", "output_spec"]

ReasoningEffort = Literal["minimal", "low", "medium", "high"]
_EFFORTS = ("minimal", "low", "medium", "high")
_MAX_STOP = 16  # stop sequences; OpenAI takes 4, Anthropic and Gemini more: each adapter checks


def _check_range(name: str, low: float, high: float) -> Any:
    def check(_: Any, __: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"ModelSettings.{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or not low <= value <= high:
            raise UsageError(f"ModelSettings.{name} must be between {low} and {high}, got {value}")

    return check


def _check_positive_int(_: Any, attr: Any, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"ModelSettings.{attr.name} must be an int >= 1, got {value!r}")


def _check_seed(_: Any, __: Any, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise UsageError(f"ModelSettings.seed must be an int, got {type(value).__name__}")


def _check_bool(_: Any, attr: Any, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise UsageError(f"ModelSettings.{attr.name} must be a bool, got {type(value).__name__}")


def _to_stop(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise UsageError(
            f"ModelSettings.stop must be a string or a list of strings, got {type(value).__name__}"
        ) from None
    if not all(isinstance(s, str) and s for s in items):
        raise UsageError("ModelSettings.stop must hold non-empty strings")
    if len(items) > _MAX_STOP:
        raise UsageError(f"ModelSettings.stop takes at most {_MAX_STOP} sequences")
    return items


def _check_effort(_: Any, __: Any, value: Any) -> None:
    if value is not None and value not in _EFFORTS:
        raise UsageError(
            f"ModelSettings.reasoning_effort must be one of {', '.join(_EFFORTS)}, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Per-run or per-turn model settings, mapped by each adapter onto its request.

    Every field is optional (None: the provider's default). ``temperature`` (0-2),
    ``top_p`` (0-1), ``max_output_tokens``, ``stop`` (a string or a list of
    strings), ``seed``, ``parallel_tool_calls`` (wins over the turn's
    ``parallel_calls``) and ``reasoning_effort`` (``minimal``, ``low``, ``medium``,
    ``high``, for reasoning models). How each maps, per provider, is in
    docs/providers.md; a provider with no field for a setting given here refuses
    the request with a UsageError before anything is sent, and so does a model whose
    profile says it cannot take it (``UnsupportedSettingError``, naming what it takes;
    ``strict=False`` leaves such a setting out with a warning instead). ``merged(other)``
    layers settings: the other's set fields win.
    """

    temperature: float | None = attrs.field(
        default=None, validator=_check_range("temperature", 0, 2)
    )
    max_output_tokens: int | None = attrs.field(default=None, validator=_check_positive_int)
    top_p: float | None = attrs.field(default=None, validator=_check_range("top_p", 0, 1))
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_to_stop)
    seed: int | None = attrs.field(default=None, validator=_check_seed)
    parallel_tool_calls: bool | None = attrs.field(default=None, validator=_check_bool)
    reasoning_effort: ReasoningEffort | None = attrs.field(default=None, validator=_check_effort)
    #: What to do with a setting the request's model cannot take (by its profile): refuse
    #: the request (None or True, the default) or leave the setting out with a warning.
    strict: bool | None = attrs.field(default=None, validator=_check_bool)

    def merged(self, other: ModelSettings | None) -> ModelSettings:
        """These settings with ``other``'s set (non-None) fields on top."""
        if other is None:
            return self
        if not isinstance(other, ModelSettings):
            raise UsageError(f"settings must be a ModelSettings, got {type(other).__name__}")
        changes = {k: v for k, v in attrs.asdict(other, recurse=False).items() if v is not None}
        return attrs.evolve(self, **changes) if changes else self

    def given(self) -> dict[str, Any]:
        """The set fields, by name (what an adapter maps)."""
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


#: The settings every adapter maps by name (parallel_tool_calls goes with the tools,
#: reasoning_effort has a shape of its own per API).
_PLAIN = ("temperature", "top_p", "max_output_tokens", "stop", "seed")


def map_settings(
    provider: str, settings: ModelSettings, fields: Mapping[str, str | None]
) -> dict[str, Any]:
    """``settings`` as request fields: ``fields`` maps each of ``temperature``,
    ``top_p``, ``max_output_tokens``, ``stop`` and ``seed`` to the API's field name, or
    to None where the API has no such field; a setting given for a None field raises
    UsageError (refused before the request, never dropped). ``stop`` is sent as a list."""
    unsupported_settings(provider, settings, tuple(k for k, v in fields.items() if v is None))
    out: dict[str, Any] = {}
    for name in _PLAIN:
        value = getattr(settings, name)
        wire = fields.get(name)
        if value is None or wire is None:
            continue
        out[wire] = list(value) if name == "stop" else value
    return out


def unsupported_settings(provider: str, settings: ModelSettings, names: tuple[str, ...]) -> None:
    """Refuse ``settings`` fields in ``names`` that ``provider`` has no request field for."""
    given = [n for n in names if getattr(settings, n) is not None]
    if given:
        raise UsageError(
            f"{provider} has no request field for ModelSettings.{', .'.join(given)}; "
            f"leave {'it' if len(given) == 1 else 'them'} unset for this provider"
        )


_NAME = re.compile(r"[^a-zA-Z0-9_-]+")
_FEEDBACK_CHARS = 2_000  # of the validation errors, in the message sent back to the model


@attrs.frozen(eq=False)
class OutputSpec:
    """The shape of a turn's final answer.

    ``schema`` is the neutral JSON Schema (an object: a type whose schema is not an
    object, such as ``list[int]``, is wrapped as ``{"result": ...}`` and unwrapped
    on parsing, ``wrapped`` says so); ``name`` (letters, digits, ``_``, ``-``) and
    ``description`` go where the provider takes them (OpenAI's ``json_schema.name``,
    the output tool's name and description). Build it with :func:`output_spec`.
    """

    type: Any
    name: str
    description: str
    schema: Mapping[str, Any]
    wrapped: bool
    adapter: TypeAdapter[Any] = attrs.field(repr=False)
    #: Rendered forms, by (provider, compiler options): adapters cache here.
    cache: dict[Any, Any] = attrs.field(factory=dict, repr=False)

    def parse(self, text: str) -> Any:
        """The answer's text validated into the output type.

        Raises OutputValidationError (its ``feedback`` is the message to send the model)
        when the text is not JSON or does not match. A JSON object inside a Markdown
        code fence is accepted (some models add one in their text).
        """
        body = _unfence(text)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise OutputValidationError(
                f"the answer is not JSON ({exc.args[0] if exc.args else exc})",
                text=text,
                errors=(),
            ) from None
        except RecursionError:
            raise OutputValidationError(
                "the answer is nested too deep", text=text, errors=()
            ) from None
        if self.wrapped:
            if not isinstance(data, dict) or "result" not in data:
                raise OutputValidationError(
                    'the answer must be a JSON object with the key "result"', text=text, errors=()
                )
            data = data["result"]
        try:
            return self.adapter.validate_python(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False)
            lines = []
            for e in errors:
                loc = ".".join(str(p) for p in e["loc"]) or "(answer)"
                lines.append(f"- {loc}: {e['msg']}")
            raise OutputValidationError(
                "the answer does not match the output schema:\n" + "\n".join(lines),
                text=text,
                errors=tuple(errors),
            ) from None

    def compiled(self, compiler: Any, options: Any) -> Any:
        """The schema compiled by a provider's SchemaCompiler with CompileOptions (a
        CompiledTool, cached here by both): what an adapter sends, with the loss report."""
        key = ("compiled", compiler, options)
        out = self.cache.get(key)
        if out is None:
            out = self.cache[key] = compiler(self.schema, self.name, options)
        return out

    def restore(self, compiled: Any, text: str) -> str:
        """The answer's text with what a strict schema added taken out again (the
        nulls a strict schema makes the model send for fields it left out), so the
        defaults apply; the text as it is when there is nothing to take out."""
        if not getattr(compiled, "restores_defaults", False):
            return text
        try:
            value = json.loads(_unfence(text))
        except (ValueError, RecursionError):
            return text
        if not isinstance(value, dict):
            return text
        stripped = compiled.restore_arguments(value)
        if stripped == value:
            return text
        return json.dumps(stripped, ensure_ascii=False)

    def dump(self, value: Any) -> str:
        """``value`` as the JSON text a model would have answered (wrapped if the spec is)."""
        data = self.adapter.dump_python(value, mode="json")
        return json.dumps({"result": data} if self.wrapped else data, ensure_ascii=False)


def _unfence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) >= 6:
        inner = stripped[3:-3]
        newline = inner.find("\n")
        if newline >= 0 and not inner[:newline].strip().startswith(("{", "[")):
            inner = inner[newline + 1 :]  # the language tag
        return inner.strip()
    return stripped


_SPECS: dict[Any, OutputSpec] = {}
_SPECS_LOCK = threading.Lock()
_MAX_SPECS = 256


def output_spec(
    output_type: Any, *, name: str | None = None, description: str | None = None
) -> OutputSpec:
    """The :class:`OutputSpec` of ``output_type`` (a pydantic model, dataclass,
    TypedDict or any type pydantic validates); an OutputSpec is returned as it is.

    ``name`` defaults to the type's name and ``description`` to its docstring.
    Specs of the same type, name and description are shared (adapters cache their
    rendering on them). Raises UsageError for a type pydantic cannot make a schema of.
    """
    if isinstance(output_type, OutputSpec):
        return output_type
    if output_type is None or output_type is type(None):
        raise UsageError("output_type must be a type, got None")
    key: Any
    try:
        key = (output_type, name, description)
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        spec = _SPECS.get(key)
        if spec is not None:
            return spec
    spec = _build(output_type, name, description)
    if key is not None:
        with _SPECS_LOCK:
            if len(_SPECS) >= _MAX_SPECS:
                _SPECS.pop(next(iter(_SPECS)))
            spec = _SPECS.setdefault(key, spec)
    return spec


def _build(output_type: Any, name: str | None, description: str | None) -> OutputSpec:
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        raw = adapter.json_schema(schema_generator=_CleanJsonSchema)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise UsageError(
            f"output_type {output_type!r} is not a type pydantic can validate and describe "
            f"as JSON Schema: {exc}"
        ) from None
    schema = dict(raw)
    wrapped = schema.get("type") != "object" or "properties" not in schema
    if wrapped:
        defs = schema.pop("$defs", None)
        inner = {k: v for k, v in schema.items() if k not in ("title",)}
        schema = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
        if defs:
            schema["$defs"] = defs
    if name is None:
        name = getattr(output_type, "__name__", None) or "final_result"
    if not isinstance(name, str) or not name:
        raise UsageError(f"output name must be a non-empty string, got {name!r}")
    name = _NAME.sub("_", name)[:64]
    if description is None:
        doc = raw.get("description") if isinstance(raw, dict) else None
        description = doc if isinstance(doc, str) else ""
    if not isinstance(description, str):
        raise UsageError(f"output description must be a string, got {type(description).__name__}")
    if not wrapped:
        schema.pop("description", None)  # sent as the output's description
    return OutputSpec(output_type, name, description, schema, wrapped, adapter)


publish(globals())
