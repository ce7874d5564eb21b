"""Threat N: a sandbox must not write the user's clipboard through the terminal.

OSC 52 (``ESC ] 52 ; selection ; base64 BEL``) asks the terminal to put text on the system
clipboard. From a sandboxed program that is a way out: it can put a command there for the user to
paste into a shell outside. Sessions drop these sequences from the program's output — live, in
the replay ring, in the audit log — unless egg.yaml's ``clipboard: true`` allows them. Queries
(``ESC ] 52 ; c ; ? BEL``, a read of the clipboard) go too: the answer would be typed into the
program.

The filter works on a stream cut at arbitrary points: a sequence split across two reads is held
back until it is complete (at most a few bytes of ordinary output are delayed, and only when a
read ends in what could be the start of one). A dropped sequence ends where a terminal would end
it — BEL, ST (``ESC \\``), CAN, SUB, or any other escape — or after :data:`MAX_SEQUENCE` bytes, so
an unterminated one cannot swallow the rest of the session. Inside tmux's passthrough
(``ESC P tmux; ESC ESC ] 52 ...``) the inner sequence is dropped with the escape doubling its
ESC: left behind, that lone escape would pair with the passthrough's own terminator, and the
user's tmux would take everything after it as passthrough.
"""

from __future__ import annotations

START = b"\x1b]52;"
#: the same inside tmux's passthrough, where every ESC is doubled
DOUBLED = b"\x1b" + START
MAX_SEQUENCE = 1 << 20
_ENDS = (0x07, 0x18, 0x1A)  # BEL, CAN, SUB


class ClipboardFilter:
    """Drop OSC 52 sequences from a byte stream. ``dropped`` counts the sequences removed."""

    def __init__(self) -> None:
        self._carry = b""
        self._inside = False
        self._skipped = 0
        self._doubled = False
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        if not self._carry and not self._inside and START[:1] not in data:
            return data  # the common case: one scan for ESC, no copy
        data = self._carry + data
        self._carry = b""
        out: list[bytes] = []
        i = 0
        size = len(data)
        while i < size:
            if self._inside:
                end = self._end_of_sequence(data, i)
                if end is None:
                    # maybe ESC \ (or ESC ESC \ in a passthrough): decide with the next read
                    held = len(data) - len(data.rstrip(b"\x1b"))
                    self._carry = data[size - min(held, 2) :] if held else b""
                    self._skipped += size - i
                    if self._skipped > MAX_SEQUENCE:
                        self._inside = False
                    return b"".join(out)
                i = end
                self._inside = False
                continue
            start = data.find(START, i)
            if start < 0:
                keep = _partial_start(data, i)
                out.append(data[i : size - keep])
                self._carry = data[size - keep :]
                break
            self._doubled = start > i and data[start - 1] == 0x1B
            if self._doubled:
                start -= 1  # the doubling escape of a passthrough goes with it
            out.append(data[i:start])
            self.dropped += 1
            self._inside = True
            self._skipped = 0
            i = data.index(START, start) + len(START)
        return b"".join(out)

    def _end_of_sequence(self, data: bytes, i: int) -> int | None:
        """Where output resumes after the sequence that runs from ``i``; None if it goes on."""
        size = len(data)
        while i < size:
            byte = data[i]
            if byte in _ENDS:
                return i + 1
            if byte == 0x1B:
                if i + 1 >= size:
                    return None
                if self._doubled and data[i + 1] == 0x1B:  # ESC ESC \: ST, doubled
                    if i + 2 >= size:
                        return None
                    if data[i + 2] == 0x5C:
                        return i + 3
                # ST ends it and is part of it; any other escape ends it and is output
                return i + 2 if data[i + 1] == 0x5C else i
            i += 1
        return None


def _partial_start(data: bytes, start: int) -> int:
    """How many bytes at the end of ``data`` could begin :data:`DOUBLED` or :data:`START`."""
    tail = data[max(start, len(data) - len(DOUBLED) + 1) :]
    for length in range(len(tail), 0, -1):
        if DOUBLED.startswith(tail[-length:]) or START.startswith(tail[-length:]):
            return length
    return 0
