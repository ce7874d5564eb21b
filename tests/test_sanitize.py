"""Threat P, the sanitizer itself (egg_core.sanitize): what it shows as it is, what it escapes, and
that no string gets through with a character a terminal acts on. The commands that print
through it, on a real PTY with text from real sandboxes: tests/linux/test_terminal_output.py."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from egg_core.sanitize import json_array, json_text, visible, visible_bytes
from egg_core.session.client import notice_bytes, status_line

#: any code point, lone surrogates included (what surrogateescape makes of a non-UTF-8 name)
ANY_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


def shown_raw(char: str) -> bool:
    """What may reach a terminal as it is (the module's rule, restated)."""
    return char.isprintable() or char in "\u200c\u200d" or unicodedata.category(char) == "Zs"


@given(ANY_TEXT)
def test_nothing_a_terminal_acts_on_gets_through(text: str) -> None:
    out = visible(text)
    assert all(shown_raw(c) for c in out), repr(out)


@given(ANY_TEXT)
def test_multi_line_text_keeps_only_newlines_and_tabs_besides(text: str) -> None:
    out = visible(text, multiline=True)
    assert all(shown_raw(c) or c in "\n\t" for c in out), repr(out)
    assert out.count("\n") == text.replace("\r\n", "\n").count("\n")


@given(ANY_TEXT)
def test_sanitizing_twice_changes_nothing(text: str) -> None:
    once = visible(text)
    assert visible(once) == once
    lines = visible(text, multiline=True)
    assert visible(lines, multiline=True) == lines


@given(st.text(alphabet=st.characters(categories=("L", "M", "N", "P", "S"))))
def test_readable_text_is_shown_as_it_is(text: str) -> None:
    assert visible(text) == text


def test_the_escapes_say_what_was_there() -> None:
    cases = {
        "\x1b]52;c;cHduZWQ=\x07": "\\x1b]52;c;cHduZWQ=\\x07",
        "\x1b[2J": "\\x1b[2J",
        "\u009b2J\u009d0;t\u009c": "\\x9b2J\\x9d0;t\\x9c",
        "ok\rFORGED\b": "ok\\rFORGED\\x08",
        "a\nb\tc\x7f": "a\\nb\\tc\\x7f",
        "\u202eexe.txt\u2066\u200e\u200b\ufeff\u00ad": "\\u202eexe.txt\\u2066\\u200e\\u200b\\ufeff\\xad",
        "tag\U000e0041": "tag\\U000e0041",
        "line\u2028sep": "line\\u2028sep",
        "name\udcff\udc9b": "name\\xff\\x9b",
        "héllo 中文 🧑‍💻 «\u00a0ok\u00a0» \u3000": "héllo 中文 🧑‍💻 «\u00a0ok\u00a0» \u3000",
        "C:\\x1b is text": "C:\\x1b is text",
    }
    for text, shown in cases.items():
        assert visible(text) == shown, text


def test_a_transcript_keeps_its_lines_and_tabs_but_shows_every_other_control() -> None:
    text = "def f():\r\n\treturn 1\x1b[2J\nover\rwritten\n"
    assert visible(text, multiline=True) == "def f():\n\treturn 1\\x1b[2J\nover\\rwritten\n"


def test_bytes_that_are_not_utf8_are_shown_as_the_bytes_they_were() -> None:
    assert (
        visible_bytes(b"\xff\x9b \xc2\x9b \xe2\x80\xae ok \xc3\xa9")
        == "\\xff\\x9b \\x9b \\u202e ok é"
    )


@given(
    st.recursive(
        ANY_TEXT | st.integers() | st.booleans() | st.none(),
        lambda inner: st.lists(inner) | st.dictionaries(ANY_TEXT, inner),
        max_leaves=20,
    )
)
def test_json_output_is_ascii_and_says_the_same(data: object) -> None:
    text = json_text(data)
    assert text.isascii() and all(c.isprintable() or c == "\n" for c in text)
    assert json.loads(text) == data


def test_a_notice_and_the_leaving_line_show_what_the_sandbox_said_visibly() -> None:
    notice = notice_bytes(
        "open in your browser: https://x/\x1b]52;c;AA\x07\u009b".encode() + b"\xff"
    )
    assert notice == b"\r\n[egg] open in your browser: https://x/\\x1b]52;c;AA\\x07\\x9b\\xff\r\n"
    line = status_line("abcd1234", 125, "the sandbox failed: \x1b]0;t\x07\rok", detached=False)
    assert line == "[exited 125: the sandbox failed: \\x1b]0;t\\x07\\rok]"


@given(
    st.lists(
        st.recursive(
            ANY_TEXT | st.integers() | st.booleans() | st.none(),
            lambda inner: st.lists(inner) | st.dictionaries(ANY_TEXT, inner),
            max_leaves=10,
        ),
        max_size=5,
    )
)
def test_json_in_pieces_is_the_json_of_the_whole_list(items: list[object]) -> None:
    """``egg history show --json`` prints each turn as it comes: the same bytes as at once."""
    assert "".join(json_array(iter(items))) == json_text(items)


@given(ANY_TEXT.filter(lambda t: "\n" not in t), st.integers(1, 3000))
def test_a_long_line_is_sanitized_as_its_characters_are(text: str, times: int) -> None:
    """A long line is sanitized a run at a time: no character is lost, doubled or seen out of
    place at the seams (the same escapes as one character at a time)."""
    one = visible(text, multiline=True)
    assert visible(text * times, multiline=True) == one * times
