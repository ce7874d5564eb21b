"""The one sanitizer for text a sandbox may have shaped, on its way to the user's terminal (threat
P): transcripts, notices, session names and directories, paths in guard lines and error
messages, suggestion tables. Every place egg prints such text goes through :func:`visible`, and
every ``--json`` output through :func:`json_text`.

What is shown as it is: everything :meth:`str.isprintable` accepts (letters of every script,
accents, CJK, emoji, combining marks, symbols), the space characters of other widths (no-break,
ideographic: typography, nothing a terminal acts on) and the zero-width joiners U+200C/U+200D
(emoji sequences and Indic and Persian scripts need them). Backslashes stay as they are, so
sanitizing twice changes nothing and code in a transcript stays readable.

What is made visible as a backslash escape: the C0 controls (ESC, BEL, backspace, CR, …), DEL,
the C1 controls U+0080..U+009F (a terminal may act on them as it does on ESC sequences: U+009B is
CSI, U+009D OSC), the format characters (bidi embeddings, overrides and isolates
U+202A..U+202E/U+2066..U+2069, marks U+200E/U+200F/U+061C, zero-width space U+200B, word joiner,
BOM, soft hyphen, tag characters U+E0000..U+E007F that hide text), the line and paragraph
separators, private-use and unassigned code points, and lone surrogates — U+DC80..U+DCFF, the
bytes of a file name that is not UTF-8 as Python decodes them (``surrogateescape``), are shown
as the byte they were (``\\xff``).

Multi-line text (a transcript turn, a diff, a log) keeps its newlines and tabs; a CR before a
newline is dropped (a CRLF line end), any other CR is shown, so nothing can overwrite a line.

Only ``unicodedata`` (a C module) is imported up front: the exec cache's fast path prints through
it too.
"""

from __future__ import annotations

import unicodedata

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the exec cache's fast path milliseconds
    from collections.abc import Iterable, Iterator
    from typing import Any

#: shown as they are although :meth:`str.isprintable` says no: zero-width non-joiner and joiner
_JOINERS = frozenset("\u200c\u200d")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character a terminal would act on, or that hides or reorders text,
    replaced by its escape (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\r``); see the module's
    docstring for the exact set. ``multiline``: newlines and tabs are kept (CRLF becomes LF)."""
    if text.isprintable():
        return text
    if not multiline:
        return _line(text, keep_tab=False)
    return "\n".join(_line(line, keep_tab=True) for line in text.replace("\r\n", "\n").split("\n"))


def visible_bytes(data: bytes, *, multiline: bool = False) -> str:
    """:func:`visible` for bytes a sandbox wrote: UTF-8, any other byte shown as ``\\xNN``."""
    return visible(data.decode("utf-8", "surrogateescape"), multiline=multiline)


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as JSON for ``--json``: ASCII only, so C0, C1, bidi controls, lone surrogates and
    every other code point are ``\\uXXXX`` escapes by construction, whatever the locale."""
    import json

    return json.dumps(data, indent=indent, ensure_ascii=True)


def json_array(items: Iterable[Any], *, indent: int = 2) -> Iterator[str]:
    """:func:`json_text` of a list, in pieces as its items come (``egg history show --json`` of
    a capture of any size): the pieces joined are ``json_text(list(items), indent=indent)``."""
    pad = " " * indent
    first = True
    for item in items:
        text = json_text(item, indent=indent).replace("\n", "\n" + pad)  # no raw LF in a string
        yield ("[\n" if first else ",\n") + pad + text
        first = False
    yield "[]" if first else "\n]"


#: a long line is sanitized this many characters at a time: a run that is all printable is kept
#: as it is, and the character-by-character work never holds more than one run's characters
_RUN = 4096


def _line(text: str, *, keep_tab: bool) -> str:
    if text.isprintable() or (keep_tab and text.replace("\t", " ").isprintable()):
        return text  # (code indented with tabs: checked at C speed, not a character at a time)
    if len(text) > _RUN:  # a transcript's 20 MiB line: not a list of 20 million characters
        return "".join(
            _line(text[start : start + _RUN], keep_tab=keep_tab)
            for start in range(0, len(text), _RUN)
        )
    return "".join(
        char
        if char.isprintable()
        or (keep_tab and char == "\t")
        or char in _JOINERS
        or unicodedata.category(char) == "Zs"
        else _escape(char)
        for char in text
    )


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
