"""Two reference terminal parsers, byte by byte, for the repaint's well-formedness tests: tmux's
(its input.c state tables, 3.3) and xterm's (the VT500 parser, with BEL ending an OSC, on the
UTF-8-decoded text, where U+0080-U+009F are C1 controls). Written from those descriptions, not from
egg's scanner, so that a test can ask "what would this terminal make of these bytes?": which string
sequences it saw and how each ended, which control sequences it ran, and whether it is left
inside a string (swallowing what comes next).
"""

from __future__ import annotations

import attrs

#: states in which a terminal swallows what it receives until a terminator
STRING_STATES = frozenset({"dcs_enter", "dcs", "dcs_escape", "dcs_ignore", "osc", "apc", "sos_pm"})


@attrs.define
class Parsed:
    """What a terminal made of some bytes."""

    state: str = "ground"
    #: (kind, body, how it ended: "st", "bel", "abort"), kind one of P ] _ ^ X k
    strings: list[tuple[str, bytes, str]] = attrs.Factory(list)
    #: control sequences run: the parameter and intermediate bytes and the final, as "[...F"
    csis: list[bytes] = attrs.Factory(list)
    text: bytearray = attrs.Factory(bytearray)

    @property
    def open(self) -> bool:
        return self.state in STRING_STATES


class _Machine:
    def __init__(self) -> None:
        self.out = Parsed()
        self.kind = ""
        self.body = bytearray()
        self.csi = bytearray()
        self.ended: tuple[str, bytes] | None = None  # a string an ESC interrupted: ST or abort?

    def start(self, state: str, kind: str) -> None:
        self.out.state, self.kind, self.body = state, kind, bytearray()

    def finish(self, how: str) -> None:
        self.out.strings.append((self.kind, bytes(self.body), how))
        self.out.state = "ground"

    def escape(self) -> None:
        """An ESC: whatever string was in progress ends here, by ST if a backslash follows."""
        self.after_escape(-1)  # ESC ESC: a string the first one interrupted was aborted
        if self.out.state in STRING_STATES:
            self.ended = (self.kind, bytes(self.body))
        self.out.state = "escape"

    def after_escape(self, char: int) -> None:
        """The byte after an ESC that interrupted a string (-1: none came)."""
        if self.ended is not None:
            kind, body = self.ended
            self.out.strings.append((kind, body, "st" if char == 0x5C else "abort"))
            self.ended = None


def tmux(data: bytes) -> Parsed:
    """tmux 3.3's input parser (input.c): DCS bodies pair ESC with the next byte and end only at
    ESC \\; every other state is left at CAN, SUB or ESC; no C1 controls (bytes >= 0x80 are
    text, or ignored inside sequences)."""
    m = _Machine()
    out = m.out
    for char in data:
        state = out.state
        if state == "dcs":
            if char == 0x1B:
                out.state = "dcs_escape"
            else:
                m.body.append(char)
            continue
        if state == "dcs_escape":
            if char == 0x5C:
                m.finish("st")
            else:
                m.body += bytes([0x1B, char])
                out.state = "dcs"
            continue
        if char in (0x18, 0x1A):  # INPUT_STATE_ANYWHERE
            m.after_escape(-1)
            if state in STRING_STATES:
                m.finish("abort")
            out.state = "ground"
            continue
        if char == 0x1B:
            m.escape()
            continue
        if state == "ground":
            out.text.append(char)
        elif state in ("escape", "esc_intermediate"):
            if char < 0x20 or char > 0x7E:
                continue  # a C0 control runs, other bytes are ignored
            if state == "escape":
                m.after_escape(char)
            if 0x20 <= char <= 0x2F:
                out.state = "esc_intermediate"
            elif state == "escape" and char == 0x5B:
                out.state, m.csi = "csi", bytearray(b"[")
            elif state == "escape" and char == 0x50:
                m.start("dcs_enter", "P")
            elif state == "escape" and char == 0x5D:
                m.start("osc", "]")
            elif state == "escape" and char in (0x5F, 0x6B):
                m.start("apc", chr(char))
            elif state == "escape" and char in (0x58, 0x5E):
                m.start("sos_pm", chr(char))
            elif 0x30 <= char <= 0x7E:
                out.state = "ground"
        elif state == "csi":
            if 0x20 <= char <= 0x3F:
                m.csi.append(char)
            elif 0x40 <= char <= 0x7E:
                out.csis.append(bytes(m.csi) + bytes([char]))
                out.state = "ground"
        elif state == "dcs_enter":
            if char == 0x3A:
                out.state = "dcs_ignore"
            elif 0x20 <= char <= 0x3F:
                m.body.append(char)
            elif 0x40 <= char <= 0x7E:
                m.body.append(char)
                out.state = "dcs"
        elif state == "osc":
            if char == 0x07:
                m.finish("bel")
            elif char >= 0x20:
                m.body.append(char)
        elif state in ("apc", "sos_pm", "dcs_ignore") and char >= 0x20:
            m.body.append(char)
    return out


_C1_STRINGS = {0x90: ("dcs_enter", "P"), 0x9D: ("osc", "]"), 0x9F: ("apc", "_")}
_C1_STRINGS |= {0x98: ("sos_pm", "X"), 0x9E: ("sos_pm", "^")}


def xterm(data: bytes) -> Parsed:
    """xterm's parser (the VT500 state machine, BEL ending an OSC) on UTF-8 text: CAN, SUB, ESC and
    every C1 control act from any state; U+009C is ST; ``ESC k`` is no string."""
    m = _Machine()
    out = m.out
    for char in map(ord, data.decode("utf-8", "replace")):
        state = out.state
        if char in (0x18, 0x1A) or 0x80 <= char <= 0x9F:  # anywhere
            m.after_escape(-1)
            if state in STRING_STATES:
                m.finish("st" if char == 0x9C else "abort")
            out.state = "ground"
            if char == 0x9B:
                out.state, m.csi = "csi", bytearray(b"[")
            elif char in _C1_STRINGS:
                m.start(*_C1_STRINGS[char])
            continue
        if char == 0x1B:
            m.escape()
            continue
        if state == "ground":
            if char >= 0x20 or char in (0x0A, 0x0D, 0x09):
                out.text += chr(char).encode()
        elif state in ("escape", "esc_intermediate"):
            if char < 0x20 or char == 0x7F:
                continue  # a C0 control runs, DEL is ignored
            if state == "escape":
                m.after_escape(char)
            if 0x20 <= char <= 0x2F:
                out.state = "esc_intermediate"
            elif state == "escape" and char == 0x5B:
                out.state, m.csi = "csi", bytearray(b"[")
            elif state == "escape" and char == 0x50:
                m.start("dcs_enter", "P")
            elif state == "escape" and char == 0x5D:
                m.start("osc", "]")
            elif state == "escape" and char in (0x58, 0x5E, 0x5F):
                m.start("apc" if char == 0x5F else "sos_pm", chr(char))
            else:
                out.state = "ground"
        elif state == "csi":
            if 0x20 <= char <= 0x3F:
                m.csi.append(char)
            elif 0x40 <= char <= 0x7E:
                out.csis.append(bytes(m.csi) + bytes([char]))
                out.state = "ground"
        elif state == "dcs_enter":
            if 0x20 <= char <= 0x3F:
                m.body.append(char)
            elif 0x40 <= char <= 0x7E:
                m.body.append(char)
                out.state = "dcs"
        elif state == "osc" and char == 0x07:
            m.finish("bel")
        elif state in ("osc", "dcs", "apc", "sos_pm"):
            m.body += chr(char).encode()
    return out
