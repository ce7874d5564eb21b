"""What the generated Seatbelt profile says, rule by rule, for each part of a policy."""

from __future__ import annotations

import re
import sys

import attrs
import pytest

from egg_core.policy import FsEntry
from egg_plugins.platforms.seatbelt import sbpl
from egg_plugins.platforms.seatbelt.paths import ancestors, host_resolve, lexical_resolve, spellings
from egg_plugins.platforms.seatbelt.profile import (
    ESCAPE_SET,
    ProfileRequest,
    build_profile,
    uses_proxy,
)
from tests.platforms.sbpl_check import (
    ParseError,
    Str,
    check_profile,
    filters_of,
    parse,
    rules,
    strings,
)
from tests.platforms.seatbelt_cases import (
    CWD,
    HOME,
    PROXY_PORT,
    SESSION,
    case,
    fake_probe,
    policy_for,
    profile_for,
)


def forms_for(name: str):
    return check_profile(profile_for(case(name)))


# -- network, by need


def test_no_network_denies_everything_and_allows_no_dns():
    forms = forms_for("shell-default")
    assert ["deny", "network*"] in forms
    outbound = strings(rules(forms, "allow", "network-outbound"))
    assert not any("mDNSResponder" in s for s in outbound)
    assert not any(s.startswith("localhost:") for s in outbound)


def test_local_allows_only_the_forwarded_ports_and_dns():
    forms = forms_for("ollama-local")
    assert ["deny", "network*"] in forms
    allowed = strings(rules(forms, "allow", "network-outbound"))
    assert "localhost:11434" in allowed
    assert "/private/var/run/mDNSResponder" in allowed
    assert not any(s.startswith("localhost:") and s != "localhost:11434" for s in allowed)


def test_filtered_allows_only_the_proxy_port_and_no_dns():
    forms = forms_for("claude-filtered")
    assert ["deny", "network*"] in forms
    allowed = strings(rules(forms, "allow", "network-outbound"))
    assert f"localhost:{PROXY_PORT}" in allowed
    assert not any("mDNSResponder" in s for s in allowed)
    assert [s for s in allowed if s.startswith("localhost:")] == [f"localhost:{PROXY_PORT}"]


def test_filtered_with_local_ports_allows_proxy_and_ports():
    allowed = strings(rules(forms_for("custom-rules"), "allow", "network-outbound"))
    assert {f"localhost:{PROXY_PORT}", "localhost:4000"} <= set(allowed)


def test_full_network_has_no_network_star_rule_but_closes_shared_temp_sockets():
    forms = forms_for("codex-full-network")
    assert not [f for f in forms if "network*" in f]
    denied = strings(rules(forms, "deny", "network-outbound"))
    assert {"/private/tmp", "/private/var/tmp", "/private/var/folders"} <= set(denied)


def test_observe_mode_uses_the_proxy_even_for_local_ports():
    policy = policy_for(case("observe-local-port"))
    assert policy.mode == "observe" and uses_proxy(policy)
    allowed = strings(rules(forms_for("observe-local-port"), "allow", "network-outbound"))
    assert f"localhost:{PROXY_PORT}" in allowed and "localhost:8080" in allowed


def test_preview_without_a_port_shows_a_placeholder():
    policy = policy_for(case("claude-filtered"))
    text = build_profile(policy, ProfileRequest(probe=fake_probe))
    assert '(remote tcp "localhost:<port>")' in text
    parse(text)


def test_the_tool_socket_is_allowed_after_egg_home_is_denied():
    forms = forms_for("claude-filtered")
    sock = str(SESSION / "tools" / "tool.sock")
    deny_home = next(
        i
        for i, f in enumerate(forms)
        if f[:3] == ["deny", "file-read*", "file-write*"]
        and Str(str(HOME / ".egg")) in [x for flt in filters_of(f) for x in flt]
    )
    allow_sock = next(
        i
        for i, f in enumerate(forms)
        if f[:2] == ["allow", "network-outbound"] and sock in strings([f])
    )
    assert allow_sock > deny_home


# -- files


def test_writes_are_denied_first_then_allowed_per_rule():
    forms = forms_for("shell-default")
    base = forms.index(["deny", "file-write*"])
    cwd_allow = next(
        i
        for i, f in enumerate(forms)
        if f[:3] == ["allow", "file-read*", "file-write*"] and str(CWD) in strings([f])
    )
    assert base < cwd_allow


def test_denied_dirs_use_subpath_and_denied_files_literal():
    forms = forms_for("shell-default")
    denies = rules(forms, "deny", "file-read*", "file-write*")
    flat = [
        tuple(flt[:1]) + tuple(x.value for x in flt[1:]) for f in denies for flt in filters_of(f)
    ]
    assert ("subpath", f"{HOME}/.ssh") in flat
    assert ("literal", f"{HOME}/.netrc") in flat


def test_denied_paths_also_deny_unix_socket_connects():
    forms = forms_for("custom-rules")
    socket_denies = [
        flt[2]
        for f in rules(forms, "deny", "network-outbound")
        for flt in filters_of(f)
        if flt[:2] == ["remote", "unix-socket"]
    ]
    assert ["subpath", Str(f"{HOME}/.ssh")] in socket_denies
    assert ["path-literal", Str("/private/tmp/com.apple.launchd.AbCdEf/Listeners")] in socket_denies


def test_denies_name_the_data_volume_spelling_too():
    denied = strings(rules(forms_for("shell-default"), "deny", "file-read*", "file-write*"))
    assert f"/System/Volumes/Data{HOME}/.ssh" in denied


def test_prefix_dirs_become_anchored_regexes():
    forms = forms_for("claude-filtered")
    regexes = [
        flt[1].value
        for f in rules(forms, "allow", "file-read*", "file-write*")
        for flt in filters_of(f)
        if flt[0] == "regex"
    ]
    assert regexes == [r"^/Users/dev/\.claude"]
    pattern = re.compile(regexes[0])
    assert pattern.match(f"{HOME}/.claude")
    assert pattern.match(f"{HOME}/.claude.json")
    assert pattern.match(f"{HOME}/.claude/settings.json")
    assert not pattern.match(f"{HOME}/.claud")
    assert not pattern.match(f"{HOME}/Xclaude")


def test_a_nested_read_only_dir_is_denied_writes_after_its_writable_parent():
    forms = forms_for("custom-rules")
    vendor = str(CWD / "vendor")
    allow_cwd = next(i for i, f in enumerate(forms) if f[0] == "allow" and str(CWD) in strings([f]))
    deny_vendor = next(
        i
        for i, f in enumerate(forms)
        if f[:2] == ["deny", "file-write*"] and vendor in strings([f])
    )
    assert deny_vendor > allow_cwd


def test_egg_protections_come_after_every_policy_rule():
    forms = forms_for("custom-rules")
    launcher = next(i for i, f in enumerate(forms) if "/Users/dev/.local/bin/egg" in strings([f]))
    policy_rules = [i for i, f in enumerate(forms) if str(CWD) in strings([f]) and f[0] == "allow"]
    assert launcher > max(policy_rules)


def test_ancestors_of_protected_paths_cannot_be_renamed_or_cloned():
    forms = forms_for("custom-rules")
    pinned = rules(forms, "deny", "file-write-unlink", "file-clone")
    assert len(pinned) == 1
    assert forms.index(pinned[0]) == len(forms) - 1, "the pin rule must be the last rule"
    names = strings(pinned)
    assert str(CWD) in names and f"{HOME}/secrets" in names and "/" not in names


def test_symlinked_system_dirs_are_named_by_their_resolved_path_first():
    assert spellings("/tmp/x", lexical_resolve) == ["/private/tmp/x", "/tmp/x"]
    assert spellings("/etc", lexical_resolve) == ["/private/etc", "/etc"]
    assert spellings("/Users/dev", lexical_resolve) == ["/Users/dev"]
    assert spellings("/tmpfoo", lexical_resolve) == ["/tmpfoo"]


def test_ancestors_stop_below_root():
    assert ancestors(["/a/b/c", "/a/d"]) == ["/a/b", "/a"]


def test_jail_mode_is_not_rendered_as_a_rule():
    policy = policy_for(case("shell-default"))
    jailed = attrs.evolve(policy, fs=(FsEntry("deny", "/", "egg.yaml"), *policy.fs))
    forms = check_profile(build_profile(jailed, ProfileRequest(probe=fake_probe)))
    assert "/" not in strings(rules(forms, "deny", "file-read*", "file-write*"))


def test_read_only_root_adds_no_rule_that_would_undo_the_device_allowances():
    policy = policy_for(case("shell-default"))
    with_ro_root = attrs.evolve(policy, fs=(FsEntry("ro", "/", "egg.yaml"), *policy.fs))
    forms = check_profile(build_profile(with_ro_root, ProfileRequest(probe=fake_probe)))
    assert "/" not in strings(rules(forms, "deny", "file-write*"))


def test_writable_root_allows_writes_everywhere():
    policy = policy_for(case("shell-default"))
    rw_root = attrs.evolve(policy, fs=(FsEntry("rw", "/", "egg.yaml"), *policy.fs))
    forms = check_profile(build_profile(rw_root, ProfileRequest(probe=fake_probe)))
    assert ["allow", "file-read*", "file-write*", ["subpath", Str("/")]] in forms


# -- the escape set


def test_escape_set_rules_are_all_present_and_valid():
    forms = forms_for("shell-default")
    for _, texts in ESCAPE_SET:
        for text in texts:
            assert parse(text)[0] in forms, text


@pytest.mark.parametrize(
    "rule",
    [
        "(deny process-info* (target others))",
        "(deny signal (target others))",
        "(deny mach-priv-task-port (target others))",
        "(deny file-mount file-unmount)",
        "(deny system-kext*)",
        "(deny file-link)",
        "(deny lsopen)",
        "(deny appleevent-send)",
        "(deny job-creation)",
    ],
)
def test_escape_set_denies(rule):
    assert rule in profile_for(case("shell-default")).splitlines()


# -- the SBPL writer


def test_quote_escapes_only_backslash_and_double_quote():
    assert sbpl.quote('a "b" \\c\n(d);é') == '"a \\"b\\" \\\\c\n(d);é"'


def test_quote_refuses_nul():
    with pytest.raises(ValueError, match="NUL"):
        sbpl.quote("a\x00b")


def test_comment_cannot_span_lines():
    assert sbpl.comment("x\n(allow default)") == "; x\\n(allow default)"
    assert parse(sbpl.comment("a\r\n(deny default)\u2028b")) == []


def test_rule_refuses_unknown_actions():
    with pytest.raises(ValueError):
        sbpl.rule("permit", ["file-read*"])


def test_regex_escape_escapes_every_metacharacter():
    text = r"a.b*c+d?e(f)g[h]i{j}k|l^m$n\o"
    assert re.fullmatch(sbpl.regex_escape(text), text)
    assert not re.fullmatch(sbpl.regex_escape("a.b"), "axb")


def test_the_checker_rejects_unknown_operations_and_filters():
    with pytest.raises(AssertionError, match="unknown SBPL operation"):
        check_profile("(version 1)\n(allow file-teleport)\n")
    with pytest.raises(AssertionError, match="unknown SBPL filter"):
        check_profile('(version 1)\n(allow file-read* (glob "/x"))\n')
    with pytest.raises(AssertionError, match="host must be"):
        check_profile('(version 1)\n(allow network-outbound (remote tcp "1.2.3.4:443"))\n')
    with pytest.raises(ParseError):
        check_profile('(version 1)\n(allow file-read* (literal "/x")\n')


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS also canonicalizes letter case")
def test_host_resolution_follows_symlinks(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert host_resolve(str(tmp_path / "link" / "new")) == str(
        (tmp_path / "target").resolve() / "new"
    )


@pytest.mark.parametrize(
    ("need", "mode", "expected"),
    [
        ("none", "enforce", False),
        ("none", "observe", False),
        ("local", "enforce", False),
        ("local", "observe", True),
        ("https-filtered", "enforce", True),
        ("full", "observe", False),
    ],
)
def test_when_the_proxy_runs(need, mode, expected):
    policy = attrs.evolve(policy_for(case("shell-default")), network_need=need, mode=mode)
    assert uses_proxy(policy) is expected
