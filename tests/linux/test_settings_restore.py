"""The agent settings snapshot on every launch path (threat H) and against every shape a hostile
sandbox leaves behind (threat M), as root and as uid 65534, with the real sandbox.

A fake ``claude`` on PATH plays the agent: it writes hooks into the settings files it may write
(its directory is writable), and shapes them so the restore has to work for it.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.linux.conftest import PY, Box

HOOKS = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch PWNED"}]}]}}'
HOOK_ENTRY = '"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch PWNED"}]}]}'
MCP_ENTRY = '"mcpServers": {"x": {"command": "touch PWNED"}}'
ORIGINAL = '{"theme": "dark"}'


def fake_claude(box: Box, script: str) -> dict[str, str]:
    """A ``claude`` that runs ``script`` (sh), and the PATH that finds it."""
    fake = box.write(box.root / "bin" / "claude", "#!/bin/sh\n" + script, mode=0o755)
    return {"PATH": f"{fake.parent}:/usr/local/bin:/usr/bin:/bin"}


# each file gets the commands claude would run from it, beside an ordinary change
PLANT = f"""
echo '{{"theme": "light", {HOOK_ENTRY}}}' > "$HOME/.claude/settings.json"
echo '{{"numStartups": 2, {MCP_ENTRY}}}' > "$HOME/.claude.json"
mkdir -p .claude && echo '{HOOKS}' > .claude/settings.local.json
echo '{{{MCP_ENTRY}}}' > .mcp.json
"""


def assert_restored(box: Box, settings: object = None) -> None:
    """The commands are gone; the ordinary changes stay; files that held only commands too.
    ``settings``: what ~/.claude/settings.json must hold (default: the run's ordinary change)."""
    found = json.loads((box.home / ".claude" / "settings.json").read_text())
    assert found == (settings or {"theme": "light"})
    assert json.loads((box.home / ".claude.json").read_text()) == {"numStartups": 2}
    assert not (box.workspace / ".claude" / "settings.local.json").exists()
    assert not (box.workspace / ".mcp.json").exists()


@pytest.mark.parametrize("path", ["exec (cache miss)", "exec (cache hit)", "run"])
def test_every_launch_path_restores_the_agents_settings(box: Box, path: str) -> None:
    box.write(".claude/settings.json", ORIGINAL)
    # without the agent's domains nothing needs the proxy, so the launch can be cached
    box.config({"network": {"agent_domains": "none"}})
    script = box.write(box.root / "agent.sh", "true\n")
    env = {**fake_claude(box, f'. "{script}"\n'), "EGG_EXEC_CACHE": "debug"}
    if path == "exec (cache hit)":
        # the first run in a fresh home makes the agent's directories: what it saw changed while
        # it looked, so it is not cached (egg_core.observe); the second run is
        for _ in range(2):
            warm = box.exec("claude", options=["--agent", "claude"], env=env)
            assert "exec cache miss" in warm.stderr, warm.stderr
    script.write_text(PLANT)

    if path == "run":
        result = box.run("run", "claude", env=env)
    else:
        result = box.exec("claude", options=["--agent", "claude"], env=env)

    assert result.returncode == 0, result.stderr
    if path == "exec (cache hit)":
        assert "exec cache hit" in result.stderr
    assert "egg: reverted" in result.stderr and "egg: removed" in result.stderr, [
        p.read_text() for p in box.egg_home.rglob("egg.meta")
    ] + [p.read_text() for p in box.egg_home.rglob("egg.log")]
    assert_restored(box)


def test_a_killed_egg_exec_is_restored_by_the_next_egg_command(box: Box) -> None:
    box.write(".claude/settings.json", ORIGINAL)
    env = fake_claude(box, PLANT + "sleep 60\n")
    proc = subprocess.Popen(
        box.command("exec", "--agent", "claude", "--", "claude"),
        env=box.env(env),
        cwd=box.workspace,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    settings = box.home / ".claude" / "settings.json"
    deadline = time.monotonic() + 30
    while settings.read_text() == ORIGINAL and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert settings.read_text() != ORIGINAL

    later = box.run("ls")

    assert later.returncode == 0, later.stderr
    assert later.stderr == ""  # listing reports nothing of it; egg doctor does
    assert "an egg exec was killed; settings restored" in box.run("doctor").stdout
    assert_restored(box)
    assert not list((box.egg_home / "run").glob("exec-*"))


# -- threat M: shapes the sandbox leaves for the restore ------------------------------------------


@pytest.mark.parametrize("mode", ["555", "600"])
def test_unwritable_settings_directories_do_not_stop_the_restore(box: Box, mode: str) -> None:
    """As uid 65534 ``chmod 555`` made the old restore raise; the daemon crashed, the hooks
    stayed, and every later egg command failed. ``chmod 600`` (readable, not searchable) let the
    directory open and then failed every look inside it."""
    box.write(".claude/settings.json", ORIGINAL)
    env = fake_claude(box, PLANT + f'chmod {mode} "$HOME/.claude"; chmod 0 .claude\n')

    result = box.run("run", "claude", env=env)
    later = box.run("ls", "--all")

    assert result.returncode == 0, result.stderr
    assert later.returncode == 0, later.stderr
    assert_restored(box)
    # the mode from before the run comes back; a directory the run created keeps its own
    assert stat.S_IMODE((box.home / ".claude").stat().st_mode) == 0o755


def test_a_deep_directory_where_settings_belong_does_not_stop_the_restore(box: Box) -> None:
    box.write(".claude/settings.json", ORIGINAL)
    # deeper than recursion or PATH_MAX allow (a shell's cd gives up at about 300 levels)
    deep = (
        "import os\n"
        "fd = os.open(os.path.expanduser('~/.claude'), os.O_RDONLY)\n"
        "os.unlink('settings.json', dir_fd=fd)\n"
        "for _ in range(3000):\n"
        "    os.mkdir('settings.json', dir_fd=fd)\n"
        "    child = os.open('settings.json', os.O_RDONLY, dir_fd=fd)\n"
        "    os.close(fd)\n"
        "    fd = child\n"
    )
    script = box.write(box.root / "deep.py", deep)
    env = fake_claude(box, PLANT + f"{PY} -I {script}\n")

    result = box.exec("claude", options=["--agent", "claude"], env=env, timeout=120)
    later = box.run("ls")

    assert result.returncode == 0, result.stderr
    assert later.returncode == 0, later.stderr
    assert "NOT restored" not in result.stderr
    # a directory where the file belongs is not a settings file to edit: restored whole
    assert_restored(box, settings=json.loads(ORIGINAL))


def test_a_project_settings_directory_swapped_for_a_symlink_is_not_left_in_force(box: Box) -> None:
    # cursor's project directory holds no read-only code directory (claude's .claude does
    # since threat R, and a directory with mounts in it cannot be moved at all: see below)
    box.write(box.workspace / ".cursor" / "mcp.json", ORIGINAL)
    fake = box.write(
        box.root / "bin" / "cursor-agent",
        "#!/bin/sh\nmkdir -p elsewhere && echo '{" + MCP_ENTRY + "}' > elsewhere/mcp.json && "
        'echo \'{"allow": ["*"]}\' > elsewhere/cli.json && '
        "mv .cursor moved && ln -s elsewhere .cursor\n",
        mode=0o755,
    )
    env = {"PATH": f"{fake.parent}:/usr/local/bin:/usr/bin:/bin"}

    result = box.run("run", "cursor", env=env)

    assert result.returncode == 0, result.stderr
    project = box.workspace / ".cursor"
    assert project.is_dir() and not project.is_symlink()
    assert (project / "mcp.json").read_text() == ORIGINAL
    assert not (project / "cli.json").exists()
    log = (box.egg_home / "sessions").rglob("egg.log")
    assert any("stood in place of the directory" in p.read_text() for p in log)


CHANGES_AROUND_AN_ABSENT_FILE = {
    "symlink": "mkdir -p elsewhere && mv .cursor moved && ln -s elsewhere .cursor",
    "mode": "chmod 700 .",
}


@pytest.mark.parametrize("change", sorted(CHANGES_AROUND_AN_ABSENT_FILE))
@pytest.mark.parametrize("path", ["exec (cache miss)", "exec (cache hit)"])
def test_an_absent_settings_file_under_a_directory_the_run_changed_is_still_restored(
    box: Box, path: str, change: str
) -> None:
    """A settings file that was absent and still is needs nothing put back — unless what is
    around it changed: the restore that would have been skipped for it (the fast path's, see
    egg_core.snapshot._untouched) must still take away a symlink put in place of the directory
    the file belongs in, and give the workspace back its mode."""
    (box.workspace / ".cursor").mkdir()  # the directory exists, its mcp.json does not
    os.chmod(box.workspace, 0o755)
    fake = box.write(
        box.root / "bin" / "cursor-agent",
        f"#!/bin/sh\n[ -e armed ] || exit 0\n{CHANGES_AROUND_AN_ABSENT_FILE[change]}\n",
        mode=0o755,
    )
    env = {"PATH": f"{fake.parent}:/usr/local/bin:/usr/bin:/bin", "EGG_EXEC_CACHE": "debug"}
    box.config({"network": {"agent_domains": "none"}})
    options = ["--agent", "cursor"]
    if path == "exec (cache hit)":
        for _ in range(2):
            box.exec("cursor-agent", options=options, env=env)
    box.write(box.workspace / "armed", "")

    result = box.exec("cursor-agent", options=options, env=env)

    assert result.returncode == 0, result.stderr
    if path == "exec (cache hit)":
        assert "exec cache hit" in result.stderr, result.stderr
    project = box.workspace / ".cursor"
    assert not project.is_symlink(), result.stderr
    assert stat.S_IMODE(box.workspace.stat().st_mode) == 0o755, result.stderr
    said = "stood in place of the directory" if change == "symlink" else "back its mode 755"
    assert said in result.stderr, result.stderr


def test_a_project_claude_directory_cannot_be_swapped_at_all(box: Box) -> None:
    box.write(box.workspace / ".claude" / "settings.json", ORIGINAL)
    env = fake_claude(box, "mkdir -p elsewhere && mv .claude moved && ln -s elsewhere .claude\n")

    result = box.run("run", "claude", env=env)

    assert "Device or resource busy" in result.stdout  # its read-only code directories hold it
    project = box.workspace / ".claude"
    assert project.is_dir() and not project.is_symlink()
    assert (project / "settings.json").read_text() == ORIGINAL


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
def test_what_cannot_be_restored_is_one_line_and_shown_by_doctor(box: Box) -> None:
    """The one thing a user cannot take back is another user's directory: the session's agent
    plants a file, then (the test, as root) the project's .claude becomes root's. The restore
    says so in one line, leaves no temporary behind, and egg doctor shows it."""
    env = fake_claude(box, PLANT + "sleep 60\n")
    started = box.run("run", "--detach", "claude", env=env)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    planted = box.workspace / ".claude" / "settings.local.json"
    deadline = time.monotonic() + 30
    while not planted.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.chown(planted.parent, 0, 0)
    os.chmod(planted.parent, 0o755)

    killed = box.run("kill", session)
    doctor = box.run("doctor")
    data = json.loads(box.run("doctor", "--json").stdout)

    assert killed.returncode == 0, killed.stderr
    assert planted.exists()
    log = (box.egg_home / "sessions" / session / "egg.log").read_text()
    assert f"NOT restored {planted}" in log
    assert "Traceback" not in log
    assert not [p for p in box.root.rglob(".*.egg-*")]
    assert f"NOT restored {planted}" in doctor.stdout
    assert any(f"NOT restored {planted}" in line for line in data["guard_log"])


def test_recovery_never_makes_another_egg_command_fail(box: Box) -> None:
    """A crashed session whose snapshot cannot be restored is reported, and egg goes on."""
    sessions = box.egg_home / "sessions"
    broken = box.mkdir(sessions / "deadbeef", mode=0o700)
    box.mkdir(sessions / ".live", mode=0o700)
    box.write(sessions / ".live" / "deadbeef", "999999")
    box.mkdir(broken / "settings", mode=0o700)
    box.write(broken / "settings" / "manifest", b"\x00garbage")

    result = box.run("ls")

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("identity", ["root"], indirect=True)
def test_a_killed_daemons_cgroups_are_swept_by_the_next_egg_command(box: Box) -> None:
    """Only root can create cgroups on this host (a delegated user would be the same case)."""
    started = box.run(
        "run", "--detach", "--", "sleep", "60", config={"resources": {"max_pids": 64}}
    )
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    directory = box.egg_home / "sessions" / session
    daemon = int((directory / "egg.pid").read_text())
    groups = _egg_cgroups_of(daemon)
    assert groups, "the session runs in no egg cgroup"
    os.kill(daemon, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any((g / "cgroup.procs").read_text().strip() for g in groups if g.exists()):
        assert time.monotonic() < deadline, "the sandbox outlived its daemon"
        time.sleep(0.05)

    later = box.run("ls")

    assert later.returncode == 0, later.stderr
    assert not [g for g in groups if g.exists()], "empty egg cgroups were left behind"


def _egg_cgroups_of(daemon: int) -> list[Path]:
    from pathlib import Path

    found = []
    for root in Path("/sys/fs/cgroup").rglob(f"*{daemon}-*"):
        if root.is_dir() and root.name.split("-")[-2] == str(daemon):
            found.append(root)
    return found
