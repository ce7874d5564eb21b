"""A captured transcript read in bounded memory: one line, one record at a time.

A capture is up to :data:`egg_core.history.MAX_BYTES` (256 MiB) of whatever the agent wrote.
Read whole, split, parsed into a list of records and into a list of turns before the first line
was printed, a 64 MiB one held 311 MiB; ``egg history show`` instead hands the agent plugin a
:class:`TranscriptReader` (hook ``egg_history_turns``), the plugin turns records into turns as
they come, and the CLI prints each one as it is made. What is held at any moment is one line and
what the plugin keeps of its own accord.

The reader reads from the start each time it is asked, so a format where a later record can
replace an earlier one (Gemini's ``$set``) is read twice instead of being held.

Lines are cut exactly where :meth:`bytes.splitlines` cuts the whole file (LF, CRLF, lone CR) and
stripped as :func:`egg_core.history.jsonl_records` strips them, so a plugin sees the same lines
and records as from the whole bytes. The stream is read 1 MiB at a time; a line longer than
:data:`MAX_LINE` (to its LF) is never joined: it goes, as a :class:`LongLine` read forward in
pieces, to the plugin's handler when it gave one (:mod:`egg_core.long_lines` reads the items of
the one big array such a line holds), else it is skipped, and counted in
:attr:`TranscriptReader.skipped` for the CLI to say so.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from egg_core.errors import EggError

#: a longer line (up to its LF) is not held: parsing one costs about three times its size. A
#: plugin reads the few it expects (Gemini's rewrite of its whole message list) a piece at a
#: time; any other is skipped and counted
MAX_LINE = 32 * 1024 * 1024
_STEP = 1 << 20


class UnreadableTranscript(EggError):
    """The capture itself cannot be read (a damaged gzip file, an I/O error): one line."""


class TranscriptReader:
    """A transcript to read again from its start each time :meth:`lines` or :meth:`records` is
    called; made by :meth:`of_capture` (a session's ``chat.jsonl.gz``) or :meth:`of_bytes`.

    A capture's file is opened once, when the reader is made, and every pass reads that file:
    a newer capture renamed over it meanwhile (the session still runs) is not mixed in."""

    def __init__(
        self,
        opener: Callable[[], IO[bytes]],
        name: str,
        limit: int,
        close: Callable[[], None] = lambda: None,
    ) -> None:
        self._open = opener
        self._close = close
        self.name = name
        #: the most that is read (the rest is not there, as for ``read(limit)``)
        self.limit = limit
        #: lines longer than :data:`MAX_LINE` the last pass skipped
        self.skipped = 0

    @classmethod
    def of_capture(cls, path: Path, limit: int) -> TranscriptReader:
        """The gzip capture at ``path``, decompressed as it is read, at most ``limit`` bytes."""
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise UnreadableTranscript(f"{path} cannot be read: {exc}") from exc

        def opener() -> IO[bytes]:
            raw.seek(0)
            # closing it leaves raw open
            return cast("IO[bytes]", gzip.GzipFile(fileobj=raw, mode="rb"))

        return cls(opener, str(path), limit, raw.close)

    @classmethod
    def of_bytes(cls, data: bytes) -> TranscriptReader:
        """A transcript already in memory (a capture's head, for its title; a test's bytes)."""
        return cls(lambda: io.BytesIO(data), "the transcript", len(data) + 1)

    def close(self) -> None:
        self._close()

    def __enter__(self) -> TranscriptReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self) -> bytes:
        """The whole transcript, for a plugin that reads its format only at once
        (``egg_history_render``): as much memory as the transcript."""
        try:
            with self._open() as handle:
                return handle.read(self.limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise UnreadableTranscript(f"{self.name} cannot be read: {exc}") from exc

    def lines(self) -> Iterator[bytes]:
        """Its lines, each stripped of surrounding whitespace (``bytes.strip``), blank ones left
        out; a line longer than :data:`MAX_LINE` is left out and counted."""
        return self._read(parse=False, long=None)

    def records(
        self, *, long: Callable[[LongLine], dict[str, Any] | None] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The JSON objects of its lines; a line that is not one (a half-written last line,
        anything hostile) is skipped, as :func:`egg_core.history.jsonl_records` skips it.

        A line longer than :data:`MAX_LINE` is handed to ``long``, when given, as a
        :class:`LongLine` to read forward in pieces (:mod:`egg_core.long_lines` reads the items
        of the one big array such a line holds); what it returns is yielded in the line's
        place, and what it left unread of the line is skipped when the next record is asked
        for. A line ``long`` returns None for, or every long line without it, is skipped and
        counted in :attr:`skipped`."""
        return self._read(parse=True, long=long)

    def _read(
        self, *, parse: bool, long: Callable[[LongLine], dict[str, Any] | None] | None
    ) -> Iterator[Any]:
        """One pass: lines, or (``parse``) records. One loop for both, so that a record is
        handed on with the text it was parsed from already let go (a generator's locals live
        until it resumes)."""
        self.skipped = 0
        with self._opened() as handle:
            source = _Source(self, handle)
            while piece := source.readline(_STEP):
                if not piece.endswith(b"\n") and len(piece) == _STEP:  # more of the line to come
                    chunks = source.rest_of_line(piece)
                    if sum(map(len, chunks)) > MAX_LINE:
                        del piece
                        line = LongLine(chunks, source)
                        del chunks
                        record = long(line) if long is not None else None
                        if record is None:
                            self.skipped += 1
                        else:
                            yield record
                        del record
                        line.skip()
                        continue
                    piece = b"".join(chunks)
                    del chunks
                parts = piece.splitlines() if b"\r" in piece else [piece]
                del piece
                while parts:
                    text = parts.pop(0).strip()
                    if not text:
                        continue
                    if not parse:
                        yield text
                        continue
                    record = json_record(text)
                    del text
                    if record is not None:
                        yield record
                    del record

    def _opened(self) -> IO[bytes]:
        try:
            return self._open()
        except (OSError, ValueError) as exc:  # ValueError: read after close()
            raise UnreadableTranscript(f"{self.name} cannot be read: {exc}") from exc


class _Source:
    """One pass's reading: the decompressed stream, up to the reader's limit."""

    def __init__(self, reader: TranscriptReader, handle: IO[bytes]) -> None:
        self.reader = reader
        self.handle = handle
        self.budget = reader.limit

    def readline(self, size: int) -> bytes:
        """At most ``size`` bytes, up to and with the next LF; b"" at the end or the limit."""
        if self.budget <= 0:
            return b""
        try:
            piece = self.handle.readline(min(size, self.budget))
        except (OSError, EOFError, zlib.error) as exc:
            raise UnreadableTranscript(f"{self.reader.name} cannot be read: {exc}") from exc
        self.budget -= len(piece)
        return piece

    def rest_of_line(self, first: bytes) -> list[bytes]:
        """``first`` and the pieces after it, to the line's LF or just past :data:`MAX_LINE`
        (a long line's head: read in pieces, never joined)."""
        chunks, size = [first], len(first)
        while size <= MAX_LINE and not chunks[-1].endswith(b"\n"):
            more = self.readline(_STEP)
            if not more:
                break
            chunks.append(more)
            size += len(more)
        return chunks


class LongLine:
    """A line longer than :data:`MAX_LINE`, for its reader to read forward, a piece at a time
    (its LF left out), while the transcript's reader waits; never held whole."""

    def __init__(self, head: list[bytes], source: _Source) -> None:
        self.ended = head[-1].endswith(b"\n")
        if self.ended:
            head[-1] = head[-1][:-1]
        #: what the reader read of it already, in pieces, last first (each let go once read)
        self._head = head[::-1]
        self._source = source

    def read(self, size: int = 0) -> bytes:
        """The next piece, at most about ``size`` bytes (default 1 MiB); b"" at the line's
        end."""
        if self._head:
            return self._head.pop()
        if self.ended:
            return b""
        piece = self._source.readline(size or _STEP)
        if not piece or piece.endswith(b"\n"):
            self.ended = True
            piece = piece[:-1] if piece.endswith(b"\n") else piece
        return piece

    def skip(self) -> None:
        """Read past what is left of it."""
        self._head = []
        while self.read():
            pass


def json_record(line: bytes) -> dict[str, Any] | None:
    """``line`` (stripped, not blank) as a JSON object, or None when it is not one."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
