"""The public API's types, checked by mypy: accepted usages pass, rejected ones fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is a dev dependency")

CASES = Path(__file__).with_name("cases.py")
ROOT = Path(__file__).parents[2]


def expected_rejections() -> dict[int, str]:
    out: dict[int, str] = {}
    for number, line in enumerate(CASES.read_text().splitlines(), start=1):
        m = re.search(r"# rejected: ([\w-]+)$", line)
        if m:
            out[number] = m.group(1)
    return out


def test_mypy_accepts_and_rejects_exactly_the_marked_lines() -> None:
    stdout, stderr, _ = api.run(
        [
            "--strict",
            "--no-incremental",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--allow-untyped-defs",
            "--allow-untyped-calls",
            "--no-warn-unused-ignores",
            str(CASES),
        ]
    )
    found: dict[int, set[str]] = {}
    for line in stdout.splitlines():
        m = re.match(r"(?:.*/)?cases\.py:(\d+): error: .*\[([\w-]+)\]$", line)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    expected = expected_rejections()
    assert expected, "the cases file marks no rejected line"
    assert {n: {code} for n, code in expected.items()} == found, stdout + stderr
