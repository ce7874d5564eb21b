"""Class 3 of the persistence review: egg's own protections never depend on the user's base.

Threat I (the policy of the next run) holds whatever the config says; threat H's guards hold unless
the key named for them turns them off, and ``egg explain`` says so.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.linux.conftest import Box

WIDE_OPEN = "network: '*'\nenv: '*'\n"


@pytest.mark.parametrize("where", ["EGG_HOME", "--config"])
def test_base_none_does_not_let_the_sandbox_write_the_next_runs_egg_yaml(
    box: Box, where: str
) -> None:
    config = "base: none\nfs: ['rw:./']\n"
    options: list[str] = []
    if where == "EGG_HOME":
        box.config(config, path=box.egg_home / "egg.yaml")
    else:
        options = ["--config", str(box.config(config, path=box.root / "team.yaml"))]

    attack = box.exec("sh", "-c", f'printf "{WIDE_OPEN}" > egg.yaml', options=options)
    after = box.run("explain", "--json", *options)

    assert attack.returncode != 0
    egg_yaml = box.workspace / "egg.yaml"
    assert not egg_yaml.exists() or egg_yaml.read_text() == ""
    assert json.loads(after.stdout)["network"]["need"] != "full"


def test_base_none_keeps_the_git_guard(box: Box) -> None:
    subprocess.run(box.identity.wrap(["git", "init", "-q", str(box.workspace)]), check=True)
    box.config("base: none\nfs: ['rw:./']\n")

    attack = box.exec("sh", "-c", "git config core.fsmonitor 'touch /tmp/x'")

    assert attack.returncode != 0
    assert "fsmonitor" not in (box.workspace / ".git" / "config").read_text()


def test_persistence_guards_off_is_explicit_and_explain_says_so(box: Box) -> None:
    subprocess.run(box.identity.wrap(["git", "init", "-q", str(box.workspace)]), check=True)
    box.config("persistence_guards: false\n")

    explained = box.run("explain")
    data = json.loads(box.run("explain", "--json").stdout)
    write = box.exec("sh", "-c", "git config core.fsmonitor true")

    assert "persistence NOT guarded (egg.yaml: persistence_guards: false)" in explained.stdout
    assert data["persistence_guards"] is False
    assert write.returncode == 0, write.stderr
    assert "fsmonitor" in (box.workspace / ".git" / "config").read_text()
    # egg's own policy stays protected even so
    assert box.exec("sh", "-c", "echo 'env: \"*\"' >> egg.yaml").returncode != 0
