"""Bind mounts from open descriptors: what egg decided to mount is what bwrap mounts.

egg decides each bind of a host path when it prepares a launch, on the path as it is then (its
real path, judged by the trust analysis). bwrap resolves the path again when it mounts, later:
a sandbox that can write a directory on the way (another session's workspace holding this one's,
a ``rw:`` rule of its own) could swap a directory for a symlink in between, and a ``--bind``
would follow it — ``ln -s / sub`` made the host's ``/`` writable in a replay.

So right before each spawn every bind's source is opened (``O_PATH``) with no symlink allowed
anywhere on the way (``openat2(RESOLVE_NO_SYMLINKS)``: a real path holds none, so one found now
was planted after the decision), and bwrap is given the descriptor (``--bind-fd``/``--ro-bind-fd``,
bubblewrap 0.10, and Debian's and Ubuntu's 0.8/0.9 through their CVE-2024-42472 fix). bwrap
mounts it by path and checks the mount is the descriptor's inode, failing the launch otherwise:
a swap after the open is refused too. A source that changed is one line and no launch; a
``-try`` source that is gone is left out, as bwrap would have.

Standard library and :mod:`.gate_abi` only: the exec cache's fast path uses it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource

from . import gate_abi

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Sequence

#: bwrap's bind options and what each becomes; the second item says whether it is a "-try"
_BY_DESCRIPTOR = {
    "--bind": ("--bind-fd", False),
    "--ro-bind": ("--ro-bind-fd", False),
    "--bind-try": ("--bind-fd", True),
    "--ro-bind-try": ("--ro-bind-fd", True),
}
AT_FDCWD = -100
#: the descriptors handed to bwrap are at or above this (the spawn dup2s its own below it)
FD_FLOOR = 10
RESOLVE_NO_SYMLINKS = 0x04
_MARKER = b"--ro-bind-fd"
_support: dict[tuple[str, int, int, int], bool] = {}


class SourceChanged(OSError):
    """A bind's source is no longer what the launch decided to mount."""


def supported(bwrap: str) -> bool:
    """Whether this bwrap takes ``--bind-fd`` (read from its own option table, once per binary:
    a version number cannot say it, as distributions backport the option)."""
    try:
        st = os.stat(bwrap)
    except OSError:
        return False
    key = (bwrap, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _support:
        try:
            with open(bwrap, "rb") as binary:
                _support[key] = _MARKER in binary.read()
        except OSError:
            _support[key] = False
    return _support[key]


def pin(argv: Sequence[str]) -> tuple[list[str], list[int]]:
    """``argv`` with every bind of a host path made a bind of a descriptor, and the descriptors
    (inheritable, for the spawn to pass and the caller to close after it). Raises
    :class:`SourceChanged` (every descriptor closed) when a source has a symlink on its way or
    is gone, which the decision did not see."""
    out: list[str] = []
    fds: list[int] = []
    index = 0
    try:
        while index < len(argv):
            word = argv[index]
            if word == "--":
                out += argv[index:]
                break
            option = _BY_DESCRIPTOR.get(word)
            if option is None or index + 2 >= len(argv):
                out.append(word)
                index += 1
                continue
            source, dest = argv[index + 1], argv[index + 2]
            fd = _open(source, optional=option[1])
            if fd is not None:
                fds.append(fd)
                out += [option[0], str(fd), dest]
            index += 3
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return out, fds


def room_for(count: int) -> None:
    """Let this process hold ``count`` more descriptors (a home of many entries is a bind each):
    the soft limit raised toward the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    try:
        opened = len(os.listdir("/proc/self/fd"))
    except OSError:
        opened = 0
    if opened + wanted > soft and soft != resource.RLIM_INFINITY:
        limit = opened + wanted
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))


def _open(source: str, optional: bool) -> int | None:
    try:
        fd = gate_abi.openat2(AT_FDCWD, os.fsencode(source), os.O_PATH, RESOLVE_NO_SYMLINKS)
    except OSError as exc:
        if exc.errno == errno.ENOENT and optional:
            return None
        if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EXDEV):
            what = "gone" if exc.errno == errno.ENOENT else "reached through a symlink now"
            raise SourceChanged(
                exc.errno,
                f"{source} changed while the sandbox was being set up ({what}); nothing was "
                "started",
            ) from None
        raise
    if fd < FD_FLOOR:  # below it the spawn puts descriptors of its own (the command's stderr)
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD, FD_FLOOR)
        os.close(fd)
        fd = moved
    os.set_inheritable(fd, True)
    return fd
