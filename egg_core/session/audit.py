"""The session audit log: every input keystroke, output chunk and resize, with timestamps.

``audit.log.gz`` is a gzip stream of records ``f64 time, u8 kind, u32 length, data``. It is
sync-flushed once a second so that it can be read (``egg replay``) while the session still runs;
records are buffered in between, so the PTY reader only appends to a list.
"""

from __future__ import annotations

import gzip
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

RECORD = struct.Struct(">dBI")
INPUT = 1
OUTPUT = 2
RESIZE = 3
KINDS = {INPUT: "input", OUTPUT: "output", RESIZE: "resize"}


class AuditWriter:
    def __init__(self, path: Path) -> None:
        self._file = gzip.open(path, "ab", compresslevel=6)  # noqa: SIM115
        self._pending: list[bytes] = []

    def record(self, kind: int, data: bytes) -> None:
        self._pending.append(RECORD.pack(time.time(), kind, len(data)))
        self._pending.append(data)

    def flush(self) -> None:
        if self._pending:
            self._file.write(b"".join(self._pending))
            self._pending.clear()
        self._file.flush(zlib.Z_SYNC_FLUSH)

    def close(self) -> None:
        self.flush()
        self._file.close()


def read_records(path: Path) -> Iterator[tuple[float, int, bytes]]:
    """Every complete record, also from a log still being written (a partial tail is ignored)."""
    with open(path, "rb") as raw:
        data = raw.read()
    try:
        plain = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    except zlib.error:
        plain = b""
    offset = 0
    while offset + RECORD.size <= len(plain):
        stamp, kind, length = RECORD.unpack_from(plain, offset)
        start = offset + RECORD.size
        if start + length > len(plain):
            break
        yield stamp, kind, plain[start : start + length]
        offset = start + length
