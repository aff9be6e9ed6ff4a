"""Check request bodies and canned responses against the official SDK types.

Requests (what an adapter sent):

- :func:`validate_openai_chat_request`
- :func:`validate_openai_responses_request`
- :func:`validate_anthropic_request`
- :func:`validate_gemini_request`

Each first runs ``pydantic.TypeAdapter(<SDK create-params TypedDict>)`` and
then walks the body against the TypedDict's annotations, recursively, because
TypeAdapter alone is too lenient in two ways (wire-formats.md section 6):
TypedDicts ignore keys they do not declare, and ``Iterable[...]`` fields are
only validated when iterated. The walk flags unknown keys, missing required
keys and wrongly typed values at any depth, with the JSON path. Gemini has no
request TypedDict; its body is checked key by key against google-genai's
pydantic models, which forbid extra keys. All raise ``AssertionError``.

Responses (what the fakes send): ``parse_*`` functions validate with the SDK
models and then fail if any level of the parsed model has fields the model
does not declare (openai and anthropic models accept extras silently, so a
typo in a canned response would otherwise pass).
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic
import typing_extensions

__all__ = [
    "assert_no_extra_fields",
    "check_typed_dict",
    "parse_anthropic_error",
    "parse_anthropic_event",
    "parse_anthropic_message",
    "parse_gemini_response",
    "parse_openai_chat_chunk",
    "parse_openai_chat_completion",
    "parse_openai_error",
    "parse_openai_response",
    "parse_openai_response_event",
    "validate_anthropic_request",
    "validate_gemini_request",
    "validate_openai_chat_request",
    "validate_openai_responses_request",
]


# -- a strict walk of TypedDict annotations --------------------------------


def _strip(tp: Any) -> tuple[Any, str | None]:
    """Unwrap Required/NotRequired/ReadOnly/Annotated; return the alias if any."""
    alias = None
    while True:
        origin = typing.get_origin(tp)
        if origin in (typing_extensions.Required, typing_extensions.NotRequired) or (
            origin is not None
            and getattr(origin, "_name", None) in ("Required", "NotRequired", "ReadOnly")
        ):
            tp = typing.get_args(tp)[0]
            continue
        if origin is typing.Annotated or origin is typing_extensions.Annotated:
            args = typing.get_args(tp)
            for meta in args[1:]:
                alias = getattr(meta, "alias", None) or alias
            tp = args[0]
            continue
        return tp, alias


def _is_required(tp: Any) -> bool | None:
    """True for Required[...], False for NotRequired[...], None otherwise."""
    while True:
        origin = typing.get_origin(tp)
        name = getattr(origin, "_name", None) if origin is not None else None
        if origin is typing_extensions.Required or name == "Required":
            return True
        if origin is typing_extensions.NotRequired or name == "NotRequired":
            return False
        if origin is typing.Annotated or origin is typing_extensions.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        return None


@functools.cache
def _typed_dict_fields(td: type) -> dict[str, tuple[Any, bool]]:
    """Wire key -> (annotation, required), honouring each base's totality.

    The SDKs use ``from __future__ import annotations``, so ``Required[...]``
    is invisible to ``__required_keys__``; this reads the annotations instead.
    """
    fields: dict[str, tuple[Any, bool]] = {}
    inherited: dict[str, Any] = {}
    for base in getattr(td, "__orig_bases__", ()):
        if typing_extensions.is_typeddict(base):
            fields.update(_typed_dict_fields(base))
            inherited.update(inspect.get_annotations(base))
    hints = typing.get_type_hints(td, include_extras=True)
    # A TypedDict's __annotations__ also holds its bases' keys; only the keys
    # it declares (or redeclares) itself follow its own totality.
    annotations = inspect.get_annotations(td)
    own = [k for k, v in annotations.items() if k not in inherited or inherited[k] != v]
    total = getattr(td, "__total__", True)
    for key in own:
        hint = hints[key]
        marked = _is_required(hint)
        required = marked if marked is not None else total
        _, alias = _strip(hint)
        fields[alias or key] = (hint, required)
    return fields


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is typing.Union or origin is types.UnionType


def _discriminators(td: type) -> dict[str, tuple[tuple[Any, ...], bool]]:
    """The ``type``/``role`` Literal keys of a TypedDict: key -> (values, required)."""
    out = {}
    for key, (hint, required) in _typed_dict_fields(td).items():
        if key not in ("type", "role"):
            continue
        inner, _ = _strip(hint)
        options = typing.get_args(inner) if _is_union(inner) else (inner,)
        values = tuple(
            v
            for option in options
            if typing.get_origin(option) is typing.Literal
            for v in typing.get_args(option)
        )
        if values:
            out[key] = (values, required)
    return out


def _json_kind(tp: Any) -> str | None:
    """Which JSON kind an annotation accepts: object, array, or None (other/any)."""
    tp, _ = _strip(tp)
    origin = typing.get_origin(tp)
    if typing_extensions.is_typeddict(tp) or origin in (dict, Mapping) or tp in (dict, Mapping):
        return "object"
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return "object"
    if origin in (list, tuple, set, frozenset, Iterable, Sequence) or tp in (list, tuple):
        return "array"
    if getattr(origin, "__name__", "") == "SequenceNotStr":
        return "array"
    return None


def check_typed_dict(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Return a list of problems with ``value`` against annotation ``tp``."""
    tp, _ = _strip(tp)
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {_short(value)}"]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    if _is_union(tp):
        return _check_union(value, args, path)
    if origin is typing.Literal:
        if value in args and not (isinstance(value, bool) and not any(a is value for a in args)):
            return []
        return [f"{path}: expected one of {list(args)}, got {_short(value)}"]
    if typing_extensions.is_typeddict(tp):
        return _check_td(value, tp, path)
    if origin in (dict, Mapping, typing.Mapping) or tp in (dict, Mapping):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {_short(value)}"]
        if len(args) == 2:
            return [
                p for k, v in value.items() for p in check_typed_dict(v, args[1], f"{path}.{k}")
            ]
        return []
    is_seq = origin in (list, tuple, set, frozenset, Iterable, Sequence) or tp in (list, tuple)
    is_seq = is_seq or getattr(origin, "__name__", "") == "SequenceNotStr"
    if is_seq:
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {_short(value)}"]
        if args:
            item_tp = args[0]
            return [
                p for i, v in enumerate(value) for p in check_typed_dict(v, item_tp, f"{path}[{i}]")
            ]
        return []
    if tp is bool:
        return (
            [] if isinstance(value, bool) else [f"{path}: expected a boolean, got {_short(value)}"]
        )
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected an integer, got {_short(value)}"]
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number, got {_short(value)}"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string, got {_short(value)}"]
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        # The SDKs accept their response models as params too (an assistant
        # turn echoed back); on the wire that is a JSON object.
        try:
            parsed = tp.model_validate(value)
        except pydantic.ValidationError as exc:
            return [f"{path}: not a valid {tp.__name__}: {exc.errors()[0]['msg']}"]
        extras: list[str] = []
        _collect_extras(parsed, path, extras)
        return extras
    # bytes, file types, datetimes and other non-JSON annotations: not checked here.
    return []


def _check_td(value: Any, td: type, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({_type_name(td)}), got {_short(value)}"]
    fields = _typed_dict_fields(td)
    problems = []
    for key in value:
        if key not in fields:
            known = ", ".join(sorted(fields))
            problems.append(f"{path}: unknown key {key!r} for {_type_name(td)} (known: {known})")
    for key, (hint, required) in fields.items():
        if key not in value:
            if required:
                problems.append(f"{path}: missing required key {key!r} for {_type_name(td)}")
            continue
        problems.extend(check_typed_dict(value[key], hint, f"{path}.{key}"))
    return problems


def _check_union(value: Any, members: Sequence[Any], path: str) -> list[str]:
    results = []
    for member in members:
        problems = check_typed_dict(value, member, path)
        if not problems:
            return []
        results.append((_strip(member)[0], problems))
    # Keep only the variants of the right JSON kind (an array is not checked
    # against ``str``), then, for objects, the TypedDicts whose type/role
    # literals match; one survivor means its own problems are the answer.
    kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
    if kind is not None:
        same_kind = [(m, p) for m, p in results if _json_kind(m) == kind]
        results = same_kind or results
    if isinstance(value, dict):
        matching = []
        for member, problems in results:
            if not typing_extensions.is_typeddict(member):
                continue
            disc = _discriminators(member)
            if disc and all(
                value[k] in values if k in value else not required
                for k, (values, required) in disc.items()
            ):
                matching.append((member, problems))
        if matching:
            results = matching
        elif all(typing_extensions.is_typeddict(m) and _discriminators(m) for m, _ in results):
            found = {k: value.get(k) for m, _ in results for k in _discriminators(m)}
            choices = sorted(
                {str(v) for m, _ in results for vs, _ in _discriminators(m).values() for v in vs}
            )
            return [f"{path}: no variant matches {found}; known variants: {choices}"]
    if len(results) == 1:
        return results[0][1]
    names = ", ".join(_type_name(m) for m, _ in results)
    detail = "; ".join(f"{_type_name(m)}: {p[0]}" for m, p in results[:4])
    return [f"{path}: matches none of [{names}] ({detail})"]


@functools.cache
def _adapter(tp: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(tp)


def _validate_params(body: Any, non_streaming: Any, streaming: Any, what: str) -> None:
    if not isinstance(body, dict):
        raise AssertionError(f"{what} request body must be a JSON object, got {_short(body)}")
    tp = streaming if body.get("stream") is True else non_streaming
    try:
        _adapter(tp).validate_python(body)
    except pydantic.ValidationError as exc:
        raise AssertionError(f"{what} request body rejected by {_type_name(tp)}:\n{exc}") from exc
    problems = check_typed_dict(body, tp)
    if problems:
        raise AssertionError(
            f"{what} request body does not match {_type_name(tp)}:\n  " + "\n  ".join(problems)
        )


def validate_openai_chat_request(body: Any) -> None:
    """Check a Chat Completions request body against ``CompletionCreateParams*``."""
    from openai.types.chat import completion_create_params as p

    _validate_params(
        body,
        p.CompletionCreateParamsNonStreaming,
        p.CompletionCreateParamsStreaming,
        "OpenAI Chat Completions",
    )


def validate_openai_responses_request(body: Any) -> None:
    """Check a Responses request body against ``ResponseCreateParams*``."""
    from openai.types.responses import response_create_params as p

    _validate_params(
        body,
        p.ResponseCreateParamsNonStreaming,
        p.ResponseCreateParamsStreaming,
        "OpenAI Responses",
    )


def validate_anthropic_request(body: Any) -> None:
    """Check a Messages request body against ``MessageCreateParams*``."""
    from anthropic.types import message_create_params as p

    _validate_params(
        body,
        p.MessageCreateParamsNonStreaming,
        p.MessageCreateParamsStreaming,
        "Anthropic Messages",
    )


def _gemini_fields() -> dict[str, tuple[Any, bool]]:
    from google.genai import types as g

    # The REST GenerateContentRequest: key -> (model, is a list). Proto-JSON
    # accepts camelCase and snake_case spellings of every field.
    fields: dict[str, tuple[Any, bool]] = {
        "contents": (g.Content, True),
        "tools": (g.Tool, True),
        "toolConfig": (g.ToolConfig, False),
        "systemInstruction": (g.Content, False),
        "generationConfig": (g.GenerationConfig, False),
        "safetySettings": (g.SafetySetting, True),
        "cachedContent": (str, False),
        "labels": (dict[str, str], False),
        "model": (str, False),
    }
    snake = {
        "toolConfig": "tool_config",
        "systemInstruction": "system_instruction",
        "generationConfig": "generation_config",
        "safetySettings": "safety_settings",
        "cachedContent": "cached_content",
    }
    fields.update({snake[k]: v for k, v in list(fields.items()) if k in snake})
    return fields


def validate_gemini_request(body: Any) -> None:
    """Check a ``generateContent`` body key by key with google-genai's models
    (``Content``, ``Tool``, ``ToolConfig``, ``GenerationConfig``,
    ``SafetySetting``), which forbid unknown keys at every level."""
    if not isinstance(body, dict):
        raise AssertionError(f"Gemini request body must be a JSON object, got {_short(body)}")
    fields = _gemini_fields()
    problems: list[str] = []
    for key in body:
        if key not in fields:
            known = ", ".join(sorted(k for k in fields if "_" not in k))
            problems.append(f"$: unknown key {key!r} for GenerateContentRequest (known: {known})")
    if "contents" not in body:
        problems.append("$: missing required key 'contents'")
    for key, value in body.items():
        if key not in fields:
            continue
        model, is_list = fields[key]
        if is_list and not isinstance(value, list):
            problems.append(f"$.{key}: expected an array, got {_short(value)}")
            continue
        tp: Any = list[model] if is_list else model  # type: ignore[valid-type]
        try:
            # google-genai warns (rather than fails) on an unknown enum value,
            # for forward compatibility; here that is a mistake to report.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _adapter(tp).validate_python(value)
            problems.extend(f"$.{key}: {w.message}" for w in caught)
        except pydantic.ValidationError as exc:
            for err in exc.errors():
                loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
                problems.append(f"$.{key}{loc}: {err['msg']} (got {_short(err.get('input'))})")
    if problems:
        raise AssertionError(
            "Gemini request body does not match google-genai types:\n  " + "\n  ".join(problems)
        )


# -- responses: SDK parse plus a check for undeclared fields ---------------


def assert_no_extra_fields(model: Any, path: str = "$") -> None:
    """Fail if any pydantic model in ``model`` holds fields it does not declare."""
    problems: list[str] = []
    _collect_extras(model, path, problems)
    if problems:
        raise AssertionError("fields unknown to the SDK types:\n  " + "\n  ".join(problems))


def _collect_extras(obj: Any, path: str, problems: list[str]) -> None:
    if isinstance(obj, pydantic.BaseModel):
        extra = obj.model_extra or {}
        for key in extra:
            problems.append(f"{path}: {type(obj).__name__} has no field {key!r}")
        for name in type(obj).model_fields:
            _collect_extras(getattr(obj, name), f"{path}.{name}", problems)
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _collect_extras(item, f"{path}[{i}]", problems)
    elif isinstance(obj, dict):
        for key, item in obj.items():
            _collect_extras(item, f"{path}.{key}", problems)


def _parse(tp: Any, data: Any) -> Any:
    parsed = _adapter(tp).validate_python(data)
    assert_no_extra_fields(parsed)
    return parsed


def parse_openai_chat_completion(data: Any) -> Any:
    from openai.types.chat import ChatCompletion

    return _parse(ChatCompletion, data)


def parse_openai_chat_chunk(data: Any) -> Any:
    from openai.types.chat import ChatCompletionChunk

    return _parse(ChatCompletionChunk, data)


def parse_openai_response(data: Any) -> Any:
    from openai.types.responses import Response

    return _parse(Response, data)


def parse_openai_response_event(data: Any) -> Any:
    from openai.types.responses import ResponseStreamEvent

    return _parse(ResponseStreamEvent, data)


def parse_openai_error(data: Any) -> Any:
    """An error body ``{"error": {...}}``; returns the ``ErrorObject``."""
    from openai.types import ErrorObject

    if set(data) != {"error"}:
        raise AssertionError(f"OpenAI error body must be {{'error': ...}}, got keys {sorted(data)}")
    return _parse(ErrorObject, data["error"])


def parse_anthropic_message(data: Any) -> Any:
    from anthropic.types import Message

    return _parse(Message, data)


def parse_anthropic_event(data: Any) -> Any:
    """A stream event. ``ping`` and ``error`` are not in ``RawMessageStreamEvent``
    (the SDK handles them by event name), so they are checked here by shape."""
    from anthropic.types import RawMessageStreamEvent

    if data.get("type") == "ping":
        if data != {"type": "ping"}:
            raise AssertionError(f"a ping event is exactly {{'type': 'ping'}}, got {data!r}")
        return data
    if data.get("type") == "error":
        return parse_anthropic_error(data)
    return _parse(RawMessageStreamEvent, data)


def parse_anthropic_error(data: Any) -> Any:
    from anthropic.types import ErrorResponse

    return _parse(ErrorResponse, data)


def parse_gemini_response(data: Any) -> Any:
    """google-genai models forbid extra keys and use camelCase aliases.

    The SDK's own constructor (``_from_response``) silently drops unknown
    keys, so the body is validated directly from its JSON text instead, which
    also decodes base64 ``thoughtSignature`` bytes the way the wire does.
    """
    from google.genai import types as g

    return g.GenerateContentResponse.model_validate_json(json.dumps(data))
