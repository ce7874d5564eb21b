"""The session's screen, drawn for a read-only watcher whose terminal is another size.

The program draws for the session's rows x columns. Replayed raw on a terminal of another size
its output lands elsewhere: lines wrap at the watcher's width instead of the session's, scrolling
happens at the watcher's bottom row, a redraw that moves the cursor up N lines (Ink's) moves it
over the wrong rows — issue 24's garbled watcher. So such a watcher is sent what an emulator
(:mod:`egg_core.session.screen`, pyte: what ``egg status ID --screen`` shows) makes of the output
at the session's size, drawn in the top-left corner of its terminal:

- a larger terminal shows the whole screen there, and nothing right of or below it;
- a smaller one shows the screen's top-left part, as many rows and columns as it has, each row
  cut at its right edge (a wide character that would straddle it is left out): nothing wraps or
  scrolls, nothing is moved;
- the cursor is where the session has it, shown when the program shows it and the watcher's
  terminal has that cell.

:class:`Mirror` holds the emulator, fed in a worker thread (pyte manages 0.1-1 MiB/s, so it never
runs on the event loop) with what the ring got since, and :class:`Frame` is what it shows at one
moment; :meth:`Frame.draw` turns it into bytes for one watcher, redrawing only the rows that
changed since what that watcher was last sent (:class:`Drawn`). Same-size watchers get the raw
output as writable clients do (exact, and free).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Any

import attrs
from wcwidth import wcwidth

from egg_core.session import screen as emulator
from egg_core.session.ring import RESET

#: seconds a feed may take before the emulator is given up on and rebuilt from the last repaint
FEED_BUDGET = 1.0
_COLOURS = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")

Cell = tuple[str, bytes]  # the text and the SGR sequence it is drawn with


@attrs.frozen
class Frame:
    """The emulated screen at one moment: its rows of cells, and the cursor."""

    rows: tuple[tuple[Cell, ...], ...]
    cursor: tuple[int, int]  # row, column
    cursor_hidden: bool

    def draw(self, view_rows: int, view_cols: int, before: Drawn | None) -> tuple[bytes, Drawn]:
        """The bytes that make a ``view_rows`` x ``view_cols`` terminal show this frame in its
        top-left corner, given what it was last sent (None: nothing: it is reset first)."""
        lines = [_line(row, view_cols) for row in self.rows[:view_rows]]
        y, x = self.cursor
        visible = not self.cursor_hidden and y < view_rows and x < view_cols
        drawn = Drawn(lines=tuple(lines), cursor=(y, x), visible=visible)
        if before is not None and before == drawn:
            return b"", drawn
        out = [b"\x1b[?25l"]
        if before is None:
            out.insert(0, RESET)
        for i, line in enumerate(lines):
            if before is None or i >= len(before.lines) or before.lines[i] != line:
                out.append(b"\x1b[%d;1H\x1b[0m" % (i + 1) + line + b"\x1b[0m")
        out.append(b"\x1b[%d;%dH" % (min(y, view_rows - 1) + 1, min(x, view_cols - 1) + 1))
        if visible:
            out.append(b"\x1b[?25h")
        return b"".join(out), drawn


@attrs.frozen
class Drawn:
    """What one watcher's terminal was last sent: each row's bytes, and the cursor."""

    lines: tuple[bytes, ...]
    cursor: tuple[int, int]
    visible: bool


class Mirror:
    """An emulator of the session's screen, fed the session's output (in a worker thread)."""

    def __init__(self, rows: int, cols: int) -> None:
        self.size = (rows, cols)
        self.offset = 0  # the ring offset it has been fed up to
        self._screen = emulator.Screen(cols, rows)
        self._stream = emulator.ByteStream(self._screen)

    @property
    def complete(self) -> bool:
        """False once a feed ran out of time: the screen is from partway through."""
        return self._screen.complete

    def feed(self, data: bytes, upto: int) -> Frame:
        """Feed ``data`` (the ring's output up to offset ``upto``); the frame it then shows."""
        emulator.feed(self._screen, self._stream, data, FEED_BUDGET)
        self.offset = upto
        return self.frame()

    def frame(self) -> Frame:
        screen = self._screen
        rows = tuple(
            tuple(_cell(screen.buffer[y][x]) for x in range(screen.columns))
            for y in range(screen.lines)
        )
        cursor = screen.cursor
        return Frame(
            rows=rows,
            cursor=(min(cursor.y, screen.lines - 1), min(cursor.x, screen.columns - 1)),
            cursor_hidden=bool(cursor.hidden),
        )


def _line(row: tuple[Cell, ...], width: int) -> bytes:
    """One row drawn from its first column, cut at ``width``: every cell written (blanks too, so
    nothing of the row before survives), a wide character that would straddle the edge left
    out."""
    out, pen, used = bytearray(), b"", 0
    for text, sgr in row:
        if not text:  # the second half of a wide character drawn just before
            continue
        span = 2 if _wide(text) else 1
        if used + span > width:  # (only a wide one can: used < width here)
            text, span = " ", 1
        if sgr != pen:
            out += sgr
            pen = sgr
        out += text.encode()
        used += span
        if used >= width:
            break
    return bytes(out)


def _cell(char: Any) -> Cell:
    return _text(char.data), _sgr(
        char.fg, char.bg, char.bold, char.italics, char.underscore, char.strikethrough,
        char.reverse, char.blink,
    )  # fmt: skip


@lru_cache(maxsize=4096)
def _text(data: str) -> str:
    """A cell's text as a terminal may be given it: controls (which pyte may keep in a cell)
    become blanks, so a cell never acts on the watcher's terminal."""
    if all(unicodedata.category(c)[0] != "C" or c in "\u200c\u200d" for c in data):
        return data
    return " " if data else data


@lru_cache(maxsize=4096)
def _wide(text: str) -> bool:
    return wcwidth(text[0]) == 2


@lru_cache(maxsize=4096)
def _sgr(
    fg: str,
    bg: str,
    bold: bool,
    italics: bool,
    underscore: bool,
    strike: bool,
    reverse: bool,
    blink: bool,
) -> bytes:
    """The SGR sequence for a cell's attributes (as pyte keeps them), from the default pen."""
    parts = [b"0"]
    for on, code in ((bold, b"1"), (italics, b"3"), (underscore, b"4"), (blink, b"5")):
        if on:
            parts.append(code)
    if reverse:
        parts.append(b"7")
    if strike:
        parts.append(b"9")
    parts += _colour(fg, 30) + _colour(bg, 40)
    return b"\x1b[" + b";".join(parts) + b"m" if len(parts) > 1 else b"\x1b[0m"


def _colour(name: str, base: int) -> list[bytes]:
    if name in _COLOURS:
        return [b"%d" % (base + _COLOURS.index(name))]
    if name.startswith("bright") and name[6:] in _COLOURS:
        return [b"%d" % (base + 60 + _COLOURS.index(name[6:]))]
    if len(name) == 6:
        try:
            r, g, b = (int(name[i : i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return []
        return [b"%d;2;%d;%d;%d" % (base + 8, r, g, b)]
    return []  # "default", or what pyte made of something odd
