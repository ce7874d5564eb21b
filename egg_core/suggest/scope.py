"""``egg policy suggest --apply``: which proposed ``rw:`` rules it writes without being asked.

:mod:`egg_core.suggest.fs` refuses to propose a long list of bad places (the home's top, git
directories, ``bin/``, ``~/.config/git`` …), and that list decides what is *shown*. It cannot
decide what is *written*: the places a host runs code from have no complete list
(``~/.ipython/profile_default/startup``, ``~/.oh-my-zsh/custom``, ``~/.cargo/config.toml``,
``~/.config/starship.toml``, another repository's worktree …). So ``--apply`` is turned around:
it writes a rule only when the rule's path lies in a scope that is safe by construction, and
shows every other rule for review with the line to add by hand (``--apply --include RULE``
writes it once the user has read it).

The scope (:func:`scope_of`) has two kinds of roots:

- **the project**: the run's working directory, which is what ``.`` in egg.yaml names and where
  ``./egg.yaml`` is found (a session's recorded ``cwd``; for ``--trace FILE``, the directory egg
  is run in). None when it is ``/`` or one level deep, or holds the home directory;
- **the recorded agent's own state directories**: the ``write_dirs`` and ``write_prefix_dirs``
  of the agent the session recorded, as the run's policy resolves them (relocations such as
  ``CODEX_HOME`` applied, one the user's ``deny:`` suppressed left out, a prefix's siblings such
  as ``~/.claude.json`` not included). None without a recorded agent, and none that is or holds
  the home directory.

A rule's path — as egg.yaml will resolve it — is in the scope (:meth:`Scope.review` says None)
when all of these hold:

1. it is its own real path (no symlink on the way: bwrap mounts where a link leads) and
   egg.yaml can hold it;
2. it lies in one of the roots;
3. no directory from the root down to it is a git repository or a git directory (``.git`` in
   it, a bare repository's ``HEAD``, ``objects`` and ``refs``, a component named ``.git``) —
   the project's own top directory excepted, since that is its own repository — and nothing
   below it is one either (looked for up to :data:`SCAN_LIMIT` entries; a larger tree is
   reviewed, not guessed);
4. no ``deny``/``deny-write`` rule and none of egg's protections is at or above it, and no
   ``ro:``/``cache:`` rule lies between the root and it (a line the user drew inside the scope;
   a ``cache:`` marks code the host loads);
5. it is not, does not hold and is not inside a path any agent profile guards — settings files,
   code directories, cache directories, home files, in the home and in the project, and the
   files the recorded agent's runs snapshot: those are guarded only in their own agent's runs,
   while an egg.yaml rule applies to every agent's.

Everything here reads the filesystem as it is now, so the check runs when the suggestion is
shown and again right before ``--apply`` writes (:mod:`egg_core.suggest.apply`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from egg_core import pathrules
from egg_core.paths import expand_user
from egg_core.policy import EffectivePolicy, home_path, relocations
from egg_core.profiles import AgentProfile
from egg_core.suggest.fs import expressible

#: how many entries below a rule's directory are looked at for repositories
SCAN_LIMIT = 5000
#: what a bare repository (or a git directory) holds at its top
_GIT_DIR_MARKERS = ("HEAD", "objects", "refs")


@attrs.frozen
class Root:
    """A directory inside which a rule may be written without the user naming it."""

    path: str
    #: what it is, for the user ("the project", "codex's own directory")
    label: str
    #: the project's top may be its own repository; an agent's directory may not be one
    own_repository: bool = False


@attrs.frozen
class Guarded:
    """A path an agent profile guards (only in that agent's runs), and whose it is."""

    path: str
    why: str


@attrs.frozen
class Scope:
    """Where ``--apply`` may write ``rw:`` rules by itself (see the module docstring)."""

    home: str
    project: str
    roots: tuple[Root, ...]
    #: (path, mode, source) of every rule and protection of the run's policy
    rules: tuple[tuple[str, str, str], ...]
    guarded: tuple[Guarded, ...]
    #: why the project is not a root, or None when it is
    no_project: str | None = None
    agent: str | None = None

    def review(self, rule: str) -> str | None:
        """Why ``rule`` must be reviewed by hand, or None when ``--apply`` may write it."""
        if not rule.startswith("rw:"):
            return "only rw: rules are written by --apply"
        path = rule_path(rule, self.home, self.project)
        if not expressible(path):
            return "egg.yaml cannot hold this path as it is"
        real = _real(path)
        if real != path:
            return "it is reached through a symlink"
        root = next((r for r in self.roots if pathrules.under(path, r.path)), None)
        if root is None:
            return self._outside()
        return (
            _repository_between(root, path)
            or _repository_below(path)
            or self._restricted(root, path)
            or self._guarded(path)
        )

    def _outside(self) -> str:
        grouped: dict[str, list[str]] = {}
        for root in self.roots:
            grouped.setdefault(root.label, []).append(root.path)
        if not grouped:
            return f"outside the project and the agent's own directories ({self.no_project})"
        return "outside " + " and ".join(f"{k} ({', '.join(v)})" for k, v in grouped.items())

    def _restricted(self, root: Root, path: str) -> str | None:
        for where, mode, source in self.rules:
            real = _real(where) or where
            above = pathrules.under(path, where) or pathrules.under(path, real)
            if not above:
                continue
            if mode in ("deny", "deny-write"):
                return f"it is under {mode}:{where} ({source})"
            inside_root = pathrules.under(where, root.path) or pathrules.under(real, root.path)
            if mode == "cache" and inside_root:
                return f"it is under cache:{where} (code the host loads; {source})"
            if mode == "ro" and inside_root and root.path not in (where, real):
                return f"it is under ro:{where}, a narrower rule you wrote ({source})"
        return None

    def _guarded(self, path: str) -> str | None:
        for guard in self.guarded:
            if _covers(path, guard.path):
                return f"it is or holds {guard.path} ({guard.why})"
        return None


def rule_path(rule: str, home: str, project: str) -> str:
    """The absolute path ``rule`` names, as a run resolves it (``~`` is the home, a relative
    path is the project's)."""
    written = rule.split(":", 1)[1] if ":" in rule else rule
    expanded = expand_user(written, Path(home))
    return os.path.normpath(os.path.join(project, expanded))


def scope_of(
    policy: EffectivePolicy,
    *,
    agent: str | None,
    profiles: Iterable[AgentProfile],
    environ: Mapping[str, str],
    snapshots: Sequence[str] = (),
) -> Scope:
    """The scope of one run: ``policy`` is what the run's egg.yaml gives the recorded ``agent``
    now (:func:`egg_core.launch.plan_launch`), ``profiles`` every registered agent (whose
    guarded paths no automatic rule may touch), ``snapshots`` the files the run snapshots."""
    home, project = policy.home, policy.cwd
    roots: list[Root] = []
    no_project = _not_a_root(project, home)
    if no_project is None:
        roots.append(Root(_real(project) or project, "the project", own_repository=True))
    if agent is not None:
        for entry in policy.fs:
            if entry.source != f"agent:{agent}" or entry.mode not in pathrules.WRITABLE_MODES:
                continue
            real = _real(entry.path)
            if real is not None and _not_a_root(real, home) is None:
                roots.append(Root(real, f"{agent}'s own directories"))
    rules = tuple(
        (e.path, e.mode, e.source)
        for e in (*policy.fs, *policy.protected)
        if e.mode in ("deny", "deny-write", "ro", "cache")
    )
    guarded = list(_guarded_paths(profiles, home, project, environ))
    guarded += [Guarded(p, f"a file {policy.agent}'s runs snapshot") for p in snapshots]
    # a rule's path is its real path: compare it with where each guarded path really is too
    guarded += [Guarded(r, g.why) for g in guarded if (r := _real(g.path)) not in (None, g.path)]
    return Scope(home, project, tuple(roots), rules, tuple(guarded), no_project, agent)


def _not_a_root(path: str, home: str) -> str | None:
    if pathrules.depth(path) < 2:
        return f"{path} is too close to /"
    if pathrules.under(home, path):
        return f"{path} holds the home directory"
    return None


def _guarded_paths(
    profiles: Iterable[AgentProfile], home: str, project: str, environ: Mapping[str, str]
) -> Iterable[Guarded]:
    """Each profile's settings files, code and cache directories and home files (in the home,
    with its relocations), and its project settings files and code directories."""
    for profile in profiles:
        moved = relocations(profile, home, environ)
        in_home = (
            (profile.settings_files, "settings"),
            (profile.code_dirs, "code"),
            (profile.cache_dirs, "downloaded code"),
            (profile.home_files, "a file"),
        )
        for grants, what in in_home:
            for grant in grants:
                path = home_path(grant.value, home, moved)
                if path:
                    yield Guarded(path, f"{profile.name}'s {what}, guarded in its runs only")
        in_project = (
            (profile.project_settings_files, "project settings"),
            (profile.project_code_dirs, "project code"),
        )
        for grants, what in in_project:
            for grant in grants:
                path = os.path.normpath(os.path.join(project, grant.value))
                yield Guarded(path, f"{profile.name}'s {what}, guarded in its runs only")


def _covers(path: str, guarded: str) -> bool:
    """``path`` is ``guarded``, lies inside it or holds it; a ``*`` in ``guarded``'s last
    component (``~/.codex/*.config.toml``) matches any name there."""
    folder, name = os.path.split(guarded)
    if "*" not in name:
        return pathrules.under(path, guarded) or pathrules.under(guarded, path)
    if pathrules.under(folder, path):
        return True  # it holds the folder the pattern matches in
    if not pathrules.under(path, folder) or path == folder:
        return False
    first = os.path.relpath(path, folder).split(os.sep)[0]
    return fnmatch.fnmatchcase(first, name)


def _real(path: str) -> str | None:
    """``path`` with its symlinks resolved; None when that cannot be done."""
    try:
        return os.path.realpath(path)
    except (OSError, RecursionError, ValueError):
        return None


def _is_git_dir(path: str) -> bool:
    return os.path.basename(path) == ".git" or all(
        os.path.lexists(os.path.join(path, name)) for name in _GIT_DIR_MARKERS
    )


def _repository_between(root: Root, path: str) -> str | None:
    """A repository or git directory from ``root`` down to ``path`` (the root's own ``.git``
    allowed when it is the project's top)."""
    here = root.path
    steps = [here]
    for part in os.path.relpath(path, here).split(os.sep):
        if part != ".":
            here = os.path.join(here, part)
            steps.append(here)
    for step in steps:
        if _is_git_dir(step):
            return f"it is inside the git directory {step}"
        if os.path.lexists(os.path.join(step, ".git")) and not (
            root.own_repository and step == root.path
        ):
            return f"it is inside the repository {step}, another one than this project"
    return None


def _repository_below(path: str) -> str | None:
    """A repository or git directory anywhere below ``path``, looked for without following
    links; a tree of more than :data:`SCAN_LIMIT` entries is not looked through."""
    if not os.path.isdir(path) or os.path.islink(path):
        return None
    pending = [path]
    seen = 0
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > SCAN_LIMIT:
                        return f"it holds more than {SCAN_LIMIT} entries (not all looked at)"
                    if entry.name == ".git":
                        return f"it holds the repository {folder}"
                    if entry.is_dir(follow_symlinks=False):
                        if _is_git_dir(entry.path):
                            return f"it holds the git directory {entry.path}"
                        pending.append(entry.path)
        except OSError:
            return f"{folder} cannot be looked through"
    return None
