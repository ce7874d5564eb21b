"""Reading and writing files a sandbox may have shaped, from egg's host-side code (threat M).

The settings restore, the git guard and the agent-code guard all read files in directories the
sandbox could write, and write back into them. Here, once: a read never follows a symlink, never
blocks on a FIFO and stops at a size limit; a write creates a fresh name exclusively (a name the
sandbox planted is never opened) and a replacement is renamed over its target. Standard library
only: the exec cache's fast path restores settings too.
"""

from __future__ import annotations

import os
import stat

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def read_regular(path: str, limit: int, dir_fd: int | None = None) -> bytes:
    """The content of the regular file at ``path`` (relative to ``dir_fd`` if given).

    Raises OSError when it is a symlink (ELOOP), not a regular file (EISDIR / "not a regular
    file"), or larger than ``limit`` bytes (EFBIG).
    """
    fd = os.open(path, _READ, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(21, "not a regular file")
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError(27, f"larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str, limit: int, errors: str = "replace") -> str | None:
    """:func:`read_regular` decoded as UTF-8; None for anything that is not a small regular
    file (a guard reading hostile input wants an answer, not an exception)."""
    try:
        return read_regular(path, limit).decode("utf-8", errors)
    except OSError:
        return None


def write_new(path: str, data: bytes, mode: int = 0o644, dir_fd: int | None = None) -> None:
    """Create ``path`` — never through a symlink, never over an existing name — with ``data``
    and permission bits ``mode``."""
    fd = os.open(path, _CREATE, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def replace(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write a fresh file beside ``path`` and rename it over (whatever stood there, a planted
    symlink included, is replaced and never written through); the fresh name never outlives a
    failure."""
    directory, name = os.path.split(path)
    for _ in range(16):
        tmp = os.path.join(directory, f".{name}.egg-{os.urandom(6).hex()}")
        try:
            write_new(tmp, data, mode)
        except FileExistsError:
            continue
        try:
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
        return
    raise FileExistsError(17, f"no free temporary name next to {path}")
