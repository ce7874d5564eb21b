"""Wire frames: round trips, and every malformed input is a ProtocolError (never a crash)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from egg_core.session import protocol as p


def decode_all(data: bytes, allowed=p.CLIENT_TYPES, limit=p.MAX_CLIENT_FRAME) -> list[p.Frame]:
    return p.Decoder(allowed, limit).feed(data)


def test_round_trip_in_any_chunking():
    stream = p.encode(p.AUTH, b"tok") + p.encode(p.ATTACH, p.pack_attach(True, 50, 200))
    stream += p.encode(p.INPUT, b"ls\r") + p.encode(p.DETACH)
    decoder = p.Decoder(p.CLIENT_TYPES, p.MAX_CLIENT_FRAME)
    frames = []
    for i in range(len(stream)):
        frames += decoder.feed(stream[i : i + 1])
    assert [f.type for f in frames] == [p.AUTH, p.ATTACH, p.INPUT, p.DETACH]
    assert p.unpack_attach(frames[1].payload) == (True, 50, 200)
    assert frames[2].payload == b"ls\r"


def test_oversized_frame_is_rejected_before_it_is_buffered():
    header = struct.pack(">IB", p.MAX_CLIENT_FRAME + 1, p.INPUT)
    with pytest.raises(p.ProtocolError, match="out of range"):
        decode_all(header)


def test_zero_length_and_unknown_types_are_rejected():
    with pytest.raises(p.ProtocolError):
        decode_all(struct.pack(">IB", 0, p.INPUT))
    with pytest.raises(p.ProtocolError, match="unknown frame type"):
        decode_all(p.encode(200, b"x"))
    with pytest.raises(p.ProtocolError, match="unknown frame type"):
        decode_all(p.encode(p.OUTPUT, b"x"))  # a server frame from a client


@pytest.mark.parametrize(
    ("unpack", "payload"),
    [
        (p.unpack_attach, b"\x00\x00"),
        (p.unpack_attach, b"\x04\x00\x10\x00\x10"),
        (p.unpack_attach, b"\x00\x00\x10\x00\x10\x00"),
        (p.unpack_attach, b"\x00\x00\x00\x00\x10"),
        (p.unpack_size, b"\x00\x10"),
        (p.unpack_size, b"\xff\xff\xff\xff"),
        (p.unpack_kill, b""),
        (p.unpack_kill, b"\x00"),
        (p.unpack_kill, b"\xff"),
        (p.unpack_exit, b"\x00"),
    ],
)
def test_bad_payloads(unpack, payload):
    with pytest.raises(p.ProtocolError):
        unpack(payload)


def test_exit_payload_round_trip():
    assert p.unpack_exit(p.pack_exit(137, "killed by the memory limit")) == (
        137,
        "killed by the memory limit",
    )
    assert p.unpack_exit(p.pack_exit(0, None)) == (0, None)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_ever_raise_protocol_error(data):
    try:
        frames = decode_all(data)
    except p.ProtocolError:
        return
    for frame in frames:
        assert frame.type in p.CLIENT_TYPES


def test_attach_flags_and_history_round_trip():
    payload = p.pack_attach(False, 30, 100, from_start=True, history=5000)
    request = p.unpack_attach_request(payload)
    assert (request.read_only, request.rows, request.cols) == (False, 30, 100)
    assert request.from_start and request.history == 5000
    assert p.unpack_attach_request(p.pack_attach(True, 1, 1)).history is None
