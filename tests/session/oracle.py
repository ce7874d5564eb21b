"""The oracle the replay tests compare against: pyte (extended by ``screen.Screen``) fed bytes.

A replay is right when a fresh terminal fed the reattach payload shows what a terminal fed the
whole output stream shows. Both terminals are ``egg_core.session.screen.Screen`` — pyte plus
xterm's alternate screen buffer, per-screen DECSC and whole-screen background-colour erase, which
plain pyte lacks (it records ?1049 as a mode and otherwise ignores it, so a TUI's screen would be
drawn over the shell's and "the visible screen" would mean nothing). Only the visible screen is
compared: after an alternate-screen cut the hidden main screen is blank in the replay, by design.
"""

from __future__ import annotations

from egg_core.session.ring import ReplayRing
from egg_core.session.screen import ByteStream, Screen


def emulate(data: bytes, rows: int, cols: int) -> Screen:
    """A fresh rows x cols terminal after ``data``."""
    screen = Screen(cols, rows)
    ByteStream(screen).feed(data)
    return screen


def fed(data: bytes, capacity: int, chunks: list[int] | None = None) -> ReplayRing:
    """A ring fed ``data``, cut into chunks of the given sizes (cycled), or in one piece."""
    ring = ReplayRing(capacity)
    sizes, i, k = chunks or [len(data) or 1], 0, 0
    while i < len(data):
        size = max(1, sizes[k % len(sizes)])
        ring.feed(data[i : i + size])
        i, k = i + size, k + 1
    return ring


def state_differences(want: Screen, got: Screen) -> list[str]:
    """How two terminals differ in everything but the cells and the cursor position."""
    out = []
    for name, a, b in (
        ("pen", want.cursor.attrs, got.cursor.attrs),
        ("cursor hidden", want.cursor.hidden, got.cursor.hidden),
        ("modes", sorted(want.mode), sorted(got.mode)),
        ("scroll region", want.margins, got.margins),
        ("alternate screen", want.in_alt_screen, got.in_alt_screen),
        ("title", (want.title, want.icon_name), (got.title, got.icon_name)),
    ):
        if a != b:
            out.append(f"{name}: want {a!r}, got {b!r}")
    return out


def differences(want: Screen, got: Screen) -> list[str]:
    """How two terminals differ in what they show and in the state live output depends on."""
    out = state_differences(want, got)
    if (want.cursor.x, want.cursor.y) != (got.cursor.x, got.cursor.y):
        out.append(
            f"cursor: want {want.cursor.x},{want.cursor.y}, got {got.cursor.x},{got.cursor.y}"
        )
    for y in range(want.lines):
        for x in range(want.columns):
            if want.buffer[y][x] != got.buffer[y][x]:
                out.append(f"cell {y},{x}: want {want.buffer[y][x]}, got {got.buffer[y][x]}")
                break
    return out


def assert_same_screen(want: Screen, got: Screen) -> None:
    diff = differences(want, got)
    assert not diff, "\n".join(
        ["screens differ:", *diff[:8], "want:", *want.text(), "got:", *got.text()]
    )


def check_replay(data: bytes, ring: ReplayRing, rows: int, cols: int) -> None:
    """The payload for a rows x cols client shows what the whole stream shows."""
    assert_same_screen(emulate(data, rows, cols), emulate(ring.snapshot(rows, cols), rows, cols))
