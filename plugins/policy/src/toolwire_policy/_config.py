"""The policy file: where it is looked for, its schema (pydantic), and clear errors about it."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from toolwire import PolicyError
from toolwire.adapters import owner_only, write_private

__all__ = [
    "DISTRIBUTION",
    "PLUGIN_NAME",
    "POLICY_ENV",
    "REQUIRED_ENV",
    "AuditConfig",
    "ConstraintRule",
    "PolicyConfig",
    "PolicyFileError",
    "RedactRule",
    "find_policy_file",
    "parse_policy_text",
    "policy_paths",
    "project_trust",
    "read_policy_file",
    "trust_policy_file",
    "trust_store_path",
    "untrust_policy_file",
]

POLICY_ENV = "TOOLWIRE_POLICY"
REQUIRED_ENV = "TOOLWIRE_POLICY_REQUIRED"
PLUGIN_NAME = "policy"
DISTRIBUTION = "toolwire-policy"


class PolicyFileError(PolicyError):
    """The policy file is missing, unreadable or malformed; tool execution is blocked.

    ``path`` is the file; ``problems`` holds ``(key, message)`` pairs, the key
    written as in the file (``constraints[0].deny_patterns[1]``; ``""`` for
    the file as a whole).
    """

    def __init__(self, path: Path | str, problems: list[tuple[str, str]]) -> None:
        self.path = Path(path)
        self.problems = tuple(problems)
        lines = [f"  {key}: {msg}" if key else f"  {msg}" for key, msg in problems]
        super().__init__(
            f"policy file '{path}' is invalid; tool execution is blocked until it is fixed:\n"
            + "\n".join(lines),
            plugin=PLUGIN_NAME,
            distribution=DISTRIBUTION,
        )


# -- schema ----------------------------------------------------------------------------


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
    return value


Effect = Literal["read_only", "mutating", "destructive"]
Glob = Annotated[str, StringConstraints(min_length=1)]
Regex = Annotated[str, StringConstraints(min_length=1), AfterValidator(_check_regex)]
MediaGlob = Annotated[
    str, StringConstraints(min_length=3, pattern=r"^[a-z0-9*.+-]+/[a-z0-9*.+-]+$", to_lower=True)
]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ConstraintRule(_Table):
    """A ``[[constraints]]`` table: limits on the string values of some tools' arguments."""

    tools: list[Glob] = ["*"]
    """Tool-name globs this rule applies to."""
    subjects: list[Glob] = []
    """Only calls for these principals (subject globs; with ``groups``, either matches);
    neither: every call."""
    groups: list[Glob] = []
    arguments: list[Glob] | None = None
    """Top-level argument names (globs) it checks; every argument when absent."""
    max_length: Annotated[int, Field(ge=1)] | None = None
    """The longest string allowed, anywhere inside the checked arguments."""
    deny_patterns: list[Regex] = []
    """Regular expressions no string inside the checked arguments may contain (re.search)."""

    @model_validator(mode="after")
    def _does_something(self) -> ConstraintRule:
        if self.max_length is None and not self.deny_patterns:
            raise ValueError("a [[constraints]] table needs max_length or deny_patterns (or both)")
        return self


class RedactRule(_Table):
    """A ``[[redact]]`` table: what is never written to the audit log or shown in results."""

    tools: list[Glob] = ["*"]
    """Tool-name globs this rule applies to."""
    subjects: list[Glob] = []
    """Only results of calls for these principals (subject globs; with ``groups``, either
    matches); neither: every call. Such a rule redacts results only: the audit log's
    argument redaction is the same for every record."""
    groups: list[Glob] = []
    arguments: list[Glob] = []
    """Argument names (globs, case-insensitive, at any depth) replaced by ``[REDACTED]``."""
    result_patterns: list[Regex] = []
    """Regular expressions whose matches in result content are replaced by ``[REDACTED]``."""

    @model_validator(mode="after")
    def _does_something(self) -> RedactRule:
        if not self.arguments and not self.result_patterns:
            raise ValueError("a [[redact]] table needs arguments or result_patterns (or both)")
        if (self.subjects or self.groups) and self.arguments:
            raise ValueError(
                "a [[redact]] table for some subjects or groups may have result_patterns "
                "only: arguments are redacted alike in every audit record"
            )
        return self


class AuditConfig(_Table):
    """The ``[audit]`` table: a JSON-lines audit log of every decision (and result)."""

    path: Annotated[str, StringConstraints(min_length=1)]
    """The log file; ``~`` is expanded, a relative path is relative to the policy file."""
    results: bool = True
    """Also write a record for every result."""
    arguments: bool = True
    """Write the (redacted) arguments in decision records, not only their fingerprint."""
    context_keys: list[Glob] = []
    """Keys of ``HookContext.extra`` to copy into each record (``user``, ``tenant``)."""
    readers: list[Annotated[str, StringConstraints(min_length=1)]] | None = None
    """Who may read the log in the approval console: ``group:NAME``, ``user:NAME``.
    Default: the approvers ``[approvals]`` names (nobody, without that table)."""


class PrincipalRule(_Table):
    """A ``[[rules]]`` table: what the policy says for some principals (by subject, by
    group). The most specific wins: a rule naming the principal's subject over one naming
    a group of theirs, over the file's top-level keys; within one level, deny over
    approve over allow."""

    subjects: list[Glob] = []
    """Principal subjects (globs) the rule applies to."""
    groups: list[Glob] = []
    """Principal groups or roles (globs) the rule applies to."""
    allow: list[Glob] = []
    """Tools these principals may call, even where the top-level keys deny them."""
    deny: list[Glob] = []
    """Tools these principals may not call (nor see)."""
    approve: list[Glob] = []
    """Tools whose calls need approval for these principals."""

    @model_validator(mode="after")
    def _aimed(self) -> PrincipalRule:
        if not self.subjects and not self.groups:
            raise ValueError("a [[rules]] table needs subjects or groups (whom it is for)")
        if not (self.allow or self.deny or self.approve):
            raise ValueError("a [[rules]] table needs allow, deny or approve (what it says)")
        return self


class QuotaRule(_Table):
    """A ``[[quotas]]`` table: at most ``calls`` calls of each matching tool in any
    ``seconds`` seconds, and/or at most ``concurrent`` of them running at once, per
    principal (``shared = true``: for everyone together). A call over it is refused, saying
    when to try again; nothing waits in a queue."""

    tools: list[Glob] = ["*"]
    """Tool-name globs the quota counts (each tool has its own count)."""
    subjects: list[Glob] = []
    """Principals (subject globs) it applies to; with ``groups``, either matches; neither:
    every caller, anonymous ones included."""
    groups: list[Glob] = []
    calls: Annotated[int, Field(ge=1)] | None = None
    """Calls in any ``seconds`` seconds."""
    seconds: Annotated[int, Field(ge=1, le=86400)] = 60
    concurrent: Annotated[int, Field(ge=1)] | None = None
    """Calls running at once: a call holds its slot until its result comes back."""
    lease: Annotated[int, Field(ge=1, le=86400)] = 600
    """The longest a call holds a ``concurrent`` slot: a call that never reports back (its
    host refused it without saying so) holds it no longer. In a shared store, a slot whose
    process is gone is freed sooner (``[quota_store] holder_timeout``)."""
    shared: bool = False

    @model_validator(mode="after")
    def _limits(self) -> QuotaRule:
        if self.calls is None and self.concurrent is None:
            raise ValueError("a [[quotas]] table needs calls (per seconds) or concurrent")
        return self


class QuotaStoreConfig(_Table):
    """The ``[quota_store]`` table: where quotas are counted. Without it, a policy file's
    quotas are counted in an SQLite file in the user's data directory that every process
    of the machine using this policy file shares (the command line's runs count together)."""

    url: Annotated[str, StringConstraints(pattern=r"^(redis|rediss|unix|sqlite|memory)://")]
    """``redis://host:6379/0``, ``rediss://`` (TLS) or ``unix:///path/redis.sock`` (a Redis
    server several machines share; give the password by ``password_env``, not here);
    ``sqlite://`` (the default file) or ``sqlite:///path/quotas.sqlite`` (the processes of
    one machine); ``memory://`` (each process counts its own calls)."""
    password_env: Annotated[str, StringConstraints(min_length=1)] | None = None
    """The environment variable holding the server's password."""
    prefix: Annotated[str, StringConstraints(min_length=1)] = "toolwire:quota:"
    """What every key this policy writes starts with."""
    timeout: Annotated[float, Field(gt=0, le=10)] = 0.5
    """Seconds each request to the server may take; past it, the call is refused."""
    holder_timeout: Annotated[float, Field(ge=1, le=3600)] = 30
    """Seconds a ``concurrent`` slot outlives the process holding it (killed, or its
    machine lost): a running call's slot is stored this long at a time and renewed every
    third of it, up to its ``lease``."""
    require_persistence: bool = False
    """Refuse to load (every tool blocked) unless the server keeps its counts across its own
    restarts (RDB snapshots or an append-only file). Without it, a server that keeps none
    is only warned about: its restart forgets every count, and rate quotas start again."""


class ApprovalsConfig(_Table):
    """The ``[approvals]`` table: who answers the calls this policy sends for approval
    (``approve``, ``approve_effects``), through the approval queue. Without it, the
    caller's own approver answers (the terminal of ``toolwire chat``, the application's
    callback, the framework's human in the loop). With it, only the people named here do:
    the call is filed as a request in the queue and refused for now; once a named
    approver approves it, the same call (the same tool, arguments and principal) runs,
    once."""

    approvers: Annotated[list[Annotated[str, StringConstraints(min_length=1)]], Field(min_length=1)]
    """Who may answer: ``group:NAME`` (a principal with that group), ``user:NAME`` (that
    subject); ``toolwire-policy approvals`` answers as the machine's user, with their
    operating-system groups."""
    expires: Annotated[float, Field(gt=0, le=30 * 86400)] = 3600
    """Seconds a request waits for an answer; past it, the call stays refused. An
    approval must be used as long again."""
    self_approve: bool = False
    """Whether an approver may answer their own request (by default nobody does)."""
    queue: Annotated[str, StringConstraints(min_length=1)] | None = None
    """The queue's SQLite file (``~`` is expanded, a relative path is relative to the
    policy file), or a ``postgresql://USER@HOST/DATABASE`` shared by gateways on several
    machines (its password in ``PGPASSWORD`` or ``~/.pgpass``, never here). Default:
    ``$XDG_DATA_HOME/toolwire/approvals.sqlite``."""
    webhook: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")] | None = None
    """Where each new request is told (a POST of Slack-compatible JSON): ``https://``, or
    ``http://`` to this machine (127.0.0.1, ::1, localhost) only."""
    webhook_secret_env: Annotated[str, StringConstraints(min_length=1)] | None = None
    """The environment variable holding the secret each delivery is signed with
    (``X-Toolwire-Signature``; ``toolwire_policy.verify_webhook`` checks one)."""
    console_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")] | None = None
    """The approval console's address: each delivery links to the request there."""

    @model_validator(mode="after")
    def _webhook_is_private(self) -> ApprovalsConfig:
        if self.webhook is not None and self.webhook.startswith("http://"):
            from urllib.parse import urlsplit

            host = urlsplit(self.webhook).hostname or ""
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise ValueError(
                    "a webhook is https://, or http:// to this machine only (the request's "
                    "details would cross the network in the clear)"
                )
        if self.webhook_secret_env is not None and self.webhook is None:
            raise ValueError("webhook_secret_env signs the webhook's deliveries: name a webhook")
        return self


class PolicyConfig(_Table):
    """The whole policy file."""

    allow: list[Glob] = ["*"]
    """Tool-name globs; a tool must match one to be offered or run."""
    deny: list[Glob] = []
    """Tool-name globs that are never offered or run (deny wins over allow)."""
    deny_effects: list[Effect] = []
    """Effects whose tools are never offered or run."""
    mode: Literal["enforce", "observe"] = "enforce"
    """``observe`` (shadow mode): decide and audit every call ("would deny", "would ask")
    without enforcing: nothing is refused, hidden, asked about or redacted. For trying a
    policy on real traffic before it is enforced."""
    unknown_effect: Effect = "destructive"
    """The effect this policy takes a tool to have when nobody declared one (another
    framework's tool, through a bridge, with no ``effects=`` mapping and no hint)."""
    approve: list[Glob] = []
    """Tool-name globs whose calls need approval."""
    approve_effects: list[Effect] = []
    """Effects whose tools' calls need approval."""
    effects: dict[Glob, Effect] = {}
    """Tool-name glob -> the effect this policy takes the tool to have, whatever it
    claims (an MCP server's annotations are hints, not facts): ``{"git_*" = "destructive"}``.
    The first matching glob, in file order, wins; deny_effects and approve_effects use it."""
    trusted_mcp_servers: list[Glob] = []
    """MCP servers (by their configured name) whose tool annotations this policy believes.
    A tool of any other MCP server is taken to be destructive, whatever its
    ``readOnlyHint`` says (what the MCP specification says to assume of an untrusted
    server); ``effects`` still overrides both."""
    constraints: list[ConstraintRule] = []
    redact: list[RedactRule] = []
    result_media: list[MediaGlob] | None = None
    """Media types (globs: ``image/*``, ``application/pdf``) a tool result may carry to the
    model; any other image, audio or file is withheld (a line in the result says so). Absent:
    every type; ``[]``: none."""
    max_result_bytes: Annotated[int, Field(ge=0)] | None = None
    """The most media (bytes) one tool result may carry; past it, the result's media is
    withheld (its text is kept, and says so)."""
    audit: AuditConfig | None = None
    require_principal: bool = False
    """Refuse every call made for nobody (no principal in its context), and hide every
    tool from such turns."""
    principal_methods: list[Annotated[str, StringConstraints(min_length=1)]] | None = None
    """How a principal may have been established for this policy to accept it (``app``,
    ``cli``, ``token``, ``oauth``); a call for a principal established otherwise is refused.
    Absent: any. ``["app", "token", "oauth"]`` refuses ``toolwire chat --as``."""
    rules: list[PrincipalRule] = []
    quotas: list[QuotaRule] = []
    quota_store: QuotaStoreConfig | None = None
    approvals: ApprovalsConfig | None = None


def env_secret(variable: str, source: Path, key: str) -> str:
    """The secret the environment variable ``variable`` holds, which the policy file
    ``source`` names at ``key`` (a password, a signing key): PolicyFileError when unset."""
    value = os.environ.get(variable)
    if not value:
        raise PolicyFileError(source, [(key, f"the environment variable {variable} is not set")])
    return value


# -- errors ----------------------------------------------------------------------------


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class of the table at ``loc`` (for listing its allowed keys)."""
    model: type[BaseModel] = PolicyConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        nested = _nested_model(field.annotation)
        if nested is None:
            return None
        model = nested
    return model


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _problem(err: Mapping[str, Any]) -> tuple[str, str]:
    loc: tuple[int | str, ...] = tuple(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        allowed = ", ".join(parent.model_fields) if parent is not None else ""
        where = f"in table {_key(loc[:-1])}" if loc[:-1] else "at the top level"
        return _key(loc), f"unknown key {where}; allowed keys: {allowed}"
    if kind == "missing":
        return _key(loc), "missing required key"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        return _key(loc), msg[len("Value error, ") :]
    return _key(loc), f"{msg}, got {_shown(err.get('input'))}"


def parse_policy_text(text: str, source: Path | str) -> PolicyConfig:
    """Parse and validate policy TOML; raises PolicyFileError naming ``source`` and the keys."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyFileError(source, [("", f"not valid TOML: {exc}")]) from None
    try:
        return PolicyConfig.model_validate(data)
    except ValidationError as exc:
        problems = [_problem(e) for e in exc.errors(include_url=False)]
        raise PolicyFileError(source, problems) from None


#: The most of a policy file read, in characters (a policy is a few kilobytes): a path that
#: names a huge file or a device (/dev/zero) is refused, not read without end.
MAX_POLICY_CHARS = 1024 * 1024


def read_policy_file(path: Path | str) -> PolicyConfig:
    """Read, parse and validate a policy file; raises PolicyFileError."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as f:
            # Any owner (an administrator's file), but writable by nobody else.
            loose = owner_only(os.fstat(f.fileno()), any_owner=True)
            if loose is not None:
                # What a policy allows is decided by whoever can write its file.
                raise PolicyFileError(p, [("", f"the file is {loose}: `chmod o-w,g-w` it")])
            text = f.read(MAX_POLICY_CHARS + 1)
    except FileNotFoundError:
        raise PolicyFileError(p, [("", "the file does not exist")]) from None
    except UnicodeDecodeError:
        raise PolicyFileError(p, [("", "the file is not UTF-8 text")]) from None
    except OSError as exc:
        raise PolicyFileError(p, [("", f"cannot read the file: {exc.strerror}")]) from None
    if len(text) > MAX_POLICY_CHARS:
        raise PolicyFileError(p, [("", f"the file is over {MAX_POLICY_CHARS} characters")])
    return parse_policy_text(text, p)


# -- where the file is -------------------------------------------------------------------

#: A project's own policy file, in its working directory: used only once trusted.
PROJECT_FILE = "toolwire-policy.toml"
_TRUST_FILE = "policy-trust.json"


def _config_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"))


def policy_paths(
    environ: Mapping[str, str] | None = None, *, cwd: Path | None = None
) -> list[Path]:
    """The places looked at, in order, when ``TOOLWIRE_POLICY`` is not set.

    The organisation's ``$XDG_CONFIG_HOME/toolwire/policy.toml``
    (``~/.config/toolwire/policy.toml`` when XDG_CONFIG_HOME is not set) comes
    first, so a project cannot override it by shipping its own file; then the
    project's ``./toolwire-policy.toml``, which is used only when the user trusted it
    as it is now (:func:`trust_policy_file`): a cloned repository's file decides
    nothing by being there.
    """
    env = os.environ if environ is None else environ
    return [_config_home(env) / "toolwire" / "policy.toml", (cwd or Path.cwd()) / PROJECT_FILE]


def trust_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """The user's record of trusted project policy files:
    ``$XDG_CONFIG_HOME/toolwire/policy-trust.json`` (path: the SHA-256 of the file)."""
    env = os.environ if environ is None else environ
    return _config_home(env) / "toolwire" / _TRUST_FILE


def _file_digest(path: Path) -> str | None:
    """``sha256:`` of the file's bytes (at most MAX_POLICY_CHARS * 4 read), or None when
    there is no such file."""
    import hashlib

    try:
        with path.open("rb") as f:
            raw = f.read(MAX_POLICY_CHARS * 4 + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PolicyFileError(path, [("", f"cannot read the file: {exc.strerror}")]) from None
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _read_trust(env: Mapping[str, str]) -> dict[str, str]:
    import json

    path = trust_store_path(env)
    try:
        with path.open("rb") as f:
            # Whoever could write it would choose which project's policy applies.
            problem = owner_only(os.fstat(f.fileno()))
            if problem is not None:
                raise PolicyFileError(
                    path, [("", f"the trust store is {problem}: `chmod go-w` it if it is yours")]
                )
            raw = f.read(MAX_POLICY_CHARS + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise PolicyFileError(
            path, [("", f"cannot read the trust store: {exc.strerror}")]
        ) from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_POLICY_CHARS else None
    except ValueError:
        data = None
    trusted = data.get("trusted") if isinstance(data, dict) else None
    if not isinstance(trusted, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in trusted.items()
    ):
        raise PolicyFileError(
            path,
            [
                (
                    "",
                    'the trust store is malformed (expected {"trusted": {path: digest}}): '
                    "delete it and trust the project files again",
                )
            ],
        )
    return dict(trusted)


def _write_trust(env: Mapping[str, str], trusted: Mapping[str, str]) -> None:
    import json

    text = json.dumps({"version": 1, "trusted": dict(sorted(trusted.items()))}, indent=2)
    write_private(trust_store_path(env), text + "\n")


def _trust_key(path: Path) -> str:
    return str(path.expanduser().resolve())


def trust_policy_file(
    path: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Trust a project's policy file as it is now (its SHA-256 goes in the user's trust
    store), so it applies when a command runs in its directory; returns the path. Only a
    file that loads can be trusted: raises PolicyFileError otherwise."""
    env = os.environ if environ is None else environ
    p = Path(path) if path is not None else Path.cwd() / PROJECT_FILE
    read_policy_file(p)
    digest = _file_digest(p)
    assert digest is not None  # it was just read
    store = _read_trust(env)
    store[_trust_key(p)] = digest
    _write_trust(env, store)
    return p


def untrust_policy_file(
    path: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> bool:
    """Forget a trusted project policy file; True when it was trusted."""
    env = os.environ if environ is None else environ
    p = Path(path) if path is not None else Path.cwd() / PROJECT_FILE
    store = _read_trust(env)
    if store.pop(_trust_key(p), None) is None:
        return False
    _write_trust(env, store)
    return True


def project_trust(path: Path, environ: Mapping[str, str] | None = None) -> str:
    """What the user's trust store says of the project file ``path``: ``"trusted"`` (as
    it is now), ``"changed"`` (trusted once, different now), ``"untrusted"`` or
    ``"missing"``."""
    env = os.environ if environ is None else environ
    digest = _file_digest(path)
    if digest is None:
        return "missing"
    known = _read_trust(env).get(_trust_key(path))
    if known is None:
        return "untrusted"
    return "trusted" if known == digest else "changed"


def find_policy_file(
    environ: Mapping[str, str] | None = None, *, cwd: Path | None = None
) -> Path | None:
    """The policy file to use, or None when there is none (the plugin is then inert).

    ``TOOLWIRE_POLICY`` names the file explicitly; if it is set and the file
    is missing, that is an error (PolicyFileError), not "no policy". A project's
    ``./toolwire-policy.toml`` counts only when trusted as it is now; one trusted before
    and changed since is an error (it was relied on: nothing runs until it is trusted
    again), one never trusted is passed over. With ``TOOLWIRE_POLICY_REQUIRED=1``,
    finding no file is an error too.
    """
    env = os.environ if environ is None else environ
    named = env.get(POLICY_ENV, "").strip()
    if named:
        p = Path(named).expanduser()
        if not p.is_file():
            raise PolicyFileError(
                p, [("", f"the file named by {POLICY_ENV} does not exist or is not a file")]
            )
        return p
    candidates = policy_paths(env, cwd=cwd)
    organisation, project = candidates
    for p in candidates:
        if p.is_file():
            if p is project:
                trust = project_trust(p, env)
                if trust == "changed":
                    raise PolicyFileError(
                        p,
                        [
                            (
                                "",
                                "the project's policy changed since you trusted it; review it "
                                "and run `toolwire-policy trust` again",
                            )
                        ],
                    )
                if trust != "trusted":
                    continue
            return p
        if os.path.lexists(p):
            # Something is there but it is not a file we can read (a directory, a dangling
            # symlink): that is a broken policy, never "no policy" (it would fail open).
            if p is project:
                continue  # the project's decides nothing until trusted, broken or not
            what = "a dangling symbolic link" if p.is_symlink() else "not a regular file"
            raise PolicyFileError(p, [("", f"the policy path is {what}")])
    if env.get(REQUIRED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        looked = ", ".join(f"'{p}'" for p in candidates)
        raise PolicyFileError(
            organisation,
            [("", f"no policy file found ({REQUIRED_ENV} is set); looked for {looked}")],
        )
    return None
