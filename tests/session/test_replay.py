"""Reattach repaints: the payload shows what the whole stream showed (see ``oracle``)."""

from __future__ import annotations

import random

from egg_core.session.ring import RESET, ReplayRing
from tests.session.oracle import check_replay, differences, emulate, fed, state_differences

ROWS, COLS = 12, 50
SMALL = 4096


def lines(count: int, seed: int = 0) -> bytes:
    """Shell-like output: CR LF lines, some wider than the screen, some coloured, some UTF-8."""
    rng = random.Random(seed)
    words = [
        b"make",
        b"ok",
        b"caf\xc3\xa9",
        b"\xe4\xb8\xad\xe6\x96\x87",
        b"\x1b[32mPASS\x1b[0m",
        b"--",
    ]
    return b"".join(
        b"%d " % i + b" ".join(rng.choices(words, k=rng.randint(0, 15))) + b"\r\n"
        for i in range(count)
    )


def tui_frames(count: int, seed: int = 0, repaint_every: int = 25) -> bytes:
    """A full-screen program: clears now and then, otherwise moves the cursor and paints colour."""
    rng = random.Random(seed)
    out = []
    for frame in range(count):
        out.append(b"\x1b[?25l")
        if frame % repaint_every == 0:
            out.append(b"\x1b[H\x1b[2J\x1b[44m\x1b[K\x1b[1;37m title \x1b[0m")
        for _ in range(rng.randint(1, 6)):
            row, col = rng.randint(2, ROWS), rng.randint(1, COLS - 10)
            colour = rng.choice([b"31", b"1;33", b"38;5;208", b"48;2;10;20;30", b"7"])
            out.append(
                b"\x1b[%d;%dH\x1b[%sm%s\x1b[0m" % (row, col, colour, b"x" * rng.randint(1, 9))
            )
        out.append(b"\x1b[%d;%dH\x1b[?25h" % (rng.randint(1, ROWS), rng.randint(1, COLS)))
    return b"".join(out)


def test_plain_output_many_times_the_ring_repaints_exactly():
    data = lines(3000)
    ring = fed(data, SMALL, [100, 4096, 7])
    assert ring.total > 20 * SMALL
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.exact) == ("plain", True)
    check_replay(data, ring, ROWS, COLS)


def test_plain_output_replays_two_screens_plus_history_not_the_whole_ring():
    ring = fed(lines(5000), 1 << 20)
    payload = ring.snapshot(ROWS, COLS)
    assert payload.count(b"\r\n") >= 2 * ROWS + 500
    assert len(payload) < ring.capacity // 4


def test_output_that_fits_replays_from_stream_start():
    data = b"\x1b[1;31mhello\r\n\x1b[0mworld \xe2\x9c\x93"
    ring = fed(data, SMALL, [1])
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.start, cut.exact) == ("repaint", 0, True)
    check_replay(data, ring, ROWS, COLS)


def test_sgr_set_before_the_cut_colours_the_replayed_lines():
    data = b"\x1b[1;4;38;5;99m" + b"".join(b"still bold %d\r\n" % i for i in range(2000))
    ring = fed(data, SMALL, [333])
    assert ring.cut(ROWS).start > 100
    check_replay(data, ring, ROWS, COLS)


def test_modes_set_before_the_ring_window_are_restored():
    setup = b"\x1b[?25l\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?1h\x1b=\x1b]2;agent\x07\x1b[5 q"
    data = setup + lines(2000)
    ring = fed(data, SMALL, [512])
    assert ring.start > len(setup)
    assert ring.snapshot(ROWS, COLS).startswith(
        b"\x1bc\x1b[?1;1000;1006;2004h\x1b[?25l\x1b=\x1b[5 q\x1b]2;agent\x07"
    )
    modes = ring.modes()
    assert not modes.cursor_visible and modes.bracketed_paste and modes.mouse_modes == (1000, 1006)
    assert modes.application_cursor_keys and modes.keypad_application
    check_replay(data, ring, ROWS, COLS)


def test_alternate_screen_tui_repaints_from_its_last_clear():
    data = lines(30) + b"$ top\r\n\x1b[?1049h" + tui_frames(400)
    ring = fed(data, SMALL, [61, 1000, 3])
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.exact) == ("repaint", True)
    assert ring.read(cut.start).startswith(b"\x1b[H\x1b[2J")
    check_replay(data, ring, ROWS, COLS)


def test_cut_at_alternate_screen_entry_leaves_the_client_in_the_alternate_screen():
    data = lines(3000) + b"\x1b[31m\x1b[?1049h\x1b[5;5Hvim\x1b[0m"
    ring = fed(data, SMALL, [4096])
    cut = ring.cut(ROWS)
    assert cut.kind == "repaint" and ring.read(cut.start).startswith(b"\x1b[?1049h")
    replayed = emulate(ring.snapshot(ROWS, COLS), ROWS, COLS)
    assert replayed.in_alt_screen
    assert not differences(emulate(data, ROWS, COLS), replayed)


def test_leaving_the_alternate_screen_repaints_the_shell_underneath():
    data = b"\x1b[H\x1b[2J" + lines(5) + b"\x1b[?1049h" + tui_frames(50) + b"\x1b[?1049l$ "
    ring = fed(data, 1 << 16, [17])
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.start) == ("repaint", 0)
    check_replay(data, ring, ROWS, COLS)


def test_background_colour_clear_is_a_repaint_with_its_colour():
    data = lines(200) + b"\x1b[44m\x1b[H\x1b[2J\x1b[3;3Hblue" + b"\x1b[0m"
    ring = fed(data, SMALL, [100])
    assert ring.cut(ROWS).kind == "repaint"
    check_replay(data, ring, ROWS, COLS)


def test_scroll_region_with_a_repaint_in_the_ring():
    head = b"\x1b[H\x1b[2J\x1b[7mheader\x1b[0m\x1b[%d;1Hfooter\x1b[2;%dr\x1b[%d;1H" % (
        ROWS,
        ROWS - 1,
        ROWS - 1,
    )
    body = b"".join(b"log line %d\r\n" % i for i in range(150))
    data = lines(300) + head + body
    ring = fed(data, SMALL, [250])
    cut = ring.cut(ROWS)
    assert cut.kind == "repaint" and cut.modes.scroll_region is None
    assert ring.modes().scroll_region == (2, ROWS - 1)
    check_replay(data, ring, ROWS, COLS)


def test_scroll_region_set_before_the_window_is_restored_but_not_claimed_exact():
    head = b"\x1b[H\x1b[2J\x1b[7mheader\x1b[0m\x1b[2;%dr\x1b[%d;1H" % (ROWS, ROWS)
    data = head + b"".join(b"log line %d\r\n" % i for i in range(2000))
    ring = fed(data, SMALL, [250])
    cut = ring.cut(ROWS)
    assert not cut.exact  # the header drawn before the window is gone
    assert b"\x1b[2;%dr" % ROWS in ring.snapshot(ROWS, COLS)
    assert not state_differences(
        emulate(data, ROWS, COLS), emulate(ring.snapshot(ROWS, COLS), ROWS, COLS)
    )


def test_sequences_and_utf8_split_across_every_feed_call():
    data = (
        b"\x1b[?2004h\x1b]0;t\xc3\xaftle\x1b\\\x1b[38;2;1;2;3m\xe4\xb8\xad\xf0\x9f\x99\x82\r\n"
        + lines(100)
        + b"\x1b[H\x1b[2J\x1b[?25l\x1b[1;4m\xc3\xa9\xe2\x82\xac\x1b[5;5H\xf0\x9f\x99\x82"
    )
    whole, split = fed(data, SMALL), fed(data, SMALL, [1])
    assert whole.snapshot(ROWS, COLS) == split.snapshot(ROWS, COLS)
    assert whole.modes() == split.modes()
    check_replay(data, split, ROWS, COLS)


def test_sequences_and_utf8_split_at_the_ring_wrap_point():
    tail = b"\x1b[?25l\x1b]2;wrapped title\x07\x1b[1;38;5;202m\xf0\x9f\x99\x82\xe4\xb8\xad"
    for shift in range(len(tail)):  # the wrap lands inside every byte of the tail in turn
        capacity = 1024
        filler = lines(200)
        filler = filler[: filler.rfind(b"\r\n", 0, 5 * capacity - 20) + 2]
        filler += b"x" * (5 * capacity - shift - 9 - len(filler)) + b"\r\n"
        data = filler + b"\x1b[H\x1b[2J" + tail + b"\r\nend"
        assert data[5 * capacity - shift :].startswith(tail)
        ring = fed(data, capacity, [97])
        assert ring.cut(ROWS).exact
        check_replay(data, ring, ROWS, COLS)


def test_tui_that_never_clears_within_the_ring_falls_back_and_says_so():
    data = b"\x1b[?1049h\x1b[H\x1b[2J" + tui_frames(2000, repaint_every=10**6)
    ring = fed(data, SMALL, [300])
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.exact) == ("fallback", False)
    want, got = emulate(data, ROWS, COLS), emulate(ring.snapshot(ROWS, COLS), ROWS, COLS)
    assert got.in_alt_screen and not state_differences(want, got)


def test_saved_cursor_restores_the_saved_pen_after_the_cut():
    data = b"\x1b[1;35m\x1b7\x1b[0m" + lines(2000) + b"\x1b[H\x1b[2J\x1b8after restore"
    ring = fed(data, SMALL, [512])
    assert ring.cut(ROWS).kind == "repaint"
    check_replay(data, ring, ROWS, COLS)


def test_a_cursor_saved_before_the_cut_and_restored_after_it_makes_the_cut_inexact():
    """Found by CI: RIS inside an alternate-screen session leaves it, so the ?1049l closing the
    session restores the main screen's cursor, saved by a status line before the last clear."""
    session = b"\x1b[?1049h\x1b[H\x1bca\x1b7\x1b[1;1H\x1b[7mstatus\x1b8\x1b[H\x1b[2J\x1b[?1049l"
    data = session * 200
    ring = fed(data, SMALL, [1])
    cut = ring.cut(ROWS)
    assert (cut.kind, cut.exact) == ("repaint", False)
    want, got = emulate(data, ROWS, COLS), emulate(ring.snapshot(ROWS, COLS), ROWS, COLS)
    assert not state_differences(want, got)
    assert (want.cursor.x, got.cursor.x) == (1, 0)  # what "not exact" owns up to


def test_alternate_screen_entry_is_exact_once_the_cursor_is_positioned():
    """?1049h leaves the cursor where the shell had it, which a replay from the entry lacks."""
    shell = b"\x1b[H\x1b[2J" + lines(2000) + b"$ vim"
    ring = fed(shell + b"\x1b[?1049h\x1b[?25l~", SMALL, [700])
    assert (ring.cut(ROWS).kind, ring.cut(ROWS).exact) == ("repaint", False)
    data = shell + b"\x1b[?1049h\x1b[22;0;0t\x1b[?25l\x1b]2;vim\x07\x1b[3;1H~"
    ring = fed(data, SMALL, [700])
    assert (ring.cut(ROWS).kind, ring.cut(ROWS).exact) == ("repaint", True)
    check_replay(data, ring, ROWS, COLS)


def test_tabs_after_the_cut_with_tab_stops_changed_before_it_are_not_exact():
    data = b"\x1b[3g\x1b[1;20H\x1bH" + lines(2000) + b"\x1b[H\x1b[2Ja\tb"
    ring = fed(data, SMALL, [700])
    assert (ring.cut(ROWS).kind, ring.cut(ROWS).exact) == ("repaint", False)
    ring = fed(data[:-2], SMALL, [700])  # no tab yet
    assert (ring.cut(ROWS).kind, ring.cut(ROWS).exact) == ("repaint", True)
    check_replay(data[:-2], ring, ROWS, COLS)


def test_snapshot_is_a_reset_then_the_preamble_then_the_ring():
    ring = fed(b"\x1b[?2004h" + lines(2000), SMALL, [999])
    cut = ring.cut(ROWS)
    payload = ring.snapshot(ROWS, COLS)
    assert payload == RESET + cut.modes.preamble() + ring.read(cut.start)
    assert payload.startswith(b"\x1bc\x1b[?2004h")


def test_since_last_repaint_is_the_snapshot_without_the_reset():
    ring = ReplayRing(SMALL)
    ring.feed(tui_frames(100))
    assert RESET + ring.since_last_repaint(ROWS) == ring.snapshot(ROWS, COLS)


def test_max_bytes_bounds_the_replay_at_the_price_of_exactness():
    ring = fed(b"\x1b[H\x1b[2J" + tui_frames(2000, repaint_every=10**6), 1 << 20, [4096])
    assert len(ring.since_last_repaint(ROWS, max_bytes=10_000)) < 12_000
    assert ring.cut(ROWS, max_bytes=10_000).exact is False
