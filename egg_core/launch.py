"""From "run this agent/command here" to a resolved plan: config, profile, policy, platform, env.

``egg explain``, ``egg exec`` and ``egg run`` all start here, so what explain shows is what the
others enforce. Nothing is started by planning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core import observe, pathrules, registry
from egg_core.config.files import ResolvedConfig, discover_config
from egg_core.converters import to_tuple
from egg_core.env import build_env
from egg_core.errors import EggError, EnforcementError
from egg_core.paths import egg_home, user_home
from egg_core.persistence import (
    make_agent_dirs,
    persistence_guards,
    restored_files,
    settings_keys,
)
from egg_core.plugins import EggPluginManager
from egg_core.policy import NEED_FILTERED, EffectivePolicy, FsEntry
from egg_core.profiles import AgentProfile, unknown_agent_profile
from egg_core.protections import launcher_paths, protected_paths
from egg_core.resolution import resolve_policy
from egg_core.sandbox import Launch
from egg_core.selection import Selection, select_platform

DEFAULT_AGENT = "shell"


@attrs.frozen(kw_only=True)
class Plan:
    resolved: ResolvedConfig
    profile: AgentProfile
    known_agent: bool
    policy: EffectivePolicy
    selection: Selection
    argv: tuple[str, ...] = attrs.field(converter=to_tuple)
    env: Mapping[str, str]
    cwd: Path
    egg_home: Path
    #: why the requested platform could not run this (only with ``allow_unavailable``)
    platform_problem: str | None = None
    #: what the git guard audits against after the run (see :mod:`egg_core.git.guard`); None
    #: when the run cannot write any repository's metadata or the guard is off
    git_state: dict[str, Any] | None = None
    #: files snapshotted before the run and restored after it (see :meth:`settings_files`)
    settings: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: for the settings files with command-defining keys: those keys (egg_core.settings_keys)
    settings_keys: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: for the files restored byte for byte (the profile's ``restored_files``): why, said
    #: when one is put back
    settings_reasons: Mapping[str, str] = attrs.field(factory=dict)
    #: agent code directories no mount could hold, checked after the run
    code_watch: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: a plugin's resolver and connector for the filtering proxy (egg_network_transport)
    network_transport: Any = attrs.field(default=None, eq=False)

    def launch(
        self,
        *,
        work_dir: Path,
        tty: bool,
        network_log: Path | None = None,
        shared_dir: Path | None = None,
        extra_env: Mapping[str, str] | None = None,
        home_layer: Path | None = None,
        home_staged: Sequence[str] = (),
        tools_dir: Path | None = None,
    ) -> Launch:
        """What the platform gets to start this plan (explain previews it, exec and the session
        daemon prepare it). With ``tools_dir`` (a running tool socket, egg_core.tools.server) the
        command finds the socket in EGG_TOOL_SOCKET and the tools' shims first on PATH."""
        env = {**self.env, **(extra_env or {})}
        if tools_dir is not None:
            from egg_core.tools.client import SOCKET_ENV
            from egg_core.tools.server import BIN, SOCKET

            inside = self.selection.platform.tools_path(tools_dir)
            env[SOCKET_ENV] = f"{inside}/{SOCKET}"
            env["PATH"] = f"{inside}/{BIN}:{env.get('PATH') or os.defpath}"
        return Launch(
            policy=self.policy,
            argv=self.argv,
            env=env,
            cwd=self.cwd,
            work_dir=work_dir,
            egg_home=self.egg_home,
            tty=tty,
            network_log=network_log,
            shared_dir=shared_dir,
            home_layer=home_layer,
            home_staged=tuple(os.path.basename(p) for p in home_staged),
            network_transport=self.network_transport,
            tools_dir=tools_dir,
        )

    def stage_home_files(self, work_dir: Path) -> tuple[Path | None, dict[str, str]]:
        """Stage the agent's home files in ``work_dir``'s layer when the platform wants one
        (see :mod:`egg_core.homefiles`): (the layer, host path -> staged copy), or (None, {})."""
        from egg_core import homefiles

        if not self.selection.platform.stages_home_files:
            return None, {}
        files = homefiles.to_stage(self.policy)
        if not files:
            return None, {}
        layer = work_dir / homefiles.LAYER
        return layer, homefiles.stage(str(layer), files)

    def settings_files(self) -> list[str]:
        """Files to snapshot before a run and restore after it (threat H); see
        :func:`settings_files`."""
        return list(self.settings)

    def make_agent_dirs(self) -> list[str]:
        """See :func:`make_agent_dirs`."""
        return make_agent_dirs(self.policy, self.profile.name)

    def write_window(self) -> tuple[list[str], list[str]]:
        """(roots, protected) of this launch's write window (see :mod:`egg_core.windows`): the
        directories its sandbox can write, and what in them it cannot (its configs, ./egg.yaml,
        $EGG_HOME)."""
        from egg_core import windows

        policy = self.policy
        roots = windows.writable_roots((e.path, e.mode) for e in policy.fs)
        protected = [
            observe.realpath(e.path) for e in policy.protected if e.mode in ("deny", "deny-write")
        ]
        return roots, sorted(set(protected))


def default_shell(config_shell: str | None, environ: Mapping[str, str]) -> str:
    return config_shell or environ.get("SHELL") or "/bin/sh"


def plan_launch(
    pm: EggPluginManager,
    *,
    environ: Mapping[str, str],
    cwd: Path,
    agent: str | None = None,
    command: Sequence[str] = (),
    agent_args: Sequence[str] = (),
    config_path: str | None = None,
    platform: str | None = None,
    skip_permissions: bool = False,
    resume_id: str | None = None,
    session_id: str | None = None,
    allow_unavailable: bool = False,
) -> Plan:
    """Resolve everything needed to start ``command`` (or the agent) in the sandbox.

    ``command`` replaces the agent's own command line (``egg exec -- CMD``, ``egg run -- CMD``);
    ``agent_args`` extend it (``egg run claude --model x``). With ``allow_unavailable`` a named
    platform that cannot run the policy here is still planned, and the reason recorded (``egg
    explain --platform macos-seatbelt`` on Linux).
    """
    resolved = discover_config(cwd, config_path, environ)
    from egg_core import windows

    windows.check([str(p) for p in resolved.files], str(egg_home(environ)))
    agents = registry.agents(pm)
    name = agent or DEFAULT_AGENT
    known = name in agents
    profile = agents[name].obj if known else unknown_agent_profile(name)
    home = user_home(environ)
    egg_dir = egg_home(environ)
    protected = protected_paths(resolved.files, egg_dir, launcher_paths(environ), cwd)
    protected += _plugin_code(pm, protected)
    policy = resolve_policy(
        resolved.config,
        profile,
        home=home,
        cwd=cwd,
        environ=environ,
        protected=protected,
        skip_permissions=skip_permissions,
    )
    git_state = None
    settings: list[str] = []
    watch: list[str] = []
    keys: dict[str, tuple[str, ...]] = {}
    reasons: dict[str, str] = {}
    if policy.requires_sandbox and policy.persistence_guards:
        guards = persistence_guards(policy, profile, resolved.config)
        policy, git_state = guards.policy, guards.git_state
        settings, watch = guards.settings, guards.code_watch
        keys = settings_keys(policy, profile)
        reasons = restored_files(policy, profile)
    platforms = registry.platforms(pm)
    problem = None
    try:
        selection = select_platform(platforms, policy, platform, environ)
    except EggError as exc:
        if not (allow_unavailable and platform and platform in platforms):
            raise
        problem = exc.message
        selection = Selection(platforms[platform].obj, "chosen with --platform")
    if selection.outer_boundary:
        # The platform enforces nothing: the agent sees the host as the outer boundary allows.
        env = dict(environ)
        env.update({d.name: environ.get(d.name, d.value) for d in policy.set_env})
        for marker in [k for k in env if k in _session_markers()]:
            del env[marker]
    else:
        env = build_env(policy, environ)
    if command:
        argv = list(command)
    elif profile.binary is None:
        argv = [default_shell(resolved.config.shell, environ), *agent_args]
    else:
        argv = profile.build_argv(
            agent_args,
            skip_permissions=policy.skip_permissions,
            resume_id=resume_id,
            session_id=session_id,
        )
    return Plan(
        resolved=resolved,
        profile=profile,
        known_agent=known,
        policy=policy,
        selection=selection,
        argv=argv,
        env=env,
        cwd=cwd,
        egg_home=egg_dir,
        platform_problem=problem,
        git_state=git_state,
        settings=settings,
        settings_keys=keys,
        settings_reasons=reasons,
        code_watch=watch,
        network_transport=_network_transport(pm) if policy.network_need == NEED_FILTERED else None,
    )


def _network_transport(pm: Any) -> Any:
    """How the filtering proxy resolves and connects: the first plugin's answer; the built-in
    system-network plugin answers last, with the system's."""
    transport = pm.hook.egg_network_transport()
    if transport is None:
        raise EnforcementError(
            "no plugin gives the filtering proxy a way to resolve names and connect (the "
            "built-in system-network plugin is disabled: take it out of EGG_DISABLE_PLUGINS)"
        )
    return transport


def _plugin_code(pm: Any, protected: Sequence[FsEntry]) -> list[FsEntry]:
    """Every plugin distribution's code and every directory egg's Python imports from
    (egg_core.plugincode) that no protection covers yet."""
    from egg_core.plugincode import import_path, plugin_code

    covered = [e.path for e in protected if e.mode in ("deny", "deny-write")]
    added: list[FsEntry] = []
    for entry in [*import_path(), *plugin_code(getattr(pm, "entry_points", ()))]:
        if not any(pathrules.under(entry.path, root) for root in covered):
            added.append(entry)
            covered.append(entry.path)
    return added


def after_run(
    git_state: dict[str, Any] | None, code_watch: Sequence[str], egg_home: Any
) -> list[str]:
    """What the guards took away after a run (one line each): the git guard's audit and agent
    code directories the sandbox created (:class:`egg_core.hostrun.RunGuard`), from plain data
    (the exec cache's fast path has no plan). Never raises: a failing audit is reported."""
    from egg_core.hostrun import RunGuard

    return RunGuard(git_state, code_watch, egg_home).audit()[0]


def _session_markers() -> frozenset[str]:
    from egg_core.env import SESSION_MARKERS

    return SESSION_MARKERS


def unrunnable(found: str) -> tuple[str, bool] | None:
    """Why the file ``found`` (a command found on the sandbox's PATH) cannot be run, and
    whether a shell would call it not found (exit 127) rather than not executable (126); None
    when it can.
    A script's interpreter (its ``#!`` line) must exist and be executable too: the kernel's
    exec fails on it with "No such file or directory", which the command alone would not say.
    What this rests on is recorded for egg exec's cache (egg_core.observe): a cached launch's
    own exec can then fail on nothing the decision saw."""
    if not observe.access(found, os.X_OK) or observe.isdir(found):
        return "permission denied", False
    observe.content(found)
    try:
        with open(found, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None  # (the exec says why)
    if not head.startswith(b"#!"):
        return None
    # as the kernel reads it: after "#!" and blanks, up to a blank or the end of the line
    # (a carriage return is part of the name: a script saved with CRLF has no such interpreter)
    line = head[2:].split(b"\n", 1)[0].lstrip(b" \t")
    name = line.split(b" ", 1)[0].split(b"\t", 1)[0]
    if not name:
        return None
    interpreter = os.fsdecode(name)
    if not observe.exists(interpreter):
        return f"bad interpreter {interpreter}: no such file", True
    if not observe.access(interpreter, os.X_OK) or observe.isdir(interpreter):
        return f"bad interpreter {interpreter}: permission denied", False
    return None


def find_command(
    argv0: str, env: Mapping[str, str], cwd: Path, tools: Sequence[str] = ()
) -> str | None:
    """Where ``argv0`` would be found with the sandbox's PATH; None if nowhere. An enabled
    tool's shim (or ``egg-tool-call``) is found inside, first on PATH, when ``tools`` is set."""
    if tools and argv0 in (*tools, "egg-tool-call"):
        return argv0
    if "/" in argv0:
        path = argv0 if os.path.isabs(argv0) else str(cwd / argv0)
        return path if observe.exists(path) else None
    return observe.which(argv0, env.get("PATH", os.defpath))
