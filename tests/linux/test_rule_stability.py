"""Class 4 of the persistence review: every rule means the same thing on the next run, whatever
the previous run renamed, linked or swapped.

A ``deny:`` under a writable directory: if a run could rename the directory that holds the
denied path, the rule of the next run would name a path that no longer exists, and the secret
would be readable under its new name.
"""

from __future__ import annotations

import pytest

from tests.linux.conftest import Box


@pytest.mark.parametrize(
    "move",
    [
        "mv cfg cfg-moved",  # the parent of the denied directory
        "mv cfg/private cfg/elsewhere",  # the denied directory itself
        "mkdir -p deeper && mv cfg deeper/cfg",
        "cp -al cfg cfg-linked",  # hard links of everything below
    ],
)
def test_a_denied_path_cannot_be_moved_out_from_under_its_rule(box: Box, move: str) -> None:
    box.write(box.workspace / "cfg" / "private" / "key", box.secret)
    box.write(box.workspace / "cfg" / "public.txt", "public")
    config = {"fs": ["deny:./cfg/private"]}

    first = box.exec("sh", "-c", move, config=config)
    second = box.exec(
        "sh",
        "-c",
        "cat cfg-moved/private/key cfg/elsewhere/key deeper/cfg/private/key "
        "cfg-linked/private/key cfg/private/key 2>/dev/null; true",
    )

    assert box.secret not in first.stdout + second.stdout
    assert (box.workspace / "cfg" / "private" / "key").read_text() == box.secret
    assert (box.workspace / "cfg" / "public.txt").read_text() == "public"


def test_the_rest_of_the_workspace_stays_writable(box: Box) -> None:
    box.write(box.workspace / "cfg" / "private" / "key", box.secret)
    config = {"fs": ["deny:./cfg/private"]}

    work = box.exec("sh", "-c", "echo x > cfg/new && mkdir other && mv other other2", config=config)

    assert work.returncode == 0, work.stderr
    assert (box.workspace / "cfg" / "new").read_text() == "x\n"
