"""Model profiles (#28): never send a model a setting or schema its API rejects.

Each of the issue's eight cases, three ways: the request the adapter used to send, posted
to the fake server, earns the provider's real 400 (the fakes enforce the providers' rules,
written independently of toolwire's tables: fakes/model_rules.py); the adapter now refuses
it before anything is sent, naming the model, the setting and what the model takes; and
with ``ModelSettings(strict=False)`` it sends the request without the setting, which the
fake accepts and which checks against the SDK's request types.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fakes import FakeAnthropic, FakeGemini, FakeOpenAI, validate
from fakes import anthropic_messages as am
from fakes import gemini as gm
from fakes import openai_chat as oc
from fakes import openai_responses as orr
from fakes.model_rules import anthropic_rules, gemini_rules, openai_rules, responder
from pydantic import BaseModel

import toolwire as tw
from toolwire import _profiles, profiles
from toolwire.exceptions import BadRequestError, ProfileError, UnsupportedSettingError
from toolwire_anthropic import AnthropicProvider, supports_native_output
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAIResponsesProvider, is_reasoning_model


@pytest.fixture(autouse=True)
def _fresh_profiles() -> Iterator[None]:
    _profiles._reset_for_tests()
    yield
    _profiles._reset_for_tests()


def _turn(settings: tw.ModelSettings, output_type: Any = None) -> tw.adapters.ResolvedTurn:
    return tw.resolve_turn(tw.Toolset("t", []), settings=settings, output_type=output_type)


def _session() -> tw.Session:
    return tw.Session().add_user("hi")


def _gemini_model(request: Any) -> str:
    found = re.search(r"models/([^:/]+):", request.path)
    return found.group(1) if found else ""


# -- the fakes enforce the real rules: what the adapters used to send earns the 400 ------------


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (  # 1: sampling settings to a reasoning model
            "chat/completions",
            {"model": "o3", "messages": [], "temperature": 0.2},
            "Unsupported value: 'temperature' does not support 0.2 with this model",
        ),
        (  # 2: reasoning effort to a model that does not reason (Responses' field)
            "responses",
            {"model": "gpt-4.1", "input": [], "reasoning": {"effort": "low"}},
            "Unsupported parameter: 'reasoning.effort'",
        ),
        (  # 3: stop to o4-mini
            "chat/completions",
            {"model": "o4-mini", "messages": [], "stop": ["x"]},
            "Unsupported parameter: 'stop'",
        ),
    ],
)
def test_the_openai_fake_answers_what_the_adapter_used_to_send_with_the_real_400(
    fake_openai: FakeOpenAI, path: str, body: dict[str, Any], message: str
) -> None:
    fake_openai.enqueue(responder(lambda r: openai_rules(r.json), oc.completion(content="ok")))
    key = {"authorization": f"Bearer {fake_openai.default_api_key}"}
    answer = httpx.post(f"{fake_openai.base_url}/{path}", json=body, headers=key, timeout=10)
    assert answer.status_code == 400
    assert message in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (  # 4: temperature and top_p to a 4.5 model
            {"model": "claude-sonnet-4-5", "temperature": 0.2, "top_p": 0.9},
            "`temperature` and `top_p` cannot both be specified for this model",
        ),
        (  # 5: temperature with extended thinking
            {
                "model": "claude-sonnet-4-5",
                "temperature": 0.5,
                "thinking": {"type": "enabled", "budget_tokens": 2048},
            },
            "`temperature` may only be set to 1 when thinking is enabled",
        ),
        (  # 6: effort to a model without the effort parameter
            {"model": "claude-sonnet-4-5", "output_config": {"effort": "medium"}},
            "does not support the effort parameter",
        ),
        (  # 8: a recursive schema to native structured output
            {
                "model": "claude-sonnet-4-5",
                "output_config": {
                    "format": {
                        "type": "json_schema",
                        "schema": {
                            "$defs": {
                                "Node": {
                                    "type": "object",
                                    "properties": {
                                        "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                                    },
                                }
                            },
                            "$ref": "#/$defs/Node",
                        },
                    }
                },
            },
            "Recursive schemas are not supported",
        ),
    ],
)
def test_the_anthropic_fake_answers_what_the_adapter_used_to_send_with_the_real_400(
    fake_anthropic: FakeAnthropic, body: dict[str, Any], message: str
) -> None:
    fake_anthropic.enqueue(responder(lambda r: anthropic_rules(r.json), am.text_message("ok")))
    full = {"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **body}
    key = {"x-api-key": fake_anthropic.default_api_key, "anthropic-version": "2023-06-01"}
    url = f"{fake_anthropic.base_url}/v1/messages"
    answer = httpx.post(url, json=full, headers=key, timeout=10)
    assert answer.status_code == 400
    assert message in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("model", "level", "message"),
    [  # 7: thinkingLevel before Gemini 3, and MINIMAL to Gemini 3 Pro
        ("gemini-2.5-flash", "LOW", "Thinking level is not supported for this model"),
        ("gemini-3-pro-preview", "MINIMAL", "Thinking level MINIMAL is not supported"),
    ],
)
def test_the_gemini_fake_answers_what_the_adapter_used_to_send_with_the_real_400(
    fake_gemini: FakeGemini, model: str, level: str, message: str
) -> None:
    fake_gemini.enqueue(
        responder(
            lambda r: gemini_rules(r.json, _gemini_model(r)), gm.response([gm.text_part("ok")])
        )
    )
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingLevel": level}},
    }
    url = f"{fake_gemini.base_url}/v1beta/models/{model}:generateContent"
    answer = httpx.post(
        url, json=body, headers={"x-goog-api-key": fake_gemini.default_api_key}, timeout=10
    )
    assert answer.status_code == 400
    assert message in answer.json()["error"]["message"]


# -- OpenAI (cases 1-3) -----------------------------------------------------------------------


def _openai(fake: FakeOpenAI, cls: Any, model: str) -> Any:
    return cls(model, api_key=fake.default_api_key, base_url=fake.base_url)


OPENAI_CASES = [
    # (adapter, model, settings, the setting refused, what the model takes)
    (
        OpenAIChatProvider,
        "o3",
        tw.ModelSettings(temperature=0.2),
        "temperature",
        "take no temperature",
    ),
    (OpenAIResponsesProvider, "gpt-5", tw.ModelSettings(top_p=0.5), "top_p", "take no top_p"),
    (
        OpenAIChatProvider,
        "gpt-4.1",
        tw.ModelSettings(reasoning_effort="low"),
        "reasoning_effort",
        "take no reasoning_effort",
    ),
    (
        OpenAIResponsesProvider,
        "gpt-5-chat-latest",
        tw.ModelSettings(reasoning_effort="high"),
        "reasoning_effort",
        "take no reasoning_effort",
    ),
    (
        OpenAIChatProvider,
        "o4-mini",
        tw.ModelSettings(stop=["END"]),
        "stop",
        "take no stop sequences",
    ),
    (
        OpenAIChatProvider,
        "o3",
        tw.ModelSettings(reasoning_effort="minimal"),
        "reasoning_effort",
        "take reasoning_effort low, medium, high",
    ),
]


@pytest.mark.parametrize(("cls", "model", "settings", "setting", "takes"), OPENAI_CASES)
def test_openai_refuses_what_the_model_cannot_take_before_sending(
    fake_openai: FakeOpenAI,
    cls: Any,
    model: str,
    settings: tw.ModelSettings,
    setting: str,
    takes: str,
) -> None:
    with (
        _openai(fake_openai, cls, model) as provider,
        pytest.raises(UnsupportedSettingError) as info,
    ):
        tw.run_turn(provider, _session(), _turn(settings))
    text = str(info.value)
    assert f"model `{model}` cannot take ModelSettings.{setting}" in text
    assert takes in text
    assert fake_openai.requests == []


@pytest.mark.parametrize(("cls", "model", "settings", "setting", "takes"), OPENAI_CASES)
def test_openai_with_strict_false_leaves_the_setting_out_and_the_api_accepts(
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    cls: Any,
    model: str,
    settings: tw.ModelSettings,
    setting: str,
    takes: str,
) -> None:
    ok = (
        oc.completion(content="ok")
        if cls is OpenAIChatProvider
        else orr.response([orr.message_item("ok")])
    )
    fake_openai.enqueue(responder(lambda r: openai_rules(r.json), ok))
    loose = tw.ModelSettings(**{**_fields(settings), "strict": False})
    with _openai(fake_openai, cls, model) as provider:
        reply = tw.run_turn(provider, _session(), _turn(loose))
    assert isinstance(reply, tw.Finished)
    body = fake_openai.requests[0].json
    assert setting not in body
    assert "reasoning" not in body or setting != "reasoning_effort"
    if cls is OpenAIChatProvider:
        validate.validate_openai_chat_request(body)
    else:
        validate.validate_openai_responses_request(body)
    assert f"ModelSettings.{setting} left out (strict=False)" in caplog.text


def _fields(settings: tw.ModelSettings) -> dict[str, Any]:
    import attrs

    return {k: v for k, v in attrs.asdict(settings).items() if v is not None}


def test_openai_sends_what_the_model_takes(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(responder(lambda r: openai_rules(r.json), oc.completion(content="ok")))
    settings = tw.ModelSettings(reasoning_effort="high", max_output_tokens=50)
    with _openai(fake_openai, OpenAIChatProvider, "o3") as provider:
        tw.run_turn(provider, _session(), _turn(settings))
    body = fake_openai.requests[0].json
    assert (body["reasoning_effort"], body["max_completion_tokens"]) == ("high", 50)
    validate.validate_openai_chat_request(body)


def test_a_model_without_native_output_is_told_before_sending(fake_openai: FakeOpenAI) -> None:
    class City(BaseModel):
        name: str

    with (
        _openai(fake_openai, OpenAIChatProvider, "gpt-4-turbo") as provider,
        pytest.raises(UnsupportedSettingError, match="takes no json_schema structured output"),
    ):
        tw.run_turn(provider, _session(), _turn(tw.ModelSettings(), output_type=City))
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("o3", True),
        ("gpt-5-mini", True),
        ("gpt-5-chat-latest", False),
        ("gpt-4.1", False),
        ("my-model", False),
    ],
)
def test_is_reasoning_model_is_a_profile_lookup(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning
    profiles.register_profile(
        profiles.ModelProfile(provider="openai", family="ours", match=("my-*",), thinking=True)
    )
    assert is_reasoning_model("my-model") is True


# -- Anthropic (cases 4-6, 8) ------------------------------------------------------------------


def _anthropic(fake: FakeAnthropic, model: str, **options: Any) -> AnthropicProvider:
    return AnthropicProvider(model, api_key=fake.default_api_key, base_url=fake.base_url, **options)


ANTHROPIC_CASES = [
    (
        "claude-sonnet-4-5",
        {},
        tw.ModelSettings(temperature=0.2, top_p=0.9),
        "top_p",
        "temperature or top_p, not both",
    ),
    (
        "claude-sonnet-4-5",
        {"thinking": 2048},
        tw.ModelSettings(temperature=0.5),
        "temperature",
        "with extended thinking, Claude takes no temperature",
    ),
    (
        "claude-sonnet-4-5",
        {"thinking": 2048},
        tw.ModelSettings(top_p=0.5),
        "top_p",
        "top_p must be between 0.95 and 1",
    ),
    (
        "claude-sonnet-4-5",
        {},
        tw.ModelSettings(reasoning_effort="medium"),
        "reasoning_effort",
        "take no reasoning_effort",
    ),
    (
        "claude-haiku-4-5",
        {},
        tw.ModelSettings(reasoning_effort="low"),
        "reasoning_effort",
        "take no reasoning_effort",
    ),
    (
        "claude-3-7-sonnet-20250219",
        {},
        tw.ModelSettings(reasoning_effort="high"),
        "reasoning_effort",
        "take no reasoning_effort",
    ),
    (
        "claude-opus-4-5",
        {},
        tw.ModelSettings(reasoning_effort="minimal"),
        "reasoning_effort",
        "take reasoning_effort low, medium, high",
    ),
]


@pytest.mark.parametrize(("model", "options", "settings", "setting", "takes"), ANTHROPIC_CASES)
def test_anthropic_refuses_what_the_model_cannot_take_before_sending(
    fake_anthropic: FakeAnthropic,
    model: str,
    options: dict[str, Any],
    settings: tw.ModelSettings,
    setting: str,
    takes: str,
) -> None:
    with (
        _anthropic(fake_anthropic, model, **options) as provider,
        pytest.raises(UnsupportedSettingError) as info,
    ):
        tw.run_turn(provider, _session(), _turn(settings))
    assert f"model `{model}` cannot take ModelSettings.{setting}" in str(info.value)
    assert takes in str(info.value)
    assert fake_anthropic.requests == []


@pytest.mark.parametrize(("model", "options", "settings", "setting", "takes"), ANTHROPIC_CASES)
def test_anthropic_with_strict_false_leaves_the_setting_out_and_the_api_accepts(
    fake_anthropic: FakeAnthropic,
    model: str,
    options: dict[str, Any],
    settings: tw.ModelSettings,
    setting: str,
    takes: str,
) -> None:
    fake_anthropic.enqueue(responder(lambda r: anthropic_rules(r.json), am.text_message("ok")))
    loose = tw.ModelSettings(**{**_fields(settings), "strict": False})
    with _anthropic(fake_anthropic, model, **options) as provider:
        reply = tw.run_turn(provider, _session(), _turn(loose))
    assert isinstance(reply, tw.Finished)
    body = dict(fake_anthropic.requests[0].json)
    wire = {"reasoning_effort": "effort"}.get(setting, setting)
    assert wire not in body
    assert wire not in body.get("output_config", {})
    body.pop("temperature", None)  # API version 2023-06-01's, not in the 2.x SDK's types
    body.pop("top_p", None)
    validate.validate_anthropic_request(body)


def test_anthropic_sends_effort_to_the_model_that_takes_it(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(responder(lambda r: anthropic_rules(r.json), am.text_message("ok")))
    with _anthropic(fake_anthropic, "claude-opus-4-5") as provider:
        tw.run_turn(
            provider,
            _session(),
            _turn(tw.ModelSettings(reasoning_effort="medium", temperature=0.3)),
        )
    body = fake_anthropic.requests[0].json
    assert body["output_config"] == {"effort": "medium"}
    assert body["temperature"] == 0.3


def test_thinking_on_a_model_without_it_is_refused(fake_anthropic: FakeAnthropic) -> None:
    with (
        _anthropic(fake_anthropic, "claude-3-5-haiku-latest", thinking=2048) as provider,
        pytest.raises(UnsupportedSettingError, match="takes no extended thinking"),
    ):
        tw.run_turn(provider, _session(), tw.resolve_turn(tw.Toolset("t", [])))
    assert fake_anthropic.requests == []


class Node(BaseModel):
    """A tree."""

    name: str
    kids: list[Node] = []


class Pet(BaseModel):
    kind: str


class Shelter(BaseModel):
    pets: tuple[Pet, str]


def test_a_recursive_answer_goes_through_the_output_tool_and_the_report_says_so(
    fake_anthropic: FakeAnthropic,
) -> None:
    answer = am.tool_use_message(("final_result", {"name": "root", "kids": []}))
    fake_anthropic.enqueue(responder(lambda r: anthropic_rules(r.json), answer))
    turn = _turn(tw.ModelSettings(), output_type=Node)
    with _anthropic(fake_anthropic, "claude-sonnet-4-5") as provider:
        assert provider.output_mode() == "native"  # the model takes native output...
        assert provider.output_mode(turn) == "tool"  # ...but not this schema
        report = provider.output_compiled(turn).report
        reply = tw.run_turn(provider, _session(), turn)
    assert isinstance(reply, tw.Finished)
    body = fake_anthropic.requests[0].json
    assert "format" not in body.get("output_config", {})
    assert [t["name"] for t in body["tools"]] == ["final_result"]
    assert report.changes[0].kind == "native_output_fallback"
    validate.validate_anthropic_request(body)


def test_native_output_moves_discriminator_and_prefix_items_into_the_description() -> None:
    from toolwire_anthropic._schema import compile_anthropic_output

    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "pet": {
                "oneOf": [{"type": "object", "properties": {"kind": {"const": "cat"}}}],
                "discriminator": {"propertyName": "kind"},
            },
        },
    }
    out, report = compile_anthropic_output(schema)
    assert "prefixItems" not in out["properties"]["pair"]
    assert "prefixItems" in out["properties"]["pair"]["description"]
    assert "discriminator" not in out["properties"]["pet"]
    kinds = {(c.path, c.kind) for c in report.changes}
    assert ("/properties/pair", "described_keyword") in kinds
    assert ("/properties/pet", "described_keyword") in kinds


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-opus-4-5-20251101", True),
        ("claude-opus-4-1", False),  # not in the structured-outputs model list
        ("claude-sonnet-4-20250514", False),
        ("claude-sonnet-5", True),  # a later Claude: the documented default
        ("my-gateway-alias", False),
    ],
)
def test_supports_native_output_is_a_profile_lookup(model: str, native: bool) -> None:
    assert supports_native_output(model) is native


# -- Gemini (case 7) ---------------------------------------------------------------------------


GEMINI_CASES = [
    ("gemini-2.5-flash", tw.ModelSettings(reasoning_effort="low"), "thinks by budget"),
    (
        "gemini-3-pro-preview",
        tw.ModelSettings(reasoning_effort="minimal"),
        "take reasoning_effort low, high",
    ),
    ("gemini-2.0-flash", tw.ModelSettings(reasoning_effort="high"), "take no reasoning_effort"),
]


@pytest.mark.parametrize(("model", "settings", "takes"), GEMINI_CASES)
def test_gemini_refuses_a_thinking_level_the_model_cannot_take(
    fake_gemini: FakeGemini, model: str, settings: tw.ModelSettings, takes: str
) -> None:
    with (
        GeminiProvider(
            model, api_key=fake_gemini.default_api_key, base_url=fake_gemini.base_url
        ) as provider,
        pytest.raises(UnsupportedSettingError) as info,
    ):
        tw.run_turn(provider, _session(), _turn(settings))
    assert f"model `{model}` cannot take ModelSettings.reasoning_effort" in str(info.value)
    assert takes in str(info.value)
    assert fake_gemini.requests == []


@pytest.mark.parametrize(("model", "settings", "takes"), GEMINI_CASES)
def test_gemini_with_strict_false_leaves_the_level_out(
    fake_gemini: FakeGemini, model: str, settings: tw.ModelSettings, takes: str
) -> None:
    fake_gemini.enqueue(
        responder(
            lambda r: gemini_rules(r.json, _gemini_model(r)), gm.response([gm.text_part("ok")])
        )
    )
    loose = tw.ModelSettings(**{**_fields(settings), "strict": False, "temperature": 0.3})
    with GeminiProvider(
        model, api_key=fake_gemini.default_api_key, base_url=fake_gemini.base_url
    ) as provider:
        reply = tw.run_turn(provider, _session(), _turn(loose))
    assert isinstance(reply, tw.Finished)
    body = fake_gemini.requests[0].json
    assert "thinkingConfig" not in body.get("generationConfig", {})
    assert body["generationConfig"]["temperature"] == 0.3
    validate.validate_gemini_request(body)


def test_gemini_3_gets_its_thinking_level(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(
        responder(
            lambda r: gemini_rules(r.json, _gemini_model(r)), gm.response([gm.text_part("ok")])
        )
    )
    with GeminiProvider(
        "gemini-3-flash", api_key=fake_gemini.default_api_key, base_url=fake_gemini.base_url
    ) as provider:
        tw.run_turn(provider, _session(), _turn(tw.ModelSettings(reasoning_effort="minimal")))
    body = fake_gemini.requests[0].json
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "MINIMAL"}


# -- unknown models and the application's own profiles -----------------------------------------


def test_an_unknown_model_gets_its_providers_documented_default(fake_openai: FakeOpenAI) -> None:
    default = profiles.profile_for("openai", "a-model-released-tomorrow")
    assert default.family == "default"
    assert default.temperature  # the API decides
    assert default.reasoning_efforts
    fake_openai.enqueue_chat(oc.completion(content="ok"))
    settings = tw.ModelSettings(temperature=0.2, reasoning_effort="low")
    with _openai(fake_openai, OpenAIChatProvider, "a-model-released-tomorrow") as provider:
        tw.run_turn(provider, _session(), _turn(settings))
    body = fake_openai.requests[0].json
    assert (body["temperature"], body["reasoning_effort"]) == (0.2, "low")


def test_the_application_registers_a_profile_that_wins(fake_openai: FakeOpenAI) -> None:
    profiles.register_profile(
        profiles.ModelProfile(
            provider="openai", family="our fine-tune", match=("ft-ours-*",), temperature=False
        )
    )
    with (
        _openai(fake_openai, OpenAIChatProvider, "ft-ours-7") as provider,
        pytest.raises(UnsupportedSettingError, match="our fine-tune models take no temperature"),
    ):
        tw.run_turn(provider, _session(), _turn(tw.ModelSettings(temperature=0.1)))
    assert profiles.profile_for("openai", "ft-ours-7").family == "our fine-tune"


def test_profiles_come_from_the_users_toolwire_toml(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "toolwire.toml"
    config.write_text(
        '[[profiles]]\nprovider = "anthropic"\nfamily = "our gateway"\n'
        'match = ["gw-claude*"]\nreasoning_efforts = ["low"]\nthinking = true\n'
    )
    monkeypatch.setenv("TOOLWIRE_CONFIG", str(config))
    _profiles._reset_for_tests()
    got = profiles.profile_for("anthropic", "gw-claude-big")
    assert (got.family, got.reasoning_efforts) == ("our gateway", ("low",))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[profiles]]\nfamily = "x"\nmatch = ["*"]\n', "needs provider"),
        (
            '[[profiles]]\nprovider = "openai"\nfamily = "x"\nmatch = ["*"]\ntemprature = false\n',
            "unknown keys \\['temprature'\\]",
        ),
        (
            '[[profiles]]\nprovider = "openai"\nfamily = "x"\nmatch = ["*"]\ntemperature = "no"\n',
            "must be true or false",
        ),
        (
            '[[profiles]]\nprovider = "openai"\nfamily = "x"\nmatch = []\n',
            "one or more non-empty globs",
        ),
        (
            '[[profiles]]\nprovider = "openai"\nfamily = "x"\nmatch = ["*"]\n'
            'reasoning_efforts = ["huge"]\n',
            "unknown levels",
        ),
        ("profiles = 3\n", "array of tables"),
        ("[[profiles]\n", "not valid TOML"),
    ],
)
def test_a_malformed_toolwire_toml_is_a_clear_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    config = tmp_path / "toolwire.toml"
    config.write_text(text)
    monkeypatch.setenv("TOOLWIRE_CONFIG", str(config))
    _profiles._reset_for_tests()
    with pytest.raises(ProfileError, match=message):
        profiles.profile_for("openai", "gpt-4.1")
    with pytest.raises(ProfileError, match=message):  # every time, until it is fixed
        profiles.profile_for("openai", "gpt-4o")


def test_the_applications_own_profile_wins_over_its_toolwire_toml(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "toolwire.toml"
    config.write_text(
        '[[profiles]]\nprovider = "openai"\nfamily = "from the file"\nmatch = ["ours-*"]\n'
    )
    monkeypatch.setenv("TOOLWIRE_CONFIG", str(config))
    _profiles._reset_for_tests()
    profiles.register_profile(
        profiles.ModelProfile(provider="openai", family="from code", match=("ours-*",))
    )
    assert profiles.profile_for("openai", "ours-1").family == "from code"


def test_the_shipped_tables_parse_and_name_their_sources() -> None:
    for provider in ("openai", "anthropic", "gemini"):
        listed = [p for p in profiles.profiles(provider) if p.provider == provider]
        assert len(listed) >= 4
        assert all(p.source for p in listed), provider


def test_a_malformed_profiles_file_names_the_key() -> None:
    with pytest.raises(ProfileError, match="format must be"):
        profiles.load_profiles('format = "other/9"\nprovider = "x"\n')
    with pytest.raises(ProfileError, match=r"profile\[0\]: unknown keys"):
        profiles.load_profiles(
            'format = "toolwire.profiles/1"\nprovider = "x"\n[[profile]]\nfamily = "a"\n'
            'match = ["*"]\nbogus = 1\n'
        )


def test_bad_request_is_still_mapped_when_a_profile_is_wrong(fake_openai: FakeOpenAI) -> None:
    # A profile that says too much (here: the application's) still meets the API's 400.
    profiles.register_profile(
        profiles.ModelProfile(
            provider="openai",
            family="too generous",
            match=("o3*",),
            reasoning_efforts=("low",),
            stop=True,
        )
    )
    fake_openai.enqueue(responder(lambda r: openai_rules(r.json), oc.completion(content="ok")))
    with (
        _openai(fake_openai, OpenAIChatProvider, "o3") as provider,
        pytest.raises(BadRequestError, match="'temperature' does not support"),
    ):
        tw.run_turn(provider, _session(), _turn(tw.ModelSettings(temperature=0.2)))


# -- the command line --------------------------------------------------------------------------


def _cli(*args: str, cwd: Any = None) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_toolwire_models_lists_the_shipped_profiles() -> None:
    done = _cli("models", "--provider", "anthropic", "--json")
    assert done.returncode == 0, done.stderr
    families = [p["family"] for p in __import__("json").loads(done.stdout)["profiles"]]
    assert families[:2] == ["Claude Opus 4.5", "Claude Sonnet 4.5 / Haiku 4.5"]
    assert families[-1] == "default"


def test_toolwire_check_model_shows_the_profile_and_the_answers_fallback(tmp_path: Any) -> None:
    (tmp_path / "answers.py").write_text(
        "from __future__ import annotations\nfrom pydantic import BaseModel\n\n\n"
        "class Node(BaseModel):\n    name: str\n    kids: list[Node] = []\n"
    )
    done = _cli(
        "check",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
        "--output-type",
        "answers:Node",
        "--verbose",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "model `claude-sonnet-4-5`: anthropic profile `Claude Sonnet 4.5 / Haiku 4.5`"
        in done.stdout
    )
    assert "refuses: seed, temperature with top_p" in done.stdout
    assert "tool `answer (answers:Node)` for anthropic (input_schema)" in done.stdout
    assert "native_output_fallback" in done.stdout
    bad = _cli("check", "--provider", "openai", "--output-type", "answers:Node", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--output-type needs --model" in bad.stderr


GOOD = [
    profiles.ModelProfile(provider="acme", family="Acme 1", match=("acme-1*",), temperature=False)
]
NOT_PROFILES = ["not a profile"]


def test_profiles_from_entry_points_and_a_broken_one_is_skipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib_metadata

    here = __name__
    points = importlib_metadata.EntryPoints(
        [
            importlib_metadata.EntryPoint("a-good", f"{here}:GOOD", "toolwire.profiles"),
            importlib_metadata.EntryPoint("b-wrong", f"{here}:NOT_PROFILES", "toolwire.profiles"),
            importlib_metadata.EntryPoint("c-missing", "no_such_module_xyz:P", "toolwire.profiles"),
        ]
    )
    from toolwire._plugins import entrypoints  # the one reader of installed entry points

    cache = {**entrypoints._entry_points(), "toolwire.profiles": tuple(points)}
    monkeypatch.setattr(entrypoints, "_EP_CACHE", cache)
    _profiles._reset_for_tests()
    assert profiles.profile_for("acme", "acme-1-large").family == "Acme 1"
    assert "model profiles `b-wrong`" in caplog.text
    assert "not a ModelProfile" in caplog.text
    assert "model profiles `c-missing`" in caplog.text


# -- every setting through every shipped profile ---------------------------------------------


def _model_of(glob: str) -> str:
    """A model name a family's glob matches (``gpt-5.[1-9]-*`` -> ``gpt-5.1-x``)."""
    name = glob.replace("[1-9]", "1").replace("?", "1").replace("*", "x")
    return name.lstrip("x") or "x"


def _family_models() -> list[tuple[str, str, profiles.ModelProfile]]:
    out = []
    for p in profiles.profiles():
        if p.provider not in ("openai", "anthropic", "gemini"):
            continue
        model = "mystery-9" if p.family == "default" else _model_of(p.match[0])
        if p.provider == "anthropic" and p.family == "default":
            model = "claude-sonnet-9"
        out.append((p.provider, model, p))
    return out


SETTINGS = [
    ("temperature", tw.ModelSettings(temperature=0.4)),
    ("top_p", tw.ModelSettings(top_p=0.96)),
    ("temperature with top_p", tw.ModelSettings(temperature=0.4, top_p=0.96)),
    ("stop", tw.ModelSettings(stop=["END"])),
    ("reasoning_effort low", tw.ModelSettings(reasoning_effort="low")),
    ("reasoning_effort minimal", tw.ModelSettings(reasoning_effort="minimal")),
]


def _takes(p: profiles.ModelProfile, what: str) -> bool:
    if what == "temperature with top_p":
        return p.temperature and p.top_p and p.temperature_with_top_p
    if what.startswith("reasoning_effort"):
        return what.split()[1] in p.reasoning_efforts
    return bool(getattr(p, what))


def _body(provider_name: str, model: str, settings: tw.ModelSettings) -> dict[str, Any]:
    turn = _turn(settings)
    session = _session()
    if provider_name == "openai":
        with OpenAIChatProvider(model, api_key="k", base_url="http://127.0.0.1:9") as p:
            return p.build_body(session, turn, stream=False)
    if provider_name == "anthropic":
        with AnthropicProvider(model, api_key="k", base_url="http://127.0.0.1:9") as a:
            return a.build_body(session, turn, stream=False)
    with GeminiProvider(model, api_key="k", base_url="http://127.0.0.1:9") as g:
        return g.build_body(session, turn)


@pytest.mark.parametrize(("what", "settings"), SETTINGS, ids=[s[0] for s in SETTINGS])
@pytest.mark.parametrize(
    ("provider_name", "model", "profile"),
    _family_models(),
    ids=[f"{p}:{m}" for p, m, _ in _family_models()],
)
def test_every_setting_through_every_profile(
    provider_name: str,
    model: str,
    profile: profiles.ModelProfile,
    what: str,
    settings: tw.ModelSettings,
) -> None:
    assert profiles.profile_for(provider_name, model) == profile
    if not _takes(profile, what):
        with pytest.raises(UnsupportedSettingError, match=f"model `{model}` cannot take"):
            _body(provider_name, model, settings)
        return
    body = _body(provider_name, model, settings)
    if provider_name == "openai":
        validate.validate_openai_chat_request(body)
        assert openai_rules(body) is None or profile.family == "default"
    elif provider_name == "anthropic":
        assert anthropic_rules(body) is None or profile.family == "default"
        body.pop("temperature", None)  # API version 2023-06-01's, not in the 2.x SDK's types
        body.pop("top_p", None)
        validate.validate_anthropic_request(body)
    else:
        validate.validate_gemini_request(body)
        assert gemini_rules(body, model) is None or profile.family == "default"
