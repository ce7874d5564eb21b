"""Reattaching in a tmux pane (issue 24), as root and as uid 65534: the user's terminal is a real
tmux, run as the box's identity, and each test reads what that terminal shows and is left in
(``capture-pane``; ``#{alternate_on}``, ``#{cursor_flag}``), not what egg sent.

The program is a stand-in for opencode's TUI in a tmux pane: its start-up queries, some through
tmux's passthrough (``ESC P tmux; ESC ESC … ESC \\``: every inner ESC doubled), the alternate
screen, a hidden cursor, a title, a hyperlink, a kitty graphics query passed through, and, while
no client is attached, a passthrough it leaves unfinished for a while.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.linux.conftest import EGG, PY, Box, only_session
from tests.tmux import Tmux

STAND_IN = r"""
import os, sys, time, tty
tty.setraw(0)
out = lambda data: (os.write(1, data), None)[1]
def wait_for_file(name):
    while not os.path.exists(name):
        time.sleep(0.05)
def wait_for_key(key):
    while key not in os.read(0, 1024):
        pass
PT = lambda inner: b"\x1bPtmux;" + inner.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"
out(b"\x1b[?2031h\x1b]10;?\x07\x1b]11;?\x07\x1b[>0q\x1b[?25l\x1b[s\x1b[6n"
    + PT(b"\x1bP+q4d73\x1b\\\x1b[?1016$p\x1b[?2026$p") + b"\x1b[?u\x1b[u")
out(b"\x1b[?1049h\x1b[>4;1m\x1b[?2004h\x1b[?1000h\x1b[?1006h"
    + PT(b"\x1b_Gi=31337,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\") + PT(b"\x1b[c"))
out(b"\x1b]2;stand-in\x07\x1b[?25l\x1b[1;1H\x1b[48;5;232mSTAND-IN-UI top\x1b[0m"
    + b"\x1b[5;3H\x1b]8;;https://example.com\x1b\\a link\x1b]8;;\x1b\\"
    + PT(b"\x1b]52;c;?\x07") + b"\x1b[12;3Hprompt> " + PT(b"\x1b[6n")
    + b"\x1b[24;1Hstatus line\x1b[12;11H")
wait_for_file("go")  # the test has detached: what follows is only in the ring
out(b"\x1bPtmux;\x1b\x1b]2;half")  # a passthrough, unfinished while the client reattaches
open("written", "w").close()
wait_for_key(b"\x0e")  # Ctrl-N: finish it, and draw the next frame
out(b" a title\x07\x1b\x1b\\\x1b\\\x1b[14;3HSECOND-FRAME")
wait_for_key(b"\x14")  # Ctrl-T: exit as a crash would, leaving the modes as they are
sys.exit(3)
"""


def wait_for_path(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def reattach(pane: Tmux, session: str) -> str:
    """``egg attach`` in the pane's shell, once its screen is clear; the pane when the program's
    screen is back."""
    pane.keys("clear", "Enter")
    pane.wait_for_gone("egg attach")
    pane.keys(f"{EGG} attach {session}", "Enter")
    return pane.wait_for("STAND-IN-UI top")


def detach(pane: Tmux, session: str) -> None:
    pane.keys("C-\\")
    pane.wait_for(f"egg attach {session} to return")


def test_a_tui_reattached_in_a_tmux_pane_shows_and_ends_right(box: Box, pane: Tmux) -> None:
    box.write(box.workspace / "stand_in.py", STAND_IN)
    pane.start("sh", box.workspace)
    pane.keys(f"{EGG} run -- {PY} -I stand_in.py", "Enter")
    pane.wait_for("STAND-IN-UI top")
    session = only_session(box)
    try:
        detach(pane, session)
        box.write(box.workspace / "go", "")
        wait_for_path(box.workspace / "written")

        for _ in range(2):  # reattached, then detached and reattached again
            shown = reattach(pane, session)
            assert "a link" in shown and "prompt>" in shown and "status line" in shown, shown
            assert pane.flags()["alternate_on"] == "1" and pane.flags()["cursor_flag"] == "0"
            detach(pane, session)
            assert pane.flags()["alternate_on"] == "0" and pane.flags()["cursor_flag"] == "1"

        reattach(pane, session)
        pane.keys("C-n")  # the program ends its passthrough: what follows it reaches the pane
        shown = pane.wait_for("SECOND-FRAME")
        assert "half" not in shown and "a title" not in shown, shown
        pane.keys("C-t")
        shown = pane.wait_for("[exited 3]")

        assert pane.flags()["alternate_on"] == "0" and pane.flags()["cursor_flag"] == "1"
        assert "STAND-IN-UI" not in shown  # the shell's screen, not the program's
        meta = json.loads((box.egg_home / "sessions" / session / "egg.meta").read_text())
        assert meta["exit_code"] == 3
    finally:
        box.run("kill", session)  # (ended already, unless a check failed)


# -- a read-only watcher whose terminal is another size (issue 24, item 3)

#: long lines that wrap at the session's 80 columns, scrolled past its 24 rows, and a status
#: redrawn three rows up from the cursor, as Ink does; more of both when the test says so
WIDE = r"""
import os, sys, time
def wait_for_file(name):
    while not os.path.exists(name):
        time.sleep(0.05)
def burst(first, count):
    for i in range(first, first + count):
        sys.stdout.write("line %03d " % i + "abcdefghij" * 9 + "\r\n")
def status(k):
    sys.stdout.write("\r\n\r\n\r\n\x1b[3A\r\x1b[2K\x1b[7mSTATUS %d\x1b[0m three rows up\x1b[3B\r" % k)
    sys.stdout.flush()
burst(1, 30)
status(1)
wait_for_file("more")
burst(31, 7)
status(2)
wait_for_file("end")
"""


def session_screen(box: Box, session: str) -> list[str]:
    """``egg status ID --screen``: the session's screen, one row a line."""
    shown = box.run("status", session, "--screen")
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.removesuffix("\n").split("\n")
    assert len(rows) == 24, rows
    return rows


def watched(pane: Tmux, target: str) -> list[str]:
    return pane.screen(target).split("\n")


def wait_until_shows(pane: Tmux, target: str, want: list[str]) -> None:
    """Until the watcher's pane shows exactly ``want`` (its rows, right blanks trimmed), or
    fail showing both."""
    deadline = time.monotonic() + 30
    shown = watched(pane, target)
    while shown[: len(want)] != want or any(shown[len(want) :]):
        if time.monotonic() > deadline:
            raise AssertionError(
                "the watcher shows:\n"
                + "\n".join(shown)
                + "\nthe session's screen is:\n"
                + "\n".join(want)
            )
        time.sleep(0.05)
        shown = watched(pane, target)


def test_watchers_larger_and_smaller_see_the_sessions_screen_top_left(box: Box, pane: Tmux) -> None:
    """A larger watcher shows the session's whole screen in its top-left corner and nothing
    else; a smaller one its top-left part, each row cut at its right edge (nothing wrapped,
    nothing moved): the rows of ``egg status ID --screen``, live as the program goes on."""
    box.write(box.workspace / "wide.py", WIDE)
    started = box.run("run", "--detach", "--rows", "24", "--cols", "80", "--", PY, "-I", "wide.py")
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        deadline = time.monotonic() + 30
        while not any("STATUS 1" in row for row in session_screen(box, session)):
            assert time.monotonic() < deadline, "the program never drew its status"
            time.sleep(0.1)
        pane.start("sh", box.workspace, cols=120, rows=50)  # larger: window 0
        pane("new-window", "-d")
        pane("resize-window", "-t", ":1", "-x", "40", "-y", "12")  # smaller: window 1
        pane("new-window", "-d")
        pane("resize-window", "-t", ":2", "-x", "80", "-y", "24")  # the session's own size
        views = {":0": (50, 120), ":1": (12, 40), ":2": (24, 80)}
        for target, (rows, cols) in views.items():
            size = pane("display-message", "-p", "-t", target, "#{pane_height}x#{pane_width}")
            assert size.stdout.strip() == f"{rows}x{cols}", size
            pane.keys("-t", target, f"{EGG} attach --read-only {session}", "Enter")

        for step in ("STATUS 1", "STATUS 2"):
            screen = session_screen(box, session)
            assert any(step in row for row in screen), screen
            assert sum("line " in row for row in screen) >= 6  # wrapped and scrolled
            for target, (rows, cols) in views.items():
                wait_until_shows(pane, target, [row[:cols].rstrip() for row in screen[:rows]])
            box.write(box.workspace / "more", "")
            deadline = time.monotonic() + 30
            while not any("STATUS 2" in row for row in session_screen(box, session)):
                assert time.monotonic() < deadline, "the program never drew its second status"
                time.sleep(0.1)
        # the larger one made the session's size: raw output; then larger again: frames
        for rows, cols in ((24, 80), (30, 100)):
            pane("resize-window", "-t", ":0", "-x", str(cols), "-y", str(rows))
            wait_until_shows(pane, ":0", session_screen(box, session))
        assert status_clients(box, session) == 3
        assert (json.loads(box.run("status", session, "--json").stdout)["rows"]) == 24

        box.write(box.workspace / "end", "")
        for target in views:
            pane.wait_for("[exited]", target=target)
    finally:
        box.run("kill", session)


def status_clients(box: Box, session: str) -> int:
    return int(json.loads(box.run("status", session, "--json").stdout)["clients"])
