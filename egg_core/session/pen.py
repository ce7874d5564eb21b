"""The SGR pen (colours and attributes) in force at a point of a terminal stream, found cheaply.

A line's colour may have been set long before the replayed part of the ring, so reattach must
restore the pen. Folding every SGR sequence of the whole stream in Python would cost the PTY hot
path; instead only the last reset (``ESC[m`` / ``ESC[0m``) of each chunk and the distinct SGR
sequences after it are looked at (``fold_pen``): every SGR assigns a few independent attributes,
so only the last occurrence of each kind matters. ``pen_sgr`` turns a pen back into one sequence.
"""

from __future__ import annotations

import re

_SGR = re.compile(rb"\x1b\[([0-9;:]*+)m")
_SLOT = {1: "bold", 2: "faint", 3: "italic", 23: "italic", 4: "underline", 21: "underline"}
_SLOT |= {24: "underline", 5: "blink", 6: "blink", 25: "blink", 7: "reverse", 27: "reverse"}
_SLOT |= {8: "conceal", 28: "conceal", 9: "strike", 29: "strike", 26: "spacing", 50: "spacing"}
_SLOT |= {51: "frame", 52: "frame", 54: "frame", 53: "overline", 55: "overline", 59: "ulcolor"}
_SLOT |= {n: "font" for n in range(10, 21)} | {n: "ideogram" for n in range(60, 66)}
_SLOT |= {73: "script", 74: "script", 75: "script", 38: "fg", 48: "bg", 58: "ulcolor"}
_SLOT |= {n: "fg" for n in (*range(30, 38), 39, *range(90, 98))}
_SLOT |= {n: "bg" for n in (*range(40, 48), 49, *range(100, 108))}
_EXTENDED = frozenset({38, 48, 58})
_EXTENDED_SLOT = {b"38": "fg", b"48": "bg", b"58": "ulcolor"}
_WHOLE_COLOUR = frozenset({(3, b"5"), (5, b"2")})  # 38;5;n and 38;2;r;g;b
# Emission order. The underline colour goes first: emulators that do not know 58 (pyte) read its
# ``5;n`` as blink, and whatever the later slots say must override that, as it did live.
_PEN_ORDER = (
    "ulcolor",
    "italic",
    "underline",
    "blink",
    "reverse",
    "conceal",
    "strike",
    "font",
    "spacing",
    "frame",
    "overline",
    "ideogram",
    "script",
    "fg",
    "bg",
)
_EFFECTS: dict[bytes, tuple[bool, dict[str, bytes]]] = {}
_RESET_WINDOW = 1024  # how far back from a chunk's end an SGR reset is looked for with rfind

Pen = dict[str, bytes]


def number(token: bytes) -> int:
    """A parameter's value; oversized ones (which no terminal honours) become -1, never an error."""
    if not token:
        return 0
    return int(token) if len(token) <= 9 and token.isdigit() else -1


def _effect(params: bytes) -> tuple[bool, dict[str, bytes]]:
    """What one SGR does: whether it resets the pen, then which slots it assigns which tokens.

    Every SGR is a partial assignment of independent slots (22 assigns both bold and faint), which
    is what lets ``fold_pen`` skip all but the last occurrence of each distinct sequence.
    """
    cached = _EFFECTS.get(params)
    if cached is not None:
        return cached
    tokens = params.split(b";")
    extended = _EXTENDED_SLOT.get(tokens[0])
    if extended and len(tokens) in (3, 5) and (len(tokens), tokens[1]) in _WHOLE_COLOUR:
        # One colour, likely 24-bit and seen only once: skip the loop. (The regex allows ':' in
        # parameters; a colour with one takes the loop.)
        result = (False, {extended: params}) if b":" not in params else _parse(tokens)
    else:
        result = _parse(tokens)
    if len(_EFFECTS) > 4096:
        _EFFECTS.clear()
    _EFFECTS[params] = result
    return result


def _parse(tokens: list[bytes]) -> tuple[bool, dict[str, bytes]]:
    reset, assign = False, {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if b":" in token:  # ITU sub-parameters: 4:3, 38:2::r:g:b
            slot = _SLOT.get(number(token.split(b":", 1)[0]))
            if slot is not None:
                assign[slot] = token
            continue
        code = number(token)
        if code == 0:
            reset = True
            assign.clear()
        elif code in _EXTENDED:
            if i >= len(tokens):
                break
            # pyte and xterm consume the colour the same way: 5;n or 2;r;g;b, anything else is
            # one parameter swallowed.
            kind = number(tokens[i])
            take = 2 if kind == 5 else 4 if kind == 2 else 1
            if i + take > len(tokens):
                break
            if take > 1:
                assign[_SLOT[code]] = b";".join(tokens[i - 1 : i + take])
            i += take
        elif code == 22:
            assign["bold"] = assign["faint"] = b"22"
        elif code in _SLOT:
            assign[_SLOT[code]] = token
    return reset, assign


def _last_reset(buf: bytes, start: int, end: int) -> int:
    """Where the last SGR that starts by resetting the pen begins in buf[start:end], or -1."""
    best = max(buf.rfind(b"\x1b[m", start, end), buf.rfind(b"\x1b[0m", start, end))
    for prefix in (b"\x1b[0;", b"\x1b[;"):
        i = buf.rfind(prefix, max(start, best + 1), end)
        for _ in range(4):  # a CUP such as ESC[0;5H shares the prefix; give up quickly
            if i < 0:
                break
            if _SGR.match(buf, i, end):
                best = i
                break
            i = buf.rfind(prefix, max(start, best + 1), i)
    return best


def fold_pen(buf: bytes, start: int, end: int, pen: Pen) -> Pen:
    """The pen after the SGR sequences of buf[start:end], given the pen at ``start``.

    Every SGR is a partial assignment of independent slots, so each slot takes the value of the
    last SGR that assigns it, and nothing before the last reset matters. Programs that reset often
    (ncurses, ratatui) cost an ``rfind`` and a short ``findall``; the others (chalk's closers) a
    ``findall`` over the chunk and a walk, latest first, over its distinct sequences.
    """
    reset_at = _last_reset(buf, max(start, end - _RESET_WINDOW), end)
    if reset_at >= 0:
        pen, start = {}, reset_at
    found = _SGR.findall(buf, start, end)
    if not found:
        return pen
    result: Pen = {}
    for params in dict.fromkeys(reversed(found)):
        reset, assign = _effect(params)
        for slot, token in assign.items():
            result.setdefault(slot, token)
        if reset:
            return result
    for slot, token in pen.items():
        result.setdefault(slot, token)
    return result


def pen_sgr(pen: tuple[tuple[str, bytes], ...]) -> bytes:
    """The one SGR sequence that sets a fresh terminal's pen to ``pen``."""
    slots = dict(pen)
    tokens = [slots[s] for s in _PEN_ORDER[:1] if s in slots]  # the underline colour
    if slots.get("bold") == b"22" or slots.get("faint") == b"22":
        tokens.append(b"22")
    if slots.get("bold") == b"1":
        tokens.append(b"1")
    if slots.get("faint") == b"2":
        tokens.append(b"2")
    tokens += [slots[s] for s in _PEN_ORDER[1:] if s in slots]
    return b"\x1b[0;" + b";".join(tokens) + b"m" if tokens else b""
