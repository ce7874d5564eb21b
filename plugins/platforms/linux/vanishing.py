"""Masks of files that vanished before bwrap mounted them.

A ``deny`` of a file is rendered as the empty file bound over it (``--ro-bind EMPTY PATH``), and
bwrap needs ``PATH`` to exist when it mounts: a mount point that is gone must be created, which
a read-only tree refuses, and bwrap aborts the launch ("Can't create file at …", "Can't mkdir
parents for …"). The files egg masks on its own come and go with other programs: a container
engine's control socket while its daemon restarts, an ssh-agent socket when the ``ssh -A``
session that made it ends. A busy host must not fail launches over them (issue: busy hosts).

So the masks are dropped for files gone right before each spawn, and a launch whose set-up
failed because one went in between is prepared again (the platform's retry check). Dropping is
no weaker than the mask it replaces: a denied file that does not exist when a launch is prepared
is not masked either (nothing is hidden that is not there), and a socket is judged by the socket
gate whatever is mounted over it. Standard library only: the exec cache's fast path uses it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Iterable, Sequence


def file_masks(argv: Sequence[str], empty_file: str) -> list[str]:
    """The paths ``argv`` (bwrap's arguments) masks with ``empty_file``."""
    masks = []
    for index in range(len(argv) - 2):
        if argv[index] == "--":
            break
        if argv[index] == "--ro-bind" and argv[index + 1] == empty_file:
            masks.append(argv[index + 2])
    return masks


def drop_vanished(argv: list[str], masks: Iterable[str], empty_file: str) -> list[str]:
    """``argv`` without the masks of ``masks`` whose file no longer exists (run right before
    each spawn, to leave bwrap the shortest window)."""
    masks = frozenset(masks)
    out: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            out += argv[index:]
            break
        if (
            word == "--ro-bind"
            and index + 2 < len(argv)
            and argv[index + 1] == empty_file
            and argv[index + 2] in masks
            and not os.path.lexists(argv[index + 2])
        ):
            index += 3
            continue
        out.append(word)
        index += 1
    return out


def any_vanished(masks: Iterable[str], said: str = "") -> bool:
    """Whether a masked file is gone, or was when bwrap tried to mount over it (its error names
    it; the file may be back by now): a set-up that failed then is worth preparing again."""
    paths = list(masks)
    if any(not os.path.lexists(path) for path in paths):
        return True
    return "bwrap:" in said and any(path in said for path in paths)
