"""The README's tour, run as written: its first line puts the checkout's venv on PATH, then every
tour command that needs no terminal, session or agent CLI runs with the bare ``egg`` — in a shell
whose PATH has no egg of its own, as root and as uid 65534 (``egg exec`` starts a real sandbox).
Which lines those are, and how they are read, is tests/test_readme.py's."""

from __future__ import annotations

import shlex
import subprocess

from tests.linux.conftest import Box
from tests.test_readme import ROOT, runnable_tour


def test_the_tour_runs_as_written_with_the_venv_on_path(box: Box) -> None:
    setup, commands = runnable_tour()
    box.write(box.workspace / "Makefile", "test:\n\t@echo tests passed\n")
    env = box.env()  # the system's PATH alone
    found = subprocess.run(
        box.identity.wrap(["sh", "-c", "command -v egg"]), env=env, capture_output=True
    )
    assert found.returncode != 0, "egg is on PATH before the tour's first line"
    # each command in a shell of its own, as a reader types them after the tour's first line
    places = [f"cd {shlex.quote(str(ROOT))}", *setup, f"cd {shlex.quote(str(box.workspace))}"]
    for command in commands:
        result = subprocess.run(
            box.identity.wrap(["bash", "-c", " && ".join([*places, command])]),
            env=env,
            cwd=box.workspace,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        if command == "egg exec -- make test":
            assert result.stdout == "tests passed\n", result
    assert (box.workspace / "egg.yaml").is_file()  # egg config init wrote it, validate took it
