"""Terminal queries: sequences a program writes to ask the terminal something, which the terminal
answers by *typing* the answer into the program's input.

Live, that is how programs learn what terminal they run in (Gemini CLI and vim probe colours and
device attributes at start; opencode asks for kitty graphics and notifications). Replayed in a
reattach repaint, the same queries would be answered again by the attaching terminal, and the
answers would reach the program as keystrokes the user never typed: a dialog option selected,
``>|tmux 3.3a1;2c`` in an input box. So a repaint carries none of them
(:mod:`egg_core.session.strings` drops them, each whole); live output is left alone.

The forms removed, each a question and never a drawing operation:

- device attributes, primary/secondary/tertiary: ``CSI c``, ``CSI 0 c``, ``CSI > c``, ``CSI = c``;
- status and cursor-position reports: ``CSI 5 n``, ``CSI 6 n``, ``CSI ? … n`` (DEC forms: printer,
  keyboard, locator, colour scheme ``?996n``);
- XTVERSION ``CSI > q``; DECRQM ``CSI ? … $ p`` and ``CSI … $ p``; the kitty keyboard query
  ``CSI ? u``; window reports of XTWINOPS (``CSI 11/13/14/15/16/18/19/20/21 … t``);
  (CSI as ``ESC [`` or as the C1 control U+009B);
- OSC colour and clipboard queries (a ``?`` as the value: ``OSC 10 ; ?``, ``OSC 4 ; 1 ; ?``,
  ``OSC 52 ; c ; ?``), and kitty's notification query (``OSC 99 ; … p=? … ;``);
- DCS requests: XTGETTCAP (``DCS + q``) and DECRQSS (``DCS $ q``);
- kitty's graphics query (``APC G … a=q …``, answered with ``APC G i=…;OK``).

The string sequences (OSC, DCS, APC) are judged whole by :func:`is_query_string`; the CSI forms
are a pattern (:data:`CSI_QUERY`) for the scanner that finds both.
"""

from __future__ import annotations

import re

#: a CSI query, as a pattern to embed in a scanner (it matches only outside string sequences)
CSI_QUERY = (
    rb"(?:\x1b\[|\xc2\x9b)(?:0?c|[>=][0-9;]*c|[56]n|\?[0-9;]*n|>[0-9]*q|\??[0-9;]*\$p|\?u"
    rb"|(?:1[13-689]|2[01])(?:;[0-9]*)*t)"
)
_OSC_QUERY = re.compile(rb"[0-9]+;(?:.*;)?\?|99;[^;]*\bp=\?.*", re.S)
_KITTY_GRAPHICS_QUERY = re.compile(rb"G(?:[^;]*,)?a=q(?=[,;]|\Z)", re.S)


def is_query_string(kind: bytes, body: bytes) -> bool:
    """Whether the string sequence of ``kind`` (``]`` OSC, ``P`` DCS, ``_`` APC, ...) with
    ``body`` (what is between its introducer and its terminator) asks the terminal something."""
    if kind == b"]":
        return _OSC_QUERY.fullmatch(body) is not None
    if kind == b"P":
        return body[:2] in (b"+q", b"$q")
    if kind == b"_":
        return _KITTY_GRAPHICS_QUERY.match(body) is not None
    return False
