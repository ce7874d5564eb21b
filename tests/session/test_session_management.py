"""Living with many sessions: names, attach without an id, egg ls, egg rm and pruning, and the
small things a tmux user expects of status, replay and errors."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pexpect

from tests.session.test_sessions import (
    EGG,
    TIMEOUT,
    egg,
    kill,
    session_dir,
    wait_exited,
)


def run_detached(env: dict[str, str], project: Path, *args: str) -> str:
    result = egg(env, "run", "--detach", "--rows", "24", "--cols", "80", *args, cwd=project)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_named_session_is_reached_by_its_name(env: dict[str, str], project: Path) -> None:
    session = run_detached(env, project, "--name", "build", "--", "sleep", "600")
    try:
        status = json.loads(egg(env, "status", "build", "--json", cwd=project).stdout)
        assert status["id"] == session

        again = egg(env, "run", "--detach", "--name", "build", "--", "true", cwd=project)
        assert again.returncode == 2
        assert again.stderr.strip().splitlines()[-1] == (
            "egg: error: a running session is already named 'build'"
        )

        listing = egg(env, "ls", cwd=project).stdout
        header, row = listing.splitlines()[:2]
        assert header.split() == ["ID", "NAME", "AGENT", "STATE", "CLIENTS", "IDLE", "DIRECTORY"]
        assert row.split()[:5] == [session, "build", "shell", "running", "0"]
    finally:
        killed = egg(env, "kill", "build", cwd=project)
    assert killed.stdout.strip() == f"killed session {session}"
    bad = egg(env, "run", "--detach", "--name", "no spaces", "--", "true", cwd=project)
    assert bad.returncode == 2 and "bad session name 'no spaces'" in bad.stderr


def test_ls_with_nothing_running_says_so(env: dict[str, str], project: Path) -> None:
    listing = egg(env, "ls", cwd=project)

    assert listing.returncode == 0
    assert listing.stdout == "no running sessions (egg ls --all includes ended ones)\n"


def test_attach_without_an_id(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    none = egg(env, "attach", cwd=project)
    assert none.returncode == 2 and "no session is running" in none.stderr

    first = run_detached(env, project, "--", "sh")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = run_detached(env, elsewhere, "--", "sh")
    try:
        # several running: the one started in this directory
        child = pexpect.spawn(
            EGG[0], [*EGG[1:], "attach"], env=env, cwd=str(project), timeout=TIMEOUT
        )
        child.expect("\x1bc")
        child.sendcontrol("\\")
        child.expect(f"detached from session {first}")
        child.expect(pexpect.EOF)
        # several running, none here: list them and stop
        third = tmp_path / "third"
        third.mkdir()
        several = egg(env, "attach", cwd=third)
        assert several.returncode == 2
        assert first in several.stderr and second in several.stderr
        assert "several sessions are running" in several.stderr
    finally:
        kill(env, project, first)
        kill(env, project, second)


def test_rm_removes_ended_sessions_and_refuses_running_ones(
    env: dict[str, str], project: Path
) -> None:
    ended = run_detached(env, project, "--", "true")
    wait_exited(env, ended)
    running = run_detached(env, project, "--", "sleep", "600")
    try:
        result = egg(env, "rm", ended, running, cwd=project)

        assert result.returncode == 2
        assert result.stdout == f"session {ended}: removed\n"
        assert f"session {running} is running (egg kill it first)" in result.stderr
        assert not session_dir(env, ended).exists()
        assert session_dir(env, running).exists()
    finally:
        egg(env, "kill", running, cwd=project)


def test_rm_keeps_a_captured_conversation_unless_asked(env: dict[str, str], project: Path) -> None:
    session = run_detached(env, project, "--", "true")
    wait_exited(env, session)
    directory = session_dir(env, session)
    (directory / "chat.jsonl.gz").write_bytes(b"conversation")
    (directory / "chat.meta").write_text("agent=claude\n")

    kept = egg(env, "rm", session, cwd=project)
    assert kept.returncode == 0
    assert sorted(p.name for p in directory.iterdir()) == ["chat.jsonl.gz", "chat.meta", "egg.meta"]
    assert session not in egg(env, "ls", "--all", cwd=project).stdout

    gone = egg(env, "rm", "--with-history", session, cwd=project)
    assert gone.returncode == 0 and not directory.exists()


def test_ended_sessions_are_pruned_beyond_the_limits(env: dict[str, str], project: Path) -> None:
    old = [run_detached(env, project, "--", "true") for _ in range(3)]
    for session in old:
        wait_exited(env, session)
    meta = session_dir(env, old[0]) / "egg.meta"
    data = json.loads(meta.read_text())
    data["ended"] = time.time() - 30 * 86400
    meta.write_text(json.dumps(data))

    keep_two = {**env, "EGG_SESSIONS_KEEP": "2"}
    newest = run_detached(keep_two, project, "--", "sleep", "600")
    try:
        remaining = {p.name for p in (Path(env["EGG_HOME"]) / "sessions").iterdir()}
        assert old[0] not in remaining  # older than 7 days, and beyond the newest two
        assert {old[1], old[2], newest} <= remaining
    finally:
        egg(env, "kill", newest, cwd=project)


def test_status_prints_no_none_and_units(env: dict[str, str], project: Path) -> None:
    session = run_detached(env, project, "--", "sleep", "600")
    try:
        text = egg(env, "status", session, cwd=project).stdout
    finally:
        egg(env, "kill", session, cwd=project)

    assert "None" not in text
    fields = dict(line.split(None, 1) for line in text.splitlines())
    assert fields["uptime"].endswith(" s") and fields["state"] == "running"


def test_replay_speed_must_be_positive(env: dict[str, str], project: Path) -> None:
    for speed in ("0", "-1", "x"):
        result = egg(env, "replay", "nosuch", "--speed", speed, cwd=project)
        assert result.returncode == 2, result.stderr
        assert "--speed" in result.stderr


def test_kill_is_reported_as_killed(env: dict[str, str], project: Path) -> None:
    session = run_detached(env, project, "--", "sleep", "600")
    egg(env, "kill", session, cwd=project)
    wait_exited(env, session)

    listing = egg(env, "ls", "--all", cwd=project).stdout
    row = next(line for line in listing.splitlines() if line.startswith(session))
    assert row.split()[3] == "killed"
    assert os.path.isdir(session_dir(env, session))


def test_small_errors_are_one_clear_line(env: dict[str, str], project: Path) -> None:
    key = egg(env, "run", "--detach-key", "foo", "--", "true", cwd=project)
    assert key.returncode == 2
    assert key.stderr == "egg: error: bad detach key 'foo' (use e.g. ctrl-\\, ctrl-a or ^A)\n"

    typo = egg(env, "run", "claud", cwd=project)
    assert typo.returncode == 2
    assert "did you mean 'claude'?" in typo.stderr

    option = egg(env, "attach", "--bogus", cwd=project)
    assert option.returncode == 2
    assert "(see 'egg attach --help')" in option.stderr


def test_every_subcommand_and_option_has_help() -> None:
    import argparse

    from egg_core.cli.app import build_parser
    from egg_core.cli.builtin import builtin_commands
    from egg_core.commands import CommandRegistry

    registry = CommandRegistry()
    for command in builtin_commands():
        registry.register(command)
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, child in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}")
                    walk(child, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(registry), "egg")
    assert missing == []


def test_a_killed_daemons_cgroups_are_swept_by_the_next_egg_command(
    env: dict[str, str], project: Path
) -> None:
    """A daemon killed with -9 cannot remove the memory/pids cgroups of its sandbox; the next
    egg command removes those that are empty and whose creator is gone."""
    import signal

    from egg_plugins.platforms.linux import cgroups

    parents = list(cgroups.detect().parents.values())
    (project / "egg.yaml").write_text("resources: {memory: 256M, max_pids: 64}\n")
    session = run_detached(env, project, "--", "sleep", "600")
    daemon = int((session_dir(env, session) / "egg.pid").read_text())
    # egg makes a controller's parent cgroup when a launch first needs it: on a fresh host,
    # before any launch with a CPU budget, there is no cpuacct/egg yet
    mine = [
        c
        for parent in parents
        if parent.is_dir()
        for c in parent.iterdir()
        if c.name.removeprefix("egg-").startswith(f"{daemon}-")
    ]
    assert mine, "the session's sandbox has no cgroup"
    os.kill(daemon, signal.SIGKILL)
    deadline = time.monotonic() + TIMEOUT
    while any((c / "cgroup.procs").read_text().strip() for c in mine if c.exists()):
        assert time.monotonic() < deadline, "the sandbox outlived its daemon"
        time.sleep(0.05)

    egg(env, "ls", cwd=project)

    assert [c for c in mine if c.exists()] == []
