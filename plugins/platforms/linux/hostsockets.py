"""Host unix sockets a sandbox could reach through the read-only root: found in the kernel's
socket table (any depth, every bind-mount alias) and by scanning exposed directories (sockets of
other network namespaces), so that :mod:`bwrap` can mask each one."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any

from egg_core import unix_sockets
from egg_core.errors import EnforcementError

from .trust import symlinks_on_the_way

#: sockets found only by the directory scans (other network namespaces, or dead) masked at most
MAX_SCANNED_MASKS = 200


#: what the table's socket masks of one launch rested on: the arguments of
#: ``unix_sockets.visible_sockets`` (decisions, uid, gids), what it returned, and the bound
#: paths that pass through a symlink in a writable directory
BoundRecord = tuple[tuple[Any, ...], tuple[str, ...] | None, tuple[str, ...]]


def table_sockets(
    decisions: Sequence[tuple[str, str]],
    seen: unix_sockets.Judge,
    named: set[str],
    bound: list[BoundRecord] | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """Host sockets from the kernel's table that the sandbox would see (``decisions``, from
    :func:`mount_decisions`, judged by ``seen``) and could connect to, at any depth and at their
    bind-mount aliases, less those in ``named``; the writable directories to bind read-only
    because they hold a symlink on a socket's bound path (replaced, it would send the next launch
    looking in the wrong place); and every bound path the table lists. Such a symlink directly
    in a writable rule's root cannot be guarded: the launch is refused.
    """
    uid = os.getuid()
    gids = tuple(sorted({os.getgid(), os.getegid(), *os.getgroups()}))
    table = unix_sockets.bound_paths()
    found = None if table is None else unix_sockets.judge_sockets(table, seen, uid, gids)
    roots = {root for root, _, _ in seen.rules}
    guards: list[str] = []
    linked: list[str] = []
    for path in table or ():
        for link in symlinks_on_the_way(path):
            parent = os.path.dirname(link)
            if seen.state(parent) != "rw":
                continue
            linked.append(path)
            if parent in roots:
                raise EnforcementError(
                    f"the host socket {path} is reached through {link}, a symlink in the "
                    f"writable {parent}: a sandbox could point it elsewhere and reach the socket "
                    "where it really is (bind the socket at a path without that symlink)"
                )
            if parent not in guards:
                guards.append(parent)
    if bound is not None:
        bound.append(((tuple(decisions), uid, gids), found, tuple(linked)))
    return [path for path in found or () if path not in named], guards, table or []


def host_sockets(
    directory: str, depth: int = 2, limit: int = 4000, visited: list[str] | None = None
) -> list[str]:
    """Unix sockets at most ``depth`` levels below a directory the sandbox will see.

    ``connect()`` works through a read-only mount, so a socket inside an exposed directory (a
    tmux server, an ssh agent, an IDE's control socket, a database) is a way out; each one found
    is covered with an empty file. The scan is bounded (``limit`` entries) so that exposing a
    large tree costs little; sockets deeper than ``depth`` are not found here, but any socket
    bound in this network namespace is also in the kernel's table (:func:`bound_socket_masks`).
    This scan is what finds the others: bound inside a container, or by a relative path.
    """
    found: list[str] = []
    seen = 0
    level = [directory]
    for _ in range(depth):
        below: list[str] = []
        for parent in level:
            if visited is not None:
                visited.append(parent)
            try:
                entries = os.scandir(parent)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return found
                    try:
                        if entry.is_symlink():
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            below.append(entry.path)
                        elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                            found.append(entry.path)
                    except OSError:
                        continue
        level = below
    return found
