"""Platform selection: --platform, EGG_PLATFORM, best available, and never a silent fallback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_core import registry
from egg_core.errors import EnforcementError, UnknownNameError
from egg_core.selection import select_platform
from tests.policy.conftest import config, profile, resolve


def test_best_available_platform_is_linux_ns(egg_plugin_manager):
    selection = select_platform(registry.platforms(egg_plugin_manager), resolve())
    assert selection.platform.name == "linux-ns" and selection.outer_boundary is None


def test_platform_flag_and_environment(egg_plugin_manager):
    platforms = registry.platforms(egg_plugin_manager)
    flag = select_platform(platforms, resolve(), "unsandboxed", {"EGG_PLATFORM": "linux-ns"})
    assert flag.platform.name == "unsandboxed" and flag.outer_boundary == "declared by user"
    env = select_platform(platforms, resolve(), None, {"EGG_PLATFORM": "unsandboxed"})
    assert env.platform.name == "unsandboxed" and "$EGG_PLATFORM" in env.reason


def test_unknown_platform_name(egg_plugin_manager):
    with pytest.raises(UnknownNameError, match="unknown platform 'nope'.*registered: linux-ns"):
        select_platform(registry.platforms(egg_plugin_manager), resolve(), "nope")


def test_unavailable_named_platform_is_an_enforcement_error(egg_plugin_manager):
    with pytest.raises(EnforcementError, match="macos-seatbelt.*needs macOS"):
        select_platform(registry.platforms(egg_plugin_manager), resolve(), "macos-seatbelt")


def test_wide_open_policy_runs_unsandboxed_declared_by_config(egg_plugin_manager):
    from egg_core.config.parsing import load_config_string
    from egg_core.resolution import resolve_policy
    from tests.policy.conftest import CWD, HOME

    policy = resolve_policy(
        load_config_string("base: none\nnetwork: '*'\nenv: '*'\n"),
        profile("shell"),
        home=HOME,
        cwd=CWD,
        environ={},
    )
    selection = select_platform(registry.platforms(egg_plugin_manager), policy)
    assert selection.platform.name == "unsandboxed"
    assert selection.outer_boundary == "declared by config"


def test_wildcard_network_alone_still_selects_a_sandbox(egg_plugin_manager):
    selection = select_platform(
        registry.platforms(egg_plugin_manager), resolve("shell", "network: '*'")
    )
    assert selection.platform.name == "linux-ns"


def test_no_capable_platform_lists_every_gap(egg_home):
    from egg_core.plugins import get_plugin_manager

    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home), "EGG_DISABLE_PLUGINS": "linux-ns"})
    with pytest.raises(EnforcementError) as exc:
        select_platform(registry.platforms(pm), resolve("shell", "fs: ['deny:/secret']"))
    message = str(exc.value)
    assert "\n" not in message
    assert "macos-seatbelt: needs macOS" in message
    assert "--platform unsandboxed" in message
    assert exc.value.exit_code == 4


def test_policy_with_deny_rules_and_no_capable_platform_starts_nothing(
    egg_cli, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "started"
    result = egg_cli.run_subprocess(
        "exec", "--", "touch", str(marker), env={"EGG_DISABLE_PLUGINS": "linux-ns"}, cwd=tmp_path
    )
    assert result.exit_code == 125
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "cannot enforce this policy" in result.stderr
    assert not marker.exists()


def test_gaps_name_what_needs_the_missing_capability(egg_plugin_manager):
    unsandboxed = registry.get_platform(egg_plugin_manager, "unsandboxed")
    gaps = unsandboxed.gaps(resolve("shell", "fs: ['deny:/secret']"))
    assert any("deny:" in g and "fs.deny-read" in g for g in gaps)
    assert config() is not None and os.sep == "/" and Path("/").exists()
