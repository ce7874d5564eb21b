"""Which ssh-agent sockets exist: the fact :mod:`egg_core.sshagent` records, and its checker.

``egg exec``'s cache calls :func:`live_sockets` again before every cached launch (a fact of the
platform's own kind, :func:`egg_core.observe.custom`), so this module imports ``os`` alone: no
``glob`` (it brings ``fnmatch`` and ``re``), no ``pathlib``, nothing of egg's. Only ``*`` is a
wildcard in a pattern: the patterns are built from ``$HOME`` and ``$XDG_RUNTIME_DIR``, whose other
characters (``[``, ``?``) are taken as they are.
"""

from __future__ import annotations

import os


def live_sockets(sock: str | None, patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The existing paths among ``sock`` and the matches of ``patterns``, sorted."""
    found: set[str] = {sock} if sock else set()
    for pattern in patterns:
        found.update(matches(pattern))
    return tuple(sorted(p for p in found if os.path.lexists(p)))


def matches(pattern: str) -> list[str]:
    """The paths ``pattern`` (absolute; ``*`` in any component) names that exist. As ``glob``
    does, a ``*`` does not match a name's leading dot."""
    parts = pattern.split("/")
    current = ["/" if pattern.startswith("/") else ""]
    for index, part in enumerate(parts):
        if not part:
            continue
        last = index == len(parts) - 1
        following: list[str] = []
        for directory in current:
            if "*" not in part:
                path = os.path.join(directory, part)
                if os.path.lexists(path) if last else os.path.isdir(path):
                    following.append(path)
                continue
            try:
                names = os.listdir(directory or ".")
            except OSError:
                continue
            for name in sorted(names):
                path = os.path.join(directory, name)
                if _match(name, part) and (last or os.path.isdir(path)):
                    following.append(path)
        current = following
    return current


def _match(name: str, pattern: str) -> bool:
    """``name`` matches ``pattern``, in which only ``*`` (any run of characters) is special."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    pieces = pattern.split("*")
    first, last = pieces[0], pieces[-1]
    if len(name) < len(first) + len(last) or not name.startswith(first):
        return False
    if not name.endswith(last):
        return False
    position, end = len(first), len(name) - len(last)
    for piece in pieces[1:-1]:
        found = name.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True
