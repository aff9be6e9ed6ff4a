"""What the workspace's tool packs import when the host discovers and assembles them.

Not a timing test: it checks which heavy modules a fresh process has loaded after
``get_host().assemble(app).tools()``. httpx imports its command line (rich, pygments) when
those are installed, and ``regex`` compiles its tables at import: together a quarter of
a second that every application paid at start-up for tools it may never call.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys, toolwire
host = toolwire.get_host()
names = {t.name for t in host.assemble(toolwire.Toolset("app", [])).tools()}
assert {"fetch_url", "grep"} <= names, names
print(",".join(m for m in ("httpx", "regex", "rich", "pygments") if m in sys.modules))
"""


def test_discovering_the_tool_packs_imports_no_http_client_and_no_regex_engine() -> None:
    pytest.importorskip("toolwire_http")
    pytest.importorskip("toolwire_fs")
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, timeout=120
    )
    assert "" == out.stdout.strip(), out.stderr
