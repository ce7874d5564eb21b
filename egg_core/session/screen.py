"""Render output bytes into a screen, on demand: ``egg status ID --screen`` and the tests' oracle.

Nothing here runs on the output path — pyte is far slower than a PTY — and no screen is kept
resident: ``render`` builds one from ``ReplayRing.since_last_repaint()`` and drops it.

``Screen`` is pyte's screen with the parts of xterm that pyte lacks and that a repaint depends on:
the alternate screen buffer (pyte records ?1049 as a mode and otherwise ignores it), DECSC/DECRC
with one saved cursor per screen as xterm has them (RIS keeps the alternate screen's; DECRC
leaves autowrap alone and, with nothing saved, resets the charsets; SCOSC and SCORC, ``CSI s``
and ``CSI u``, are DECSC and DECRC, read by ``ByteStream``), background-colour erase of
the whole screen (pyte only recolours cells that were written before), ED 3 erasing scrollback
rather than the screen, DECSTBM's defaults and homing, CUP clamped to the scroll region in origin
mode (pyte ignores the move), and extra parameters and private variants of CSI sequences being
ignored rather than crashing pyte.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections import defaultdict
from typing import Any

import pyte
from pyte import charsets as cs
from pyte import modes as mo
from pyte.screens import Char, Margins, Savepoint, StaticDefaultDict

# CSI handlers that take ``private``; pyte passes it to every handler.
_PRIVATE_AWARE = frozenset(
    {"set_mode", "reset_mode", "erase_in_line", "erase_in_display", "report_device_attributes"}
)
#: fed to pyte this many bytes at a time: a sequence pyte chokes on costs the rest of its block,
#: and the time budget is checked between blocks (pyte needs about 1 ms for one ``ESC # 8``
#: on 80x24, so a block of them is under a fifth of a second)
_BLOCK = 512


class Screen(pyte.Screen):
    """pyte's screen plus xterm's alternate screen; ``text()`` gives the visible lines."""

    #: False when :func:`render` ran out of its time budget before the end of the output
    complete = True

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        for name in set(pyte.Stream.csi.values()):
            setattr(self, name, _lenient(getattr(self, name), name in _PRIVATE_AWARE))

    def reset(self) -> None:
        """RIS. xterm's saves the home position on the main screen only: the alternate screen's
        saved cursor survives it."""
        kept = self._saved[1] if hasattr(self, "_saved") else None
        super().reset()
        self.in_alt_screen = False
        self._other = self._blank()  # the screen not shown: main while in the alternate one
        self._saved: list[Savepoint | None] = [None, kept]  # DECSC slot of main and alternate
        self.savepoints = []

    def text(self) -> list[str]:
        """The visible screen, one string per row, trailing blanks removed."""
        return [line.rstrip() for line in self.display]

    def _blank(self) -> defaultdict[int, StaticDefaultDict[int, Char]]:
        return defaultdict(lambda: StaticDefaultDict(self.default_char))

    def _switch(self, alt: bool) -> None:
        if alt != self.in_alt_screen:
            self.buffer, self._other = self._other, self.buffer
            self.in_alt_screen = alt
            self.dirty.update(range(self.lines))

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            super().set_mode(*modes, **kwargs)
            return
        for mode in modes:
            if mode == 1049:  # save the cursor, switch, clear
                self.save_cursor()
                self._switch(True)
                self.buffer = self._blank()
            elif mode in (47, 1047):
                self._switch(True)
            elif mode == 1048:
                self.save_cursor()
            else:
                super().set_mode(mode, private=True)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            super().reset_mode(*modes, **kwargs)
            return
        for mode in modes:
            if mode == 1049:
                self._switch(False)
                self.restore_cursor()
            elif mode == 1047:
                if self.in_alt_screen:
                    self.buffer = self._blank()
                self._switch(False)
            elif mode == 47:
                self._switch(False)
            elif mode == 1048:
                self.restore_cursor()
            else:
                super().reset_mode(mode, private=True)

    def save_cursor(self) -> None:
        self._saved[self.in_alt_screen] = Savepoint(
            copy.copy(self.cursor),
            self.g0_charset,
            self.g1_charset,
            self.charset,
            mo.DECOM in self.mode,
            mo.DECAWM in self.mode,
        )

    def restore_cursor(self) -> None:
        """DECRC as xterm has it: origin mode comes back as saved, whatever it was; autowrap is
        left alone (xterm since patch 328, and tmux; VT510 restored it).

        With nothing saved: home, origin mode off, default pen and charsets (pyte keeps both).
        """
        saved = self._saved[self.in_alt_screen]
        if saved is None:
            self.reset_mode(mo.DECOM)
            self.cursor.attrs = self.default_char
            self.g0_charset, self.g1_charset, self.charset = cs.LAT1_MAP, cs.VT100_MAP, 0
            self.cursor_position()
            return
        self.g0_charset, self.g1_charset, self.charset = saved[1:4]
        if saved.origin:
            self.set_mode(mo.DECOM)
        else:
            self.reset_mode(mo.DECOM)
        hidden = self.cursor.hidden  # visibility is a mode, not part of the saved cursor
        self.cursor = copy.copy(saved.cursor)
        self.cursor.hidden = hidden
        self.ensure_hbounds()
        self.ensure_vbounds(use_margins=True)

    def save_cursor_sco(self, *params: int, private: bool = False) -> None:
        """SCOSC (``CSI s``): DECSC, unless left and right margins are on (then it is DECSLRM,
        which pyte lacks)."""
        if not private and _DECLRMM not in self.mode:
            self.save_cursor()

    def restore_cursor_sco(self, *params: int, private: bool = False) -> None:
        """SCORC (``CSI u``): DECRC; xterm ignores it with parameters. pyte drops the ``>`` of the
        kitty keyboard protocol's ``CSI > u``, so a push of no flags reads as SCORC here."""
        if not private and not any(params):
            self.restore_cursor()

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how == 0:
            rows = range(self.cursor.y + 1, self.lines)
        elif how == 1:
            rows = range(self.cursor.y)
        elif how == 2:
            rows = range(self.lines)
        else:  # 3 erases the scrollback, which a screen does not have
            return
        self.dirty.update(rows)
        fill = self.cursor.attrs
        for y in rows:
            if fill == self.default_char:
                self.buffer.pop(y, None)
            else:
                line = self.buffer[y]
                for x in range(self.columns):
                    line[x] = fill
        if how in (0, 1):
            self.erase_in_line(how)

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        if how in (0, 1, 2):
            super().erase_in_line(how)

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        """DECSTBM as xterm has it: 0 or absent means the screen's edge (pyte reads a 0 bottom as
        the first line and keeps the old bottom when it is absent), and the cursor goes home even
        when the region is reset (pyte leaves it)."""
        if top is None and bottom is None:  # pyte's own calls (resize)
            self.margins = None
            return
        last = self.lines - 1
        top = max(0, min((top or 1) - 1, last))
        bottom = max(0, min((bottom or self.lines) - 1, last))
        if bottom - top >= 1:
            self.margins = None if (top, bottom) == (0, last) else Margins(top, bottom)
            self.cursor_position()

    def cursor_position(self, line: int | None = None, column: int | None = None) -> None:
        """CUP. In origin mode xterm clamps a row below the region to its bottom; pyte would not
        move at all, leaving the cursor wherever the stream before had put it."""
        top = self.margins.top if self.margins is not None and mo.DECOM in self.mode else 0
        self.cursor.x, self.cursor.y = (column or 1) - 1, top + (line or 1) - 1
        self.ensure_hbounds()
        self.ensure_vbounds()

    def cursor_to_line(self, line: int | None = None) -> None:
        if mo.DECOM in self.mode and self.margins is None:  # pyte asserts there are margins
            self.cursor.y = (line or 1) - 1
            self.ensure_vbounds()
        else:
            super().cursor_to_line(line)


_DECLRMM = 69 << 5  # pyte keeps private modes shifted


#: a CSI sequence whose parameters start with ``<``, ``=`` or ``>``: keyboard and terminal modes
#: (kitty's ``CSI > 1 u`` push and ``CSI < u`` pop, xterm's ``CSI > 4 ; 1 m``) that draw nothing.
#: pyte knows only ``?`` there: it ends such a sequence at the marker and prints the rest
#: (Claude Code's exit left a stray "u" on the screen)
_MARKED_CSI = re.compile(rb"\x1b\[[<=>][\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
#: the end of a block that may be the start of one (kept for the next block)
_MARKED_CSI_START = re.compile(rb"\x1b(?:\[(?:[<=>][\x30-\x3f]*[\x20-\x2f]*)?)?\Z")


#: the longest start of such a sequence kept for the next feed: anything longer is no
#: terminal's sequence, and is fed as it is (a sandbox printing ESC [ < and endless digits must
#: not make each feed copy and scan a growing tail)
HELD_MAX = 64


class ByteStream(pyte.ByteStream):
    """pyte's byte stream, with SCOSC and SCORC for ``Screen`` (pyte has neither), and without
    the CSI sequences pyte misreads as text (:data:`_MARKED_CSI`, also when cut between two
    feeds)."""

    csi = {**pyte.ByteStream.csi, "s": "save_cursor_sco", "u": "restore_cursor_sco"}
    _held = b""

    def feed(self, data: bytes) -> None:  # type: ignore[override]  # pyte.ByteStream takes bytes
        data = self._held + data
        tail = _MARKED_CSI_START.search(data, max(0, len(data) - HELD_MAX))
        self._held = data[tail.start() :] if tail else b""
        if tail:
            data = data[: tail.start()]
        super().feed(_MARKED_CSI.sub(b"", data))


def _lenient(method: Any, private_aware: bool) -> Any:
    """A CSI handler that takes whatever pyte passes it.

    pyte calls every handler with all the parameters the sequence had and ``private=True`` after
    ``CSI ?``; most handlers take neither, and raise (ESC[1;2A, ESC[?6n). Extra parameters are
    dropped; private variants are other commands, ignored unless the handler knows them.
    """
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = inspect.signature(method).parameters.values()
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    limit = None if varargs else sum(p.kind in kinds and p.name != "private" for p in parameters)

    def handler(*args: Any, private: bool = False) -> None:
        if private_aware:
            method(*args[:limit], private=private)
        elif not private:
            method(*args[:limit])

    return handler


def render(data: bytes, rows: int, cols: int, budget: float | None = None) -> Screen:
    """A fresh ``rows`` x ``cols`` screen after ``data``.

    A sequence pyte still chokes on costs the rest of its block, never the render. With
    ``budget`` (seconds), rendering stops once it is spent (output can be made that pyte renders
    thousands of times slower than a terminal, ``ESC # 8`` fills the whole screen); the screen
    then says so in ``complete``.
    """
    screen = Screen(cols, rows)
    feed(screen, ByteStream(screen), data, budget)
    return screen


def feed(screen: Screen, stream: ByteStream, data: bytes, budget: float | None = None) -> None:
    """Feed ``data`` through ``stream`` to ``screen`` as :func:`render` does (``complete`` False
    when ``budget`` seconds ran out first)."""
    import time

    deadline = None if budget is None else time.monotonic() + budget
    for i in range(0, len(data), _BLOCK):
        if deadline is not None and time.monotonic() > deadline:
            screen.complete = False
            break
        try:
            stream.feed(data[i : i + _BLOCK])
        except Exception:  # a status display must survive odd agent output
            continue
