"""An agent's first run from a fresh home (issue: the real agents, first run): its state
directories that do not exist yet are created and writable, and nothing else in $HOME is."""

from __future__ import annotations

import os
import stat

import pytest

from .conftest import Box

FIRST_WRITES = [
    ("codex", ".codex/sessions/2026/rollout.jsonl"),
    ("gemini", ".gemini/tmp/p/chats/s.json"),
    ("opencode", ".local/share/opencode/opencode.db"),
    ("claude", ".claude/projects/p/s.jsonl"),
]


@pytest.mark.parametrize(("agent", "inside"), FIRST_WRITES)
def test_missing_agent_state_dirs_are_created_and_writable(
    box: Box, agent: str, inside: str
) -> None:
    state_dir = box.home / inside.split("/")[0]
    assert not state_dir.exists()

    result = box.exec(
        "sh",
        "-c",
        f"mkdir -p ~/{os.path.dirname(inside)} && echo state > ~/{inside}",
        options=["--agent", agent],
    )

    assert result.returncode == 0, result.stderr
    assert (box.home / inside).read_text() == "state\n"
    made = os.stat(box.home / agent_dir(agent))
    assert stat.S_IMODE(made.st_mode) == 0o700
    assert made.st_uid == box.identity.uid


def agent_dir(agent: str) -> str:
    return {"opencode": ".local/share/opencode"}.get(agent, f".{agent}")


def test_creating_an_agent_dir_opens_nothing_beside_it(box: Box) -> None:
    """~/.local/share/opencode is created for opencode; ~/.local itself stays read-only."""
    result = box.exec(
        "sh",
        "-c",
        "echo x > ~/.local/evil; echo x > ~/.local/share/evil; echo x > ~/.evil",
        options=["--agent", "opencode"],
    )

    assert (box.home / ".local/share/opencode").is_dir()
    for name in (".local/evil", ".local/share/evil", ".evil"):
        assert not (box.home / name).exists(), name
    assert result.stderr.count("Read-only file system") == 3, result.stderr
