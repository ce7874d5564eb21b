"""From "run this agent/command here" to a resolved plan: config, profile, policy, platform, env.

``egg explain``, ``egg exec`` and ``egg run`` all start here, so what explain shows is what the
others enforce. Nothing is started by planning.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core import registry
from egg_core.config import ResolvedConfig, discover_config
from egg_core.converters import to_tuple
from egg_core.env import build_env
from egg_core.errors import EggError
from egg_core.paths import egg_home, user_home
from egg_core.plugins import EggPluginManager
from egg_core.policy import (
    EffectivePolicy,
    launcher_paths,
    protected_paths,
    resolve_policy,
)
from egg_core.profiles import AgentProfile, unknown_agent_profile
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
    #: what the git guard audits against after the run (see :mod:`egg_core.gitguard`); None
    #: when the run cannot write any repository's metadata or the guard is off
    git_state: dict[str, Any] | None = None

    def launch(
        self,
        *,
        work_dir: Path,
        tty: bool,
        network_log: Path | None = None,
        shared_dir: Path | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> Launch:
        """What the platform gets to start this plan (explain previews it, exec and the session
        daemon prepare it)."""
        return Launch(
            policy=self.policy,
            argv=self.argv,
            env={**self.env, **(extra_env or {})},
            cwd=self.cwd,
            work_dir=work_dir,
            egg_home=self.egg_home,
            tty=tty,
            network_log=network_log,
            shared_dir=shared_dir,
        )

    def settings_files(self) -> list[str]:
        """Files to snapshot before a run and restore after it (threat H): the agent's settings
        in $HOME and in the workspace, direnv's .envrc, an egg.yaml ``agent_settings`` override.
        None when the persistence guards are off, or nothing is sandboxed."""
        policy = self.policy
        if not (policy.persistence_guards and policy.requires_sandbox):
            return []
        home, cwd = Path(policy.home), Path(policy.cwd)
        files = [home / grant.value for grant in self.profile.settings_files]
        files += [cwd / grant.value for grant in self.profile.project_settings_files]
        files += [cwd / name for name in WORKSPACE_HOOK_FILES]
        override = self.resolved.config.agent_settings_map.get(self.profile.name)
        if override:
            files.append(Path(os.path.expanduser(override.replace("~", str(home), 1))))
        return [str(path) for path in dict.fromkeys(files)]


#: workspace files that run code outside the sandbox for any agent, snapshotted in every run
WORKSPACE_HOOK_FILES = (".envrc",)


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
    allow_unavailable: bool = False,
) -> Plan:
    """Resolve everything needed to start ``command`` (or the agent) in the sandbox.

    ``command`` replaces the agent's own command line (``egg exec -- CMD``, ``egg run -- CMD``);
    ``agent_args`` extend it (``egg run claude --model x``). With ``allow_unavailable`` a named
    platform that cannot run the policy here is still planned, and the reason recorded (``egg
    explain --platform macos-seatbelt`` on Linux).
    """
    resolved = discover_config(cwd, config_path, environ)
    agents = registry.agents(pm)
    name = agent or DEFAULT_AGENT
    known = name in agents
    profile = agents[name].obj if known else unknown_agent_profile(name)
    home = user_home(environ)
    egg_dir = egg_home(environ)
    protected = protected_paths(resolved.files, egg_dir, launcher_paths(environ), cwd)
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
    if policy.requires_sandbox and policy.persistence_guards:
        from egg_core import gitguard

        guard = gitguard.plan(policy)
        policy = attrs.evolve(policy, protected=(*policy.protected, *guard.entries))
        git_state = guard.state
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
            agent_args, skip_permissions=policy.skip_permissions, resume_id=resume_id
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
    )


def audit_after_run(plan: Plan) -> list[str]:
    """What the git guard neutralized after a run of ``plan`` (one line each; see
    :func:`egg_core.gitguard.audit`). Never raises: a failing audit is reported, not fatal."""
    if plan.git_state is None:
        return []
    from egg_core import gitguard

    try:
        return gitguard.audit(plan.git_state, plan.egg_home)
    except Exception as exc:  # a hostile layout must never make egg itself fail
        return [f"git: the audit after the run failed ({type(exc).__name__}: {exc})"]


def _session_markers() -> frozenset[str]:
    from egg_core.env import SESSION_MARKERS

    return SESSION_MARKERS


def find_command(argv0: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """Where ``argv0`` would be found with the sandbox's PATH; None if nowhere."""
    if "/" in argv0:
        path = argv0 if os.path.isabs(argv0) else str(cwd / argv0)
        return path if os.path.exists(path) else None
    return shutil.which(argv0, path=env.get("PATH", os.defpath))
