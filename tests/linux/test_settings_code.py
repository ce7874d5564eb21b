"""Threat H: the code an agent's settings point at is protected like the settings themselves.

A hook script under ``~/.claude/``, a Claude Code plugin, a Gemini extension: the agent's next
run on the host, without egg, executes them. The sandbox tries to change each; nothing changes.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.linux.conftest import Box

ORIGINAL = "#!/bin/sh\necho original\n"


def claude_settings(box: Box) -> None:
    hooks = {
        "hooks": {
            "Stop": [
                {"hooks": [{"type": "command", "command": "python3 ~/.claude/hooks/guard.py"}]}
            ]
        },
        "statusLine": {"type": "command", "command": "$HOME/.claude/statusline.sh"},
    }
    box.write(".claude/settings.json", json.dumps(hooks))
    box.write(".claude/hooks/guard.py", ORIGINAL, mode=0o755)
    box.write(".claude/hooks/helper.py", ORIGINAL)
    box.write(".claude/statusline.sh", ORIGINAL, mode=0o755)


def test_scripts_the_settings_run_and_their_helpers_cannot_be_changed(box: Box) -> None:
    claude_settings(box)
    attack = box.exec(
        "sh",
        "-c",
        "for f in ~/.claude/hooks/guard.py ~/.claude/hooks/helper.py ~/.claude/statusline.sh; "
        "do echo 'touch PWNED' >> $f; done; echo x > ~/.claude/hooks/new.py; "
        "echo ok > ~/.claude/other.json; cat ~/.claude/other.json",
        options=["--agent", "claude"],
    )

    assert "Read-only" in attack.stderr
    for name in ("hooks/guard.py", "hooks/helper.py", "statusline.sh"):
        assert (box.home / ".claude" / name).read_text() == ORIGINAL, name
    assert not (box.home / ".claude" / "hooks" / "new.py").exists()
    assert attack.stdout.strip() == "ok"  # the rest of ~/.claude stays the agent's


def test_plugin_and_extension_directories_cannot_be_filled(box: Box) -> None:
    box.mkdir(".claude")
    box.mkdir(".gemini")
    claude = box.exec(
        "sh",
        "-c",
        "mkdir -p ~/.claude/plugins/evil && echo '{}' > ~/.claude/plugins/evil/plugin.json",
        options=["--agent", "claude"],
    )
    gemini = box.exec(
        "sh",
        "-c",
        "mkdir -p ~/.gemini/extensions/evil .gemini/extensions/evil; "
        "echo '{}' > ~/.gemini/extensions/evil/gemini-extension.json; "
        "echo '{}' > .gemini/extensions/evil/gemini-extension.json",
        options=["--agent", "gemini"],
    )

    assert claude.returncode != 0
    assert not list(box.home.rglob("plugin.json"))
    # the workspace had no .gemini: nothing could hold .gemini/extensions, so what the sandbox
    # made there was taken away after the run
    for where in (box.workspace, box.home / ".gemini"):
        assert not list(where.rglob("gemini-extension.json"))
    assert "agent code: removed" in gemini.stderr
    assert list((box.egg_home / "quarantine").rglob("gemini-extension.json"))
    # the placeholders held them only during the run
    assert not (box.home / ".claude" / "plugins").exists()
    assert not (box.workspace / ".gemini" / "extensions").exists()


@pytest.mark.parametrize(
    "inside",
    ["", "touch .gemini/extensions/a/b/x", 'mkdir e && ln -s "$PWD/e" .gemini/extensions/a/l'],
)
def test_a_code_directory_made_with_nothing_in_it_goes_without_a_word(
    box: Box, inside: str
) -> None:
    """A first run's skeleton (Claude makes ~/.claude/plugins/marketplaces, empty) holds nothing
    an agent could load: removed, not reported, not kept. One file — even an empty one — or a
    symlink in it, and it is quarantined and said, as any code directory the sandbox made."""
    made = box.exec(
        "sh", "-c", f"mkdir -p .gemini/extensions/a/b .gemini/extensions/c; {inside or 'true'}",
        options=["--agent", "gemini"],
    )  # fmt: skip

    assert made.returncode == 0, made.stderr
    assert not (box.workspace / ".gemini" / "extensions").exists()
    kept = [p.name for p in (box.egg_home / "quarantine").rglob("*")]
    if inside:
        assert "agent code: removed" in made.stderr
        assert kept
    else:
        assert "agent code" not in made.stderr, made.stderr
        assert not [name for name in kept if "extensions" in name], kept


def test_a_symlink_the_settings_name_gets_its_target_back(box: Box) -> None:
    real = box.write("scripts/real.sh", ORIGINAL, mode=0o755)
    box.write(".claude/settings.json", '{"statusLine": {"command": "~/.claude/line.sh"}}')
    link = box.home / ".claude" / "line.sh"
    os.symlink(real, link)
    os.lchown(link, box.identity.uid, box.identity.gid)

    run = box.exec(
        "sh",
        "-c",
        "echo 'touch PWNED' > evil.sh && ln -sfn \"$PWD/evil.sh\" ~/.claude/line.sh",
        options=["--agent", "claude"],
    )

    assert run.returncode == 0, run.stderr
    assert os.readlink(link) == str(real)
    assert "restored" in run.stderr
