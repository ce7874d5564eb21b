"""The pathname unix sockets bound on this host, from the kernel's own table (``/proc/net/unix``).

``connect()`` works through a read-only mount, so every listening socket a sandbox can see by path
is a way out of it: a container engine, an IDE's control socket, an ssh or gpg agent, a database.
Scanning the exposed directories finds such sockets only as deep as the scan goes; the kernel's
table lists every socket bound in this network namespace, however deep, in one read. The Linux
platform masks the ones the sandbox would see, and egg exec's cache re-reads the table before a
cached launch runs (a socket bound since then makes the entry stale).

The table cannot list sockets bound in another network namespace (inside a container) or bound by
a relative path; the platform's directory scans still cover those near the top of exposed trees.

This module imports only C-level standard modules: egg exec's cache uses it before anything else
is loaded.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

PROC_NET_UNIX = "/proc/net/unix"


def parse_table(text: str) -> list[str]:
    """Absolute socket paths in the text of ``/proc/net/unix``, in order, without duplicates.

    Each line is ``Num RefCount Protocol Flags Type St Inode [Path]``; the path is printed raw, so
    it may hold spaces (kept) and cannot be trusted to be well-formed (anything not absolute is
    skipped: unnamed sockets, abstract ones shown as ``@name``, relative binds).
    """
    found: dict[str, None] = {}
    for line in text.splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found[fields[7]] = None
    return list(found)


def bound_paths(table: str = PROC_NET_UNIX) -> list[str] | None:
    """The absolute paths of the unix sockets bound in this network namespace; None when the
    table cannot be read (no /proc, not Linux)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as handle:
            return parse_table(handle.read())
    except OSError:
        return None


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def relevant(excluded: Iterable[str], table: str = PROC_NET_UNIX) -> tuple[str, ...] | None:
    """Sorted bound socket paths outside the ``excluded`` roots (compared both as bound and as
    resolved now): what a launch's socket masks depend on."""
    paths = bound_paths(table)
    if paths is None:
        return None
    roots = tuple(excluded)
    return tuple(
        sorted(
            path
            for path in paths
            if not under(path, roots) and not under(os.path.realpath(path), roots)
        )
    )
