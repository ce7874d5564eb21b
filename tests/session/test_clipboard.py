"""OSC 52 (clipboard writes) never reach the user's terminal from a sandboxed program."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from egg_core.session.clipboard import MAX_SEQUENCE, ClipboardFilter

WRITE = b"\x1b]52;c;ZWNobyBwd25lZA==\x07"
WRITE_ST = b"\x1b]52;c;ZWNobyBwd25lZA==\x1b\\"
QUERY = b"\x1b]52;c;?\x07"


def run(chunks: list[bytes]) -> bytes:
    f = ClipboardFilter()
    return b"".join(f.feed(c) for c in chunks)


def test_plain_output_is_untouched_and_not_copied():
    data = b"hello \x1b[1mworld\x1b[0m\r\n\x1b]0;title\x07"
    f = ClipboardFilter()
    assert f.feed(data) == data
    assert f.dropped == 0


def test_a_clipboard_write_is_dropped_with_either_terminator():
    for seq in (WRITE, WRITE_ST, QUERY):
        assert run([b"a" + seq + b"b"]) == b"ab"


def test_a_sequence_split_at_every_point_is_still_dropped():
    data = b"before" + WRITE_ST + b"after" + WRITE + b"end"
    for cut in range(len(data) + 1):
        assert run([data[:cut], data[cut:]]) == b"beforeafterend", cut
    assert run([bytes([b]) for b in data]) == b"beforeafterend"


def test_tmux_passthrough_does_not_smuggle_one_through_nor_stay_open():
    """The doubling ESC goes with the sequence: left alone it would escape the passthrough's
    terminator, and tmux would swallow every byte after it."""
    for end in (b"\x07", b"\x1b\x1b\\"):
        wrapped = b"\x1bPtmux;\x1b\x1b]52;c;ZXZpbA==" + end + b"\x1b\\after"
        for cut in range(len(wrapped) + 1):
            out = run([wrapped[:cut], wrapped[cut:]])
            assert b"]52;" not in out
            assert out.startswith(b"\x1bPtmux;") and out.endswith(b"\x1b\\after"), out
            assert b"\x1bPtmux;\x1b\x1b\\" not in out, out  # an escaped terminator


def test_an_unterminated_sequence_ends_at_the_next_escape_and_output_resumes():
    assert run([b"x\x1b]52;c;AAAA", b"\x1b[31mred"]) == b"x\x1b[31mred"


def test_an_endless_sequence_cannot_swallow_the_session():
    f = ClipboardFilter()
    f.feed(b"\x1b]52;c;")
    for _ in range(MAX_SEQUENCE // 65536 + 2):
        f.feed(b"A" * 65536)
    assert f.feed(b"visible") == b"visible"


@given(st.lists(st.binary(max_size=40), max_size=20), st.data())
def test_no_split_ever_lets_a_write_through(parts, data):
    stream = WRITE.join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert b"\x1b]52;" not in run(chunks)
