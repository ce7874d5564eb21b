"""A real tmux as the user's terminal, for the tests that read what a terminal is left showing:
its panes' screens (``capture-pane``) and the outer terminal's state as tmux itself reports it
(``display-message`` format variables). One tmux server per test, on a socket of its own, run as
the test's identity (root, or uid 65534 through ``setpriv``)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: the pane's terminal state, as tmux itself reports it
FLAGS = (
    "alternate_on",
    "cursor_flag",
    "keypad_flag",
    "keypad_cursor_flag",
    "mouse_any_flag",
    "mouse_sgr_flag",
)
TIMEOUT = 20.0


def _as_is(argv: Sequence[str]) -> list[str]:
    return list(argv)


class Tmux:
    """A tmux server of this test's own: the user's terminal.

    ``wrap`` turns an argv into the one that runs it as the test's identity (the socket and the
    configuration are then made under ``base``, which that identity must be able to write);
    ``config`` is added to the server's configuration (``default-terminal`` says what TERM the
    programs in its panes see)."""

    def __init__(
        self,
        base: Path,
        env: dict[str, str],
        wrap: Callable[[Sequence[str]], list[str]] = _as_is,
        config: str = "",
    ) -> None:
        self.sock = str(base / "tmux.sock")
        self.env = {**env, "SHELL": "/bin/sh", "TERM": "xterm-256color"}
        self.wrap = wrap
        self.config = base / "tmux.conf"
        self.config.write_text("set -g history-limit 100000\n" + config)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.wrap(["tmux", "-S", self.sock, "-f", str(self.config), *args]),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )

    def start(self, command: str, cwd: Path, cols: int = 80, rows: int = 24) -> None:
        result = self(
            "new-session", "-d", "-x", str(cols), "-y", str(rows), "-c", str(cwd), command
        )
        assert result.returncode == 0, result.stderr

    def screen(self, target: str | None = None) -> str:
        return self("capture-pane", "-p", *(("-t", target) if target else ())).stdout

    def everything(self) -> str:
        """The screen and all of the pane's scrollback, wrapped lines joined.

        Joined so a long command line (a deep checkout's path) that wraps
        cannot leave a fragment such as a session id's digits on a line of
        its own, where a test counting numbered lines would read it.
        """
        return self("capture-pane", "-p", "-J", "-S", "-").stdout

    def flags(self) -> dict[str, str]:
        fmt = " ".join(f"#{{{name}}}" for name in FLAGS)
        values = self("display-message", "-p", fmt).stdout.split()
        return dict(zip(FLAGS, values, strict=True))

    def wait_for(
        self, text: str, timeout: float = TIMEOUT, whole: bool = False, target: str | None = None
    ) -> str:
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.everything() if whole else self.screen(target)
            if text in "\n" + shown:
                return shown
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never appeared; the pane shows:\n{shown}")

    def wait_for_gone(self, text: str, timeout: float = TIMEOUT) -> None:
        """Until ``text`` is no longer on the screen."""
        deadline = time.monotonic() + timeout
        while text in "\n" + self.screen():
            assert time.monotonic() < deadline, f"{text!r} stayed on the screen"
            time.sleep(0.05)

    def keys(self, *keys: str) -> None:
        self("send-keys", *keys)
