"""Model profiles: what each model family of a provider takes, as data.

An API's rules differ per model family (a reasoning model refuses ``temperature``, a model
without the effort parameter refuses ``effort``, an older Gemini refuses
``thinkingLevel``). Each provider distribution ships its families in a versioned TOML file
(``profiles.toml`` in the package, ``format = "toolwire.profiles/1"``); an adapter looks
up the profile of the request's model and refuses a setting the model cannot take before
anything is sent, naming the model, the setting and what it takes instead
(``ModelSettings(strict=False)`` drops such a setting with a warning instead).

A model no profile matches gets its provider's ``[default]`` profile. An application adds
or overrides profiles in code (:func:`register_profile`), in ``toolwire.toml`` (the user's,
``$XDG_CONFIG_HOME/toolwire/toolwire.toml``, or the file ``TOOLWIRE_CONFIG`` names:
``[[profiles]]`` tables), or from an installed distribution (the ``toolwire.profiles``
entry point). Code wins over toolwire.toml, which wins over distributions, which win over
the shipped tables; a malformed toolwire.toml is a ProfileError at every lookup until fixed.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import threading
import tomllib
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from toolwire._errors import ProfileError, UnsupportedSettingError, UsageError
from toolwire._exports import publish
from toolwire._files import read_capped
from toolwire._plugins.entrypoints import PROFILES_GROUP

__all__ = [
    "FORMAT",
    "ModelProfile",
    "apply_profile",
    "load_profiles",
    "model_key",
    "profile_for",
    "profiles",
    "register_profile",
    "setting_problems",
]

logger = logging.getLogger("toolwire.profiles")

FORMAT = "toolwire.profiles/1"
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _globs(_: Any, attr: Any, value: tuple[str, ...]) -> None:
    if not value or not all(isinstance(g, str) and g for g in value):
        raise UsageError(f"ModelProfile.{attr.name} must hold one or more non-empty globs")


def _efforts(_: Any, __: Any, value: tuple[str, ...]) -> None:
    wrong = [v for v in value if v not in _EFFORTS]
    if wrong:
        raise UsageError(f"ModelProfile.reasoning_efforts: unknown levels {wrong}")


@attrs.frozen(kw_only=True)
class ModelProfile:
    """What one model family of one provider takes.

    ``match``: globs on the model's name (lower case, without a ``provider/`` or ``ft:``
    prefix or a ``models/`` path). ``temperature``, ``top_p``, ``stop``, ``seed``: whether the
    model takes them; ``temperature_with_top_p``: whether it takes both in one request.
    ``reasoning_efforts``: the effort levels it takes (empty: none: it is not a reasoning
    model, or has no effort setting). ``thinking``: it takes extended thinking (a budget or
    adaptive). ``native_output``: it takes native structured output, in ``output_dialect``.
    ``parallel_tool_calls``: it takes the switch. ``max_tokens_field``: the request field for
    the output-token limit. ``result_media``: how tool-result media goes (the adapter's
    word). ``effort_hint``: what to use instead of a reasoning effort it refuses.
    ``source``: where the rules come from (a documentation page, an SDK docstring).
    """

    provider: str
    family: str
    match: tuple[str, ...] = attrs.field(converter=_strings, validator=_globs)
    temperature: bool = True
    top_p: bool = True
    temperature_with_top_p: bool = True
    stop: bool = True
    seed: bool = True
    reasoning_efforts: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=_efforts
    )
    thinking: bool = False
    native_output: bool = False
    output_dialect: str = ""
    parallel_tool_calls: bool = True
    max_tokens_field: str = ""
    result_media: str = ""
    effort_hint: str = ""
    source: str = ""

    def matches(self, model: str) -> bool:
        key = model_key(model)
        return any(fnmatch.fnmatchcase(key, g.lower()) for g in self.match)

    @property
    def reasoning(self) -> bool:
        """Whether the model takes a reasoning effort."""
        return bool(self.reasoning_efforts)


def model_key(model: str) -> str:
    """The name profiles match: lower case, without ``ft:``, a ``provider/`` prefix or a
    ``models/`` path: ``openai/gpt-5`` is ``gpt-5``, ``ft:gpt-4.1:org::x`` is ``gpt-4.1:org::x``."""
    name = model.strip().lower()
    name = name.removeprefix("ft:")
    return name.rpartition("/")[2]


# -- the registry ----------------------------------------------------------------------------

_LOCK = threading.Lock()
_SHIPPED: dict[str, tuple[tuple[ModelProfile, ...], ModelProfile]] = {}
_REGISTERED: list[ModelProfile] = []
_CONFIG_READ = False


def register_profile(profile: ModelProfile) -> None:
    """Add a profile (or override a shipped one): it wins over every profile registered
    before it and over the provider's own, for the models it matches."""
    if not isinstance(profile, ModelProfile):
        raise UsageError(f"register_profile takes a ModelProfile, got {type(profile).__name__}")
    with _LOCK:
        _REGISTERED.append(profile)
    profile_for.cache_clear()


def _parse_profile(
    entry: Any, provider: str | None, where: str, base: Mapping[str, Any]
) -> ModelProfile:
    if not isinstance(entry, Mapping):
        raise ProfileError(f"{where} must be a table, got {type(entry).__name__}")
    known = {a.name for a in attrs.fields(ModelProfile)}
    extra = sorted(set(entry) - known)
    if extra:
        raise ProfileError(f"{where}: unknown keys {extra}; known: {', '.join(sorted(known))}")
    values = {**base, **entry}
    if provider is not None:
        values.setdefault("provider", provider)
    for key, value in values.items():
        field = attrs.fields_dict(ModelProfile)[key]
        want = bool if field.type in ("bool", bool) else None
        if want is bool and not isinstance(value, bool):
            raise ProfileError(f"{where}.{key} must be true or false, got {value!r:.40}")
        if key in ("match", "reasoning_efforts") and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise ProfileError(f"{where}.{key} must be a list of strings")
        if (
            key not in ("match", "reasoning_efforts")
            and want is None
            and not isinstance(value, str)
        ):
            raise ProfileError(f"{where}.{key} must be a string, got {value!r:.40}")
    try:
        return ModelProfile(**values)
    except (UsageError, TypeError) as exc:
        raise ProfileError(f"{where}: {exc}") from None


def load_profiles(
    text: str, *, where: str = "profiles"
) -> tuple[tuple[ModelProfile, ...], ModelProfile | None]:
    """Parse a profiles file (``format = "toolwire.profiles/1"``, ``provider``, a
    ``[default]`` table and ``[[profile]]`` tables; a key a table leaves out takes
    :class:`ModelProfile`'s default, never another table's); raises ProfileError naming the
    bad key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{where} is not valid TOML: {exc}") from None
    if data.get("format") != FORMAT:
        raise ProfileError(f"{where}: format must be {FORMAT!r}, got {data.get('format')!r}")
    provider = data.get("provider")
    if not isinstance(provider, str) or not provider:
        raise ProfileError(f"{where}: provider must be a non-empty string")
    extra = sorted(set(data) - {"format", "provider", "default", "profile"})
    if extra:
        raise ProfileError(f"{where}: unknown keys {extra}")
    default_raw = data.get("default")
    default = None
    if default_raw is not None:
        default = _parse_profile(
            {"family": "default", "match": ["*"], **default_raw}, provider, f"{where}.default", {}
        )
    entries = data.get("profile", [])
    if not isinstance(entries, list):
        raise ProfileError(f"{where}.profile must be an array of tables ([[profile]])")
    made = tuple(
        _parse_profile(e, provider, f"{where}.profile[{i}]", {}) for i, e in enumerate(entries)
    )
    return made, default


def _shipped(provider: str) -> tuple[tuple[ModelProfile, ...], ModelProfile]:
    with _LOCK:
        got = _SHIPPED.get(provider)
    if got is not None:
        return got
    package = _PACKAGES.get(provider)
    made: tuple[ModelProfile, ...] = ()
    default = ModelProfile(provider=provider, family="default", match=("*",))
    if package is not None:
        try:
            text = resources.files(package).joinpath("profiles.toml").read_text("utf-8")
        except (ModuleNotFoundError, FileNotFoundError):
            text = None
        if text is not None:
            found, dflt = load_profiles(text, where=f"{package}/profiles.toml")
            made = tuple(p for p in found if p.provider == provider)
            default = dflt or default
    with _LOCK:
        _SHIPPED[provider] = (made, default)
    return made, default


#: Profile provider (the models' vendor: Chat and Responses share OpenAI's) -> the package
#: whose profiles.toml holds its families.
_PACKAGES: dict[str, str] = {
    "openai": "toolwire_openai",
    "anthropic": "toolwire_anthropic",
    "gemini": "toolwire_gemini",
}


def _installed(provider: str) -> bool:
    """Whether the distribution that ships ``provider``'s profiles is installed."""
    import importlib.util

    package = _PACKAGES.get(provider)
    return package is not None and importlib.util.find_spec(package) is not None


def _config_file(environ: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    named = env.get("TOOLWIRE_CONFIG", "").strip()
    if named:
        return Path(named).expanduser()
    home = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(home) / "toolwire" / "toolwire.toml"
    return path if path.is_file() else None


_MAX_CONFIG = 1024 * 1024


ENTRY_POINT_GROUP = PROFILES_GROUP


def _entry_point_profiles() -> list[ModelProfile]:
    """The profiles installed distributions ship (entry-point group ``toolwire.profiles``:
    a list of ModelProfile, or a function returning one), in name order. One that cannot
    be loaded is skipped with an error logged: the shipped profiles still hold."""
    from toolwire._plugins.entrypoints import _entry_points

    out: list[ModelProfile] = []
    points = _entry_points()[ENTRY_POINT_GROUP]
    for ep in sorted(points, key=lambda e: e.name):
        try:
            value = ep.load()
            made = value() if callable(value) else value
            found = list(made)
            if not all(isinstance(p, ModelProfile) for p in found):
                raise ProfileError("it gave something that is not a ModelProfile")
        except Exception as exc:  # a plugin's failure is the plugin's: reported, skipped
            logger.error("model profiles `%s` (%s) are not used: %s", ep.name, ep.value, exc)
            continue
        out.extend(found)
    return out


def _config_profiles() -> list[ModelProfile]:
    """The ``[[profiles]]`` of the user's toolwire.toml; a malformed file raises
    ProfileError (every time it is looked at, until it is fixed), and none of it is used."""
    path = _config_file()
    if path is None:
        return []
    raw = read_capped(path, _MAX_CONFIG, str(path), ProfileError, private=True)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path} is not valid TOML: {exc}") from None
    entries = data.get("profiles", [])
    if not isinstance(entries, list):
        raise ProfileError(f"{path}: profiles must be an array of tables ([[profiles]])")
    out = []
    for i, entry in enumerate(entries):
        where = f"{path}: profiles[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("provider"), str):
            raise ProfileError(f'{where} needs provider = "NAME"')
        out.append(_parse_profile(entry, None, where, {}))
    return out


def _read_config() -> None:
    """The profiles of installed distributions, then the user's toolwire.toml's (which win
    over them; what the application registers in code wins over both), read once."""
    global _CONFIG_READ
    if _CONFIG_READ:
        return
    found = _entry_point_profiles() + _config_profiles()
    with _LOCK:
        if not _CONFIG_READ:  # another thread may have read it meanwhile
            _REGISTERED[:0] = found
            _CONFIG_READ = True
    profile_for.cache_clear()


@functools.lru_cache(maxsize=512)
def profile_for(provider: str, model: str) -> ModelProfile:
    """The profile of ``model`` at ``provider``: the last registered one that matches, else
    the provider's first shipped one that matches, else its ``[default]``."""
    _read_config()
    with _LOCK:
        registered = tuple(_REGISTERED)
    for p in reversed(registered):
        if p.provider == provider and p.matches(model):
            return p
    shipped, default = _shipped(provider)
    for p in shipped:
        if p.matches(model):
            return p
    return default


def profiles(provider: str | None = None) -> list[ModelProfile]:
    """Every profile (the registered ones first), of one provider or of all."""
    _read_config()
    names = sorted({*_PACKAGES, *(p.provider for p in _REGISTERED)})
    out: list[ModelProfile] = []
    with _LOCK:
        registered = list(_REGISTERED)
    out.extend(p for p in reversed(registered) if provider in (None, p.provider))
    for name in names:
        if provider not in (None, name) or not _installed(name):
            continue
        shipped, default = _shipped(name)
        out.extend(shipped)
        out.append(default)
    return out


def _takes(profile: ModelProfile) -> str:
    efforts = ", ".join(profile.reasoning_efforts)
    return f"reasoning_effort {efforts}" if efforts else "no reasoning_effort"


def setting_problems(profile: ModelProfile, settings: Any) -> list[tuple[str, str]]:
    """(setting, why) for each setting in ``settings`` the profile's models cannot take."""
    out: list[tuple[str, str]] = []
    fam = f"{profile.family} models"
    sampling_alt = (
        f" (they reason: use reasoning_effort {', '.join(profile.reasoning_efforts)})"
        if profile.reasoning_efforts
        else ""
    )
    if settings.temperature is not None and not profile.temperature:
        out.append(("temperature", f"{fam} take no temperature{sampling_alt}"))
    if settings.top_p is not None and not profile.top_p:
        out.append(("top_p", f"{fam} take no top_p{sampling_alt}"))
    if (
        settings.temperature is not None
        and settings.top_p is not None
        and profile.temperature
        and profile.top_p
        and not profile.temperature_with_top_p
    ):
        out.append(("top_p", f"{fam} take temperature or top_p, not both: set one"))
    if settings.stop is not None and not profile.stop:
        out.append(("stop", f"{fam} take no stop sequences"))
    if settings.seed is not None and not profile.seed:
        out.append(("seed", f"{fam} take no seed"))
    effort = settings.reasoning_effort
    if effort is not None and effort not in profile.reasoning_efforts:
        hint = f"; {profile.effort_hint}" if profile.effort_hint else ""
        out.append(("reasoning_effort", f"{fam} take {_takes(profile)}{hint}"))
    if settings.parallel_tool_calls is not None and not profile.parallel_tool_calls:
        out.append(("parallel_tool_calls", f"{fam} take no parallel_tool_calls switch"))
    return out


def apply_profile(
    settings: Any, profile: ModelProfile, model: str, extra: Iterable[tuple[str, str]] = ()
) -> Any:
    """``settings`` as ``model`` can take them: a setting its profile (or ``extra``, an
    adapter's own (setting, why) rules) says it cannot take raises UnsupportedSettingError
    naming the model, the setting and why; with ``settings.strict`` False it is left out,
    with a warning, instead."""
    problems = setting_problems(profile, settings) + list(extra)
    if not problems:
        return settings
    if settings.strict is False:
        for name, why in problems:
            logger.warning(
                "model `%s`: ModelSettings.%s left out (strict=False): %s", model, name, why
            )
        return attrs.evolve(settings, **{name: None for name, _ in problems})
    name, why = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise UnsupportedSettingError(
        f"model `{model}` cannot take ModelSettings.{name}: {why}{more}. Nothing was sent; "
        f"leave it unset, or pass ModelSettings(strict=False) to leave such settings out"
    )


def _reset_for_tests(extra: Iterable[ModelProfile] = ()) -> None:
    global _CONFIG_READ
    with _LOCK:
        _REGISTERED[:] = list(extra)
        _SHIPPED.clear()
        _CONFIG_READ = False
    profile_for.cache_clear()


publish(globals())
