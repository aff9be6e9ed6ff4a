"""Shared by toolwire-mcp's tests: where the test server is, and what it recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def calls_in(path: Path) -> list[dict[str, Any]]:
    """Every tools/call the test server received, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
