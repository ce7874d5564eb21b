"""The ring itself: bounded, byte-exact, cheap to feed, and where its cuts fall."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from egg_core.session.ring import DEFAULT_CAPACITY, ReplayRing


def test_default_capacity_is_at_least_8_mib():
    assert ReplayRing().capacity == DEFAULT_CAPACITY >= 8 * 1024 * 1024


def test_capacity_too_small_is_refused():
    with pytest.raises(ValueError, match="at least 64 bytes"):
        ReplayRing(10)


@given(st.lists(st.binary(max_size=700), max_size=40), st.integers(64, 1000))
def test_holds_exactly_the_last_capacity_bytes(chunks, capacity):
    ring = ReplayRing(capacity)
    for chunk in chunks:
        ring.feed(chunk)
    data = b"".join(chunks)
    assert ring.total == len(data)
    assert ring.start == max(0, len(data) - capacity)
    assert ring.read(ring.start) == data[-capacity:]
    if len(data) > 3:
        assert ring.read(len(data) - 3, len(data) - 1) == data[-3:-1]


def test_a_chunk_larger_than_the_ring_keeps_its_tail():
    ring = ReplayRing(100)
    data = bytes(range(256)) * 3
    ring.feed(b"head")
    ring.feed(data)
    assert ring.read(ring.start) == data[-100:]


def test_reading_outside_the_ring_is_refused():
    ring = ReplayRing(64)
    ring.feed(b"x" * 100)
    with pytest.raises(ValueError, match="not in the ring"):
        ring.read(0)
    with pytest.raises(ValueError, match="not in the ring"):
        ring.read(90, 101)


def test_memory_does_not_grow_past_the_buffer():
    ring = ReplayRing(4096)
    for i in range(20000):
        ring.feed(b"\x1b[?25l\x1b[%dmline %d\r\n" % (31 + i % 7, i))
    assert len(ring._buf) == 4096
    assert len(ring._checkpoints) <= 66
    assert len(ring._carry) == 0


def test_a_small_session_does_not_allocate_the_whole_capacity():
    ring = ReplayRing()
    ring.feed(b"hello")
    assert len(ring._buf) == 5


def test_cut_prefers_a_plain_tail_after_the_last_repaint():
    ring = ReplayRing(1 << 20)
    ring.feed(b"\x1b[H\x1b[2J" + b"".join(b"line %d\r\n" % i for i in range(2000)))
    cut = ring.cut(10, history=0)
    assert (cut.kind, cut.exact) == ("plain", True)
    assert ring.read(cut.start).count(b"\n") == 20


def test_cut_keeps_the_repaint_when_the_tail_is_not_plain():
    ring = ReplayRing(1 << 20)
    ring.feed(b"\x1b[H\x1b[2J" + b"".join(b"line %d\r\n" % i for i in range(2000)) + b"\x1b[5Aup")
    assert ring.cut(10).kind == "repaint"


def test_cut_never_claims_a_plain_tail_inside_a_scroll_region():
    ring = ReplayRing(4096)
    ring.feed(b"\x1b[2;10r" + b"".join(b"line %d\r\n" % i for i in range(2000)))
    assert ring.cut(10).kind == "fallback"


def test_cut_in_the_alternate_screen_is_never_a_plain_tail():
    ring = ReplayRing(1 << 16)
    ring.feed(b"\x1b[?1049h\x1b[H" + b"".join(b"line %d\r\n" % i for i in range(2000)))
    assert ring.cut(10).kind == "repaint"


def test_fallback_starts_at_a_line_or_a_sequence_never_mid_character():
    ring = ReplayRing(1024)
    ring.feed(b"\x1b[?1049h" + b"\x1b[5;5H\xe4\xb8\xad" * 1000)
    cut = ring.cut(10)
    assert cut.kind == "fallback" and ring.read(cut.start).startswith(b"\x1b[")
    assert cut.modes.alt_screen == 1049


@pytest.mark.parametrize(
    ("sequence", "plain"),
    [
        (b"\x1b[1;38;5;9m", True),
        (b"\x1b[K", True),
        (b"\x1b[3D\x1b[5G", True),
        (b"\x1b[?2004h\x1b[?25l\x1b[?2026h", True),
        (b"\x1b]0;title\x07\x1b]8;;http://x\x1b\\", True),
        (b"\x1b[A", False),
        (b"\x1b[5;5H", False),
        (b"\x1b[J", False),
        (b"\x1b7", False),
        (b"\x1b[?1049h", False),
        (b"\x1b[?25;1049h", False),
        (b"\x1b[?6h", False),
        (b"\x1b[2;5r", False),
        (b"\xc2\x9b2J", False),
    ],
)
def test_what_keeps_a_tail_plain(sequence, plain):
    ring = ReplayRing(1 << 16)
    ring.feed(b"".join(b"line %d\r\n" % i for i in range(100)) + sequence + b"x\r\n" * 15)
    assert (ring.cut(10).kind == "plain") is plain
