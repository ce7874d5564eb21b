"""Threat H, class 1: nothing a sandbox writes into git's metadata runs on the host afterwards.

The host's git takes configuration from files inside a repository — and configuration names
commands: ``core.fsmonitor`` (run by every ``git status``, which most shell prompts run at every
prompt), ``core.hooksPath``, aliases, filters, diff drivers, credential helpers, ssh commands —
and it runs hooks from ``hooks/``. An agent must still commit, branch, stash and rebase, so
``.git`` stays writable; what git *executes from* must not be sandbox-controlled. Two mechanisms,
each closing its part of the class by construction:

1. **During the run — read-only mounts, on every platform.** In each repository git reaches from
   the workspace whose metadata the sandbox could write — the workspace's own (or the one
   enclosing it), its linked worktrees, its populated submodules recursively (``git status``
   descends into every gitlink of the index, ``.gitmodules`` or not) — every file git takes
   configuration or hooks from is protected: ``config``, ``config.worktree``, ``commondir``,
   ``hooks/``, and a submodule's or worktree's ``.git`` file. Those that do not exist are
   *seeded* for the length of the run (see :attr:`egg_core.policy.FsEntry.seed`): an empty
   ``config``, an empty ``hooks/``, and ``commondir`` holding ``.`` — "the common directory is
   this one", which changes nothing for git, where an empty file would break it on the host.
   ``info/attributes`` is left writable: it only selects drivers that configuration defines.

2. **After the run — a host-side audit, on every launch path.** Repositories that did not exist
   when the run started (``git init`` in the workspace, a submodule staged into the index, a new
   linked worktree) could not be protected by mounts. :func:`audit` finds them the same way
   :func:`find_layout` found the others and, in what the sandbox could write: a ``commondir``
   that leads outside a known repository is removed, configuration files keep only the keys that
   name no program (:data:`SAFE_KEYS`), hooks other than git's own ``*.sample`` files are moved
   out. Everything removed goes to ``$EGG_HOME/quarantine`` and is reported in one line each.
   The check that decides whether an audit is needed at all is a handful of ``stat`` calls
   (:func:`changed`), cheap enough for ``egg exec``'s cached path; sessions also run it
   periodically while the agent works.

Not covered (the README's limits): a repository the sandbox creates below the workspace that no
index lists. git runs its configuration only if the user later ``cd``s into it or adds it to the
outer repository (``git add`` warns "adding embedded git repository").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from egg_core import facts as checks
from egg_core import observe, pathrules
from egg_core.git.config import scrub_config
from egg_core.git.layout import (
    MAX_NESTING,
    MAX_REPOSITORIES,
    Layout,
    common_dir,
    config_mentions,
    find_layout,
)
from egg_core.policy import SEED_DIRECTORY, EffectivePolicy, FsEntry
from egg_core.quarantine import Quarantine
from egg_core.safeio import write_new

SOURCE = "egg: git"
#: what ``.git/commondir`` holds while a run protects it: git reads it as "this directory"
COMMONDIR_SEED = ".\n"

#: a fact as :mod:`egg_core.execcache` records it: (kind, path, observed value)
Fact = tuple[Any, ...]


# --- during the run: protections ---------------------------------------------------------------


Writable = Callable[[str], bool]


def mounted_rules(policy: EffectivePolicy) -> list[tuple[str, str]]:
    return pathrules.mounted_rules((e.path, e.mode) for e in policy.fs)


def protections(layout: Layout, writable: Writable) -> list[FsEntry]:
    """The read-only entries (with seeds for what is missing) that keep every configuration and
    hook source of ``layout`` out of the sandbox's reach."""
    entries: list[FsEntry] = []

    def protect(path: str, why: str, seed: str | None) -> None:
        if observe.lexists(path):
            entries.append(FsEntry("deny-write", path, f"{SOURCE}: {why}"))
        elif seed is not None:
            entries.append(FsEntry("deny-write", path, f"{SOURCE}: {why}", seed=seed))

    for common in layout.commons:
        if writable(common):
            protect(os.path.join(common, "config"), "its configuration names commands", "")
            protect(os.path.join(common, "hooks"), "git runs these hooks", SEED_DIRECTORY)
    for gitdir in layout.gitdirs:
        if not writable(gitdir):
            continue
        protect(
            os.path.join(gitdir, "commondir"),
            "redirects where git reads configuration and hooks",
            COMMONDIR_SEED,
        )
        wants_worktree_config = config_mentions(common_dir(gitdir), r"worktreeconfig")
        protect(
            os.path.join(gitdir, "config.worktree"),
            "per-worktree configuration",
            "" if wants_worktree_config else None,
        )
    for dotgit in layout.dotgits:
        if observe.isfile(dotgit) and not observe.islink(dotgit) and writable(dotgit):
            protect(dotgit, "names the git directory the host's git uses here", None)
    return list(dict.fromkeys(entries))


def pointer_protections(layout: Layout, home: str, writable: Writable) -> list[FsEntry]:
    """What the configuration git reads here names in places the sandbox could write
    (:mod:`egg_core.git.pointers`): read-only for the run; a missing hooks directory or included
    file whose directory exists is held by an empty one."""
    from egg_core.git import pointers as gitpointers
    from egg_core.paths import host_which

    pointed = gitpointers.pointers(layout, home, host_which("git"))
    entries = []
    for path, why, hooks in gitpointers.sandbox_writable(pointed, writable):
        source = f"{SOURCE}: {why}"
        if observe.lexists(path):
            entries.append(FsEntry("deny-write", path, source))
        elif observe.isdir(os.path.dirname(path)):
            entries.append(
                FsEntry("deny-write", path, source, seed=SEED_DIRECTORY if hooks else "")
            )
    return entries


@attrs.frozen
class GitGuard:
    """What one launch needs from the guard: its protections, and the state to audit against."""

    entries: tuple[FsEntry, ...]
    state: dict[str, Any]


def plan(policy: EffectivePolicy, ruled: list[tuple[str, str]]) -> GitGuard:
    """The guard for a launch of ``policy`` whose :func:`mounted_rules` are ``ruled``:
    protections now, and what :func:`audit` compares with afterwards (plain data: it travels in
    the exec cache and the session's files)."""
    writable = pathrules.writable_under(ruled)
    starts = [policy.cwd]
    starts += [
        e.path for e in policy.fs if e.mode in pathrules.WRITABLE_MODES and observe.isdir(e.path)
    ]
    # what the search itself looked at (every path its resolution passed through: a symlink on
    # the way to a git directory, retargeted by the sandbox, is a new repository to audit)
    with observe.recording() as searched:
        layout = find_layout(dict.fromkeys(starts))
    entries = protections(layout, writable) + pointer_protections(layout, policy.home, writable)
    seeded = {e.path: e.seed for e in entries if e.seed is not None}
    watch = watch_facts(layout)
    watch += _search_facts(searched.facts(), watch, seeded)
    state = {
        "starts": list(dict.fromkeys(starts)),
        "ruled": ruled,
        "known": sorted({*layout.gitdirs, *layout.commons}),
        "watch": watch,
        # repositories beyond the walk's bounds: neither protected nor audited
        "skipped": layout.skipped,
        # the placeholders the run has where the search found nothing (see _search_facts)
        "seeded": seeded,
    }
    # what the layout search looked at is this launch's business too (the exec cache's facts)
    observe.extend(watch, searched.conflicts)
    return GitGuard(tuple(dict.fromkeys(entries)), state)


def _search_facts(searched: list[Fact], watch: list[Fact], seeded: dict[str, str]) -> list[Fact]:
    """What the layout search looked at beyond :func:`watch_facts`' own list; a path the guard
    seeds for the run is held to its seed (missing or the placeholder: the same layout), so the
    check during a session does not take the placeholder for a change."""
    covered = {subject for _, subject, _ in watch}
    extra: list[Fact] = []
    for kind, subject, value in searched:
        if subject in covered:
            continue
        covered.add(subject)
        extra.append(
            ("s", subject, seeded[subject]) if subject in seeded else (kind, subject, value)
        )
    return extra


def watch_facts(layout: Layout) -> list[Fact]:
    """What must stay the same for the layout to stay the same: where ``.git`` was looked for,
    what gitfiles and ``commondir`` files say, the indexes (a new gitlink), the ``worktrees/``
    listings (a new linked worktree). A missing ``commondir`` is held by a placeholder during
    the run: missing or holding the seed is the same."""
    facts: list[Fact] = [("i", path, checks.identity(path)) for path in layout.probed]
    facts += [("c", path, checks.contents(path)) for path in layout.dotgits if os.path.isfile(path)]
    for gitdir in layout.gitdirs:
        pointer = os.path.join(gitdir, "commondir")
        if os.path.lexists(pointer):
            facts.append(("c", pointer, checks.contents(pointer)))
        else:
            facts.append(("s", pointer, COMMONDIR_SEED))
    facts += [("c", path, checks.contents(path)) for path in layout.indexes]
    facts += [("l", path, checks.listing(path)) for path in layout.worktree_lists]
    return facts


# --- after the run: the audit ------------------------------------------------------------------


def changed(state: dict[str, Any]) -> bool:
    """Whether anything a new repository would change has changed since :func:`plan` (a few
    ``stat`` calls; standard library only, so the exec cache's fast path can call it)."""
    return checks.stale_fact(state.get("watch", ())) is not None


@attrs.frozen
class Audit:
    """What one audit did: a line per thing it removed or could not remove."""

    lines: tuple[str, ...] = ()
    #: what it could not make safe (also among :attr:`lines`): git may still run something the
    #: sandbox wrote, so no host program should start there until an audit succeeds
    unsafe: tuple[str, ...] = ()


def audit(state: dict[str, Any], egg_home: Path, git: str | None = None) -> list[str]:
    """Neutralize the configuration and hook sources of repositories that appeared during the
    run, where the sandbox could have written them; one line per thing removed (see
    :func:`check`)."""
    return list(check(state, egg_home, git).lines)


def check(
    state: dict[str, Any],
    egg_home: Path,
    git: str | None = None,
    starts: Iterable[str] = (),
) -> Audit:
    """:func:`audit`, saying also what it could not make safe; ``starts`` are directories git
    will run in besides the launch's own (a host tool's working directory).

    ``state`` is updated in place to what was seen, sources of the new repositories included
    (nothing protects those, so any later change to them must bring the audit back): a session
    calls this again whenever :func:`changed` says so, and only then. An audit that could not
    make everything safe leaves ``state`` as it was, so the next one looks again.
    """
    extra = [s for s in starts if s not in state.get("starts", ())]
    if not extra and not state.get("skipped") and not changed(state):
        return Audit()
    writable = pathrules.writable_under(state.get("ruled", ()))
    known = set(state.get("known", ()))
    # recorded as plan's search is: the same resolution, and every path it passed through
    # stays in the watch after this audit too
    with observe.recording() as searched:
        layout = find_layout([*state.get("starts", ()), *extra])
    quarantine = Quarantine(egg_home, "git", writable)
    if git is None:
        from egg_core.paths import host_which

        git = host_which("git")
    lines: list[str] = []
    unguarded: list[str] = []
    new_commons: list[str] = []
    for gitdir in layout.gitdirs:
        if gitdir in known:
            continue
        pointer = os.path.join(gitdir, "commondir")
        common = common_dir(gitdir)
        if os.path.lexists(pointer) and common not in known and writable(pointer):
            owner = os.path.dirname(os.path.dirname(gitdir))
            if os.path.basename(os.path.dirname(gitdir)) == "worktrees" and owner in known:
                # a linked worktree of a protected repository: give it back git's own pointer
                lines.append(quarantine.take(pointer, "it pointed git elsewhere"))
                write_new(pointer, b"../..\n")
                common = owner
            else:
                lines.append(quarantine.take(pointer, "it pointed git elsewhere"))
                common = gitdir
        if common not in known and common not in new_commons:
            new_commons.append(common)
        worktree_config = os.path.join(gitdir, "config.worktree")
        if os.path.lexists(worktree_config) and writable(worktree_config):
            lines += scrub_config(worktree_config, quarantine, git)
        unguarded += [pointer, worktree_config]
    for common in new_commons:
        config = os.path.join(common, "config")
        if os.path.lexists(config) and writable(config):
            lines += scrub_config(config, quarantine, git)
        hooks = os.path.join(common, "hooks")
        if os.path.lexists(hooks) and writable(hooks):
            lines += quarantine_hooks(hooks, quarantine)
        unguarded += [config, hooks]
    unsafe = list(quarantine.failed)
    skipped = max(layout.skipped, state.get("skipped", 0))
    if skipped:
        unsafe.append(
            quarantine.failure(
                f"git: {skipped} more repositories git would reach were not audited "
                f"(the audit follows {MAX_REPOSITORIES} in all, submodules {MAX_NESTING} deep)"
            )
        )
        lines.append(unsafe[-1])
    if not unsafe:
        watch = watch_facts(layout) + _source_facts(unguarded)
        state["watch"] = watch + _search_facts(searched.facts(), watch, state.get("seeded", {}))
        if extra:
            state["starts"] = [*state.get("starts", ()), *extra]
    return Audit(tuple(lines), tuple(unsafe))


def _source_facts(paths: Iterable[str]) -> list[Fact]:
    """Facts on sources no mount protects (a directory by its listing, a file by its content)."""
    facts: list[Fact] = []
    for path in dict.fromkeys(paths):
        if os.path.isdir(path) and not os.path.islink(path):
            facts.append(("l", path, checks.listing(path)))
        else:
            facts.append(("c", path, checks.contents(path)))
            facts.append(("i", path, checks.identity(path)))
    return facts


def quarantine_hooks(hooks: str, quarantine: Quarantine) -> list[str]:
    """Move out every hook but git's own inert ``*.sample`` files (a symlinked or non-directory
    ``hooks`` goes as a whole)."""
    if os.path.islink(hooks) or not os.path.isdir(hooks):
        return [quarantine.take(hooks, "not git's own hooks directory")]
    lines = []
    try:
        with os.scandir(hooks) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return []
    for name in names:
        path = os.path.join(hooks, name)
        if name.endswith(".sample") and os.path.isfile(path) and not os.path.islink(path):
            continue
        lines.append(quarantine.take(path, "a hook written in the sandbox"))
    return lines
