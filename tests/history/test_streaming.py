"""``egg history show`` streams: what it prints is what it printed when it read the whole
capture (golden files of each agent's format, hostile variants included), a Gemini rewrite too
long to hold says what it said held whole, and a capture larger than the memory the command is
given still prints."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from egg_core import history, transcripts
from egg_core.plugins import get_plugin_manager
from egg_core.registry import agents
from egg_core.transcripts import TranscriptReader
from tests.history.shown import (
    FIXTURES,
    GOLDEN,
    big_transcript,
    capture_session,
    long_rewrites,
    show,
)
from tests.history.shown import transcripts as cases

CASES = cases()


@pytest.mark.parametrize("flags", [(), ("--json",)], ids=["text", "json"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_streamed_output_is_the_output_of_the_whole_read(egg_home: Path, name, flags):
    agent, data = CASES[name]
    session = capture_session(egg_home, agent, data)
    done = show(egg_home, session, *flags)
    suffix = "json" if flags else "txt"
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / f"{name}.{suffix}").read_bytes()
    assert done.stderr == (GOLDEN / f"{name}.{suffix}.stderr").read_bytes()


LONG = long_rewrites()


def _turns(pm, data: bytes) -> tuple[list[history.Turn], int]:
    reader = TranscriptReader.of_bytes(data)
    found = pm.hook.egg_history_turns(agent=agents(pm)["gemini"].obj, transcript=reader)
    return list(found), reader.skipped


@pytest.mark.parametrize("name", sorted(LONG))
def test_a_rewrite_too_long_to_hold_is_read_an_item_at_a_time(egg_home, monkeypatch, name):
    """Gemini rewrites its whole list as one line at every resume: a line longer than the
    reader holds is read in pieces, an item at a time, and says what the whole line said
    (here the limit is 2 KiB and a piece is 7 bytes: every item, character and number falls
    on a piece's edge somewhere)."""
    data, expected, skips = LONG[name]
    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home)})
    whole, _ = _turns(pm, expected)
    monkeypatch.setattr(transcripts, "MAX_LINE", 2048)
    monkeypatch.setattr(transcripts, "_STEP", 7)
    streamed, skipped = _turns(pm, data)
    assert streamed == whole and skipped == skips
    assert whole  # something to compare


def test_a_line_longer_than_the_limit_is_skipped_and_said(egg_home: Path):
    too_long = json.dumps(
        {"type": "user", "message": {"role": "user", "content": "x" * (33 << 20)}}
    )
    data = (
        (FIXTURES / "claude.jsonl").read_bytes()
        + too_long.encode()
        + b"\n"
        + (b'{"type": "user", "message": {"role": "user", "content": "after the long line"}}\n')
    )
    done = show(egg_home, capture_session(egg_home, "claude", data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(b"user:\nafter the long line\n") and b"xxxx" not in done.stdout
    assert done.stderr == b"egg: 1 line(s) of the transcript longer than 32 MiB were skipped\n"


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_capture_larger_than_the_memory_it_may_use_still_prints(egg_home, tmp_path, agent):
    """100 MiB of transcript (Gemini's half of it one line) under a 96 MiB address-space limit:
    read whole, it took six times that; streamed, every turn is printed."""
    source = tmp_path / "big.jsonl"
    users = big_transcript(agent, source, 100 << 20)
    session = capture_session(egg_home, agent, source.read_bytes())
    source.unlink()
    limit = 96 << 20

    def confined() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = show(egg_home, session, preexec=confined)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stderr == b""
    assert done.stdout.count(b"\nuser:\n") == users


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: b"not gzip at all" + data, "Not a gzipped file"),
        (lambda data: data[: len(data) // 2], "Compressed file ended before"),
    ],
    ids=["not gzip", "cut short"],
)
def test_a_damaged_capture_is_one_line_naming_it(egg_home: Path, damage, said):
    data = (FIXTURES / "claude.jsonl").read_bytes()
    session = capture_session(egg_home, "claude", data * 20)
    chat = egg_home / "sessions" / session / history.CHAT_FILE
    chat.write_bytes(damage(chat.read_bytes()))
    for flags in ((), ("--json",)):
        done = show(egg_home, session, *flags)
        assert done.returncode == 1
        [line] = done.stderr.decode().splitlines()
        assert line.startswith(f"egg: error: {chat} cannot be read: ") and said in line, line
