"""Frames for watchers of another size (issue 24, item 3), drawn into an emulator of the
watcher's size: its top-left corner is the session's screen, cut at its edges, and nothing else
is drawn; later frames redraw only what changed, and leave the same screen."""

from __future__ import annotations

from egg_core.session.mirror import Mirror
from tests.session.oracle import emulate

SESSION = (6, 20)
OUTPUT = (
    b"\x1b[2J\x1b[H\x1b[1;31mred\x1b[0m plain \xe4\xb8\xad\xe6\x96\x87 wide\r\n"
    b"a line long enough to wrap at twenty\r\n"
    b"\x1b[6;1Hbottom \x1b[7mreversed\x1b[0m\x1b[3;5H"
)


def shown(payload: bytes, rows: int, cols: int) -> list[str]:
    return emulate(payload, rows, cols).text()


def test_a_larger_watcher_shows_the_whole_screen_top_left_and_nothing_else() -> None:
    mirror = Mirror(*SESSION)
    frame = mirror.feed(OUTPUT, len(OUTPUT))
    want = emulate(OUTPUT, *SESSION)

    payload, _ = frame.draw(10, 30, None)

    screen = emulate(payload, 10, 30)
    assert screen.text() == want.text() + [""] * 4
    assert (screen.cursor.y, screen.cursor.x) == (want.cursor.y, want.cursor.x)
    assert screen.buffer[0][0].fg == "red" and screen.buffer[0][0].bold
    assert screen.buffer[5][7].reverse


def test_a_smaller_watcher_shows_the_top_left_part_cut_at_its_edges() -> None:
    mirror = Mirror(*SESSION)
    frame = mirror.feed(OUTPUT, len(OUTPUT))
    want = emulate(OUTPUT, *SESSION).text()

    payload, _ = frame.draw(4, 13, None)  # the wide 文 would straddle its right edge

    got = shown(payload, 4, 13)
    assert got[1:] == [row[:13].rstrip() for row in want[1:4]]
    assert got[0] == "red plain 中"  # 文 left out, not wrapped
    assert b"\xe6\x96\x87" not in payload


def test_later_frames_redraw_only_what_changed() -> None:
    mirror = Mirror(*SESSION)
    first, drawn = mirror.feed(OUTPUT, len(OUTPUT)).draw(10, 30, None)
    more = b"\x1b[2;1H\x1b[2Kchanged row"
    frame = mirror.feed(more, len(OUTPUT) + len(more))

    update, drawn = frame.draw(10, 30, drawn)

    assert update and b"changed row" in update and b"bottom" not in update
    assert shown(first + update, 10, 30)[:6] == emulate(OUTPUT + more, *SESSION).text()
    assert frame.draw(10, 30, drawn)[0] == b""  # nothing changed: nothing sent
