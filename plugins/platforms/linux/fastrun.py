"""Run a cached linux-ns launch (see :mod:`egg_core.execcache`): open the seccomp filter, make the
status pipe, spawn bwrap, supervise, clean up. Nothing heavier than ``os`` is imported here."""

from __future__ import annotations

import os

from egg_core.spawn import (
    report_exit,
    seal_descriptors,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
    wait_pid,
)

from . import placeholders
from .status import StatusReader

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Callable, Iterable
    from typing import Any

    from .cgrouprun import Running

SECCOMP_FD = "\0seccomp-fd"
STATUS_FD = "\0status-fd"
#: where the real stderr goes for the command inside (see linux_ns.STDERR_SHIM)
COMMAND_STDERR_FD = 9
#: bwrap's mount options whose destination is their third word (see drop_vanished)
_BINDS = ("--bind", "--ro-bind", "--bind-try", "--ro-bind-try")


def run(entry: dict[str, Any], env: dict[str, str]) -> int | None:
    """The command's exit code; None when the sandbox failed before the command started
    because a host socket it masked vanished, or when its cgroups cannot be made (the full path
    then prepares it again, and says why)."""
    spec = entry.get("cgroup")
    group = None
    if spec:  # imported only by launches with limits
        from . import cgrouprun

        try:
            group = cgrouprun.start(cgrouprun.new_name(), spec)
        except OSError:
            return None
    held = placeholders.plant(entry["placeholders"], entry["lock_dir"])
    try:
        return _spawn_and_supervise(entry, env, group)
    finally:
        placeholders.remove(held)
        if group is not None:
            group.close()


def away_from(fd: int, taken: int) -> int:
    """``fd``, renumbered if it is ``taken`` (the spawn puts something else there)."""
    if fd != taken:
        return fd
    moved = os.dup(fd)
    os.set_inheritable(moved, os.get_inheritable(fd))
    os.close(fd)
    return moved


def drop_vanished(argv: list[str], volatile: set[str] | frozenset[str]) -> list[str]:
    """``argv`` without the binds onto ``volatile`` destinations that no longer exist.

    Other programs bind and remove unix sockets at any time. A mask or pin made for a socket
    that is gone by the time bwrap mounts would make bwrap create its mount point — impossible
    in a read-only tree, so bwrap aborts the launch. A socket that is gone needs no mask; this
    runs right before each spawn, to leave bwrap the shortest window (issue: busy hosts).
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            out += argv[i:]
            break
        if (
            word in _BINDS
            and i + 2 < len(argv)
            and argv[i + 2] in volatile
            and not os.path.lexists(argv[i + 2])
        ):
            i += 3
            continue
        out.append(word)
        i += 1
    return out


def any_vanished(volatile: Iterable[str], said: str = "") -> bool:
    """Whether a mount destination that exists only because of a host socket is gone, or was
    when bubblewrap tried it (its error names it: the socket may be back by now, bound again
    under the same name): a set-up that failed then is worth preparing again (see
    :func:`drop_vanished`)."""
    paths = list(volatile)
    if any(not os.path.lexists(path) for path in paths):
        return True
    return "bwrap:" in said and any(path in said for path in paths)


def _spawn_and_supervise(
    entry: dict[str, Any], env: dict[str, str], group: Running | None
) -> int | None:
    volatile = frozenset(entry["volatile"])
    inner = entry["stderr_fd"]
    seccomp_fd = away_from(os.open(entry["seccomp_file"], os.O_RDONLY), inner)
    os.set_inheritable(seccomp_fd, True)
    status_read, status_write = os.pipe()
    status_write = away_from(status_write, inner)
    os.set_inheritable(status_write, True)
    said_read, said_write = setup_pipe()
    said_write = away_from(said_write, inner)
    table = {SECCOMP_FD: str(seccomp_fd), STATUS_FD: str(status_write)}
    argv = drop_vanished([table.get(arg, arg) for arg in entry["argv"]], volatile)
    if group is not None:
        argv = group.prefix() + argv
    status = StatusReader(status_read)
    # posix_spawn passes every inheritable descriptor: seal all but the two bwrap needs
    seal_descriptors((seccomp_fd, status_write))
    # bwrap's own stderr is a pipe (what it says while setting up); the command's is ours
    actions = [
        (os.POSIX_SPAWN_DUP2, 2, inner),
        (os.POSIX_SPAWN_DUP2, said_write, 2),
    ]
    try:
        pid = spawn_ignoring(
            lambda: os.posix_spawn(argv[0], argv, env, file_actions=actions),
            entry["ignore_signals"],
        )
    finally:
        os.close(status_write)
        os.close(seccomp_fd)
        os.close(said_write)
    if group is not None:
        group.started()
    try:
        returncode = supervise(
            pid, lambda: wait_pid(pid), tty=entry["tty"], command_pid=status.child_pid
        )
        said = setup_errors(said_read)
        if status.exit_code(returncode) is None and any_vanished(volatile, said):
            return None
        reasons: dict[int, str] = entry["exit_reasons"]
        exit_code: Callable[[int], int | None] = status.exit_code
        reason: Callable[[int], str | None] = reasons.get
        if group is not None:
            exit_code, reason = group.explained(exit_code, reason)
        return report_exit(returncode, exit_code, reason, argv[0], said)
    finally:
        status.close()
