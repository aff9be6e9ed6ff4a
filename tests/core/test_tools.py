"""Tool definitions: @tool_input, @tool_fn, raw tools, metadata, the typed call wrapper."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from pathlib import Path
from typing import Annotated, Any

import attrs
import pytest
from pydantic import BaseModel, Field, ValidationError

import toolwire as tw
import toolwire._strictjson
import toolwire._toolfile
import toolwire._tools

# -- @tool_input ------------------------------------------------------------------------


def test_tool_input_name_defaults_to_snake_case_of_the_class() -> None:
    @tw.tool_input
    class GetHTTPWeather(BaseModel):
        city: str

    assert "get_http_weather" == tw.tool_of(GetHTTPWeather).name


def test_tool_input_name_keyword_wins() -> None:
    @tw.tool_input(name="weather")
    class GetWeather(BaseModel):
        city: str

    assert "weather" == tw.tool_of(GetWeather).name


def test_tool_input_returns_the_class_unchanged() -> None:
    class GetWeather(BaseModel):
        city: str

    assert GetWeather is tw.tool_input(GetWeather)


def test_tool_input_description_is_the_docstring_lines_trimmed_and_joined() -> None:
    @tw.tool_input
    class GetWeather(BaseModel):
        """Get the weather.

        For one city.
        """

        city: str

    assert "Get the weather.\nFor one city." == tw.tool_of(GetWeather).description


def test_tool_input_without_docstring_has_empty_description() -> None:
    @tw.tool_input
    class GetWeather(BaseModel):
        city: str

    assert "" == tw.tool_of(GetWeather).description


def test_tool_input_field_descriptions_come_from_field_and_attribute_docstrings() -> None:
    @tw.tool_input
    class GetWeather(BaseModel):
        city: str = Field(description="From Field.")
        days: int = 1
        """From the attribute docstring."""

    props = tw.tool_of(GetWeather).input_schema["properties"]
    assert ("From Field.", "From the attribute docstring.") == (
        props["city"]["description"],
        props["days"]["description"],
    )


def test_tool_input_output_type_gives_an_output_schema() -> None:
    class Forecast(BaseModel):
        text: str

    @tw.tool_input(output=Forecast)
    class GetWeather(BaseModel):
        city: str

    expected = {"properties": {"text": {"type": "string"}}, "required": ["text"], "type": "object"}
    assert expected == tw.tool_of(GetWeather).output_schema


def test_tool_input_on_a_non_model_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_input(dict)
    assert "@tool_input goes on a pydantic BaseModel subclass, got <class 'dict'>" == str(
        info.value
    )


def test_tool_of_an_undecorated_model_says_how_to_fix_it() -> None:
    class Plain(BaseModel):
        x: int

    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_of(Plain)
    assert "decorate it with @tool_input" in str(info.value)


def test_tool_of_rejects_other_objects() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_of(42)
    assert "expected a Tool, a @tool_input model or a function, got 42 (int)" == str(info.value)


def test_tool_without_implementation_cannot_be_called(search: type[BaseModel]) -> None:
    tool = tw.tool_of(search)
    with pytest.raises(TypeError) as info:
        tool.call(tool.validate_json('{"query": "x"}'))
    assert "tool `search_docs` has no implementation" in str(info.value)


# -- @tool_fn -----------------------------------------------------------------------------


def test_tool_fn_name_is_the_function_name(weather: tw.Tool[Any, Any]) -> None:
    assert "get_weather" == weather.name


def test_tool_fn_input_model_is_upper_camel_of_the_name(weather: tw.Tool[Any, Any]) -> None:
    assert "GetWeather" == weather.input_type.__name__


def test_tool_fn_schema_from_signature_and_docstring(weather: tw.Tool[Any, Any]) -> None:
    expected = {
        "additionalProperties": False,
        "properties": {
            "city": {"description": "The city name.", "type": "string"},
            "days": {"default": 1, "description": "How many days.", "type": "integer"},
        },
        "required": ["city"],
        "type": "object",
    }
    assert expected == weather.input_schema


def test_tool_fn_description_is_the_docstring_summary(weather: tw.Tool[Any, Any]) -> None:
    assert "Get the weather." == weather.description


def test_tool_fn_description_keyword_wins() -> None:
    @tw.tool_fn(description="Custom.")
    def f(x: int) -> int:
        """Docstring."""
        return x

    assert "Custom." == f.description


def test_tool_fn_call_runs_the_function(weather: tw.Tool[Any, Any]) -> None:
    value = weather.validate_json('{"city": "Oslo", "days": 2}')
    assert "sunny in Oslo for 2 days" == weather.call(value)


def test_tool_fn_stays_callable_as_the_function(weather: Any) -> None:
    assert "sunny in Rome for 1 days" == weather("Rome")


def test_tool_fn_async_function_is_async_and_acall_awaits_it() -> None:
    @tw.tool_fn
    async def fetch(url: str) -> str:
        return "got " + url

    value = fetch.validate_json('{"url": "u"}')
    assert (True, "got u") == (fetch.is_async, asyncio.run(fetch.acall(value)))


def test_tool_fn_acall_on_a_sync_tool_returns_the_value(weather: tw.Tool[Any, Any]) -> None:
    value = weather.validate_json('{"city": "Oslo"}')
    assert "sunny in Oslo for 1 days" == asyncio.run(weather.acall(value))


class _Client:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix


def test_tool_fn_annotated_injected_parameter_stays_out_of_the_schema() -> None:
    @tw.tool_fn
    def fetch(url: str, client: Annotated[_Client, tw.Injected]) -> str:
        return client.prefix + url

    assert (["url"], ("client",)) == (list(fetch.input_schema["properties"]), fetch.injected)


def test_tool_fn_injected_keyword_parameter_stays_out_of_the_schema() -> None:
    @tw.tool_fn(injected=["ctx"])
    def fetch(url: str, ctx: object) -> str:
        return url

    assert ["url"] == list(fetch.input_schema["properties"])


def test_tool_fn_call_supplies_injected_values() -> None:
    @tw.tool_fn
    def fetch(url: str, client: Annotated[_Client, tw.Injected]) -> str:
        return client.prefix + url

    value = fetch.validate_json('{"url": "x"}')
    assert "https://x" == fetch.call(value, client=_Client("https://"))


def test_tool_fn_injected_name_that_is_not_a_parameter_is_an_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:

        @tw.tool_fn(injected=["nope"])
        def f(x: int) -> int:
            return x

    assert "tool `f`: injected parameter(s) ['nope'] are not parameters of" in str(info.value)


def test_tool_fn_rejects_var_args() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:

        @tw.tool_fn
        def f(*args: int) -> int:
            return 0

    assert "*args/**kwargs (args) cannot be described to a model" in str(info.value)


def test_tool_fn_rejects_positional_only_parameters() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:

        @tw.tool_fn
        def f(x: int, /) -> int:
            return x

    assert "positional-only parameter `x` is not supported" in str(info.value)


def test_tool_fn_on_a_lambda_needs_a_name() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_fn(lambda x: x)
    assert "@tool_fn on a lambda needs name=..." == str(info.value)


def test_tool_fn_unresolvable_hint_is_a_definition_error() -> None:
    def f(x: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_fn(f)
    assert "tool `f`: cannot resolve the type hints" in str(info.value)


def test_tool_fn_forbids_extra_arguments(weather: tw.Tool[Any, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        weather.validate_json('{"city": "x", "color": "red"}')
    assert ["extra_forbidden"] == [e["type"] for e in info.value.errors()]


def test_tool_fn_return_type_gives_the_output_schema() -> None:
    @tw.tool_fn
    def f(x: int) -> list[int]:
        return [x]

    assert {"items": {"type": "integer"}, "type": "array"} == f.output_schema


def test_tool_fn_without_return_annotation_has_no_output_schema() -> None:
    @tw.tool_fn
    def f(x: int):  # type: ignore[no-untyped-def]
        return x

    assert None is f.output_schema


def test_tool_fn_with_no_parameters_has_empty_properties() -> None:
    @tw.tool_fn
    def ping() -> str:
        return "pong"

    assert {} == ping.input_schema["properties"]


def test_invalid_tool_name_is_rejected() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_fn(name="has space")(lambda: None)
    assert "tool name must be 1-128 characters" in str(info.value)


def test_tool_name_with_a_trailing_newline_is_rejected() -> None:
    with pytest.raises(tw.ToolDefinitionError):
        tw.raw_tool("abc\n", "d", {"type": "object"})


# -- raw tools ------------------------------------------------------------------------------

RAW_SCHEMA = {
    "type": "object",
    "title": "Noise",
    "properties": {"path": {"type": "string", "title": "Path"}},
    "required": ["path"],
}


def test_raw_tool_keeps_a_clean_copy_of_the_schema() -> None:
    tool = tw.raw_tool("read", "Read a file.", RAW_SCHEMA)
    expected = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    assert expected == tool.input_schema


def test_raw_tool_validates_arguments_into_a_dict() -> None:
    tool = tw.raw_tool("read", "Read a file.", RAW_SCHEMA)
    assert {"path": "a.txt"} == tool.validate_json('{"path": "a.txt"}')


def test_raw_tool_schema_mismatch_keeps_the_location() -> None:
    tool = tw.raw_tool("read", "Read a file.", RAW_SCHEMA)
    with pytest.raises(ValidationError) as info:
        tool.validate_json('{"path": 3}')
    assert [(("path",), "3 is not of type 'string'")] == [
        (e["loc"], e["msg"]) for e in info.value.errors()
    ]


def test_raw_tool_argument_text_that_is_not_json_is_a_validation_error() -> None:
    tool = tw.raw_tool("read", "Read a file.", RAW_SCHEMA)
    with pytest.raises(ValidationError) as info:
        tool.validate_json("{not json")
    assert ["json_invalid"] == [e["type"] for e in info.value.errors()]


def test_raw_tool_deeply_nested_json_is_a_validation_error_not_a_crash() -> None:
    tool = tw.raw_tool("read", "Read a file.", RAW_SCHEMA)
    with pytest.raises(ValidationError):
        tool.validate_json("[" * 100_000)


ANY_Q = {"type": "object", "properties": {"q": {}}}


def _nested(depth: int) -> str:
    return '{"q": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("as_bytes", [False, True])
def test_raw_tool_arguments_nest_at_most_max_raw_nesting_deep(as_bytes: bool) -> None:
    # Reproducer: 900 levels passed here (json.loads had stack to spare) and broke later, in
    # a deeper stack (a policy's fingerprint, a receipt); the limit is now the same wherever
    # the call is validated, as pydantic's parser has one for typed inputs.
    tool = tw.raw_tool("look", "Look.", ANY_Q)
    limit = toolwire._strictjson.MAX_RAW_NESTING
    ok, deep = _nested(limit), _nested(limit + 1)
    assert {"q"} == set(tool.validate_json(ok.encode() if as_bytes else ok))
    with pytest.raises(ValidationError) as info:
        tool.validate_json(deep.encode() if as_bytes else deep)
    assert [
        ("json_invalid", f"Invalid JSON: arrays and objects nested more than {limit} deep")
    ] == [(e["type"], e["msg"]) for e in info.value.errors()]


def test_raw_tool_brackets_inside_strings_do_not_count_as_nesting() -> None:
    tool = tw.raw_tool("look", "Look.", ANY_Q)
    text = json.dumps({"q": ["[{" * 500, '\\"[' * 300, {"k]": "}" * 400}]})
    assert tool.validate_json(text)["q"][0] == "[{" * 500


def test_a_receipt_of_arguments_nested_too_deeply_to_parse_is_made_of_the_text() -> None:
    # Reproducer: json.loads raised RecursionError out of receipt() and verify().
    deep = "[" * 100_000 + "]" * 100_000
    receipt = tw.ToolResult("c1", "t", deep, "out").receipt()
    assert receipt.verify(deep)
    assert not receipt.verify("[]")


def test_raw_tool_fn_receives_the_arguments_as_keywords() -> None:
    tool = tw.raw_tool("read", "Read.", RAW_SCHEMA, lambda path: "read " + path)
    assert "read a" == tool.call(tool.validate_json('{"path": "a"}'))


def test_raw_tool_schema_that_is_not_a_dict_is_rejected() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool("t", "d", [])  # type: ignore[arg-type]
    assert "tool `t`: the input schema must be a JSON object (dict), got list" == str(info.value)


def test_raw_tool_schema_that_is_not_an_object_schema_is_rejected() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool("t", "d", {"type": "string"})
    assert "must describe an object" in str(info.value)


def test_raw_tool_schema_that_is_not_valid_json_schema_is_rejected() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool("t", "d", {"type": "object", "properties": {"x": {"type": "nope"}}})
    assert str(info.value).startswith("tool `t`: the input schema is not valid JSON Schema: ")


def test_raw_tool_schema_without_properties_gets_empty_properties() -> None:
    assert {"type": "object", "properties": {}} == tw.raw_tool("t", "d", {}).input_schema


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "tool.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_raw_tool_from_file(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "read", "description": "Read.", "parameters": RAW_SCHEMA})
    tool = tw.raw_tool_from_file(path)
    assert ("read", "Read.", ["path"]) == (
        tool.name,
        tool.description,
        list(tool.input_schema["properties"]),
    )


def test_raw_tool_from_file_unwraps_the_openai_function_wrapper(tmp_path: Path) -> None:
    inner = {"name": "read", "description": "Read.", "parameters": RAW_SCHEMA}
    path = _write(tmp_path, {"type": "function", "function": inner})
    assert "read" == tw.raw_tool_from_file(path).name


def test_raw_tool_from_file_accepts_input_schema(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "read", "description": "Read.", "input_schema": RAW_SCHEMA})
    assert "read" == tw.raw_tool_from_file(path).name


def test_raw_tool_from_file_missing_keys_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "read"})
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool_from_file(path)
    assert f"tool file {str(path)!r} is missing description, parameters" in str(info.value)


def test_raw_tool_from_file_that_is_not_json(tmp_path: Path) -> None:
    path = _write(tmp_path, "{nope")
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool_from_file(path)
    assert f"tool file {str(path)!r} is not valid JSON" in str(info.value)


def test_raw_tool_from_file_that_is_not_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path, [1, 2])
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool_from_file(path)
    assert f"tool file {str(path)!r} must hold a JSON object, got list" == str(info.value)


def _raised_within(seconds: float, fn: Any, *args: Any) -> BaseException:
    """Run ``fn(*args)`` on a daemon thread; what it raised, failing if it still runs after
    ``seconds`` (the reproducer of an unbounded read must not hang the suite)."""
    box: list[BaseException] = []

    def target() -> None:
        try:
            fn(*args)
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds} s"
    assert box, "returned without an error"
    return box[0]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_raw_tool_from_a_device_reads_no_more_than_the_limit() -> None:
    # Reproducer: read_text() read /dev/zero without end (a path is outside input).
    exc = _raised_within(10, tw.raw_tool_from_file, "/dev/zero")
    assert isinstance(exc, tw.ToolDefinitionError)
    assert "tool file '/dev/zero' is over 1048576 bytes; a tool definition is far smaller" == str(
        exc
    )


def test_raw_tool_from_a_file_over_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "tool.json"
    with path.open("wb") as f:
        f.truncate(toolwire._toolfile.MAX_TOOL_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(tw.ToolDefinitionError, match="is over 1048576 bytes"):
        tw.raw_tool_from_file(path)


def test_raw_tool_from_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool_from_file(tmp_path / "absent.json")
    assert "cannot read tool file" in str(info.value)


# -- metadata ---------------------------------------------------------------------------------


def test_metadata_defaults() -> None:
    meta = tw.ToolMetadata()
    assert (
        tw.ToolEffect.READ_ONLY,
        False,
        None,
        frozenset({tw.Capability.PURE_COMPUTATION}),
        30.0,
    ) == (meta.effect, meta.idempotent, meta.retry_hint, meta.capabilities, meta.timeout)


def test_effect_wire_strings() -> None:
    assert ["read_only", "mutating", "destructive"] == [e.value for e in tw.ToolEffect]


def test_effect_accepts_its_wire_string() -> None:
    assert tw.ToolEffect.DESTRUCTIVE == tw.ToolMetadata(effect="destructive").effect  # type: ignore[arg-type]


def test_bad_effect_string_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(effect="explosive")  # type: ignore[arg-type]
    assert (
        "effect must be one of 'read_only', 'mutating', 'destructive', got 'explosive' (str)"
        == str(info.value)
    )


def test_capability_wire_strings() -> None:
    expected = [
        "pure_computation",
        "network",
        "filesystem",
        "subprocess",
        "environment",
        "cryptography",
    ]
    assert expected == [c.value for c in tw.Capability]


def test_capabilities_accept_strings() -> None:
    meta = tw.ToolMetadata(capabilities=["network", tw.Capability.FILESYSTEM])  # type: ignore[arg-type]
    assert frozenset({tw.Capability.NETWORK, tw.Capability.FILESYSTEM}) == meta.capabilities


def test_bad_capability_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(capabilities=["gpu"])  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "unknown capability 'gpu'; expected one of 'pure_computation'"
    )


def test_capabilities_that_are_not_iterable_are_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(capabilities=3)  # type: ignore[arg-type]
    assert "capabilities must be an iterable of Capability, got int" == str(info.value)


def test_retry_hint_implies_idempotent() -> None:
    assert tw.ToolMetadata(retry_hint=tw.RetryHint(3)).idempotent


def test_idempotent_false_with_a_retry_hint_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(retry_hint=tw.RetryHint(3), idempotent=False)
    assert "a tool with a retry_hint is idempotent by definition" in str(info.value)


def test_idempotent_without_retry_hint_is_allowed() -> None:
    meta = tw.ToolMetadata(idempotent=True)
    assert (True, 1) == (meta.idempotent, meta.max_attempts)


def test_retry_hint_zero_attempts_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.RetryHint(0)
    assert "RetryHint.max_attempts must be >= 1 (it counts the first attempt), got 0" == str(
        info.value
    )


def test_retry_hint_attempts_must_be_an_int() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.RetryHint(2.5)  # type: ignore[arg-type]
    assert "RetryHint.max_attempts must be an int >= 1, got 2.5 (float)" == str(info.value)


def test_retry_hint_negative_backoff_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.RetryHint(2, initial_backoff=-1)
    assert "RetryHint.initial_backoff must be >= 0 seconds, got -1" == str(info.value)


def test_retry_hint_jitter_out_of_range_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.RetryHint(2, jitter=1.5)
    assert "RetryHint.jitter must be in [0, 1], got 1.5" == str(info.value)


def test_retry_hint_idempotent_transport() -> None:
    hint = tw.RetryHint.idempotent_transport()
    assert (3, 0.2) == (hint.max_attempts, hint.initial_backoff)


def test_retry_hint_delay_doubles_and_is_capped() -> None:
    hint = tw.RetryHint(5, initial_backoff=1.0, max_backoff=3.0, jitter=0.0)
    assert [1.0, 2.0, 3.0] == [hint.delay(n) for n in range(3)]


def test_retry_hint_retry_after_replaces_the_delay() -> None:
    assert 0.5 == tw.RetryHint(3).delay(0, retry_after=0.5)


def test_max_attempts_counts_the_first_attempt() -> None:
    assert 1 == tw.ToolMetadata(retry_hint=tw.RetryHint(1)).max_attempts


@pytest.mark.parametrize("timeout", [0, -1, math.nan])
def test_timeout_must_be_positive(timeout: float) -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(timeout=timeout)
    assert f"timeout must be > 0 seconds, got {timeout!r}" == str(info.value)


def test_timeout_must_be_a_number() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(timeout="30")  # type: ignore[arg-type]
    assert "timeout must be a number of seconds, got '30' (str)" == str(info.value)


def test_timeout_none_means_no_timeout() -> None:
    assert None is tw.ToolMetadata(timeout=None).timeout


def test_negative_typical_duration_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(typical_duration=-0.5)
    assert "typical_duration must be >= 0 seconds, got -0.5" == str(info.value)


def test_empty_version_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(version="")
    assert "version must be a non-empty string, got ''" == str(info.value)


def test_retry_hint_of_the_wrong_type_is_a_definition_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.ToolMetadata(retry_hint=3)  # type: ignore[arg-type]
    assert "retry_hint must be a RetryHint, got int" == str(info.value)


def test_metadata_keywords_on_tool_fn() -> None:
    @tw.tool_fn(effect="destructive", version="2", timeout=5)
    def drop(table: str) -> None:
        return None

    assert (tw.ToolEffect.DESTRUCTIVE, "2", 5) == (
        drop.metadata.effect,
        drop.metadata.version,
        drop.metadata.timeout,
    )


def test_invalid_metadata_keyword_fails_at_definition_time() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:

        @tw.tool_fn(retry_hint=tw.RetryHint(2), idempotent=False)
        def f(x: int) -> int:
            return x

    assert "a tool with a retry_hint is idempotent by definition" in str(info.value)


def test_unknown_metadata_keyword_is_named() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.tool_fn(name="f", color="red")(lambda: None)
    assert str(info.value).startswith("unknown tool option(s) color; metadata options are")


def test_metadata_object_and_keywords_together_are_an_error() -> None:
    with pytest.raises(tw.ToolDefinitionError) as info:
        tw.raw_tool("t", "d", {}, metadata=tw.ToolMetadata(), effect="mutating")
    assert "give either metadata=ToolMetadata(...) or metadata keywords (effect), not both" == str(
        info.value
    )


def test_definition_carries_metadata_and_is_cached(weather: tw.Tool[Any, Any]) -> None:
    d = weather.definition
    assert (d is weather.definition, "get_weather", weather.metadata) == (True, d.name, d.metadata)


def test_to_spec_has_no_effect_or_version() -> None:
    tool = tw.raw_tool("t", "Desc.", {}, effect="mutating", version="1")
    expected = {
        "name": "t",
        "description": "Desc.",
        "parameters": {"type": "object", "properties": {}},
    }
    assert expected == tool.definition.to_spec()


# -- the typed call wrapper ---------------------------------------------------------------------


def _typed(tool: tw.Tool[Any, Any], args: str = '{"city": "Oslo"}') -> tw.TypedCall[Any]:
    return tw.TypedCall(tw.ToolCall("c1", tool.name, args), tool, tool.validate_json(args))


def test_typed_call_exposes_metadata_and_input(weather: tw.Tool[Any, Any]) -> None:
    call = _typed(weather)
    assert (weather.metadata, "Oslo", "c1") == (call.metadata, call.input.city, call.id)


def test_typed_call_with_input_keeps_the_raw_arguments(weather: tw.Tool[Any, Any]) -> None:
    call = _typed(weather)
    edited = call.with_input(weather.validate_json('{"city": "Rome"}'))
    assert ("Rome", True, '{"city": "Oslo"}') == (
        edited.input.city,
        edited.edited,
        edited.arguments,
    )


def test_typed_call_into_parts(weather: tw.Tool[Any, Any]) -> None:
    call = _typed(weather)
    assert (call.call, call.input) == call.into_parts()


def test_typed_call_complete_serialises_the_output(search: type[BaseModel]) -> None:
    tool = tw.tool_of(search)
    call = tw.TypedCall(tw.ToolCall("c1", "search_docs", '{"query":"x"}'), tool, search(query="x"))
    expected = tw.ToolResult("c1", "search_docs", '{"query":"x"}', '["a","b"]', False)
    assert expected == call.complete(["a", "b"])


def test_typed_call_complete_keeps_text_as_is(weather: tw.Tool[Any, Any]) -> None:
    assert "plain text" == _typed(weather).complete("plain text").content


def test_typed_call_handled_carries_output_and_result(weather: tw.Tool[Any, Any]) -> None:
    call = _typed(weather)
    handled = call.handled("done")
    assert (call, "done", call.complete("done")) == (handled.call, handled.output, handled.result)


def test_typed_call_error_result(weather: tw.Tool[Any, Any]) -> None:
    assert tw.ToolResult("c1", "get_weather", '{"city": "Oslo"}', "boom", True) == _typed(
        weather
    ).error("boom")


def test_typed_call_run(weather: tw.Tool[Any, Any]) -> None:
    assert "sunny in Oslo for 1 days" == _typed(weather).run()


def test_typed_call_for_another_tool_is_an_error(weather: tw.Tool[Any, Any]) -> None:
    with pytest.raises(tw.exceptions.MismatchedToolNameError) as info:
        tw.TypedCall(tw.ToolCall("c1", "other", "{}"), weather, None)
    assert "tool call `c1` names tool `other`, not `get_weather`" == str(info.value)


def test_tool_call_complete_with_the_wrong_tool_is_an_error(
    weather: tw.Tool[Any, Any], search: type[BaseModel]
) -> None:
    with pytest.raises(tw.exceptions.MismatchedToolNameError) as info:
        tw.ToolCall("c1", "get_weather", "{}").complete(tw.tool_of(search), [])
    assert (
        "tool call `c1` is for tool `get_weather`, but the output was given for `search_docs`"
        == str(info.value)
    )


def test_tool_call_complete_with_its_tool(weather: tw.Tool[Any, Any]) -> None:
    result = tw.ToolCall("c1", "get_weather", "{}").complete(weather, "ok")
    assert tw.ToolResult("c1", "get_weather", "{}", "ok", False) == result


def test_tool_fn_field_default_keeps_constraints_and_gets_the_docstring_text() -> None:
    @tw.tool_fn
    def f(a: int = Field(lt=0), b: int = Field(5, le=9, description="Own.")) -> int:
        """F.

        Args:
            a: Negative.
            b: Ignored, Field wins.
        """
        return a

    props = f.input_schema["properties"]
    assert (
        {"description": "Negative.", "exclusiveMaximum": 0, "type": "integer"},
        {"default": 5, "description": "Own.", "maximum": 9, "type": "integer"},
        ["a"],
    ) == (props["a"], props["b"], f.input_schema["required"])


def test_retry_hint_jitter_only_shortens_the_delay_like_the_http_policy() -> None:
    from toolwire._backoff import backoff
    from toolwire._http import RetryPolicy

    hint = tw.RetryHint(5, initial_backoff=1.0, max_backoff=3.0, jitter=0.5)
    for retry in range(5):
        base = min(1.0 * 2**retry, 3.0)
        assert base == hint.delay(retry, rand=0.0)
        assert base * 0.5 < hint.delay(retry, rand=0.999) <= base
    policy = RetryPolicy(initial_backoff=1.0, max_backoff=3.0, jitter=0.5)

    class Fixed:
        def random(self) -> float:
            return 0.4

    # One formula: the same retry, jitter and random draw give the same delay.
    assert hint.delay(2, rand=0.4) == policy.delay(2, None, Fixed())
    assert hint.delay(2, rand=0.4) == backoff(2, initial=1.0, maximum=3.0, jitter=0.5, fraction=0.4)


def test_raw_tool_carries_a_checked_output_schema() -> None:
    out = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    t = tw.raw_tool("count", "Count.", {"type": "object"}, output_schema=out)
    assert t.output_schema == out
    assert t.definition.output_schema == out
    assert t.renamed("srv_count").output_schema == out
    assert tw.raw_tool("plain", "P.", {"type": "object"}).output_schema is None
    with pytest.raises(tw.ToolDefinitionError, match=r"count \(output\)"):
        tw.raw_tool("count", "Count.", {"type": "object"}, output_schema={"type": 5})


def test_tools_without_options_share_one_frozen_metadata() -> None:
    # One ToolMetadata serves every tool defined without options: it must not be editable.
    @tw.tool_fn
    def one() -> str:
        """One."""
        return "1"

    @tw.tool_fn
    def two() -> str:
        """Two."""
        return "2"

    a, b = tw.tool_of(one).metadata, tw.tool_of(two).metadata
    assert a == tw.ToolMetadata() == b
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.timeout = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.backend_options["ray"] = {}  # type: ignore[index]


def test_a_docstring_is_read_as_inspect_getdoc_reads_it() -> None:
    class Base:
        def lookup(self, query: str) -> str:
            """Look it up.

            Args:
                query: what to look for.
            """
            return query

    class Child(Base):
        def lookup(self, query: str) -> str:  # no docstring: getdoc finds the base's
            return query

    tool = tw.tool_of(tw.tool_fn(Child().lookup))
    assert tool.description == "Look it up."
    assert tool.input_schema["properties"]["query"]["description"] == "what to look for."
