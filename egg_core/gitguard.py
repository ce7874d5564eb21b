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
import re
import stat
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core import execcache as ec
from egg_core import pathrules
from egg_core.gitindex import gitlinks
from egg_core.policy import SEED_DIRECTORY, EffectivePolicy, FsEntry
from egg_core.quarantine import Quarantine

SOURCE = "egg: git"
#: what ``.git/commondir`` holds while a run protects it: git reads it as "this directory"
COMMONDIR_SEED = ".\n"
#: bounds on the walk through submodules: a sandbox must not make launches slow
MAX_REPOSITORIES = 128
MAX_NESTING = 8
#: a gitfile or commondir longer than this is not a path git wrote
MAX_POINTER_BYTES = 4096

#: configuration keys a repository the sandbox created may keep: (section, has subsection,
#: key), lower case. They describe data (formats, remotes, branches, identity), never a program
#: to run; every other key — core.fsmonitor, core.hooksPath, core.sshCommand, core.pager,
#: alias.*, filter.*, diff.*.textconv, credential.*, include.path, url.*.insteadOf, … and any
#: key a later git adds — is dropped.
SAFE_KEYS = frozenset(
    [
        *(
            ("core", False, key)
            for key in (
                "repositoryformatversion",
                "filemode",
                "bare",
                "logallrefupdates",
                "ignorecase",
                "precomposeunicode",
                "symlinks",
                "autocrlf",
                "eol",
                "safecrlf",
                "quotepath",
                "checkstat",
                "trustctime",
                "sparsecheckout",
                "sparsecheckoutcone",
                "worktree",
                "untrackedcache",
                "splitindex",
                "commitgraph",
                "multipackindex",
                "abbrev",
                "compression",
                "loosecompression",
                "bigfilethreshold",
            )
        ),
        *(
            ("extensions", False, key)
            for key in (
                "objectformat",
                "refstorage",
                "worktreeconfig",
                "preciousobjects",
                "partialclone",
                "noop",
            )
        ),
        *(
            ("remote", True, key)
            for key in (
                "url",
                "pushurl",
                "fetch",
                "push",
                "tagopt",
                "mirror",
                "prune",
                "promisor",
                "partialclonefilter",
                "skipdefaultupdate",
                "skipfetchall",
            )
        ),
        *(
            ("branch", True, key)
            for key in ("remote", "merge", "rebase", "pushremote", "description")
        ),
        *(
            ("submodule", True, key)
            for key in ("url", "active", "branch", "ignore", "fetchrecursesubmodules", "shallow")
        ),
        ("submodule", False, "active"),
        ("user", False, "name"),
        ("user", False, "email"),
        ("init", False, "defaultbranch"),
        ("pull", False, "rebase"),
        ("pull", False, "ff"),
        ("push", False, "default"),
        ("push", False, "autosetupremote"),
        ("fetch", False, "prune"),
        ("gc", False, "auto"),
        ("lfs", False, "repositoryformatversion"),
        ("merge", False, "conflictstyle"),
        ("rerere", False, "enabled"),
        ("color", False, "ui"),
    ]
)

#: a fact as :mod:`egg_core.execcache` records it: (kind, path, observed value)
Fact = tuple[Any, ...]


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


def find_layout(starts: Iterable[str]) -> Layout:
    """The repositories git reaches from ``starts``: for each, the repository enclosing it
    (found as git does, walking up), its linked worktrees, and its populated submodules,
    recursively (at most :data:`MAX_NESTING` deep and :data:`MAX_REPOSITORIES` in all)."""
    found = _Walk()
    for start in starts:
        top = _enclosing_worktree(start, found.probed)
        if top is not None:
            found.repository(top, 0)
    return Layout(
        dotgits=tuple(found.dotgits),
        gitdirs=tuple(found.gitdirs),
        commons=tuple(found.commons),
        probed=tuple(dict.fromkeys(found.probed)),
        indexes=tuple(found.indexes),
        worktree_lists=tuple(found.worktree_lists),
    )


def _enclosing_worktree(start: str, probed: list[str]) -> str | None:
    current = os.path.normpath(start)
    while True:
        candidate = os.path.join(current, ".git")
        probed.append(candidate)
        if os.path.lexists(candidate):
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

    def repository(self, worktree: str, nesting: int) -> None:
        if len(self.gitdirs) >= MAX_REPOSITORIES or nesting > MAX_NESTING:
            return
        dotgit = os.path.join(worktree, ".git")
        gitdir = resolve_dotgit(dotgit)
        if gitdir is None or gitdir in self.gitdirs:
            return
        self.dotgits.append(dotgit)
        self.gitdirs.append(gitdir)
        common = common_dir(gitdir)
        if common not in self.commons:
            self.commons.append(common)
            listing = os.path.join(common, "worktrees")
            self.worktree_lists.append(listing)
            for linked in _subdirectories(listing):
                if linked not in self.gitdirs and len(self.gitdirs) < MAX_REPOSITORIES:
                    self.gitdirs.append(linked)
        index = os.path.join(gitdir, "index")
        self.indexes.append(index)
        for link in gitlinks(index, hash_bytes(common)):
            sub = os.path.normpath(os.path.join(worktree, link))
            if not pathrules.under(sub, worktree) or sub == worktree:
                continue  # an index entry with ".." in it: not a path git would follow
            self.probed.append(os.path.join(sub, ".git"))
            if os.path.lexists(os.path.join(sub, ".git")):
                self.repository(sub, nesting + 1)


def resolve_dotgit(dotgit: str) -> str | None:
    """The git directory a ``.git`` entry stands for: itself (resolved) when it is a directory,
    the ``gitdir:`` it names when it is a file; None when it is neither."""
    try:
        st = os.stat(dotgit)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return os.path.realpath(dotgit)
    if not stat.S_ISREG(st.st_mode):
        return None
    text = _read_pointer(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = os.path.join(os.path.dirname(dotgit), text[len("gitdir:") :].strip())
    real = os.path.realpath(target)
    return real if os.path.isdir(real) else None


def common_dir(gitdir: str) -> str:
    """Where a git directory's shared half lives: what its ``commondir`` says, else itself."""
    pointer = os.path.join(gitdir, "commondir")
    text = _read_pointer(pointer) if os.path.isfile(pointer) else None
    if not text:
        return gitdir
    real = os.path.realpath(os.path.join(gitdir, text.strip()))
    return real if os.path.isdir(real) else gitdir


def _read_pointer(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_POINTER_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_POINTER_BYTES:
        return None
    return data.decode("utf-8", "surrogateescape").strip("\r\n")


def _subdirectories(path: str) -> list[str]:
    try:
        with os.scandir(path) as entries:
            return sorted(
                os.path.realpath(entry.path)
                for entry in entries
                if entry.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _config_mentions(common: str, pattern: str) -> bool:
    try:
        with open(os.path.join(common, "config"), "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(pattern, text, re.IGNORECASE) is not None


def hash_bytes(common: str) -> int:
    """20 for a SHA-1 repository, 32 for a SHA-256 one (``extensions.objectFormat``)."""
    return 32 if _config_mentions(common, r"objectformat\s*=\s*sha256") else 20


# --- during the run: protections ---------------------------------------------------------------


Writable = Callable[[str], bool]


def mounted_rules(policy: EffectivePolicy) -> list[tuple[str, str]]:
    return pathrules.mounted_rules((e.path, e.mode) for e in policy.fs)


writable_under = pathrules.writable_under


def protections(layout: Layout, writable: Writable) -> list[FsEntry]:
    """The read-only entries (with seeds for what is missing) that keep every configuration and
    hook source of ``layout`` out of the sandbox's reach."""
    entries: list[FsEntry] = []

    def protect(path: str, why: str, seed: str | None) -> None:
        if os.path.lexists(path):
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
        wants_worktree_config = _config_mentions(common_dir(gitdir), r"worktreeconfig")
        protect(
            os.path.join(gitdir, "config.worktree"),
            "per-worktree configuration",
            "" if wants_worktree_config else None,
        )
    for dotgit in layout.dotgits:
        if os.path.isfile(dotgit) and not os.path.islink(dotgit) and writable(dotgit):
            protect(dotgit, "names the git directory the host's git uses here", None)
    return list(dict.fromkeys(entries))


@attrs.frozen
class GitGuard:
    """What one launch needs from the guard: its protections, and the state to audit against."""

    entries: tuple[FsEntry, ...]
    state: dict[str, Any]


def plan(policy: EffectivePolicy) -> GitGuard:
    """The guard for a launch of ``policy``: protections now, and what :func:`audit` compares
    with afterwards (plain data: it travels in the exec cache and the session's files)."""
    ruled = mounted_rules(policy)
    writable = writable_under(ruled)
    starts = [policy.cwd]
    starts += [
        e.path for e in policy.fs if e.mode in pathrules.WRITABLE_MODES and os.path.isdir(e.path)
    ]
    layout = find_layout(dict.fromkeys(starts))
    state = {
        "starts": list(dict.fromkeys(starts)),
        "ruled": ruled,
        "known": sorted({*layout.gitdirs, *layout.commons}),
        "watch": watch_facts(layout),
    }
    return GitGuard(tuple(protections(layout, writable)), state)


def watch_facts(layout: Layout) -> list[Fact]:
    """What must stay the same for the layout to stay the same: where ``.git`` was looked for,
    what gitfiles and ``commondir`` files say, the indexes (a new gitlink), the ``worktrees/``
    listings (a new linked worktree). A missing ``commondir`` is held by a placeholder during
    the run: missing or holding the seed is the same."""
    facts: list[Fact] = [("i", path, ec.identity(path)) for path in layout.probed]
    facts += [("c", path, ec.contents(path)) for path in layout.dotgits if os.path.isfile(path)]
    for gitdir in layout.gitdirs:
        pointer = os.path.join(gitdir, "commondir")
        if os.path.lexists(pointer):
            facts.append(("c", pointer, ec.contents(pointer)))
        else:
            facts.append(("s", pointer, COMMONDIR_SEED))
    facts += [("c", path, ec.contents(path)) for path in layout.indexes]
    facts += [("l", path, ec.listing(path)) for path in layout.worktree_lists]
    return facts


# --- after the run: the audit ------------------------------------------------------------------


def changed(state: dict[str, Any]) -> bool:
    """Whether anything a new repository would change has changed since :func:`plan` (a few
    ``stat`` calls; standard library only, so the exec cache's fast path can call it)."""
    return ec.stale_fact(state.get("watch", ())) is not None


def audit(state: dict[str, Any], egg_home: Path, git: str | None = None) -> list[str]:
    """Neutralize the configuration and hook sources of repositories that appeared during the
    run, where the sandbox could have written them; one line per thing removed.

    ``state`` is updated in place to what was seen, sources of the new repositories included
    (nothing protects those, so any later change to them must bring the audit back): a session
    calls this again whenever :func:`changed` says so, and only then.
    """
    if not changed(state):
        return []
    writable = writable_under([(str(r[0]), str(r[1])) for r in state.get("ruled", ())])
    known = set(state.get("known", ()))
    layout = find_layout(state.get("starts", ()))
    quarantine = Quarantine(egg_home, "git")
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
                _write_exclusive(pointer, b"../..\n")
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
    state["watch"] = watch_facts(layout) + _source_facts(unguarded)
    return lines


def _source_facts(paths: Iterable[str]) -> list[Fact]:
    """Facts on sources no mount protects (a directory by its listing, a file by its content)."""
    facts: list[Fact] = []
    for path in dict.fromkeys(paths):
        if os.path.isdir(path) and not os.path.islink(path):
            facts.append(("l", path, ec.listing(path)))
        else:
            facts.append(("c", path, ec.contents(path)))
            facts.append(("i", path, ec.identity(path)))
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


def scrub_config(path: str, quarantine: Quarantine, git: str | None) -> list[str]:
    """Keep only :data:`SAFE_KEYS` in the configuration file at ``path``; the original goes to
    the quarantine. Parsed by the host's git itself (``git config --file``: includes off,
    nothing run), so egg and git cannot disagree on what the file says."""
    if os.path.islink(path) or not os.path.isfile(path):
        return [quarantine.take(path, "not a regular configuration file")]
    entries = read_config(path, git)
    if entries is None:
        return [quarantine.take(path, "a configuration git could not be asked to read")]
    kept = [(key, value) for key, value in entries if safe_key(key)]
    if len(kept) == len(entries):
        return []
    dropped = sorted({key for key, _ in entries if not safe_key(key)})
    target = quarantine.destination(path)
    try:
        original = _read_regular(path)
        _write_exclusive(str(target), original, 0o600)
        _replace(path, render_config(kept))
    except OSError as exc:
        return [f"git: could not rewrite {path}: {exc.strerror}"]
    return [
        f"git: dropped {', '.join(dropped)} from {path}: written in the sandbox, it could run "
        f"commands on the host (the original is in {target})"
    ]


def read_config(path: str, git: str | None) -> list[tuple[str, str | None]] | None:
    if git is None:
        return None
    env = {
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": "/nonexistent",
    }
    try:
        proc = subprocess.run(
            [git, "config", "--no-includes", "--file", path, "--list", "-z"],
            env=env,
            cwd="/",
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    entries: list[tuple[str, str | None]] = []
    for item in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        key, newline, value = item.partition("\n")
        entries.append((key, value if newline else None))
    return entries


def split_key(key: str) -> tuple[str, str | None, str]:
    """``remote.origin.url`` -> (``remote``, ``origin``, ``url``); the subsection may hold dots."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    return section.lower(), (subsection or None), name.lower()


def safe_key(key: str) -> bool:
    section, subsection, name = split_key(key)
    return (section, subsection is not None, name) in SAFE_KEYS


def render_config(entries: Sequence[tuple[str, str | None]]) -> bytes:
    """Write ``entries`` back in git's syntax, every value quoted and escaped."""
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in entries:
        section, subsection, name = split_key(key)
        if (section, subsection) != current:
            current = (section, subsection)
            if subsection is None:
                lines.append(f"[{section}]")
            else:
                escaped = subsection.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'[{section} "{escaped}"]')
        if value is None:
            lines.append(f"\t{name}")
        elif value and value == value.strip() and not any(c in value for c in '#;"\\\n\t\b'):
            lines.append(f"\t{name} = {value}")
        else:
            text = (
                value.replace("\\", "\\\\")
                .replace('"', '\\"')
                .replace("\n", "\\n")
                .replace("\t", "\\t")
                .replace("\b", "\\b")
            )
            lines.append(f'\t{name} = "{text}"')
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") if lines else b""


def _read_regular(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(21, "not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_exclusive(path: str, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` (never through a symlink, never over an existing name) holding ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _replace(path: str, data: bytes) -> None:
    """Write a fresh file beside ``path`` and rename it over (a planted name is never opened)."""
    directory, name = os.path.split(path)
    for _ in range(16):
        tmp = os.path.join(directory, f".{name}.egg-{os.urandom(6).hex()}")
        try:
            _write_exclusive(tmp, data)
        except FileExistsError:
            continue
        try:
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
        return
    raise FileExistsError(17, f"no free temporary name next to {path}")
