"""Where the host's git takes configuration and hooks from, found as git finds it.

Starting from a directory, git walks up to the first ``.git`` — a directory, or a *gitfile*
naming one (``gitdir: …``) — reads that git directory's ``commondir`` to find the shared half
(config, hooks, objects) and, for ``git status``, descends into every gitlink of the index whose
directory is populated. :func:`find_layout` does the same without running git (git would run the
very configuration the guard does not trust yet), and records every path whose change could
change the answer. Every look at the host goes through :mod:`egg_core.observe`, so what the search
rested on is also among the exec cache's facts for a launch it decided (after a run, with no
recorder active, the same calls cost what ``os`` costs).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable

import attrs

from egg_core import observe, pathrules
from egg_core.git.index import gitlinks
from egg_core.safeio import read_text

#: bounds on the walk through submodules: a sandbox must not make launches slow
MAX_REPOSITORIES = 128
MAX_NESTING = 8
#: a gitfile or commondir longer than this is not a path git wrote
MAX_POINTER_BYTES = 4096


@attrs.frozen
class Layout:
    """The git metadata reachable from some directories, as the host's git would find it."""

    #: ``.git`` entries found in worktrees (a directory or a gitfile), as spelled
    dotgits: tuple[str, ...] = ()
    #: resolved per-worktree git directories (holding HEAD, index, commondir)
    gitdirs: tuple[str, ...] = ()
    #: resolved common directories (holding config, hooks, objects)
    commons: tuple[str, ...] = ()
    #: every path whose change could change this layout: where ``.git`` was looked for (found
    #: or not), the indexes read for gitlinks, the ``worktrees/`` directories listed
    probed: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    worktree_lists: tuple[str, ...] = ()
    #: repositories git would reach that the walk did not follow (beyond :data:`MAX_NESTING`
    #: or :data:`MAX_REPOSITORIES`): nothing below them was looked at
    skipped: int = 0


def find_layout(starts: Iterable[str]) -> Layout:
    """The repositories git reaches from ``starts``: for each, the repository enclosing it
    (found as git does, walking up), its linked worktrees, and its populated submodules,
    recursively (at most :data:`MAX_NESTING` deep and :data:`MAX_REPOSITORIES` in all)."""
    found = _Walk()
    for start in starts:
        top = _enclosing_worktree(start, found.probed)
        if top is None:
            continue
        if observe.lexists(os.path.join(top, ".git")):
            found.repository(top, 0)
        else:
            found.bare(top)
    return Layout(
        dotgits=tuple(found.dotgits),
        gitdirs=tuple(found.gitdirs),
        commons=tuple(found.commons),
        probed=tuple(dict.fromkeys(found.probed)),
        indexes=tuple(found.indexes),
        worktree_lists=tuple(found.worktree_lists),
        skipped=found.skipped,
    )


#: what a directory holds when git takes it for a git directory itself (a bare repository)
GIT_DIR_MARKERS = ("HEAD", "objects", "refs")


def _enclosing_worktree(start: str, probed: list[str]) -> str | None:
    """The directory git settles on, walking up from ``start`` as git's discovery does: at each
    level first ``.git``, then the directory itself when it is a git directory (``HEAD``,
    ``objects``, ``refs``: a bare repository, which git uses before looking further up)."""
    current = os.path.normpath(start)
    while True:
        candidate = os.path.join(current, ".git")
        probed.append(candidate)
        if observe.lexists(candidate):
            return current
        markers = [os.path.join(current, name) for name in GIT_DIR_MARKERS]
        probed.extend(markers)
        if is_git_directory(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@attrs.define
class _Walk:
    dotgits: list[str] = attrs.Factory(list)
    gitdirs: list[str] = attrs.Factory(list)
    commons: list[str] = attrs.Factory(list)
    probed: list[str] = attrs.Factory(list)
    indexes: list[str] = attrs.Factory(list)
    worktree_lists: list[str] = attrs.Factory(list)
    skipped: int = 0

    def bare(self, directory: str) -> None:
        """A bare repository (or a git directory git was started in): its own git directory."""
        gitdir = observe.realpath(directory)
        if gitdir in self.gitdirs:
            return
        if len(self.gitdirs) >= MAX_REPOSITORIES:
            self.skipped += 1
            return
        self.gitdirs.append(gitdir)
        common = common_dir(gitdir)
        if common not in self.commons:
            self.commons.append(common)

    def repository(self, worktree: str, nesting: int) -> None:
        dotgit = os.path.join(worktree, ".git")
        gitdir = resolve_dotgit(dotgit)
        if gitdir is None or gitdir in self.gitdirs:
            return
        if len(self.gitdirs) >= MAX_REPOSITORIES or nesting > MAX_NESTING:
            self.skipped += 1
            return
        self.dotgits.append(dotgit)
        self.gitdirs.append(gitdir)
        common = common_dir(gitdir)
        if common not in self.commons:
            self.commons.append(common)
            listing = os.path.join(common, "worktrees")
            self.worktree_lists.append(listing)
            for linked in _subdirectories(listing):
                if linked in self.gitdirs:
                    continue
                if len(self.gitdirs) < MAX_REPOSITORIES:
                    self.gitdirs.append(linked)
                else:
                    self.skipped += 1
        index = os.path.join(gitdir, "index")
        self.indexes.append(index)
        for link in gitlinks(index, hash_bytes(common)):
            sub = os.path.normpath(os.path.join(worktree, link))
            if not pathrules.under(sub, worktree) or sub == worktree:
                continue  # an index entry with ".." in it: not a path git would follow
            self.probed.append(os.path.join(sub, ".git"))
            if observe.lexists(os.path.join(sub, ".git")):
                self.repository(sub, nesting + 1)


def is_git_directory(path: str) -> bool:
    """Whether git would take ``path`` itself for a git directory (more than git checks — HEAD's
    content — is not needed: taking one too many for a repository only audits it)."""
    return (
        observe.isfile(os.path.join(path, "HEAD"))
        and observe.isdir(os.path.join(path, "objects"))
        and observe.isdir(os.path.join(path, "refs"))
    )


def resolve_dotgit(dotgit: str) -> str | None:
    """The git directory a ``.git`` entry stands for: itself (resolved) when it is a directory,
    the ``gitdir:`` it names when it is a file; None when it is neither."""
    try:
        st = observe.stat(dotgit)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return observe.realpath(dotgit)
    if not stat.S_ISREG(st.st_mode):
        return None
    text = _read_pointer(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = os.path.join(os.path.dirname(dotgit), text[len("gitdir:") :].strip())
    real = observe.realpath(target)
    return real if observe.isdir(real) else None


def common_dir(gitdir: str) -> str:
    """Where a git directory's shared half lives: what its ``commondir`` says, else itself."""
    pointer = os.path.join(gitdir, "commondir")
    text = _read_pointer(pointer) if observe.isfile(pointer) else None
    if not text:
        return gitdir
    real = observe.realpath(os.path.join(gitdir, text.strip()))
    return real if observe.isdir(real) else gitdir


def _read_pointer(path: str) -> str | None:
    observe.content(path)
    text = read_text(path, MAX_POINTER_BYTES, "surrogateescape")
    return None if text is None else text.strip("\r\n")


def _subdirectories(path: str) -> list[str]:
    try:
        entries = observe.scandir(path)
    except OSError:
        return []
    return sorted(
        observe.realpath(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False)
    )


def config_mentions(common: str, pattern: str) -> bool:
    config = os.path.join(common, "config")
    observe.content(config)
    try:
        with open(config, "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(pattern, text, re.IGNORECASE) is not None


def hash_bytes(common: str) -> int:
    """20 for a SHA-1 repository, 32 for a SHA-256 one (``extensions.objectFormat``)."""
    return 32 if config_mentions(common, r"objectformat\s*=\s*sha256") else 20
