"""Track, cheaply, the terminal state a reattach must restore: modes, scroll region, pen, titles.

The session daemon keeps the agent's raw output in a ring (``ring.py``) and repaints a reattaching
client by replaying the ring from a cut point. What the stream before the cut established — modes
set long ago, the scroll region, the SGR pen a line was coloured with — is not in the replayed
bytes, so ``ModeTracker`` follows it as the output streams past and ``TerminalModes.preamble``
turns it back into escape sequences.

This runs on the PTY hot path, so it never looks at every byte in Python: a few regular
expressions, run in C, find the rare sequences that change state (DECSET, DECSTBM, RIS, DECSC,
OSC titles, ...), and the SGR pen is folded only from the last SGR reset of each chunk
(``fold_pen``). Cursor positioning and text are not followed at all — that is a terminal
emulator's job, and the reason the cut points of ``ring.py`` are full repaints.

Semantics follow xterm (VT510 where xterm does): DECSC/DECRC (and SCOSC/SCORC, ``CSI s``/``CSI u``,
which Node's ansi-escapes sends outside Apple's Terminal) keep one saved cursor per screen and
restore the pen, origin mode and charsets, not autowrap (xterm since patch 328, and tmux); ?1049
saves the cursor and clears the alternate screen, ?47/?1047 only switch to it; RIS forgets the
main screen's saved cursor and keeps the alternate screen's (xterm's ReallyReset saves the home
position on the main screen only). Tab stops are only noted as changed (HTS, TBC): where they are
is an emulator's to know, as is the saved cursor's *position* (``ModeTracker`` says when a
repaint needs it). Deliberately not followed: DECSLRM margins, DECSTR, XTSAVE/XTRESTORE, palette
and dynamic colours (OSC 4/10-12), hyperlinks (OSC 8). tmux differs where programs rarely go: one
DECSC slot for both screens plus one for ?1049, and RIS does not leave the alternate screen.

Why one module of this size: one escape-sequence scanner whose states must agree with each
other; split, the parser's states would be spread over files that each see half a sequence.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

import attrs

ALT_SCREEN_MODES = frozenset({47, 1047, 1049})
SAVE_CURSOR_MODE = 1048
# DECSET modes a replay must not set again: the alternate screen and saved cursor are handled on
# their own; DECCOLM resizes and clears the client; synchronized output (2026) left on would
# freeze the client's display; highlight mouse tracking (1001) waits for an answer.
NOT_REPLAYED = ALT_SCREEN_MODES | {SAVE_CURSOR_MODE, 3, 1001, 2026}
MOUSE_MODES = (9, 1000, 1002, 1003, 1005, 1006, 1015, 1016)
ANSI_MODES = frozenset({4, 20})  # IRM (insert), LNM (newline): both change what text renders as
# Bounds that keep an adversarial stream from growing the tracker.
MAX_MODES = 256
MAX_KITTY_FLAGS = 16
MAX_TITLE = 2048
# An escape sequence left unfinished at the end of a chunk is carried into the next one, if it
# started within this many bytes of the end (longer ones are strings nobody tracks).
MAX_SEQUENCE = MAX_TITLE + 16

from egg_core.session.pen import Pen, fold_pen, number, pen_sgr  # noqa: E402  (re-exported)

# -- The state ----------------------------------------------------------------------------------


@attrs.frozen
class SavedCursor:
    """What DECSC (ESC 7, ?1048h, ?1049h) saved, apart from the position."""

    pen: tuple[tuple[str, bytes], ...] = ()
    origin: bool | None = None
    g0: bytes | None = None
    g1: bytes | None = None
    shift_out: bool = False


@attrs.frozen
class TerminalModes:
    """The terminal state in force at one point of an output stream, apart from the screen itself.

    ``None`` and absent entries mean "never set since the last reset": a preamble leaves those to
    the client's defaults rather than guessing them.
    """

    private_modes: tuple[tuple[int, bool], ...] = ()  # DECSET/DECRST, by mode number
    ansi_modes: tuple[tuple[int, bool], ...] = ()  # SM/RM: insert (4), newline (20)
    alt_screen: int = 0  # 0 on the main screen, else the mode that entered it (47, 1047, 1049)
    alt_screen_clean: bool = True  # whether the alternate screen is known to be blank
    scroll_region: tuple[int, int] | None = None  # DECSTBM (top, bottom), 0 meaning "default"
    keypad_application: bool = False  # ESC = / ESC >
    pen: tuple[tuple[str, bytes], ...] = ()  # SGR slot -> the parameters that last set it
    g0: bytes | None = None  # charset designations (ESC ( 0 is DEC line drawing)
    g1: bytes | None = None
    shift_out: bool = False  # SO selected G1
    cursor_style: bytes | None = None  # DECSCUSR parameter
    title: bytes | None = None
    icon_name: bytes | None = None
    kitty_keyboard: tuple[int, ...] = ()  # the kitty keyboard protocol's stack of flags
    modify_keys: tuple[tuple[int, bytes], ...] = ()  # xterm XTMODKEYS resource -> value
    saved_cursors: tuple[SavedCursor | None, SavedCursor | None] = (None, None)  # main, alt
    tab_stops_changed: bool = False  # by HTS or TBC since the last reset: no preamble has them

    def mode(self, number: int) -> bool | None:
        """Whether DECSET mode ``number`` is set, or None if the stream never said."""
        return dict(self.private_modes).get(number)

    @property
    def cursor_visible(self) -> bool:
        return self.mode(25) is not False

    @property
    def bracketed_paste(self) -> bool:
        return bool(self.mode(2004))

    @property
    def application_cursor_keys(self) -> bool:
        return bool(self.mode(1))

    @property
    def autowrap(self) -> bool:
        return self.mode(7) is not False

    @property
    def origin(self) -> bool:
        return bool(self.mode(6))

    @property
    def mouse_modes(self) -> tuple[int, ...]:
        on = dict(self.private_modes)
        return tuple(n for n in MOUSE_MODES if on.get(n))

    def preamble(self) -> bytes:
        """Escape sequences that put a freshly reset terminal into this state.

        Saved cursors come first: each screen's is recreated with DECSC (ESC 7) so that a DECRC
        in the replay restores the right pen, origin mode and charsets (the position it restores
        is the top left corner: only an emulator knows the real one, and the cut says it is not
        exact when that matters). The alternate screen's is recreated on it even when the main
        screen is in use (the client's was kept by the reset). Then the alternate screen, so that
        everything after lands there. The pen comes last because several of the others
        (DECSCNM, and XTMODKEYS in emulators that mistake it for SGR) disturb it.
        """
        main, alt = self.saved_cursors
        out = []
        if alt is not None and not self.alt_screen:  # ?47 neither clears nor saves; first, so
            out += [b"\x1b[?47h", _saved_cursor(alt), b"\x1b[?47l"]  # tmux's one slot gets main's
        if main is not None:
            out.append(_saved_cursor(main))
        if self.alt_screen:
            out.append(b"\x1b[?%dh" % self.alt_screen)
            if alt is not None:
                out.append(_saved_cursor(alt))
        if main is not None or alt is not None:
            out.append(_DEFAULTS)  # undo what recreating the saved cursors set
        for modes, intro in ((self.private_modes, b"\x1b[?"), (self.ansi_modes, b"\x1b[")):
            for value, final in ((True, b"h"), (False, b"l")):
                numbers = [b"%d" % n for n, on in modes if on is value]
                if numbers:
                    out.append(intro + b";".join(numbers) + final)
        if self.scroll_region is not None:
            top, bottom = self.scroll_region
            out.append(b"\x1b[%d;%dr" % (top or 1, bottom) if bottom else b"\x1b[%dr" % top)
        if self.keypad_application:
            out.append(b"\x1b=")
        if self.g0 is not None:
            out.append(b"\x1b(" + self.g0)
        if self.g1 is not None:
            out.append(b"\x1b)" + self.g1)
        if self.shift_out:
            out.append(b"\x0e")
        if self.cursor_style is not None:
            out.append(b"\x1b[" + self.cursor_style + b" q")
        if self.title is not None and self.title == self.icon_name:
            out.append(b"\x1b]0;" + self.title + b"\x07")
        else:
            if self.icon_name is not None:
                out.append(b"\x1b]1;" + self.icon_name + b"\x07")
            if self.title is not None:
                out.append(b"\x1b]2;" + self.title + b"\x07")
        out += [b"\x1b[>%du" % flags for flags in self.kitty_keyboard]
        out += [b"\x1b[>%d;%sm" % (res, value) for res, value in self.modify_keys]
        out.append(pen_sgr(self.pen))
        return b"".join(out)


_DEFAULTS = b"\x1b[?6l\x1b(B\x1b)B\x0f\x1b[0m"


def _saved_cursor(saved: SavedCursor) -> bytes:
    """From defaults, set what ``saved`` holds, then save it with DECSC."""
    modes = TerminalModes(
        private_modes=() if saved.origin is None else ((6, saved.origin),),
        g0=saved.g0,
        g1=saved.g1,
        shift_out=saved.shift_out,
        pen=saved.pen,
    )
    return _DEFAULTS + modes.preamble() + b"\x1b7"


# -- The tracker ---------------------------------------------------------------------------------

# Sequences that change tracked state, in one pass that the engine enters only at an ESC:
# RIS, DECSC/DECRC, keypad, HTS, OSC, ESC ( 0 (an ESC not followed by another ESC, which would
# start a new sequence), XTMODKEYS (whose final is SGR's), and DECSET, SM, DECSTBM, ED, DECSCUSR,
# SCOSC, SCORC, TBC and the kitty keyboard protocol (parameters, then one of a few finals). SGR
# and cursor moves never match beyond the "[".
_EVENT = re.compile(rb"\x1b(?:[^\[(\x1b]|\([^B]|\[(?:>[0-9;]*+m|[\x20-\x3f]*+[hlrJqsug]))")
_DESIGNATE_ASCII = re.compile(rb"\x1b[()]B")  # only looked for while line drawing is designated
_SHIFT = re.compile(rb"[\x0e\x0f]")
_CSI = re.compile(rb"\x1b\[([?<>=]?)([0-9;]*)( ?)([\x40-\x7e])")
_OSC_TITLE = re.compile(rb"\x1b\]([012]);([^\x07\x1b]{0,%d})(?:\x07|\x1b\\)" % MAX_TITLE)
_DESIGNATE = re.compile(rb"\x1b([()])[\x20-\x2f]*([\x30-\x7e])")
_COMPLETE = re.compile(
    rb"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|[\]P^_X][^\x07\x1b]*(?:\x07|\x1b.)"
    rb"|(?![\[\]P^_X])[\x20-\x2f]*[\x30-\x7e])",
    re.S,
)
_CUP = re.compile(rb"\x1b\[[0-9;]*[Hf]")
_CUP_BEFORE = re.compile(rb"\x1b\[([0-9;]*)[Hf]\Z")
_CUP_UNFINISHED = re.compile(rb"(?:\x1b(?:\[[0-9;]*)?)?\Z")  # what may still become a CUP
_HOME = frozenset({b"", b"1", b";", b"1;", b";1", b"1;1"})
_TAIL = 24
# DECSET sequences that only set modes (no screen switch, no saved cursor) -> their effect. Most
# programs send a handful of these (cursor on/off, synchronized output) around every frame.
_SIMPLE_MODES: dict[bytes, dict[int, bool]] = {}


def _unfinished(buf: bytes) -> int:
    """Where an escape sequence still waiting for its end starts in buf, or len(buf)."""
    end = len(buf)
    i = buf.rfind(b"\x1b", max(0, end - MAX_SEQUENCE))
    if i < 0 or _COMPLETE.match(buf, i):
        return end
    if i == end - 1 and i > 0:  # perhaps the ESC of a string terminator: carry the whole string
        j = buf.rfind(b"\x1b", max(0, end - MAX_SEQUENCE), i)
        if j >= 0 and buf[j + 1 : j + 2] == b"]" and b"\x07" not in buf[j:i]:
            return j
    return i


Repaint = tuple[int, TerminalModes]

# Where the position a saved cursor holds is known from, in ``ModeTracker._saved_from``: the
# latest stream offset a replay may start at and still save the same position, or one of these.
_ANY_CUT = sys.maxsize  # home, as after RIS on the main screen: a reset client has it too
_NO_CUT = -1  # only the client's terminal knows (xterm keeps the alternate screen's across RIS)


class ModeTracker:
    """Follows a stream's terminal state, and where its last full repaints were.

    ``scan`` is called with each chunk (plus whatever unfinished sequence the previous call left);
    between calls the state is that at the end of the scanned bytes. ``main_repaint`` and
    ``alt_repaint`` are the stream offsets of the last full repaint of each screen — stream start,
    RIS, a clear screen with an absolute cursor position, alternate-screen entry — with the state
    just before it, which is what a replay starting there needs.

    ``main_exact`` and ``alt_exact`` say whether a replay from that repaint can put the cursor
    where the stream did: not once a cursor saved before the repaint was restored after it (by
    DECRC, SCORC, ?1048l or ?1049l), since the preamble can recreate what a saved cursor holds
    but not where it is (no cursor position is followed here).
    """

    def __init__(self, modes: TerminalModes | None = None) -> None:
        self._load(modes or TerminalModes())
        self.main_repaint: Repaint = (0, TerminalModes())
        self.alt_repaint: Repaint | None = None
        self.main_exact = self.alt_exact = True
        self._tail = b""  # the last bytes scanned, to see a CUP just before ESC[2J
        self._pending: tuple[int, int, TerminalModes, bool] | None = None  # ESC[2J at chunk end
        self._buf = b""
        self._base = 0

    def _load(self, m: TerminalModes) -> None:
        self._modes = dict(m.private_modes)
        self._ansi = dict(m.ansi_modes)
        self._alt = m.alt_screen
        self._alt_clean = m.alt_screen_clean
        self._region = m.scroll_region
        self._keypad = m.keypad_application
        self._pen: Pen = dict(m.pen)
        self._pen_from = 0
        self._g0, self._g1, self._shift_out = m.g0, m.g1, m.shift_out
        self._cursor_style = m.cursor_style
        self._title, self._icon = m.title, m.icon_name
        self._kitty = list(m.kitty_keyboard)
        self._modify_keys = dict(m.modify_keys)
        self._saved = list(m.saved_cursors)
        self._saved_from = [_ANY_CUT if m.saved_cursors[0] is None else _NO_CUT, _NO_CUT]
        self._tabs_changed = m.tab_stops_changed

    @property
    def in_alt_screen(self) -> bool:
        return bool(self._alt)

    def modes(self) -> TerminalModes:
        """The state at the end of the bytes scanned so far."""
        return self._freeze(self._pen)

    def _freeze(self, pen: Pen) -> TerminalModes:
        return TerminalModes(
            private_modes=tuple(sorted(self._modes.items())),
            ansi_modes=tuple(sorted(self._ansi.items())),
            alt_screen=self._alt,
            alt_screen_clean=self._alt_clean,
            scroll_region=self._region,
            keypad_application=self._keypad,
            pen=tuple(sorted(pen.items())),
            g0=self._g0,
            g1=self._g1,
            shift_out=self._shift_out,
            cursor_style=self._cursor_style,
            title=self._title,
            icon_name=self._icon,
            kitty_keyboard=tuple(self._kitty),
            modify_keys=tuple(sorted(self._modify_keys.items())),
            saved_cursors=(self._saved[0], self._saved[1]),
            tab_stops_changed=self._tabs_changed,
        )

    def _pen_at(self, pos: int) -> Pen:
        """The pen at buf[pos], folding forward from the last point it was known."""
        self._pen = fold_pen(self._buf, self._pen_from, pos, self._pen)
        self._pen_from = pos
        return self._pen

    def _state_at(self, pos: int) -> TerminalModes:
        return self._freeze(self._pen_at(pos))

    # -- scanning --

    def scan(self, buf: bytes, base: int) -> int:
        """Follow the complete escape sequences of buf, which starts at stream offset ``base``.

        Returns the index in buf where an unfinished sequence starts (len(buf) if none): the caller
        passes those bytes again, in front of the next chunk.
        """
        self._buf, self._base, self._pen_from = buf, base, 0
        end = _unfinished(buf)
        if self._pending is not None:
            self._resolve_pending(end)
        for m in self._events(buf, end):
            sequence = m.group()
            simple = _SIMPLE_MODES.get(sequence)
            if simple is not None and len(self._modes) < MAX_MODES:
                self._modes.update(simple)
            elif sequence[0] != 0x1B:
                self._shift_out = sequence == b"\x0e"
            elif sequence[1] == 0x5B:  # [
                self._csi(m.start())
            else:
                self._escape(m.start())
        self._pen_at(end)
        self._tail = (self._tail + buf[max(0, end - _TAIL) : end])[-_TAIL:]
        self._buf = b""
        return end

    def _events(self, buf: bytes, end: int) -> Iterable[re.Match[bytes]]:
        """The state-changing sequences of buf[:end], in order."""
        sources = [_EVENT]
        if self._g0 is not None or self._g1 is not None:
            sources.append(_DESIGNATE_ASCII)
        if b"\x0e" in buf or b"\x0f" in buf:
            sources.append(_SHIFT)
        found = [found for r in sources if (found := list(r.finditer(buf, 0, end)))]
        if len(found) == 1:
            return found[0]
        return sorted((m for matches in found for m in matches), key=lambda m: m.start())

    def _escape(self, pos: int) -> None:
        buf = self._buf
        kind = buf[pos + 1 : pos + 2]
        if kind == b"c":  # RIS
            self._set_repaint(False, (self._base + pos, self._state_at(pos)))
            self._set_repaint(True, None)
            kept, kept_from = self._saved[1], self._saved_from[1]  # xterm keeps the alternate's
            self._load(TerminalModes(saved_cursors=(None, kept)))
            self._saved_from[1] = kept_from
            self._pen_from = pos + 2
        elif kind == b"7":
            self._save(pos)
        elif kind == b"8":
            self._restore(pos + 2)
        elif kind in (b"=", b">"):
            self._keypad = kind == b"="
        elif kind == b"H":  # HTS
            self._tabs_changed = True
        elif kind in (b"(", b")"):
            m = _DESIGNATE.match(buf, pos)
            if m:
                charset = None if m[2] == b"B" else m[2]
                if m[1] == b"(":
                    self._g0 = charset
                else:
                    self._g1 = charset
        elif kind == b"]":
            m = _OSC_TITLE.match(buf, pos)
            if m:
                if m[1] in b"02":
                    self._title = m[2]
                if m[1] in b"01":
                    self._icon = m[2]

    def _csi(self, pos: int) -> None:
        m = _CSI.match(self._buf, pos)
        if m is None:
            return
        marker, params, space, final = m.groups()
        if marker == b"?":
            if not space and final in (b"h", b"l"):
                self._private(pos, m.end(), params, final == b"h")
        elif marker == b">":
            if final == b"u":
                flags = max(0, number(params.split(b";")[0]))
                self._kitty = [*self._kitty, flags][-MAX_KITTY_FLAGS:]
            elif final == b"m":
                self._xtmodkeys(params)
        elif marker == b"<" and final == b"u":
            del self._kitty[max(0, len(self._kitty) - max(1, number(params))) :]
        elif marker == b"=" and final == b"u":
            self._kitty_set(params)
        elif marker or space:
            if space and final == b"q":
                self._cursor_style = params if params not in (b"", b"0") else None
        elif final == b"s":  # SCOSC, unless DECLRMM makes it DECSLRM (xterm)
            if not self._modes.get(69):
                self._save(pos)
        elif final == b"u":  # SCORC; xterm ignores it with parameters
            if not params:
                self._restore(m.end())
        elif final in (b"h", b"l"):
            for token in params.split(b";"):
                if number(token) in ANSI_MODES:
                    self._ansi[number(token)] = final == b"h"
        elif final == b"r":
            self._stbm(params)
        elif final == b"g":  # TBC
            self._tabs_changed = True
        elif final == b"J":
            self._erase(pos, m.end(), params)

    def _private(self, pos: int, end: int, params: bytes, on: bool) -> None:
        numbers = [n for n in map(number, params.split(b";")) if n > 0]
        if not (ALT_SCREEN_MODES | {SAVE_CURSOR_MODE}).intersection(numbers):
            if len(_SIMPLE_MODES) > 4096:
                _SIMPLE_MODES.clear()
            _SIMPLE_MODES[self._buf[pos:end]] = {n: on for n in numbers if n not in NOT_REPLAYED}
        before = None
        if on and ALT_SCREEN_MODES.intersection(numbers):
            before = self._state_at(pos)  # a replay from here must start before the sequence
        for n in numbers:
            if n in ALT_SCREEN_MODES:
                self._alt_screen(n, on, pos, end, before)
            elif n == SAVE_CURSOR_MODE:
                if on:
                    self._save(pos)
                else:
                    self._restore(end)
            elif n not in NOT_REPLAYED and (n in self._modes or len(self._modes) < MAX_MODES):
                self._modes[n] = on

    def _alt_screen(
        self, n: int, on: bool, pos: int, end: int, before: TerminalModes | None
    ) -> None:
        if on:
            if n == 1049:  # saves the cursor as it was before the sequence, where a cut may be
                self._save(pos, known_until=self._base + pos - 1 if self._base + pos else 0)
            entering = not self._alt
            if before is not None and (n == 1049 or (entering and self._alt_clean)):
                self._set_repaint(True, (self._base + pos, before))
            if entering:
                self._alt = n
            self._alt_clean = False
        else:
            if self._alt:
                self._alt_clean = n == 1047  # ?1047l clears the alternate screen as it leaves
                self._alt = 0
                self._set_repaint(True, None)
            if n == 1049:
                self._restore(end)

    def _save(self, pos: int, known_until: int | None = None) -> None:
        """DECSC at buf[pos]. A replay starting at or before ``known_until`` (by default the
        sequence itself) saves the same position."""
        slot = 1 if self._alt else 0
        self._saved[slot] = SavedCursor(
            pen=tuple(sorted(self._pen_at(pos).items())),
            origin=self._modes.get(6),
            g0=self._g0,
            g1=self._g1,
            shift_out=self._shift_out,
        )
        self._saved_from[slot] = self._base + pos if known_until is None else known_until

    def _restore(self, end: int) -> None:
        """DECRC at buf[:end]: the saved pen, origin mode and charsets come back (xterm).

        A repaint after the point the saved position is known from can no longer be replayed
        exactly: the cursor lands where the preamble recreated the saved one, the top left corner.
        """
        slot = 1 if self._alt else 0
        known_until = self._saved_from[slot]
        if known_until < self.main_repaint[0]:
            self.main_exact = False
        if self.alt_repaint is not None and known_until < self.alt_repaint[0]:
            self.alt_exact = False
        saved = self._saved[slot]
        if saved is None:  # nothing saved: home, origin mode off, default pen and charsets
            saved = SavedCursor(origin=False)
        self._pen, self._pen_from = dict(saved.pen), end
        if saved.origin is None:
            self._modes.pop(6, None)
        else:
            self._modes[6] = saved.origin
        self._g0, self._g1, self._shift_out = saved.g0, saved.g1, saved.shift_out

    def _stbm(self, params: bytes) -> None:
        parts = params.split(b";")
        top, bottom = number(parts[0]), number(parts[1]) if len(parts) > 1 else 0
        if top <= 1 and bottom == 0:
            self._region = None  # the whole screen
        elif top >= 0 and bottom >= 0 and not (bottom and max(top, 1) >= bottom):
            self._region = (top, bottom)  # terminals ignore a region of fewer than two lines

    def _erase(self, pos: int, end: int, params: bytes) -> None:
        """ED: a whole-screen clear next to an absolute cursor position is a full repaint."""
        if params == b"2":
            home = self._cup_before(pos)
            if home is not None:
                self._repaint(self._base + pos - home[1], self._state_at(pos))
            elif _CUP.match(self._buf, end):
                self._repaint(self._base + pos, self._state_at(pos))
            elif _CUP_UNFINISHED.match(self._buf, end):
                state = self._state_at(pos)
                self._pending = (self._base + pos, self._base + end, state, bool(self._alt))
        elif params in (b"", b"0") and not self._modes.get(6):
            home = self._cup_before(pos)
            if home is not None and home[0] in _HOME:  # erase below, from the top left corner
                self._repaint(self._base + pos - home[1], self._state_at(pos))

    def _cup_before(self, pos: int) -> tuple[bytes, int] | None:
        """The parameters and length of a cursor position sequence ending at buf[pos], if any."""
        before = self._buf[max(0, pos - _TAIL) : pos]
        if pos < _TAIL:
            before = (self._tail + before)[-_TAIL:]
        m = _CUP_BEFORE.search(before)
        return None if m is None else (m[1], len(before) - m.start())

    def _resolve_pending(self, end: int) -> None:
        pos, after, state, alt = self._pending or (0, 0, TerminalModes(), False)
        i = after - self._base
        if i >= 0 and _CUP.match(self._buf, i, end):
            self._pending = None
            self._set_repaint(alt, (pos, state))
        elif not (i >= 0 and _CUP_UNFINISHED.match(self._buf, i)):
            self._pending = None

    def _repaint(self, pos: int, state: TerminalModes) -> None:
        self._pending = None
        self._set_repaint(bool(self._alt), (pos, state))

    def _set_repaint(self, alt: bool, repaint: Repaint | None) -> None:
        if alt:
            self.alt_repaint, self.alt_exact = repaint, True
        elif repaint is not None:
            self.main_repaint, self.main_exact = repaint, True

    def _xtmodkeys(self, params: bytes) -> None:
        parts = params.split(b";")
        resource = number(parts[0])
        if not params:
            self._modify_keys.clear()
        elif len(parts) == 1 or not parts[1]:
            self._modify_keys.pop(resource, None)
        elif resource >= 0 and len(self._modify_keys) < 16:
            self._modify_keys[resource] = parts[1]

    def _kitty_set(self, params: bytes) -> None:
        parts = params.split(b";")
        flags, how = max(0, number(parts[0])), number(parts[1]) if len(parts) > 1 else 1
        current = self._kitty[-1] if self._kitty else 0
        value = flags if how == 1 else current | flags if how == 2 else current & ~flags
        if self._kitty:
            self._kitty[-1] = value
        else:
            self._kitty.append(value)
