"""Which MCP servers to use: a :class:`ServerSpec` per server, from code or from the
``mcpServers`` JSON the MCP clients use (Claude Desktop, Cursor, VS Code).

Config files are outside input: a malformed file is a :class:`ConfigError` naming the
file and the key, and secrets (header values, the bearer token) never appear in a repr,
a log line or an error message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from toolwire.exceptions import PluginError

__all__ = ["CONFIG_ENV", "ConfigError", "ServerSpec", "config_paths", "load_config"]

CONFIG_ENV = "TOOLWIRE_MCP_CONFIG"
_MAX_CONFIG_BYTES = 1 << 20  # a config file is small; a bigger one is a mistake
_DEFAULT_TIMEOUT = 60.0
_DEFAULT_CONNECT_TIMEOUT = 30.0


class ConfigError(PluginError):
    """An MCP server configuration that cannot be used; the message names the file and key."""


def _mask(mapping: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k!r}: '****'" for k in mapping) + "}"


@attrs.frozen
class ServerSpec:
    """How to reach one MCP server.

    Either ``command`` (a stdio server: ``args``, ``env`` added to this process's
    environment, ``cwd``) or ``url`` (Streamable HTTP: ``headers``; ``bearer_token_env``
    names an environment variable holding a token sent as ``Authorization: Bearer``,
    read when the connection opens). ``timeout`` bounds each tool call and each
    ``tools/list`` page; ``connect_timeout`` bounds start-up and ``initialize``.
    ``annotations``: ``"trust"`` maps the server's tool annotations to effect,
    idempotency and the network capability; ``"ignore"`` treats every tool as a
    destructive, non-idempotent, open-world tool (what the spec says to assume of a
    server you do not trust).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    env: Mapping[str, str] = attrs.field(factory=dict, repr=_mask)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=_mask)
    bearer_token_env: str | None = None
    timeout: float = _DEFAULT_TIMEOUT
    connect_timeout: float = _DEFAULT_CONNECT_TIMEOUT
    annotations: Literal["trust", "ignore"] = "trust"

    def __attrs_post_init__(self) -> None:
        where = f"MCP server `{self.name}`"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"an MCP server needs a non-empty name, got {self.name!r}")
        if (self.command is None) == (self.url is None):
            raise ConfigError(f"{where}: give exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: `url` must start with http:// or https://")
        for value, what in ((self.timeout, "timeout"), (self.connect_timeout, "connect_timeout")):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{where}: `{what}` must be a positive number of seconds")
        if self.annotations not in ("trust", "ignore"):
            raise ConfigError(f"{where}: `annotations` must be 'trust' or 'ignore'")

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def identity(self) -> tuple[Any, ...]:
        """What makes two specs the same server (one connection per server per process)."""
        return (
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
            self.bearer_token_env,
        )


# -- the mcpServers file ------------------------------------------------------------------


def config_paths(cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where server configs are read from, in order (a later file's server of the same
    name replaces an earlier one's): ``$XDG_CONFIG_HOME/toolwire/mcp.json`` (default
    ``~/.config``), ``./.toolwire/mcp.json``, then the file ``TOOLWIRE_MCP_CONFIG`` names."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    paths = [
        Path(xdg) / "toolwire" / "mcp.json",
        Path(cwd or os.getcwd()) / ".toolwire" / "mcp.json",
    ]
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        paths.append(Path(explicit))
    return paths


def _strs(value: Any, where: str, *, kind: str) -> Any:
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings")
        return tuple(value)
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where} must be an object of strings")
    return dict(value)


_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "type",
        "transport",
        "bearerTokenEnv",
        "timeout",
        "connectTimeout",
        "annotations",
        "disabled",
        "description",
    }
)


def spec_from_entry(name: str, entry: Any, source: str) -> ServerSpec | None:
    """One ``mcpServers`` entry as a ServerSpec (None when ``"disabled": true``)."""
    where = f"{source}: mcpServers.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object, got {type(entry).__name__}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key `{unknown[0]}` (known: {', '.join(sorted(_KEYS))})"
        )
    if entry.get("disabled") is True:
        return None
    fields: dict[str, Any] = {"name": name}
    for key in ("command", "cwd", "url", "bearerTokenEnv"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key]):
            raise ConfigError(f"{where}.{key} must be a non-empty string")
    if "command" in entry:
        fields["command"] = entry["command"]
    if "url" in entry:
        fields["url"] = entry["url"]
    if "cwd" in entry:
        fields["cwd"] = entry["cwd"]
    if "bearerTokenEnv" in entry:
        fields["bearer_token_env"] = entry["bearerTokenEnv"]
    if "args" in entry:
        fields["args"] = _strs(entry["args"], f"{where}.args", kind="list")
    if "env" in entry:
        fields["env"] = _strs(entry["env"], f"{where}.env", kind="map")
    if "headers" in entry:
        fields["headers"] = _strs(entry["headers"], f"{where}.headers", kind="map")
    for key, attr in (("timeout", "timeout"), ("connectTimeout", "connect_timeout")):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{where}.{key} must be a positive number of seconds")
            fields[attr] = float(value)
    if "annotations" in entry:
        if entry["annotations"] not in ("trust", "ignore"):
            raise ConfigError(f"{where}.annotations must be 'trust' or 'ignore'")
        fields["annotations"] = entry["annotations"]
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise ConfigError(f"{where}.type must be 'stdio' or 'http' (Streamable HTTP), got {kind!r}")
    try:
        return ServerSpec(**fields)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def read_config_file(path: Path) -> dict[str, ServerSpec]:
    """The servers one file configures (empty when the file does not exist)."""
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the MCP config: {exc.strerror or exc}") from None
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: the MCP config is over {_MAX_CONFIG_BYTES} bytes")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the MCP config must be a JSON object")
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise ConfigError(f"{path}: no `mcpServers` object")
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers must be an object of servers")
    specs: dict[str, ServerSpec] = {}
    for name, entry in servers.items():
        spec = spec_from_entry(name, entry, str(path))
        if spec is not None:
            specs[name] = spec
    return specs


def load_config(paths: Iterable[Path] | None = None) -> dict[str, ServerSpec]:
    """Every configured server, by name, from :func:`config_paths` (or ``paths``)."""
    specs: dict[str, ServerSpec] = {}
    for path in config_paths() if paths is None else paths:
        specs.update(read_config_file(Path(path)))
    return specs
