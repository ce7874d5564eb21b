"""A transcript line too long to hold, read as the items of the one big array it holds.

An agent that rewrites its whole conversation as one record (Gemini's ``{"$set":{"messages":
[...]}}`` on every resume) writes a line as long as the conversation: at the capture cap, longer
than :data:`egg_core.transcripts.MAX_LINE`. :class:`ArrayLine` reads such a line a piece at a
time: the items of the array one by one (each parsed as :func:`json.loads` parses it, then let
go), then the rest of the line. Its verdict is the one :func:`json.loads` of the whole line would
give: :meth:`ArrayLine.record` is the line's object with the array's place holding an empty
list, or None when the whole line is not a JSON object (a bad item, a cut line, a CR: the whole
line was never a record, and what its items said is void; what a CR would have begun, read from
the whole file, is not read either).

Only a line that starts exactly as the agent writes it (``{"key":{"key":[``, no space) is read
this way; any other long line is left to the reader to skip.
"""

from __future__ import annotations

import codecs
import json
import secrets
from collections.abc import Iterator
from typing import Any

from egg_core.transcripts import MAX_LINE, LongLine

#: JSON's own but CR: the whole file's reading ends a line at a CR, so a CR in a long line is
#: where a line that was never this one ended (no JSON value holds a raw CR either)
_WHITESPACE = " \t\n"
_DECODER = json.JSONDecoder()
_NUMBER_GOES_ON = frozenset("0123456789.eE+-")


class _Invalid(Exception):
    """The line is not a JSON object."""


class ArrayLine:
    """The long line ``{"path[0]":{"path[1]":[ item, ... ] ...rest``, read once, forward."""

    def __init__(self, line: LongLine, path: tuple[str, ...]) -> None:
        self._line = line
        self._path = path
        self._decode = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        self._text = ""
        self._pos = 0
        self._ended = False
        self._valid: bool | None = None
        self._rest = ""
        self._record: dict[str, Any] | None = None
        #: the record's array is the one :meth:`items` read (see :meth:`record`)
        self.streamed = False

    @staticmethod
    def prefix(path: tuple[str, ...]) -> str:
        """How the agent's JSON writer starts a line whose ``path`` is an array."""
        return "".join("{" + json.dumps(key) + ":" for key in path) + "["

    @classmethod
    def of(cls, line: LongLine, path: tuple[str, ...]) -> ArrayLine | None:
        """The line read as an array line, or None when it does not start as one."""
        reading = cls(line, path)
        want = cls.prefix(path)
        try:
            while len(reading._text) < len(want) and reading._more():
                pass
        except _Invalid:
            return None
        if not reading._text.startswith(want):
            return None
        reading._pos = len(want)
        return reading

    def items(self) -> Iterator[Any]:
        """The array's items, each parsed as it is reached; the line read to its end after the
        last, for :meth:`record`. Stops early (and :meth:`record` is None) at the first thing
        that is not JSON."""
        try:
            self._skip_space()
            if self._peek() == "]":
                self._pos += 1
            else:
                while True:
                    yield self._value()
                    self._skip_space()
                    char = self._peek()
                    self._pos += 1
                    if char == "]":
                        break
                    if char != ",":
                        raise _Invalid
                    self._skip_space()
            self._read_rest()
            self._valid = True
        except _Invalid:
            self._valid = False

    def record(self) -> dict[str, Any] | None:
        """The line's object, its array replaced by ``[]`` (where :meth:`items` gave its items),
        once :meth:`items` has been read to its end; None when the line is not a JSON object.
        :attr:`streamed` says whether the array is still there (a later duplicate key can
        replace it, as :func:`json.loads` lets one)."""
        if self._record is not None or not self._valid:
            return self._record
        nonce = secrets.token_hex(16)  # where the array was, unguessable by what wrote the line
        skeleton = self.prefix(self._path)[:-1] + json.dumps(nonce) + self._rest
        try:
            record = json.loads(skeleton)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        holder: Any = record
        for key in self._path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and holder.get(self._path[-1]) == nonce:
            holder[self._path[-1]] = []
            self.streamed = True
        self._record = record
        return record

    # -- reading ---------------------------------------------------------------------------

    def _more(self) -> bool:
        """Decode the next piece of the line onto the text; False at its end."""
        if self._ended:
            return False
        piece = self._line.read()
        try:
            text = self._decode.decode(piece, final=not piece)
        except UnicodeDecodeError as exc:
            raise _Invalid from exc
        self._text = self._text[self._pos :] + text
        self._pos = 0
        self._ended = not piece
        return True

    def _peek(self) -> str:
        while self._pos >= len(self._text):
            if not self._more():
                raise _Invalid
        return self._text[self._pos]

    def _skip_space(self) -> None:
        while self._peek() in _WHITESPACE:
            self._pos += 1

    def _value(self) -> Any:
        """The JSON value at the position: parsed once enough of the line is read that it is
        known to end there (a number or a literal could go on in the next piece)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self._text, self._pos)
            except ValueError:
                value, end = None, -1
            if end != -1 and (self._ended or self._complete(value, end)):
                self._pos = end
                return value
            available = len(self._text) - self._pos
            if self._ended or available > MAX_LINE:
                raise _Invalid  # not JSON, or one item too large to hold
            while self._more() and len(self._text) - self._pos < 2 * available:
                pass  # read as much again: a long item is parsed O(log size) times

    def _complete(self, value: Any, end: int) -> bool:
        """Whether the value parsed is all there is of it: something follows, and not what
        could carry a number on (``1.5`` of ``1.5e3`` at a piece's edge)."""
        if end >= len(self._text):
            return False
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return not number or self._text[end] not in _NUMBER_GOES_ON

    def _read_rest(self) -> None:
        """What follows the array, to the line's end (``}}``, in the agent's own lines)."""
        rest = self._text[self._pos :]
        self._text, self._pos = "", 0
        while self._more():
            rest += self._text
            self._text = ""
            if len(rest) > MAX_LINE:
                raise _Invalid
        self._rest = rest.strip(" \t\n\x0b\x0c")  # as bytes.strip strips the line
