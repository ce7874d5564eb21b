"""The core of conversation capture (egg_core.history) and each built-in agent's reading of its
own format (real transcripts in fixtures/, tool calls added from each format's definition)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from egg_core import history
from egg_core.history import HistoryError, Transcript
from egg_core.plugins import get_plugin_manager
from egg_core.registry import agents
from tests.history import samples


@pytest.fixture
def pm(egg_home: Path):
    return get_plugin_manager(environ={"EGG_HOME": str(egg_home)})


def render(pm, agent: str, data: bytes) -> list[history.Turn]:
    return pm.hook.egg_history_render(agent=agents(pm)[agent].obj, data=data)


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    root = tmp_path / "agent"
    (root / "projects").mkdir(parents=True)
    (root / "projects" / "t.jsonl").write_bytes(b'{"a": 1}\n' * 100)
    (tmp_path / "session").mkdir(mode=0o700)
    return Transcript(agent_session_id="id-1", root=root, file="projects/t.jsonl")


def test_an_unchanged_transcript_is_not_copied_again(transcript: Transcript, tmp_path: Path):
    session = tmp_path / "session"
    first = history.capture(transcript, session)
    history.write_meta(session, first)
    chat = session / history.CHAT_FILE
    inode = chat.stat().st_ino
    again = history.capture(transcript, session)
    assert "head" not in again and chat.stat().st_ino == inode  # kept, not rewritten
    with open(transcript.root / transcript.file, "ab") as grow:
        grow.write(b'{"b": 2}\n')
    third = history.capture(transcript, session)
    assert "head" in third and chat.stat().st_ino != inode
    assert history.read_capture(session).endswith(b'{"b": 2}\n')
    assert oct(chat.stat().st_mode & 0o777) == "0o600"


def test_a_transcript_over_the_cap_is_skipped(transcript, tmp_path, monkeypatch):
    monkeypatch.setattr(history, "MAX_BYTES", 100)
    with pytest.raises(HistoryError, match="not captured"):
        history.capture(transcript, tmp_path / "session")
    assert not (tmp_path / "session" / history.CHAT_FILE).exists()


def test_a_transcript_path_cannot_leave_the_agents_directory(tmp_path: Path):
    for bad in ("../x.jsonl", "/etc/passwd", "a/./b", ""):
        with pytest.raises(ValueError):
            Transcript(agent_session_id="x", root=tmp_path, file=bad)


def test_restore_keeps_a_longer_copy_the_agent_already_has(transcript: Transcript):
    path = transcript.root / transcript.file
    before = path.read_bytes()
    assert "kept" in history.restore(b"short", transcript)
    assert path.read_bytes() == before
    path.unlink()
    assert "restored" in history.restore(before, transcript)
    assert path.read_bytes() == before


def test_restore_replaces_a_planted_symlink_instead_of_writing_through_it(
    transcript: Transcript, tmp_path: Path
):
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    path = transcript.root / transcript.file
    path.unlink()
    path.symlink_to(victim)
    history.restore(b"the conversation\n", transcript)
    assert victim.read_text() == "untouched"
    assert not path.is_symlink() and path.read_bytes() == b"the conversation\n"


@pytest.mark.parametrize(
    ("agent", "sample", "first", "answer"),
    [
        ("claude", samples.claude, "first question please", "Hello from the model"),
        ("codex", samples.codex, "first codex question", "Hello from the model"),
        ("gemini", samples.gemini, "chosen id question", "Hello again"),
    ],
)
def test_each_agent_reads_its_real_transcript(pm, tmp_path, agent, sample, first, answer):
    made = sample(tmp_path / "w", "8d1f2b8e-0000-4000-8000-000000000001")
    turns = render(pm, agent, made.files[made.transcript])
    users = [t.text for t in turns if t.role == "user"]
    assert users[0] == first
    assert answer in [t.text for t in turns if t.role == "assistant"]
    assert not any(t.text.lstrip().startswith("<") for t in turns if t.role == "user")


TOOL_CALLS = {
    # built from each format's definition (the stand-in model calls no tools)
    "claude": {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"c": "ls"}}],
        },
    },
    "codex": {
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": '{"cmd": ["ls"]}'},
    },
    "gemini": {
        "id": "m9",
        "type": "gemini",
        "content": "",
        "toolCalls": [{"name": "run_shell_command", "args": {"command": "ls"}}],
    },
}


@pytest.mark.parametrize(
    ("agent", "tool"), [("claude", "Bash"), ("codex", "shell"), ("gemini", "run_shell_command")]
)
def test_tool_calls_are_one_line_with_their_name(pm, agent, tool):
    data = (json.dumps(TOOL_CALLS[agent]) + "\n").encode()
    turns = render(pm, agent, data)
    assert [(t.role, t.tool) for t in turns] == [("tool", tool)]


def test_other_agents_render_nothing_and_decline_with_a_reason(pm):
    table = agents(pm)
    assert render(pm, "claude", b"") == []
    assert pm.hook.egg_history_render(agent=table["opencode"].obj, data=b"x") is None
    from egg_core.session.conversations import declines

    assert "SQLite" in (declines(table["opencode"].obj) or "")
    assert declines(table["claude"].obj) is None
    assert declines(table["shell"].obj)


def test_list_names_and_read_head_do_not_follow_symlinks(tmp_path: Path):
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "f").write_text("data")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("SECRET")
    os.symlink(outside, root / "link")
    assert history.list_names(root, "real")[0][0] == "f"
    assert history.list_names(root, "link") == []
    assert history.read_head(root, "link/secret", 100) is None
    assert history.read_head(root, "real/f", 2) == b"da"


def test_a_capture_that_dies_midway_leaves_the_previous_one_whole(
    transcript: Transcript, tmp_path: Path, monkeypatch
):
    session = tmp_path / "session"
    history.write_meta(session, history.capture(transcript, session))
    before = history.read_capture(session)
    with open(transcript.root / transcript.file, "ab") as grow:
        grow.write(b'{"more": true}\n' * 1000)
    real_read = os.read
    calls = {"n": 0}

    def dying_read(fd: int, size: int) -> bytes:
        calls["n"] += 1
        if calls["n"] > 1:
            raise KeyboardInterrupt  # the daemon killed between two chunks
        return real_read(fd, min(size, 64))

    monkeypatch.setattr(os, "read", dying_read)
    with pytest.raises(KeyboardInterrupt):
        history.capture(transcript, session)
    monkeypatch.setattr(os, "read", real_read)
    assert history.read_capture(session) == before
    assert sorted(p.name for p in session.iterdir()) == [history.CHAT_FILE, history.META_FILE]
