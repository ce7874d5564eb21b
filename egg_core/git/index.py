"""Read the gitlinks (submodule entries) out of a git index file, without running git.

The host's ``git status`` descends into every populated submodule the index lists — with or
without a ``.gitmodules`` entry — and runs git there with that repository's own configuration.
A sandbox can stage a gitlink (the index must be writable for commits), so egg's git guard needs
the list, and must get it without running git on a repository the sandbox shaped.

Formats 2, 3 and 4 (https://git-scm.com/docs/index-format); SHA-1 and SHA-256 object names.
Anything malformed ends the read with what was found so far: a truncated index lists fewer
gitlinks, never crashes the caller.
"""

from __future__ import annotations

import struct

GITLINK = 0o160000
#: ctime, mtime (8 bytes each), then dev ino mode uid gid size (4 bytes each)
_STAT_BYTES = 40
_MODE_OFFSET = 24
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF
#: an index bigger than this is not read (a sandbox could make it huge to slow egg down)
MAX_INDEX_BYTES = 256 << 20


def gitlinks(path: str, hash_bytes: int = 20) -> list[str]:
    """The paths (relative to the worktree) of the gitlink entries in the index at ``path``.

    ``hash_bytes`` is 20 for SHA-1 repositories and 32 for SHA-256 ones. A missing, unreadable,
    oversized or malformed index gives what could be read (often nothing).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INDEX_BYTES + 1)
    except OSError:
        return []
    if len(data) > MAX_INDEX_BYTES:
        return []
    return parse_gitlinks(data, hash_bytes)


def parse_gitlinks(data: bytes, hash_bytes: int = 20) -> list[str]:
    """:func:`gitlinks` on the bytes of an index."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return []
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return []
    found: list[str] = []
    offset = 12
    previous = b""
    fixed = _STAT_BYTES + hash_bytes + 2
    for _ in range(count):
        if offset + fixed > len(data):
            break
        (mode,) = struct.unpack_from(">I", data, offset + _MODE_OFFSET)
        (flags,) = struct.unpack_from(">H", data, offset + _STAT_BYTES + hash_bytes)
        cursor = offset + fixed
        if flags & _EXTENDED and version >= 3:
            cursor += 2
        if version == 4:
            strip, cursor = _varint(data, cursor)
            end = data.find(b"\0", cursor)
            if end < 0 or strip > len(previous):
                break
            name = previous[: len(previous) - strip] + data[cursor:end]
            offset = end + 1
        else:
            length = flags & _NAME_MASK
            end = cursor + length if length < _NAME_MASK else data.find(b"\0", cursor)
            if end < 0 or end > len(data):
                break
            name = data[cursor:end]
            # the entry is padded with 1-8 NULs to a multiple of eight bytes
            entry_length = end - offset
            offset += (entry_length + 8) & ~7
        previous = name
        if mode & 0o170000 == GITLINK:
            found.append(name.decode("utf-8", "surrogateescape"))
    return found


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """git's offset encoding (each continuation adds one before shifting); (value, next)."""
    if offset >= len(data):
        return 1 << 62, offset
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        if offset >= len(data):
            return 1 << 62, offset
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, offset
