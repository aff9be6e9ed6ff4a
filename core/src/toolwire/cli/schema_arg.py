"""``toolwire chat --schema``: the answer's shape from the command line
(``--schema-multi``: a list of that shape, ``{"items": [...]}`` as ``llm`` gives it).

Three forms, as ``llm`` takes them and more:

- a JSON Schema file (``--schema city.json``): the answer is checked against it;
- ``MODULE:ATTR`` naming a pydantic model or any type pydantic validates;
- the concise syntax: fields separated by commas, each ``NAME [TYPE][: description]``
  with TYPE one of ``str`` (the default), ``int``, ``float``, ``bool``
  (``"name, age int, bio: a short biography"``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema, create_model

from toolwire._errors import UsageError
from toolwire._files import read_capped

__all__ = ["MAX_SCHEMA_BYTES", "answer_type"]

MAX_SCHEMA_BYTES = 1024 * 1024
_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}
_FIELD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+([A-Za-z]+))?\s*(?::\s*(.*?))?\s*$")


def answer_type(spec: str, imported: Any, *, many: bool = False) -> Any:
    """The output type ``--schema SPEC`` names (``many``: ``--schema-multi``'s, a list of
    them as ``{"items": [...]}``); UsageError saying what is wrong."""
    one = _answer_type(spec, imported)
    if not many:
        return one
    return create_model("Answers", items=(list[one], ...))  # type: ignore[valid-type]


def _answer_type(spec: str, imported: Any) -> Any:
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        return _from_file(path)
    if ":" in spec and "," not in spec and " " not in spec.split(":", 1)[0]:
        module, _, attr = spec.partition(":")
        if module and attr and attr.isidentifier():
            _refuse_working_directory(module, spec)
            return imported(spec, "--schema")
    return _concise(spec)


def _refuse_working_directory(module: str, spec: str) -> None:
    """``--schema name:attr`` reads like a field and its description: it must not run
    ``./name.py`` a cloned repository put in the working directory. A module is imported
    from the installed packages only (``--app`` is the explicit way to import one's own)."""
    top = module.split(".", 1)[0]
    here = Path.cwd()
    if (here / f"{top}.py").exists() or (here / top).is_dir():
        raise UsageError(
            f"--schema {spec}: `{top}` is in the working directory, and --schema does not "
            f"import code from it (it would run ./{top}.py); install the module, give a JSON "
            f"Schema file, or write a field with a description as `{top}: {spec.split(':', 1)[1]}`"
        )


def _from_file(path: Path) -> Any:
    raw = read_capped(path, MAX_SCHEMA_BYTES, f"--schema {path}", UsageError)
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"--schema {path}: not JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise UsageError(f"--schema {path}: the schema must describe an object (type: object)")
    import jsonschema

    try:
        validator = jsonschema.Draft202012Validator(schema)
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"--schema {path}: not a valid JSON Schema: {exc.message}") from None

    def check(value: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "(root)"
            raise ValueError(f"{where}: {errors[0].message}")
        return value

    return Annotated[dict[str, Any], WithJsonSchema(schema), AfterValidator(check)]


def _concise(spec: str) -> Any:
    fields: dict[str, Any] = {}
    for item in spec.split(","):
        found = _FIELD.match(item)
        if found is None or not item.strip():
            raise UsageError(
                f"--schema: {item.strip()!r} is not a field; write `name [type][: description]`, "
                f'comma-separated (like "name, age int, bio: a short biography"), or give a '
                f"JSON Schema file or MODULE:ATTR"
            )
        name, kind, about = found.groups()
        if kind is not None and kind not in _TYPES:
            raise UsageError(
                f"--schema: field `{name}` has type {kind!r}; the types are {', '.join(_TYPES)}"
            )
        if name in fields:
            raise UsageError(f"--schema: field `{name}` is given twice")
        annotation = _TYPES[kind or "str"]
        fields[name] = (annotation, Field(..., description=about) if about else ...)
    return create_model("Answer", **fields)
