"""``egg policy suggest --apply``: the suggestion written into egg.yaml as inserted text, every
byte the user wrote kept (comments, order, quoting, indentation), checked by egg's own loader
before an atomic write; applying twice changes nothing the second time. ``--fold``: subdomains of
one registrable domain (Public Suffix List) become one wildcard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egg_core.config.files import discover_config
from egg_core.config.parsing import load_config_string
from egg_core.errors import ConfigError, EggError, UsageError
from egg_core.suggest.apply import (
    Applied,
    add_entries,
    apply_entries,
    edit_text,
    planned_edit,
)
from egg_core.suggest.network import fold, registrable_domain

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]
ADD = ["new.example.com", "*.cdn.example.org", "git.example.com:8443"]

COMMENTED = """\
# my project: watch first, then enforce
base: none   # nothing from my home config

network:
  mode: observe   # first, watch
  domains:
    - api.example.com  # the model API
  # more hosts go above this line
fs:
  - rw:.   # the project
"""

#: (egg.yaml as written, what network.domains holds after adding ADD)
SHAPES = [
    (COMMENTED, ("api.example.com", *ADD)),
    ("network:\n- a.com\n# end of the list\nenv: [HOME]\n", ("a.com", *ADD)),
    ("network: {mode: observe, domains: [a.com]}\n", ("a.com", *ADD)),
    ("network:\n  mode: observe\n", tuple(ADD)),
    ("network:\n    domains:\n        -   a.com\n    mode: observe\n", ("a.com", *ADD)),
    ("network:\n  mode: observe\n  domains:   # none yet\n", tuple(ADD)),
    ("network: {mode: observe}\n", tuple(ADD)),
    ("network: {}\n", tuple(ADD)),
    ("network: []\n", tuple(ADD)),
    ("network: none\n", tuple(ADD)),
    ("network:\n", tuple(ADD)),
    ("network: ~\nfs: []\n", tuple(ADD)),
    ("network:\n  domains: [\n    a.com,\n  ]\n", ("a.com", *ADD)),
    ("network:\n- a.com", ("a.com", *ADD)),
    ("network:\r\n  - a.com\r\n", ("a.com", *ADD)),
    ("# only a comment\n", tuple(ADD)),
    ("", tuple(ADD)),
    ("env: [HOME]  # keep\n", tuple(ADD)),
]


def lines_kept(before: str, after: str) -> bool:
    """The edit only inserted: every character of ``before`` is in ``after``, in order (a
    ``none`` or ``~`` standing for "no list" is the one thing replaced)."""
    for empty in ("network: none", "network: ~"):
        before = before.replace(empty, "network: ")
    rest = iter(after)
    return all(any(char == got for got in rest) for char in before)


@pytest.mark.parametrize(("text", "domains"), SHAPES)
def test_every_shape_of_network_gets_the_entries_and_keeps_every_line(text, domains):
    after = edit_text(text, ADD, "egg.yaml")
    config = load_config_string(after, "egg.yaml")
    assert config.network.domains == domains
    before = load_config_string(text, "egg.yaml")
    assert config.network.mode == before.network.mode  # mode is the user's step
    assert lines_kept(text, after), after
    assert ("\r\n" in after) == ("\r\n" in text)


def test_the_commented_file_reads_as_the_user_wrote_it_plus_three_lines():
    after = edit_text(COMMENTED, ADD, "egg.yaml")
    assert after == COMMENTED.replace(
        "    - api.example.com  # the model API\n",
        "    - api.example.com  # the model API\n"
        "    - new.example.com\n"
        "    - '*.cdn.example.org'\n"
        "    - git.example.com:8443\n",
    )


def test_fs_rules_are_added_to_the_fs_list_in_its_style():
    after = edit_text(COMMENTED, ["rw:~/.cache/tool"], "egg.yaml", "fs")
    assert after.endswith("  - rw:.   # the project\n  - 'rw:~/.cache/tool'\n")
    assert [str(r) for r in load_config_string(after).fs] == ["rw:.", "rw:~/.cache/tool"]
    fresh = edit_text("network: [a.com]\n", ["rw:~/x"], "egg.yaml", "fs")
    assert fresh == "network: [a.com]\nfs:\n  - 'rw:~/x'\n"


def project(tmp_path: Path, text: str, name: str = "egg.yaml") -> tuple[Path, dict[str, str]]:
    env = {**os.environ, "HOME": str(tmp_path), "EGG_HOME": str(tmp_path / ".egg")}
    path = tmp_path / name
    path.write_text(text)
    return path, env


def test_apply_writes_atomically_keeps_the_mode_bits_and_a_symlink(tmp_path: Path):
    real, env = project(tmp_path, COMMENTED, "real.yaml")
    real.chmod(0o640)
    (tmp_path / "egg.yaml").symlink_to("real.yaml")
    resolved = discover_config(tmp_path, None, env)
    tool = ["rw:~/.cache/tool"]  # outside any scope: written because it is named
    done = apply_entries(resolved, ADD, env, tool, wildcards=ADD, included=tool)
    assert done.added == tuple(ADD) and done.added_fs == ("rw:~/.cache/tool",)
    assert (tmp_path / "egg.yaml").is_symlink() and real.read_text() == done.after
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [".egg", "egg.yaml", "real.yaml"] or (
        sorted(p.name for p in tmp_path.iterdir()) == ["egg.yaml", "real.yaml"]
    )
    assert "+    - new.example.com\n" in done.diff()


def test_applying_twice_changes_nothing_the_second_time(tmp_path: Path):
    path, env = project(tmp_path, COMMENTED)
    named = {"included": ["rw:~/x"]}
    apply_entries(discover_config(tmp_path, None, env), ADD, env, ["rw:~/x"], ADD, **named)
    once = path.read_bytes()
    again = apply_entries(discover_config(tmp_path, None, env), ADD, env, ["rw:~/x"], **named)
    assert again.added == () and again.added_fs == () and path.read_bytes() == once


HOSTS = st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){1,3}(:[1-9][0-9]{3})?", fullmatch=True)


RULES = st.from_regex(r"(rw|ro):~/[a-z]{1,8}(/[a-z.]{1,8}){0,2}", fullmatch=True)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from([text for text, _ in SHAPES]),
    network=st.lists(HOSTS, max_size=6),
    fs=st.lists(RULES, max_size=3),
)
def test_property_applying_a_suggestion_twice_changes_nothing_the_second_time(shape, network, fs):
    once, added, added_fs = add_entries(shape, network, fs, "egg.yaml")
    twice, again, again_fs = add_entries(once, network, fs, "egg.yaml")
    assert twice == once and again == () and again_fs == ()
    config = load_config_string(once, "egg.yaml")
    assert set(config.network.domains) >= set(network) or config.network.domains == ("*",)
    assert {str(r) for r in config.fs} >= set(fs)
    assert lines_kept(shape, once)


def test_a_network_from_a_base_is_refused_naming_the_base(tmp_path: Path):
    base, env = project(tmp_path, "network: {mode: observe, domains: [a.com]}\n", "shared.yaml")
    leaf, _ = project(tmp_path, "base: ./shared.yaml\nenv: [HOME]\n")
    with pytest.raises(UsageError, match=f"comes from the base {base}"):
        planned_edit(discover_config(tmp_path, None, env), ["b.com"])
    assert leaf.read_text() == "base: ./shared.yaml\nenv: [HOME]\n"


def test_no_egg_yaml_means_nothing_to_edit(tmp_path: Path):
    env = {**os.environ, "HOME": str(tmp_path), "EGG_HOME": str(tmp_path / ".egg")}
    with pytest.raises(UsageError, match="no egg.yaml to edit"):
        planned_edit(discover_config(tmp_path, None, env), ["b.com"])


def test_an_edit_that_would_not_load_writes_nothing(tmp_path: Path, monkeypatch):
    path, env = project(tmp_path, COMMENTED)
    from egg_core.suggest import apply as suggest_apply

    monkeypatch.setattr(suggest_apply, "yaml_item", lambda entry: entry)  # '*.x' unquoted: alias
    with pytest.raises(EggError, match="would not load"):
        apply_entries(
            discover_config(tmp_path, None, env), ["*.cdn.example.org"], env, wildcards=ADD
        )
    assert path.read_text() == COMMENTED


def test_a_wildcard_is_added_only_when_fold_made_it(tmp_path: Path):
    path, env = project(tmp_path, "network: {mode: observe}\n")
    resolved = discover_config(tmp_path, None, env)
    for entry in ("*", "*.com", "*.example.com"):
        with pytest.raises(EggError, match="refusing to add the wildcard"):
            apply_entries(resolved, [entry], env)
    assert path.read_text() == "network: {mode: observe}\n"
    apply_entries(resolved, ["*.example.com"], env, wildcards=["*.example.com"])
    assert path.read_text() == "network: {mode: observe, domains: ['*.example.com']}\n"


@pytest.mark.parametrize(
    ("text", "after"),
    [
        # a block scalar ends at the next line: the entry goes before env, not after it
        (
            "network:\n  - |\n    a.com\nenv: [HOME]\n",
            "network:\n  - |\n    a.com\n  - b.com\nenv: [HOME]\n",
        ),
        ("{}\n", "{network: [b.com]}\n"),
        ("{env: [HOME]}\n", "{env: [HOME], network: [b.com]}\n"),
        ("env: [HOME]\n...\n", "env: [HOME]\nnetwork:\n  - b.com\n...\n"),
        ("---\n# nothing yet\n", "---\n# nothing yet\nnetwork:\n  - b.com\n"),
        ("network:\n  mode:\tobserve\n", "network:\n  domains:\n    - b.com\n  mode:\tobserve\n"),
        ("'network':\n  - a.com\n", "'network':\n  - a.com\n  - b.com\n"),
        ("network:   # note: later\nenv: []\n", "network: [b.com]   # note: later\nenv: []\n"),
    ],
)
def test_awkward_but_valid_files_get_the_entry_where_it_belongs(text, after):
    assert edit_text(text, ["b.com"], "egg.yaml") == after
    assert "b.com" in load_config_string(after).network.domains


def test_an_anchored_network_is_not_edited_through_its_alias():
    text = "tools: &t [a.com]\nnetwork: *t\n"
    with pytest.raises(ConfigError, match="network is an alias"):
        edit_text(text, ["b.com"], "egg.yaml")


def test_fold_uses_the_public_suffix_list():
    assert registrable_domain("a.b.example.co.uk") == "example.co.uk"
    assert registrable_domain("user.github.io") == "user.github.io"  # github.io is a suffix
    assert registrable_domain("localhost") is None
    entries, folds = fold(
        [
            "a.example.com",
            "b.example.com",
            "example.com",
            "c.example.com",
            "c.example.com:8443",
            "x.github.io",
            "y.github.io",
            "z.github.io",
            "one.example.co.uk",
            "two.example.co.uk",
        ]
    )
    assert entries == [
        "*.example.com",
        "example.com",  # a wildcard does not cover the domain itself
        "c.example.com:8443",
        "x.github.io",  # three different owners: never folded
        "y.github.io",
        "z.github.io",
        "one.example.co.uk",  # two are not enough
        "two.example.co.uk",
    ]
    assert [(f.entry, f.replaces) for f in folds] == [
        ("*.example.com", ("a.example.com", "b.example.com", "c.example.com"))
    ]


def test_the_command_applies_and_says_the_next_step(tmp_path: Path):
    path, env = project(tmp_path, COMMENTED)
    log = tmp_path / "network.log"
    log.write_text(
        "".join(
            f'{{"host": "{h}", "port": 443, "decision": "allow", "would_deny": true}}\n'
            for h in ("a.cdn.example.net", "b.cdn.example.net", "c.cdn.example.net", "x.io")
        )
    )
    run = [*EGG, "policy", "suggest", "--log", str(log)]
    shown = subprocess.run(
        [*run, "--fold"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "+    - '*.example.net'\n" in shown.stdout and path.read_text() == COMMENTED
    done = subprocess.run(
        [*run, "--fold", "--apply"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {path}" in done.stdout and "next: set network.mode: enforce" in done.stdout
    assert load_config_string(path.read_text()).network.domains == (
        "api.example.com",
        "*.example.net",
        "x.io",
    )
    again = subprocess.run(
        [*run, "--fold", "--apply"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert "nothing to add" in again.stdout and again.returncode == 0


def test_the_diff_shows_a_missing_final_newline_as_diff_does():
    before = "network: none"  # an editor that writes no final newline
    after, _, _ = add_entries(before, [], ["rw:~/x/y"], "egg.yaml")
    diff = Applied(Path("egg.yaml"), (), before, after, ("rw:~/x/y",)).diff()
    assert "-network: none\n\\ No newline at end of file\n+network: none\n+fs:\n" in diff
