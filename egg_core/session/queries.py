"""Terminal queries: sequences a program writes to ask the terminal something, which the terminal
answers by *typing* the answer into the program's input.

Live, that is how programs learn what terminal they run in (Gemini CLI and vim probe colours and
device attributes at start). Replayed in a reattach repaint, the same queries would be answered
again by the attaching terminal, and the answers would reach the program as keystrokes the user
never typed: a dialog option selected, ``>|tmux 3.3a1;2c`` in an input box. So a repaint carries
none of them (:func:`strip`); live output is left alone.

The forms removed, each a question and never a drawing operation:

- device attributes, primary/secondary/tertiary: ``CSI c``, ``CSI 0 c``, ``CSI > c``, ``CSI = c``;
- status and cursor-position reports: ``CSI 5 n``, ``CSI 6 n``, ``CSI ? … n`` (DEC forms: printer,
  keyboard, locator, colour scheme ``?996n``);
- XTVERSION ``CSI > q``; DECRQM ``CSI ? … $ p`` and ``CSI … $ p``; the kitty keyboard query
  ``CSI ? u``; window reports of XTWINOPS (``CSI 11/13/14/15/16/18/19/20/21 … t``);
- OSC colour and clipboard queries (a ``?`` as the value: ``OSC 10 ; ?``, ``OSC 4 ; 1 ; ?``,
  ``OSC 52 ; c ; ?``);
- DCS requests: XTGETTCAP (``DCS + q``) and DECRQSS (``DCS $ q``).
"""

from __future__ import annotations

import re

_QUERY = re.compile(
    rb"\x1b\[(?:0?c|[>=][0-9;]*c|[56]n|\?[0-9;]*n|>[0-9]*q|\??[0-9;]*\$p|\?u"
    rb"|(?:1[13-689]|2[01])(?:;[0-9]*)*t)"
    rb"|\x1b\][0-9]+;(?:[^\x07\x1b]*;)?\?(?:\x07|\x1b\\)"
    rb"|\x1bP[+$]q[^\x1b\x07]*(?:\x1b\\|\x07)"
)


def strip(data: bytes) -> bytes:
    """``data`` without any terminal query (see the module docstring)."""
    return _QUERY.sub(b"", data)
