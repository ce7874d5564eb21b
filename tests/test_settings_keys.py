"""Only the command-defining keys of an agent's settings are put back after a run
(egg_core.settings_keys), through the snapshot (egg_core.snapshot) every launch path uses."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from egg_core import snapshot
from egg_core.settings_keys import Unparseable, bind, parse, revert

CODEX_KEYS = ("notify", "mcp_servers", "profiles.*.notify")
CLAUDE_KEYS = ("hooks", "statusLine", "mcpServers", "projects.*.mcpServers")


def test_json_command_keys_are_put_back_and_the_rest_kept() -> None:
    before = {"hooks": {"Stop": []}, "numStartups": 1}
    after = {
        "hooks": {"Stop": [{"command": "evil"}]},
        "statusLine": {"type": "command", "command": "evil"},
        "numStartups": 2,
        "projects": {"/w": {"hasTrustDialogAccepted": True, "mcpServers": {"x": {}}}},
    }

    content, reverted = revert(
        json.dumps(before).encode(), json.dumps(after).encode(), CLAUDE_KEYS, "json"
    )

    assert content is not None
    assert json.loads(content) == {
        "hooks": {"Stop": []},
        "numStartups": 2,
        "projects": {"/w": {"hasTrustDialogAccepted": True}},
    }
    assert sorted(reverted) == ["hooks", "projects./w.mcpServers", "statusLine"]


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_a_table_the_run_added_only_for_reverted_keys_goes_with_them(fmt: str) -> None:
    keys = ("security.disableYoloMode", "tools.core", "tools.exclude")
    if fmt == "json":
        before = b'{"tools": {"exclude": ["x"]}, "ui": {}}'
        after = b'{"tools": {"core": ["y"]}, "security": {"disableYoloMode": false}, "ui": {}}'
    else:
        before = b'[tools]\nexclude = ["x"]\n[ui]\n'
        after = b'[tools]\ncore = ["y"]\n[security]\ndisableYoloMode = false\n[ui]\n'

    content, _ = revert(before, after, keys, fmt)

    assert content is not None
    loaded = json.loads(content) if fmt == "json" else tomllib.loads(content.decode())
    # the run's security table held only what was reverted; tools and ui were there before
    assert loaded == {"tools": {"exclude": ["x"]}, "ui": {}}


def test_a_removed_hook_comes_back_and_unchanged_commands_need_no_write() -> None:
    before = json.dumps({"hooks": {"PreToolUse": ["guard"]}, "theme": "dark"}).encode()

    removed, _ = revert(before, json.dumps({"theme": "dark"}).encode(), CLAUDE_KEYS, "json")
    untouched, lines = revert(
        before,
        json.dumps({"hooks": {"PreToolUse": ["guard"]}, "theme": "x"}).encode(),
        CLAUDE_KEYS,
        "json",
    )

    assert removed is not None and json.loads(removed)["hooks"] == {"PreToolUse": ["guard"]}
    assert (untouched, lines) == (None, [])


def test_toml_edits_keep_the_agents_own_lines() -> None:
    before = b'model = "a"\n[projects."/w"]\ntrust_level = "untrusted"\n'
    after = (
        b'# the agent\'s comment\nmodel = "b"\nnotify = ["sh", "-c", "evil"]\n'
        b'[projects."/w"]\ntrust_level = "trusted"\n'
        b'[mcp_servers.x]\ncommand = "evil"\n[profiles.p]\nnotify = ["evil"]\n'
    )

    content, reverted = revert(before, after, CODEX_KEYS, "toml")

    assert content is not None
    text = content.decode()
    assert "evil" not in text
    assert "# the agent's comment" in text and 'trust_level = "trusted"' in text
    assert sorted(reverted) == ["mcp_servers", "notify", "profiles.p.notify"]


def test_a_table_replaced_by_a_scalar_is_given_back_whole() -> None:
    before = json.dumps({"tools": {"discoveryCommand": "ok"}}).encode()
    content, _ = revert(
        before, json.dumps({"tools": 5}).encode(), ("tools.discoveryCommand",), "json"
    )

    assert content is not None and json.loads(content) == {"tools": {"discoveryCommand": "ok"}}


DEEP = b'{"hooks": {"Stop": "evil"}, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b"\xff\xfe", DEEP])
def test_what_does_not_parse_is_for_the_caller_to_restore_whole(data: bytes) -> None:
    with pytest.raises(Unparseable):
        revert(b"{}", data, CLAUDE_KEYS, "json")


# -- through the snapshot


def test_snapshot_keeps_ordinary_changes_and_says_what_it_reverted(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "a"\n')
    keys = {str(config): CODEX_KEYS}
    snapshot.take(str(tmp_path / "snap"), [str(config)], keys)
    config.write_text('model = "b"\nnotify = ["evil"]\n[projects."/w"]\ntrust_level = "trusted"\n')

    lines = snapshot.restore(str(tmp_path / "snap"))

    assert config.read_text() == 'model = "b"\n[projects."/w"]\ntrust_level = "trusted"\n'
    assert lines == [
        f"reverted notify in {config} (they run commands outside the sandbox or loosen what "
        "the agent may do there); kept its other changes"
    ]


def test_snapshot_keeps_a_new_settings_file_without_commands(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    keys = {str(settings): ("hooks", "mcpServers")}
    snapshot.take(str(tmp_path / "snap"), [str(settings)], keys)
    settings.write_text('{"security": {"auth": {"selectedType": "gemini-api-key"}}}')

    assert snapshot.restore(str(tmp_path / "snap")) == []
    assert json.loads(settings.read_text())["security"]["auth"]["selectedType"] == "gemini-api-key"


def test_snapshot_strips_commands_from_a_new_file_and_restores_unparseable_ones_whole(
    tmp_path: Path,
) -> None:
    new = tmp_path / "new.json"
    broken = tmp_path / "broken.json"
    broken.write_text('{"hooks": {}}')
    keys = {str(new): ("mcpServers",), str(broken): ("hooks",)}
    snapshot.take(str(tmp_path / "snap"), [str(new), str(broken)], keys)
    new.write_text('{"mcpServers": {"x": {"command": "evil"}}, "theme": "dark"}')
    broken.write_text('{"hooks": {"Stop": "evil"}, "oops"')

    lines = snapshot.restore(str(tmp_path / "snap"))

    assert json.loads(new.read_text()) == {"theme": "dark"}
    assert broken.read_text() == '{"hooks": {}}'
    assert lines[1] == f"restored {broken}"


def test_without_keys_the_whole_file_is_restored_as_before(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("A=1\n")
    snapshot.take(str(tmp_path / "snap"), [str(env)])
    env.write_text("A=2\nNODE_OPTIONS=--require=/tmp/evil.js\n")

    assert snapshot.restore(str(tmp_path / "snap")) == [f"restored {env}"]
    assert env.read_text() == "A=1\n"


def test_jsonc_is_understood_and_written_back_as_json_only_when_commands_go() -> None:
    """Gemini and opencode accept comments; egg parses them too (a // inside a string stays)."""
    before = b'{"theme": "dark"}'
    keep = b'// mine\n{"theme": "light", "url": "http://x//y"}'
    planted = b'{"theme": "dark", /* added */ "mcp": {"x": {"command": ["evil"]}}}'

    assert revert(before, keep, ("mcp",), "json") == (None, [])
    content, reverted = revert(before, planted, ("mcp",), "json")
    assert content is not None and json.loads(content) == {"theme": "dark"}
    assert reverted == ["mcp"]


def test_codex_profile_files_are_guarded_like_its_config(tmp_path: Path) -> None:
    from egg_core.persistence import settings_files, settings_keys
    from egg_core.resolution import resolve_policy
    from tests.policy.conftest import config, profile

    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "work.config.toml").write_text('model = "x"\n')
    policy = resolve_policy(
        config(""), profile("codex"), home=tmp_path, cwd=tmp_path / "w", environ={}
    )

    path = str(tmp_path / ".codex" / "work.config.toml")
    assert path in settings_files(policy, profile("codex"), config(""))
    assert "notify" in settings_keys(policy, profile("codex"))[path]


def test_a_document_too_deep_to_parse_is_restored_whole_never_left(tmp_path: Path) -> None:
    """Python's parser gives up on 5,000 levels where the agent's may not: fail closed."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"theme": "dark"}')
    snapshot.take(str(tmp_path / "snap"), [str(settings)], {str(settings): ("hooks",)})
    settings.write_bytes(DEEP)

    lines = snapshot.restore(str(tmp_path / "snap"))

    assert settings.read_text() == '{"theme": "dark"}'
    assert lines == [f"restored {settings}"]


# -- answers about one directory: kept for the run's workspace only (*!cwd)

TRUST = bind(("projects.*!cwd.hasTrustDialogAccepted",), ["/w/my.proj", "/real/my.proj"])
FOLDERS = bind(('*!cwd=["TRUST_FOLDER", "DO_NOT_TRUST"]',), ["/w"])


def test_trust_for_the_workspace_stays_and_for_any_other_path_goes() -> None:
    before = {"projects": {"/o": {"hasTrustDialogAccepted": False}}}
    after = {
        "projects": {
            "/": {"hasTrustDialogAccepted": True},
            "/o": {"hasTrustDialogAccepted": True},
            "/w/my.proj": {"hasTrustDialogAccepted": True},
            "/real/my.proj": {"hasTrustDialogAccepted": True},
            "/w/my.proj/": {"hasTrustDialogAccepted": True},  # not the workspace's spelling
        }
    }

    content, reverted = revert(
        json.dumps(before).encode(), json.dumps(after).encode(), TRUST, "json"
    )

    assert content is not None
    assert json.loads(content) == {
        "projects": {
            "/o": {"hasTrustDialogAccepted": False},
            "/w/my.proj": {"hasTrustDialogAccepted": True},
            "/real/my.proj": {"hasTrustDialogAccepted": True},
        }
    }
    assert sorted(reverted) == [
        "projects./.hasTrustDialogAccepted",
        "projects./o.hasTrustDialogAccepted",
        "projects./w/my.proj/.hasTrustDialogAccepted",
    ]


def test_trust_in_toml_keeps_the_agents_lines() -> None:
    keys = bind(("projects.*!cwd.trust_level",), ["/w"])
    before = b'model = "a"\n'
    after = (
        b'model = "a"\n[projects."/w"]\ntrust_level = "trusted"\n'
        b'[projects."/"]\ntrust_level = "trusted"\n'
    )

    content, reverted = revert(before, after, keys, "toml")

    assert content == b'model = "a"\n[projects."/w"]\ntrust_level = "trusted"\n'
    assert reverted == ["projects./.trust_level"]


@pytest.mark.parametrize(
    ("before", "after", "kept"),
    [
        ({}, {"/w": "TRUST_FOLDER"}, True),
        ({"/w": "TRUST_FOLDER"}, {"/w": "DO_NOT_TRUST"}, True),
        ({"/w": "DO_NOT_TRUST"}, {}, True),  # a removal: Gemini asks again
        ({}, {"/w": "TRUST_PARENT"}, False),  # trusts the folder above, and its siblings
        ({"/w": "DO_NOT_TRUST"}, {"/w": "TRUST_PARENT"}, False),
        ({}, {"/w": ["TRUST_FOLDER"]}, False),
        ({}, {"/": "TRUST_FOLDER"}, False),
        ({"/o": "DO_NOT_TRUST"}, {}, False),
    ],
)
def test_the_workspaces_answer_stays_only_as_one_of_the_values_listed(
    before: dict[str, object], after: dict[str, object], kept: bool
) -> None:
    content, _ = revert(json.dumps(before).encode(), json.dumps(after).encode(), FOLDERS, "json")

    assert (content is None) == kept
    if not kept:
        assert content is not None and json.loads(content) == before


def test_unbound_the_workspace_wildcard_keeps_nothing() -> None:
    """A key list from before planning bound it (an old manifest) fails closed: every path."""
    after = {"projects": {"/w": {"hasTrustDialogAccepted": True}}}

    content, _ = revert(
        b"{}", json.dumps(after).encode(), ("projects.*!cwd.hasTrustDialogAccepted",), "json"
    )

    assert content is not None and json.loads(content) == {}


def test_a_workspace_path_with_dots_equals_and_quotes_survives_binding() -> None:
    path = '/w/a.b=c/"q".d'
    [key] = bind(('*!cwd=["X"]',), [path])

    _, values = parse(key)

    assert values == ("X",)
    assert revert(b"{}", json.dumps({path: "X"}).encode(), (key,), "json") == (None, [])


@pytest.mark.parametrize("key", ["a..b", "*![1].x", "*!cwd=X", '*!cwd=["a"].b', "a.", '*!["/w"'])
def test_a_malformed_key_makes_the_caller_restore_the_file_whole(key: str) -> None:
    with pytest.raises(Unparseable):
        revert(b"{}", b'{"a": {"b": 1}}', (key,), "json")


# -- dotenv: its variables are the keys


def test_dotenv_variables_are_put_back_line_by_line() -> None:
    before = b"# app\nA=1\nexport B='two'\nMULTI=\"line one\nline two\"\nGONE=1\n"
    after = (
        b"# app\n# added by the agent\nA=9\nexport B='two'\nMULTI=\"changed\"\n"
        b"NEW=x # trailing comment\n"
    )

    content, reverted = revert(before, after, ("*",), "dotenv")

    assert content == (
        b"# app\n# added by the agent\nA=1\nexport B='two'\nMULTI=\"line one\nline two\"\nGONE=1\n"
    )
    assert sorted(reverted) == ["A", "GONE", "MULTI", "NEW"]


def test_a_variable_named_twice_is_put_back_whichever_line_wins() -> None:
    """dotenv lets the last assignment win: both of the run's lines go."""
    content, reverted = revert(b"A=1\n", b"A=1\nB=2\nA=evil\n", ("*",), "dotenv")

    assert content == b"A=1\n"
    assert sorted(reverted) == ["A", "B"]


def test_a_value_dotenv_reads_from_the_next_line_is_a_change_too() -> None:
    """``A=`` followed by a quoted line is A's value for dotenv (its expression spans lines)."""
    content, reverted = revert(b"A=\n", b"A=\n'evil'\n", ("*",), "dotenv")

    assert reverted == ["A"] and content == b"A=\n"


@pytest.mark.parametrize("data", [b"A=1\r\nB=2\r\n", b"A=\xff\n"])
def test_a_dotenv_this_module_cannot_rewrite_is_restored_whole(tmp_path: Path, data: bytes) -> None:
    env = tmp_path / ".env"
    env.write_text("A=1\n")
    snapshot.take(str(tmp_path / "snap"), [str(env)], {str(env): ("*",)})
    env.write_bytes(data)

    assert snapshot.restore(str(tmp_path / "snap")) == [f"restored {env}"]
    assert env.read_text() == "A=1\n"


def test_snapshot_reverts_dotenv_variables_and_keeps_comments(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("A=1\n")
    snapshot.take(str(tmp_path / "snap"), [str(env)], {str(env): ("*",)})
    env.write_text("# note\nA=1\nLD_PRELOAD=/w/evil.so\n")

    lines = snapshot.restore(str(tmp_path / "snap"))

    assert env.read_text() == "# note\nA=1\n"
    assert lines == [
        f"reverted LD_PRELOAD in {env} (they run commands outside the sandbox or loosen what "
        "the agent may do there); kept its other changes"
    ]


def test_planning_binds_the_workspace_into_the_keys(tmp_path: Path) -> None:
    from egg_core.persistence import settings_keys
    from egg_core.resolution import resolve_policy
    from tests.policy.conftest import config, profile

    (tmp_path / "w").mkdir()
    policy = resolve_policy(
        config(""), profile("gemini"), home=tmp_path, cwd=tmp_path / "w", environ={}
    )

    [key] = settings_keys(policy, profile("gemini"))[str(tmp_path / ".gemini/trustedFolders.json")]
    _, values = parse(key)
    assert key.startswith("*![") and str(tmp_path / "w") in key
    assert values == ("TRUST_FOLDER", "DO_NOT_TRUST")


# -- empty values: what an agent writes out as its own default names nothing (issue 24, item 4)

#: the entry claude 2.1.332 adds to ~/.claude.json for a project it starts in for the first time
#: (a real run's, its counters cut): every guarded key in it empty or a "not approved"
CLAUDE_NEW_PROJECT = {
    "allowedTools": [],
    "mcpContextUris": [],
    "mcpServers": {},
    "enabledMcpjsonServers": [],
    "disabledMcpjsonServers": [],
    "hasTrustDialogAccepted": True,
    "projectOnboardingSeenCount": 0,
    "hasClaudeMdExternalIncludesApproved": False,
    "hasClaudeMdExternalIncludesWarningShown": False,
    "lastSessionId": "524124d0-1478-4ef1-bfff-b7da7ce5b260",
}


def _profile_keys(agent: str, file: str, workspace: str) -> tuple[str, ...]:
    from tests.policy.conftest import profile

    return bind(profile(agent).command_keys[file], [workspace])


def _guarded_run(
    tmp_path: Path, name: str, keys: tuple[str, ...], before: bytes | None, after: bytes
) -> tuple[Path, list[str]]:
    """``before`` in a settings file, snapshotted; the run leaves ``after``; what the restore
    says, and the file."""
    path = tmp_path / name
    if before is not None:
        path.write_bytes(before)
    snapshot.take(str(tmp_path / "snap"), [str(path)], {str(path): keys})
    path.write_bytes(after)
    return path, snapshot.restore(str(tmp_path / "snap"))


def test_what_claude_writes_for_a_new_project_stays_and_is_not_reported(tmp_path: Path) -> None:
    keys = _profile_keys("claude", ".claude.json", "/w")
    before = {"hasCompletedOnboarding": True, "numStartups": 3}
    after = {**before, "numStartups": 4, "projects": {"/w": CLAUDE_NEW_PROJECT}}

    path, lines = _guarded_run(
        tmp_path, ".claude.json", keys, json.dumps(before).encode(), json.dumps(after).encode()
    )

    assert lines == []
    assert json.loads(path.read_text()) == after


#: (file, agent, before, after, the key put back): a command, a grant or a protection off,
#: each still reverted and reported though it sits where empty values are now kept
PLANTED = [
    (
        ".claude.json",
        "claude",
        {},
        {"projects": {"/w": {"mcpServers": {"x": {"command": "evil"}}}}},
        "projects./w.mcpServers",
    ),
    (".claude.json", "claude", {}, {"mcpServers": {"x": {}}}, "mcpServers"),
    (
        ".claude.json",
        "claude",
        {},
        {"projects": {"/w": {"allowedTools": ["Bash(*)"]}}},
        "projects./w.allowedTools",
    ),
    (
        ".claude.json",
        "claude",
        {"projects": {"/w": {"disabledMcpjsonServers": ["x"]}}},
        {"projects": {"/w": {"disabledMcpjsonServers": []}}},
        "projects./w.disabledMcpjsonServers",
    ),
    (
        ".claude.json",
        "claude",
        {},
        {"projects": {"/w": {"hasClaudeMdExternalIncludesApproved": True}}},
        "projects./w.hasClaudeMdExternalIncludesApproved",
    ),
    (".claude.json", "claude", {}, {"env": {"GIT_SSL_NO_VERIFY": ""}}, "env"),
    (".claude.json", "claude", {"autoInstallIdeExtension": False}, {}, "autoInstallIdeExtension"),
    (".claude/settings.json", "claude", {}, {"hooks": {"Stop": [{"command": "evil"}]}}, "hooks"),
    (
        ".claude/settings.json",
        "claude",
        {},
        {"permissions": {"allow": ["Bash(*)"]}},
        "permissions",
    ),
    (
        ".gemini/settings.json",
        "gemini",
        {},
        {"security": {"folderTrust": {"enabled": False}}},
        "security.folderTrust",
    ),
    (
        ".gemini/settings.json",
        "gemini",
        {},
        {"security": {"disableYoloMode": False}},
        "security.disableYoloMode",
    ),
    (".gemini/trustedFolders.json", "gemini", {}, {"/": "TRUST_FOLDER"}, "/"),
]


@pytest.mark.parametrize(("file", "agent", "before", "after", "key"), PLANTED)
def test_a_planted_value_is_still_put_back_and_reported(
    tmp_path: Path,
    file: str,
    agent: str,
    before: dict[str, object],
    after: dict[str, object],
    key: str,
) -> None:
    keys = _profile_keys(agent, file, "/w")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".gemini").mkdir()

    path, lines = _guarded_run(
        tmp_path, file, keys, json.dumps(before).encode(), json.dumps(after).encode()
    )

    assert json.loads(path.read_text()) == before
    assert lines and lines[0].startswith(f"reverted {key} in {path}"), lines


def test_a_dotenv_variable_set_to_nothing_is_still_a_variable() -> None:
    """``GIT_SSL_NO_VERIFY=`` turns git's TLS checks off by being there: not an empty value."""
    content, reverted = revert(b"A=1\n", b"A=1\nGIT_SSL_NO_VERIFY=\n", ("*",), "dotenv")

    assert (content, reverted) == (b"A=1\n", ["GIT_SSL_NO_VERIFY"])
