"""Releases: one place for versions and core ranges (releases.toml), checked; and the
release workflow a maintainer runs unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _by_path import load

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> Any:
    return load("release_tool", Path("tools/release.py"), register=True)


release = _tool()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The files the check reads, copied: pyprojects, version files, changelogs."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copy(ROOT / "releases.toml", tmp_path)
    for path in release._members(ROOT).values():
        rel = path.relative_to(ROOT)
        (tmp_path / rel).mkdir(parents=True)
        for name in ("pyproject.toml", "CHANGELOG.md"):
            shutil.copy(path / name, tmp_path / rel / name)
        vfile = release._version_file(path)
        (tmp_path / vfile.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(vfile, tmp_path / vfile.relative_to(ROOT))
    return tmp_path


def test_every_distribution_agrees_with_releases_toml() -> None:
    assert [] == release.check(ROOT)


def test_each_disagreement_is_named(tree: Path) -> None:
    fs = tree / "plugins" / "fs" / "src" / "toolwire_fs" / "__init__.py"
    fs.write_text(fs.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.1.1"'))
    mcp = tree / "plugins" / "mcp" / "pyproject.toml"
    mcp.write_text(mcp.read_text().replace('"toolwire>=0.1.0,<0.2"', '"toolwire"'))
    (tree / "plugins" / "ray" / "CHANGELOG.md").write_text("# Changelog\n\n## 0.0.9\n")
    problems = release.check(tree, tag="v9.9.9")
    assert 4 == len(problems), problems
    assert "toolwire_fs/__init__.py: __version__ is 0.1.1, releases.toml says 0.1.0" in problems[0]
    assert "its newest heading is 0.0.9, not 0.1.0" in problems[1]
    assert "plugins/mcp/pyproject.toml: requires 'toolwire'" in problems[2]
    assert "the tag v9.9.9 is not v0.1.0" in problems[3]
    # --write puts releases.toml back into the tree (the changelog is the maintainer's).
    release.write(tree)
    assert ["its newest heading is 0.0.9, not 0.1.0"] == [
        p.split(": ", 1)[1] for p in release.check(tree)
    ]


def test_a_core_range_that_excludes_the_core_being_released(tree: Path) -> None:
    toml = tree / "releases.toml"
    toml.write_text(
        toml.read_text().replace(
            'path = "plugins/http"\nversion = "0.1.0"\ncore = ">=0.1.0,<0.2"',
            'path = "plugins/http"\nversion = "0.1.0"\ncore = ">=0.2"',
        )
    )
    problems = release.check(tree)
    assert any("[toolwire-http]: core >=0.2 does not admit toolwire 0.1.0" in p for p in problems)


def test_a_distribution_missing_from_releases_toml(tree: Path) -> None:
    toml = tree / "releases.toml"
    text = toml.read_text()
    start = text.index("[toolwire-ray]")
    end = text.index("\n[", start)  # the next distribution's table
    toml.write_text(text[:start] + text[end + 1 :])
    assert ["toolwire-ray (" in p for p in release.check(tree)] == [True]


def test_the_command_exits_one_on_a_problem(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 == release.main(["--check", "--root", str(tree)])
    assert 1 == release.main(["--check", "--root", str(tree), "--tag", "v0.2.0"])
    assert "release: the tag v0.2.0 is not v0.1.0" in capsys.readouterr().err


def test_the_release_workflow_builds_checks_and_publishes_with_trusted_publishing() -> None:
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    triggers = flow[True]  # YAML 1.1 reads the key `on` as true
    assert ["v*"] == triggers["push"]["tags"]
    assert {"contents": "read"} == flow["permissions"]
    build, publish = flow["jobs"]["build"], flow["jobs"]["publish"]
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    for needed in (
        "tools/release.py --check",
        "bash .ci/run",
        "uv build --all-packages",
        "twine check --strict",
        "tools/smoke_installed.py",
    ):
        assert needed in runs
    # Only the publishing job may mint the OIDC token PyPI trusts; it needs no secret.
    assert "permissions" not in build
    assert {"id-token": "write"} == publish["permissions"]
    assert publish["needs"] in ("build", ["build"])
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert "pypa/gh-action-pypi-publish@release/v1" in uses
    assert "secrets" not in (ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert "refs/tags/v" in publish["if"]
