"""The session's output replay ring: raw PTY output kept for repainting reattaching clients.

The daemon calls ``ReplayRing.feed`` with every chunk it reads from the PTY, so feeding only copies
the chunk into a bounded buffer and lets ``ModeTracker`` skim it for the few sequences that change
terminal state; no emulator runs here (pyte manages 0.1-1 MiB/s, the PTY 60-90 MiB/s).

A client attaching gets ``snapshot(rows, cols)``: a reset, a preamble restoring the state in force
at a cut point, then the ring from that cut point. The cut point is, in order of preference:

1. ``plain``: a line start after which the output, on the main screen, is only text, colour and
   line-local editing for at least two screenfuls of lines (plus ``history`` lines for the client's
   scrollback). Such a tail scrolls everything before it off the screen, so the repaint is exact
   and short however long ago the last clear was.
2. ``repaint``: the last full repaint of the screen in use (stream start, RIS, a clear screen next
   to an absolute cursor position, alternate-screen entry) still in the ring. Exact, unless a
   cursor saved before it is restored after it (DECRC, SCORC, ?1048l, ?1049l: the preamble
   recreates what a saved cursor holds, not where it is), or it is an entry that no cursor
   position follows (the entry leaves the cursor where the main screen had it).
3. ``fallback``: the oldest safe point in the ring. Content drawn before the ring's window and
   never redrawn since is lost, so the daemon should make the program repaint (a SIGWINCH) when
   ``Cut.exact`` is false.

"Exact" means: fed to a fresh terminal of the same size, the payload shows the same screen
(characters, attributes, cursor position and visibility), modes and pen as the whole stream did,
except for the main screen hidden behind an alternate screen entered before the cut. No cut is
exact when the replay tabs (HT, CHT, CBT) with tab stops changed before it (only an emulator knows
where they are). Terminals are taken to be xterm's kind (``modes`` says where tmux differs).
"""

from __future__ import annotations

import bisect
import re

import attrs

from egg_core.session import strings
from egg_core.session.modes import ModeTracker, TerminalModes

DEFAULT_CAPACITY = 8 * 1024 * 1024
PLAIN_WINDOW = 64 * 1024  # first look for a plain cut in this much of the ring's tail
DEFAULT_HISTORY = 2000  # lines of scrollback a plain-tail replay gives the client, beyond 2 screens
ALL_HISTORY = 1 << 30  # "all": as many lines as the ring holds
RESET = b"\x1bc"  # RIS: also leaves the alternate screen and resets every mode

# Everything that may appear in a "plain" tail: text and C0 controls other than ESC, SGR,
# line-local editing (EL, ECH, DCH, ICH, CUF, CUB, CHA, HPA, HPR), mode changes that do not move
# the cursor or switch screens, reports, titles, keypad and charset selection. Anything else — a
# vertical cursor move, ED, a scroll region, DECSC/DECRC, RIS, a C1 control — makes the rows
# above the cursor matter, and then only a full repaint is a safe cut.
_NOT_PLAIN = re.compile(
    rb"\x1b(?!"
    rb"\[[0-9;:]*m|\[[0-9;]*[KXP@CDG`a]|\[[0-9;]*[hlnc]|\[[0-9]* q|\[[<>=][0-9;]*[umc]"
    rb"|\[\?(?!(?:[0-9;]*;)?(?:3|5|6|47|1047|1048|1049)[;hl])[0-9;]*[hlnu$]"
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)|[=>\\]|[()][\x20-\x2f]*[\x30-\x7e])"
    rb"|\xc2[\x80-\x9f]"
)
_FALLBACK_SEARCH = 4096  # how far past a checkpoint the fallback looks for a line or sequence
# An alternate-screen entry leaves the cursor where the main screen had it, which a replay from
# the entry does not know: such a cut is exact only if an absolute cursor position comes before
# anything that depends on or saves the cursor. What may come between: DECSET (no screen switch
# or save), SM/RM, SGR, DECSTBM, ED 2, keyboard protocols, cursor style, window operations,
# queries, OSC strings, keypad and charset selection, BEL.
_ENTRY = re.compile(rb"\x1b\[\?[0-9;]*h")
_TABBING = re.compile(rb"\t|\x1b\[[0-9]*[IZ]")  # HT, CHT, CBT
_POSITIONED = re.compile(
    rb"(?:\x1b\[\?(?!(?:[0-9;]*;)?(?:47|1047|1048|1049)[;hl])[0-9;]*[hl]|\x1b\[[0-9;:]*[hlmr]"
    rb"|\x1b\[2J|\x1b\[[<>=?][0-9;]*[umcq]|\x1b\[[0-9;]*(?: q|[tcn])|\x1b\[\?[0-9;]*\$p"
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>]|\x1b[()][\x20-\x2f]*[\x30-\x7e]|\x07)*"
    rb"\x1b\[[0-9;]*[Hf]"
)


@attrs.frozen
class Cut:
    """Where a replay starts, the state in force there, and whether the replay is exact."""

    start: int  # stream offset
    modes: TerminalModes
    exact: bool
    kind: str  # "plain", "repaint" or "fallback" (see the module docstring)


@attrs.frozen
class Replay:
    """A reattach payload, the cut it starts from, and what to take out of the live output that
    follows it (the rest of a string sequence the payload dropped unfinished, if any)."""

    payload: bytes
    cut: Cut
    skip: strings.Skip | None


class ReplayRing:
    """A bounded buffer of a session's raw output that can repaint a client from it."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 64:
            raise ValueError("a replay ring needs at least 64 bytes")
        self._capacity = capacity
        self._buf = bytearray()
        self._total = 0
        self._tracker = ModeTracker()
        self._carry = b""  # an escape sequence not finished at the end of the last chunk
        # States at chunk boundaries, so that the state anywhere in the ring can be found by
        # rescanning at most a checkpoint interval. The first is stream start.
        self._checkpoints: list[tuple[int, TerminalModes]] = [(0, TerminalModes())]
        self._interval = max(capacity // 64, 64)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def total(self) -> int:
        """Bytes ever fed."""
        return self._total

    @property
    def start(self) -> int:
        """Stream offset of the oldest byte still held."""
        return max(0, self._total - self._capacity)

    def feed(self, data: bytes) -> None:
        """Keep one chunk of output. Cheap, and never raises whatever the bytes."""
        if len(data) > self._capacity // 2:  # keep checkpoints inside the ring
            step = self._capacity // 4
            for i in range(0, len(data), step):
                self.feed(data[i : i + step])
            return
        if not data:
            return
        self._append(data)
        carry = self._carry
        buf = carry + data if carry else data
        base = self._total - len(carry)
        self._total += len(data)
        done = self._tracker.scan(buf, base)
        self._carry = buf[done:]
        mark = base + done
        if mark - self._checkpoints[-1][0] >= self._interval:
            self._checkpoints.append((mark, self._tracker.modes()))
            while len(self._checkpoints) > 1 and self._checkpoints[0][0] < self.start:
                del self._checkpoints[0]

    def _append(self, data: bytes) -> None:
        cap, buf, n = self._capacity, self._buf, len(data)
        if len(buf) == self._total and self._total + n <= cap:  # still growing
            buf += data
            return
        if len(buf) < cap:
            buf.extend(bytes(cap - len(buf)))
        pos = self._total % cap
        first = min(n, cap - pos)
        view = memoryview(data)
        buf[pos : pos + first] = view[:first]
        buf[: n - first] = view[first:]

    def read(self, start: int, end: int | None = None) -> bytes:
        """The output between two stream offsets, which must still be held."""
        end = self._total if end is None else end
        if not self.start <= start <= end <= self._total:
            raise ValueError(f"bytes {start}-{end} are not in the ring ({self.start}-{self.total})")
        cap, n = self._capacity, end - start
        pos = start % cap
        first = min(n, cap - pos)
        view = memoryview(self._buf)
        try:  # one copy, not three
            return b"".join((view[pos : pos + first], view[: n - first]))
        finally:
            view.release()

    def modes(self) -> TerminalModes:
        """The terminal state at the end of the output, for status and debugging."""
        return self._tracker.modes()

    # -- repainting --

    def snapshot(self, rows: int, cols: int) -> bytes:
        """What to send a client of ``rows`` x ``cols`` attaching now, before live output.

        ``cols`` does not move the cut point: every row takes at least one line feed, whatever the
        width, so counting line feeds is enough.
        """
        return self.repaint(rows).payload

    def repaint(self, rows: int, history: int = DEFAULT_HISTORY) -> Replay:
        """The reattach payload and the cut it starts from (``cut.exact`` False: the program
        should be made to repaint itself), computing the cut once. The payload is well-formed
        (:mod:`egg_core.session.strings`): every string sequence in it complete, none of the
        program's terminal queries (:mod:`egg_core.session.queries`: the attaching terminal
        would answer them into the program's input), no passthrough; ``skip`` says what to take
        out of the live output when the ring ends inside a string sequence."""
        cut = self.cut(rows, history=history)
        payload, skip = strings.for_repaint(cut.modes.preamble() + self.read(cut.start))
        return Replay(payload=RESET + payload, cut=cut, skip=skip)

    def since_last_repaint(
        self, rows: int = 50, *, max_bytes: int | None = None, history: int = DEFAULT_HISTORY
    ) -> bytes:
        """Bytes that draw the current screen on a freshly reset terminal: preamble, then output.

        For ``egg status --screen`` (``screen.render``), watchers of another size
        (:mod:`egg_core.session.watching`, which want no ``history``) and tests; ``max_bytes``
        bounds the output part, at the price of exactness, when rendering with a slow emulator.
        """
        cut = self.cut(rows, history=history, max_bytes=max_bytes)
        return cut.modes.preamble() + self.read(cut.start)

    def cut(
        self, rows: int, *, history: int = DEFAULT_HISTORY, max_bytes: int | None = None
    ) -> Cut:
        """Where a replay for a client with ``rows`` rows starts (see the module docstring)."""
        floor = self.start if max_bytes is None else max(self.start, self._total - max_bytes)
        tracker = self._tracker
        alt = tracker.in_alt_screen
        repaint = tracker.alt_repaint if alt else tracker.main_repaint
        exact = tracker.alt_exact if alt else tracker.main_exact
        if repaint is not None and repaint[0] < floor:
            repaint = None
        if not tracker.in_alt_screen:
            after = floor if repaint is None else repaint[0]
            plain = self._plain_cut(max(rows, 1), history, after)
            if plain is not None:
                return self._unless_tabbing(plain)
        if repaint is not None:
            exact = exact and (not alt or self._positioned_after_entry(repaint[0]))
            cut = Cut(start=repaint[0], modes=repaint[1], exact=exact, kind="repaint")
            return self._unless_tabbing(cut)
        return self._fallback_cut(floor)

    def _unless_tabbing(self, cut: Cut) -> Cut:
        """``cut``, not exact if the replay tabs with tab stops changed before it."""
        if cut.exact and cut.modes.tab_stops_changed and _TABBING.search(self.read(cut.start)):
            return attrs.evolve(cut, exact=False)
        return cut

    def _positioned_after_entry(self, start: int) -> bool:
        """Whether the repaint at ``start``, if an alternate-screen entry, positions the cursor
        before it matters (see ``_POSITIONED``). Clears are next to a position by definition."""
        ahead = self.read(start, min(self._total, start + _FALLBACK_SEARCH))
        entry = _ENTRY.match(ahead)
        return entry is None or _POSITIONED.match(ahead, entry.end()) is not None

    def _plain_cut(self, rows: int, history: int, floor: int) -> Cut | None:
        """The latest line start with a plain tail of 2*rows (ideally 2*rows+history) lines.

        Only the tail is read: a window that grows from the end until it holds enough lines
        (copying an 8 MiB ring to find 600 line feeds made reattach slow and memory-hungry).
        """
        least, want = 2 * rows, 2 * rows + history
        window = PLAIN_WINDOW
        while True:
            base = max(floor, self._total - window)
            data = self.read(base)
            known = self._first_checkpoint() - base  # the state is only known from there on
            candidates = []  # offsets in data, latest first
            feeds, pos, enough = 0, len(data), False
            while not enough:
                i = data.rfind(b"\n", max(known - 1, 0), pos)
                if i < 0:
                    if feeds >= least and base == 0 and known <= 0:
                        candidates.append(0)  # the stream's first line: a line start too
                    break
                if feeds >= least and i > 0 and data[i - 1] == 0x0D:  # after CR LF: column 0
                    candidates.append(i + 1)
                    enough = feeds >= want
                feeds, pos = feeds + 1, i
            if enough or base == floor:
                break
            window *= 4
        floor = base
        if not candidates:
            return None
        limit = len(data) - len(self._carry)
        if _NOT_PLAIN.search(data, candidates[0], limit):
            return None
        last = 0
        for m in _NOT_PLAIN.finditer(data, candidates[-1], candidates[0]):
            last = m.end()
        start = min(c for c in candidates if c >= last) if last else candidates[-1]
        modes = self._modes_at(floor + start)
        if modes is None or modes.scroll_region is not None or modes.alt_screen:
            return None
        return Cut(start=floor + start, modes=modes, exact=True, kind="plain")

    def _fallback_cut(self, floor: int) -> Cut:
        """The first line start or escape sequence after the oldest usable checkpoint."""
        keys = [pos for pos, _ in self._checkpoints]
        i = bisect.bisect_left(keys, floor)
        mark = keys[min(i, len(keys) - 1)]
        if mark < self.start:  # only possible when the ring holds less than a checkpoint interval
            # (an unfinished escape sequence carried over can be longer than what the ring holds)
            mark = max(self.start, self._total - len(self._carry))
        ahead = self.read(mark, min(self._total, mark + _FALLBACK_SEARCH))
        line, sequence = ahead.find(b"\n"), ahead.find(b"\x1b")
        found = [j for j in (line + 1 if line >= 0 else -1, sequence) if j >= 0]
        start = mark + min(found) if found else mark
        modes = self._modes_at(start)
        if modes is None:
            start, modes = mark, self._modes_at(mark)
        while start < self._total and 0x80 <= self.read(start, start + 1)[0] < 0xC0:
            start += 1  # never begin inside a UTF-8 character
        return Cut(start=start, modes=modes or self.modes(), exact=False, kind="fallback")

    def _first_checkpoint(self) -> int:
        marks = (pos for pos, _ in self._checkpoints if pos >= self.start)
        return next(marks, self._total)

    def _modes_at(self, pos: int) -> TerminalModes | None:
        """The state at ``pos``, rescanned from the checkpoint before it; None inside a sequence."""
        i = bisect.bisect_right(self._checkpoints, pos, key=lambda c: c[0]) - 1
        if i < 0 or self._checkpoints[i][0] < self.start:
            return None
        mark, modes = self._checkpoints[i]
        if mark == pos:
            return modes
        tracker = ModeTracker(modes)
        region = self.read(mark, pos)
        if tracker.scan(region, mark) != len(region):
            return None
        return tracker.modes()
