"""Hostile paths cannot break out of their string in a generated Seatbelt profile.

Paths (and the texts that end up in comments) are drawn with quotes, backslashes, parentheses,
newlines, semicolons, ``#``, non-ASCII and regex metacharacters. For each policy the profile must
parse, use only known SBPL, have exactly the shape the same policy has with plain paths (so no
value added, removed or moved a form), and contain every path intact as one string atom; a prefix
dir's regex must match the dir and its ``.json`` sibling but not a sibling that only shares a
shorter prefix.
"""

from __future__ import annotations

import os
import re

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egg_core.policy import FsEntry
from egg_plugins.platforms.seatbelt import sbpl
from egg_plugins.platforms.seatbelt.profile import ProfileRequest, build_profile
from tests.platforms.sbpl_check import Str, check_profile, filters_of, parse, shape, strings
from tests.platforms.seatbelt_cases import case, policy_for

HOSTILE = "\"\\()\n\r\t;# |.*+?[]{}^$-_~'`éü中😀\u2028\x7f"
MODES = ("rw", "ro", "deny", "deny-write", "rw-prefix")
EXAMPLES = settings(suppress_health_check=[HealthCheck.too_slow])

segment = st.text(
    alphabet=st.sampled_from(HOSTILE) | st.characters(codec="utf-8", exclude_characters="/\x00"),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", ".."))
hostile_path = st.lists(segment, min_size=1, max_size=3).map(
    lambda parts: "/Users/dev/" + "/".join(parts)
)
free_text = st.text(alphabet=st.sampled_from(HOSTILE) | st.characters(exclude_characters="\x00"))


@st.composite
def hostile_entries(draw: st.DrawFn) -> list[FsEntry]:
    paths = draw(st.lists(hostile_path, min_size=1, max_size=5, unique=True))
    return [
        FsEntry(draw(st.sampled_from(MODES)), os.path.normpath(p), draw(free_text)) for p in paths
    ]


def _profile(
    entries: list[FsEntry],
    *,
    agent: str = "shell",
    probe_files: frozenset[str] = frozenset(),
    extra: dict | None = None,
) -> str:
    base = policy_for(case("shell-default"))
    policy = attrs.evolve(base, fs=tuple(entries), protected=(), agent=agent)
    request = ProfileRequest(probe=lambda p: "file" if p in probe_files else "dir", **(extra or {}))
    return build_profile(policy, request)


def _plain(entries: list[FsEntry]) -> list[FsEntry]:
    """The same entries with every path segment renamed to a plain word, one name per segment,
    so nesting and duplicates (and with them the number of rules and filters) are kept."""
    names: dict[str, str] = {}

    def plain(path: str) -> str:
        parts = path.split("/")[3:]
        return "/Users/dev/" + "/".join(names.setdefault(x, f"s{len(names)}") for x in parts)

    return [attrs.evolve(e, path=plain(e.path), source="s") for e in entries]


@EXAMPLES
@given(hostile_entries(), free_text)
def test_hostile_paths_stay_inside_their_string(entries: list[FsEntry], agent: str) -> None:
    forms = check_profile(_profile(entries, agent=agent))
    plain = check_profile(_profile(_plain(entries)))
    assert shape(forms) == shape(plain), "a path or comment changed the profile's structure"
    atoms = strings(forms)
    for entry in entries:
        if entry.mode == "rw-prefix":
            continue
        assert entry.path in atoms, f"{entry.path!r} is not one intact string atom"


@EXAMPLES
@given(hostile_path, st.sampled_from("x/._-é"))
def test_prefix_regex_matches_the_dir_and_its_siblings_only(path: str, other: str) -> None:
    path = os.path.normpath(path)
    forms = check_profile(_profile([FsEntry("rw-prefix", path, "agent:x")]))
    regexes = [
        flt[1].value
        for form in forms
        if form[:3] == ["allow", "file-read*", "file-write*"]
        for flt in filters_of(form)
        if flt[0] == "regex"
    ]
    assert len(regexes) == 1
    pattern = re.compile(regexes[0])
    assert pattern.match(path)
    assert pattern.match(path + ".json")
    assert pattern.match(path + "/settings.json")
    if other != path[-1]:
        assert not pattern.match(path[:-1] + other), "a sibling sharing a shorter prefix matched"
    for i, char in enumerate(path):
        if char in sbpl.REGEX_SPECIAL:
            swapped = path[:i] + ("x" if char != "x" else "y") + path[i + 1 :]
            assert not pattern.match(swapped), f"{char!r} was not taken literally"


@EXAMPLES
@given(hostile_path, hostile_path)
def test_session_paths_stay_inside_their_string(sock: str, shared: str) -> None:
    text = _profile([], extra={"tool_socket": sock, "shared_dir": shared})
    atoms = strings(check_profile(text))
    assert sock in atoms and shared in atoms


@EXAMPLES
@given(st.text(alphabet=st.sampled_from(HOSTILE) | st.characters(exclude_characters="\x00")))
def test_quote_round_trips_through_the_reader(text: str) -> None:
    assert parse(f"(x {sbpl.quote(text)})") == [["x", Str(text)]]


@EXAMPLES
@given(free_text)
def test_a_comment_is_never_more_than_a_comment(text: str) -> None:
    assert parse(sbpl.comment(text) + "\n") == []


@EXAMPLES
@given(st.text(alphabet=st.sampled_from(HOSTILE) | st.characters(exclude_characters="\x00")))
def test_escaped_regex_matches_exactly_its_text(text: str) -> None:
    assert re.fullmatch(sbpl.regex_escape(text), text, flags=re.DOTALL)
