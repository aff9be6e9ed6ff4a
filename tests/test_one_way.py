"""One way to do each dangerous thing (DESIGN.md, principle 8): each job has one function,
and these tests fail when code in any distribution does the job another way.

A fix made in one place is a fix everywhere only while nothing else does the same job:
the patterns below came back in new code after they were fixed (#40).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[1]
SOURCES = sorted(
    p
    for top in ("core", "providers", "plugins", "integrations")
    for p in (ROOT / top).rglob("src/**/*.py")
    if ".venv" not in p.parts
)


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source text of ``node`` (ast.get_source_segment splits the file on every call)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if first == last:
        return lines[first][start:end].decode("utf-8")
    parts = [lines[first][start:], *lines[first + 1 : last], lines[last][:end]]
    return b"".join(parts).decode("utf-8")


def _calls(path: Path) -> Iterator[tuple[ast.Call, str, str]]:
    """(the call, its callee's dotted text, the text of its arguments) for each call."""
    raw = path.read_bytes()
    lines = raw.splitlines(keepends=True)
    for node in ast.walk(ast.parse(raw, filename=str(path))):
        if isinstance(node, ast.Call):
            callee = _segment(lines, node.func)
            args = " ".join(_segment(lines, a) for a in [*node.args, *node.keywords])
            yield node, callee, args


def _where(path: Path, node: ast.AST) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{shown}:{getattr(node, 'lineno', 0)}"


def test_there_are_sources_to_check() -> None:
    names = {p.name for p in SOURCES}
    assert {"_policy.py", "_audit.py", "_config.py"} <= names


# -- an allow-list matches mounted names only ----------------------------------------------

#: What compiles or matches a glob of tool names.
_GLOB_CALLS = ("_globs", "_matches", "fnmatch.fnmatch", "fnmatch.fnmatchcase", "fnmatch.filter")


def allow_lists_built_another_way(paths: list[Path]) -> list[str]:
    """Calls that compile or match an allow-list's globs other than through
    ``toolwire_policy._policy.AllowList`` (whose ``admits`` takes mounted names only)."""
    found = []
    for path in paths:
        for node, callee, args in _calls(path):
            if callee.split(".")[-1] in {c.split(".")[-1] for c in _GLOB_CALLS} and (
                "allow" in args.lower()
            ):
                found.append(f"{_where(path, node)}: {callee}({args})")
    return [f for f in found if "AllowList" not in f and "cls(_globs(globs))" not in f]


def test_every_allow_list_matches_mounted_names_only() -> None:
    assert [] == allow_lists_built_another_way(SOURCES)


def test_the_allow_list_check_sees_a_glob_built_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "rx = _globs(rule.allow)\nok = _matches(self._allow, names)\nfine = _globs(deny)\n"
    )
    assert [
        "bad.py:1: _globs(rule.allow)",
        "bad.py:2: _matches(self._allow names)",
    ] == allow_lists_built_another_way([bad])


# -- every outbound request reads its body through the one bounded reader -------------------

#: Where an HTTP client may be built, and why: each reads every body through
#: ``toolwire._http.bounded`` (the calls below are refused anywhere else).
CLIENT_MAKERS = {
    "core/src/toolwire/_http/bounded.py": "the one bounded fetch itself",
    "core/src/toolwire/_http/transport.py": "the provider transport: bodies and streams via "
    "iter_body/aiter_body",
    "core/src/toolwire/_media.py": "media.afetch (an application's client may be given): "
    "aread_body",
    "plugins/http/src/toolwire_http/_fetch.py": "pins each hop to an address its policy "
    "allowed (SSRF): read_body",
    "plugins/mcp/src/toolwire_mcp/client/_transport.py": "the MCP SDK's client, whose "
    "transport is BoundedTransport (Inflater)",
}
_CLIENTS = {"Client", "AsyncClient"}
_ONE_SHOT = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream"}
_READS = {
    "iter_bytes", "aiter_bytes", "iter_text", "aiter_text", "iter_lines", "aiter_lines",
    "iter_raw", "aiter_raw", "aread",
}  # fmt: skip
_READER = "core/src/toolwire/_http/bounded.py"


def fetches_made_another_way(paths: list[Path]) -> list[str]:
    """HTTP clients built, one-shot requests made, bodies read or other HTTP libraries used
    outside the places allowed above."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        for node, callee, _ in _calls(path):
            parts = callee.split(".")
            lib, name = (parts[0], parts[-1]) if len(parts) == 2 else ("", parts[-1])
            if lib in ("httpx", "httpx2") and name in _CLIENTS and rel not in CLIENT_MAKERS:
                found.append(f"{_where(path, node)}: builds {callee}")
            elif lib in ("httpx", "httpx2") and name in _ONE_SHOT:
                found.append(f"{_where(path, node)}: {callee} (a request of its own)")
            elif len(parts) > 1 and name in _READS and rel != _READER:
                found.append(f"{_where(path, node)}: reads a body with .{name}()")
        tree = ast.parse(path.read_bytes())
        for imp in ast.walk(tree):
            names = []
            if isinstance(imp, ast.Import):
                names = [a.name for a in imp.names]
            elif isinstance(imp, ast.ImportFrom) and imp.module:
                names = [imp.module, *(f"{imp.module}.{a.name}" for a in imp.names)]
            for n in names:
                if n.split(".")[0] in ("requests", "aiohttp") or n.startswith(
                    ("urllib.request", "http.client")
                ):
                    found.append(f"{_where(path, imp)}: imports {n}")
    return found


def test_every_outbound_request_reads_through_the_bounded_reader() -> None:
    assert [] == fetches_made_another_way(SOURCES)


def test_the_fetch_check_sees_a_client_a_request_and_a_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import httpx\nimport urllib.request\n"
        "c = httpx.AsyncClient()\n"
        "r = httpx.get(url)\n"
        "async for b in response.aiter_bytes():\n    pass\n"
        "data = await response.aread()\n"
    )
    assert [
        "bad.py:3: builds httpx.AsyncClient",
        "bad.py:4: httpx.get (a request of its own)",
        "bad.py:5: reads a body with .aiter_bytes()",
        "bad.py:7: reads a body with .aread()",
        "bad.py:2: imports urllib.request",
    ] == fetches_made_another_way([bad])


# -- a person asked about a call sees every argument: review_arguments ----------------------

#: Every place that asks a person something, by (file, what is called, its argument text),
#: and why it is right. A new one fails the test until it is reviewed here: a question about
#: a call must show its arguments with toolwire.adapters.review_arguments (in full, or the
#: call is not asked about).
ASKERS = {
    ("core/src/toolwire/cli/chat.py", "input", "question"): "the approval question: "
    "_approval_prompt, review_arguments",
    ("core/src/toolwire/cli/chat.py", "input", '"> "'): "the user's prompt, no call",
    ("core/src/toolwire/cli/chat.py", "input", '"... "'): "the user's prompt, no call",
    (
        "plugins/mcp/src/toolwire_mcp/gateway/_approve.py",
        "types.ElicitRequestFormParams",
        "question",
    ): ("the gateway's approval question: approval_question, review_arguments"),
    (
        "plugins/mcp/src/toolwire_mcp/gateway/_context.py",
        "types.ElicitRequestFormParams",
        "message",
    ): ("MCPCallContext.elicit: a tool asks its own question, no call's arguments"),
    (
        "integrations/crewai/src/toolwire_crewai/__init__.py",
        "context.request_human_input",
        "question",
    ): "CrewAI's approval question: toolwire.bridges.approval_question, review_arguments",
    ("integrations/adk/src/toolwire_adk/__init__.py", "context.request_confirmation", "hint"): (
        "ADK's tool confirmation: toolwire.bridges.approval_question, review_arguments"
    ),
    ("integrations/crewai/src/toolwire_crewai/__init__.py", "input", 'f"{question}\\n{prompt} "'): (
        "the same question where CrewAI gives no hook context (a pack's tool)"
    ),
}
#: The functions the approval questions are built by: each must call review_arguments.
QUESTION_BUILDERS = {
    "core/src/toolwire/cli/chat.py": "_approval_prompt",
    "plugins/mcp/src/toolwire_mcp/client/_elicit.py": "approval_question",
    "core/src/toolwire/_bridge.py": "approval_question",
}


def askers(paths: list[Path]) -> set[tuple[str, str, str]]:
    found = set()
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        raw = path.read_bytes()
        lines = raw.splitlines(keepends=True)
        for node, callee, _ in _calls(path):
            if callee not in (
                "input",
                "types.ElicitRequestFormParams",
                "ElicitRequestFormParams",
                "context.request_human_input",
                "context.request_confirmation",
            ):
                continue
            first = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg in ("message", "hint")), None)
            )
            shown = _segment(lines, first) if first is not None else ""
            found.add((rel, callee, shown))
    return found


def test_every_question_to_a_person_is_reviewed() -> None:
    assert set(ASKERS) == askers(SOURCES)


def test_every_approval_question_is_built_by_review_arguments() -> None:
    for rel, name in QUESTION_BUILDERS.items():
        tree = ast.parse((ROOT / rel).read_bytes())
        [fn] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
        called = {
            c.func.id
            for c in ast.walk(fn)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        }
        assert "review_arguments" in called, f"{rel}: {name} must use review_arguments"


# -- a file only its owner may change: owner_only -------------------------------------------

_OWNER_CHECK = "core/src/toolwire/_files.py"
_OTHERS_BITS = {0o022, 0o002, 0o020, 0o077, 0o070, 0o007}
_OTHERS_NAMES = {"S_IWOTH", "S_IWGRP", "S_IROTH", "S_IRGRP", "S_IRWXO", "S_IRWXG"}


def owner_checks_made_another_way(paths: list[Path]) -> list[str]:
    """Reads of a file's owner, or masks of its mode by other users' bits, outside
    ``toolwire._files.owner_only``."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        if rel == _OWNER_CHECK:
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Attribute) and node.attr == "st_uid":
                found.append(f"{_where(path, node)}: reads st_uid")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
                for side in (node.left, node.right):
                    if (isinstance(side, ast.Constant) and side.value in _OTHERS_BITS) or (
                        isinstance(side, ast.Attribute) and side.attr in _OTHERS_NAMES
                    ):
                        found.append(f"{_where(path, node)}: masks a mode by others' bits")
    return sorted(found)


def test_every_owner_check_is_owner_only() -> None:
    assert [] == owner_checks_made_another_way(SOURCES)


def test_the_owner_check_sees_one_made_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "if st.st_uid != os.getuid():\n    pass\n"
        "loose = st.st_mode & 0o022\n"
        "w = st.st_mode & stat.S_IWOTH\n"
        "mine = st.st_mode & stat.S_IWUSR\n"
    )
    assert [
        "bad.py:1: reads st_uid",
        "bad.py:3: masks a mode by others' bits",
        "bad.py:4: masks a mode by others' bits",
    ] == owner_checks_made_another_way([bad])


# -- an MCP tool's hints become its metadata in one function --------------------------------

_HINTS = {
    "read_only_hint",
    "readOnlyHint",
    "destructive_hint",
    "destructiveHint",
    "idempotent_hint",
    "idempotentHint",
    "open_world_hint",
    "openWorldHint",
}
_HINT_MAPPING = "metadata_from_mcp_hints"


def mcp_hints_read_another_way(paths: list[Path]) -> list[str]:
    """Functions that read an MCP tool's annotation hints (an attribute or a key of that
    name; passing one as a keyword, to write annotations, is no read) without handing them
    to ``toolwire.adapters.metadata_from_mcp_hints``, the one mapping of hints to effect."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_bytes())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if fn.name == _HINT_MAPPING:
                continue
            reads = [
                n
                for n in ast.walk(fn)
                if (isinstance(n, ast.Attribute) and n.attr in _HINTS)
                or (isinstance(n, ast.Constant) and n.value in _HINTS)
            ]
            maps = any(
                isinstance(c, ast.Call)
                and (
                    (isinstance(c.func, ast.Name) and c.func.id == _HINT_MAPPING)
                    or (isinstance(c.func, ast.Attribute) and c.func.attr == _HINT_MAPPING)
                )
                for c in ast.walk(fn)
            )
            if reads and not maps:
                found.append(f"{_where(path, reads[0])}: {fn.name} reads MCP hints itself")
    return sorted(set(found))


def test_every_mcp_hint_is_mapped_by_one_function() -> None:
    assert [] == mcp_hints_read_another_way(SOURCES)


def test_the_hint_check_sees_a_mapping_made_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def effect(a):\n"
        "    return 'read_only' if a.read_only_hint else 'destructive'\n"
        "\n"
        "def from_dict(d):\n"
        "    return d.get('destructiveHint', True)\n"
        "\n"
        "def good(a):\n"
        "    return metadata_from_mcp_hints(read_only=a.read_only_hint, destructive=None,\n"
        "                                   idempotent=None, open_world=None)\n"
        "\n"
        "def writes(effect):\n"
        "    return ToolAnnotations(read_only_hint=effect == 'read_only')\n"
    )
    assert [
        "bad.py:2: effect reads MCP hints itself",
        "bad.py:5: from_dict reads MCP hints itself",
    ] == mcp_hints_read_another_way([bad])


# -- a store's SQLite file, only its owner's, opened one way --------------------------------

#: Where an SQLite file may be opened, and why.
SQLITE_OPENERS = {
    "core/src/toolwire/_files.py": "open_private_sqlite: 0600, owner_only as a secret, WAL",
    "core/src/toolwire/cli/logs.py": "the conversation log: check_private before it is read",
}


def sqlite_opened_another_way(paths: list[Path]) -> list[str]:
    """``sqlite3.connect`` outside the places allowed above (a store opens its file with
    ``toolwire.adapters.open_private_sqlite``)."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        for node, callee, _ in _calls(path):
            if (
                callee.split(".")[-1] == "connect"
                and "sqlite" in callee
                and rel not in SQLITE_OPENERS
            ):
                found.append(f"{_where(path, node)}: {callee}")
    return found


def test_every_store_opens_its_sqlite_file_one_way() -> None:
    assert [] == sqlite_opened_another_way(SOURCES)


def test_the_sqlite_check_sees_a_file_opened_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import sqlite3\ndb = sqlite3.connect(path)\n")
    assert ["bad.py:2: sqlite3.connect"] == sqlite_opened_another_way([bad])


# -- a result whose text changes keeps no stale structured value --------------------------


def results_replaced_another_way(paths: list[Path]) -> list[str]:
    """``._replace(...)`` outside core: a named tuple's own replace keeps a
    ``ToolResult``'s structured value beside text a hook changed (a redaction would leave
    the unredacted value for a gateway's client); ``ToolResult.replace`` drops it unless
    it is given too (#44)."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        if rel.startswith("core/"):
            continue
        for node, callee, _ in _calls(path):
            if callee.endswith("._replace"):
                found.append(f"{_where(path, node)}: {callee}")
    return found


def test_every_result_is_changed_by_its_replace() -> None:
    assert [] == results_replaced_another_way(SOURCES)


def test_the_replace_check_sees_a_named_tuple_replace(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def hook(result):\n    return result._replace(content='x')\n")
    assert ["bad.py:2: result._replace"] == results_replaced_another_way([bad])


# -- the MCP SDK's private send path, in one place -------------------------------------------

#: The one module that may use the SDK session's private pieces, and why.
SDK_PRIVATE = {
    "plugins/mcp/src/toolwire_mcp/client/_tasks.py": (
        "a task-augmented tools/call (2025-11-25): its answer is no CallToolResult, which "
        "the SDK's public send checks every tools/call answer against"
    ),
}
_SDK_PRIVATE_NAMES = ("_dispatcher", "_stamp")


def sdk_private_used_another_way(paths: list[Path]) -> list[str]:
    """The SDK session's ``_dispatcher`` / ``_stamp`` (as an attribute or by name to
    ``getattr``) outside the module allowed above; core's own ``_stamp`` is not the SDK's."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        if rel in SDK_PRIVATE or rel.startswith("core/"):
            continue
        tree = ast.parse(path.read_bytes(), filename=str(path))
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in _SDK_PRIVATE_NAMES:
                name = node.attr
            elif isinstance(node, ast.Constant) and node.value in _SDK_PRIVATE_NAMES:
                name = str(node.value)
            if name is not None:
                found.append(f"{_where(path, node)}: {name}")
    return found


def test_the_sdks_private_send_path_is_used_in_one_place() -> None:
    assert [] == sdk_private_used_another_way(SOURCES)


def test_the_sdk_private_check_sees_an_attribute_and_a_getattr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("d = session._dispatcher\ns = getattr(session, '_stamp')\n")
    assert ["bad.py:1: _dispatcher", "bad.py:2: _stamp"] == sdk_private_used_another_way([bad])


# -- installed entry points: read one way, never from the working directory ------------------

#: The one module that reads installed distributions' entry points (they decide what code
#: is imported): ``_entry_points`` and ``command_entry_points``, both without the working
#: directory (principle 9: a checkout's planted ``*.dist-info`` was imported by
#: ``python -m toolwire --help``).
ENTRY_POINT_READERS = {"core/src/toolwire/_plugins/entrypoints.py"}
_METADATA_READS = {"entry_points", "distributions", "distribution"}


def entry_points_read_another_way(paths: list[Path]) -> list[str]:
    """Calls of ``importlib.metadata`` / ``importlib_metadata`` readers (or pluggy's
    ``load_setuptools_entrypoints``) outside the one module that reads entry points."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        if rel in ENTRY_POINT_READERS:
            continue
        for node, callee, _ in _calls(path):
            last = callee.split(".")[-1]
            if (last in _METADATA_READS and "metadata" in callee) or (
                last == "load_setuptools_entrypoints"
            ):
                found.append(f"{_where(path, node)}: {callee}")
    return found


def test_every_entry_point_is_read_one_way() -> None:
    assert [] == entry_points_read_another_way(SOURCES)


def test_the_entry_point_check_sees_a_read_made_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import importlib_metadata, importlib.metadata\n"
        "a = importlib_metadata.entry_points(group='x')\n"
        "b = importlib.metadata.distributions()\n"
        "pm.load_setuptools_entrypoints('toolwire')\n"
    )
    assert [
        "bad.py:2: importlib_metadata.entry_points",
        "bad.py:3: importlib.metadata.distributions",
        "bad.py:4: pm.load_setuptools_entrypoints",
    ] == entry_points_read_another_way([bad])


# -- a coroutine stepped inline goes on in a task before it needs one -------------------------

#: What needs the current task (asyncio's deadlines, anyio's scopes, the task itself): a
#: call a bridge steps inline has none (toolwire._sync.step_inline) until it awaits
#: ``in_a_task()``.
_NEEDS_A_TASK = {
    "asyncio.timeout",
    "asyncio.timeout_at",
    "asyncio.wait_for",
    "asyncio.current_task",
    "_current_task",
    "anyio.fail_after",
    "anyio.move_on_after",
    "anyio.CancelScope",
}


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions defined in it."""
    for child in ast.iter_child_nodes(fn):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield child
        yield from _own_nodes(child)


def tasks_needed_unsaid(paths: list[Path]) -> list[str]:
    """In core's coroutines, a call of what needs the current task with no ``await
    in_a_task()`` before it in the same coroutine."""
    found = []
    for path in paths:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        if rel.startswith(("providers/", "plugins/", "integrations/")):
            continue
        raw = path.read_bytes()
        lines = raw.splitlines(keepends=True)
        for fn in ast.walk(ast.parse(raw, filename=str(path))):
            if not isinstance(fn, ast.AsyncFunctionDef):
                continue
            nodes = list(_own_nodes(fn))
            said = min(
                (
                    n.lineno
                    for n in nodes
                    if isinstance(n, ast.Await)
                    and isinstance(n.value, ast.Call)
                    and _segment(lines, n.value.func).split(".")[-1] == "in_a_task"
                ),
                default=None,
            )
            for n in nodes:
                if (
                    isinstance(n, ast.Call)
                    and _segment(lines, n.func) in _NEEDS_A_TASK
                    and (said is None or n.lineno < said)
                ):
                    found.append(f"{_where(path, n)}: {_segment(lines, n.func)}")
    return found


def test_every_coroutine_that_needs_its_task_says_so_first() -> None:
    assert [] == tasks_needed_unsaid(SOURCES)


def test_the_task_check_sees_a_deadline_entered_before_the_task(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "async def a():\n    async with asyncio.timeout(1):\n        pass\n"
        "async def b():\n    t = asyncio.current_task()\n    await in_a_task()\n"
        "async def c():\n    await in_a_task()\n    return asyncio.current_task()\n"
        "async def d():\n    async def inner():\n        await in_a_task()\n"
        "    return anyio.fail_after(1)\n"
    )
    assert [
        "bad.py:2: asyncio.timeout",
        "bad.py:5: asyncio.current_task",
        "bad.py:13: anyio.fail_after",
    ] == tasks_needed_unsaid([bad])
