"""The conversation log: every ``toolwire chat`` in a local SQLite database.

Each conversation (its session, to continue it with ``-c`` / ``--cid``) and each response
in it (the prompt, the tool calls with their decisions and results, the answer, the usage)
is recorded, as ``llm logs`` does. Arguments are kept only as the installed policies
redact them (``toolwire_redact_arguments``) with every secret of the tool's input replaced:
from the typed input (a ``SecretStr`` or ``SecretBytes`` anywhere in it: in a model, a
list, an optional), or, for arguments that do not validate, wherever the tool's schema
says a value is secret (``writeOnly``, ``format: password``) at any depth; when a
redaction hook fails, a call's arguments are not kept at all. Results are kept as the
result hooks left them (what the model was sent). The policy's own audit log is separate
and remains the authority.

The file is the user's alone (0600, its directory 0700). Full-text search uses SQLite's
FTS5 where the SQLite build has it, and a plain substring match where it has not.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from toolwire._calls import MODEL_REJECTION, rejection_reason
from toolwire._errors import UsageError
from toolwire._files import check_private

__all__ = ["ConversationLog", "Recorder", "model_view", "redact_call_arguments"]

SCHEMA_VERSION = 1
REDACTED = "[REDACTED]"
_NOT_KEPT = "[not kept: the redaction hook failed]"

_TABLES = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    session TEXT NOT NULL,
    base_url TEXT,
    api_key_env TEXT
);
CREATE TABLE IF NOT EXISTS responses (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    created TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    prompt TEXT NOT NULL,
    answer TEXT NOT NULL,
    status TEXT NOT NULL,
    rounds INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_calls (
    response_id INTEGER NOT NULL REFERENCES responses(id),
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    decision TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT NOT NULL,
    approval TEXT NOT NULL,
    result TEXT,
    is_error INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_by_conversation ON responses(conversation_id);
CREATE INDEX IF NOT EXISTS calls_by_response ON tool_calls(response_id);
"""
_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS responses_fts USING fts5("
    "prompt, answer, content='responses', content_rowid='id')"
)


#: Columns added to ``conversations`` after its first release (old logs gain them).
_LATER_COLUMNS = (("base_url", "TEXT"), ("api_key_env", "TEXT"))


def _add_columns(db: sqlite3.Connection) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
    for name, kind in _LATER_COLUMNS:
        if name not in have:
            db.execute(f"ALTER TABLE conversations ADD COLUMN {name} {kind}")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _is_secret(schema: Mapping[str, Any]) -> bool:
    return schema.get("writeOnly") is True or schema.get("format") == "password"


def _by_schema(value: Any, schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """``value`` with every part a secret schema (``writeOnly``, ``format: password``)
    describes replaced, at any depth: through properties, items, ``anyOf``/``oneOf``/
    ``allOf`` and ``$ref`` (arguments that did not validate, or a tool with no typed
    input)."""
    if not isinstance(schema, Mapping) or depth > 64:
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = {**defs.get(ref[len("#/$defs/") :], {}), **schema}
    if _is_secret(schema) and value is not None:
        return REDACTED
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            value = _by_schema(value, sub, defs, depth + 1)
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, Mapping):
        value = {k: _by_schema(v, props.get(k), defs, depth + 1) for k, v in value.items()}
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        value = [_by_schema(v, items, defs, depth + 1) for v in value]
    return value


def _typed(value: Any) -> Any:
    """A validated input as JSON data, every ``SecretStr``/``SecretBytes`` in it (in a
    model, a list, an optional, at any depth) replaced; only the fields that were sent."""
    from pydantic import BaseModel, SecretBytes, SecretStr
    from pydantic_core import to_jsonable_python

    if isinstance(value, (SecretStr, SecretBytes)):
        return REDACTED
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return {
            (fields[name].alias or name) if name in fields else name: _typed(getattr(value, name))
            for name in value.model_fields_set
        }
    if isinstance(value, Mapping):
        return {str(k): _typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_typed(v) for v in value]
    return to_jsonable_python(value)


def _without_secrets(tool: Any, text: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the arguments ``text`` holds) with every secret replaced: from the typed
    input when the arguments validate, else by the tool's schema, at any depth."""
    from pydantic import BaseModel

    try:
        typed = tool.validate_json(text)
    except Exception:  # invalid arguments: the schema says where the secrets are
        typed = None
    if isinstance(typed, BaseModel):
        kept: dict[str, Any] = _typed(typed)
        # Keys the model ignored (extra) are kept as sent, unless the schema hides them.
        extra = {k: v for k, v in data.items() if k not in kept}
        if extra:
            kept.update(_by_schema(extra, tool.input_schema, _defs(tool.input_schema)))
        return kept
    schema = tool.input_schema
    kept_data = _by_schema(data, schema, _defs(schema))
    return kept_data if isinstance(kept_data, dict) else data


def _defs(schema: Any) -> Mapping[str, Any]:
    defs = schema.get("$defs") if isinstance(schema, Mapping) else None
    return defs if isinstance(defs, Mapping) else {}


def redact_call_arguments(
    text: str,
    tool: Any,
    redact: Callable[[Any, dict[str, Any]], dict[str, Any] | None] | None,
) -> str:
    """The argument text a record keeps: every secret of the tool's input replaced (from
    the typed input: ``SecretStr`` in a model, a list, an optional) and what the hooks
    redact; unparseable text is not kept (it may hold anything)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return f"[not kept: {len(text)} characters that are not a JSON object]"
    if not isinstance(data, dict):
        return f"[not kept: {len(text)} characters that are not a JSON object]"
    if tool is not None:
        data = _without_secrets(tool, text, data)
        if redact is not None:
            out = redact(tool, data)
            if out is None:
                return _NOT_KEPT
            data = out
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def model_view(content: str, is_error: bool) -> tuple[str, bool]:
    """A result as the model received it: a rejection in its plain words, never the
    machine marker the transcript keeps (``toolwire logs`` shows what the model read)."""
    reason = rejection_reason(content)
    if reason is None:
        return content, bool(is_error)
    return MODEL_REJECTION + reason, True


class Recorder:
    """Collects one response's record from the CLI's events (``call``, ``decision``,
    ``approval``, ``result``, ``answer``); ``arguments`` is applied to each call's text."""

    def __init__(self, prompt: str, arguments: Callable[[str, str], str]) -> None:
        self.prompt = prompt
        self.arguments = arguments
        self.calls: dict[str, dict[str, Any]] = {}
        self.answer = ""
        self.started = time.monotonic()

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "call":
            self.calls[event["id"]] = {
                "call_id": event["id"],
                "name": event["name"],
                "arguments": self.arguments(event["name"], event["arguments"]),
                "decision": "",
                "source": "",
                "reason": "",
                "approval": "",
                "result": None,
                "is_error": False,
            }
        elif kind == "decision" and event.get("id") in self.calls:
            call = self.calls[event["id"]]
            call["decision"] = event["decision"]
            call["source"] = event.get("source") or ""
            call["reason"] = event.get("reason", "")
        elif kind == "approval" and event.get("id") in self.calls:
            self.calls[event["id"]]["approval"] = f"{event['decision']}: {event.get('reason', '')}"
        elif kind == "result" and event.get("id") in self.calls:
            call = self.calls[event["id"]]
            call["result"], call["is_error"] = model_view(event["content"], event["is_error"])
            refused = rejection_reason(event["content"]) is not None
            if refused and call["decision"] in ("", "run"):  # let through, then refused
                call["decision"] = "refused"
        elif kind == "answer":
            self.answer = event.get("text", "")


class ConversationLog:
    """The SQLite log at ``path`` (made, with its directory, on first use)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self.fts = False

    def _connect(self, create: bool) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        if not self.path.exists():
            if not create:
                raise UsageError(f"no conversation log yet at {self.path}")
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise UsageError(f"{self.path}: cannot read it: {exc.strerror}") from None
        # Before anything is read or written (the schema too): a log another user may
        # write could put words in a conversation continued with -c, and would be given
        # every conversation, arguments and results, from now on.
        check_private(
            st,
            str(self.path),
            UsageError,
            "whoever can write it would read your conversations and put words in them",
        )
        try:
            db = sqlite3.connect(self.path, timeout=5.0)
            db.row_factory = sqlite3.Row
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(
                    f"{self.path} was written by a newer toolwire (log format {version}; "
                    f"this one reads {SCHEMA_VERSION})"
                )
            db.executescript(_TABLES)
            _add_columns(db)
            try:
                db.execute(_FTS)
                self.fts = True
            except sqlite3.OperationalError:  # a SQLite built without FTS5
                self.fts = False
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.commit()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: not a toolwire conversation log ({exc})") from None
        self._db = db
        return db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- writing -----------------------------------------------------------------------

    def record(
        self,
        *,
        conversation: str,
        session: Mapping[str, Any],
        provider: str,
        model: str | None,
        recorder: Recorder,
        status: str,
        rounds: int,
        usage: Any,
        base_url: str | None = None,
        api_key_env: str | None = None,
    ) -> int:
        """Record one response (and the conversation's session as it is now, with the
        provider's settings it goes on with); its id."""
        db = self._connect(create=True)
        now = _now()
        name = " ".join(recorder.prompt.split())[:80]
        with db:
            db.execute(
                "INSERT INTO conversations (id, name, provider, model, created, updated, session,"
                " base_url, api_key_env) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET"
                " updated = excluded.updated, session = excluded.session,"
                " provider = excluded.provider, model = excluded.model,"
                " base_url = excluded.base_url, api_key_env = excluded.api_key_env",
                (
                    conversation,
                    name,
                    provider,
                    model,
                    now,
                    now,
                    json.dumps(session),
                    base_url,
                    api_key_env,
                ),
            )
            cur = db.execute(
                "INSERT INTO responses (conversation_id, created, provider, model, prompt,"
                " answer, status, rounds, input_tokens, output_tokens, duration_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation,
                    now,
                    provider,
                    model,
                    recorder.prompt,
                    recorder.answer,
                    status,
                    rounds,
                    getattr(usage, "input_tokens", 0),
                    getattr(usage, "output_tokens", 0),
                    int((time.monotonic() - recorder.started) * 1000),
                ),
            )
            rid = int(cur.lastrowid or 0)
            for call in recorder.calls.values():
                db.execute(
                    "INSERT INTO tool_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rid,
                        call["call_id"],
                        call["name"],
                        call["arguments"],
                        call["decision"],
                        call["source"],
                        call["reason"],
                        call["approval"],
                        call["result"],
                        int(call["is_error"]),
                    ),
                )
            if self.fts:
                db.execute(
                    "INSERT INTO responses_fts (rowid, prompt, answer) VALUES (?, ?, ?)",
                    (rid, recorder.prompt, recorder.answer),
                )
        return rid

    # -- reading -----------------------------------------------------------------------

    def session(
        self, conversation: str | None
    ) -> tuple[str, Mapping[str, Any], str, str | None, dict[str, str]]:
        """``(id, session data, provider, model, settings)`` of a conversation (the latest
        one when ``conversation`` is None); ``settings``: the provider's ``base_url`` and
        ``api_key_env`` it was run with, those it had."""
        # What is continued is sent to a model again, with the provider and model the log
        # names: _connect uses only a log nobody else could have written.
        db = self._connect(create=False)
        if conversation is None:
            row = db.execute(
                "SELECT * FROM conversations ORDER BY updated DESC, rowid DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise UsageError(f"no conversation to continue in {self.path}")
        else:
            row = db.execute("SELECT * FROM conversations WHERE id = ?", (conversation,)).fetchone()
            if row is None:
                raise UsageError(f"no conversation `{conversation}` in {self.path}")
        try:
            data = json.loads(row["session"])
        except ValueError:
            raise UsageError(f"conversation `{row['id']}`: its saved session is damaged") from None
        settings = {k: row[k] for k in ("base_url", "api_key_env") if row[k]}
        return row["id"], data, row["provider"], row["model"], settings

    def responses(
        self,
        *,
        limit: int | None = 3,
        conversation: str | None = None,
        query: str | None = None,
        response: int | None = None,
    ) -> list[dict[str, Any]]:
        """Responses, newest last: the last ``limit``, one conversation's, a full-text
        search's (best first), or the one with id ``response``."""
        db = self._connect(create=False)
        where: list[str] = []
        params: list[Any] = []
        source = "responses"
        order = "responses.id DESC"
        if query is not None:
            words = query.split()
            if not words:
                raise UsageError("search: give at least one word")
            if self.fts:
                source = "responses_fts JOIN responses ON responses.id = responses_fts.rowid"
                where.append("responses_fts MATCH ?")
                params.append(" ".join('"' + w.replace('"', '""') + '"' for w in words))
                order = "responses_fts.rank"
            else:
                for w in words:
                    where.append(
                        "(responses.prompt LIKE ? ESCAPE '\\'"
                        " OR responses.answer LIKE ? ESCAPE '\\')"
                    )
                    like = (
                        "%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    )
                    params += [like, like]
        if conversation is not None:
            where.append("responses.conversation_id = ?")
            params.append(conversation)
        if response is not None:
            where.append("responses.id = ?")
            params.append(response)
        sql = f"SELECT responses.* FROM {source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = [dict(r) for r in db.execute(sql, params)]
        for row in rows:
            row["tool_calls"] = [
                {**dict(c), "is_error": bool(c["is_error"])}
                for c in db.execute(
                    "SELECT call_id, name, arguments, decision, source, reason, approval, result,"
                    " is_error"
                    " FROM tool_calls WHERE response_id = ? ORDER BY rowid",
                    (row["id"],),
                )
            ]
        if query is None:
            rows.reverse()  # oldest first, as a conversation reads
        return rows

    def conversations(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        db = self._connect(create=False)
        sql = "SELECT id, name, provider, model, created, updated FROM conversations"
        sql += " ORDER BY updated DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for row in db.execute(sql):
            yield dict(row)
