"""The on-demand screen: pyte plus xterm's alternate screen, per-screen DECSC, whole-screen BCE."""

from __future__ import annotations

import pyte
import pytest
from hypothesis import given
from hypothesis import strategies as st

from egg_core.session.ring import ReplayRing
from egg_core.session.screen import ByteStream, Screen, render


def test_render_gives_the_visible_lines_and_the_cursor():
    screen = render(b"hello\r\n\x1b[1mw\xc3\xb6rld\x1b[?25l", 3, 10)
    assert screen.text() == ["hello", "w\xf6rld", ""]
    assert (screen.cursor.x, screen.cursor.y, screen.cursor.hidden) == (5, 1, True)
    assert screen.buffer[1][0].bold


def test_render_of_a_ring():
    ring = ReplayRing(1024)
    for i in range(500):
        ring.feed(b"line %d\r\n" % i)
    assert render(ring.since_last_repaint(4), 4, 20).text() == [
        "line 497",
        "line 498",
        "line 499",
        "",
    ]


def test_1049_saves_the_cursor_switches_clears_and_comes_back():
    screen = render(b"shell\x1b[?1049h", 3, 10)
    assert screen.in_alt_screen and screen.text() == ["", "", ""]
    assert (screen.cursor.x, screen.cursor.y) == (5, 0)  # xterm does not move the cursor
    screen = render(b"shell\x1b[?1049h\x1b[3;1Hvim\x1b[?1049l", 3, 10)
    assert not screen.in_alt_screen and screen.text() == ["shell", "", ""]
    assert (screen.cursor.x, screen.cursor.y) == (5, 0)


def test_1049_clears_the_alternate_screen_every_time():
    assert render(b"\x1b[?1049hold\x1b[?1049l\x1b[?1049h", 2, 10).text() == ["", ""]


def test_47_keeps_the_alternate_screen_and_1047_clears_it_on_leaving():
    assert render(b"\x1b[?47hold\x1b[?47l\x1b[?47h", 2, 10).text() == ["old", ""]
    assert render(b"\x1b[?1047hold\x1b[?1047l\x1b[?47h", 2, 10).text() == ["", ""]


def test_alternate_screen_modes_are_not_recorded_as_modes():
    screen = render(b"\x1b[?1049h\x1b[?47h\x1b[?1048h", 2, 10)
    assert not {47 << 5, 1047 << 5, 1048 << 5, 1049 << 5} & screen.mode


def test_ris_leaves_the_alternate_screen_and_forgets_the_main_screens_saved_cursor():
    screen = render(b"\x1b[2;2H\x1b7\x1b[?1049hvim\x1bc\x1b8", 3, 10)
    assert not screen.in_alt_screen and screen.text() == ["", "", ""]
    assert (screen.cursor.x, screen.cursor.y) == (0, 0)


def test_ris_keeps_the_alternate_screens_saved_cursor():
    """xterm's RIS saves the home position on the main screen only (ReallyReset)."""
    screen = render(b"\x1b[?47h\x1b[2;3H\x1b[1m\x1b7\x1b[?47l\x1bc\x1b[?47h\x1b8", 3, 10)
    assert (screen.cursor.x, screen.cursor.y) == (2, 1) and screen.cursor.attrs.bold


def test_each_screen_has_one_saved_cursor():
    screen = render(b"\x1b[2;3H\x1b7\x1b[?47h\x1b[3;1H\x1b7\x1b[1;1H\x1b[?47l\x1b8", 3, 10)
    assert (screen.cursor.x, screen.cursor.y) == (2, 1)


def test_restore_brings_back_origin_but_not_autowrap_or_visibility():
    screen = render(b"\x1b[?6h\x1b[?7l\x1b[1m\x1b7\x1b[?6l\x1b[?7h\x1b[0m\x1b[?25l\x1b8", 3, 10)
    assert pyte.modes.DECOM in screen.mode and screen.cursor.attrs.bold
    assert pyte.modes.DECAWM in screen.mode  # as xterm (since patch 328) and tmux do
    assert screen.cursor.hidden


def test_restore_without_save_homes_and_resets_the_pen_and_charsets():
    screen = render(b"\x1b[2;2H\x1b[1m\x1b8x", 3, 10)
    assert screen.text()[0] == "x" and not screen.buffer[0][0].bold
    assert render(b"\x1b(0\x1b8q", 3, 10).text()[0] == "q"  # not line drawing's "─"


def test_sco_save_and_restore_are_decsc_and_decrc_unless_margins_are_on():
    screen = render(b"\x1b[2;3H\x1b[1m\x1b[s\x1b[0m\x1b[3;5H\x1b[u", 3, 10)
    assert (screen.cursor.x, screen.cursor.y) == (2, 1) and screen.cursor.attrs.bold
    screen = render(b"\x1b[2;3H\x1b[s\x1b[3;5H\x1b[1u", 3, 10)  # xterm: not with parameters
    assert (screen.cursor.x, screen.cursor.y) == (4, 2)
    screen = render(b"\x1b[?69h\x1b[2;3H\x1b[s\x1b[3;5H\x1b[u", 3, 10)  # CSI s is DECSLRM
    assert (screen.cursor.x, screen.cursor.y) == (0, 0)


def test_clear_with_a_background_colour_colours_every_cell():
    screen = render(b"\x1b[44m\x1b[2J", 2, 3)
    assert all(screen.buffer[y][x].bg == "blue" for y in range(2) for x in range(3))


def test_erase_below_and_above_colour_whole_rows():
    screen = render(b"\x1b[2;2H\x1b[41m\x1b[J", 3, 3)
    assert [screen.buffer[y][x].bg for y in range(3) for x in range(3)] == ["default"] * 4 + [
        "red"
    ] * 5


def test_erase_scrollback_leaves_the_screen():
    assert render(b"keep\x1b[3J", 2, 10).text() == ["keep", ""]


#: sequences on which plain pyte's screen raises
PYTE_CRASHERS = [
    b"\x1b[?6n",
    b"\x1b[?1;2r",
    b"\x1b[5J",
    b"\x1b[9K",
    b"\x1b[?6h\x1b[5d",
    b"\x1b[?m",
    b"\x1b[?3A",
]


@pytest.mark.parametrize("sequence", PYTE_CRASHERS)
def test_sequences_that_crash_plain_pyte_are_ignored(sequence):
    screen = Screen(10, 3)
    pyte.ByteStream(screen).feed(sequence + b"ok")
    assert "ok" in "".join(screen.text())


#: ends whatever ``data`` left open for pyte (CAN a CSI, BEL an OSC, any byte a bare ESC), then
#: resets the terminal and writes a mark at the top left
AFTER_ANYTHING = b"\x18\x07\x1b\\\x1bcMARK"
ODD_OUTPUT = st.lists(
    st.binary(max_size=40)
    | st.sampled_from([*PYTE_CRASHERS, b"\x1b[", b"\x1b]0;", b"\x1b(0", b"\x0e", b"\x1b#8"]),
    max_size=60,
).map(b"".join)


@given(ODD_OUTPUT)
def test_render_never_raises_nor_loses_the_output_after_odd_bytes(data):
    """``render`` swallows whatever pyte raises (a status display must survive any output), so
    "it returned" alone could never fail. What the swallowing costs is the rest of the block,
    and the screen egg shows must not lose it: after any bytes, a reset and a mark show the
    mark. The bytes include the sequences plain pyte raises on, so this fails if the screen's
    own hardening goes and only the safety net is left."""
    screen = render(data + AFTER_ANYTHING, 5, 12)

    assert screen.text()[0] == "MARK"


@given(
    st.lists(
        st.sampled_from(
            [
                b"\x1b[",
                b"?",
                b"1",
                b";",
                b"0",
                b"h",
                b"l",
                b"J",
                b"K",
                b"r",
                b"d",
                b"m",
                b"n",
                b"x",
                b"\x1b7",
                b"\x1b8",
                b"47",
                b"1049",
            ]
        ),
        max_size=60,
    )
)
def test_screen_survives_csi_soup_without_the_safety_net(pieces):
    pyte.ByteStream(Screen(10, 4)).feed(b"".join(pieces))


def test_cursor_position_in_origin_mode_is_clamped_to_the_region_like_xterm():
    screen = render(b"ab\x1b[1;2r\x1b[?6h\x1b[5;3H", 4, 10)
    assert (screen.cursor.x, screen.cursor.y) == (2, 1)


@pytest.mark.parametrize(
    ("sequence", "margins"),
    [
        (b"\x1b[2;3r", (1, 2)),
        (b"\x1b[2;3r\x1b[r", None),
        (b"\x1b[2;3r\x1b[0;0r", None),
        (b"\x1b[3r", (2, 3)),
        (b"\x1b[1;4r", None),
        (b"\x1b[2;3r\x1b[3;3r", (1, 2)),
    ],
)
def test_scroll_region_defaults_like_xterm(sequence, margins):
    screen = render(b"ab" + sequence, 4, 10)
    assert (tuple(screen.margins) if screen.margins else None) == margins
    assert (screen.cursor.x, screen.cursor.y) == (0, 0)


@pytest.mark.parametrize("cut", [None, 1, 3])
def test_keyboard_mode_sequences_draw_nothing_even_cut_between_feeds(cut: int | None) -> None:
    """``CSI < u`` (kitty's pop, which Claude Code writes at its exit), ``CSI = 5 u`` and
    ``CSI > 4 ; 1 m``: pyte ends them at the marker and printed the rest ("u", "5u") onto the
    screen that ``egg status --screen`` and watchers of another size are shown."""
    data = b"a\x1b[<u b\x1b[=5u c\x1b[>4;1m d\x1b[?25l\x1b[31me"
    screen = Screen(40, 3)
    stream = ByteStream(screen)
    if cut is None:
        stream.feed(data)
    else:
        for i in range(0, len(data), cut):
            stream.feed(data[i : i + cut])
    assert screen.text()[0] == "a b c de"
    assert screen.buffer[0][7].fg == "red"  # the sequences around are still understood
    assert screen.cursor.hidden


def test_an_endless_start_of_a_marked_sequence_is_not_held_without_bound() -> None:
    """``ESC [ <`` and then digits forever (a sandbox's output): what is kept back for the next
    feed stays short, so each feed costs the same."""
    screen = Screen(40, 3)
    stream = ByteStream(screen)
    stream.feed(b"x\x1b[<")
    for _ in range(200):
        stream.feed(b"1;" * 256)
    assert len(stream._held) <= 64
