"""The session wire protocol: length-prefixed binary frames over the session's Unix socket.

Frame: ``u32 length`` (big-endian, of what follows) ``u8 type`` ``payload``. The first frame a
client sends must be AUTH with the session token; until then the daemon sends nothing, and any
other frame, a wrong token, a malformed or oversized frame closes that connection — and nothing
else. Frames a client may send only after ATTACH (INPUT, RESIZE, DETACH) are out of order before
it.

Client -> daemon: AUTH(token), ATTACH(flags, rows, cols[, history]), INPUT(bytes),
RESIZE(rows, cols), DETACH, STATUS, KILL(signal).
Daemon -> client: OUTPUT(bytes), EXIT(code, reason), STATUS_REPLY(json), NOTICE(text),
ERROR(text).
"""

from __future__ import annotations

import json
import struct
from typing import Any

import attrs

# client -> daemon
AUTH = 1
ATTACH = 2
INPUT = 3
RESIZE = 4
DETACH = 5
STATUS = 6
KILL = 7
# daemon -> client
OUTPUT = 64
EXIT = 65
STATUS_REPLY = 66
NOTICE = 67
ERROR = 68

#: STATUS payload asking for the rendered screen too
STATUS_WITH_SCREEN = b"screen"

CLIENT_TYPES = frozenset({AUTH, ATTACH, INPUT, RESIZE, DETACH, STATUS, KILL})
SERVER_TYPES = frozenset({OUTPUT, EXIT, STATUS_REPLY, NOTICE, ERROR})
HEADER = struct.Struct(">IB")
MAX_CLIENT_FRAME = 64 * 1024  # input and control frames are small
MAX_SERVER_FRAME = 1 << 20
TOKEN_BYTES = 32
MAX_DIMENSION = 10_000


class ProtocolError(Exception):
    """A malformed, oversized or out-of-order frame: the connection is closed."""


@attrs.frozen
class Frame:
    type: int
    payload: bytes = b""


def encode(frame_type: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(len(payload) + 1, frame_type) + payload


def encode_header(frame_type: int, payload_length: int) -> bytes:
    """Just the header, so that a large payload can be written without copying it."""
    return HEADER.pack(payload_length + 1, frame_type)


class Decoder:
    """Incremental frame decoder: feed bytes, take complete frames; rejects bad frames."""

    def __init__(self, allowed: frozenset[int], max_frame: int) -> None:
        self.allowed = allowed
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        # Parse straight from ``data`` when nothing is pending (the usual case for large reads):
        # each payload is then copied once, not twice.
        buffer: bytes | bytearray | memoryview
        if self._buffer:
            self._buffer += data
            buffer = self._buffer
        else:
            buffer = data
        frames = []
        offset = 0
        while len(buffer) - offset >= HEADER.size:
            length, frame_type = HEADER.unpack_from(buffer, offset)
            if length < 1 or length > self.max_frame:
                raise ProtocolError(f"frame length {length} out of range")
            if frame_type not in self.allowed:
                raise ProtocolError(f"unknown frame type {frame_type}")
            end = offset + 4 + length
            if len(buffer) < end:
                break
            frames.append(Frame(frame_type, bytes(buffer[offset + HEADER.size : end])))
            offset = end
        if buffer is self._buffer:
            if offset:
                del self._buffer[:offset]  # once per call, not once per frame
        elif offset < len(buffer):
            self._buffer += buffer[offset:]
        return frames


# --- payload helpers -------------------------------------------------------------------------

_SIZE = struct.Struct(">HH")
_ATTACH = struct.Struct(">BHH")
_EXIT = struct.Struct(">i")
_KILL = struct.Struct(">B")


#: ATTACH flags
ATTACH_READ_ONLY = 1
#: the client of ``egg run``, attached as the program starts: it gets the output from the first
#: byte, as a terminal that had been there all along (no reset, no repaint), if the ring has it
ATTACH_FROM_START = 2
_HISTORY = struct.Struct(">I")


@attrs.frozen
class AttachRequest:
    read_only: bool
    rows: int
    cols: int
    from_start: bool = False
    #: lines of scrollback the repaint should give (None: the daemon's default)
    history: int | None = None


def pack_attach(
    read_only: bool, rows: int, cols: int, *, from_start: bool = False, history: int | None = None
) -> bytes:
    flags = (ATTACH_READ_ONLY if read_only else 0) | (ATTACH_FROM_START if from_start else 0)
    payload = _ATTACH.pack(flags, rows, cols)
    return payload if history is None else payload + _HISTORY.pack(history)


def unpack_attach(payload: bytes) -> tuple[bool, int, int]:
    request = unpack_attach_request(payload)
    return request.read_only, request.rows, request.cols


def unpack_attach_request(payload: bytes) -> AttachRequest:
    if len(payload) not in (_ATTACH.size, _ATTACH.size + _HISTORY.size):
        raise ProtocolError("bad ATTACH payload")
    flags, rows, cols = _ATTACH.unpack(payload[: _ATTACH.size])
    if flags & ~(ATTACH_READ_ONLY | ATTACH_FROM_START):
        raise ProtocolError("bad ATTACH flags")
    history = _HISTORY.unpack(payload[_ATTACH.size :])[0] if len(payload) > _ATTACH.size else None
    return AttachRequest(
        read_only=bool(flags & ATTACH_READ_ONLY),
        rows=_dimension(rows),
        cols=_dimension(cols),
        from_start=bool(flags & ATTACH_FROM_START),
        history=history,
    )


def pack_size(rows: int, cols: int) -> bytes:
    return _SIZE.pack(rows, cols)


def unpack_size(payload: bytes) -> tuple[int, int]:
    if len(payload) != _SIZE.size:
        raise ProtocolError("bad RESIZE payload")
    rows, cols = _SIZE.unpack(payload)
    return _dimension(rows), _dimension(cols)


def _dimension(value: int) -> int:
    if not 1 <= value <= MAX_DIMENSION:
        raise ProtocolError(f"terminal dimension {value} out of range")
    return value


def pack_exit(code: int, reason: str | None) -> bytes:
    return _EXIT.pack(code) + (reason or "").encode()


def unpack_exit(payload: bytes) -> tuple[int, str | None]:
    if len(payload) < _EXIT.size:
        raise ProtocolError("bad EXIT payload")
    (code,) = _EXIT.unpack_from(payload)
    reason = payload[_EXIT.size :].decode(errors="replace") or None
    return code, reason


def pack_kill(signal_number: int) -> bytes:
    return _KILL.pack(signal_number)


def unpack_kill(payload: bytes) -> int:
    if len(payload) != _KILL.size:
        raise ProtocolError("bad KILL payload")
    (number,) = _KILL.unpack(payload)
    if not 1 <= number <= 64:
        raise ProtocolError("bad signal number")
    return int(number)


def pack_json(data: Any) -> bytes:
    return json.dumps(data).encode()
