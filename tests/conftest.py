"""Shared helpers for egg's own tests. The public fixtures come from the ``egg`` pytest plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path for test plugin modules, removed again afterwards."""
    path = tmp_path / "plugin-src"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [
        m for m, mod in sys.modules.items() if str(path) in str(getattr(mod, "__file__", ""))
    ]:
        del sys.modules[name]


@pytest.fixture
def cache_workspace(tmp_path: Path, egg_home: Path):
    """(workspace, environment) for egg exec's cache tests: a workspace and home the sandbox
    sees (not under /tmp, which is private inside it), the cache saying why it missed."""
    # /tmp is private inside the sandbox: the workspace and home must live elsewhere to be seen
    base = Path(os.path.realpath(os.environ.get("EGG_LINUX_TEST_DIR", "/var/tmp")))
    root = base / f"egg-cache-test-{os.getpid()}-{tmp_path.name}"
    work, home = root / "work", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "EGG_HOME": str(egg_home),
        "EGG_EXEC_CACHE": "debug",
    }
    if os.environ.get("EGG_TEST_MUTANT"):  # test_cache_mutation: a build with a check taken out
        env["PYTHONPATH"] = os.environ["EGG_TEST_MUTANT"]
    yield work, env
    subprocess.run(["rm", "-rf", str(root)], check=False)
