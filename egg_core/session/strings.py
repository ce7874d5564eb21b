"""A repaint's string sequences: each one it keeps is complete, each one it drops is dropped whole.

A string sequence — DCS (``ESC P``), OSC (``ESC ]``), APC (``ESC _``), PM (``ESC ^``), SOS
(``ESC X``), screen's title (``ESC k``, a string to tmux) and the C1 forms of the first five
(U+0090, U+009D, U+009F, U+009E, U+0098, as UTF-8) — makes the terminal swallow everything up to
its terminator. A repaint that leaves one open hands the attaching terminal's parser everything
after it: issue 24's tmux pane stayed blank, then on the alternate screen with the cursor hidden
and ``[exited]`` lost, because a query stripped out of tmux's passthrough
(``ESC P tmux; ESC ESC [ c ESC \\``) left ``ESC P tmux; ESC ESC \\``, a DCS tmux never ends.

So the replayed bytes are read token by token (:func:`for_repaint`), each string the way the
stricter of tmux and xterm reads it:

- a DCS ends only at ``ESC \\``, and inside it an ESC and the byte after it are one pair (tmux's
  ``dcs_escape``, which is how its passthrough doubles ESCs; CAN and SUB do not end it either);
- the others end at ST — ``ESC \\``, or U+009C, which tmux does not take for ST (a kept string
  gets ``ESC \\`` in its place) — and OSC also at BEL; CAN, SUB, another ESC or another C1
  control abort them (xterm; tmux knows no C1 controls).

A complete string is kept, unless it is a terminal query (:mod:`egg_core.session.queries`) or a
DCS with an ESC, CAN, SUB or C1 control in it: tmux's passthrough (``ESC P tmux; …``), screen's
(``ESC P ESC … ESC \\``), or one xterm would end early and read the rest of as commands. What was
passed through went to whatever terminal was outside then, often queries, which the attaching one
would answer. An aborted string is dropped, with the CAN or SUB that aborted it (an ESC or C1
control that did starts what comes next); an unterminated one at the end is dropped, and the
:class:`Skip` returned with the repaint takes the rest of it out of the live output that follows,
so the client sees none of it. CSI queries are dropped too (outside strings: one inside a DCS is
part of it). What is dropped becomes ``ESC \\``, a no-op (ST outside a string) that also ends an
escape or control sequence left unfinished before it, so that nothing dropped joins what came
before it and what comes after into a sequence the stream never had (``ESC``, ``ESC [ c``, ``P``
would be ``ESC P``: a DCS).

Raw 8-bit C1 bytes are not controls to a UTF-8 terminal (tmux, xterm in UTF-8 mode and pyte decode
first), so only their UTF-8 forms are. The replayed bytes are taken to start outside any sequence
(a cut is at the stream's start, a line start or an escape sequence: :mod:`egg_core.session.ring`);
whatever a cut inside a string made of it is closed or dropped all the same.
"""

from __future__ import annotations

import re

import attrs

from egg_core.session.queries import CSI_QUERY, is_query_string

_C1 = rb"\xc2[\x80-\x9f]"
#: how a string other than a DCS ends: ST (7-bit or C1), CAN or SUB, not yet (the data ends,
#: perhaps with the first byte of a terminator), or an ESC or C1 control that aborts it
_ENDS = rb"\x1b\\|\xc2\x9c|[\x18\x1a]|\x1b\Z|\xc2\Z|\Z|(?=\x1b|" + _C1 + rb")"
#: what follows the introducers: DCS (bytes, or ESC and any byte as a pair, up to ESC \ or the
#: end); OSC (which BEL ends too); APC, PM, SOS and screen's title (BEL is part of them)
_BODIES = (
    rb"(?P<dcs_body>[^\x1b]*(?:\x1b[^\\][^\x1b]*)*)(?P<dcs_end>\x1b\\|\x1b?\Z)",
    rb"(?P<osc_body>[^\x07\x18\x1a\x1b\xc2]*(?:\xc2(?![\x80-\x9f]|\Z)[^\x07\x18\x1a\x1b\xc2]*)*)"
    rb"(?P<osc_end>\x07|" + _ENDS + rb")",
    rb"(?P<str_body>[^\x18\x1a\x1b\xc2]*(?:\xc2(?![\x80-\x9f]|\Z)[^\x18\x1a\x1b\xc2]*)*)"
    rb"(?P<str_end>" + _ENDS + rb")",
)
_CSI_QUERY_7BIT = CSI_QUERY.replace(rb"(?:\x1b\[|\xc2\x9b)", rb"\[", 1)
#: every branch after one ESC, which the regular expression engine finds fastest (a literal
#: prefix): for output without C1 controls, nearly all of it
_TOKEN_7BIT = re.compile(
    rb"\x1b(?:(?P<dcs>P)%s|(?P<osc>\])%s|(?P<str>[_^Xk])%s|(?P<query>%s))"
    % (*_BODIES, _CSI_QUERY_7BIT),
    re.S,
)
#: the introducers' C1 forms too
_TOKEN = re.compile(
    rb"(?P<dcs>\x1bP|\xc2\x90)%s|(?P<osc>\x1b\]|\xc2\x9d)%s"
    rb"|(?P<str>\x1b[_^Xk]|\xc2[\x9f\x9e\x98])%s|(?P<query>%s)" % (*_BODIES, CSI_QUERY),
    re.S,
)
_ANY_C1 = re.compile(_C1)
_NOT_IN_A_KEPT_DCS = re.compile(rb"[\x18\x1a\x1b]|" + _C1)
#: what a dropped token becomes (see the module docstring)
FILLER = b"\x1b\\"
_KIND = {b"\x90": b"P", b"\x9d": b"]", b"\x9f": b"_", b"\x9e": b"^", b"\x98": b"X"}
_ABORTED = frozenset({b"\x18", b"\x1a", b""})  # b"": before the ESC or C1 control that aborts it
_PENDING = frozenset({b"", b"\x1b", b"\xc2"})  # how a string at the very end may have ended


@attrs.define
class Skip:
    """The rest of a string sequence a repaint dropped unfinished, to take out of the live output
    that follows it: :meth:`feed` it each chunk; once :attr:`done`, nothing more is taken out."""

    #: the string's introducer (7-bit), and the first byte of a terminator if it ended with one
    pending: bytes
    done: bool = False

    def feed(self, data: bytes) -> bytes:
        """What of ``data`` the client gets: nothing until the string ends, then the rest."""
        if self.done:
            return data
        buf = self.pending + data
        m = _TOKEN.match(buf)
        if m is None or m.group("query") is not None:  # cannot be: it starts with an introducer
            self.done = True
            return data
        kind, _, end = _parts(m)
        if _open(kind, end, m.end() == len(buf)):
            self.pending = b"\x1b" + kind + end
            return b""
        self.done = True
        return buf[m.end() :]


def for_repaint(data: bytes) -> tuple[bytes, Skip | None]:
    """``data`` as a repaint may send it (see the module docstring), and the :class:`Skip` for
    the live output after it when ``data`` ends inside a string sequence."""
    skip: list[Skip] = []

    def token(m: re.Match[bytes]) -> bytes:
        if m.group("query") is not None:
            return FILLER
        kind, body, end = _parts(m)
        if _open(kind, end, m.end() == len(data)):
            skip.append(Skip(b"\x1b" + kind + end))
            return FILLER
        if (end in _ABORTED and kind != b"P") or _dropped(kind, body):
            return FILLER
        if end == b"\xc2\x9c":  # an ST tmux does not take for one: ESC \, which every terminal does
            return m.group()[:-2] + b"\x1b\\"
        return m.group()

    grammar = _TOKEN if _ANY_C1.search(data) else _TOKEN_7BIT
    return grammar.sub(token, data), (skip[0] if skip else None)


def _parts(m: re.Match[bytes]) -> tuple[bytes, bytes, bytes]:
    """(kind — ``P``, ``]``, ``_``, ``^``, ``X`` or ``k`` —, body, terminator) of a string
    token."""
    for name in ("dcs", "osc", "str"):
        intro = m.group(name)
        if intro is not None:
            kind = _KIND.get(intro[-1:], intro[-1:])
            return kind, m.group(name + "_body"), m.group(name + "_end")
    raise ValueError("not a string sequence")


def _open(kind: bytes, end: bytes, at_end: bool) -> bool:
    """Whether a string token that ended with ``end`` still waits for its terminator."""
    if not at_end:
        return False
    return end != b"\x1b\\" if kind == b"P" else end in _PENDING


def _dropped(kind: bytes, body: bytes) -> bool:
    """Whether a complete string is left out of a repaint: a query, or a DCS with a control in it
    that ends it early for xterm (a passthrough, tmux's or screen's, among them)."""
    if kind == b"P" and (body.startswith(b"tmux;") or _NOT_IN_A_KEPT_DCS.search(body)):
        return True
    return is_query_string(kind, body)
