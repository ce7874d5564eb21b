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

from . import bindfds

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Iterable, Sequence


def _masks_at(argv: Sequence[str], empty_file: str, bwrap: str) -> list[int]:
    """Where ``argv`` binds ``empty_file`` over a path, read as bwrap reads its options (a
    wrapper before bwrap, prlimit's ``--`` and all, is not bwrap's: see :func:`.bindfds.options`);
    none when bwrap would read it otherwise (the pin then refuses the launch)."""
    try:
        found = bindfds.options(argv, bwrap)
    except bindfds.PinFailed:
        return []
    return [i for i in found if argv[i] == "--ro-bind" and argv[i + 1] == empty_file]


def file_masks(argv: Sequence[str], empty_file: str, bwrap: str) -> list[str]:
    """The paths ``argv`` (a command line that runs ``bwrap``) masks with ``empty_file``."""
    return [argv[i + 2] for i in _masks_at(argv, empty_file, bwrap)]


def drop_vanished(argv: list[str], masks: Iterable[str], empty_file: str, bwrap: str) -> list[str]:
    """``argv`` without the masks of ``masks`` whose file no longer exists (run right before
    each spawn, to leave bwrap the shortest window)."""
    masks = frozenset(masks)
    dropped = {
        i + k
        for i in _masks_at(argv, empty_file, bwrap)
        if argv[i + 2] in masks and not os.path.lexists(argv[i + 2])
        for k in range(3)
    }
    return [word for i, word in enumerate(argv) if i not in dropped]


def any_vanished(masks: Iterable[str], said: str = "") -> bool:
    """Whether a masked file is gone, or was when bwrap tried to mount over it (its error names
    it; the file may be back by now): a set-up that failed then is worth preparing again."""
    paths = list(masks)
    if any(not os.path.lexists(path) for path in paths):
        return True
    return "bwrap:" in said and any(path in said for path in paths)
