"""The mode tracker: each tracked piece of state, repaint detection, the pen, the preamble."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from egg_core.session.modes import ModeTracker, SavedCursor, TerminalModes, fold_pen, pen_sgr
from egg_core.session.ring import ReplayRing


def track(*chunks: bytes) -> ReplayRing:
    ring = ReplayRing(1 << 16)
    for chunk in chunks:
        ring.feed(chunk)
    return ring


def modes(*chunks: bytes) -> TerminalModes:
    return track(*chunks).modes()


# -- DECSET modes --


@pytest.mark.parametrize(
    ("sequence", "attribute", "value"),
    [
        (b"\x1b[?25l", "cursor_visible", False),
        (b"\x1b[?25l\x1b[?25h", "cursor_visible", True),
        (b"\x1b[?2004h", "bracketed_paste", True),
        (b"\x1b[?2004h\x1b[?2004l", "bracketed_paste", False),
        (b"\x1b[?1h", "application_cursor_keys", True),
        (b"\x1b[?7l", "autowrap", False),
        (b"\x1b[?6h", "origin", True),
        (b"\x1b=", "keypad_application", True),
        (b"\x1b=\x1b>", "keypad_application", False),
    ],
)
def test_each_mode_is_tracked(sequence, attribute, value):
    assert getattr(modes(sequence), attribute) == value


def test_defaults_when_the_stream_never_said():
    m = modes(b"hello")
    assert m == TerminalModes()
    assert m.cursor_visible and m.autowrap and not m.origin and not m.bracketed_paste
    assert m.mode(2004) is None


@pytest.mark.parametrize("mode", [9, 1000, 1002, 1003, 1005, 1006, 1015, 1016])
def test_mouse_modes(mode):
    assert modes(b"\x1b[?%dh" % mode).mouse_modes == (mode,)
    assert modes(b"\x1b[?%dh\x1b[?%dl" % (mode, mode)).mouse_modes == ()


def test_several_modes_in_one_sequence():
    m = modes(b"\x1b[?1000;1006;2004h\x1b[?1000l")
    assert m.mouse_modes == (1006,) and m.bracketed_paste


def test_any_decset_mode_is_kept_for_the_replay():
    assert modes(b"\x1b[?1004h\x1b[?12h").private_modes == ((12, True), (1004, True))


@pytest.mark.parametrize("mode", [3, 1001, 2026])
def test_modes_a_replay_must_not_set_are_ignored(mode):
    assert modes(b"\x1b[?%dh" % mode).private_modes == ()


def test_insert_and_newline_modes():
    assert modes(b"\x1b[4h\x1b[20h\x1b[20l").ansi_modes == ((4, True), (20, False))
    assert modes(b"\x1b[12h").ansi_modes == ()  # local echo is not the client's business


# -- scroll region --


@pytest.mark.parametrize(
    ("sequences", "region"),
    [
        (b"\x1b[3;20r", (3, 20)),
        (b"\x1b[3;20r\x1b[r", None),
        (b"\x1b[3;20r\x1b[1;0r", None),
        (b"\x1b[5r", (5, 0)),
        (b"\x1b[3;20r\x1b[9;9r", (3, 20)),  # a one-line region is ignored
        (b"\x1b[3;20r\x1b[9;4r", (3, 20)),
    ],
)
def test_scroll_region(sequences, region):
    assert modes(sequences).scroll_region == region


# -- alternate screen --


@pytest.mark.parametrize("mode", [47, 1047, 1049])
def test_alternate_screen_entry_and_exit(mode):
    assert modes(b"\x1b[?%dh" % mode).alt_screen == mode
    assert modes(b"\x1b[?%dh\x1b[?%dl" % (mode, mode)).alt_screen == 0


def test_alternate_screen_is_not_a_mode_to_replay_blindly():
    assert modes(b"\x1b[?1049h").private_modes == ()


def test_ris_resets_everything():
    m = modes(b"\x1b[?25l\x1b[?1049h\x1b[1;31m\x1b[2;5r\x1b=\x1b]2;x\x07\x1bc")
    assert m == TerminalModes()


# -- other state --


def test_titles():
    assert modes(b"\x1b]0;both\x07").title == b"both"
    m = modes(b"\x1b]0;both\x07\x1b]2;title\x1b\\\x1b]1;icon\x07")
    assert (m.title, m.icon_name) == (b"title", b"icon")


def test_charsets_and_shifts():
    m = modes(b"\x1b(0\x1b)0\x0e")
    assert (m.g0, m.g1, m.shift_out) == (b"0", b"0", True)
    m = modes(b"\x1b(0\x1b)0\x0e", b"xx\x1b(B\x0f")
    assert (m.g0, m.g1, m.shift_out) == (None, b"0", False)


def test_cursor_style():
    assert modes(b"\x1b[5 q").cursor_style == b"5"
    assert modes(b"\x1b[5 q\x1b[0 q").cursor_style is None


def test_kitty_keyboard_stack():
    assert modes(b"\x1b[>1u\x1b[>3u").kitty_keyboard == (1, 3)
    assert modes(b"\x1b[>1u\x1b[>3u\x1b[<u").kitty_keyboard == (1,)
    assert modes(b"\x1b[>1u\x1b[<5u").kitty_keyboard == ()
    assert modes(b"\x1b[>1u\x1b[=4;2u").kitty_keyboard == (5,)
    assert len(modes(b"\x1b[>1u" * 100).kitty_keyboard) == 16


def test_modify_other_keys():
    assert modes(b"\x1b[>4;2m").modify_keys == ((4, b"2"),)
    assert modes(b"\x1b[>4;2m\x1b[>4m").modify_keys == ()
    assert modes(b"\x1b[>4;2m").pen == ()  # not an SGR


def test_saved_cursor_restores_pen_and_origin_but_not_autowrap():
    m = modes(b"\x1b[1;32m\x1b[?6h\x1b7\x1b[0m\x1b[?6l\x1b[?7l\x1b8")
    assert m.pen == (("bold", b"1"), ("fg", b"32"))
    assert m.origin and m.mode(7) is False  # xterm since patch 328, and tmux


def test_each_screen_has_its_own_saved_cursor():
    m = modes(b"\x1b[31m\x1b7\x1b[?1049h\x1b[32m\x1b7\x1b[0m\x1b[?1049l")
    assert m.pen == (("fg", b"31"),)  # ?1049h saved the red pen, ?1049l restores it
    assert m.saved_cursors[1] == SavedCursor(pen=(("fg", b"32"),))


def test_restore_without_save_resets_pen_and_origin():
    m = modes(b"\x1b[?6h\x1b[4m\x1b8")
    assert m.pen == () and not m.origin


def test_ris_forgets_the_main_screens_saved_cursor_and_keeps_the_alternates():
    m = modes(b"\x1b[31m\x1b7\x1b[?47h\x1b[32m\x1b7\x1b[?47l\x1bc")
    assert m.saved_cursors == (None, SavedCursor(pen=(("fg", b"32"),)))
    assert modes(b"\x1b[?47h\x1b[32m\x1b7\x1b[?47l\x1bc\x1b[?47h\x1b8").pen == (("fg", b"32"),)


def test_sco_save_and_restore_are_decsc_and_decrc():
    assert modes(b"\x1b[1m\x1b[s\x1b[0m\x1b[u").pen == (("bold", b"1"),)
    assert modes(b"\x1b[1m\x1b[s\x1b[0m\x1b[1u").pen == ()  # xterm: not with parameters
    assert modes(b"\x1b[1m\x1b[s\x1b[0m\x1b[<u\x1b[>1u").pen == ()  # the kitty protocol's
    assert modes(b"\x1b[?69h\x1b[1m\x1b[s\x1b[u").pen == ()  # with DECLRMM, CSI s is DECSLRM
    assert modes(b"\x1b[s").saved_cursors[0] == SavedCursor()


def test_tab_stops_are_noted_as_changed_until_a_reset():
    assert not modes(b"a\tb").tab_stops_changed
    assert modes(b"\x1bH").tab_stops_changed and modes(b"\x1b[3g").tab_stops_changed
    assert not modes(b"\x1b[0g\x1bc").tab_stops_changed


# -- what a replay from a repaint cannot know: where a saved cursor was --


def exact(*chunks: bytes) -> bool:
    tracker = track(*chunks)._tracker
    return tracker.alt_exact if tracker.in_alt_screen else tracker.main_exact


STATUS = b"\x1b7\x1b[1;1H\x1b[7mstatus\x1b8"


@pytest.mark.parametrize(
    ("stream", "is_exact"),
    [
        (b"ab" + STATUS + b"\x1b[H\x1b[2Jx", True),  # saved and restored before the repaint
        (b"ab\x1b[H\x1b[2Jx" + STATUS, True),  # both after it
        (b"ab\x1b7\x1b[H\x1b[2Jx\x1b8", False),  # saved before, restored after
        (b"ab\x1b[?1048h\x1b[H\x1b[2Jx\x1b[?1048l", False),
        (b"ab\x1b7\x1b[H\x1b[2Jx\x1b7\x1b8", True),  # saved again after it
        (b"\x1b7x\x1b8", True),  # saved at the stream's first byte: home, for the replay too
        (b"ab\x1b7\x1bcx\x1b8", True),  # RIS forgot it: home, for a reset client too
        (b"ab\x1b[H\x1b[2Jx\x1b8", True),  # nothing saved on the main screen: home
        (b"ab\x1b7\x1b[H\x1b[2Jx", True),  # never restored
        # found by CI: RIS in the alternate screen, so ?1049l restores the main screen's cursor
        (b"\x1b[?1049h\x1b[H\x1bca" + STATUS + b"\x1b[H\x1b[2J\x1b[?1049l", False),
        (b"\x1b[?1049h\x1b[H\x1bca" + STATUS + b"\x1b[?1049l\x1b[H\x1b[2J", True),
        # ?1049h in the alternate screen saves its cursor as it was before, which a cut there lacks
        (b"\x1b[?1049h\x1b[3;3H\x1b[?1049h\x1b[H\x1b8", False),
        (b"\x1b[?1049h\x1b[3;3H\x1b[?1049h\x1b[H\x1b7\x1b8", True),
        # the alternate screen's saved cursor outlives RIS, and a reset client keeps its own
        (b"\x1b[?47h\x1b7\x1b[?47l\x1bc\x1b[?47h\x1b8", False),
        (b"\x1b[?47hx\x1b8", False),
        (b"ab\x1b[?1049h\x1b[H" + STATUS + b"\x1b[?1049l", True),  # closes its own ?1049h
        (b"ab\x1b[s\x1b[H\x1b[2Jx\x1b[u", False),  # SCOSC, SCORC
        (b"ab\x1b[H\x1b[2Jx\x1b[s\x1b[u", True),
    ],
)
def test_a_repaint_is_exact_unless_a_cursor_saved_before_it_is_restored_after_it(stream, is_exact):
    assert exact(stream) is is_exact
    assert exact(*(stream[i : i + 1] for i in range(len(stream)))) is is_exact


# -- repaint points --


def repaint(*chunks: bytes) -> int:
    tracker = track(*chunks)._tracker
    spot = tracker.alt_repaint if tracker.in_alt_screen else tracker.main_repaint
    assert spot is not None
    return spot[0]


@pytest.mark.parametrize(
    "clear",
    [
        b"\x1b[H\x1b[2J",
        b"\x1b[2J\x1b[H",
        b"\x1b[1;1H\x1b[2J",
        b"\x1b[7;9H\x1b[2J",
        b"\x1b[2J\x1b[3;3f",
    ],
)
def test_clear_screen_with_an_absolute_position_is_a_repaint(clear):
    assert repaint(b"hello\r\n", clear, b"world") == 7


def test_clear_from_home_to_the_end_is_a_repaint():
    assert repaint(b"hello", b"\x1b[H\x1b[J") == 5
    assert repaint(b"hello", b"\x1b[H\x1b[0J") == 5
    assert repaint(b"\x1b[?6hhello", b"\x1b[H\x1b[J") == 0  # with origin mode, home is the region's


def test_bare_clear_is_not_a_repaint():
    assert repaint(b"hello\x1b[2Jx") == 0  # the cursor could be anywhere


def test_clear_and_position_split_across_chunks():
    assert repaint(b"hello\x1b[2J", b"\x1b[", b"1;1", b"H") == 5
    assert repaint(b"hello\x1b[H", b"\x1b[2J") == 5
    assert repaint(b"hello\x1b[2J", b"\x1b[31m") == 0


def test_ris_is_a_repaint():
    assert repaint(b"hello\x1bcworld") == 5


def test_alternate_screen_entry_is_a_repaint_of_the_alternate_screen():
    ring = track(b"shell\x1b[?1049hvim")
    assert ring._tracker.alt_repaint is not None
    pos, before = ring._tracker.alt_repaint
    assert pos == 5 and before.alt_screen == 0


def test_alternate_screen_without_clearing_is_a_repaint_only_when_known_blank():
    assert repaint(b"\x1b[?47hvim") == 0
    assert track(b"\x1b[?47hvim\x1b[?47l\x1b[?47h")._tracker.alt_repaint is None
    assert repaint(b"\x1b[?1047hvim\x1b[?1047l\x1b[?47hmore") == 19


def test_leaving_the_alternate_screen_forgets_its_repaint():
    ring = track(b"\x1b[H\x1b[2Jshell\x1b[?1049h\x1b[H\x1b[2Jvim\x1b[?1049l")
    assert ring._tracker.alt_repaint is None and ring._tracker.main_repaint[0] == 0


def test_repaint_remembers_the_state_just_before_it():
    ring = track(b"\x1b[?2004h\x1b[1mbold\x1b[H\x1b[2J\x1b[0m\x1b[?2004l")
    pos, before = ring._tracker.main_repaint
    assert pos == 16 and before.bracketed_paste and before.pen == (("bold", b"1"),)


# -- the pen --


@pytest.mark.parametrize(
    ("sgr", "pen"),
    [
        (b"\x1b[1;31m", (("bold", b"1"), ("fg", b"31"))),
        (b"\x1b[1;31m\x1b[0m", ()),
        (b"\x1b[1;31m\x1b[m", ()),
        (b"\x1b[1;31m\x1b[;4m", (("underline", b"4"),)),
        (b"\x1b[1;2m\x1b[22m", (("bold", b"22"), ("faint", b"22"))),
        (b"\x1b[38;5;200;48;2;1;2;3m", (("bg", b"48;2;1;2;3"), ("fg", b"38;5;200"))),
        (b"\x1b[4:3m\x1b[38:2::9:8:7m", (("fg", b"38:2::9:8:7"), ("underline", b"4:3"))),
        (b"\x1b[31m\x1b[38;5m", (("fg", b"31"),)),  # truncated colour: ignored
        (b"\x1b[7m\x1b[27m", (("reverse", b"27"),)),
        (b"\x1b[1;0;32m", (("fg", b"32"),)),
        (b"\x1b[99999999999m", ()),
        (b"\x1b[31m\x1b[38m", (("fg", b"31"),)),
        (b"\x1b[48;2;1m", ()),
    ],
)
def test_pen(sgr, pen):
    assert modes(sgr).pen == pen


def naive_fold(sequences: list[bytes]) -> dict[str, bytes]:
    pen: dict[str, bytes] = {}
    for params in sequences:
        pen = fold_pen(b"\x1b[" + params + b"m", 0, len(params) + 3, pen)
    return pen


SGR_PARAMS = st.lists(
    st.sampled_from(
        [
            b"",
            b"0",
            b"1",
            b"2",
            b"22",
            b"3",
            b"23",
            b"4",
            b"24",
            b"7",
            b"27",
            b"31",
            b"39",
            b"38;5;9",
            b"48;2;1;2;3",
            b"49",
            b"0;1",
            b"1;0",
            b"4:3",
            b"53",
        ]
    ),
    max_size=40,
)


@given(SGR_PARAMS, st.integers(0, 50))
def test_folding_a_chunk_equals_folding_one_sgr_at_a_time(sequences, noise):
    chunk = b"x".join(b"\x1b[" + p + b"m" for p in sequences) + b"y" * noise
    assert fold_pen(chunk, 0, len(chunk), {"fg": b"35"}) == naive_fold([b"35", *sequences])


def test_pen_sgr_puts_the_underline_colour_first_and_clears_intensity_first():
    pen = (("bold", b"1"), ("faint", b"22"), ("fg", b"31"), ("ulcolor", b"58;5;1"))
    assert pen_sgr(pen) == b"\x1b[0;58;5;1;22;1;31m"
    assert pen_sgr(()) == b""


# -- the preamble --

DEFAULTS = b"\x1b[?6l\x1b(B\x1b)B\x0f\x1b[0m"


def test_preamble_of_the_default_state_is_empty():
    assert TerminalModes().preamble() == b""


def test_preamble_orders_alternate_screen_first_and_pen_last():
    m = modes(
        b"\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[?7l\x1b[4h\x1b[3;9r\x1b=\x1b(0\x1b[2 q"
        b"\x1b]2;t\x07\x1b[>1u\x1b[>4;1m\x1b[1;34m"
    )
    saved = DEFAULTS + b"\x1b7"  # ?1049h saved the cursor: recreated before entering
    assert m.preamble() == saved + b"\x1b[?1049h" + DEFAULTS + (
        b"\x1b[?2004h\x1b[?7;25l\x1b[4h\x1b[3;9r\x1b=\x1b(0\x1b[2 q\x1b]2;t\x07"
        b"\x1b[>1u\x1b[>4;1m\x1b[0;1;34m"
    )


def test_preamble_recreates_saved_cursors_then_returns_to_defaults():
    m = modes(b"\x1b[1m\x1b[?6h\x1b7\x1b[0m\x1b[?6l")
    assert m.preamble() == DEFAULTS + b"\x1b[?6h\x1b[0;1m\x1b7" + DEFAULTS + b"\x1b[?6l"


def test_preamble_recreates_the_alternate_screens_saved_cursor_from_the_main_screen():
    m = modes(b"\x1b[?47h\x1b[32m\x1b7\x1b[?47l\x1b[0;1m\x1b7")
    alt, main = b"\x1b[0;32m\x1b7", b"\x1b[0;1m\x1b7"
    assert m.preamble() == (
        b"\x1b[?47h" + DEFAULTS + alt + b"\x1b[?47l" + DEFAULTS + main + DEFAULTS + b"\x1b[0;1m"
    )


# -- robustness --


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(64, 2048))
def test_feed_never_raises_and_always_snapshots(chunks, capacity):
    ring = ReplayRing(capacity)
    for chunk in chunks:
        ring.feed(chunk)
    assert ring.total == sum(map(len, chunks))
    assert ring.snapshot(5, 10).startswith(b"\x1bc")
    ring.modes().preamble()


ESCAPE_SOUP = st.lists(
    st.sampled_from(
        [
            *(b"\x1b", b"[", b"?", b"]", b"1049", b"47", b"25", b"38", b"48", b"5", b";", b":"),
            *(b"h", b"l", b"r", b"J", b"H", b"m", b"2", b"0", b"\x07", b"\\", b"c", b"7", b"8"),
            *(b"(", b"u", b">", b"<", b"=", b" q", b"\x0e", b"\x0f", b"x", b"\n", b"\xe4\xb8\xad"),
        ]
    ),
    max_size=200,
)


@given(ESCAPE_SOUP, st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_tracking_does_not_depend_on_chunking(pieces, sizes):
    data = b"".join(pieces)
    whole, split = ReplayRing(1 << 16), ReplayRing(1 << 16)
    whole.feed(data)
    i, k = 0, 0
    while i < len(data):
        split.feed(data[i : i + sizes[k % len(sizes)]])
        i, k = i + sizes[k % len(sizes)], k + 1
    assert split.modes() == whole.modes()
    for name in ("main_repaint", "alt_repaint", "main_exact", "alt_exact"):
        assert getattr(split._tracker, name) == getattr(whole._tracker, name)


def test_tracker_restarts_from_a_frozen_state():
    first = ModeTracker()
    first.scan(b"\x1b[?2004h\x1b[1m\x1b7\x1b[?1049h", 0)
    again = ModeTracker(first.modes())
    assert again.modes() == first.modes()
