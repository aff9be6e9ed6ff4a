"""A plugin whose import hangs is left behind: discovery has a deadline (#11.19).

Each test writes a real (unpacked) distribution, ``.dist-info`` with its entry
points beside its module, onto a temporary ``sys.path`` and runs discovery in a
subprocess; the plugin's import sleeps far past the deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SLEEPY = "import time\ntime.sleep(600)  # a tool pack that never finishes importing\n"

REPORT = """
import json, time
from toolwire import PluginHost
import toolwire as tw
start = time.monotonic()
host = PluginHost(import_timeout=0.5)
host.assemble(tw.Toolset("app", []))
records = {f"{r.kind}:{r.name}": [r.status, r.reason] for r in host.plugins}
print(json.dumps({"records": records, "blocked": list(host.blocked),
                  "seconds": time.monotonic() - start}))
"""


def _dist(root: Path, name: str, group: str, source: str) -> None:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {name}\n")
    (root / f"{name}.py").write_text(source)


def _discover(path: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env["PYTHONPATH"] = str(path)
    env["XDG_CONFIG_HOME"] = str(path / "config")
    env["TOOLWIRE_PLUGINS"] = "sleepy,sleepypolicy"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(REPORT)],
        capture_output=True,
        text=True,
        timeout=60,  # the import sleeps 600 s: only a deadline gets this back
        check=True,
        env=env,
    )
    data: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def test_a_tool_pack_that_hangs_at_import_is_reported_and_left_behind(tmp_path: Path) -> None:
    _dist(tmp_path, "sleepy", "toolwire.toolsets", SLEEPY)
    out = _discover(tmp_path)
    status, reason = out["records"]["toolset:sleepy"]  # type: ignore[index]
    assert "failed" == status
    assert "its import took longer than 0.5 s (TOOLWIRE_PLUGIN_IMPORT_TIMEOUT)" in reason
    assert [] == out["blocked"]  # a tool pack fails open


def test_a_policy_that_hangs_at_import_blocks_every_call(tmp_path: Path) -> None:
    _dist(tmp_path, "sleepypolicy", "toolwire.policies", SLEEPY)
    out = _discover(tmp_path)
    assert "failed" == out["records"]["policy:sleepypolicy"][0]  # type: ignore[index]
    [blocked] = out["blocked"]  # type: ignore[misc]
    assert "took longer than 0.5 s" in blocked


def test_an_import_timeout_must_be_positive() -> None:
    from toolwire._plugins import PluginHost
    from toolwire.exceptions import PluginError

    with pytest.raises(PluginError, match="import_timeout must be a positive number"):
        PluginHost(autoload=False, import_timeout=0)
