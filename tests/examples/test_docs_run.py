"""Python code blocks in README.md and docs/*.md run as written (STYLE 20)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str]]:
    out = []
    # hooks.md is generated from the hookspecs: its blocks are signatures, not programs.
    docs = [d for d in sorted((ROOT / "docs").glob("*.md")) if d.name != "hooks.md"]
    for doc in [ROOT / "README.md", *docs]:
        for i, code in enumerate(BLOCK.findall(doc.read_text(encoding="utf-8"))):
            out.append((f"{doc.name}[{i}]", textwrap.dedent(code)))  # a block in a tab is indented
    return out


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_doc_block_runs(where: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr}"
