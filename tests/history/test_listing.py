"""``egg history``'s list: one row per conversation (its resumes gathered in it, with how many
runs and when it was last used), a title an older egg kept with the agent's markup read again,
and the notes once, after the rows.

Each run is made as the session daemon makes it: its session directory and meta, the agent's
transcript where the agent writes it, and :class:`egg_core.session.conversations.Capturer` copying it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from egg_core import history
from egg_core.plugins import get_plugin_manager
from egg_core.registry import agents
from egg_core.session import conversations
from egg_core.session.store import create_session, write_json
from tests.history import samples
from tests.history.shown import EGG

A = "8d1f2b8e-0000-4000-8000-00000000000a"
B = "8d1f2b8e-0000-4000-8000-00000000000b"
MORE = {"type": "user", "message": {"role": "user", "content": "second question"}}


@pytest.fixture
def pm(egg_home: Path):
    return get_plugin_manager(environ={"EGG_HOME": str(egg_home)})


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "proj.x"
    path.mkdir()
    return path


def run(pm, egg_home: Path, home: Path, cwd: Path, ident: str, started: float, ended: float):
    """One finished claude session of conversation ``ident`` in ``cwd``: its transcript (in
    ``home``, as it is now) captured as the daemon captures it; the session id."""
    paths = create_session(egg_home)
    meta = {"agent": "claude", "cwd": str(cwd), "started": started, "ended": ended}
    write_json(paths.meta, {**meta, "state": "exited", "agent_session_id": ident})
    profile = agents(pm)["claude"].obj
    ctx = conversations.context(
        cwd=cwd, home=home, session_dir=paths.directory, environ={}, agent_session_id=ident
    )
    captured = conversations.Capturer(pm, profile, ctx, log=print).capture()
    assert captured is not None
    return paths.id


def transcript(home: Path, cwd: Path, ident: str, *extra: dict[str, object]) -> None:
    """Claude's real transcript of conversation ``ident`` in ``home`` (and ``extra`` records
    appended, as a resumed claude appends them)."""
    made = samples.claude(cwd, ident)
    data = made.files[made.transcript] + b"".join(json.dumps(r).encode() + b"\n" for r in extra)
    path = home / made.transcript
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_resumed_conversation_is_one_row_with_its_runs_and_last_use(
    pm, egg_home, egg_user_home, cwd
):
    home = egg_user_home
    transcript(home, cwd, A)
    first = run(pm, egg_home, home, cwd, A, 1000.0, 1100.0)
    transcript(home, cwd, B)
    other = run(pm, egg_home, home, cwd, B, 2000.0, 2100.0)
    transcript(home, cwd, A, MORE)
    resumed = run(pm, egg_home, home, cwd, A, 3000.0, 3100.0)

    rows = conversations.conversations(egg_home, str(cwd))

    assert [(r.latest.session, len(r.runs)) for r in rows] == [(resumed, 2), (other, 1)]
    listed = [r.to_json() for r in rows]
    assert listed[0] == {
        # the keys of a row as they were, each as it was for one run
        "session": resumed,  # the newest capture: the whole conversation, shown and resumed
        "agent": "claude",
        "agent_session_id": A,
        "directory": str(cwd),
        "started": 1000.0,  # when the conversation began
        "ended": 3100.0,
        "size": rows[0].latest.size,
        "title": "first question please",
        # and what a row of a conversation adds
        "runs": 2,
        "last_used": 3100.0,
        "sessions": [resumed, first],
    }
    assert rows[0].latest.size > rows[0].runs[1].size  # the resume's turns are in its copy
    assert listed[1]["runs"] == 1 and listed[1]["session"] == other
    assert listed[1]["last_used"] == 2100.0 and listed[1]["sessions"] == [other]


def test_a_conversation_resumed_elsewhere_is_one_row_with_all_and_one_run_here(
    pm, egg_home, egg_user_home, cwd, tmp_path
):
    home = egg_user_home
    transcript(home, cwd, A)
    here = run(pm, egg_home, home, cwd, A, 1000.0, 1100.0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    transcript(home, elsewhere, A, MORE)
    there = run(pm, egg_home, home, elsewhere, A, 2000.0, 2100.0)

    [every] = conversations.conversations(egg_home)
    [mine] = conversations.conversations(egg_home, str(cwd))

    assert [r.session for r in every.runs] == [there, here]
    assert every.to_json()["directory"] == str(elsewhere)
    assert [r.session for r in mine.runs] == [here]


def test_resume_without_a_session_puts_back_the_first_rows_newest_capture(
    pm, egg_home, egg_user_home, cwd
):
    """The conversation used last (a long run that ended after a later one began) is the one
    ``egg history`` lists first, and the one ``egg run claude --resume`` goes on with."""
    home = egg_user_home
    transcript(home, cwd, A)
    run(pm, egg_home, home, cwd, A, 1000.0, 1100.0)
    transcript(home, cwd, A, MORE)
    long = run(pm, egg_home, home, cwd, A, 2000.0, 9000.0)
    transcript(home, cwd, B)
    run(pm, egg_home, home, cwd, B, 3000.0, 3100.0)

    first = conversations.conversations(egg_home, str(cwd))[0]
    chosen = conversations.for_resume(egg_home, agents(pm)["claude"].obj, cwd, None)

    assert first.latest.session == long and first.last_used == 9000.0
    assert chosen.session == long and chosen.agent_session_id == A


def egg(egg_home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``egg ARGS`` as a user runs it in ``cwd`` (``egg history 2>&1 | less``): stderr into the
    same pipe as stdout, Python's buffering as it is by default."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [*EGG, *args],
        env={**env, "EGG_HOME": str(egg_home)},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )


def test_a_title_an_older_egg_kept_with_markup_is_read_again(pm, egg_home, egg_user_home, cwd):
    home = egg_user_home
    made = samples.claude(cwd, A)
    hostile = {"role": "user", "content": "<bash-input>ls \x1b[2J</bash-input>"}
    data = json.dumps({"type": "user", "message": hostile}).encode() + b"\n"
    path = home / made.transcript
    path.parent.mkdir(parents=True)
    path.write_bytes(data + made.files[made.transcript])
    session = run(pm, egg_home, home, cwd, A, 1000.0, 1100.0)
    meta_file = egg_home / "sessions" / session / history.META_FILE
    meta = json.loads(meta_file.read_text())
    assert meta["title"] == "! ls \x1b[2J"
    meta["title"] = hostile["content"]  # what egg kept before it read Claude's markup
    meta_file.write_text(json.dumps(meta))

    listed = egg(egg_home, cwd, "history", "--json")
    table = egg(egg_home, cwd, "history")

    assert listed.returncode == 0, listed.stdout
    assert [e["title"] for e in json.loads(listed.stdout)] == ["! ls \x1b[2J"]
    assert table.returncode == 0 and "\x1b" not in table.stdout
    assert "! ls \\x1b[2J" in table.stdout and "bash-input" not in table.stdout


def test_the_notes_come_once_after_the_rows(pm, egg_home, egg_user_home, cwd):
    home = egg_user_home
    transcript(home, cwd, A)
    first = run(pm, egg_home, home, cwd, A, 1000.0, 1100.0)
    resumed = run(pm, egg_home, home, cwd, A, 2000.0, 2100.0)
    for started in (1500.0, 2500.0, 3000.0):  # opencode ran here three times
        paths = create_session(egg_home)
        meta = {"agent": "opencode", "cwd": str(cwd), "started": started, "ended": started + 9}
        write_json(paths.meta, {**meta, "state": "exited"})

    listed = egg(egg_home, cwd, "history")

    assert listed.returncode == 0, listed.stdout
    header, row, note = listed.stdout.splitlines()
    assert header.split() == [
        *("SESSION", "AGENT", "AGENT", "SESSION", "STARTED", "LAST", "USED"),
        *("RUNS", "SIZE", "TITLE"),
    ]
    assert row.startswith(resumed) and first not in listed.stdout
    assert row.split()[7] == "2" and row.endswith("first question please")  # RUNS
    assert note.startswith("egg: opencode: conversations are not captured: opencode 1.18")
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"$ egg history\n{header}\n" in readme  # the README shows these columns
