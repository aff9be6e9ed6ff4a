"""docs/tutorial.md as a user follows it: each ``sh`` block run in order in one shell
session, in a fresh directory and a config home of its own, and each ``text`` block
after it found in what it printed, line by line, in order.

The install block (a venv and pip) is what CI's README pip path runs from a clone and
from the wheels (.ci/run); here the workspace's own ``toolwire`` takes its place.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
#: A fenced block: its kind, ``{.exact}`` when all of what the command prints is shown (it is
#: the same on every run), and its body.
_BLOCK = re.compile(r"^```(\w+)( {\.exact})?\n(.*?)^```$", re.M | re.S)


def _steps() -> list[tuple[str, str | None, bool]]:
    """(the commands of each sh block, the text block after it or None, whether that
    text is all the command prints)."""
    blocks = _BLOCK.findall(TUTORIAL.read_text())
    steps: list[tuple[str, str | None, bool]] = []
    for i, (kind, _exact, body) in enumerate(blocks):
        if kind != "sh":
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = after[2] if after and after[0] == "text" else None
        steps.append((body, shown, bool(after and after[1])))
    return steps


def test_the_tutorial_has_what_it_promises() -> None:
    steps = _steps()
    assert "pip install ./core ./plugins/fs ./plugins/policy" in steps[0][0]
    assert any("policy.toml" in body for body, _, _ in steps)
    assert "audit.jsonl" in steps[-1][0]
    assert any(exact for _, _, exact in steps)  # what is the same every run is shown whole


def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "toolwire"  # the installed command, as pip would have put it on PATH
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolwire "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    env.update(
        PATH=f"{bindir}:{env['PATH']}",
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        TOOLWIRE_DISABLE_PLUGINS="http",  # the tutorial installs core, fs and policy only
        NO_COLOR="1",
    )
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    steps = _steps()
    # Each block runs in the shell the previous one left (cd, variables), as typed.
    state = tmp_path / "state.sh"
    state.write_text(f"cd {work}\n")
    for body, shown, exact in steps[1:]:
        script = f'. {state}\n{body}\necho "cd $PWD" > {state}\n'
        done = subprocess.run(
            [bash, "-e", "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert 0 == done.returncode, f"{body}\n{done.stdout}\n{done.stderr}"
        if shown is None:
            continue
        out = done.stdout.splitlines()
        if exact:  # all of it, as shown (a list of five tools shown as three drifted)
            printed = [line.rstrip() for line in out if line.strip()]
            assert [line.rstrip() for line in shown.splitlines() if line.strip()] == printed
            continue
        at = 0
        for want in (line.strip() for line in shown.splitlines() if line.strip()):
            while at < len(out) and want not in out[at]:
                at += 1
            printed = f"`{want}` not printed by:\n{body}\n--- it printed:\n{done.stdout}"
            assert at < len(out), printed
            at += 1
