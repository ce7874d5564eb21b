"""Which host unix sockets a sandbox would see, from the kernel's own table (``/proc/net/unix``).

``connect()`` works through a read-only mount, so every socket a sandbox can see by path is a way
out of it: a container engine, an IDE's control socket, an ssh or gpg agent, a database. Scanning
the exposed directories finds such sockets only as deep as the scan goes; the kernel's table lists
every socket bound in this network namespace, however deep, in one read. The Linux platform masks
the ones :func:`visible_sockets` returns, and egg exec's cache recomputes that list before a
cached launch runs (a socket bound since then makes the entry stale).

What the sandbox sees is described by *decisions*: ``(root, state)`` pairs, one per mount the
platform makes, in the order it makes them; the last one at or above a path decides, as the mounts
themselves do. ``state`` is ``"rw"``, ``"ro"`` or ``"hidden"`` (a tmpfs, a mask, egg's own
directories); a path under none is hidden. Decisions are made on resolved paths. A socket is also
looked for at every other place the host mounts its file system (bind-mount aliases, from
``/proc/self/mountinfo``).

Not found here: sockets bound in another network namespace (inside a container) or by a relative
path, sockets whose directory was renamed after they were bound (or bound through a path the user
cannot resolve), other hard links to a socket, and sockets bound after a launch. The platform's
directory scans cover the first ones near the top of exposed trees; it pins the directories above
each masked socket and guards symlinks on its path, so that a sandbox cannot move one away; a
socket bound while a sandbox runs is that sandbox's to reach, move or link (a documented limit).

This module imports only C-level standard modules: egg exec's cache uses it before anything else
is loaded.
"""

from __future__ import annotations

import os
import stat

from egg_core import pathrules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    Decisions = Sequence[tuple[str, str]]

PROC_NET_UNIX = "/proc/net/unix"
MOUNTINFO = "/proc/self/mountinfo"
ACL_XATTR = "system.posix_acl_access"


def parse_table(text: str) -> list[str]:
    """Absolute socket paths in the text of ``/proc/net/unix``, in order, without duplicates.

    Each line is ``Num RefCount Protocol Flags Type St Inode [Path]``; the path is printed raw, so
    it may hold spaces (kept) and cannot be trusted to be well-formed (anything not absolute is
    skipped: unnamed sockets, abstract ones shown as ``@name``, relative binds). Lines end at
    ``\\n`` only; a name holding a newline cannot be read back (and is not absolute after it).
    """
    found: dict[str, None] = {}
    for line in text.split("\n")[1:]:
        fields = line.split(" ", 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found[fields[7]] = None
    return list(found)


def bound_paths(table: str = PROC_NET_UNIX) -> list[str] | None:
    """The absolute paths of the unix sockets bound in this network namespace; None when the
    table cannot be read (no /proc, not Linux)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            return parse_table(handle.read())
    except OSError:
        return None


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    return any(pathrules.under(path, root) for root in roots)


def shown(path: str, decisions: Decisions) -> bool:
    """Whether the sandbox sees ``path`` (a resolved path): the last decision above it says."""
    return Judge(decisions).state(path) != "hidden"


class Judge:
    """The state of many paths under the same decisions."""

    def __init__(self, decisions: Decisions) -> None:
        self.rules = [(root, root.rstrip("/") + "/", state) for root, state in reversed(decisions)]

    def state(self, path: str) -> str:
        for root, prefix, state in self.rules:
            if path == root or path.startswith(prefix):
                return state
        return "hidden"


def connectable(st: os.stat_result, path: str, uid: int, gids: Sequence[int]) -> bool:
    """Whether ``uid`` may connect to the socket (write permission), judged as the kernel does
    without capabilities. A POSIX ACL counts as "may": it is not read, so it is not trusted."""
    if uid == st.st_uid:
        allowed = bool(st.st_mode & stat.S_IWUSR)
    elif st.st_gid in gids:
        allowed = bool(st.st_mode & stat.S_IWGRP)
    else:
        allowed = bool(st.st_mode & stat.S_IWOTH)
    if allowed:
        return True
    try:
        os.getxattr(path, ACL_XATTR, follow_symlinks=False)
    except OSError:
        return False
    return True


def _unescape(field: str) -> str:
    r"""mountinfo escapes space, tab, newline and backslash as \040, \011, \012 and \134."""
    if "\\" not in field:
        return field
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mounts(mountinfo: str = MOUNTINFO) -> list[tuple[str, str, str]]:
    """(device, root within its file system, mount point) of each mount, in the table's order."""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            lines = handle.read().split("\n")
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            found.append((fields[2], _unescape(fields[3]), _unescape(fields[4])))
    return found


def aliased_devices(table: Sequence[tuple[str, str, str]]) -> set[str]:
    """Devices the host mounts more than once with nested roots: where bind-mount aliases are."""
    roots: dict[str, list[str]] = {}
    for device, root, _ in table:
        roots.setdefault(device, []).append(root)
    return {
        device
        for device, found in roots.items()
        if any(i != j and under(a, (b,)) for i, a in enumerate(found) for j, b in enumerate(found))
    }


def aliases(real: str, table: Sequence[tuple[str, str, str]], devices: set[str]) -> list[str]:
    """Other paths at which the host mounts the file that ``real`` names (bind mounts), when
    the mount holding it is of one of ``devices`` (see :func:`aliased_devices`)."""
    home: tuple[str, str, str] | None = None
    for entry in table:  # the deepest mount holding it; the last one listed at equal depth
        if under(real, (entry[2],)) and (home is None or len(entry[2]) >= len(home[2])):
            home = entry
    if home is None or home[0] not in devices:
        return []
    device, root, point = home
    inside = os.path.normpath(os.path.join(root, os.path.relpath(real, point)))
    found = []
    for other_device, other_root, other_point in table:
        if other_device == device and under(inside, (other_root,)):
            alias = os.path.normpath(os.path.join(other_point, os.path.relpath(inside, other_root)))
            if alias != real:
                found.append(alias)
    return found


def visible_sockets(
    decisions: Decisions,
    uid: int,
    gids: Sequence[int],
    table: str = PROC_NET_UNIX,
    mountinfo: str = MOUNTINFO,
) -> tuple[str, ...] | None:
    """Sorted resolved paths of the bound sockets that a sandbox described by ``decisions`` would
    see and that ``uid`` may connect to, each also at its bind-mount aliases; None when the table
    cannot be read."""
    paths = bound_paths(table)
    if paths is None:
        return None
    return judge_sockets(paths, Judge(decisions), uid, gids, mountinfo)


def judge_sockets(
    paths: Iterable[str], judge: Judge, uid: int, gids: Sequence[int], mountinfo: str = MOUNTINFO
) -> tuple[str, ...]:
    """:func:`visible_sockets` for bound ``paths`` already read from the table."""
    parents: dict[str, str] = {}  # sockets share directories: resolve each directory once
    found: set[str] = set()
    mount_table: list[tuple[str, str, str]] | None = None
    devices: set[str] = set()
    for path in paths:
        parent, name = os.path.split(path)
        if parent not in parents:
            parents[parent] = os.path.realpath(parent)
        real = os.path.join(parents[parent], name)
        visible = judge.state(real) != "hidden"
        if not visible:  # matters only if a bind mount shows it elsewhere
            if mount_table is None:
                mount_table = mounts(mountinfo)
                devices = aliased_devices(mount_table)
            if not devices:
                continue
        try:
            st = os.lstat(real)
        except OSError:
            continue  # unlinked, or moved, since it was bound
        if not stat.S_ISSOCK(st.st_mode) or not connectable(st, real, uid, gids):
            continue
        if visible:
            found.add(real)
        if mount_table is None:
            mount_table = mounts(mountinfo)
            devices = aliased_devices(mount_table)
        if not devices:
            continue
        for alias in aliases(real, mount_table, devices):
            try:
                same = os.path.samestat(os.lstat(alias), st)
            except OSError:
                continue
            if same and judge.state(alias) != "hidden":
                found.add(alias)
    return tuple(sorted(found))
