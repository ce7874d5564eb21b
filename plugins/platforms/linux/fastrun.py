"""Run a cached linux-ns launch (see :mod:`egg_core.execcache`): open the seccomp filter, make the
status pipe, spawn bwrap under the socket gate, supervise, clean up. Standard library only."""

from __future__ import annotations

import os

from egg_core.api.fast import (
    SANDBOX_FAILED,
    report_exit,
    seal_descriptors,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
    wait_pid,
)

from . import bindfds, gate_filter, placeholders, socketgate, vanishing
from .status import StatusReader

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Callable
    from typing import Any

    from .cgrouprun import Running

SECCOMP_FD = "\0seccomp-fd"
STATUS_FD = "\0status-fd"
#: where the real stderr goes for the command inside (see linux_ns.STDERR_SHIM)
COMMAND_STDERR_FD = 9


def run(entry: dict[str, Any], env: dict[str, str]) -> int | None:
    """The command's exit code; None when the cached launch cannot run as it was cached (a
    filter file gone from the cache) or its cgroups cannot be made: the full path then
    prepares it again, and says why."""
    programs = gate_filter.read_programs(entry["gate_programs"])
    if programs is None:
        return None
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
        return _spawn_and_supervise(entry, env, programs, group)
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


def _spawn_and_supervise(
    entry: dict[str, Any], env: dict[str, str], programs: list[bytes], group: Running | None
) -> int | None:
    inner = entry["stderr_fd"]
    seccomp_fd = away_from(os.open(entry["seccomp_file"], os.O_RDONLY), inner)
    os.set_inheritable(seccomp_fd, True)
    status_read, status_write = os.pipe()
    status_write = away_from(status_write, inner)
    os.set_inheritable(status_write, True)
    said_read, said_write = setup_pipe()
    said_write = away_from(said_write, inner)
    table = {SECCOMP_FD: str(seccomp_fd), STATUS_FD: str(status_write)}
    masks = entry.get("masks", ())
    argv = [table.get(arg, arg) for arg in entry["argv"]]
    if masks:  # a masked file gone by now is not mounted over (see linux.vanishing)
        argv = vanishing.drop_vanished(argv, masks, entry["empty_file"], entry["bwrap"])
    bound: list[int] = []
    if entry["bind_fds"]:  # what was decided is what is mounted (see linux.bindfds)
        try:
            argv, bound = bindfds.pin(argv, entry["bwrap"])
        except bindfds.PinFailed as exc:
            for fd in (seccomp_fd, status_read, status_write, said_read, said_write):
                os.close(fd)
            # fails closed: deciding again now would take the swapped-in symlink for a rule's
            line = f"egg: error: the sandbox failed before the command started: {exc.strerror}\n"
            os.write(2, line.encode())
            return SANDBOX_FAILED
    if group is not None:
        argv = group.prefix() + argv
    status = StatusReader(status_read)
    gate = socketgate.Gate(programs, socketgate.Grants.from_json(entry["gate_grants"]))
    # the child gets every inheritable descriptor: seal all but the ones bwrap and the gate need
    seal_descriptors((seccomp_fd, status_write, gate.child_fd, *bound))

    def child() -> None:
        # bwrap's own stderr is a pipe (what it says while setting up); the command's is ours
        os.dup2(2, inner)
        os.dup2(said_write, 2)
        gate.child_setup()
        os.execve(argv[0], argv, env)

    try:
        pid = spawn_ignoring(lambda: _fork(child), entry["ignore_signals"])
    finally:
        os.close(status_write)
        os.close(seccomp_fd)
        os.close(said_write)
        for fd in bound:
            os.close(fd)
    try:
        try:
            gate.started()
        except OSError:
            wait_pid(pid)
            said = setup_errors(said_read).strip()
            why = gate.error or "cannot start the socket gate"
            os.write(2, f"egg: error: {why}{': ' + said if said else ''}\n".encode())
            return SANDBOX_FAILED
        if group is not None:
            group.started()
        returncode = supervise(
            pid, lambda: wait_pid(pid), tty=entry["tty"], command_pid=status.child_pid
        )
        said = setup_errors(said_read)
        if status.exit_code(returncode) is None and masks and vanishing.any_vanished(masks, said):
            return None  # nothing of the command ran: the full path prepares it afresh
        reasons: dict[int, str] = entry["exit_reasons"]
        exit_code: Callable[[int], int | None] = status.exit_code
        reason: Callable[[int], str | None] = reasons.get
        if group is not None:
            exit_code, reason = group.explained(exit_code, reason)
        return report_exit(returncode, exit_code, reason, argv[0], said)
    finally:
        gate.close()
        status.close()


def _fork(child: Callable[[], None]) -> int:
    """Fork and run ``child`` there (it execs); a child that fails before its exec says why on
    the set-up pipe (its stderr by then) and exits 127."""
    pid = os.fork()
    if pid == 0:
        try:
            child()
        except BaseException as exc:
            try:
                os.write(2, f"egg: cannot start the sandbox: {exc}\n".encode())
            finally:
                os._exit(127)
    return pid
