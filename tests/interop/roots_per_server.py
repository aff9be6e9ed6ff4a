"""Two server-filesystem processes in one client process, each told roots of its own
(``ServerSpec.roots``) beside the process's (``set_roots``): server-filesystem replaces its
command-line directories with the client's roots, so with process-wide roots only, one
server's roots were every server's (#48).

``python roots_per_server.py WORK SERVER_FILESYSTEM``: exits non-zero when a server is
allowed another's directories.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import toolwire as tw
from toolwire_mcp import ServerSpec, close_all, mcp_toolset, set_roots


def allowed(toolset: tw.Toolset, prefix: str) -> str:
    executor = tw.Executor(tools=toolset, plugins=False)
    try:
        # The server asks for the roots after it starts: a moment for it to take them.
        deadline = time.monotonic() + 20
        while True:
            result = executor.execute(tw.ToolCall("c", f"{prefix}list_allowed_directories", "{}"))
            if result.is_error or "/files" not in result.content or time.monotonic() > deadline:
                return result.content
            time.sleep(0.2)
    finally:
        executor.close()


def main() -> int:
    work, server = Path(sys.argv[1]), sys.argv[2]
    for name in ("files", "a", "b", "shared"):
        (work / name).mkdir(parents=True, exist_ok=True)
    set_roots([work / "shared"])
    specs = {
        "fa": ServerSpec("fa", command="node", args=(server, str(work / "files")),
                         roots=[str(work / "a")]),
        "fb": ServerSpec("fb", command="node", args=(server, str(work / "files")),
                         roots=[str(work / "b")]),
        "fs": ServerSpec("fs", command="node", args=(server, str(work / "files"))),
    }  # fmt: skip
    seen = {}
    try:
        for name, spec in specs.items():
            toolset = tw.Toolset("app").add(mcp_toolset(name, spec), prefix=f"{name}_")
            seen[name] = allowed(toolset, f"{name}_")
    finally:
        close_all()
    print(json.dumps(seen, indent=2))
    wanted = {"fa": work / "a", "fb": work / "b", "fs": work / "shared"}
    ok = True
    for name, directory in wanted.items():
        others = [d for n, d in wanted.items() if n != name]
        if str(directory) not in seen[name] or any(str(d) in seen[name] for d in others):
            print(f"roots: `{name}` is allowed {seen[name]!r}; wanted {directory} only")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
