"""Which MCP servers to use: a :class:`ServerSpec` per server, from code or from the
``mcpServers`` JSON the MCP clients use (Claude Desktop, Cursor, VS Code).

Config files are outside input: a malformed file is a :class:`ConfigError` naming the
file and the key, and secrets (header values, the bearer token) never appear in a repr,
a log line or an error message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from toolwire.adapters import owner_only, write_private
from toolwire.exceptions import PluginError

__all__ = [
    "CONFIG_ENV",
    "ConfigError",
    "ServerSpec",
    "Skipped",
    "config_paths",
    "is_trusted",
    "load_config",
    "load_config_report",
    "project_config_path",
    "trust_file",
    "trust_store_path",
    "untrust_file",
]

logger = logging.getLogger("toolwire.mcp")

CONFIG_ENV = "TOOLWIRE_MCP_CONFIG"
_TRUST_FILE = "mcp-trust.json"
_MAX_CONFIG_BYTES = 1 << 20  # a config file is small; a bigger one is a mistake
_DEFAULT_TIMEOUT = 60.0
_DEFAULT_CONNECT_TIMEOUT = 30.0
_DEFAULT_MAX_CALL_TIME = 600.0


class ConfigError(PluginError):
    """An MCP server configuration that cannot be used; the message names the file and key."""


def _mask(mapping: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k!r}: '****'" for k in mapping) + "}"


def _roots_tuple(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise ConfigError("`roots` is a list of paths or file:// URIs, not one")
    return tuple(str(v) if isinstance(v, os.PathLike) else v for v in value)


@attrs.frozen
class ServerSpec:
    """How to reach one MCP server.

    Either ``command`` (a stdio server: ``args``, ``env`` added to this process's
    environment, ``cwd``) or ``url`` (Streamable HTTP: ``headers``; ``bearer_token_env``
    names an environment variable holding a token sent as ``Authorization: Bearer``,
    read when the connection opens). ``timeout`` bounds each request and each
    ``tools/list`` page, and a tool call's silence: each progress notification the
    server sends restarts it, up to ``max_call_time`` for the whole call (600 s);
    ``connect_timeout`` bounds start-up and ``initialize``.
    ``annotations``: ``"trust"`` maps the server's tool annotations to effect,
    idempotency and the network capability; ``"ignore"`` treats every tool as a
    destructive, non-idempotent, open-world tool (what the spec says to assume of a
    server you do not trust). ``protocol``: ``"auto"`` (2026-07-28 where the server
    speaks it, else the 2025-11-25 handshake) or ``"legacy"`` (the handshake only). A
    task the server runs (either version's tasks) is followed to its result, its status
    reported as progress, which moves the call's silence deadline on.

    Authorization, for an HTTP server (each field's ``mcpServers`` JSON name after it):

    - ``auth`` (``auth``): ``"oauth"`` (a user logs in, authorization code with PKCE),
      ``"client_credentials"`` (a service, no user) or ``"cross_app"`` (enterprise-managed,
      SEP-990: the user's ID token from the organisation's identity provider is exchanged
      for an ID-JAG, then for an access token); None: no OAuth (``bearer_token_env``,
      ``bearerTokenEnv``, may still send a static token).
    - ``oauth_scope`` (``oauthScope``): the scope to ask for.
    - ``oauth_client_id`` (``oauthClientId``) and ``oauth_client_secret_env``
      (``oauthClientSecretEnv``, the variable holding its secret): a client registered
      beforehand, instead of dynamic registration.
    - ``oauth_client_metadata_url`` (``oauthClientMetadataUrl``): the HTTPS URL of this
      client's metadata document (SEP-991), its client ID where the server takes one.
    - ``oauth_private_key_env`` (``oauthPrivateKeyEnv``) and ``oauth_signing_algorithm``
      (``oauthSigningAlgorithm``, default RS256): for ``client_credentials`` with
      ``private_key_jwt``, the variable holding the PEM key that signs the assertions.
    - ``oauth_issuer`` (``oauthIssuer``): the authorization server the credentials
      belong to; a token is asked of it only.
    ``roots`` (``roots``): the directories this server may work in (``roots/list``), its
    own instead of the process's :func:`toolwire_mcp.set_roots`; ``()`` offers none.

    - ``idp_token_endpoint`` (``idpTokenEndpoint``), ``idp_client_id``
      (``idpClientId``), ``idp_client_secret_env`` (``idpClientSecretEnv``) and
      ``idp_id_token_env`` (``idpIdTokenEnv``): for ``cross_app``, the identity
      provider's token endpoint, this application's client there (and its secret's
      variable), and the variable holding the user's ID token (or
      :func:`toolwire_mcp.set_id_token_provider`).
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
    max_call_time: float = _DEFAULT_MAX_CALL_TIME
    #: ``"auto"``: the newest protocol both sides speak (2026-07-28, else the 2025-11-25
    #: handshake); ``"legacy"``: the handshake (``initialize``) only.
    protocol: Literal["auto", "legacy"] = "auto"
    #: The legacy HTTP+SSE transport (2024-11-05: a GET ``/sse`` stream and POSTed
    #: messages) instead of Streamable HTTP; None: when the URL's path ends in ``/sse``.
    sse: bool | None = None
    #: ``"oauth"``: log in with OAuth 2.1 when the server asks (see ``_oauth``); the
    #: scope to ask for, and a client registered beforehand (its ID, and the variable
    #: holding its secret, for a confidential client), instead of dynamic registration.
    auth: Literal["oauth", "client_credentials", "cross_app"] | None = None
    oauth_scope: str | None = None
    oauth_client_id: str | None = None
    oauth_client_secret_env: str | None = None
    #: The HTTPS URL of this client's metadata document (SEP-991): its client ID where
    #: the authorization server takes one, instead of registering.
    oauth_client_metadata_url: str | None = None
    #: ``auth="client_credentials"`` (a service, no user): the variable holding the PEM
    #: private key that signs its assertions (private_key_jwt), and their algorithm.
    oauth_private_key_env: str | None = None
    oauth_signing_algorithm: str = "RS256"
    #: The authorization server the client's credentials belong to: a token is asked of
    #: that server only (discovery leading elsewhere stops the flow).
    oauth_issuer: str | None = None
    #: ``auth="cross_app"`` (enterprise-managed authorization, SEP-990): the enterprise
    #: identity provider's token endpoint, this application's client ID there (and the
    #: variable holding its secret, if it has one), and the variable holding the user's
    #: ID token from it (or :func:`toolwire_mcp.set_id_token_provider`).
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret_env: str | None = None
    idp_id_token_env: str | None = None
    #: The directories this server is told it may work in (paths or ``file://`` URIs;
    #: ``()``: none), instead of the process's (:func:`toolwire_mcp.set_roots`, the
    #: default when None).
    roots: tuple[str, ...] | None = attrs.field(default=None, converter=_roots_tuple)

    def __attrs_post_init__(self) -> None:
        where = f"MCP server `{self.name}`"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"an MCP server needs a non-empty name, got {self.name!r}")
        if (self.command is None) == (self.url is None):
            raise ConfigError(f"{where}: give exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: `url` must start with http:// or https://")
        for value, what in (
            (self.timeout, "timeout"),
            (self.connect_timeout, "connect_timeout"),
            (self.max_call_time, "max_call_time"),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{where}: `{what}` must be a positive number of seconds")
        if self.roots is not None and not all(
            isinstance(r, str) and r and "\x00" not in r for r in self.roots
        ):
            raise ConfigError(f"{where}: `roots` must be paths or file:// URIs (strings)")
        if self.annotations not in ("trust", "ignore"):
            raise ConfigError(f"{where}: `annotations` must be 'trust' or 'ignore'")
        if self.auth not in (None, "oauth", "client_credentials", "cross_app"):
            raise ConfigError(
                f"{where}: `auth` must be 'oauth', 'client_credentials' or 'cross_app' "
                f"(or left out)"
            )
        if self.auth == "cross_app":
            missing = [
                name
                for name, value in (
                    ("oauth_client_id", self.oauth_client_id),
                    ("oauth_client_secret_env", self.oauth_client_secret_env),
                    ("oauth_issuer", self.oauth_issuer),
                    ("idp_token_endpoint", self.idp_token_endpoint),
                    ("idp_client_id", self.idp_client_id),
                )
                if not value
            ]
            if missing:
                raise ConfigError(
                    f"{where}: `cross_app` needs {', '.join(missing)} (the authorization "
                    f"server is configuration, not discovery)"
                )
            endpoint = self.idp_token_endpoint or ""
            if not endpoint.startswith(("https://", "http://127.0.0.1", "http://localhost")):
                raise ConfigError(
                    f"{where}: `idp_token_endpoint` must be an https URL (http only on "
                    f"127.0.0.1 or localhost)"
                )
        if self.auth == "client_credentials" and not (
            self.oauth_client_id and (self.oauth_client_secret_env or self.oauth_private_key_env)
        ):
            raise ConfigError(
                f"{where}: `client_credentials` needs the client's ID and its secret or "
                f"private key (oauth_client_id, oauth_client_secret_env or oauth_private_key_env)"
            )
        if self.auth is not None and self.url is None:
            raise ConfigError(f"{where}: `auth` applies to a server reached by `url`")
        if self.auth is not None and self.bearer_token_env:
            raise ConfigError(f"{where}: give `auth` or `bearer_token_env`, not both")
        oauth = (
            self.oauth_scope,
            self.oauth_client_id,
            self.oauth_client_secret_env,
            self.oauth_client_metadata_url,
            self.oauth_private_key_env,
            self.oauth_issuer,
            self.idp_token_endpoint,
            self.idp_client_id,
            self.idp_client_secret_env,
            self.idp_id_token_env,
        )
        if any(oauth) and self.auth is None:
            raise ConfigError(f"{where}: the oauth settings need `auth` set")

    @property
    def transport(self) -> Literal["stdio", "http", "sse"]:
        if self.command is not None:
            return "stdio"
        legacy = self.sse
        if legacy is None:
            from urllib.parse import urlsplit

            legacy = urlsplit(self.url or "").path.rstrip("/").endswith("/sse")
        return "sse" if legacy else "http"

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
            self.transport,
            self.auth,
            self.oauth_client_id,
            self.roots,  # told other roots: another server process
            self.protocol,  # another handshake: another connection
        )


# -- the mcpServers file ------------------------------------------------------------------


def _user_dir() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "toolwire"


def project_config_path(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The project's own file, ``./.toolwire/mcp.json``: outside input until trusted."""
    return Path(cwd or os.getcwd()) / ".toolwire" / "mcp.json"


def config_paths(cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where server configs are read from, in order (a later file's server of the same
    name replaces an earlier one's): ``./.toolwire/mcp.json`` (the project's, only once
    the user trusted it: see :func:`trust_file`), ``$XDG_CONFIG_HOME/toolwire/mcp.json``
    (default ``~/.config``; the user's own wins over the project's), then the file
    ``TOOLWIRE_MCP_CONFIG`` names."""
    paths = [project_config_path(cwd), _user_dir() / "mcp.json"]
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        paths.append(Path(explicit))
    return paths


# -- trust: a project's file starts nothing until the user trusted it ----------------------


def trust_store_path() -> Path:
    """The user's record of trusted project files: ``$XDG_CONFIG_HOME/toolwire/mcp-trust.json``."""
    return _user_dir() / _TRUST_FILE


def _digest(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _read_store() -> dict[str, str]:
    path = trust_store_path()
    try:
        # What it says decides which commands run: only if nobody else could write it.
        raw = private_bytes(path, _MAX_CONFIG_BYTES)
        if raw is None:
            return {}
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the MCP trust store: {exc.strerror or exc}"
        ) from None
    try:
        data = json.loads(raw) if len(raw) <= _MAX_CONFIG_BYTES else None
    except ValueError:
        data = None
    trusted = data.get("trusted") if isinstance(data, dict) else None
    if not isinstance(trusted, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in trusted.items()
    ):
        raise ConfigError(
            f'{path}: the MCP trust store is malformed (expected {{"trusted": {{path: '
            f"digest}}}}); delete it and trust the project files again"
        )
    return dict(trusted)


def _write_store(trusted: Mapping[str, str]) -> None:
    text = json.dumps({"version": 1, "trusted": dict(sorted(trusted.items()))}, indent=2)
    write_private(trust_store_path(), text + "\n")


def _key(path: Path) -> str:
    return str(path.expanduser().resolve())


def private_bytes(path: Path, limit: int, *, secret: bool = False) -> bytes | None:
    """At most ``limit + 1`` bytes of ``path`` (None: no such file), when the file is the
    user's own and nobody else may write it (``secret``: nor read it), as
    :func:`toolwire.adapters.owner_only` says. A file that says what runs (the user's MCP
    config, the trust store) or holds a secret (an OAuth token) is trusted only if nobody
    else could have written it: otherwise ``ConfigError``, and nothing is used."""
    try:
        with path.open("rb") as f:
            problem = owner_only(os.fstat(f.fileno()), secret=secret)
            if problem is not None:
                raise ConfigError(f"{path}: {problem}: not used; `chmod go-w` it if it is yours")
            return f.read(limit + 1)
    except FileNotFoundError:
        return None


def read_private_file(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """The bytes of a file that says who may call the gateway (its tokens, its OAuth
    settings): the user's own, writable by nobody else, at most ``limit`` bytes; else a
    UsageError that names ``what`` and the file."""
    from toolwire.exceptions import UsageError

    p = Path(path).expanduser()
    try:
        raw = private_bytes(p, limit)
    except (ConfigError, OSError) as exc:
        raise UsageError(f"{what} {p}: {exc}") from None
    if raw is None:
        raise UsageError(f"{what} {p}: no such file")
    if len(raw) > limit:
        raise UsageError(f"{what} {p} is over {limit:,} bytes")
    return raw


def _read_bytes(path: Path, *, private: bool = False) -> bytes | None:
    try:
        if private:
            raw = private_bytes(path, _MAX_CONFIG_BYTES)
            if raw is None:
                return None
        else:
            with path.open("rb") as f:
                raw = f.read(_MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the MCP config: {exc.strerror or exc}") from None
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: the MCP config is over {_MAX_CONFIG_BYTES} bytes")
    return raw


def is_trusted(path: str | os.PathLike[str], raw: bytes | None = None) -> bool:
    """Whether the user trusted ``path`` as it is now (a changed file is not trusted)."""
    p = Path(path)
    if raw is None:
        raw = _read_bytes(p)
        if raw is None:
            return False
    return _read_store().get(_key(p)) == _digest(raw)


def trust_file(path: str | os.PathLike[str] | None = None) -> dict[str, ServerSpec]:
    """Trust a project's MCP config as it is now (its SHA-256 goes in the user's trust
    store); returns the servers it configures. Raises ConfigError for a missing or
    malformed file: only a file that loads can be trusted."""
    p = Path(path) if path is not None else project_config_path()
    raw = _read_bytes(p)
    if raw is None:
        raise ConfigError(f"{p}: no such MCP config to trust")
    specs = _parse(raw, p)
    store = _read_store()
    store[_key(p)] = _digest(raw)
    _write_store(store)
    return specs


def untrust_file(path: str | os.PathLike[str] | None = None) -> bool:
    """Forget a trusted project file; True when it was trusted."""
    p = Path(path) if path is not None else project_config_path()
    store = _read_store()
    if store.pop(_key(p), None) is None:
        return False
    _write_store(store)
    return True


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
        "maxCallTime",
        "annotations",
        "protocol",
        "auth",
        "oauthScope",
        "oauthClientId",
        "oauthClientSecretEnv",
        "oauthClientMetadataUrl",
        "oauthPrivateKeyEnv",
        "oauthSigningAlgorithm",
        "oauthIssuer",
        "idpTokenEndpoint",
        "idpClientId",
        "idpClientSecretEnv",
        "idpIdTokenEnv",
        "disabled",
        "description",
        "roots",
    }
)


_TYPES = ("stdio", "http", "streamable-http", "streamableHttp", "sse")


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
    for key, attr in (
        ("auth", "auth"),
        ("oauthScope", "oauth_scope"),
        ("oauthClientId", "oauth_client_id"),
        ("oauthClientSecretEnv", "oauth_client_secret_env"),
        ("oauthClientMetadataUrl", "oauth_client_metadata_url"),
        ("oauthPrivateKeyEnv", "oauth_private_key_env"),
        ("oauthSigningAlgorithm", "oauth_signing_algorithm"),
        ("oauthIssuer", "oauth_issuer"),
        ("idpTokenEndpoint", "idp_token_endpoint"),
        ("idpClientId", "idp_client_id"),
        ("idpClientSecretEnv", "idp_client_secret_env"),
        ("idpIdTokenEnv", "idp_id_token_env"),
    ):
        if key in entry:
            if not isinstance(entry[key], str) or not entry[key]:
                raise ConfigError(f"{where}.{key} must be a non-empty string")
            fields[attr] = entry[key]
    if "args" in entry:
        fields["args"] = _strs(entry["args"], f"{where}.args", kind="list")
    if "roots" in entry:
        fields["roots"] = _strs(entry["roots"], f"{where}.roots", kind="list")
    if "env" in entry:
        fields["env"] = _strs(entry["env"], f"{where}.env", kind="map")
    if "headers" in entry:
        fields["headers"] = _strs(entry["headers"], f"{where}.headers", kind="map")
    for key, attr in (
        ("timeout", "timeout"),
        ("connectTimeout", "connect_timeout"),
        ("maxCallTime", "max_call_time"),
    ):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{where}.{key} must be a positive number of seconds")
            fields[attr] = float(value)
    if "annotations" in entry:
        if entry["annotations"] not in ("trust", "ignore"):
            raise ConfigError(f"{where}.annotations must be 'trust' or 'ignore'")
        fields["annotations"] = entry["annotations"]
    if "protocol" in entry:
        if entry["protocol"] not in ("auto", "legacy"):
            raise ConfigError(f"{where}.protocol must be 'auto' or 'legacy'")
        fields["protocol"] = entry["protocol"]
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and kind not in (
        "stdio",
        "http",
        "streamable-http",
        "streamableHttp",
        "sse",
    ):
        raise ConfigError(
            f"{where}.type must be 'stdio', 'http' (Streamable HTTP) or 'sse' (the legacy "
            f"HTTP+SSE transport), got {kind!r}"
        )
    if kind is not None and (kind == "stdio") != ("command" in entry):
        wanted = "'stdio' for a command" if "command" in entry else "'http' or 'sse' for a url"
        raise ConfigError(f"{where}.type must be {wanted}, got {kind!r}")
    if kind is not None and kind != "stdio":
        fields["sse"] = kind == "sse"
    try:
        return ServerSpec(**fields)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def read_config_file(path: Path) -> dict[str, ServerSpec]:
    """The servers one file configures (empty when the file does not exist)."""
    raw = _read_bytes(path)
    return {} if raw is None else _parse(raw, path)


def _parse(raw: bytes, path: Path, skipped: list[Skipped] | None = None) -> dict[str, ServerSpec]:
    """The servers in a config file's bytes. With ``skipped``, one malformed server entry
    is left out and reported there (the others are kept); without it, it raises."""
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
        try:
            spec = spec_from_entry(name, entry, str(path))
        except ConfigError as exc:
            if skipped is None:
                raise
            skipped.append(Skipped(name, str(path), str(exc)))
            continue
        if spec is not None:
            specs[name] = spec
    return specs


@attrs.frozen
class Skipped:
    """A server (or a whole project file, ``name`` "*") that was not loaded, and why."""

    name: str
    source: str
    reason: str


def load_config_report(
    paths: Iterable[Path] | None = None, *, strict: bool = False
) -> tuple[dict[str, ServerSpec], tuple[Skipped, ...]]:
    """Every configured server by name, and what was skipped.

    With ``paths`` None: :func:`config_paths`, where the project's own file counts
    only when the user trusted it as it is now (an untrusted or changed one is skipped
    and reported; nothing in it starts). A malformed entry skips that server only, and
    a file that is not JSON skips that file only; both are reported. ``strict``
    raises ConfigError for those instead (an untrusted project file is skipped either way).
    """
    specs: dict[str, ServerSpec] = {}
    skipped: list[Skipped] = []
    project = _key(project_config_path()) if paths is None else None
    for path in config_paths() if paths is None else paths:
        p = Path(path)
        try:
            # A config says what runs: used only if nobody else could write it (the
            # user's own, TOOLWIRE_MCP_CONFIG, toolwire.toml's mcp_config). The project's
            # is pinned instead: trusted by its digest, as it was when the user read it.
            is_project = project is not None and _key(p) == project
            raw = _read_bytes(p, private=not is_project)
            if raw is None:
                continue
            if project is not None and _key(p) == project and not is_trusted(p, raw):
                skipped.append(
                    Skipped(
                        "*",
                        str(p),
                        "this project's MCP config is not trusted (or changed since it was), "
                        "so none of its servers was started; read it, then run "
                        "`toolwire mcp trust` in this directory",
                    )
                )
                continue
            specs.update(_parse(raw, p, None if strict else skipped))
        except ConfigError as exc:
            if strict:
                raise
            skipped.append(Skipped("*", str(p), str(exc)))
    for item in skipped:
        logger.warning("MCP: skipped %s: %s", _what(item), item.reason)
    return specs, tuple(skipped)


def _what(item: Skipped) -> str:
    return f"the servers of {item.source}" if item.name == "*" else f"server `{item.name}`"


def load_config(paths: Iterable[Path] | None = None) -> dict[str, ServerSpec]:
    """Every configured server, by name, from :func:`config_paths` (or ``paths``).

    A malformed file or entry raises ConfigError naming the file and the key; an
    untrusted project file is skipped with a warning (see :func:`load_config_report`,
    which skips and reports what is malformed instead)."""
    return load_config_report(paths, strict=True)[0]
