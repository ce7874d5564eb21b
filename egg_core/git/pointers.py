"""Threat H/O: what the user's own git configuration points at, where the sandbox could write.

The git guard keeps a repository's ``config`` and ``hooks/`` read-only for the length of a run,
but configuration the user wrote can point elsewhere, and very often into the workspace:
``core.hooksPath = .husky/_`` (husky sets it in every project that uses it), ``include.path =
../shared.gitconfig``, ``includeIf.*.path``, and commands named by path (``core.fsmonitor =
./scripts/watchman-hook``, ``diff.x.textconv = tools/textconv``). A sandbox that writes there
runs its code in the host's next ``git commit`` or ``git status`` — a host tool's or the user's.

So the configuration git reads for each repository the guard found — the repository's own
``config`` and ``config.worktree``, the user's global files and the system file, and every file
they include, recursively — is read (by the host's git, includes off, nothing run), and every
path it names that the sandbox could write is protected for the run: an existing file or
directory read-only, a missing hooks directory held by an empty one. A relative hooks path is
taken from the worktree's top, as git does; an include from the including file's directory; any
other value that names an existing path, from the worktree's top. Naming too much only protects
more.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from egg_core import observe
from egg_core.git.config import read_config
from egg_core.git.layout import Layout
from egg_core.paths import expand_user

#: how deep includes are followed (git itself stops at 10)
MAX_INCLUDE_DEPTH = 10
#: a word of a value that may name a path
_WORD = re.compile(r"""[^\s"'`;|&<>(){}\[\],=]+""")

Pointer = tuple[str, str, bool]  # (path, why, a hooks directory)


def config_files(layout: Layout, home: str) -> list[str]:
    """The configuration files git reads for these repositories, before includes."""
    xdg = observe.getenv("XDG_CONFIG_HOME", "") or os.path.join(home, ".config")
    files = ["/etc/gitconfig", os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")]
    for common in layout.commons:
        files.append(os.path.join(common, "config"))
    for gitdir in layout.gitdirs:
        files.append(os.path.join(gitdir, "config.worktree"))
    return list(dict.fromkeys(files))


def pointers(layout: Layout, home: str, git: str | None) -> list[Pointer]:
    """Every path the configuration of ``layout`` names (see the module docstring)."""
    worktrees = [os.path.dirname(dotgit) for dotgit in layout.dotgits] or list(layout.gitdirs)
    found: list[Pointer] = []
    pending = [(path, 0) for path in config_files(layout, home)]
    seen: set[str] = set()
    while pending:
        path, depth = pending.pop(0)
        if path in seen or depth > MAX_INCLUDE_DEPTH:
            continue
        seen.add(path)
        observe.content(path)  # the exec cache re-reads what the protections rest on
        if not observe.isfile(path):
            continue
        entries = read_config(path, git) or []
        here = os.path.dirname(path)
        for key, value in entries:
            if not value:
                continue
            name = key.lower()
            if name == "include.path" or (name.startswith("includeif.") and name.endswith(".path")):
                target = _expand(value, home, here)
                found.append((target, f"{key} in {path} includes it", False))
                pending.append((target, depth + 1))
            elif name == "core.hookspath":
                for top in worktrees:
                    target = _expand(value, home, top)
                    found.append((target, f"{key} in {path}: git runs the hooks there", True))
            else:
                for word in _WORD.findall(value):
                    if "/" not in word and not word.startswith("~"):
                        continue
                    for top in worktrees:
                        target = _expand(word, home, top)
                        # a command is a file: a directory named (a local remote, a worktree)
                        # is data, and protecting it could take the workspace away
                        if observe.isfile(target):
                            found.append((target, f"{key} in {path} names it", False))
    return list(dict.fromkeys(found))


def _expand(value: str, home: str, base: str) -> str:
    return os.path.normpath(os.path.join(base, expand_user(value, Path(home))))


def sandbox_writable(pointed: Iterable[Pointer], writable: Callable[[str], bool]) -> list[Pointer]:
    """The pointers a sandbox could change: an existing path it can write, or a missing one
    whose directory it can write (it could create it)."""
    kept = []
    for pointer in pointed:
        path = pointer[0]
        if observe.lexists(path):
            if writable(path):
                kept.append(pointer)
        elif writable(os.path.dirname(path)):
            kept.append(pointer)
    return kept
