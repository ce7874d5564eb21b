"""What a sandbox could have shaped on the host, and what must hold still while it runs.

Before bubblewrap mounts anything, egg asks of every rule's path: does it pass through a symlink
in a directory the sandbox can write (planted there by an earlier run, :func:`untrusted_rules`)?
Which protected paths are missing and must be held by a placeholder so the sandbox cannot create
them (:func:`placeholder_paths`)? Which writable directories sit above a protected path and
must be pinned in place, so the sandbox cannot rename them away
(:func:`pinned_entries`)? The mounts themselves are :mod:`bwrap`'s job.
"""

from __future__ import annotations

import contextlib
import glob
import os
import stat
from collections.abc import Callable, Iterator, Sequence

import attrs

from egg_core.api import EffectivePolicy, FsEntry
from egg_core.api.fast import absent_or_seed
from egg_core.api.platform import governing_mode as _governing_mode
from egg_core.api.platform import observe

#: the source of the entries pinned_entries adds
PROTECTED_PIN = "egg: keeps a protected path in place"


@attrs.frozen
class PathFact:
    """What a path is on the host, after following symlinks."""

    real: str
    kind: str  # "dir" | "file" | "missing"


#: within :func:`one_look`: what each path was found to be, (its fact, its symlinks on the way)
_looked: dict[str, tuple[PathFact, list[str]]] | None = None


@contextlib.contextmanager
def one_look() -> Iterator[None]:
    """Within it, each path is looked at once: the trust analysis and the mounts rest on the same
    answer. Looked at twice, a directory swapped for a symlink in between (``ln -s ../../..``)
    would be no planted link to the analysis and the host's ``/`` to the rule's mount — a real
    path that no later check refuses."""
    global _looked
    outer = _looked
    if outer is None:
        _looked = {}
    try:
        yield
    finally:
        _looked = outer


def probe(path: str) -> PathFact:
    return _look(path)[0]


def _look(path: str) -> tuple[PathFact, list[str]]:
    """``path`` resolved once, component by component: its fact and the symlinks on the way
    (each spelled with its parent resolved)."""
    if _looked is not None and path in _looked:
        return _looked[path]
    found: list[str] = []
    if path.startswith("/"):
        current = "/"
        for part in path.strip("/").split("/"):
            if not part:
                continue
            candidate = os.path.join(current, part)
            if observe.islink(candidate):
                found.append(candidate)
                current = observe.realpath(candidate)
            else:
                current = candidate
    else:
        current = observe.realpath(path)
    try:
        mode = observe.stat(current).st_mode
    except OSError:
        fact = PathFact(current, "missing")
    else:
        fact = PathFact(current, "dir" if stat.S_ISDIR(mode) else "file")
    if _looked is not None:
        _looked[path] = (fact, found)
    return fact, found


def ruled_paths(policy: EffectivePolicy, *, everything: bool = False) -> list[tuple[str, str]]:
    """(resolved path, mode) of each rule that will be mounted: rules through a planted
    symlink are left out (unless ``everything``, used to find those rules in the first place)."""
    rules = [(e.path, probe(e.path).real, e.mode) for e in policy.fs if e.path != "/"]
    if everything:
        return [(real, mode) for _, real, mode in rules]
    untrusted = untrusted_rules(policy)
    return [(real, mode) for path, real, mode in rules if path not in untrusted]


def planted_link(path: str, ruled: Sequence[tuple[str, str]]) -> str | None:
    """The first symlink on the way to ``path`` whose directory the sandbox can write, if any.

    Such a symlink may have been planted by an earlier sandbox (``ln -s ../.ssh
    ~/.cache/claude``): following it would bind whatever it points at. Conservative on purpose:
    writability is judged with every rule resolved.
    """
    for link in symlinks_on_the_way(path):
        if _governing_mode(os.path.dirname(link), ruled) in ("rw", "rw-prefix"):
            return link
    return None


def untrusted_rules(policy: EffectivePolicy) -> dict[str, str]:
    """Rules that expose a path (rw, ro, deny-write) through a symlink the sandbox could have
    planted: path -> that symlink. They are skipped, never followed; deny rules still follow
    (hiding more is safe)."""
    ruled = ruled_paths(policy, everything=True)
    found: dict[str, str] = {}
    for entry in policy.fs:
        if entry.mode == "deny" or entry.path == "/":
            continue
        link = planted_link(entry.path, ruled)
        if link is not None:
            found[entry.path] = link
    return found


def placeholder_paths(policy: EffectivePolicy) -> list[tuple[str, str]]:
    """``(path, seed)`` of the ``deny-write`` paths that do not exist yet but that the sandbox
    could create, which the launch plants before bwrap starts (:mod:`.placeholders`).

    A missing ``./egg.yaml`` is the usual one: a sandbox that creates it has written the policy
    of the next run; it gets an empty file. egg's own protections say what their placeholder
    holds (``.git/commondir`` holds ``.``); a path that already holds its seed is a placeholder
    too (another run's, or one a crash left behind). Only paths whose directory exists and is
    writable inside the sandbox need one.
    """
    ruled = ruled_paths(policy)
    wanted = [(e.path, "") for e in policy.fs if e.mode == "deny-write"]
    wanted += [(e.path, e.seed) for e in policy.protected if e.seed is not None]
    found: dict[str, str] = {}
    for path, seed in wanted:
        if path in found:
            continue
        if not absent_or_seed(path, seed):
            observe.lstat_or_none(path)  # something real is there: it must stay
            continue
        observe.seed(path, seed)  # missing or already planted: the same launch
        parent = observe.realpath(os.path.dirname(path))
        if (
            observe.isdir(parent)
            and observe.access(parent, os.W_OK)
            and _governing_mode(parent, ruled) in ("rw", "rw-prefix")
        ):
            found[path] = seed
    return list(found.items())


def symlinks_on_the_way(path: str) -> list[str]:
    """The components of ``path`` that are symlinks (each spelled with its parent resolved)."""
    return list(_look(path)[1])


def _symlink_guards(policy: EffectivePolicy) -> tuple[list[str], list[str]]:
    """Writable directories holding a symlink on the way to an egg-protected or ``deny-write``
    path, and the problems where such a directory is a writable rule's own root.

    A symlink cannot be mounted over, so one the sandbox could replace (``ln -sfn evil conf``)
    redirects the protected path on the host. Its directory is made read-only; when that
    directory is the writable area itself (the workspace), the sandbox cannot be made safe and
    the launch is refused instead.
    """
    ruled = ruled_paths(policy)
    roots = {path for path, mode in ruled if mode in ("rw", "rw-prefix")}
    guards: list[str] = []
    problems: list[str] = []
    paths = [e.path for e in policy.protected]
    paths += [e.path for e in policy.fs if e.mode == "deny-write"]
    for path in paths:
        for link in symlinks_on_the_way(path):
            parent = os.path.dirname(link)
            if _governing_mode(parent, ruled) not in ("rw", "rw-prefix"):
                continue
            if parent in roots:
                problems.append(
                    f"{link} is a symlink in the writable {parent}, on the way to the "
                    f"protected {path}: the sandbox could point it elsewhere (replace the "
                    "symlink with what it points to)"
                )
            elif parent not in guards:
                guards.append(parent)
    return guards, problems


def symlink_problems(policy: EffectivePolicy) -> list[str]:
    """Protected paths this platform cannot keep in place (see :func:`_symlink_guards`)."""
    return list(dict.fromkeys(_symlink_guards(policy)[1]))


def pinned_entries(policy: EffectivePolicy) -> list[FsEntry]:
    """``policy.fs`` plus what keeps protected paths where they are.

    A bind-mounted file cannot be replaced, but the directory holding it could be renamed away
    and recreated with a different file (``mv conf conf2; mkdir conf; echo ... >
    conf/base.yaml``). A mount point cannot be renamed, so every writable ancestor of an
    egg-protected, ``deny``, ``deny-write`` or ``ro`` path is bound onto itself (as macOS's
    profile denies renaming them), and a writable directory holding a symlink on the way to one
    is bound read-only. The caller mounts by depth, so each bind lands after the rule that makes
    the directory writable and before any deeper rule.
    """
    ruled = ruled_paths(policy)
    mount_points = {path for path, _ in ruled}
    mount_points |= {probe(e.path).real for e in policy.protected}
    guards, _ = _symlink_guards(policy)
    guarded = [e.path for e in policy.protected]
    # deny too: a run that renamed the directory holding a denied path would leave the next
    # run's rule naming nothing, and the secret readable under its new name
    guarded += [e.path for e in policy.fs if e.mode in ("ro", "deny-write", "deny")]
    starts = [os.path.dirname(observe.realpath(path)) for path in guarded]
    starts += [os.path.dirname(guard) for guard in guards]
    added: dict[str, FsEntry] = {}

    def pin(start: str, writable: Callable[[str], bool], why: str = PROTECTED_PIN) -> None:
        parent = start
        while parent != "/":
            if (
                parent not in mount_points
                and parent not in added
                and observe.isdir(parent)
                and writable(parent)
            ):
                added[parent] = FsEntry("rw", parent, why)
            parent = os.path.dirname(parent)

    for start in starts:
        pin(start, lambda path: _governing_mode(path, ruled) in ("rw", "rw-prefix"))
    for guard in guards:
        added[guard] = FsEntry("ro", guard, "egg: holds a symlink to a protected path")
    return [*policy.fs, *sorted(added.values(), key=lambda e: e.path.count("/"))]


def prefix_siblings(path: str) -> list[str]:
    """``~/.claude`` -> ``~/.claude.json``, ``~/.claude.json.backup``...: same-prefix neighbours."""
    parent, name = os.path.split(path.rstrip("/"))
    return observe.glob_in(parent, glob.escape(name) + "?*", include_hidden=True)
