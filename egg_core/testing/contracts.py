"""Contract suites a plugin must pass. Subclass one and name your plugin's entry point.

The built-in plugins run exactly these classes in egg's own test suite, so a third-party plugin is
held to the same bar. Each test checks one promise the core relies on.

Why one module of this size: it is the one import a plugin's test suite needs (agents, platforms,
history), and each class is a list of independent promises, read one at a time.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import attrs
import pytest

from egg_core import registry
from egg_core.env import SESSION_MARKERS
from egg_core.errors import EnforcementError
from egg_core.plugins import EggPluginManager
from egg_core.profiles import AgentProfile
from egg_core.runner import popen_sandbox
from egg_core.sandbox import CAPABILITIES, Availability, Launch, Platform

if TYPE_CHECKING:
    from egg_core.history import HistoryContext, Transcript

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
            grants += [*p.settings_files, *p.project_settings_files, *p.restored_files]
            grants += [*p.code_dirs, *p.project_code_dirs]
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
            paths += [g.value for g in (*p.code_dirs, *p.project_code_dirs, *p.restored_files)]
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
            for grant in (*p.settings_files, *p.restored_files):
                assert any(grant.value == w or grant.value.startswith(w) for w in writable), (
                    f"{p.name}: settings file {grant.value!r} is snapshotted but not writable; "
                    "snapshot only what the agent can change"
                )

    def test_command_keys_name_settings_files_egg_can_parse(
        self, profiles: list[AgentProfile]
    ) -> None:
        """A key list for a file that is not snapshotted would guard nothing; one for a file
        egg cannot parse would silently restore it whole."""
        from egg_core.settings_keys import format_of, parse

        for p in profiles:
            files = {g.value for g in (*p.settings_files, *p.project_settings_files)}
            for file, keys in p.command_keys.items():
                assert file in files, f"{p.name}: command_keys names {file!r}, not a settings file"
                fmt = format_of(file)
                assert fmt, f"{p.name}: {file!r} is neither JSON, TOML nor dotenv"
                for key in keys:
                    try:
                        segments, _ = parse(key)
                    except ValueError as exc:
                        raise AssertionError(f"{p.name}: bad key path {key!r}: {exc}") from None
                    # a bare * at the top is the whole file: restore it whole instead; in a
                    # dotenv file it is every variable, and the comments and layout stay
                    assert segments[0] != "*" or fmt == "dotenv", f"{p.name}: bad key {key!r}"

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
        from egg_core.config.model import default_config
        from egg_core.env import build_env
        from egg_core.profiles import AgentProfile
        from egg_core.resolution import resolve_policy

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


@attrs.frozen(kw_only=True)
class HistorySample:
    """A conversation in the agent's own format, as the agent leaves it in a home."""

    #: home-relative path -> content: the transcript, and whatever the agent keeps beside it to
    #: know which directory it belongs to (Gemini's ``.project_root``)
    files: Mapping[str, bytes]
    #: the home-relative path of the transcript itself
    transcript: str
    #: what the user typed first (the title ``egg history`` shows, and the first rendered turn)
    first_user_message: str


class HistoryContract(_PluginContract):
    """An agent plugin that keeps history: it finds this session's conversation (and not another
    directory's), puts a capture back where the agent finds it, resumes with the right argv,
    reads its own format, and neither capture nor restore can be turned against the host with a
    symlink. Set ``plugin`` and ``agent`` and implement :meth:`sample`."""

    #: the agent (its profile's name) whose history the plugin keeps
    agent: ClassVar[str] = ""

    def sample(self, cwd: Path, agent_session_id: str) -> HistorySample:
        """A conversation with this id, held in ``cwd``, in the agent's format."""
        raise NotImplementedError

    @pytest.fixture
    def profile(self, egg_plugin_manager: EggPluginManager) -> AgentProfile:
        self._loaded(egg_plugin_manager)
        agents = registry.agents(egg_plugin_manager)
        assert self.agent in agents, f"no agent {self.agent!r} is registered"
        return agents[self.agent].obj

    @pytest.fixture
    def layout(self, tmp_path: Path) -> dict[str, Path]:
        base = tmp_path / "history-contract"
        found = {name: base / name for name in ("home", "work.dir", "other", "session")}
        for path in found.values():
            path.mkdir(mode=0o700, parents=True)
        return found

    def _plant(self, home: Path, sample: HistorySample) -> Path:
        for relative, data in sample.files.items():
            path = home / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return home / sample.transcript

    def _ctx(self, layout: dict[str, Path], profile: AgentProfile, ident: str) -> HistoryContext:
        from egg_core.history import HistoryContext

        return HistoryContext(
            cwd=layout["work.dir"],
            home=layout["home"],
            session_dir=layout["session"],
            started_after=time.time() - 60,
            agent_session_id=ident if profile.session_id_flag else None,
            environ={"HOME": str(layout["home"])},
        )

    def _captured(
        self, pm: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> tuple[str, HistorySample, Transcript]:
        from egg_core.history import capture

        ident, decoy = str(uuid.uuid4()), str(uuid.uuid4())
        mine = self.sample(layout["work.dir"], ident)
        self._plant(layout["home"], self.sample(layout["other"], decoy))
        self._plant(layout["home"], mine)
        ctx = self._ctx(layout, profile, ident)
        transcript = pm.hook.egg_history_capture(agent=profile, ctx=ctx)
        assert transcript is not None, "the plugin found no transcript of this session"
        capture(transcript, layout["session"])
        return ident, mine, transcript

    def test_capture_picks_this_sessions_conversation(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        from egg_core.history import read_capture

        ident, mine, transcript = self._captured(egg_plugin_manager, profile, layout)
        assert transcript.agent_session_id == ident
        assert read_capture(layout["session"]) == mine.files[mine.transcript]

    def test_restore_puts_it_back_where_the_agent_finds_it(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        from egg_core.history import read_capture, restore

        pm = egg_plugin_manager
        ident, mine, captured = self._captured(pm, profile, layout)
        (layout["home"] / mine.transcript).unlink()
        ctx = self._ctx(layout, profile, ident)
        target = pm.hook.egg_history_restore(agent=profile, ctx=ctx, captured=captured)
        assert target is not None and target.agent_session_id == ident
        restore(read_capture(layout["session"]), target)
        assert (target.root / target.file).read_bytes() == mine.files[mine.transcript]
        again = pm.hook.egg_history_capture(
            agent=profile, ctx=attrs.evolve(ctx, agent_session_id=ident)
        )
        assert again is not None and (again.root / again.file) == (target.root / target.file)

    def test_resume_argv_carries_the_agents_own_id(self, profile: AgentProfile) -> None:
        ident = str(uuid.uuid4())
        argv = profile.build_argv(["--x"], resume_id=ident)
        assert profile.resume_flag and ident in argv and argv[-1] == "--x"
        assert argv.index(ident) > 0

    def test_render_reads_the_conversation(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        from egg_core.history import title_of

        mine = self.sample(layout["work.dir"], str(uuid.uuid4()))
        data = mine.files[mine.transcript]
        turns = egg_plugin_manager.hook.egg_history_render(agent=profile, data=data)
        assert turns, "the plugin renders no turn of its own format"
        assert title_of(turns) == " ".join(mine.first_user_message.split())[:80]
        garbage = egg_plugin_manager.hook.egg_history_render(
            agent=profile, data=b"\x00\xff{not json\n[1,2]\n" + data[: len(data) // 2]
        )
        assert isinstance(garbage, list)  # hostile bytes: read what parses, never raise

    def test_streamed_turns_are_the_rendered_ones(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        """``egg history show`` asks ``egg_history_turns`` first: a plugin that streams gives
        the turns ``egg_history_render`` gives for the same bytes (one that does not is read
        whole)."""
        from egg_core.transcripts import TranscriptReader

        mine = self.sample(layout["work.dir"], str(uuid.uuid4()))
        data = mine.files[mine.transcript]
        streamed = egg_plugin_manager.hook.egg_history_turns(
            agent=profile, transcript=TranscriptReader.of_bytes(data)
        )
        if streamed is not None:
            rendered = egg_plugin_manager.hook.egg_history_render(agent=profile, data=data)
            assert list(streamed) == rendered

    def test_a_transcript_replaced_by_a_symlink_is_never_read(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        from egg_core.history import HistoryError, capture

        pm = egg_plugin_manager
        secret = layout["home"] / "id_ed25519"
        secret.write_bytes(SECRET.encode())
        ident = str(uuid.uuid4())
        mine = self.sample(layout["work.dir"], ident)
        path = self._plant(layout["home"], mine)
        path.unlink()
        path.symlink_to(secret)
        transcript = pm.hook.egg_history_capture(
            agent=profile, ctx=self._ctx(layout, profile, ident)
        )
        if transcript is not None:
            with pytest.raises(HistoryError):
                capture(transcript, layout["session"])
        for leftover in layout["session"].iterdir():
            assert SECRET.encode() not in leftover.read_bytes()

    def test_restore_never_writes_below_a_symlinked_directory(
        self, egg_plugin_manager: EggPluginManager, profile: AgentProfile, layout: dict[str, Path]
    ) -> None:
        import shutil

        from egg_core.history import HistoryError, read_capture, restore

        pm = egg_plugin_manager
        ident, _, captured = self._captured(pm, profile, layout)
        ctx = self._ctx(layout, profile, ident)
        target = pm.hook.egg_history_restore(agent=profile, ctx=ctx, captured=captured)
        assert target is not None
        directory = (target.root / target.file).parent
        shutil.rmtree(directory)
        elsewhere = layout["other"] / "elsewhere"
        elsewhere.mkdir()
        directory.symlink_to(elsewhere)
        with pytest.raises(HistoryError):
            restore(read_capture(layout["session"]), target)
        assert list(elsewhere.iterdir()) == []
