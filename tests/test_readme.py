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


def _readme_exit_codes() -> set[int]:
    text = (ROOT / "README.md").read_text()
    table = text.split("| code | `egg exec` | `egg run` |", 1)[1].split("\n\n", 1)[0]
    first = [row.split("|")[1].strip() for row in table.splitlines() if row.startswith("|")]
    return {int(cell) for cell in first if cell.isdigit()}


def _exit_codes_in_the_code() -> set[int]:
    """Every code ``egg run`` and ``egg exec`` can exit with by themselves: the error classes',
    the literals the commands and the session client raise with, and what the CLI returns."""
    from egg_core import errors, spawn
    from egg_core.cli import exec_cmd

    classes = [errors.EggError]
    codes = set()
    while classes:
        cls = classes.pop()
        codes.add(cls.exit_code)
        classes.extend(cls.__subclasses__())
    sources = [
        *(ROOT / "egg_core" / "cli").glob("*.py"),
        ROOT / "egg_core" / "session" / "client.py",
        ROOT / "egg_core" / "toolserver.py",
    ]
    for source in sources:
        codes.update(int(n) for n in re.findall(r"exit_code=(\d+)", source.read_text()))
    app = (ROOT / "egg_core" / "cli" / "app.py").read_text()
    codes.update(int(n) for n in re.findall(r"^\s+return (\d+)$", app, re.M))
    codes.update({spawn.SANDBOX_FAILED, exec_cmd.SETUP_FAILED})
    return codes


def test_the_readme_exit_code_table_and_the_code_agree():
    assert _readme_exit_codes() == _exit_codes_in_the_code()


def test_the_readme_lists_the_default_environment_the_code_passes():
    """The built-in default's env, as the README's paragraph on it spells it out."""
    from egg_core.config import DEFAULT_ENV

    text = (ROOT / "README.md").read_text()
    passage = re.search(r"shell histories denied; env (.*?); no network\.", text, re.S)
    assert passage, "the README's paragraph on the built-in default moved"
    names = {n for n in re.findall(r"\b[A-Z][A-Z_]*[A-Z]\b", passage.group(1))}
    assert names == set(DEFAULT_ENV)
