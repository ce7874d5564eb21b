"""The example third-party plugin: installed as its own distribution, listed, contract-tested."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "egg-agent-example"


def test_example_plugin_is_listed_by_egg_plugins(egg_cli):
    reports = {r["name"]: r for r in egg_cli.run("plugins", "--json").assert_ok().json()}
    assert "example" in reports, "install it: pip install ./examples/egg-agent-example"
    assert reports["example"]["distribution"] == "egg-agent-example"
    assert reports["example"]["builtin"] is False
    assert reports["example"]["status"] == "loaded"
    assert reports["example"]["hooks"] == ["egg_register_agents", "egg_register_tools"]


def test_example_plugin_passes_its_own_contract_test():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout
