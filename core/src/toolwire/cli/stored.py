"""What the user keeps for the command line beside ``toolwire.toml``: API keys
(``toolwire keys``) and model aliases (``toolwire aliases``).

Keys live in ``keys.json``, aliases in ``aliases.json``, in the configuration directory
(``$XDG_CONFIG_HOME/toolwire``, else ``~/.config/toolwire``). Both are written whole,
the user's alone (0600, in a 0700 directory), and read only when nobody else may write
them; the keys file only when nobody else may read it either. A key is used by its name:
``--key NAME``, else the key named after the provider (``openai``), unless
``--api-key-env`` names a variable; it is never printed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolwire._errors import UsageError
from toolwire._files import owner_only, read_capped, write_private
from toolwire.cli.config import config_dir

__all__ = [
    "MAX_KEY_CHARS",
    "aliases_file",
    "keys_file",
    "read_aliases",
    "read_keys",
    "resolve_alias",
    "stored_key",
    "write_aliases",
    "write_keys",
]

#: The longest key kept (a provider's keys are a few hundred characters at most).
MAX_KEY_CHARS = 4096
_MAX_FILE = 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def keys_file(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / "keys.json"


def aliases_file(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / "aliases.json"


def check_name(name: str, what: str) -> str:
    """A key's or an alias's name: letters, digits, ``.``, ``_``, ``:`` and ``-``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(
            f"{what} {name!r}: a name is 1 to 64 letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or a digit"
        )
    return name


def check_key(value: str) -> str:
    """A key as given (surrounding blanks dropped): one line, not empty, not too long."""
    key = value.strip()
    if not key:
        raise UsageError("the key is empty: nothing was stored")
    if len(key) > MAX_KEY_CHARS:
        raise UsageError(f"the key is over {MAX_KEY_CHARS:,} characters: nothing was stored")
    if any(c in key for c in "\r\n\x00") or not key.isprintable():
        raise UsageError("the key must be one line of printable text: nothing was stored")
    return key


def _read(path: Path, what: str, *, secret: bool) -> dict[str, Any]:
    if not path.exists():
        return {}
    if not path.is_file():
        raise UsageError(f"{path}: the {what} file is not a file")
    if secret:
        problem = owner_only(path.stat(), secret=True)
        if problem is not None:
            raise UsageError(
                f"{path} is {problem}, so its keys are not used: whoever can read it has "
                "them; `chmod 600` it if it is yours"
            )
    raw = read_capped(path, _MAX_FILE, str(path), UsageError, private=True)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: the {what} file is not JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the {what} file must hold a JSON object")
    return data


def read_keys(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The stored keys by name; UsageError for a file that is not the user's alone or
    not what ``toolwire keys`` writes."""
    path = keys_file(environ)
    data = _read(path, "keys", secret=True)
    for name, value in data.items():
        if not isinstance(value, str) or not value:
            raise UsageError(f"{path}: key {name!r} is not a string; fix or remove it")
    return data


def write_keys(keys: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Path:
    path = keys_file(environ)
    write_private(path, json.dumps(dict(sorted(keys.items())), indent=2) + "\n")
    return path


def stored_key(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The key stored as ``name``, or None."""
    return read_keys(environ).get(name)


def read_aliases(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The aliases: name -> ``{"model": ..., "provider": ...}`` (provider optional)."""
    path = aliases_file(environ)
    data = _read(path, "aliases", secret=False)
    for name, value in data.items():
        ok = (
            isinstance(value, dict)
            and isinstance(value.get("model"), str)
            and bool(value["model"])
            and set(value) <= {"model", "provider"}
            and isinstance(value.get("provider", ""), str)
        )
        if not ok:
            raise UsageError(
                f'{path}: alias {name!r} must be {{"model": ..., "provider": ...}}; '
                "fix or remove it"
            )
    return data


def write_aliases(
    aliases: Mapping[str, Mapping[str, str]], environ: Mapping[str, str] | None = None
) -> Path:
    path = aliases_file(environ)
    text = json.dumps({k: dict(v) for k, v in sorted(aliases.items())}, indent=2) + "\n"
    write_private(path, text)
    return path


def resolve_alias(
    model: str | None, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """``(model, provider)`` for a model name that is an alias (provider None when the
    alias names none), else ``(model, None)`` as given."""
    if not model:
        return model, None
    found = read_aliases(environ).get(model)
    if found is None:
        return model, None
    return found["model"], found.get("provider") or None
