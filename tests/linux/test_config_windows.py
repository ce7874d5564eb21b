"""Class 2 of the persistence review: a config a sandbox could have written is not obeyed.

The sandbox creates ``sub/egg.yaml`` (``network: '*'``, ``env: '*'``); a later ``egg exec`` started
in ``sub/`` must not run with it until the user has read it and trusted it.
"""

from __future__ import annotations

import json

from tests.linux.conftest import Box

WIDE_OPEN = "network: '*'\\nenv: '*'\\n"


def test_an_egg_yaml_planted_in_a_subdirectory_is_refused_until_trusted(box: Box) -> None:
    box.mkdir(box.workspace / "sub")
    planted = box.exec("sh", "-c", f'printf "{WIDE_OPEN}" > sub/egg.yaml')
    assert planted.returncode == 0, planted.stderr

    sub = box.workspace / "sub"
    refused = box.exec("sh", "-c", "echo ran", cwd=sub)
    explained = box.run("explain", "--json", cwd=sub)

    assert refused.returncode == 125 and "ran" not in refused.stdout
    assert "sub/egg.yaml changed while a sandbox started" in refused.stderr
    assert "egg config trust" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert explained.returncode == 2

    trusted = box.run("config", "trust", "egg.yaml", cwd=sub)
    after = box.run("explain", "--json", cwd=sub)

    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(after.stdout)["network"]["need"] == "full"


def test_a_config_the_user_writes_is_obeyed(box: Box) -> None:
    box.exec("true")  # a run happened here before (its window has closed)
    box.config({"network": ["example.com"]}, path=box.workspace / "sub" / "egg.yaml")

    result = box.exec("sh", "-c", "echo ran", cwd=box.workspace / "sub")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ran"


def test_a_trusted_config_changed_again_by_a_sandbox_is_refused_again(box: Box) -> None:
    sub = box.mkdir(box.workspace / "sub")
    box.exec("sh", "-c", "echo 'env: [HOME]' > sub/egg.yaml")
    assert box.run("config", "trust", "egg.yaml", cwd=sub).returncode == 0
    assert box.exec("true", cwd=sub).returncode == 0

    box.exec("sh", "-c", f'printf "{WIDE_OPEN}" > sub/egg.yaml')
    refused = box.exec("true", cwd=sub)

    assert refused.returncode == 125
    assert "egg config trust" in refused.stderr


def test_a_killed_run_leaves_no_window_open_forever(box: Box) -> None:
    """A killed egg exec's window is closed by the next egg command: a config written after
    that is the user's."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(
        box.command("exec", "--", "sleep", "60"),
        env=box.env(),
        cwd=box.workspace,
        start_new_session=True,
    )
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    box.run("ls")  # recovers the killed run
    time.sleep(0.05)
    box.config({"env": ["HOME"]}, path=box.workspace / "sub" / "egg.yaml")

    result = box.exec("true", cwd=box.workspace / "sub")

    assert result.returncode == 0, result.stderr
