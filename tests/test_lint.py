"""ruff and mypy are part of the test command: the code base stays clean or the suite fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check():
    result = _run(
        "ruff", "check", "--no-cache", "egg_core", "plugins", "tests", "bench", "examples"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _run("ruff", "format", "--no-cache", "--check", "egg_core", "plugins")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
