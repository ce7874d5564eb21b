"""README and CI agree: CI runs exactly the README's set-up-and-test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up on a fresh Debian/Ubuntu machine", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_readme_shows_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands)


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == _readme_commands()[0]


def test_readme_run_command_runs_egg_in_the_sandbox(tmp_path):
    import os
    import subprocess

    command = _readme_commands()[1]
    assert command == ".venv/bin/egg exec -- echo hello"
    argv = command.split()
    argv[0] = str(ROOT / argv[0])
    result = subprocess.run(
        argv,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "EGG_HOME": str(tmp_path / "egg-home")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\n"
