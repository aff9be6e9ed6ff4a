"""``toolwire new pack|policy NAME``: each template installs into a scratch environment
(core and the generated package, nothing else of the workspace) and its own tests pass
there: the host discovers it through its entry point and it does its job."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"


def _new(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolwire", "new", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("kind", "name", "dist"), [
    ("pack", "weather", "toolwire-weather"),
    ("policy", "acme-rules", "toolwire-acme-rules"),
])  # fmt: skip
def test_a_generated_package_installs_and_its_tests_pass(
    tmp_path: Path, kind: str, name: str, dist: str
) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is needed to make the scratch environment")
    done = _new(tmp_path, kind, name)
    assert 0 == done.returncode, done.stderr
    package = tmp_path / dist
    assert (package / "pyproject.toml").is_file()
    assert f"next: cd {dist} && pip install -e '.[test]' && pytest" in done.stdout
    run = subprocess.run(
        [uv, "run", "--isolated", "--no-project", "--with", str(CORE), "--with", str(package),
         "--with", "pytest", "--", "python", "-m", "pytest", str(package / "tests"), "-q",
         "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert 0 == run.returncode, run.stdout + run.stderr
    assert " passed" in run.stdout
    if kind == "policy":
        # The starter cases are decided through the host, and a case the policy does not
        # meet fails the package's tests, with the policy's reason.
        assert "4 passed" in run.stdout  # the two cases and the two tests
        cases = package / "tests" / "cases.toml"
        cases.write_text(
            cases.read_text() + '\n[[cases]]\nname = "drop allowed"\ntool = "drop_table"\n'
            'arguments = { name = "t" }\nexpect = "allow"\n'
        )
        again = subprocess.run(
            [uv, "run", "--isolated", "--no-project", "--with", str(CORE), "--with",
             str(package), "--with", "pytest", "--", "python", "-m", "pytest",
             str(package / "tests"), "-q", "-p", "no:cacheprovider"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert 1 == again.returncode, again.stdout
        assert "test_case[drop allowed]" in again.stdout
        assert "does not allow `drop_table`" in again.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pack", "Bad Name"), "a name is lower-case letters and digits"),
        (("pack", "1st"), "a name is lower-case letters and digits"),
        (("thing", "x"), "invalid choice: 'thing'"),
        (("pack", "fs"), "`toolwire-fs` is an official toolwire distribution"),
        (("policy", "policy"), "`toolwire-policy` is an official toolwire distribution"),
        (("pack", "openai"), "would shadow it"),
        (("pack", "mcp"), "choose another name (like `mcp-extra` or `acme-mcp`)"),
    ],
)
def test_bad_names_and_kinds_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = _new(tmp_path, *args)
    assert 2 == done.returncode
    assert message in done.stderr
    assert [] == list(tmp_path.iterdir())  # nothing written


def test_an_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "toolwire-weather").mkdir()
    done = _new(tmp_path, "pack", "weather")
    assert 2 == done.returncode
    assert "already exists" in done.stderr
    assert [] == list((tmp_path / "toolwire-weather").iterdir())


def test_no_new_package_may_take_an_official_distributions_name() -> None:
    from toolwire.cli.templates import OFFICIAL

    root = CORE.parent
    ours = {
        tomllib.loads(p.read_text())["project"]["name"]
        for p in [root / "core" / "pyproject.toml", *root.glob("*/*/pyproject.toml")]
    }
    assert ours == set(OFFICIAL)
