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


def make_agent_dirs(policy: EffectivePolicy, agent: str) -> list[str]:
    """Create the agent's writable (and ``cache:``) directories that do not exist yet; return
    those created.

    A missing path is not mounted (there is nothing to bind), so on a first run the agent's
    ``~/.codex`` or ``~/.local/share/opencode`` would stay read-only — and the agent could not
    create it either, its parent being read-only. Each is an empty directory (0700) the agent
    would have made itself on the host. Only the agent's own holes are created (``rw:`` rules
    in egg.yaml name what the user has), under the home directory, or as the last component of
    a path whose parent exists (a relocated state directory such as ``CODEX_HOME``); nothing
    inside a path the policy hides or protects.
    """
    created = []
    home = observe.realpath(policy.home)
    hidden = [e.path for e in (*policy.fs, *policy.protected) if e.mode in ("deny", "deny-write")]
    for entry in policy.fs:
        if entry.source != f"agent:{agent}" or entry.mode not in ("rw", "rw-prefix", "cache"):
            continue
        path = os.path.normpath(entry.path)
        if observe.lexists(path) or any(pathrules.under(path, d) for d in hidden):
            continue
        inside_home = pathrules.under(observe.realpath(os.path.dirname(path)), home)
        if not inside_home and not observe.isdir(os.path.dirname(path)):
            continue
        try:
            os.makedirs(path, mode=0o700)
        except OSError:
            continue  # a path egg cannot create stays read-only, as before
        created.append(path)
    return created


#: workspace files that run code outside the sandbox for any agent, snapshotted in every run
WORKSPACE_HOOK_FILES = (".envrc",)


def settings_files(policy: EffectivePolicy, profile: AgentProfile, config: Any) -> list[str]:
    """The agent's settings in $HOME and in the workspace, direnv's .envrc, an egg.yaml
    ``agent_settings`` override: what a run snapshots and restores."""
    files = [path for path, _ in _settings_paths(policy, profile)]
    files += [os.path.join(policy.cwd, name) for name in WORKSPACE_HOOK_FILES]
    override = config.agent_settings_map.get(profile.name)
    if override:
        files.append(os.path.expanduser(override.replace("~", policy.home, 1)))
    return [os.path.normpath(path) for path in dict.fromkeys(files)]


def settings_keys(policy: EffectivePolicy, profile: AgentProfile) -> dict[str, tuple[str, ...]]:
    """The command-defining key paths of each settings file the profile names them for, by the
    file's absolute path (home and workspace files alike): only these are put back after a run.
    ``*!cwd`` is bound to this run's working directory, as given and as its real path (see
    egg_core.settings_keys)."""
    from egg_core.settings_keys import bind

    workspace = [os.path.normpath(policy.cwd), observe.realpath(policy.cwd)]
    found: dict[str, tuple[str, ...]] = {}
    for path, grant in _settings_paths(policy, profile):
        keys = profile.command_keys.get(grant)
        if keys:
            found[path] = bind(keys, workspace)
    return found


def restored_files(policy: EffectivePolicy, profile: AgentProfile) -> dict[str, str]:
    """The profile's ``restored_files`` for this launch (relocations applied; one anchored at
    an unset variable is not there): absolute path -> why it is put back byte for byte."""
    found = {}
    for grant in profile.restored_files:
        path = policy.home_path(grant.value)
        if path:
            found[os.path.normpath(path)] = grant.reason
    return found


def _settings_paths(policy: EffectivePolicy, profile: AgentProfile) -> list[tuple[str, str]]:
    """(absolute path, the profile's name for it) of each settings file. A name with ``*``
    (Codex's ``.codex/*.config.toml`` profiles) is every file it matches when the run starts."""
    found = []
    named = [(policy.home_path(g.value), g.value) for g in profile.settings_files]
    named += [(os.path.join(policy.cwd, g.value), g.value) for g in profile.project_settings_files]
    for path, grant in named:
        if not path:
            continue  # anchored at a variable that is not set
        if "*" in os.path.basename(path):
            found += [
                (match, grant)
                for match in sorted(
                    observe.glob_in(
                        os.path.dirname(path), os.path.basename(path), include_hidden=True
                    )
                )
            ]
        else:
            found.append((path, grant))
    return found


@attrs.frozen
class Guards:
    """Threat H for one launch (see :func:`persistence_guards`)."""

    policy: EffectivePolicy
    git_state: dict[str, Any]
    settings: list[str]
    code_watch: list[str]


def persistence_guards(policy: EffectivePolicy, profile: AgentProfile, config: Any) -> Guards:
    """Threat H for one launch: the policy with the git guard's and the agent's code
    protections added, the git guard's state for the audit after the run, the files to
    snapshot (the settings, the symlinks they name, and the files restored byte for byte —
    credentials and instructions, which are not read for paths), and the code directories to
    check after the run."""
    from egg_core import pathrules, settings_code
    from egg_core.git import guard as gitguard
    from egg_core.settings_keys import format_of

    ruled = gitguard.mounted_rules(policy)
    guard = gitguard.plan(policy, ruled)
    writable = pathrules.writable_under(ruled)
    settings = settings_files(policy, profile, config)
    roots = [e.path for e in policy.fs if e.mode in pathrules.WRITABLE_MODES]
    # a dotenv file's values are data (DB_PATH=./data/app.db): every variable it gains is put
    # back, and protecting what the user's own values name would take the project's data away
    scripted = [path for path in settings if format_of(path) != "dotenv"]
    named, links = settings_code.named_entries(
        profile, scripted, policy.home, policy.cwd, writable, roots
    )
    code, watch = settings_code.code_dir_entries(profile, policy, writable)
    protected = (*policy.protected, *guard.entries, *code, *named)
    snapshotted = list(dict.fromkeys([*settings, *links, *restored_files(policy, profile)]))
    return Guards(attrs.evolve(policy, protected=protected), guard.state, snapshotted, watch)


#: what a key list protects against, as ``egg explain`` says it
KEYS_REASON = (
    "put back after every run: they run commands outside the sandbox, or loosen the agent's "
    "approvals, endpoint, account or instructions there; its other changes stay"
)


def agent_guards(plan: Plan) -> list[dict[str, str]]:
    """What the guards put back or take away after a run of ``plan``, for ``egg explain``
    (its read-only directories are in the policy's protected entries already): one entry per
    settings file with a key list (kind ``keys``), file restored whole (``restored``) and code
    directory nothing could hold (``quarantined``), each with what and why."""
    guards = []
    for path in plan.settings:
        keys = plan.settings_keys.get(path)
        why = plan.settings_reasons.get(path)
        if keys:
            guards.append(
                {"kind": "keys", "path": path, "what": ", ".join(keys), "reason": KEYS_REASON}
            )
        elif why:
            guards.append(
                {"kind": "restored", "path": path, "what": "byte for byte", "reason": why}
            )
        else:
            guards.append(
                {
                    "kind": "restored",
                    "path": path,
                    "what": "the whole file",
                    "reason": "runs or configures commands on the host and has no key list",
                }
            )
    for path in plan.code_watch:
        guards.append(
            {
                "kind": "quarantined",
                "path": path,
                "what": "moved to $EGG_HOME/quarantine if the run makes it",
                "reason": "the agent loads code or commands from it; its parent is missing "
                "too, so no read-only mount can hold it",
            }
        )
    return guards


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
