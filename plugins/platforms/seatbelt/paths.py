"""How a policy path is named to Seatbelt.

Seatbelt matches the path the kernel resolved, not the one a rule was written with: ``/tmp``,
``/var`` and ``/etc`` are symlinks into ``/private`` on macOS, and a rule on a symlink covers only
the link. So each rule names the resolved path first, then the path as written when it differs.
Deny rules also name the path on the Data volume (``/System/Volumes/Data/Users/...``), the other
spelling of every user file since macOS 10.15's firmlinks, so a denied file cannot be read
through it.

The resolver and the file-kind probe are injected: on macOS the platform resolves symlinks on the
host; everywhere else (``egg explain`` on Linux, golden tests) the fixed macOS aliases are applied
lexically, so a profile never depends on the machine that renders it.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable

#: path -> the path Seatbelt sees
Resolve = Callable[[str], str]
#: path -> "dir", "file" or "missing"
Probe = Callable[[str], str]

#: the top-level symlinks of every macOS installation
MACOS_ALIASES = (("/tmp", "/private/tmp"), ("/var", "/private/var"), ("/etc", "/private/etc"))
DATA_VOLUME = "/System/Volumes/Data"


def lexical_resolve(path: str) -> str:
    """``/tmp/x`` -> ``/private/tmp/x``: macOS's fixed aliases, without touching the host."""
    for link, target in MACOS_ALIASES:
        if path == link or path.startswith(link + "/"):
            return target + path[len(link) :]
    return path


def host_resolve(path: str) -> str:
    """Symlinks resolved on this host (a missing tail is kept as written); on macOS also the
    letter case stored on disk, which is what Seatbelt matches on a case-insensitive volume
    (``deny:~/.SSH`` must name ``~/.ssh`` to deny anything)."""
    real = os.path.realpath(path)
    return _disk_case(real) if sys.platform == "darwin" else real


def _disk_case(path: str) -> str:
    """``path`` with its longest existing prefix spelled as the kernel names it (F_GETPATH).

    Used only when the two spellings differ in letter case alone, so a surprise from the kernel
    (another volume's spelling, say) can never move a rule to an unrelated path.
    """
    import fcntl

    existing, tail = path, ""
    while existing != "/" and not os.path.lexists(existing):
        existing, name = os.path.split(existing)
        tail = os.path.join(name, tail) if tail else name
    try:
        fd = os.open(existing, getattr(os, "O_EVTONLY", os.O_RDONLY) | os.O_NONBLOCK)
    except OSError:
        return path
    try:
        raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))
    except OSError:
        return path
    finally:
        os.close(fd)
    found = os.fsdecode(raw.split(b"\0", 1)[0])
    if found == existing or found.casefold() != existing.casefold():
        return path
    return os.path.join(found, tail) if tail else found


def host_probe(path: str) -> str:
    """Whether ``path`` is a directory, something else, or nothing (yet) on this host."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "missing"
    return "dir" if stat.S_ISDIR(mode) else "file"


def spellings(path: str, resolve: Resolve, *, data_volume: bool = False) -> list[str]:
    """Every name under which Seatbelt may see ``path``, resolved name first."""
    real = resolve(path)
    names = [real, path]
    if data_volume:
        names.append(_on_data_volume(real))
    return [n for n in dict.fromkeys(names) if n]


def _on_data_volume(path: str) -> str:
    if path == "/" or path.startswith(("/System/", "/dev/")) or path == "/dev":
        return ""  # the sealed system volume and devfs have no Data-volume spelling
    return DATA_VOLUME + path


def ancestors(paths: Iterable[str]) -> list[str]:
    """The directories above each path, nearest first, without ``/``; duplicates dropped."""
    found: list[str] = []
    for path in paths:
        parent = os.path.dirname(path)
        while parent not in ("/", ""):
            found.append(parent)
            parent = os.path.dirname(parent)
    return list(dict.fromkeys(found))
