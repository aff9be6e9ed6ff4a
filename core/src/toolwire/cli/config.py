"""The command line's settings: the ``[cli]`` table of the user's ``toolwire.toml``.

Each value comes from, in order of precedence: the command line, the environment, the
file, the default; :func:`cli_config` says which for each (``toolwire config`` prints it).
The file is the user's own (``$XDG_CONFIG_HOME/toolwire/toolwire.toml`` or the file
``TOOLWIRE_CONFIG`` names), never one in the current directory: a cloned repository
does not choose the provider, the logs path or the MCP servers.

A key the table does not know, or a value of the wrong type, is a usage error naming the
file, the key and what it takes (with "did you mean" for a typo): a setting that is
silently ignored is worse than one refused.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from toolwire._errors import UsageError
from toolwire._files import read_capped

__all__ = ["CliConfig", "Setting", "cli_config", "config_file", "default_logs_path"]

_MAX_FILE = 1024 * 1024
_COLORS = ("auto", "always", "never")


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's toolwire configuration directory: ``$XDG_CONFIG_HOME/toolwire``, else
    ``~/.config/toolwire`` (toolwire.toml, the stored keys and aliases)."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(home) / "toolwire"


def config_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user's toolwire.toml is (whether or not it exists)."""
    env = os.environ if environ is None else environ
    named = env.get("TOOLWIRE_CONFIG", "").strip()
    if named:
        return Path(named).expanduser()
    return config_dir(env) / "toolwire.toml"


def default_logs_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/toolwire/logs.db`` (``~/.local/share`` by default)."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(home) / "toolwire" / "logs.db"


@attrs.frozen
class Setting:
    """One value and where it came from (``default``, ``FILE [cli]``, ``$VAR``, ``--flag``)."""

    value: Any
    source: str


#: key -> (what it takes, its environment variable or None).
_KEYS: dict[str, tuple[str, str | None]] = {
    "provider": ("a provider's name", "TOOLWIRE_PROVIDER"),
    "model": ("a model name", "TOOLWIRE_MODEL"),
    "base_url": ("a URL", None),
    "api_key_env": ("an environment variable's name", None),
    "max_rounds": ("a whole number of at least 1", None),
    "log": ("true or false", None),
    "logs_path": ("a file path", "TOOLWIRE_LOGS_PATH"),
    "color": ("auto, always or never", None),
    "mcp_config": ("the path of an mcpServers JSON file", None),
    "settings": ("a table of model settings (temperature, max_output_tokens, ...)", None),
}


@attrs.frozen
class CliConfig:
    """The CLI's settings, each with its source; ``path`` is the file looked at."""

    path: Path
    values: Mapping[str, Setting]

    def __getitem__(self, key: str) -> Any:
        return self.values[key].value

    def source(self, key: str) -> str:
        return self.values[key].source


def _defaults(environ: Mapping[str, str]) -> dict[str, Any]:
    return {
        "provider": "test",
        "model": None,
        "base_url": None,
        "api_key_env": None,
        "max_rounds": 8,
        "log": True,
        "logs_path": str(default_logs_path(environ)),
        "color": "auto",
        "mcp_config": None,
        "settings": {},
    }


def _checked(key: str, value: Any, where: str) -> Any:
    what = _KEYS[key][0]

    def wrong() -> UsageError:
        return UsageError(f"{where}: `{key}` takes {what}, got {value!r}")

    if key == "max_rounds":
        if type(value) is not int or value < 1:
            raise wrong()
    elif key == "log":
        if type(value) is not bool:
            raise wrong()
    elif key == "color":
        if value not in _COLORS:
            raise wrong()
    elif key == "settings":
        if not isinstance(value, Mapping):
            raise wrong()
        from toolwire._output import ModelSettings

        fields = [f.name for f in attrs.fields(ModelSettings)]
        for name in value:
            if name not in fields:
                close = difflib.get_close_matches(name, fields, n=1)
                hint = f"; did you mean `{close[0]}`?" if close else ""
                raise UsageError(
                    f"{where}: settings.{name} is not a model setting "
                    f"(known: {', '.join(fields)}){hint}"
                )
        try:
            ModelSettings(**dict(value))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{where}: settings: {exc}") from None
        return dict(value)
    elif not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise wrong()
    if key in ("logs_path", "mcp_config"):
        return str(Path(value).expanduser())
    return value


def option_settings(pairs: Iterable[Sequence[str]], over: Mapping[str, Any]) -> dict[str, Any]:
    """``-o NAME VALUE`` pairs as model settings over ``over`` (the file's): each value
    read as JSON where it is JSON (``0.2``, ``false``, ``["END"]``), else as the text it
    is (``-o reasoning_effort low``). UsageError naming a setting that is no model
    setting, or a value it cannot take."""
    merged = dict(over)
    for name, text in pairs:
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        merged[name] = value
    return dict(_checked("settings", merged, "-o"))


def _file_table(path: Path) -> dict[str, Any]:
    if not path.is_file():
        if path.exists():
            raise UsageError(f"{path}: the configuration is not a file")
        return {}
    raw = read_capped(path, _MAX_FILE, str(path), UsageError, private=True)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    table = data.get("cli", {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: `cli` must be a table ([cli])")
    return table


def _file_values(path: Path) -> dict[str, Any]:
    """The file's values, checked: every mistake in it said at once (one per run made
    a file with several take as many runs to fix)."""
    table = _file_table(path)
    where = f"{path} [cli]"
    values: dict[str, Any] = {}
    mistakes: list[str] = []
    for key, value in table.items():
        if key not in _KEYS:
            close = difflib.get_close_matches(key, list(_KEYS), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            mistakes.append(f"unknown key `{key}` (known: {', '.join(_KEYS)}){hint}")
            continue
        try:
            values[key] = _checked(key, value, where)
        except UsageError as exc:
            mistakes.append(str(exc).removeprefix(f"{where}: "))
    if len(mistakes) == 1:
        raise UsageError(f"{where}: {mistakes[0]}")
    if mistakes:
        listed = "".join(f"\n  - {m}" for m in mistakes)
        raise UsageError(f"{where}: {len(mistakes)} mistakes:{listed}")
    return values


def cli_config(
    given: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> CliConfig:
    """The CLI's settings: ``given`` (the command line's, by key, with the flag that gave
    each as ``(value, "--flag")``) over the environment over the file over the defaults.
    A malformed file or value raises UsageError naming it."""
    env = os.environ if environ is None else environ
    path = config_file(env)
    values = {k: Setting(v, "default") for k, v in _defaults(env).items()}
    where = f"{path} [cli]"
    for key, value in _file_values(path).items():
        values[key] = Setting(value, where)
    for key, (_, var) in _KEYS.items():
        if var and env.get(var, "").strip():
            values[key] = Setting(_checked(key, env[var].strip(), f"${var}"), f"${var}")
    for key, (value, flag) in (given or {}).items():
        if value is not None:
            values[key] = Setting(value, flag)
    return CliConfig(path, values)


def use_mcp_config(environ: dict[str, str] | None = None) -> str | None:
    """Point toolwire-mcp at the ``mcp_config`` file the user's toolwire.toml names,
    unless ``TOOLWIRE_MCP_CONFIG`` names one already; the path set, if any."""
    env: Any = os.environ if environ is None else environ
    if env.get("TOOLWIRE_MCP_CONFIG"):
        return None
    path = cli_config(environ=env)["mcp_config"]
    if path:
        env["TOOLWIRE_MCP_CONFIG"] = path
    return path if isinstance(path, str) else None
