"""Host unix sockets a sandbox could reach through the read-only root: found in the kernel's
socket table (any depth, every bind-mount alias) and by scanning exposed directories (sockets of
other network namespaces), so that :mod:`bwrap` can mask each one."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from egg_core import observe
from egg_core.errors import EnforcementError

from . import unix_sockets
from .trust import symlinks_on_the_way

#: sockets found only by the directory scans (other network namespaces, or dead) masked at most
MAX_SCANNED_MASKS = 200


#: the platform's own kind of fact (egg_core.observe.custom): the socket picture, recomputed
PICTURE_CHECKER = "egg_plugins.platforms.linux.hostsockets:socket_picture"
#: and which of the sockets the directory scans found are in the kernel's table
IN_TABLE_CHECKER = "egg_plugins.platforms.linux.hostsockets:in_table"

#: (visible sockets or None when the table cannot be read, writable directories to guard,
#: bound paths reached through a symlink in a writable directory, why the launch is refused)
Picture = tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...], str | None]


def socket_picture(
    decisions: tuple[tuple[str, str], ...], uid: int, gids: tuple[int, ...]
) -> Picture:
    """What the kernel's socket table means for a sandbox with these mount ``decisions``: the
    host sockets it would see and could connect to (any depth, every bind-mount alias); the
    writable directories to bind read-only because they hold a symlink on a socket's bound path
    (replaced, it would send the next launch looking in the wrong place), those paths, and a
    refusal when such a symlink is directly in a writable rule's root (it cannot be guarded).

    Both the full path and egg exec's cache compute it (the cache, to see that a cached
    launch's masks and guards are still the right ones): the whole of it is one fact.
    """
    return picture_of(unix_sockets.bound_paths(), decisions, uid, gids)


def picture_of(
    table: list[str] | None, decisions: tuple[tuple[str, str], ...], uid: int, gids: tuple[int, ...]
) -> Picture:
    """:func:`socket_picture` for a table already read."""
    seen = unix_sockets.Judge(decisions)
    found = None if table is None else unix_sockets.judge_sockets(table, seen, uid, gids)
    roots = {root for root, _, _ in seen.rules}
    guards: list[str] = []
    linked: list[str] = []
    refusal = None
    for path in table or ():
        for link in symlinks_on_the_way(path):
            parent = os.path.dirname(link)
            if seen.state(parent) != "rw":
                continue
            linked.append(path)
            if parent in roots and refusal is None:
                refusal = (
                    f"the host socket {path} is reached through {link}, a symlink in the "
                    f"writable {parent}: a sandbox could point it elsewhere and reach the socket "
                    "where it really is (bind the socket at a path without that symlink)"
                )
            if parent not in guards:
                guards.append(parent)
    return found, tuple(guards), tuple(linked), refusal


def in_table(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``paths`` the kernel's socket table lists."""
    table = set(unix_sockets.bound_paths() or ())
    return tuple(path for path in paths if path in table)


def table_sockets(
    decisions: Sequence[tuple[str, str]], named: set[str]
) -> tuple[list[str], list[str], list[str]]:
    """Host sockets from the kernel's table that the sandbox would see (``decisions``, from
    :func:`mount_decisions`) and could connect to, less those in ``named``; the writable
    directories to guard (see :func:`socket_picture`, recorded as the platform's own fact); and
    every bound path of that same reading of the table (for :func:`scanned_in_table`)."""
    uid = os.getuid()
    gids = tuple(sorted({os.getgid(), os.getegid(), *os.getgroups()}))
    arguments = (tuple(decisions), uid, gids)
    with observe.unrecorded():
        table = unix_sockets.bound_paths()
        picture = picture_of(table, *arguments)
    observe.custom(PICTURE_CHECKER, arguments, picture)
    found, guards, _, refusal = picture
    if refusal is not None:
        raise EnforcementError(refusal)
    return [path for path in found or () if path not in named], list(guards), table or []


def scanned_in_table(scanned: Sequence[str], table: Sequence[str]) -> set[str]:
    """Which sockets the scans found are in ``table`` (the reading the masks were made from),
    recorded as a fact: the cache asks the kernel's table again for just these."""
    paths = tuple(dict.fromkeys(scanned))
    if not paths:
        return set()
    listed = set(table)
    found = tuple(path for path in paths if path in listed)
    observe.custom(IN_TABLE_CHECKER, (paths,), found)
    return set(found)


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
                entries = observe.scandir(parent)
            except OSError:
                continue
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
