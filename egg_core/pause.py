"""Pause a running sandbox while egg runs a host program where the sandbox writes (threat O).

Auditing a repository the sandbox owns and then running the host's git there is a race as long
as the sandbox runs: it can put ``core.fsmonitor`` back between the audit and git's read. So
for the length of the audit and the host program, every process of the sandbox is stopped
(SIGSTOP), and continued afterwards. No cgroup freezer is needed (an unprivileged user rarely has
one): the processes are the launch's descendants, found in the process table until no new one
appears (a child forked while its parent was being stopped is found on the next pass).

A parent blocked in ``vfork()`` for a child that is stopped before its ``exec`` never stops
itself (Python's ``subprocess`` vforks): it counts as stopped, since it cannot run until that
child does. Stopping is top-down and continuing bottom-up, so no parent inside ever runs while
one of its children is stopped: a shell with job control sees no "Stopped" job, and no process
is left in the background. A process that does not stop within :data:`STOP_TIMEOUT` fails the pause
(:class:`PauseFailed`), after everything stopped so far is continued.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable

#: how long a process may take to reach the stopped state
STOP_TIMEOUT = 2.0
#: passes over the process table before a sandbox that keeps forking counts as not stoppable
MAX_PASSES = 50


class PauseFailed(Exception):
    """The sandbox could not be stopped: the host program must not start."""


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process on the host."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return _parents_from_ps()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold anything: parse after the last ")"
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            found[int(name)] = int(fields[1])
    return found


def _parents_from_ps() -> dict[int, int]:
    """Where there is no /proc (macOS): ps, found where no sandbox can have planted it."""
    from egg_core.paths import host_which

    ps = host_which("ps")
    if ps is None:
        raise PauseFailed("no process table to find the sandbox's processes in")
    listed = subprocess.run(
        [ps, "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=10, check=False
    )
    found = {}
    for line in listed.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            found[int(parts[0])] = int(parts[1])
    return found


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """The processes below ``root``, parents before their children."""
    table = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    order: list[int] = []
    level = [root]
    seen = {root}
    while level:
        following = []
        for pid in level:
            for child in sorted(children.get(pid, ())):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
                    following.append(child)
        level = following
    return order


#: where the kernel keeps a vfork()ing parent until its child execs or exits: it runs nothing of
#: its own meanwhile, and its child is stopped with the others (it would never stop itself)
VFORK_WAITS = (b"kernel_clone", b"wait_for_vfork_done", b"_do_fork", b"do_fork")


def _stopped(pid: int) -> bool:
    """Every thread of ``pid`` is stopped, or waits in vfork for a child (or the process is
    gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True
    except OSError:
        return _stopped_ps(pid)
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        state = text[text.rfind(b")") + 2 : text.rfind(b")") + 3]
        if state in (b"T", b"t", b"Z", b"X"):
            continue
        if state == b"D" and _waits_in_vfork(pid, tid):
            continue
        return False
    return True


def _waits_in_vfork(pid: int, tid: str) -> bool:
    try:
        with open(f"/proc/{pid}/task/{tid}/wchan", "rb") as handle:
            return handle.read().strip() in VFORK_WAITS
    except OSError:
        return False


def _stopped_ps(pid: int) -> bool:
    from egg_core.paths import host_which

    ps = host_which("ps")
    if ps is None:
        return False
    shown = subprocess.run(
        [ps, "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, timeout=10, check=False
    )
    return not shown.stdout.strip() or shown.stdout.strip()[0] in "TZ"


def pause(root: int) -> list[int]:
    """Stop every process below ``root``; what was stopped, parents first (give it to
    :func:`resume`)."""
    stopped: list[int] = []
    try:
        for _ in range(MAX_PASSES):
            fresh = [pid for pid in descendants(root) if pid not in stopped]
            if not fresh:
                break
            for pid in fresh:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                stopped.append(pid)
        else:
            raise PauseFailed(f"the sandbox kept starting processes ({len(stopped)} stopped)")
        deadline = time.monotonic() + STOP_TIMEOUT
        waiting = list(stopped)
        while waiting:
            waiting = [pid for pid in waiting if not _stopped(pid)]
            if not waiting:
                break
            if time.monotonic() > deadline:
                raise PauseFailed(f"process {waiting[0]} of the sandbox did not stop")
            time.sleep(0.001)
        return stopped
    except BaseException:
        resume(stopped)
        raise


def resume(stopped: Iterable[int]) -> None:
    """Continue what :func:`pause` stopped, children before their parents."""
    for pid in reversed(list(stopped)):
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
