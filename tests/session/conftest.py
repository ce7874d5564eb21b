"""Fixtures of the session tests: a project directory and the environment egg runs in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path, egg_home: Path, egg_user_home: Path) -> dict[str, str]:
    project = tmp_path / "project"
    project.mkdir()
    bin_dir = project / "bin"
    bin_dir.mkdir()
    return {
        **os.environ,
        "EGG_HOME": str(egg_home),
        "HOME": str(egg_user_home),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TERM": "xterm-256color",
        "PS1": "$ ",
        "ENV": "",
    }


@pytest.fixture
def project(env: dict[str, str]) -> Path:
    return Path(env["PATH"].split(":")[0]).parent
