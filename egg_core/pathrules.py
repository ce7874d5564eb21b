"""The path arithmetic every filesystem decision shares: containment, depth, and which rule wins.

Policy resolution orders rules with it, the Linux platform mounts in that order, and egg's
host-side guards (git metadata, placeholders) ask it what a sandbox can write. They must agree —
a guard that thinks a directory is read-only while the mounts make it writable is an escape —
so the arithmetic lives here once.
"""

from __future__ import annotations

import os
from typing import Literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

#: a filesystem rule's mode (see egg_core.policy.FsEntry)
Mode = Literal["rw", "rw-prefix", "cache", "ro", "deny-write", "deny"]
#: at equal depth the more restrictive rule is applied last and wins
MODE_RANK = {"rw": 0, "rw-prefix": 0, "cache": 0, "ro": 1, "deny-write": 2, "deny": 3}
#: modes that let the sandbox write the *host's* path (``cache`` gives it another directory there)
WRITABLE_MODES = ("rw", "rw-prefix")


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it (plain string arithmetic on normalized paths)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def depth(path: str) -> int:
    """How many components deep ``path`` is (``/`` is 0)."""
    return path.rstrip("/").count("/")


def governing_rule(real: str, ruled: Iterable[Sequence[Any]]) -> Sequence[Any] | None:
    """The rule that decides ``real``: the deepest at or above it, the more restrictive one at
    equal depth. ``ruled`` holds (resolved path, mode, ...) tuples, returned as given; None when
    no rule covers ``real`` (only the read-only root does)."""
    best: tuple[int, int] | None = None
    chosen: Sequence[Any] | None = None
    for rule in ruled:
        path, mode = rule[0], rule[1]
        if under(real, path):
            key = (depth(path), MODE_RANK.get(mode, 0))
            if best is None or key >= best:
                best, chosen = key, rule
    return chosen


def governing_mode(real: str, ruled: Iterable[tuple[str, str]]) -> str | None:
    """The mode of :func:`governing_rule` for ``real`` (None: only the read-only root)."""
    rule = governing_rule(real, ruled)
    return None if rule is None else str(rule[1])


def mounted_rules(rules: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(resolved path, mode) of the rules that shape what a sandbox can write, from (path,
    mode) pairs: every writable rule, and the restrictive ones on paths that exist (a
    ``deny-write`` of a missing path mounts nothing; where the sandbox may not create it, a
    protection of its own says so)."""
    return [
        (os.path.realpath(path), mode)
        for path, mode in rules
        if mode in WRITABLE_MODES or os.path.lexists(path)
    ]


def writable_under(ruled: Iterable[Sequence[Any]]) -> Callable[[str], bool]:
    """Whether a sandbox with these (resolved) rules can write a host path: the rule that
    governs where the path resolves to is a writable one. The rules may be lists, as they come
    back from a session's or the exec cache's files."""
    rules = [(str(rule[0]), str(rule[1])) for rule in ruled]

    def writable(path: str) -> bool:
        return governing_mode(os.path.realpath(path), rules) in WRITABLE_MODES

    return writable
