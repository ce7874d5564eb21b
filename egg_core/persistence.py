"""Threat H for one launch: what of the agent's files a run snapshots and puts back (its settings,
the command-defining keys in them, the files restored byte for byte), the code directories it
protects or watches, the git guard's plan, and the agent's own directories made before a first
run — and how ``egg explain`` says each of them. :mod:`egg_core.launch` asks for them while it
plans; :mod:`egg_core.snapshot` and :mod:`egg_core.hostrun` carry them out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from egg_core import observe, pathrules
from egg_core.policy import EffectivePolicy
from egg_core.profiles import AgentProfile


class GuardedPlan(Protocol):
    """What ``egg explain`` reads of a launch's plan (:class:`egg_core.launch.Plan`) to say
    what its guards do."""

    @property
    def settings(self) -> Sequence[str]: ...

    @property
    def settings_keys(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def settings_reasons(self) -> Mapping[str, str]: ...

    @property
    def code_watch(self) -> Sequence[str]: ...


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


def agent_guards(plan: GuardedPlan) -> list[dict[str, str]]:
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
