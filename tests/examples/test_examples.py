"""Every script in examples/ runs to completion in a fresh interpreter (STYLE 20: docs that run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/ has no scripts"


# ray_conversations.py starts a Ray cluster: its own test below checks more than this one.
@pytest.mark.parametrize(
    "script", [p for p in EXAMPLES if p.name != "ray_conversations.py"], ids=lambda p: p.name
)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), f"{script.name} printed nothing"


def test_quickstart_answers_with_the_tool_result() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES[0].parent / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "18 degrees celsius in Paris" in proc.stdout


def test_structured_output_example_validates_after_one_retry() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES[0].parent / "structured_output.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "schema sent as 'Forecast', strict=True" in proc.stdout
    assert "requests: 3" in proc.stdout
    assert "forecast: Forecast(city='Oslo', sky='clear', high_c=21.0)" in proc.stdout


def test_ray_conversations_match_one_process() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES[0].parent / "ray_conversations.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "transcripts identical to one process: 12/12" in proc.stdout
    moved = int(proc.stdout.split("more than one worker process: ")[1].split()[0])
    assert moved > 0  # conversations really moved between processes
