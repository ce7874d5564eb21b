"""An agent's first run from a fresh home (issue: the real agents, first run): its state
directories that do not exist yet are created and writable, and nothing else in $HOME is."""

from __future__ import annotations

import json
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


# -- the agent's own files at the top of $HOME (~/.claude.json): replaced atomically inside,
#    written back after the run; nothing else at the top of $HOME reaches the host

REPLACE = """
import json, os
path = os.path.expanduser("~/.claude.json")
before = open(path).read() if os.path.exists(path) else None
tmp = f"{path}.tmp.{os.getpid()}.abc123"
with open(tmp, "w") as handle:
    json.dump(NEW, handle)
os.rename(tmp, path)
report(before=before, after=json.load(open(path)))
"""


@pytest.mark.parametrize("existing", [True, False])
def test_claude_replaces_its_state_file_atomically_and_it_is_written_back(
    box: Box, existing: bool
) -> None:
    state = box.home / ".claude.json"
    if existing:
        box.write(".claude.json", '{"numStartups": 1}', 0o600)
    new = {"numStartups": 2, "projects": {str(box.workspace): {"hasTrustDialogAccepted": True}}}

    found = box.probe(f"NEW = {new!r}\n" + REPLACE, options=["--agent", "claude"])

    assert found["before"] == ('{"numStartups": 1}' if existing else None)
    assert found["after"] == new
    assert json.loads(state.read_text()) == new
    assert os.stat(state).st_uid == box.identity.uid
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    leftovers = [p.name for p in box.home.iterdir() if p.name.startswith(".claude.json.")]
    assert leftovers == []


def test_commands_planted_in_the_state_file_are_reverted_and_the_rest_kept(box: Box) -> None:
    box.write(".claude.json", '{"numStartups": 1}', 0o600)
    new = {
        "numStartups": 2,
        "mcpServers": {"x": {"command": "/tmp/evil"}},
        "env": {"PATH": "/tmp/evil-bin", "NODE_OPTIONS": "--require=/tmp/evil.js"},
        "projects": {"/w": {"mcpServers": {"y": {"command": "evil"}}, "lastCost": 0.5}},
    }

    result = box.py(f"NEW = {new!r}\n" + REPLACE, options=["--agent", "claude"])

    assert result.returncode == 0, result.stderr
    assert json.loads((box.home / ".claude.json").read_text()) == {
        "numStartups": 2,
        "projects": {"/w": {"lastCost": 0.5}},
    }
    assert "reverted mcpServers, env, projects./w.mcpServers in" in result.stderr


RC_FILES = [".bash_profile", ".profile", ".zshenv", ".npmrc", ".gitconfig", ".bashrc", ".zshrc"]


def test_nothing_else_at_the_top_of_home_reaches_the_host(box: Box) -> None:
    """The layer lets the agent replace its own file; rc files stay impossible to create or
    change on the host: created ones vanish with the run, existing ones cannot be written or
    renamed over, and the next run does not see what this one made."""
    before = {
        name: (box.home / name).read_bytes() for name in RC_FILES if (box.home / name).exists()
    }
    code = (
        "import os\n"
        "home = os.path.expanduser('~')\n"
        "results = {}\n"
        f"for name in {RC_FILES!r}:\n"
        "    path = os.path.join(home, name)\n"
        "    results[name + ':append'] = attempt(lambda: open(path, 'a').write('evil'))\n"
        "    tmp = path + '.tmp'\n"
        "    open(tmp, 'w').write('evil')\n"
        "    results[name + ':rename'] = attempt(os.rename, tmp, path)\n"
        "report(**results)\n"
    )

    found = box.probe(code, options=["--agent", "claude"])
    again = box.probe(
        f"import os\nreport(seen=[n for n in {RC_FILES!r}"
        " if os.path.exists(os.path.expanduser('~/' + n + '.tmp'))])",
        options=["--agent", "claude"],
    )

    for name in RC_FILES:
        host = box.home / name
        assert (host.read_bytes() if host.exists() else None) == before.get(name), name
        assert not (box.home / f"{name}.tmp").exists()
        if name in before:  # an existing file: neither written nor replaced
            assert found[f"{name}:append"] == "EROFS", found
            assert found[f"{name}:rename"] == "EBUSY", found
    assert again["seen"] == []


@pytest.mark.parametrize("planted", ["symlink", "fifo"])
def test_a_state_file_swapped_for_a_symlink_or_fifo_is_not_followed(box: Box, planted: str) -> None:
    """The write-back reads the layer (the sandbox's $HOME) without following anything: a
    symlink to a secret, or a FIFO, is not written back — nothing at all changes on the host."""
    box.write(".claude.json", '{"numStartups": 1}', 0o600)
    plant = (
        "os.symlink(os.path.expanduser('~/.ssh/id_ed25519'), path)"
        if planted == "symlink"
        else "os.mkfifo(path)"
    )
    code = (
        "import os\n"
        "path = os.path.expanduser('~/.claude.json')\n"
        f"os.unlink(path)\n{plant}\n"
        "report(ok=True)\n"
    )

    result = box.py(code, options=["--agent", "claude"], timeout=60)

    assert result.returncode == 0, result.stderr
    assert (box.home / ".claude.json").read_text() == '{"numStartups": 1}'
    assert ".claude.json" not in result.stderr  # nothing written back, so nothing to restore


def test_codex_home_names_the_writable_state_dir_and_its_config_is_guarded(box: Box) -> None:
    moved = box.home / "state" / "codex"
    box.mkdir("state")
    box.write("state/codex/config.toml", 'model = "a"\n', 0o600)
    code = (
        "import os\n"
        "home = os.environ['CODEX_HOME']\n"
        "open(os.path.join(home, 'config.toml'), 'a').write('notify = [\"/tmp/evil\"]\\n')\n"
        "os.makedirs(os.path.join(home, 'sessions'))\n"
        "report(default=attempt(os.makedirs, os.path.expanduser('~/.codex/x')))\n"
    )

    found = box.probe(code, options=["--agent", "codex"], env={"CODEX_HOME": str(moved)})

    assert (moved / "sessions").is_dir()
    assert (moved / "config.toml").read_text() == 'model = "a"\n'
    assert found["default"] == "EROFS"
