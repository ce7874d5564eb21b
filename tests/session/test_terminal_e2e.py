"""Sessions as a tmux user lives in them: the user's terminal here is a real tmux pane, and each
test checks what that terminal is left in (its modes, its screen and scrollback, what the program
read), not only what egg sent."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.session.test_sessions import (
    EGG,
    TIMEOUT,
    attach,
    egg,
    kill,
    session_dir,
    start,
    status,
)
from tests.tmux import Tmux

EGG_CMD = " ".join(EGG)

# A full-screen program: alternate screen, application keypad and cursor keys, mouse reporting
# (SGR), hidden cursor; then it waits for a line and exits with the code it was given.
TUI = r"""
import sys, time
sys.stdout.write("\x1b[?1049h\x1b=\x1b[?1h\x1b[?1000h\x1b[?1006h\x1b[?25l\x1b[2J\x1b[HTUI-READY")
sys.stdout.flush()
line = sys.stdin.readline()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

# Asks the terminal the usual questions at start (with an argument: none), then records every
# byte it reads.
RECORDER = r"""
import os, sys, termios, tty
tty.setraw(0)
queries = (b"\x1b[c\x1b[>c\x1b[6n\x1b[>0q\x1b]10;?\x07\x1b]11;?\x1b\\\x1b[?2026$p\x1b[?u"
           b"\x1b[14t\x1bP+q544e\x1b\\")
os.write(1, (b"" if sys.argv[1:] else queries) + b"RECORDER-READY\r\n")
with open("read.log", "ab", buffering=0) as log:
    while True:
        data = os.read(0, 1024)
        if not data:
            break
        log.write(data)
"""


@pytest.fixture
def tmux(tmp_path: Path, env: dict[str, str]) -> Iterator[Tmux]:
    server = Tmux(tmp_path, env)
    yield server
    server("kill-server")


def write(project: Path, name: str, text: str) -> str:
    (project / name).write_text(text)
    return name


def assert_terminal_restored(tmux: Tmux) -> None:
    """What tmux leaves after its own detach: main screen, cursor shown, no keypad or mouse."""
    assert tmux.flags() == {
        "alternate_on": "0",
        "cursor_flag": "1",
        "keypad_flag": "0",
        "keypad_cursor_flag": "0",
        "mouse_any_flag": "0",
        "mouse_sgr_flag": "0",
    }


# -- 1. every way of leaving puts the terminal back, then says why on a line of its own


def run_tui_in_tmux(tmux: Tmux, project: Path, code: int = 0) -> str:
    """``egg run`` the full-screen program in the pane; its session id."""
    write(project, "tui.py", TUI)
    tmux.start(f"{EGG_CMD} run -- python3 tui.py {code}; echo AFTER-$?; sleep 600", project)
    tmux.wait_for("TUI-READY")
    assert tmux.flags()["alternate_on"] == "1" and tmux.flags()["mouse_any_flag"] == "1"
    sessions = sorted((Path(tmux.env["EGG_HOME"]) / "sessions").glob("????????"))
    return sessions[-1].name


def test_detach_restores_the_terminal(tmux: Tmux, env: dict[str, str], project: Path) -> None:
    session = run_tui_in_tmux(tmux, project)
    try:
        tmux.keys("C-\\")
        shown = tmux.wait_for("AFTER-0")

        assert f"[detached from session {session}; egg attach {session} to return]" in shown
        assert "TUI-READY" not in shown  # the prompt is back on the main screen
        assert_terminal_restored(tmux)
    finally:
        egg(env, "kill", session, cwd=project)


def test_the_program_exiting_restores_the_terminal(tmux: Tmux, project: Path) -> None:
    run_tui_in_tmux(tmux, project, code=5)
    tmux.keys("Enter")
    shown = tmux.wait_for("AFTER-5")

    assert "[exited 5]" in shown
    assert_terminal_restored(tmux)


def test_egg_kill_restores_the_terminal_and_says_killed(
    tmux: Tmux, env: dict[str, str], project: Path
) -> None:
    session = run_tui_in_tmux(tmux, project)
    egg(env, "kill", session, cwd=project)
    shown = tmux.wait_for("AFTER-")

    assert "[killed by egg kill]" in shown
    assert "exited" not in shown
    assert_terminal_restored(tmux)


def test_a_lost_daemon_restores_the_terminal(
    tmux: Tmux, env: dict[str, str], project: Path
) -> None:
    session = run_tui_in_tmux(tmux, project)
    daemon = int((session_dir(env, session) / "egg.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    shown = tmux.wait_for("AFTER-1")

    assert f"[lost the connection to session {session}]" in shown
    assert_terminal_restored(tmux)
    egg(env, "ls", cwd=project)  # recovers what the dead daemon left


# -- 0. a repaint never makes the terminal answer into the program


def test_reattaching_never_types_the_terminals_answers_into_the_program(
    tmux: Tmux, env: dict[str, str], project: Path
) -> None:
    write(project, "recorder.py", RECORDER)
    session = start(env, project, "python3", "recorder.py")
    try:
        # it asked its questions with no terminal attached (a client attached then would get
        # them live, and answer them, as it should)
        deadline = time.monotonic() + TIMEOUT
        while status(env, project, session)["bytes"] < 80 and time.monotonic() < deadline:
            time.sleep(0.05)
        tmux.start("sh", project)
        for _ in range(3):
            tmux.keys(f"{EGG_CMD} attach {session}", "Enter")
            tmux.wait_for("RECORDER-READY")
            time.sleep(0.3)  # the terminal's answers, if any, arrive now
            tmux.keys("C-\\")
            tmux.wait_for(f"egg attach {session} to return")
            tmux.keys("clear", "Enter")
            time.sleep(0.2)
        recorded = (project / "read.log").read_bytes() if (project / "read.log").exists() else b""
        assert recorded == b""
        assert status(env, project, session)["exit_code"] is None
    finally:
        egg(env, "kill", session, cwd=project)


def test_the_detach_key_twice_reaches_the_program(
    tmux: Tmux, env: dict[str, str], project: Path
) -> None:
    write(project, "recorder.py", RECORDER)
    tmux.start(f"{EGG_CMD} run -- python3 recorder.py quiet; echo AFTER-$?; sleep 600", project)
    tmux.wait_for("RECORDER-READY")
    (session,) = (Path(env["EGG_HOME"]) / "sessions").glob("????????")
    try:
        tmux.keys("C-\\", "C-\\")
        deadline = time.monotonic() + TIMEOUT
        log = project / "read.log"
        while not (log.exists() and log.read_bytes()) and time.monotonic() < deadline:
            time.sleep(0.05)

        assert log.read_bytes() == b"\x1c"
        assert "AFTER-" not in tmux.screen()  # still attached
        tmux.keys("C-\\")
        tmux.wait_for("[detached from session")
    finally:
        egg(env, "kill", session.name, cwd=project)  # the recorder reads until its input ends


# -- 2. the whole stream from the first byte, and scrollback on a reattach


def test_egg_run_shows_the_output_from_the_first_byte(tmux: Tmux, project: Path) -> None:
    tmux.start(f"{EGG_CMD} run -- seq 1 3000; echo AFTER-$?; sleep 600", project)
    everything = tmux.wait_for("AFTER-0", whole=True)

    lines = everything.splitlines()
    numbers = [line for line in lines if line.strip().isdigit()]
    assert numbers == [str(n) for n in range(1, 3001)]
    # the one-line hint is still there, above the output
    assert any("policy: egg explain" in line for line in lines[: lines.index("1")])


def test_egg_run_piped_gets_no_terminal_reset(env: dict[str, str], project: Path) -> None:
    result = subprocess.run(
        " ".join([*EGG, "run", "--", "echo", "piped"]) + " | cat",
        shell=True,
        env=env,
        cwd=project,
        capture_output=True,
        timeout=TIMEOUT,
    )

    assert result.stdout.startswith(b"piped"), result.stdout[:80]
    assert b"\x1bc" not in result.stdout


def test_reattach_gives_the_asked_scrollback(
    tmux: Tmux, env: dict[str, str], project: Path
) -> None:
    session = start(env, project, "sh", "-c", "seq 1 5000; sleep 600")
    try:
        time.sleep(1)
        tmux.start("sh", project)
        tmux.keys(f"{EGG_CMD} attach --history 3000 {session}", "Enter")
        everything = tmux.wait_for("5000", whole=True)
        numbers = [int(line) for line in everything.split() if line.isdigit()]
        assert numbers[-1] == 5000
        assert 3000 <= len(numbers) < 5000
        tmux.keys("C-\\")
        tmux.wait_for(f"egg attach {session} to return")
        tmux.keys("clear", "Enter")
        tmux.wait_for_gone("5000")  # the shell has cleared the screen (and pushed it to history)
        tmux("clear-history")
        assert "5000" not in tmux.everything()
        tmux.keys(f"{EGG_CMD} attach --history all {session}", "Enter")
        everything = tmux.wait_for("5000", whole=True)
        numbers = [int(line) for line in everything.split() if line.isdigit()]
        sizes = tmux("display-message", "-p", "#{history_size}/#{history_limit}").stdout
        assert numbers[0] == 1, f"history {sizes.strip()}, first lines {everything[:300]!r}"
        tmux.keys("C-\\")
    finally:
        egg(env, "kill", session, cwd=project)


# -- 3. a flood of output, then exit: the final screen and the real exit code, every time


def test_huge_output_then_exit_ends_on_the_final_screen(tmux: Tmux, project: Path) -> None:
    tmux.start("sh", project, cols=120, rows=40)
    for run in range(10):
        tmux.keys(f"{EGG_CMD} run -- bash -c 'seq 1 2000000; echo DONE'; echo EXIT=$?", "Enter")
        screen = tmux.wait_for("\nEXIT=", timeout=120)
        lines = [line.strip() for line in screen.splitlines() if line.strip()]
        end = lines.index("EXIT=0") if "EXIT=0" in lines else len(lines)
        assert lines[end - 2 : end + 1] == ["DONE", "[exited]", "EXIT=0"], (run, lines[-6:])
        tmux.keys("clear", "Enter")
        tmux("clear-history")
        tmux.wait_for("$")


# -- 4. sizes with several clients


def test_the_size_follows_the_remaining_writable_client(env: dict[str, str], project: Path) -> None:
    session = start(env, project, "sh")
    clients: list[pexpect.spawn] = []
    try:
        big = _attach(env, project, session, rows=40, cols=120)
        clients.append(big)
        small = _attach(env, project, session, rows=20, cols=60)
        clients.append(small)
        assert (status(env, project, session)["rows"], status(env, project, session)["cols"]) == (
            20,
            60,
        )
        watcher = _attach(env, project, session, "--read-only", rows=10, cols=30)
        clients.append(watcher)
        assert status(env, project, session)["rows"] == 20  # read-only never resizes

        small.sendcontrol("\\")
        small.expect(pexpect.EOF)
        deadline = time.monotonic() + TIMEOUT
        while status(env, project, session)["rows"] != 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (status(env, project, session)["rows"], status(env, project, session)["cols"]) == (
            40,
            120,
        )
    finally:
        for client in clients:
            client.close(force=True)
        kill(env, project, session)


def _attach(
    env: dict[str, str], project: Path, session: str, *extra: str, rows: int, cols: int
) -> pexpect.spawn:
    """test_sessions' attach, then a moment for the size it sends to reach the daemon."""
    child = attach(env, project, session, *extra, rows=rows, cols=cols)
    time.sleep(0.2)
    return child
