"""Threat N: a sandboxed program cannot write the user's clipboard through the terminal.

The user's terminal here is a real tmux with ``set-clipboard on``: an OSC 52 sequence that reaches
it becomes a tmux paste buffer, so an empty buffer list is proof that nothing got through.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.linux.conftest import Box

PAYLOAD = "cHduZWQ="  # base64 of "pwned"
EMIT = (
    f"printf '\\033]52;c;{PAYLOAD}\\a'; "
    f"printf '\\033Ptmux;\\033\\033]52;c;{PAYLOAD}\\a\\033\\\\'; "
    "echo visible-output; sleep 1"
)


def tmux(box: Box, *args: str) -> subprocess.CompletedProcess[str]:
    sock = str(box.home / "tmux.sock")
    return subprocess.run(
        box.identity.wrap(["tmux", "-S", sock, "-f", "/dev/null", *args]),
        env=box.env({"TERM": "xterm-256color", "SHELL": "/bin/sh"}),
        capture_output=True,
        text=True,
        timeout=30,
    )


def run_in_tmux(box: Box, command: str) -> tuple[str, str]:
    """``command`` in a fresh tmux window; (what the pane shows, the paste buffers) after it."""
    from tests.linux.conftest import EGG

    started = tmux(
        box,
        "new-session",
        "-d",
        "-x",
        "80",
        "-y",
        "24",
        "-c",
        str(box.workspace),
        f'{EGG} run -- sh -c "{command}"; echo EGG-DONE; sleep 30',
    )
    assert started.returncode == 0, started.stderr
    tmux(box, "set-option", "-g", "set-clipboard", "on")
    tmux(box, "set-option", "-g", "allow-passthrough", "on")
    deadline = time.monotonic() + 30
    pane = ""
    while time.monotonic() < deadline:
        pane = tmux(box, "capture-pane", "-p").stdout
        if "EGG-DONE" in pane:
            break
        time.sleep(0.1)
    buffers = tmux(box, "list-buffers", "-F", "#{buffer_sample}").stdout
    tmux(box, "kill-server")
    return pane, buffers


@pytest.fixture
def env_home(box: Box) -> Box:
    box.extra_env.update({"EGG_HOME": str(box.egg_home), "HOME": str(box.home)})
    return box


def test_a_clipboard_write_from_the_sandbox_never_reaches_the_terminal(env_home: Box) -> None:
    pane, buffers = run_in_tmux(env_home, EMIT)

    assert "visible-output" in pane and "EGG-DONE" in pane
    assert "pwned" not in buffers
    logs = list((env_home.egg_home / "sessions").rglob("egg.log"))
    assert any("dropped a clipboard write (OSC 52)" in p.read_text() for p in logs)


def test_clipboard_true_lets_it_through(env_home: Box) -> None:
    env_home.config({"clipboard": True})

    pane, buffers = run_in_tmux(env_home, EMIT)

    assert "EGG-DONE" in pane
    assert "pwned" in buffers
