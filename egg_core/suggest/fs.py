"""``egg policy suggest`` for files: the writes a traced run was refused, as ``fs`` rules.

``egg run --trace`` leaves strace's record of every syscall (``trace.log``, ``strace -f -tt``);
:mod:`egg_core.suggest.trace` reads it into the refusals — each path call that failed with EROFS,
EACCES or EPERM, what it tried to do (create, truncate, append, remove, rename, link, read) and
the path resolved against its process's working directory. A refused write is what a ``rw:``
rule would have allowed. This module judges each against the session's policy as egg.yaml gives
it now:

- a path under a ``deny``/``deny-write`` rule or one of egg's own protections (the built-in
  credential list, ``$EGG_HOME``, the configs, ``.git/hooks`` and the other git guard paths, an
  agent's code directories) is *refused on purpose*: listed with the rule's reason, never
  proposed;
- a write outside the home directory and the project, one that would need the home directory
  (or anything above it) writable, the top of the home, a directory holding the project or
  another repository, anything inside a git directory, a place the host runs or loads code from
  (:data:`HOST_RUNS_FROM`, :data:`RUN_FROM_NAMES`), a path reached through a host symlink, and a
  metadata-only change of a directory are listed apart with why (see :func:`too_broad`);
- a read refused with EACCES/EPERM is the host's own permissions (egg hides a denied path, it does
  not refuse it): listed apart, since no rule can grant more than the host allows.

These lists are advice for what is *shown*; what ``--apply`` writes is decided apart, by a scope
that is safe by construction (:mod:`egg_core.suggest.scope`): a list of the places a host runs
code from cannot be complete.

What is left becomes ``rw:DIR`` (the directory a file was to be created or removed in) or
``rw:FILE`` (an existing file written in place), deepest-first duplicates folded into their
ancestors. Paths inside the sandbox are host paths (the Linux platform binds every rule at its own
path); a relative path whose directory the record does not show is listed apart.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from egg_core import pathrules
from egg_core.suggest.trace import Refusal


@attrs.define
class FsUse:
    """One ``fs`` rule proposed, and the refusals behind it."""

    rule: str
    path: str
    count: int = 0
    first: str = ""
    last: str = ""
    examples: list[str] = attrs.Factory(list)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "path": self.path,
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "examples": self.examples,
        }


@attrs.frozen
class FsRefused:
    """A refused path never turned into a rule, and why."""

    path: str
    why: str
    count: int
    #: egg.yaml lets it through now (a rule added since the run: its suggestion applied)
    covered: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "why": self.why, "count": self.count, "covered": self.covered}


def classify(
    refusals: Sequence[Refusal],
    *,
    home: str,
    project: str,
    rules: Sequence[tuple[str, str, str]],
    protected: Sequence[tuple[str, str, str]],
) -> tuple[list[FsUse], list[FsRefused]]:
    """Rules to propose and paths listed apart. ``rules`` and ``protected`` are the session
    policy's (path, mode, source) entries: its fs rules, and egg's own protections."""
    uses: dict[str, FsUse] = {}
    apart: dict[tuple[str, str], int] = {}
    covered: set[tuple[str, str]] = set()

    def refuse(path: str, why: str) -> None:
        apart[(path, why)] = apart.get((path, why), 0) + 1

    shallow = _shallow(home, project)
    judged: dict[str, str | None] = {}  # target -> why not (the filesystem looked at once)
    for r in refusals:
        if not r.cwd_known:
            refuse(r.path, "relative to a directory the trace does not show")
            continue
        real_path = _resolved(r.path)
        why = _on_purpose(r.path, rules, protected) or (
            _on_purpose(real_path, rules, protected) if real_path else None
        )
        if why is not None:
            refuse(r.path, f"refused on purpose: {why}")
            continue
        if r.intent == "read":
            refuse(r.path, f"{r.errno} on a read: the host's own permissions (no rule grants more)")
            continue
        if shallow is not None:
            refuse(r.path, shallow)
            continue
        target = r.path
        in_place = (
            r.intent == "create"
            and (r.call.startswith("open") or r.call == "creat")
            and os.path.isfile(r.path)
        )
        if r.intent in ("create", "remove") and not in_place:
            # a new name (or one taken away) needs its directory writable; a file that exists
            # and is opened with O_CREAT is written in place
            target = os.path.dirname(r.path) or "/"
        if target not in judged:
            judged[target] = _judge(target, home, project, rules, protected)
        if judged[target] is None and r.call in METADATA_CALLS and os.path.isdir(target):
            refuse(
                r.path, "a metadata change (mode, owner, times) of a directory: no rule proposed"
            )
            continue
        if judged[target] is not None:
            why = str(judged[target]).replace("{errno}", r.errno)
            refuse(r.path, why)
            if judged[target] == WRITABLE_NOW and r.errno == "EROFS":
                covered.add((r.path, why))  # the sandbox's read-only mount, which a rule lifts now
            continue
        use = uses.setdefault(target, FsUse(f"rw:{_shown(target, home)}", target))
        use.count += 1
        use.first = min(use.first, r.time) if use.first else r.time
        use.last = max(use.last, r.time)
        example = f"{r.call} {_shown(r.path, home)}: {r.errno}"
        if example not in use.examples and len(use.examples) < 3:
            use.examples.append(example)
    kept = _fold_into_ancestors(uses)
    return kept, [
        FsRefused(p, why, n, (p, why) in covered) for (p, why), n in sorted(apart.items())
    ]


#: calls that change only a path's metadata: never a reason to make a directory writable
METADATA_CALLS = frozenset(
    {"chmod", "fchmodat", "chown", "lchown", "fchownat", "utimensat", "utime", "utimes"}
    | {"setxattr", "lsetxattr"}
)
#: directories under $HOME whose contents the host runs or reads as configuration of what it
#: runs (git's global config and hooks path, desktop autostart and launchers, user units, shell
#: and editor start-up, commands first on PATH): a sandbox that wrote there would run on the
#: host later. The user may still write such a rule by hand; egg never proposes one.
HOST_RUNS_FROM = (
    ".config/git",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/fish",
    ".config/nvim",
    ".config/direnv",
    ".local/bin",
    ".local/share/applications",
    ".local/share/systemd",
    ".vim",
    ".emacs.d",
    ".local/lib",  # site-packages: a .pth file there runs at every Python start
    ".local/share/nvim",
    ".local/share/gnome-shell",
    ".local/share/direnv",
    ".local/share/kservices5",
    ".config/plasma-workspace",
)
#: a directory with one of these names anywhere in the path holds what programs load or run
RUN_FROM_NAMES = frozenset(
    {"bin", "sbin", "site-packages", "dist-packages", "extensions", "plugins", "hooks"}
    | {"autostart", "startup", "init.d", "profile.d", "lib", "lib64", "libexec"}
)
#: how many entries of a proposed directory are looked at for repositories and egg.yaml files
SCAN_LIMIT = 500


def too_broad(target: str, home: str, project: str) -> str | None:
    """Why making ``target`` writable would give the sandbox more than the write it was
    refused, or None: the home directory or anything above it, a directory holding this
    project, anything at the top of the home (shells and tools read their start-up files there),
    a place the host runs code from (:data:`HOST_RUNS_FROM`), or a directory holding a
    repository or an egg.yaml (their hooks and policy would become writable)."""
    if pathrules.under(home, target):
        return "it would need your home directory (or one above it) writable"
    if pathrules.under(project, target) and target != project:
        return "it holds this project (and maybe others): name a directory inside it"
    inside_project = pathrules.under(target, project)
    if os.path.dirname(target) == home and not inside_project:
        return (
            "at the top of your home, where shells and tools read their start-up files: "
            "egg does not propose it"
        )
    for place in HOST_RUNS_FROM:
        where = os.path.join(home, place)
        if pathrules.under(target, where) or pathrules.under(where, target):
            return f"refused on purpose: the host runs what is in ~/{place}"
    below_home = os.path.relpath(target, home) if pathrules.under(target, home) else target
    loaded = RUN_FROM_NAMES.intersection(below_home.split(os.sep))
    if loaded and not inside_project:
        return f"refused on purpose: programs run or load what is in a {min(loaded)}/ directory"
    repository = _inside_repository(target, home)
    if repository is not None and not inside_project:
        return f"it is inside the repository {repository}: its hooks would become writable"
    # (the project's own .git and egg.yaml are guarded by egg whatever the rule says)
    holds = None if inside_project else _holds_policy_or_repository(target)
    if holds is not None:
        return f"it holds {holds}: its hooks or policy would become writable"
    return None


def _inside_repository(target: str, home: str) -> str | None:
    """The git directory ``target`` is in (a ``.git`` component, or a bare repository: HEAD,
    objects/ and refs/), looking up to the home or the root."""
    parts = target.split(os.sep)
    if ".git" in parts:
        return os.sep.join(parts[: parts.index(".git") + 1]) or "/"
    here = target
    while True:
        if all(os.path.lexists(os.path.join(here, name)) for name in ("HEAD", "objects", "refs")):
            return here
        if here in (home, "/") or not here:
            return None
        here = os.path.dirname(here)


def _holds_policy_or_repository(directory: str) -> str | None:
    """A ``.git`` or ``egg.yaml`` in ``directory`` or one level below it (bounded)."""
    names = (".git", "egg.yaml")
    for name in names:
        if os.path.lexists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= SCAN_LIMIT:
                    return f"more than {SCAN_LIMIT} entries (not all looked at)"
                if not entry.is_dir(follow_symlinks=False):
                    continue
                for name in names:
                    if os.path.lexists(os.path.join(entry.path, name)):
                        return os.path.join(entry.path, name)
    except OSError:
        return None
    return None


def _shallow(home: str, project: str) -> str | None:
    """Why nothing can be proposed at all: a home at the root or one level below it (``HOME=/``
    is a container's default), or a project that holds the home."""
    if pathrules.depth(home) < 2:
        return f"the home directory is {home}: egg proposes no rule there"
    if pathrules.under(home, project):
        return f"the project ({project}) holds the home directory: egg proposes no rule there"
    return None


def _resolved(path: str) -> str | None:
    """``path`` with every symlink resolved, or None when that cannot be done (a chain of
    links the sandbox built deeper than Python's realpath recursion goes)."""
    try:
        return os.path.realpath(path)
    except (OSError, RecursionError, ValueError):
        return None


def _judge(
    target: str,
    home: str,
    project: str,
    rules: Sequence[tuple[str, str, str]],
    protected: Sequence[tuple[str, str, str]],
) -> str | None:
    """Why ``rw:target`` is not proposed (``{errno}`` stands for the refusal's), or None."""
    if not expressible(target):
        return (
            "egg.yaml cannot hold this path (not UTF-8, a control character, or spaces at "
            "either end)"
        )
    real = _resolved(target)
    if real is None:
        return "its symlinks cannot be resolved: no rule proposed"
    if real != target:
        # bwrap mounts where a link leads: the rule would open that, not what it names
        return f"reached through a symlink on the host (to {real}): no rule proposed"
    # a deny above the directory (not only above the refused path): the rule would undo it
    why = _on_purpose(target, rules, protected)
    if why is not None:
        return f"refused on purpose: {why}"
    if not (pathrules.under(target, home) or pathrules.under(target, project)):
        return "outside your home and this project: egg does not propose that"
    broad = too_broad(target, home, project)
    if broad is not None:
        return broad
    if any(p == target and m == "ro" for p, m, _ in rules):
        # at one path the more restrictive rule wins: an rw: beside it would change nothing
        return f"egg.yaml says ro:{_shown(target, home)}: change that rule by hand"
    mode = pathrules.governing_mode(target, [(p, m) for p, m, _ in rules])
    if mode in pathrules.WRITABLE_MODES or mode == "cache":
        return WRITABLE_NOW
    return None


#: why a refused write is not proposed when egg.yaml already lets it through
WRITABLE_NOW = (
    "{errno}: writable under egg.yaml now (a rule added since the run, or the host's own "
    "permissions refused it)"
)


def expressible(path: str) -> bool:
    """A path an fs rule can name: UTF-8 text (strace's escapes of other bytes decode to lone
    surrogates), printable, no spaces at either end (egg.yaml strips them)."""
    return (
        path.isprintable()
        and path == path.strip()
        and not any("\udc80" <= ch <= "\udcff" for ch in path)
    )


def _on_purpose(
    path: str, rules: Sequence[tuple[str, str, str]], protected: Sequence[tuple[str, str, str]]
) -> str | None:
    """The reason of the deny/deny-write rule or protection that governs ``path``, if any."""
    for where, mode, source in protected:
        if mode in ("deny", "deny-write") and pathrules.under(path, where):
            return f"{mode}:{where} ({source})"
    rule = pathrules.governing_rule(path, rules)
    if rule is not None and rule[1] in ("deny", "deny-write"):
        where, mode, source = rule
        return f"{mode}:{where} ({source or 'egg.yaml'})"
    return None


def _fold_into_ancestors(uses: dict[str, FsUse]) -> list[FsUse]:
    """Each rule whose directory another proposed rule already covers folded into that one
    (parents looked up, so thousands of sibling rules stay cheap)."""
    kept: dict[str, FsUse] = {}
    for path in sorted(uses, key=lambda p: (pathrules.depth(p), p)):
        parent = path
        while parent not in kept and parent not in ("/", ""):
            parent = os.path.dirname(parent)
        if parent not in kept:
            kept[path] = uses[path]
            continue
        into, child = kept[parent], uses[path]
        into.count += child.count
        into.first = min(into.first, child.first)
        into.last = max(into.last, child.last)
        into.examples = (into.examples + child.examples)[:3]
    return sorted(kept.values(), key=lambda u: u.path)


def _shown(path: str, home: str) -> str:
    if pathrules.under(path, home) and path != home:
        return "~/" + os.path.relpath(path, home)
    return path
