"""Contract suites a plugin must pass. Subclass one and name your plugin's entry point.

The built-in plugins run exactly these classes in egg's own test suite, so a third-party plugin is
held to the same bar. Each test checks one promise the core relies on.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest

from egg_core import registry
from egg_core.env import SESSION_MARKERS
from egg_core.errors import EnforcementError
from egg_core.plugins import EggPluginManager
from egg_core.profiles import AgentProfile
from egg_core.runner import popen_sandbox
from egg_core.sandbox import CAPABILITIES, Availability, Launch, Platform

SECRET = "egg-contract-secret-value-3f9a"

_NAME = re.compile(r"^[a-z][a-z0-9._-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOST = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$")


class _PluginContract:
    #: the entry-point name of the plugin under test (``egg plugins`` shows it)
    plugin: ClassVar[str] = ""

    def _loaded(self, pm: EggPluginManager) -> None:
        assert self.plugin, f"{type(self).__name__} must set `plugin = '<entry point name>'`"
        reports = {r.name: r for r in pm.reports()}
        assert self.plugin in reports, (
            f"plugin {self.plugin!r} is not installed (installed: {sorted(reports)})"
        )
        report = reports[self.plugin]
        assert report.status == "loaded", f"plugin {self.plugin!r}: {report.error}"


class AgentProfileContract(_PluginContract):
    """Every agent profile a plugin registers is well-formed and explains each hole it drills."""

    @pytest.fixture
    def profiles(self, egg_plugin_manager: EggPluginManager) -> list[AgentProfile]:
        self._loaded(egg_plugin_manager)
        found = [
            r.obj for r in registry.agents(egg_plugin_manager).values() if r.plugin == self.plugin
        ]
        assert found, f"plugin {self.plugin!r} registers no agent"
        return found

    def test_plugin_loads_without_error(self, egg_plugin_manager: EggPluginManager) -> None:
        self._loaded(egg_plugin_manager)

    def test_agent_names_are_simple(self, profiles: list[AgentProfile]) -> None:
        for profile in profiles:
            assert _NAME.fullmatch(profile.name), f"bad agent name {profile.name!r}"
            assert profile.description.strip(), f"{profile.name}: empty description"

    def test_every_hole_has_a_reason(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            grants = [*p.domains, *p.env_vars, *p.write_dirs, *p.write_prefix_dirs]
            grants += [*p.settings_files, *p.project_settings_files]
            for grant in grants:
                assert grant.value.strip(), f"{p.name}: a hole without a value"
                assert len(grant.reason.strip()) >= 8, f"{p.name}: {grant.value!r} has no reason"
            for default in p.set_env:
                assert default.reason.strip(), f"{p.name}: {default.name} has no reason"
            for penv in p.platform_env:
                assert penv.reason.strip(), f"{p.name}: {penv.name} has no reason"
            for port in p.local_ports:
                assert port.reason.strip(), f"{p.name}: port {port.port} has no reason"

    def test_domains_are_bare_hostnames(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            for grant in p.domains:
                assert _HOST.fullmatch(grant.value), (
                    f"{p.name}: domain {grant.value!r} must be a lower-case host name "
                    "(optionally '*.'-prefixed), without scheme, port or path"
                )

    def test_env_names_are_valid_and_not_parent_session_variables(
        self, profiles: list[AgentProfile]
    ) -> None:
        for p in profiles:
            names = [g.value for g in p.env_vars] + [d.name for d in p.set_env]
            names += [e.name for e in p.platform_env] + list(p.provider_url_vars)
            for name in names:
                assert _ENV_NAME.fullmatch(name), f"{p.name}: bad variable name {name!r}"
                assert name not in SESSION_MARKERS, (
                    f"{p.name}: {name} identifies a parent agent session and must not be passed"
                )

    def test_home_paths_stay_inside_home(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            paths = [g.value for g in (*p.write_dirs, *p.write_prefix_dirs, *p.settings_files)]
            paths += [g.value for g in (*p.project_settings_files, *p.home_files, *p.cache_dirs)]
            paths += [p.session_dir] if p.session_dir else []
            for path in paths:
                assert not path.startswith(("/", "~")), f"{p.name}: {path!r} must be $HOME-relative"
                assert ".." not in path.split("/"), f"{p.name}: {path!r} escapes $HOME"
                assert path.strip("/") not in ("", "."), f"{p.name}: {path!r} is all of $HOME"

    def test_settings_files_are_snapshot_inside_writable_dirs(
        self, profiles: list[AgentProfile]
    ) -> None:
        for p in profiles:
            writable = [g.value for g in (*p.write_dirs, *p.write_prefix_dirs)]
            for grant in p.settings_files:
                assert any(grant.value == w or grant.value.startswith(w) for w in writable), (
                    f"{p.name}: settings file {grant.value!r} is snapshotted but not writable; "
                    "snapshot only what the agent can change"
                )

    def test_command_keys_name_settings_files_egg_can_parse(
        self, profiles: list[AgentProfile]
    ) -> None:
        """A key list for a file that is not snapshotted would guard nothing; one for a file
        egg cannot parse would silently restore it whole."""
        from egg_core.settings_keys import format_of

        for p in profiles:
            files = {g.value for g in (*p.settings_files, *p.project_settings_files)}
            for file, keys in p.command_keys.items():
                assert file in files, f"{p.name}: command_keys names {file!r}, not a settings file"
                assert format_of(file), f"{p.name}: {file!r} is neither JSON nor TOML"
                for key in keys:
                    parts = key.split(".")
                    assert all(parts) and parts[0] != "*", f"{p.name}: bad key path {key!r}"

    def test_home_files_sit_at_the_top_of_home(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            for grant in p.home_files:
                assert "/" not in grant.value, (
                    f"{p.name}: home file {grant.value!r} must be directly in $HOME (a file "
                    "deeper down is in a writable directory already)"
                )

    def test_ports_are_valid(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            for port in p.local_ports:
                assert 1 <= port.port <= 65535, f"{p.name}: port {port.port}"

    def test_argv_puts_user_args_last(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            argv = p.build_argv(["--user-arg", "x y"])
            assert argv[-2:] == ["--user-arg", "x y"], f"{p.name}: {argv}"
            assert all(isinstance(a, str) for a in argv)
            if p.binary:
                assert argv[0] == p.binary

    def test_skip_permissions_flag_only_when_asked(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            if not p.skip_permissions_flag:
                continue
            assert p.skip_permissions_flag not in p.build_argv([])
            assert p.skip_permissions_flag in p.build_argv([], skip_permissions=True)

    def test_resume_flag_carries_the_id(self, profiles: list[AgentProfile]) -> None:
        for p in profiles:
            if not p.resume_flag:
                continue
            argv = p.build_argv([], resume_id="abc-123")
            assert "abc-123" in argv, f"{p.name}: resume id missing from {argv}"


class PlatformContract(_PluginContract):
    """Every platform a plugin registers describes itself honestly and runs what it prepares."""

    @pytest.fixture
    def platforms(self, egg_plugin_manager: EggPluginManager) -> list[Platform]:
        self._loaded(egg_plugin_manager)
        found = [
            r.obj
            for r in registry.platforms(egg_plugin_manager).values()
            if r.plugin == self.plugin
        ]
        assert found, f"plugin {self.plugin!r} registers no platform"
        return found

    def test_plugin_loads_without_error(self, egg_plugin_manager: EggPluginManager) -> None:
        self._loaded(egg_plugin_manager)

    def test_name_and_description(self, platforms: list[Platform]) -> None:
        for platform in platforms:
            assert _NAME.fullmatch(platform.name), f"bad platform name {platform.name!r}"
            assert platform.description.strip(), f"{platform.name}: empty description"

    def test_capabilities_are_known(self, platforms: list[Platform]) -> None:
        for platform in platforms:
            unknown = set(platform.capabilities) - CAPABILITIES
            assert not unknown, f"{platform.name}: unknown capabilities {sorted(unknown)}"

    def test_available_gives_a_reason(self, platforms: list[Platform]) -> None:
        for platform in platforms:
            availability = platform.available()
            assert isinstance(availability, Availability)
            assert isinstance(availability.ok, bool)
            assert availability.reason.strip(), f"{platform.name}: available() without a reason"

    def test_outer_boundary_platforms_claim_no_isolation(self, platforms: list[Platform]) -> None:
        for platform in platforms:
            if platform.outer_boundary:
                isolating = set(platform.capabilities) - {"net.full"}
                assert not isolating, f"{platform.name} enforces nothing but claims {isolating}"

    # -- launching: a default policy, the shell agent, a secret in the environment

    def _launch(self, tmp_path: Path, argv: list[str]) -> Launch:
        from egg_core.config import default_config
        from egg_core.env import build_env
        from egg_core.policy import resolve_policy
        from egg_core.profiles import AgentProfile

        home = tmp_path / "home"
        work = tmp_path / "work"
        for directory in (home, work):
            directory.mkdir(exist_ok=True)
        environ = {**os.environ, "HOME": str(home), "EGG_CONTRACT_SECRET": SECRET}
        policy = resolve_policy(
            default_config(),
            AgentProfile(name="contract", description="contract test agent"),
            home=home,
            cwd=work,
            environ=environ,
        )
        env = build_env(policy, environ)
        env["EGG_CONTRACT_SECRET"] = SECRET
        return Launch(
            policy=policy,
            argv=argv,
            env=env,
            cwd=work,
            work_dir=tmp_path,
            egg_home=tmp_path / "egg-home",
        )

    def test_command_preview_is_an_argv_without_secrets(
        self, platforms: list[Platform], tmp_path: Path
    ) -> None:
        for platform in platforms:
            command = platform.command(self._launch(tmp_path, ["/bin/echo", "hi"]))
            assert command and all(isinstance(a, str) for a in command), command
            assert not any(SECRET in a for a in command), "a secret value is on the command line"

    def test_prepare_runs_the_command_or_refuses_clearly(
        self, platforms: list[Platform], tmp_path: Path
    ) -> None:
        for platform in platforms:
            ok = platform.available().ok
            launch = self._launch(
                tmp_path, ["/bin/sh", "-c", 'echo "out:$EGG_CONTRACT_SECRET"; exit 3']
            )
            if not ok:
                with pytest.raises(EnforcementError) as refused:
                    platform.prepare(launch)
                assert "\n" not in str(refused.value)
                continue
            prepared = platform.prepare(launch)
            try:
                assert not any(SECRET in a for a in prepared.argv), "secret on the command line"
                prepared.starting()
                # the platform's own stderr may be asked to be a pipe (here: dropped), with the
                # command's put at stderr_fd: egg's own spawner does both
                proc = popen_sandbox(
                    prepared,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL if prepared.stderr_fd is not None else None,
                    stdin=subprocess.DEVNULL,
                )
                prepared.spawned()
                out, _ = proc.communicate(timeout=60)
                code = prepared.command_exit_code(proc.returncode)
            finally:
                prepared.cleanup()
                prepared.cleanup()  # idempotent
            assert code == 3, f"{platform.name}: exit code {code}, expected 3"
            assert out.decode().strip() == f"out:{SECRET}", out
