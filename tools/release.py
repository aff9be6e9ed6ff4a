"""Versions and compatibility of every distribution, from ``releases.toml``.

    python tools/release.py --check [--tag vX.Y.Z]   # exit 1, naming each disagreement
    python tools/release.py --write                  # write releases.toml into the tree

What is checked, per distribution: it is a workspace member listed in releases.toml
(and every member is listed); its ``__version__`` (the file hatch reads the version
from) is the version set there; its requirement on ``toolwire`` is exactly the range
set there, and that range admits the toolwire version being released (a distribution
that needs a newer core says so in its metadata, and pip holds to it); its CHANGELOG's
newest heading is that version. With ``--tag``, the tag is ``v`` + toolwire's version.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
CORE = "toolwire"
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.M)


def _load(root: Path) -> dict[str, dict[str, Any]]:
    return tomllib.loads((root / "releases.toml").read_text())


def _members(root: Path) -> dict[str, Path]:
    """Workspace members by distribution name."""
    workspace = tomllib.loads((root / "pyproject.toml").read_text())
    found: dict[str, Path] = {}
    for pattern in workspace["tool"]["uv"]["workspace"]["members"]:
        for path in sorted(root.glob(pattern)):
            project = path / "pyproject.toml"
            if project.is_file():
                found[tomllib.loads(project.read_text())["project"]["name"]] = path
    return found


def _version_file(path: Path) -> Path:
    project = tomllib.loads((path / "pyproject.toml").read_text())
    return path / project["tool"]["hatch"]["version"]["path"]


def _core_requirement(path: Path) -> tuple[int, str] | None:
    """(index in dependencies, the requirement's text) of the ``toolwire`` dependency."""
    project = tomllib.loads((path / "pyproject.toml").read_text())["project"]
    for i, dep in enumerate(project.get("dependencies", [])):
        if Requirement(dep).name == CORE:
            return i, dep
    return None


def check(root: Path, tag: str | None = None) -> list[str]:
    problems: list[str] = []
    releases = _load(root)
    members = _members(root)
    for name in sorted(set(members) - set(releases)):
        problems.append(f"{name} ({members[name]}) is not in releases.toml")
    core_version: Version | None = None
    for name, entry in releases.items():
        where = f"releases.toml [{name}]"
        path = root / str(entry.get("path", ""))
        if name not in members or members[name].resolve() != path.resolve():
            problems.append(f"{where}: path {entry.get('path')!r} is not that workspace member")
            continue
        try:
            version = Version(str(entry["version"]))
        except (KeyError, InvalidVersion) as exc:
            problems.append(f"{where}: version: {exc}")
            continue
        if name == CORE:
            core_version = version
        written = _VERSION_LINE.search(_version_file(path).read_text())
        if written is None or written.group(1) != str(version):
            found = written.group(1) if written else "none"
            problems.append(
                f"{_version_file(path).relative_to(root)}: __version__ is {found}, "
                f"releases.toml says {version} (python tools/release.py --write)"
            )
        changelog = path / "CHANGELOG.md"
        text = changelog.read_text() if changelog.exists() else ""
        heading = re.search(r"^## (\S+)", text, re.M)
        if heading is None or heading.group(1) != str(version):
            problems.append(
                f"{changelog.relative_to(root)}: its newest heading is "
                f"{heading.group(1) if heading else 'missing'}, not {version}"
            )
    for name, entry in releases.items():
        if name == CORE or name not in members:
            continue
        where = f"releases.toml [{name}]"
        try:
            wanted = SpecifierSet(str(entry["core"]))
        except (KeyError, InvalidSpecifier) as exc:
            problems.append(f"{where}: core must be a version range like '>=0.1,<0.2': {exc}")
            continue
        if core_version is not None and core_version not in wanted:
            problems.append(f"{where}: core {wanted} does not admit toolwire {core_version}")
        dep = _core_requirement(members[name])
        if dep is None or Requirement(dep[1]).specifier != wanted:
            have = dep[1] if dep else "no toolwire dependency"
            problems.append(
                f"{members[name].relative_to(root)}/pyproject.toml: requires {have!r}, "
                f"releases.toml says toolwire{wanted} (python tools/release.py --write)"
            )
    if tag is not None and core_version is not None and tag != f"v{core_version}":
        problems.append(f"the tag {tag} is not v{core_version}, toolwire's version")
    return problems


def write(root: Path) -> list[Path]:
    """Write the versions and core ranges into the distributions; the files changed."""
    changed: list[Path] = []
    members = _members(root)
    for name, entry in _load(root).items():
        path = members[name]
        vfile = _version_file(path)
        text = vfile.read_text()
        new = _VERSION_LINE.sub(f'__version__ = "{entry["version"]}"', text, count=1)
        if new != text:
            vfile.write_text(new)
            changed.append(vfile)
        if name == CORE:
            continue
        project = path / "pyproject.toml"
        text = project.read_text()
        dep = _core_requirement(path)
        wanted = CORE + "".join(str(entry["core"]).split())
        if dep is not None and Requirement(dep[1]).specifier != Requirement(wanted).specifier:
            new = text.replace(f'"{dep[1]}"', f'"{wanted}"', 1)
            project.write_text(new)
            changed.append(project)
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="exit 1 on any disagreement")
    action.add_argument("--write", action="store_true", help="write releases.toml into the tree")
    p.add_argument("--tag", help="with --check: the tag being released (vX.Y.Z)")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.write:
        for path in write(args.root):
            print(f"wrote {path.relative_to(args.root)}")
        return 0
    problems = check(args.root, args.tag)
    for problem in problems:
        print(f"release: {problem}", file=sys.stderr)
    if not problems:
        print(f"release: {len(_load(args.root))} distributions agree with releases.toml")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
